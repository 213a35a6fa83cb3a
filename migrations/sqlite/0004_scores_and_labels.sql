-- Judges' output. trial_score holds the latest score of each trial (JSON) with the judge
-- version that produced it; a score of another version is recomputed. label_event is an
-- append-only log of labels with provenance (rule, llm_judge, human); the latest human
-- event of a kind overrides automatic labels in every aggregate. judge_cache keeps LLM
-- judge answers by a hash of (judge model, prompt version, inputs).
create table trial_score (
    trial_id text primary key references trial (trial_id),
    run_id text not null,
    judge_version text not null,
    body text not null,
    created_at integer not null
);
create index trial_score_run on trial_score (run_id);

create table label_event (
    event_id integer primary key autoincrement,
    trial_id text not null,
    kind text not null,
    value integer not null,
    turn integer,
    source text not null,
    confidence real not null,
    reason text not null,
    author text,
    judge_version text,
    created_at integer not null
);
create index label_event_trial on label_event (trial_id, kind);

create table judge_cache (
    key text primary key,
    judge text not null,
    body text not null,
    created_at integer not null
);
