-- Every candidate an L4 search scored, in order, for the trajectory viewer's search tree.
-- A resumed trial whose search finished reuses the best node; an unfinished search
-- starts again (its rows are replaced).
create table tap_node (
    trial_id text not null references trial (trial_id),
    node_id integer not null,
    parent integer,
    depth integer not null,
    body text not null,
    score real not null,
    created_at integer not null,
    primary key (trial_id, node_id)
);
