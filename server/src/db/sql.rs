//! The SQL store: one pool for the whole process, the migrations of its backend, and the
//! helpers every concern's queries share (bulk inserts, unique violations).

use anyhow::Context;
use sqlx::any::{AnyArguments, AnyPoolOptions, install_default_drivers};
use sqlx::{Any, AnyPool, Execute, QueryBuilder};

use super::{StoreError, StoreResult};

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

/// The SQL store over one pool for the whole process.
#[derive(Clone)]
pub struct SqlStore {
    pub(super) pool: AnyPool,
    pub(super) postgres: bool,
}

impl SqlStore {
    /// Connects and runs the migrations of the URL's backend.
    pub async fn connect(url: &str) -> anyhow::Result<SqlStore> {
        install_default_drivers();
        let sqlite = url.starts_with("sqlite:");
        let memory = url.contains(":memory:");
        if sqlite && !memory {
            writable(url)?;
        }
        let mut options = AnyPoolOptions::new();
        if sqlite {
            // SQLite serialises writers anyway; an in-memory database exists per connection.
            options = options.max_connections(if memory { 1 } else { 8 }).after_connect(|conn, _| {
                Box::pin(async move {
                    sqlx::query("pragma busy_timeout = 5000").execute(&mut *conn).await?;
                    // With WAL, `normal` keeps the database consistent through a process
                    // crash (kill -9); only an OS crash can lose the last commits.
                    sqlx::query("pragma synchronous = normal").execute(&mut *conn).await?;
                    sqlx::query("pragma foreign_keys = on").execute(&mut *conn).await?;
                    // Reads through a memory map rather than a system call per 4 KiB page:
                    // a page that reads a large run (a static copy renders thousands) spent
                    // half its CPU time in the kernel otherwise. The map shares the OS page
                    // cache, so it costs no memory of its own.
                    sqlx::query("pragma mmap_size = 1073741824").execute(&mut *conn).await?;
                    Ok(())
                })
            });
        }
        let pool = options.connect(url).await.with_context(|| format!("connecting to database {}", redact(url)))?;
        if sqlite && !memory {
            sqlx::query("pragma journal_mode = wal").execute(&pool).await.context("enabling WAL")?;
        }
        let migrator = if sqlite { &SQLITE_MIGRATIONS } else { &POSTGRES_MIGRATIONS };
        migrator.run(&pool).await.context("running database migrations")?;
        Ok(SqlStore { pool, postgres: !sqlite })
    }
}

/// Fails at once, naming the file or folder and the reason, when this process cannot write
/// the SQLite database of `url` or create its journal beside it. Otherwise SQLite opens the
/// file read-only, cannot set up its journal, and every command waits out the pool's
/// timeout and then reports only that the pool timed out.
///
/// Asked with `access(2)` (rustix), never by opening the file: closing any descriptor of a file
/// drops every POSIX lock this process holds on it, and SQLite's locks are such locks (a
/// second connection opened later in the process would strip the first one's).
fn writable(url: &str) -> anyhow::Result<()> {
    let rest = url.trim_start_matches("sqlite:").trim_start_matches("//");
    let path = std::path::Path::new(rest.split('?').next().unwrap_or(rest));
    let advice = "Mirage writes to its database on every command (migrations, the journal): run it as a user who may \
                  write the file and its folder, or pass another --db";
    use rustix::fs::{Access, access};
    if path.exists() {
        access(path, Access::READ_OK | Access::WRITE_OK).map_err(|e| {
            anyhow::anyhow!(
                "database {}: cannot be opened for writing ({}). {advice}",
                path.display(),
                std::io::Error::from(e)
            )
        })?;
    }
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    access(folder, Access::WRITE_OK | Access::EXEC_OK).map_err(|e| {
        anyhow::anyhow!(
            "database {}: its folder {} does not let this user create the journal beside it ({}). {advice}",
            path.display(),
            folder.display(),
            std::io::Error::from(e)
        )
    })
}

/// Rows per multi-row insert: far below SQLite's 32,766 and PostgreSQL's 65,535 bound
/// parameters for every table we bulk-insert into (at most 11 columns).
pub(super) const BULK_ROWS: usize = 1000;

