-- GEO ranking track: the edited description of each (method, target), ranker-independent
-- so every ranker of a run (and later runs: transfer) ranks the same text. The first text
-- stored for a key wins; `source` names who wrote it (builtin, an endpoint's model and
-- prompt version, or an imported file with its hash).
create table geo_text (
    method text not null,
    dataset text not null,
    category text not null,
    target_idx integer not null,
    orig_text text not null,
    adv_text text not null,
    edit_kind text not null,
    source text not null,
    meta text not null,
    created_at integer not null,
    primary key (method, dataset, category, target_idx)
);
