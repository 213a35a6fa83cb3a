//! `mirage user add|list|remove`: dashboard accounts.

use anyhow::{Context, bail};
use clap::Subcommand;

use crate::db::Store;

/// `mirage user …`.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Adds an account (or sets the password and role of an existing one). The password is
    /// read from MIRAGE_PASSWORD, else from the first line of standard input.
    Add {
        name: String,
        /// viewer (reads), annotator (also settles disputed labels), operator (also launches
        /// and cancels runs, adjudicates conflicts).
        #[arg(long)]
        role: String,
    },
    /// Lists accounts and their roles.
    List,
    /// Removes an account and its sessions.
    Remove { name: String },
}

pub(super) async fn user(store: &dyn Store, command: UserCommand) -> anyhow::Result<()> {
    match command {
        UserCommand::Add { name, role } => {
            if app::model::Role::parse(&role).is_none() {
                bail!("--role: {role:?} is not one of viewer, annotator, operator");
            }
            if name.is_empty() || name.len() > 64 || !name.chars().all(|c| c.is_alphanumeric() || "._-".contains(c)) {
                bail!("NAME: {name:?} must be 1–64 letters, digits, '.', '_' or '-'");
            }
            let password = match std::env::var("MIRAGE_PASSWORD") {
                Ok(p) => p,
                Err(_) => {
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line).context("reading the password from standard input")?;
                    line.trim_end_matches(['\r', '\n']).to_string()
                }
            };
            if password.chars().count() < 8 {
                bail!("password: use at least 8 characters (MIRAGE_PASSWORD or the first line of standard input)");
            }
            if password.len() > crate::http::auth::MAX_PASSWORD_BYTES {
                bail!("password: use at most {} bytes", crate::http::auth::MAX_PASSWORD_BYTES);
            }
            let hash = crate::http::auth::hash_password(&password)?;
            let new = store.put_user(&name, &hash, &role).await?;
            println!("{} {name} ({role})", if new { "added" } else { "updated" });
        }
        UserCommand::List => {
            for crate::db::Account { name, role } in store.users().await? {
                println!("{name}\t{role}");
            }
        }
        UserCommand::Remove { name } => {
            if !store.remove_user(&name).await? {
                bail!("no account named {name:?}");
            }
            println!("removed {name}");
        }
    }
    Ok(())
}
