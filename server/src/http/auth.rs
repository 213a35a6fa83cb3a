//! Access to the dashboard.
//!
//! Hosts: a request must name in `Host` one of the names this server answers to (its
//! listen address, `localhost`, `127.0.0.1`, `[::1]` and `[server] hosts`); any other is
//! refused with 421 before routing. A web page that rebinds its own name to this address
//! therefore reaches nothing.
//!
//! Without accounts, `mirage serve` listens on loopback only, and a request is the local
//! operator only when the listener, the peer address and the `Host` are all loopback. With
//! accounts (`mirage user add`), a person signs in at `/login`; the session lives in an
//! HttpOnly, SameSite=Strict cookie, and server functions check the role.
//!
//! Cross-site request forgery: every request that changes state (anything but GET/HEAD/
//! OPTIONS) must show where it comes from. Browsers send `Origin` (or at least `Referer`),
//! which must name an allowed host; a client that is not a browser (a script) sends the
//! `X-Mirage-Client` header instead, which a page on another site cannot add without a
//! preflight this server never grants. Only the agents' episode API (`/api/episodes`,
//! `/ep/…`) takes writes with neither: it is the agents' environment, open by design and
//! budgeted per client.

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
use crate::state::Budget;

/// Name of the session cookie.
pub const COOKIE: &str = "mirage_session";
/// How long a session lasts on the server (the cookie itself ends with the browser session).
const SESSION_MS: i64 = 12 * 60 * 60 * 1000;

/// Longer passwords are refused unchecked (no account has one: `user add` refuses them).
pub const MAX_PASSWORD_BYTES: usize = 1_024;

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
    path == "/favicon.ico" || PREFIXES.iter().any(|p| path.starts_with(p)) || is_run_episodes(path)
}

/// `/api/runs/<run>/episodes`, where an outside agent takes the trials of a run.
fn is_run_episodes(path: &str) -> bool {
    path.strip_prefix("/api/runs/")
        .and_then(|rest| rest.strip_suffix("/episodes"))
        .is_some_and(|run| !run.is_empty() && !run.contains('/'))
}

/// The header a script that is not a browser sends on writes in place of `Origin`.
pub const CLIENT_HEADER: &str = "x-mirage-client";

/// Paths of the agents' episode API, which takes writes from clients that name no origin.
fn is_agent_api(path: &str) -> bool {
    path == "/api/episodes" || path.starts_with("/ep/") || is_run_episodes(path)
}

/// The host name of a `Host` value or of a URL's authority, without port, lower-cased
/// (`[::1]` keeps its brackets).
fn host_name(authority: &str) -> String {
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let name = if authority.starts_with('[') {
        authority.split_inclusive(']').next().unwrap_or(authority)
    } else {
        match authority.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => authority,
        }
    };
    name.to_ascii_lowercase()
}

/// Whether a host name is this machine's loopback.
fn is_loopback_name(name: &str) -> bool {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    name == "localhost" || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The host names this server answers to.
pub fn allowed_hosts(state: &AppState) -> Vec<String> {
    let ip = state.leptos_options.site_addr.ip();
    let listen = if ip.is_ipv6() { format!("[{ip}]") } else { ip.to_string() };
    let mut hosts = vec![listen, "localhost".into(), "127.0.0.1".into(), "[::1]".into()];
    hosts.extend(state.config.server.hosts.iter().map(|h| host_name(h)));
    hosts
}

/// The authority a request was sent to: its `Host` header, or (HTTP/2) the URI's.
fn request_authority(headers: &HeaderMap, uri: &axum::http::Uri) -> Option<String> {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| uri.authority().map(|a| a.as_str().to_string()))
}

/// Where a write says it comes from: `Ok` when it may go on (see the module comment). A
/// page's `Origin` (or `Referer`) must be this very server: http or https, and the same
/// host and port the request was sent to (which the host check has already allowed), so
/// another web application on this machine, on another port, is another site.
fn write_source(headers: &HeaderMap, path: &str, authority: Option<&str>) -> Result<(), String> {
    let source = headers.get(header::ORIGIN).or_else(|| headers.get(header::REFERER)).and_then(|h| h.to_str().ok());
    match source {
        Some(url) => {
            let (scheme, rest) = url.split_once("://").unwrap_or(("", ""));
            let from = rest.split('/').next().unwrap_or("");
            let web = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
            if web && authority.is_some_and(|a| a.eq_ignore_ascii_case(from)) {
                Ok(())
            } else {
                Err(format!("cross-site request refused: it comes from {url:?}, not from this server's own pages"))
            }
        }
        None if headers.contains_key(CLIENT_HEADER) || is_agent_api(path) => Ok(()),
        None => Err(format!(
            "a write must carry Origin or Referer (browsers send them) or the {CLIENT_HEADER} header (scripts)"
        )),
    }
}

