-- Each trial's step count and the tokens its steps report (`usage`), kept by a trigger on
-- every insert and delete of a step, so that a run's cost is a sum over its trials instead
-- of a parse of every step it stored. Filled in for the steps already stored (the bodies
-- stored so far are all JSON; a later one that is not counts as a step without usage).
alter table trial add column step_count bigint not null default 0;
alter table trial add column usage_steps bigint not null default 0;
alter table trial add column prompt_tokens bigint not null default 0;
alter table trial add column completion_tokens bigint not null default 0;

update trial set
    step_count = c.n,
    usage_steps = c.reported,
    prompt_tokens = c.prompt,
    completion_tokens = c.completion
from (
    select trial_id,
           count(*) as n,
           count((body::jsonb -> 'usage' ->> 'prompt_tokens')) as reported,
           coalesce(sum((body::jsonb -> 'usage' ->> 'prompt_tokens')::bigint), 0) as prompt,
           coalesce(sum((body::jsonb -> 'usage' ->> 'completion_tokens')::bigint), 0) as completion
      from trial_step group by trial_id
) c
where c.trial_id = trial.trial_id;

create function trial_step_counts() returns trigger language plpgsql as $$
declare
    step_body jsonb;
    step_sign bigint;
    step_trial text;
begin
    if tg_op = 'INSERT' then
        step_sign := 1; step_trial := new.trial_id;
    else
        step_sign := -1; step_trial := old.trial_id;
    end if;
    -- A body that is not JSON counts as a step without usage.
    begin
        step_body := (case when tg_op = 'INSERT' then new.body else old.body end)::jsonb;
    exception when others then
        step_body := null;
    end;
    update trial set
        step_count = step_count + step_sign,
        usage_steps = usage_steps + step_sign * (case when step_body -> 'usage' ->> 'prompt_tokens' is null then 0 else 1 end),
        prompt_tokens = prompt_tokens + step_sign * coalesce((step_body -> 'usage' ->> 'prompt_tokens')::bigint, 0),
        completion_tokens = completion_tokens + step_sign * coalesce((step_body -> 'usage' ->> 'completion_tokens')::bigint, 0)
    where trial_id = step_trial;
    return null;
end;
$$;

create trigger trial_step_counted after insert or delete on trial_step
    for each row execute function trial_step_counts();
