-- Each trial's step count and the tokens its steps report (`usage`), kept by triggers on
-- every insert and delete of a step, so that a run's cost is a sum over its trials instead
-- of a parse of every step it stored. Filled in for the steps already stored. A body that
-- is not JSON counts as a step without usage.
alter table trial add column step_count integer not null default 0;
alter table trial add column usage_steps integer not null default 0;
alter table trial add column prompt_tokens integer not null default 0;
alter table trial add column completion_tokens integer not null default 0;

update trial set
    step_count = (select count(*) from trial_step s where s.trial_id = trial.trial_id),
    usage_steps = (select count(case when json_valid(s.body) then json_extract(s.body, '$.usage.prompt_tokens') end) from trial_step s where s.trial_id = trial.trial_id),
    prompt_tokens = (select coalesce(sum(case when json_valid(s.body) then json_extract(s.body, '$.usage.prompt_tokens') end), 0) from trial_step s where s.trial_id = trial.trial_id),
    completion_tokens = (select coalesce(sum(case when json_valid(s.body) then json_extract(s.body, '$.usage.completion_tokens') end), 0) from trial_step s where s.trial_id = trial.trial_id)
where exists (select 1 from trial_step s where s.trial_id = trial.trial_id);

create trigger trial_step_counted after insert on trial_step
begin
    update trial set
        step_count = step_count + 1,
        usage_steps = usage_steps + (case when json_valid(new.body) then json_extract(new.body, '$.usage.prompt_tokens') is not null else 0 end),
        prompt_tokens = prompt_tokens + coalesce(case when json_valid(new.body) then json_extract(new.body, '$.usage.prompt_tokens') end, 0),
        completion_tokens = completion_tokens + coalesce(case when json_valid(new.body) then json_extract(new.body, '$.usage.completion_tokens') end, 0)
    where trial_id = new.trial_id;
end;

create trigger trial_step_uncounted after delete on trial_step
begin
    update trial set
        step_count = step_count - 1,
        usage_steps = usage_steps - (case when json_valid(old.body) then json_extract(old.body, '$.usage.prompt_tokens') is not null else 0 end),
        prompt_tokens = prompt_tokens - coalesce(case when json_valid(old.body) then json_extract(old.body, '$.usage.prompt_tokens') end, 0),
        completion_tokens = completion_tokens - coalesce(case when json_valid(old.body) then json_extract(old.body, '$.usage.completion_tokens') end, 0)
    where trial_id = old.trial_id;
end;
