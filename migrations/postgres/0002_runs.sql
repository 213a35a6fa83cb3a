-- Runs and their trials: the durable queue of the agent loop (same tables as the SQLite
-- migration, bigint integers). A trial is claimed with a lease that a heartbeat extends;
-- every step is stored in trial_step before the next one starts.
create table run (
    run_id text primary key,
    spec text not null,
    status text not null,
    corpus_version text not null,
    trials_total bigint not null,
    created_at bigint not null,
    updated_at bigint not null
);

create table trial (
    trial_id text primary key,
    run_id text not null references run (run_id),
    ordinal bigint not null,
    task_id text not null,
    agent text not null,
    level text not null,
    condition text not null,
    seed bigint not null,
    state text not null,
    attempts bigint not null,
    lease_until bigint,
    worker text,
    verdict text,
    rationale text,
    error text,
    started_at bigint,
    finished_at bigint,
    created_at bigint not null,
    updated_at bigint not null,
    unique (run_id, task_id, agent, level, condition, seed)
);
create index trial_claim on trial (run_id, state, ordinal);

create table trial_step (
    trial_id text not null references trial (trial_id),
    t bigint not null,
    body text not null,
    created_at bigint not null,
    updated_at bigint not null,
    primary key (trial_id, t)
);
