//! Raw axum routes that are not server functions: health, the three sites, episodes,
//! sign-in, the progress stream and downloads; their error type; and the security headers
//! every response gets.

pub mod auth;
pub mod bundle;
pub mod dashboard;
pub mod episodes;
mod error;
pub mod listen;
pub mod sites;

use axum::Router;
use axum::http::{HeaderName, HeaderValue, header};
use tower_http::set_header::SetResponseHeaderLayer;

pub use error::{HttpError, bounded_errors, server_fn_status};

/// The frame of the few pages the server writes itself rather than the dashboard renders
/// (sign-in, the book when it is not built): the title, the stylesheet, the top bar, and
/// `content` in the main column. They run no script.
pub fn plain_page(title: &str, content: &maud::Markup) -> String {
    maud::html! {
        (maud::DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) " · Mirage" }
                link rel="stylesheet" href="/pkg/mirage.css";
            }
            body {
                header class="topbar" { a class="brand" href="/" { "Mirage" } }
                main class="content" { (content) }
            }
        }
    }
    .into_string()
}

/// The policy of every page that runs no script (the three sites, sign-in, errors): even
/// markup injected into a page could not run or load anything. Responses that need another
/// policy set their own and keep it: dashboard pages (a per-response script nonce, set by
/// the app's shell) and downloads (an SVG's inline styles).
pub const PAGE_POLICY: &str =
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The book's policy (`/book/…`, mdBook's static pages built from the repository's
/// `docs/`): mdBook's own scripts, including its inline ones, its styles and fonts. The book
/// shows no stored or submitted text, so its inline scripts are the build's own.
pub const BOOK_POLICY: &str = "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; font-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; \
     frame-ancestors 'none'";

/// Gives the book's pages [`BOOK_POLICY`] (the script-free page policy would break them).
pub async fn book_policy(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let book = req.uri().path().starts_with("/book/");
    let mut resp = next.run(req).await;
    if book {
        resp.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(BOOK_POLICY));
    }
    resp
}

/// Adds the security headers of every response, from one place: the page policy where the
/// response has none, no MIME sniffing, no framing, and no referrer to other sites.
pub fn with_security_headers<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    let fixed = |name: HeaderName, value: &'static str| {
        SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value))
    };
    router
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(PAGE_POLICY),
        ))
        .layer(fixed(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .layer(fixed(header::X_FRAME_OPTIONS, "DENY"))
        .layer(fixed(header::REFERRER_POLICY, "same-origin"))
}

/// Liveness probe.
pub async fn health() -> &'static str {
    "ok"
}
