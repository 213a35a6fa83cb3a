-- First schema: the task corpus, corpus metadata, and investigation episodes with their
-- action log. Tasks are stored whole as JSON (the interchange format is the source of
-- truth); the columns beside it exist for filtering.
create table task (
    task_id text primary key,
    position integer not null,
    domain text not null,
    category text not null,
    difficulty text not null,
    surface_contradiction integer not null,
    origin text not null,
    body text not null,
    created_at integer not null,
    updated_at integer not null
);
create index task_domain_category on task (domain, category);

create table corpus_meta (
    meta_key text primary key,
    meta_value text not null,
    created_at integer not null,
    updated_at integer not null
);

create table episode (
    episode_id text primary key,
    task_id text not null references task (task_id),
    level text not null,
    condition text not null,
    status text not null,
    verdict text,
    rationale text,
    created_at integer not null,
    updated_at integer not null
);

create table episode_event (
    episode_event_id integer primary key autoincrement,
    episode_id text not null references episode (episode_id),
    seq integer not null,
    kind text not null,
    url text,
    detail text,
    created_at integer not null,
    updated_at integer not null,
    unique (episode_id, seq)
);