/// The SQL and arguments of a multi-row insert built with [`QueryBuilder::push_values`].
///
/// Through the `Any` driver the builder writes `?` placeholders, which PostgreSQL rejects,
/// so for PostgreSQL they are numbered (`$N`) here. SQLite keeps the anonymous `?`: binding
/// looks each parameter's name up in a list, so with numbered names a statement of n
/// parameters costs n² (two thirds of `mirage score --run`'s time went there). Bulk
/// statements bind every value, so a `?` in them is always a placeholder.
pub(super) fn numbered<'b>(
    builder: &'b mut QueryBuilder<'_, Any>,
    postgres: bool,
) -> StoreResult<(String, AnyArguments<'b>)> {
    let mut query = builder.build();
    let mut sql = String::with_capacity(query.sql().len() + 64);
    if postgres {
        let mut n = 0usize;
        for c in query.sql().chars() {
            if c == '?' {
                n += 1;
                sql.push('$');
                sql.push_str(&n.to_string());
            } else {
                sql.push(c);
            }
        }
    } else {
        sql.push_str(query.sql());
    }
    let args = query
        .take_arguments()
        .map_err(|e| StoreError::Corrupt(format!("binding a bulk insert: {e}")))?
        .unwrap_or_default();
    Ok((sql, args))
}

/// Ends a write transaction: commits after `result` is `Ok`, otherwise rolls back at once
/// and returns the error. A dropped transaction is rolled back only lazily, and on SQLite
/// its write lock would stall every other writer until then.
pub(super) async fn finish<T>(tx: sqlx::Transaction<'_, Any>, result: StoreResult<T>) -> StoreResult<T> {
    match result {
        Ok(v) => {
            tx.commit().await?;
            Ok(v)
        }
        Err(e) => {
            tx.rollback().await?;
            Err(e)
        }
    }
}

/// Whether a failed statement broke a unique constraint.
pub(super) fn is_unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error().is_some_and(|d| d.is_unique_violation())
}

/// A URL with any password replaced, for messages.
fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            if parsed.password().is_some() && parsed.set_password(Some("***")).is_err() {
                return "(a database URL whose password could not be hidden)".to_string();
            }
            // Drivers also take secrets as query parameters (`?password=…`, `sslpassword`).
            let secret = |k: &str| k.to_ascii_lowercase().contains("password");
            if parsed.query_pairs().any(|(k, _)| secret(&k)) {
                let pairs: Vec<(String, String)> = parsed
                    .query_pairs()
                    .map(|(k, v)| {
                        let v = if secret(&k) { "***".to_string() } else { v.into_owned() };
                        (k.into_owned(), v)
                    })
                    .collect();
                parsed.query_pairs_mut().clear().extend_pairs(pairs);
            }
            parsed.to_string()
        }
        // Not a URL (a file path): nothing to hide, unless it looks like credentials.
        Err(_) if url.contains('@') => "(a database address that could not be parsed)".to_string(),
        Err(_) => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact("postgres://me:secret@h/db"), "postgres://me:***@h/db");
        assert_eq!(redact("sqlite://x.db"), "sqlite://x.db");
        let query = redact("postgres://me@h/db?sslmode=require&password=hunter%402&sslpassword=x");
        assert!(!query.contains("hunter") && query.contains("sslmode=require") && !query.contains("=x"), "{query}");
        // A password holding `@` (percent-encoded or not) never leaks.
        for url in ["postgres://me:p@ss@h:5432/db", "postgres://me:p%40ss@h/db?sslmode=require"] {
            let shown = redact(url);
            assert!(!shown.contains("ss@") && !shown.contains("p%40ss") && shown.contains("***"), "{url} → {shown}");
        }
    }

    #[test]
    fn bulk_placeholders_are_numbered_for_postgres_and_anonymous_for_sqlite() {
        for (postgres, expected) in [
            (true, "insert into t (a, b) VALUES ($1, $2), ($3, $4)"),
            (false, "insert into t (a, b) VALUES (?, ?), (?, ?)"),
        ] {
            let mut b: QueryBuilder<'_, Any> = QueryBuilder::new("insert into t (a, b) ");
            b.push_values([(1_i64, "x"), (2, "y")], |mut row, (a, s)| {
                row.push_bind(a).push_bind(s);
            });
            let (sql, args) = numbered(&mut b, postgres).expect("numbered");
            assert_eq!(sql, expected);
            assert_eq!(sqlx::Arguments::len(&args), 4);
        }
    }
}
