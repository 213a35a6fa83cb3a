-- Episodes handed out from a run to an outside agent carry out one of its trials: the
-- trial's id is on the episode. An action posted to an episode's `act` address keeps the
-- agent's thought and the action as it was written (JSON) beside the page it led to.
alter table episode add column trial_id text;
alter table episode_event add column thought text;
alter table episode_event add column action text;
