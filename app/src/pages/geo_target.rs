//! `/geo/trials/<trial>`: one GEO target — the list with the target marked, the edit with
//! its keyword hits and what the newest detection report says of it, the TAP search, and
//! its rank in every order, clean and edited, with the raw replies. Every text is escaped.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use super::Loading;
use crate::api::get_geo_target;
use crate::components::fmt3;
use crate::model::{GeoJudged, GeoTargetView};

/// What the newest detection report says of the original and the edit.
fn judged(j: &GeoJudged) -> String {
    let p = |x: Option<f64>| x.map_or_else(|| "–".to_string(), |v| format!("{v:.3}"));
    let ppl = match (j.ppl_orig, j.ppl_adv) {
        (Some(o), Some(a)) if o > 0.0 => format!("; perplexity {o:.2} → {a:.2} (PPL-R {:.3})", a / o),
        _ => String::new(),
    };
    format!(
        "Judge ({}): P(manipulative) {} for the original, {} for the edit{}{}",
        j.label,
        p(j.p_orig),
        p(j.p_adv),
        match j.flagged {
            Some(true) => " — flagged at the report's threshold",
            Some(false) => " — passes the judge",
            None => "",
        },
        ppl
    )
}

fn target(v: &GeoTargetView) -> AnyView {
    let back = crate::model::routes::geo_at(&v.run, Some((&v.ranker, &v.method)), None);
    view! {
        <p><a href=back>"Back to the leaderboard"</a></p>
        <p class="muted">{format!("{} · ranker {} · method {} · {} ({})", v.instance, v.ranker, v.method, v.state, v.source)}</p>
        {v.error.clone().map(|e| view! { <p class="error">{format!("Error: {e}")}</p> })}
        <p>{format!(
            "Median rank before {} and after {} — NRG {}",
            v.r_b.map_or_else(|| "–".into(), |r| format!("{r:.1}")),
            v.r_a.map_or_else(|| "–".into(), |r| format!("{r:.1}")),
            v.nrg.map_or_else(|| "–".into(), fmt3),
        )}</p>
        <h2>{format!("The list ({})", v.query)}</h2>
        <ol class="geo-list">
            {v.items.iter().enumerate().map(|(i, (name, text))| {
                let class = if i == v.target { "target" } else { "" };
                view! { <li class=class><strong>{name.clone()}</strong>": "{text.clone()}</li> }
            }).collect_view()}
        </ol>
        <h2>{format!("The edit ({})", v.edit_kind)}</h2>
        <p class="text geo-worddiff">
            {v.diff.iter().map(|(kind, text)| match kind.as_str() {
                "del" => view! { <del>{text.clone()}</del> }.into_any(),
                "ins" => view! { <ins>{text.clone()}</ins> }.into_any(),
                _ => view! { <span>{text.clone()}</span> }.into_any(),
            }).collect_view()}
        </p>
        <details><summary>"Original and edited text side by side"</summary>
            <div class="geo-diff">
                <div><h3>"Original"</h3><p class="text">{v.orig_text.clone()}</p></div>
                <div><h3>"Edited"</h3><p class="text">{v.adv_text.clone()}</p></div>
            </div>
        </details>
        <p>{if v.keyword_hits.is_empty() {
            "The keyword filter finds nothing in the edited text.".to_string()
        } else {
            format!("Keyword filter hits: {}", v.keyword_hits.join(", "))
        }}</p>
        <p class="judged">{v.judged.as_ref().map_or_else(
            || "No detection report yet (`mirage geo score --run RUN`).".to_string(),
            judged,
        )}</p>
        {(!v.tap.is_empty()).then(|| tap_table(v))}
        <h2>"Orders"</h2>
        <table class="report geo-orders">
            <thead><tr><th>"order"</th><th>"target shown at"</th><th>"rank clean"</th><th>"rank edited"</th><th>"replies"</th></tr></thead>
            <tbody>
                {v.orders.iter().map(|o| view! {
                    <tr>
                        <td class="num">{o.order}</td><td class="num">{o.shown_at}</td>
                        <td class="num">{o.clean_rank}</td><td class="num">{o.edited_rank}</td>
                        <td><details><summary>"clean and edited replies"</summary>
                            <pre class="reply">{o.clean_reply.clone()}</pre>
                            <pre class="reply">{o.edited_reply.clone()}</pre>
                        </details></td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// The candidates a TAP search scored, node by node.
fn tap_table(v: &GeoTargetView) -> impl IntoView {
    view! {
        <h2>"TAP search"</h2>
        <table class="report geo-tap">
            <caption>{format!("{} candidates scored by the ranker (mean rank over the scoring orders; lower is better)", v.tap.len())}</caption>
            <thead><tr><th>"node"</th><th>"parent"</th><th>"depth"</th><th>"score"</th><th>"suffix"</th></tr></thead>
            <tbody>
                {v.tap.iter().map(|n| view! {
                    <tr>
                        <td class="num">{n.id}</td>
                        <td class="num">{n.parent.map_or_else(|| "–".to_string(), |p| p.to_string())}</td>
                        <td class="num">{n.depth}</td><td class="num">{format!("{:.1}", n.score)}</td>
                        <td>{n.suffix.clone()}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// `/geo/trials/:trial`.
#[component]
pub fn GeoTargetPage() -> impl IntoView {
    let params = use_params_map();
    let trial = Memo::new(move |_| params.read().get("trial").unwrap_or_default());
    let data = Resource::new(move || trial.get(), get_geo_target);
    view! {
        <Title text="GEO target"/>
        <h1>"GEO target"</h1>
        <Loading resource=data waiting="Loading the target…" keep=true ready=move |v| target(&v)/>
    }
}
