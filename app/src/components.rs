//! Pieces shared by several pages: estimate cells, progress bars, the live progress
//! subscription, run pickers and query helpers.

use std::collections::HashMap;

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::model::{Est, Pending, Progress};

/// A query parameter of the current URL, `None` when absent or empty.
pub fn query_param(key: &'static str) -> Memo<Option<String>> {
    let query = use_query_map();
    Memo::new(move |_| query.read().get(key).filter(|v| !v.is_empty()))
}

/// `?a=1&b=2` from pairs, leaving out empty values (percent-encoded).
pub use crate::model::routes::query as query_string;

/// Formats a share 0–1 with three decimals.
pub fn fmt3(v: f64) -> String {
    format!("{v:.3}")
}

/// A table cell with a mean, its 95 % interval and n (empty when the metric does not apply).
#[component]
pub fn EstCell(
    est: Option<Est>,
    /// A dollar figure: more digits, with the currency sign.
    #[prop(optional)]
    dollars: bool,
) -> impl IntoView {
    match est {
        Some(e) if dollars => view! {
            <td class="num cost" title=format!("95% CI {}, n = {}", e.bracket_by(crate::model::dollars), e.n)>
                <span class="mean">{crate::model::dollars(e.mean)}</span>
                <span class="ci">{format!(" {}", e.bracket_by(crate::model::dollars))}</span>
                <span class="n">{format!(" n={}", e.n)}</span>
            </td>
        }
        .into_any(),
        Some(e) => view! {
            <td class="num" title=format!("95% CI {}, n = {}", e.bracket(3), e.n)>
                <span class="mean">{fmt3(e.mean)}</span>
                <span class="ci">{format!(" {}", e.bracket(2))}</span>
                <span class="n">{format!(" n={}", e.n)}</span>
            </td>
        }
        .into_any(),
        None => view! { <td class="num na">"–"</td> }.into_any(),
    }
}

/// An agreement statistic over `n` pairs: the number, or a plain "too few" below
/// [`crate::model::MIN_AGREEMENT_N`] pairs (a κ of one pair is no number to read).
#[component]
pub fn AgreementCell(n: usize, value: Option<f64>) -> impl IntoView {
    let min = crate::model::MIN_AGREEMENT_N;
    if n < min {
        view! { <td class="num na" title=format!("{n} pairs; at least {min} are needed")>{format!("too few: n = {n} of the {min} needed")}</td> }
            .into_any()
    } else {
        let shown = value.map_or_else(|| "undefined: every label was one and the same value".to_string(), fmt3);
        view! { <td class="num">{shown}</td> }.into_any()
    }
}

/// A progress bar with counts.
#[component]
#[expect(clippy::needless_pass_by_value, reason = "component props are passed by value")]
pub fn ProgressLine(progress: Progress) -> impl IntoView {
    let c = progress.counts;
    let eta = progress.eta_secs.map(|s| format!(", about {:.0} s left", s.ceil())).unwrap_or_default();
    view! {
        <div class="progress-line" data-run=progress.run_id.to_string() data-status=progress.status.as_str()>
            <progress max="100" value=format!("{:.1}", progress.percent())></progress>
            <span class="progress-text">
                {format!(
                    "{} of {} finished ({} done, {} errors, {} cancelled, {} running, {} queued), {:.0}/min{eta}",
                    c.finished(), progress.total, c.done, c.error, c.cancelled, c.running, c.queued, progress.per_minute
                )}
            </span>
            <span class=format!("status status-{}", progress.status)>{progress.status.as_str()}</span>
        </div>
    }
}

/// The line a page shows while its numbers are being computed: what, how far, and whether
/// the numbers shown are from before. In the browser it asks the server again (`refetch`)
/// a second later, until the answer comes without it.
#[component]
pub fn PendingLine(pending: Option<Pending>, refetch: Callback<()>) -> impl IntoView {
    let p = pending?;
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let handle = set_timeout_with_handle(move || refetch.run(()), std::time::Duration::from_secs(1)).ok();
        on_cleanup(move || {
            if let Some(h) = handle {
                h.clear();
            }
        });
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = refetch;
    let progress = if p.total > 0 { format!(": {} of {}", p.done, p.total) } else { String::new() };
    let shown = if p.stale {
        "The numbers below are from before the latest trials or labels; they update when it is done."
    } else {
        "What is missing below appears when it is done."
    };
    Some(view! {
        <p class="pending" role="status" data-testid="pending">
            {(p.total > 0).then(|| {
                #[expect(clippy::cast_precision_loss, reason = "a progress bar")]
                let value = p.done as f64 / p.total as f64 * 100.0;
                view! { <progress max="100" value=format!("{value:.1}")></progress>" " }
            })}
            {format!("{}{progress}. {shown}", p.what)}
        </p>
    })
}

