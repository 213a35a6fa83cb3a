//! Dashboard accounts and their sessions.

use async_trait::async_trait;

use super::{SqlStore, StoreResult, now_ms};

/// An account as listed: name and role.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Account {
    pub name: String,
    pub role: String,
}

/// What a sign-in checks: the stored password hash and the role.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Credentials {
    pub password_hash: String,
    pub role: String,
}

/// Accounts and sessions.
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Adds an account, or replaces the hash and role of an existing one; `true` when new.
    async fn put_user(&self, name: &str, password_hash: &str, role: &str) -> StoreResult<bool>;
    /// Every account, by name.
    async fn users(&self) -> StoreResult<Vec<Account>>;
    /// Removes an account and its sessions; `false` when there was none.
    async fn remove_user(&self, name: &str) -> StoreResult<bool>;
    /// An account's password hash and role.
    async fn user(&self, name: &str) -> StoreResult<Option<Credentials>>;
    /// Whether any account exists.
    async fn has_users(&self) -> StoreResult<bool>;
    /// Stores a session token for `name` until `expires_at` (ms). Only the token's SHA-256
    /// is kept, so a copy of the database opens no session; expired sessions are purged.
    async fn create_session(&self, token: &str, name: &str, expires_at: i64) -> StoreResult<()>;
    /// The account behind an unexpired session token.
    async fn session(&self, token: &str, now: i64) -> StoreResult<Option<Account>>;
    /// Ends a session.
    async fn end_session(&self, token: &str) -> StoreResult<()>;
}

/// What the session table keeps of a token.
fn digest(token: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[async_trait]
impl AccountStore for SqlStore {
    async fn put_user(&self, name: &str, password_hash: &str, role: &str) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        let existing: Option<String> =
            sqlx::query_scalar("select name from app_user where name = $1").bind(name).fetch_optional(&mut *tx).await?;
        if existing.is_some() {
            sqlx::query("update app_user set password_hash = $1, role = $2 where name = $3")
                .bind(password_hash)
                .bind(role)
                .bind(name)
                .execute(&mut *tx)
                .await?;
        } else {
            sqlx::query("insert into app_user (name, password_hash, role, created_at) values ($1, $2, $3, $4)")
                .bind(name)
                .bind(password_hash)
                .bind(role)
                .bind(now_ms())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(existing.is_none())
    }

    async fn users(&self) -> StoreResult<Vec<Account>> {
        Ok(sqlx::query_as("select name, role from app_user order by name").fetch_all(&self.pool).await?)
    }

    async fn remove_user(&self, name: &str) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("delete from app_session where name = $1").bind(name).execute(&mut *tx).await?;
        let done = sqlx::query("delete from app_user where name = $1").bind(name).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    async fn user(&self, name: &str) -> StoreResult<Option<Credentials>> {
        Ok(sqlx::query_as("select password_hash, role from app_user where name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?)
    }

    async fn has_users(&self) -> StoreResult<bool> {
        let any: Option<String> =
            sqlx::query_scalar("select name from app_user limit 1").fetch_optional(&self.pool).await?;
        Ok(any.is_some())
    }

    async fn create_session(&self, token: &str, name: &str, expires_at: i64) -> StoreResult<()> {
        sqlx::query("delete from app_session where expires_at <= $1").bind(now_ms()).execute(&self.pool).await?;
        sqlx::query("insert into app_session (token, name, expires_at) values ($1, $2, $3)")
            .bind(digest(token))
            .bind(name)
            .bind(expires_at)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn session(&self, token: &str, now: i64) -> StoreResult<Option<Account>> {
        Ok(sqlx::query_as(
            "select u.name, u.role from app_session s join app_user u on u.name = s.name \
             where s.token = $1 and s.expires_at > $2",
        )
        .bind(digest(token))
        .bind(now)
        .fetch_optional(&self.pool)
        .await?)
    }

    async fn end_session(&self, token: &str) -> StoreResult<()> {
        sqlx::query("delete from app_session where token = $1").bind(digest(token)).execute(&self.pool).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sessions_keep_only_a_digest_and_expired_ones_are_purged() {
        let store = SqlStore::connect("sqlite::memory:").await.expect("store");
        store.put_user("ann", "hash", "operator").await.expect("user");
        store.create_session("old-token", "ann", now_ms() - 1).await.expect("session");
        store.create_session("secret-token", "ann", now_ms() + 60_000).await.expect("session");
        let kept: Vec<String> =
            sqlx::query_scalar("select token from app_session").fetch_all(&store.pool).await.expect("rows");
        assert_eq!(kept, [digest("secret-token")], "the expired session is gone; only a digest is stored");
        assert_eq!(
            store.session("secret-token", now_ms()).await.expect("session").map(|a| a.name).as_deref(),
            Some("ann")
        );
        assert!(
            store.session(&digest("secret-token"), now_ms()).await.expect("session").is_none(),
            "the digest opens nothing"
        );
        store.end_session("secret-token").await.expect("end");
        assert!(store.session("secret-token", now_ms()).await.expect("session").is_none());
    }
}
