-- Trials imported from other harnesses (Inspect AI, ATIF, AgentDojo): what the harness
-- said about each sample (input, target, answer, its own scores, usage, timings,
-- metadata, error, attack), as JSON beside the trial; `sample` is the harness's id of the
-- sample, by which a trajectory finds its subagents' trials.
create table trial_origin (
    trial_id text primary key references trial (trial_id),
    run_id text not null,
    sample text not null,
    body text not null
);
create index trial_origin_sample on trial_origin (run_id, sample);
