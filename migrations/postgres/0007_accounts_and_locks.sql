-- Dashboard accounts (argon2 hashes), their sessions, and the locks annotators hold on
-- the disputed labels they have open. Without any account the dashboard serves loopback
-- only and everyone is the operator.
create table app_user (
    name text primary key,
    password_hash text not null,
    role text not null,
    created_at bigint not null
);

create table app_session (
    token text primary key,
    name text not null references app_user (name) on delete cascade,
    expires_at bigint not null
);

create table annotation_lock (
    trial_id text not null,
    kind text not null,
    holder text not null,
    expires_at bigint not null,
    primary key (trial_id, kind)
);
