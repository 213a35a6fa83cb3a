-- Finished trials by time: the search follower pages through them in (finished_at,
-- trial_id) order, and throughput counts a run's trials finished since a moment.
create index trial_finished on trial (finished_at, trial_id);
create index trial_run_finished on trial (run_id, finished_at);
