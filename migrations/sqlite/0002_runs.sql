-- Runs and their trials: the durable queue of the agent loop. A trial is claimed with a
-- lease (lease_until, ms since the epoch) that a heartbeat extends; every step is stored
-- in trial_step before the next one starts, so an interrupted trial resumes where it was.
create table run (
    run_id text primary key,
    spec text not null,
    status text not null,
    corpus_version text not null,
    trials_total integer not null,
    created_at integer not null,
    updated_at integer not null
);

create table trial (
    trial_id text primary key,
    run_id text not null references run (run_id),
    ordinal integer not null,
    task_id text not null,
    agent text not null,
    level text not null,
    condition text not null,
    seed integer not null,
    state text not null,
    attempts integer not null,
    lease_until integer,
    worker text,
    verdict text,
    rationale text,
    error text,
    started_at integer,
    finished_at integer,
    created_at integer not null,
    updated_at integer not null,
    unique (run_id, task_id, agent, level, condition, seed)
);
create index trial_claim on trial (run_id, state, ordinal);

create table trial_step (
    trial_id text not null references trial (trial_id),
    t integer not null,
    body text not null,
    created_at integer not null,
    updated_at integer not null,
    primary key (trial_id, t)
);
