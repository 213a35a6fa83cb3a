-- GEO ranking track: the detection report of a run under one judge setting (judge model
-- and mode, calibration, false-positive rate, scorer), kept so the dashboard shows judge
-- columns without asking the judge again. Scoring the same setting again replaces it.
create table geo_detection (
    run_id text not null,
    label text not null,
    body text not null,
    created_at integer not null,
    primary key (run_id, label)
);
