-- A trial whose lease expired (its worker died or hung) waits before it is claimed again:
-- run_after holds the earliest time (ms) it may be claimed. After the last allowed attempt
-- it ends in the error state instead (see RunStore::requeue_expired).
alter table trial add column run_after bigint;
