-- People's grades of a trial's reasoning, to validate the reasoning judge: the Acc_rsn a
-- person gives the rationale (in tenths, on the judge's five-band rubric) and whether the
-- decision was right, acceptable or wrong. Append-only; each person's latest grade of a
-- trial counts.
create table reasoning_grade (
    grade_id integer primary key autoincrement,
    trial_id text not null references trial (trial_id),
    author text not null,
    acc_rsn real not null,
    decision text not null,
    note text not null,
    created_at integer not null
);
create index reasoning_grade_trial on reasoning_grade (trial_id);