/// Refuses requests to a host this server does not answer to (421), before routing.
pub async fn hosts(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(authority) = request_authority(req.headers(), req.uri()) else {
        return (StatusCode::BAD_REQUEST, "the request names no Host").into_response();
    };
    // Browsers never send user information in Host; `evil.example@127.0.0.1` is a trick.
    if authority.contains('@') {
        return (StatusCode::BAD_REQUEST, "the Host header carries user information (`name@`): refused")
            .into_response();
    }
    let host = host_name(&authority);
    if !allowed_hosts(&state).contains(&host) {
        return (
            StatusCode::MISDIRECTED_REQUEST,
            format!("this server does not answer to the host {host:?} (add it to [server] hosts in the config)"),
        )
            .into_response();
    }
    next.run(req).await
}

/// Finds who is behind a request, refuses cross-site writes and anonymous dashboard access,
/// and hands the identity to the handlers (server functions read it from the request).
pub async fn layer(State(state): State<AppState>, jar: CookieJar, mut req: Request, next: Next) -> Response {
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let authority = request_authority(req.headers(), req.uri());
    if !safe && let Err(why) = write_source(req.headers(), req.uri().path(), authority.as_deref()) {
        return HttpError::Forbidden(why).into_response();
    }
    // Open mode serves the operator to this machine only: listener, peer and Host loopback.
    let local = state.leptos_options.site_addr.ip().is_loopback()
        && req
            .extensions()
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .is_some_and(|c| c.0.ip().is_loopback())
        && authority.as_deref().is_some_and(|h| is_loopback_name(&host_name(h)));
    let mut open = false;
    let identity = match state.guard.has_users(state.store.as_ref()).await {
        Ok(false) if local => Some(Identity { name: "local".into(), role: Role::Operator, open: true }),
        Ok(false) => {
            open = true;
            None
        }
        Ok(true) => match jar.get(COOKIE) {
            Some(c) => match state.store.session(c.value(), now_ms()).await {
                Ok(Some(crate::db::Account { name, role })) => {
                    Role::parse(&role).map(|role| Identity { name, role, open: false })
                }
                Ok(None) => None,
                Err(e) => return HttpError::failed("reading the session", e).into_response(),
            },
            None => None,
        },
        Err(e) => return HttpError::failed("reading accounts", e).into_response(),
    };
    let path = req.uri().path().to_string();
    match identity {
        Some(id) => {
            req.extensions_mut().insert(id);
        }
        None if is_public(&path) => {}
        None if open => {
            return HttpError::Forbidden(
                "this dashboard has no accounts, so it serves only this machine (loopback listener, client and host name)"
                    .into(),
            )
            .into_response();
        }
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
    let content = maud::html! {
        h1 { "Sign in" }
        @if let Some(e) = error { p class="error" role="alert" { (e) } }
        form class="launch login" method="post" action="/login" {
            input type="hidden" name="next" value=(next);
            div class="field" { label for="name" { "Name" } input id="name" name="name" autocomplete="username" required; }
            div class="field" { label for="password" { "Password" } input id="password" name="password" type="password" autocomplete="current-password" required; }
            button type="submit" { "Sign in" }
        }
    };
    Html(super::plain_page("Sign in", &content)).into_response()
}

/// `GET /login`.
pub async fn login_form(Query(q): Query<LoginQuery>) -> Response {
    login_page(local_path(q.next.as_deref().unwrap_or("/")), None)
}

/// A hash no password matches, checked for names that have no account, so that an unknown
/// name costs what a wrong password does (the time of an answer tells nothing).
fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash_password(&new_token()).unwrap_or_default())
}

