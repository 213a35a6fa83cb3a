//! Mirage's dashboard UI: an isomorphic Leptos crate. Built with `ssr` into the server
//! binary and with `hydrate` into the browser's wasm module.

pub mod api;
mod components;
pub mod error;
pub mod glossary;
pub mod model;
mod pages;
#[cfg(feature = "ssr")]
pub mod ssr;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::components::{A, Route, Router, Routes};
use leptos_router::path;

/// The Content-Security-Policy of every dashboard page: scripts only from this origin or
/// carrying this response's nonce (the hydration bootstrap), no plugins, no inline styles,
/// no framing, and forms and links only to this origin.
pub fn content_security_policy(nonce: &str) -> String {
    format!(
        "default-src 'none'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; style-src 'self'; \
         img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; \
         frame-ancestors 'none'; object-src 'none'"
    )
}

/// The HTML document around the app, rendered on the server.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let (Some(nonce), Some(resp)) = (leptos::nonce::use_nonce(), use_context::<leptos_axum::ResponseOptions>())
        && let Ok(value) = http::HeaderValue::from_str(&content_security_policy(&nonce.to_string()))
    {
        resp.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
    }
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="icon" href="/favicon.ico"/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The dashboard: navigation and routes.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // Effects run only in the browser, after hydration: the e2e suite waits for this mark.
    Effect::new(|_| {
        if let Some(body) = document().body() {
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });
    view! {
        <Stylesheet id="mirage" href="/pkg/mirage.css"/>
        <Title formatter=|t: String| if t.is_empty() { "Mirage".to_string() } else { format!("{t} · Mirage") }/>
        <Router>
            <header class="topbar">
                <A href="/" attr:class="brand">"Mirage"</A>
                <nav aria-label="Main">
                    <A href="/runs">"Runs"</A>
                    <A href="/leaderboard">"Leaderboard"</A>
                    <A href="/robustness">"Robustness"</A>
                    <A href="/heatmaps">"Heatmaps"</A>
                    <A href="/report">"Report"</A>
                    <A href="/compare">"Compare"</A>
                    <A href="/geo">"GEO ranking"</A>
                    <A href="/annotate">"Annotate"</A>
                    <A href="/search">"Search"</A>
                    <A href="/tasks">"Tasks"</A>
                    <a href="/shop/admin/dashboard" rel="external">"Shop admin"</a>
                    <a href="/forum" rel="external">"Forum"</a>
                    <a href="/wiki" rel="external">"Wiki"</a>
                </nav>
                <WhoAmI/>
            </header>
            <main class="content">
                <Routes fallback=pages::NotFound>
                    <Route path=path!("/") view=pages::HomePage/>
                    <Route path=path!("/tasks") view=pages::TasksPage/>
                    <Route path=path!("/tasks/:id") view=pages::TaskPage/>
                    <Route path=path!("/runs") view=pages::RunsPage/>
                    <Route path=path!("/runs/:id") view=pages::RunPage/>
                    <Route path=path!("/runs/:run/trials/:trial") view=pages::TrajectoryPage/>
                    <Route path=path!("/leaderboard") view=pages::LeaderboardPage/>
                    <Route path=path!("/team") view=pages::TeamPage/>
                    <Route path=path!("/robustness") view=pages::RobustnessPage/>
                    <Route path=path!("/heatmaps") view=pages::HeatmapsPage/>
                    <Route path=path!("/report") view=pages::ReportPage/>
                    <Route path=path!("/compare") view=pages::ComparePage/>
                    <Route path=path!("/compare/trials") view=pages::CompareTrialsPage/>
                    <Route path=path!("/definitions") view=pages::DefinitionsPage/>
                    <Route path=path!("/geo") view=pages::GeoPage/>
                    <Route path=path!("/geo/trials/:trial") view=pages::GeoTargetPage/>
                    <Route path=path!("/grade/:trial") view=pages::GradePage/>
                    <Route path=path!("/annotate") view=pages::AnnotatePage/>
                    <Route path=path!("/search") view=pages::SearchPage/>
                    <Route path=path!("/annotate/:trial/:kind") view=pages::AnnotateItemPage/>
                </Routes>
            </main>
        </Router>
    }
}

/// Who is signed in, with a sign-out button (nothing when no accounts exist).
#[component]
fn WhoAmI() -> impl IntoView {
    let who = Resource::new(|| (), |()| api::whoami());
    view! {
        <Transition>
            {move || who.get().and_then(Result::ok).filter(|w| !w.open).map(|w| view! {
                <form class="whoami" method="post" action="/logout">
                    <span>{format!("{} ({})", w.name, w.role.as_str())}</span>
                    <button type="submit" class="link">"Sign out"</button>
                </form>
            })}
        </Transition>
    }
}

/// Entry point of the wasm module: attaches the app to the server-rendered HTML.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