/// Live progress by run id, fed by the server's event stream after hydration.
#[derive(Clone, Copy)]
pub struct Live(pub RwSignal<HashMap<String, Progress>>);

impl Live {
    /// The newest progress of a run: from the stream when it sent one, else `fallback`.
    pub fn of(&self, fallback: &Progress) -> Progress {
        self.0.with(|m| m.get(fallback.run_id.as_str()).cloned()).unwrap_or_else(|| fallback.clone())
    }
}

/// Subscribes to `/api/runs/events` (one run, or every active run) for as long as the
/// calling component lives.
#[cfg_attr(not(feature = "hydrate"), expect(clippy::needless_pass_by_value, reason = "used by the browser build"))]
pub fn live_progress(run: Option<String>) -> Live {
    let live = Live(RwSignal::new(HashMap::new()));
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| subscribe(run.as_deref(), live.0));
    #[cfg(not(feature = "hydrate"))]
    let _ = run;
    live
}

#[cfg(feature = "hydrate")]
fn subscribe(run: Option<&str>, live: RwSignal<HashMap<String, Progress>>) {
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;

    let single = run.is_some();
    let url = match run {
        Some(r) => format!("/api/runs/events?run={}", urlencoding::encode(r)),
        None => "/api/runs/events".to_string(),
    };
    let Ok(source) = web_sys::EventSource::new(&url) else { return };
    let inner = source.clone();
    let on_progress = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |ev: web_sys::MessageEvent| {
        let Some(text) = ev.data().as_string() else { return };
        let Ok(p) = serde_json::from_str::<Progress>(&text) else { return };
        // A finished run's stream ends; without this the browser would reconnect forever.
        if single && p.status != crate::model::RunStatus::Active {
            inner.close();
        }
        live.update(|m| {
            m.insert(p.run_id.to_string(), p);
        });
    });
    let _ = source.add_event_listener_with_callback("progress", on_progress.as_ref().unchecked_ref());
    on_progress.forget();
    let source = send_wrapper::SendWrapper::new(source);
    on_cleanup(move || source.close());
}

/// A `<select>` of runs that navigates to `base` with the chosen run (other parameters kept
/// by the caller through `rest`).
#[component]
pub fn RunPicker(
    runs: Vec<crate::model::RunId>,
    current: crate::model::RunId,
    href: Callback<String, String>,
) -> impl IntoView {
    let options = runs.into_iter().map(String::from).collect::<Vec<_>>();
    view! { <Picker label="Run " name="run" options=options current=String::from(current) href=href/> }
}

/// A labelled select that navigates to `href(choice)` when changed.
#[component]
#[expect(clippy::needless_pass_by_value, reason = "component props are passed by value")]
pub fn Picker(
    label: &'static str,
    name: &'static str,
    options: Vec<String>,
    current: String,
    href: Callback<String, String>,
) -> impl IntoView {
    let navigate = leptos_router::hooks::use_navigate();
    view! {
        <label class="picker">{label}
            <select
                name=name
                on:change=move |ev| navigate(&href.run(event_target_value(&ev)), Default::default())
                prop:value=current.clone()
            >
                {options.into_iter().map(|r| {
                    let selected = r == current;
                    view! { <option value=r.clone() selected=selected>{r.clone()}</option> }
                }).collect_view()}
            </select>
        </label>
    }
}

/// Whether the person behind this page may do what `role` allows (false until known).
pub fn may(role: crate::model::Role) -> Signal<bool> {
    let who = Resource::new(|| (), |()| crate::api::whoami());
    Signal::derive(move || who.get().and_then(Result::ok).is_some_and(|w| w.role >= role))
}

/// Whether a key press belongs to someone typing (in a field) or to a shortcut of the
/// browser (with Ctrl, Meta or Alt): the pages' own keys leave it alone.
#[cfg(feature = "hydrate")]
pub fn not_for_us(ev: &web_sys::KeyboardEvent) -> bool {
    let in_field = ev
        .target()
        .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
        .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
    in_field || ev.ctrl_key() || ev.meta_key() || ev.alt_key()
}

