-- The tokens a cached answer cost when it was asked (as the endpoint reported them; null
-- for answers kept before this was recorded, or for an endpoint that reports none), so a
-- trial that reuses an answer still counts what the answer cost.
alter table judge_cache add column prompt_tokens integer;
alter table judge_cache add column completion_tokens integer;

-- What a trial's model calls other than the agent's cost while it ran: the attacker
-- writing its texts (role 'attacker') and the judge filter of a defended configuration
-- (role 'defense'). Added to by every attempt; 'unknown_calls' counts calls whose tokens
-- are not known.
create table trial_model_use (
    trial_id text not null references trial (trial_id),
    role text not null,
    calls integer not null,
    unknown_calls integer not null,
    prompt_tokens integer not null,
    completion_tokens integer not null,
    primary key (trial_id, role)
);
