-- Counterfactual replays: a trial re-run from one of its turns with an intervention on what
-- the agent sees from that turn on. Each replay is a child of the trial it branches from.
create table replay (
    replay_id text primary key,
    trial_id text not null references trial (trial_id),
    from_turn bigint not null,
    intervention text not null,
    sample bigint not null,
    state text not null,
    verdict text,
    rationale text,
    error text,
    steps text not null default '[]',
    created_at bigint not null,
    finished_at bigint
);
create index replay_by_trial on replay (trial_id);
