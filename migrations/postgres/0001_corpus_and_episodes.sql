-- First schema: the task corpus, corpus metadata, and investigation episodes with their
-- action log. Same tables as the SQLite migration; integers are bigint so that the shared
-- runtime queries decode them as i64 on both backends.
create table task (
    task_id text primary key,
    position bigint not null,
    domain text not null,
    category text not null,
    difficulty text not null,
    surface_contradiction bigint not null,
    origin text not null,
    body text not null,
    created_at bigint not null,
    updated_at bigint not null
);
create index task_domain_category on task (domain, category);

create table corpus_meta (
    meta_key text primary key,
    meta_value text not null,
    created_at bigint not null,
    updated_at bigint not null
);

create table episode (
    episode_id text primary key,
    task_id text not null references task (task_id),
    level text not null,
    condition text not null,
    status text not null,
    verdict text,
    rationale text,
    created_at bigint not null,
    updated_at bigint not null
);

create table episode_event (
    episode_event_id bigserial primary key,
    episode_id text not null references episode (episode_id),
    seq bigint not null,
    kind text not null,
    url text,
    detail text,
    created_at bigint not null,
    updated_at bigint not null,
    unique (episode_id, seq)
);
