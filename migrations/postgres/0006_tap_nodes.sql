-- Every candidate an L4 search scored, in order, for the trajectory viewer's search tree.
-- A resumed trial whose search finished reuses the best node; an unfinished search
-- starts again (its rows are replaced).
create table tap_node (
    trial_id text not null references trial (trial_id),
    node_id bigint not null,
    parent bigint,
    depth bigint not null,
    body text not null,
    score double precision not null,
    created_at bigint not null,
    primary key (trial_id, node_id)
);
