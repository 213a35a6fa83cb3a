-- People's labels (human and adjudication events) are few beside the rules' four per
-- trial; scoring and the annotation queue read only theirs, by source.
create index label_event_source on label_event (source, trial_id);
