//! Mirage's dashboard UI: an isomorphic Leptos crate. Built with `ssr` into the server
//! binary and with `hydrate` into the browser's wasm module.

pub mod api;
pub mod error;
pub mod model;
mod pages;
#[cfg(feature = "ssr")]
pub mod ssr;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::components::{A, Route, Router, Routes};
use leptos_router::path;

/// The HTML document around the app, rendered on the server.
pub fn shell(options: LeptosOptions) -> impl IntoView {
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
                    <A href="/tasks">"Tasks"</A>
                    <a href="/shop/admin/dashboard" rel="external">"Shop admin"</a>
                    <a href="/forum" rel="external">"Forum"</a>
                    <a href="/wiki" rel="external">"Wiki"</a>
                </nav>
            </header>
            <main class="content">
                <Routes fallback=pages::NotFound>
                    <Route path=path!("/") view=pages::HomePage/>
                    <Route path=path!("/tasks") view=pages::TasksPage/>
                    <Route path=path!("/tasks/:id") view=pages::TaskPage/>
                </Routes>
            </main>
        </Router>
    }
}

/// Entry point of the wasm module: attaches the app to the server-rendered HTML.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
