//! Access to the dashboard.
//!
//! Without accounts, `mirage serve` listens on loopback only and every request is the local
//! operator. With accounts (`mirage user add`), a person signs in at `/login`; the session
//! lives in an HttpOnly, SameSite=Strict cookie, and server functions check the role.
//!
//! Cross-site request forgery: every request that changes state (anything but GET/HEAD/
//! OPTIONS) must come from this origin. Browsers send `Origin` (or at least `Referer`) on
//! such requests, so one from another site is refused; together with SameSite=Strict
//! cookies this covers every form and server function, the sign-in form included. Clients
//! that are not browsers (agents using the episode API) send neither header and carry no
//! cookie to abuse.
//!
//! The investigation sites and the episode API stay open: they are the agents' environment.

use app::model::{Identity, Role};
use argon2::Argon2;
use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use axum::extract::{Form, Query, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use serde::Deserialize;

use super::HttpError;
use crate::db::now_ms;
use crate::state::AppState;

/// Name of the session cookie.
pub const COOKIE: &str = "mirage_session";
/// How long a session lasts on the server (the cookie itself ends with the browser session).
const SESSION_MS: i64 = 12 * 60 * 60 * 1000;

/// An argon2id hash of a password, in PHC string form.
pub fn hash_password(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing the password: {e}"))
}

/// Whether `password` matches a stored hash.
pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
}

fn new_token() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// Paths anyone may reach: the sign-in page, health, static files, the agents' sites.
fn is_public(path: &str) -> bool {
    const PREFIXES: [&str; 9] =
        ["/login", "/logout", "/healthz", "/pkg/", "/shop", "/forum", "/wiki", "/ep/", "/api/episodes"];
    path == "/favicon.ico" || PREFIXES.iter().any(|p| path.starts_with(p))
}

/// Whether a state-changing request comes from this origin (see the module comment).
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else { return false };
    let source = headers.get(header::ORIGIN).or_else(|| headers.get(header::REFERER)).and_then(|h| h.to_str().ok());
    match source {
        None => true,
        Some(url) => {
            let rest = url.split_once("://").map_or("", |(_, r)| r);
            rest.split('/').next() == Some(host)
        }
    }
}

/// Finds who is behind a request, refuses cross-site writes and anonymous dashboard access,
/// and hands the identity to the handlers (server functions read it from the request).
pub async fn layer(State(state): State<AppState>, jar: CookieJar, mut req: Request, next: Next) -> Response {
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe && !same_origin(req.headers()) {
        return HttpError::Forbidden("cross-site request refused (Origin does not match this server)".into())
            .into_response();
    }
    let identity = match state.guard.has_users(state.store.as_ref()).await {
        Ok(false) => Some(Identity { name: "local".into(), role: Role::Operator, open: true }),
        Ok(true) => match jar.get(COOKIE) {
            Some(c) => match state.store.session(c.value(), now_ms()).await {
                Ok(Some(crate::db::Account { name, role })) => {
                    Role::parse(&role).map(|role| Identity { name, role, open: false })
                }
                Ok(None) => None,
                Err(e) => return HttpError::internal("reading the session", e).into_response(),
            },
            None => None,
        },
        Err(e) => return HttpError::internal("reading accounts", e).into_response(),
    };
    let path = req.uri().path().to_string();
    match identity {
        Some(id) => {
            req.extensions_mut().insert(id);
        }
        None if is_public(&path) => {}
        None if req.method() == Method::GET => {
            let next = req.uri().path_and_query().map_or("/", |p| p.as_str()).to_string();
            return Redirect::to(&format!("/login?next={}", urlencoding::encode(&next))).into_response();
        }
        None => return HttpError::Unauthorized("sign in first".into()).into_response(),
    }
    next.run(req).await
}