/// Each grader measured against people (the leaderboard's and the report's "Grader
/// validity"): figure, grader, what it was compared with, the statistic with its interval and
/// n; fewer than [`MIN_AGREEMENT_N`](crate::model::MIN_AGREEMENT_N) pairs read as too few.
#[component]
pub fn ChecksTable(checks: Vec<crate::model::GraderCheck>) -> impl IntoView {
    if checks.is_empty() {
        return view! {
            <p class="muted" data-testid="no-checks">"No grader has been checked against people in this run yet: settle labels on the annotation page or grade trials from their trajectory pages. Rule-computed figures are covered by the grader self-tests."</p>
        }
        .into_any();
    }
    view! {
        <table class="agreement checks" data-testid="grader-checks">
            <caption>{format!("Each grader against people on the same trials (95 % intervals; read from n = {})", crate::model::MIN_AGREEMENT_N)}</caption>
            <thead><tr><th>"Figure"</th><th>"Grader"</th><th>"Against"</th><th>"Statistic"</th><th>"n"</th><th>"Value [95 % interval]"</th></tr></thead>
            <tbody>
                {checks.into_iter().map(|c| {
                    let value = match (&c.value, c.enough) {
                        (_, false) => format!("too few (at least {})", crate::model::MIN_AGREEMENT_N),
                        (None, true) => c.note.clone().map_or_else(|| "undefined".to_string(), |n| format!("undefined: {n}")),
                        (Some(v), true) => format!("{} {}", fmt3(v.mean), v.bracket(3)),
                    };
                    // Beside a value, what it rests on (part of the sample, adjudications).
                    let rests = c.value.as_ref().and(c.note.clone()).filter(|_| c.enough);
                    view! {
                        <tr class:few=!c.enough>
                            <td>{c.metric}</td><td>{c.grader}</td><td>{c.against}</td>
                            <td>{c.statistic}</td><td class="num">{c.n}</td>
                            <td class="num">{value}{rests.map(|n| view! { <div class="muted note">{format!("† {n}")}</div> })}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// What a figure page says of the point in the label history its figures stand at: the
/// label generation and when it was recorded, a link that pins it (and a button copying
/// that link), and on a pinned page how many labels came later, with a link to the
/// current figures. `href` gives the page's URL with `as_of` set (or left out for `None`).
#[component]
pub fn AsOfLine(as_of: crate::model::AsOf, href: Callback<Option<String>, String>) -> impl IntoView {
    let when = as_of.at.map_or_else(|| "no label recorded yet".to_string(), crate::model::utc_second);
    let pinned = href.run(Some(as_of.param()));
    let current = href.run(None);
    let copied = RwSignal::new(false);
    // Reached by a link that names no run (the menu's), the URL gets the run shown, so that
    // it can be shared as it is; the server does the same for a page loaded whole.
    #[cfg(feature = "hydrate")]
    {
        let here = href.run(as_of.pinned.then(|| as_of.param()));
        let (navigate, query) = (leptos_router::hooks::use_navigate(), leptos_router::hooks::use_query_map());
        Effect::new(move |_| {
            if here.contains("?run=") && query.read_untracked().get("run").is_none() {
                navigate(&here, leptos_router::NavigateOptions { replace: true, ..Default::default() });
            }
        });
    }
    let copy = {
        let pinned = pinned.clone();
        move |_| {
            #[cfg(feature = "hydrate")]
            // The clipboard exists only on secure pages (HTTPS, or this machine): elsewhere the
            // link beside the button is there to copy by hand.
            if let Some(w) = web_sys::window().filter(web_sys::Window::is_secure_context) {
                use wasm_bindgen::{JsValue, closure::Closure};
                let url = format!("{}{pinned}", w.location().origin().unwrap_or_default());
                // The browser may refuse (no permission): the button then says nothing new.
                let done = Closure::once(move |_: JsValue| copied.set(true));
                let refused = Closure::once(|_: JsValue| ());
                let _ = w.navigator().clipboard().write_text(&url).then2(&done, &refused);
                done.forget();
                refused.forget();
            }
            #[cfg(not(feature = "hydrate"))]
            let _ = &pinned;
        }
    };
    let lead = if as_of.pinned {
        format!("Figures as of label generation {} ({when}), fixed by this page's link.", as_of.generation)
    } else {
        format!("Figures as of label generation {} ({when}).", as_of.generation)
    };
    view! {
        <p class="as-of muted" data-testid="as-of">
            {lead}" "
            <a href=pinned.clone() data-testid="as-of-link">"Link to these figures"</a>" "
            <button type="button" class="small" on:click=copy>
                {move || if copied.get() { "Link copied" } else { "Copy a link to these figures" }}
            </button>
            {as_of.pinned.then(|| match as_of.newer {
                0 => view! { " No label was added since." }.into_any(),
                n => view! {
                    " "<span data-testid="as-of-newer">{format!("{n} newer label{} since", if n == 1 { "" } else { "s" })}</span>": "
                    <a href=current.clone() data-testid="as-of-current">"see the current figures"</a>"."
                }.into_any(),
            })}
            {(as_of.pinned && as_of.run_active).then_some(" The run is still under way: trials that finish later join these figures.")}
        </p>
    }
}