/// `POST /login`: checks the password, opens a session, goes back to `next`. Attempts are
/// budgeted per client and per account name (`[server] logins_per_minute`).
pub async fn login(
    State(state): State<AppState>,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
    jar: CookieJar,
    Form(form): Form<LoginForm>,
) -> Response {
    let next = local_path(&form.next).to_string();
    let client = crate::state::client_key(peer.map(|p| p.0.0));
    let budget = state.config.server.logins_per_minute;
    if !state.guard.allow(Budget::LoginClient, &client, budget)
        || !state.guard.allow(Budget::LoginAccount, &form.name, budget)
    {
        let why = "Too many sign-in attempts from here or on this name: wait a minute.";
        return (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, "60")], login_page(&next, Some(why)))
            .into_response();
    }
    // A password check costs up to seconds of CPU: one at a time per client, and a few at
    // once server-wide, so that no client's attempts take more than their share.
    let Some(_turn) = state.guard.password_turn(&client).await else {
        return HttpError::failed("checking a password", anyhow::anyhow!("the check slots closed")).into_response();
    };
    if form.password.len() > MAX_PASSWORD_BYTES {
        return (StatusCode::UNAUTHORIZED, login_page(&next, Some("Unknown name or wrong password."))).into_response();
    }
    let user = match state.store.user(&form.name).await {
        Ok(u) => u,
        Err(e) => return HttpError::failed("reading accounts", e).into_response(),
    };
    // argon2 takes tens of milliseconds of CPU: off the async workers. An unknown name is
    // checked against a decoy hash at the same cost.
    let password = form.password.clone();
    let known = user.is_some();
    let hash = user.map_or_else(|| decoy_hash().to_string(), |c| c.password_hash);
    // Checked whatever the name: `known && …` would skip the check for unknown names.
    let checked = tokio::task::spawn_blocking(move || verify_password(&password, &hash)).await.unwrap_or(false);
    let verified = known && checked;
    if !verified {
        return (StatusCode::UNAUTHORIZED, login_page(&next, Some("Unknown name or wrong password."))).into_response();
    }
    let token = new_token();
    if let Err(e) = state.store.create_session(&token, &form.name, now_ms() + SESSION_MS).await {
        return HttpError::failed("opening a session", e).into_response();
    }
    let cookie = Cookie::build((COOKIE, token))
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(state.config.server.secure_cookies)
        .path("/")
        .build();
    (jar.add(cookie), Redirect::to(&next)).into_response()
}

/// `POST /logout`: ends the session; a session the store could not end is an error that
/// says so (the cookie is kept, so that signing out can be tried again).
pub async fn logout(State(state): State<AppState>, jar: CookieJar) -> Response {
    if let Some(c) = jar.get(COOKIE)
        && let Err(e) = state.store.end_session(c.value()).await
    {
        // The person is told, not only the log: they are still signed in.
        tracing::error!("signing out: {e:#}");
        let page = "<!doctype html><meta charset=utf-8><title>Sign-out failed</title>\
                    <p role=alert>Signing out failed: the server could not end your session, so you are still \
                    signed in. Try again in a moment.</p><form method=post action=/logout><button>Sign out</button></form>";
        return (StatusCode::INTERNAL_SERVER_ERROR, axum::response::Html(page)).into_response();
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
    fn host_names_lose_their_port_and_case() {
        assert_eq!(host_name("127.0.0.1:3000"), "127.0.0.1");
        assert_eq!(host_name("LocalHost"), "localhost");
        assert_eq!(host_name("[::1]:3000"), "[::1]");
        assert_eq!(host_name("user:pw@evil.example:80"), "evil.example");
        assert!(is_loopback_name("localhost") && is_loopback_name("[::1]") && is_loopback_name("127.0.0.2"));
        assert!(!is_loopback_name("evil.example") && !is_loopback_name("10.0.0.1"));
    }

    #[test]
    fn writes_must_say_where_they_come_from() {
        let here = Some("127.0.0.1:3000");
        let mut h = HeaderMap::new();
        assert!(write_source(&h, "/api/cancel_run", here).is_err(), "no Origin and no client header");
        assert!(write_source(&h, "/api/episodes", here).is_ok(), "the agents' API is open");
        h.insert(CLIENT_HEADER, "script".parse().expect("value"));
        assert!(write_source(&h, "/api/cancel_run", here).is_ok());
        h.insert(header::ORIGIN, "http://127.0.0.1:3000".parse().expect("value"));
        assert!(write_source(&h, "/api/cancel_run", here).is_ok());
        for other in ["https://evil.example", "http://127.0.0.1:9999", "http://localhost:3000", "ftp://127.0.0.1:3000"]
        {
            h.insert(header::ORIGIN, other.parse().expect("value"));
            assert!(write_source(&h, "/api/cancel_run", here).is_err(), "{other}: another origin");
        }
        assert!(write_source(&h, "/api/episodes", here).is_err(), "an Origin is checked wherever it is sent");
        h.remove(header::ORIGIN);
        h.insert(header::REFERER, "http://127.0.0.1.evil.example:3000/x".parse().expect("value"));
        assert!(write_source(&h, "/api/cancel_run", here).is_err());
        h.insert(header::REFERER, "http://127.0.0.1:3000/runs".parse().expect("value"));
        assert!(write_source(&h, "/api/cancel_run", here).is_ok(), "a page of this server");
    }
}
