-- The appeal turn's record (JSON) on each trial that had one.
alter table trial add column appeal text;