#[derive(Debug, Deserialize)]
pub struct LoginQuery {
    pub next: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct LoginForm {
    pub name: String,
    pub password: String,
    #[serde(default)]
    pub next: String,
}

/// Only paths on this server: never another host (`//evil`, `https://…`).
fn local_path(next: &str) -> &str {
    if next.starts_with('/') && !next.starts_with("//") && !next.starts_with("/\\") { next } else { "/" }
}

/// The sign-in page runs no script at all (it gets the script-free page policy).
fn login_page(next: &str, error: Option<&str>) -> Response {
    let html = Html(
        maud::html! {
            (maud::DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    title { "Sign in · Mirage" }
                    link rel="stylesheet" href="/pkg/mirage.css";
                }
                body {
                    header class="topbar" { a class="brand" href="/" { "Mirage" } }
                    main class="content" {
                        h1 { "Sign in" }
                        @if let Some(e) = error { p class="error" role="alert" { (e) } }
                        form class="launch login" method="post" action="/login" {
                            input type="hidden" name="next" value=(next);
                            div class="field" { label for="name" { "Name" } input id="name" name="name" autocomplete="username" required; }
                            div class="field" { label for="password" { "Password" } input id="password" name="password" type="password" autocomplete="current-password" required; }
                            button type="submit" { "Sign in" }
                        }
                    }
                }
            }
        }
        .into_string(),
    );
    html.into_response()
}

/// `GET /login`.
pub async fn login_form(Query(q): Query<LoginQuery>) -> Response {
    login_page(local_path(q.next.as_deref().unwrap_or("/")), None)
}

/// `POST /login`: checks the password, opens a session, goes back to `next`.
pub async fn login(State(state): State<AppState>, jar: CookieJar, Form(form): Form<LoginForm>) -> Response {
    let next = local_path(&form.next).to_string();
    let user = match state.store.user(&form.name).await {
        Ok(u) => u,
        Err(e) => return HttpError::internal("reading accounts", e).into_response(),
    };
    // argon2 takes tens of milliseconds of CPU: off the async workers.
    let password = form.password.clone();
    let verified = match user {
        Some(c) => {
            tokio::task::spawn_blocking(move || verify_password(&password, &c.password_hash)).await.unwrap_or(false)
        }
        None => false,
    };
    if !verified {
        return (StatusCode::UNAUTHORIZED, login_page(&next, Some("Unknown name or wrong password."))).into_response();
    }
    let token = new_token();
    if let Err(e) = state.store.create_session(&token, &form.name, now_ms() + SESSION_MS).await {
        return HttpError::internal("opening a session", e).into_response();
    }
    let cookie = Cookie::build((COOKIE, token))
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(state.config.server.secure_cookies)
        .path("/")
        .build();
    (jar.add(cookie), Redirect::to(&next)).into_response()
}

/// `POST /logout`: ends the session.
pub async fn logout(State(state): State<AppState>, jar: CookieJar) -> Response {
    if let Some(c) = jar.get(COOKIE) {
        let _ = state.store.end_session(c.value()).await;
    }
    (jar.remove(Cookie::build(COOKIE).path("/")), Redirect::to("/login")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_hash_and_verify() {
        let h = hash_password("correct horse").expect("hash");
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong", &h));
        assert!(!verify_password("correct horse", "not a hash"));
    }

    #[test]
    fn only_local_paths_are_followed_after_sign_in() {
        assert_eq!(local_path("/runs?x=1"), "/runs?x=1");
        for bad in ["//evil.example/", "https://evil.example/", "/\\evil", "runs"] {
            assert_eq!(local_path(bad), "/", "{bad}");
        }
    }

    #[test]
    fn cross_site_writes_are_recognised() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, "127.0.0.1:3000".parse().expect("value"));
        assert!(same_origin(&h), "no Origin: not a browser");
        h.insert(header::ORIGIN, "http://127.0.0.1:3000".parse().expect("value"));
        assert!(same_origin(&h));
        h.insert(header::ORIGIN, "https://evil.example".parse().expect("value"));
        assert!(!same_origin(&h));
        h.remove(header::ORIGIN);
        h.insert(header::REFERER, "http://127.0.0.1:3000.evil.example/x".parse().expect("value"));
        assert!(!same_origin(&h));
    }
}
