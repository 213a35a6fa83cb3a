//! `/team`: the leaderboard of a run, read-only, for sharing. It says what it shows (run,
//! when the figures were computed, how many labels people settled, under which judges) and
//! what changed since this browser last showed the same run and tier.

#[cfg(any(feature = "hydrate", test))]
use std::collections::BTreeMap;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::Loading;
use super::leaderboard::{board_table, export_links};
use crate::api::get_leaderboard;
use crate::components::{AsOfLine, PendingLine, query_param};
use crate::model::{BoardQuery, Leaderboard, utc_second as when};

/// `/team`: the leaderboard of a run, read-only, with no controls but the tier.
#[component]
pub fn TeamPage() -> impl IntoView {
    let run = query_param("run");
    let tier = query_param("tier");
    let as_of = query_param("as_of");
    let board = Resource::new(
        move || BoardQuery { run: run.get(), tier: tier.get(), by: None, as_of: as_of.get() },
        get_leaderboard,
    );
    let refetch = Callback::new(move |()| board.refetch());
    view! {
        <Title text="Team leaderboard"/>
        <Loading resource=board waiting="Scoring…" keep=true ready=move |b| view! {
            <h1>{format!("Team leaderboard: {}", b.run)}</h1>
            <PendingLine pending=b.pending.clone() refetch=refetch/>
            <AsOfLine as_of=b.frozen href=Callback::new({
                let (r, t) = (b.run.to_string(), b.tier.clone());
                move |a: Option<String>| crate::model::routes::team_at(&r, &t, a)
            })/>
            <p class="muted">{format!("Decision tier {}; bands group configurations whose utility is not significantly different.", b.tier)}</p>
            <p class="muted" data-testid="provenance">{format!(
                "Run {} · computed {} · {} labels settled by people · judges {}",
                b.run,
                b.as_of.map_or_else(|| "(not computed yet)".to_string(), when),
                b.human_labels,
                if b.judges.is_empty() { "none".to_string() } else { b.judges.join(", ") }
            )}</p>
            // A pinned page shows the past: it is not a visit to compare with.
            {(!b.frozen.pinned).then(|| view! { <SinceLastVisit board=b.clone()/> })}
            {board_table(b.rows.clone(), &b.columns, &b.tier, true, None, Some(&b.checks))}
            {export_links(&b)}
            <p><A href=crate::model::routes::leaderboard_at(&b.run, &b.tier, b.frozen.pinned.then(|| b.frozen.param()))>"Open the full leaderboard"</A></p>
        }.into_any()/>
    }
}

#[cfg(feature = "hydrate")]
/// The figures a reviewer compares between visits, by name: each configuration's trials,
/// errors and metric means (to three places, as shown), and the labels people settled.
pub fn figures(b: &Leaderboard) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    out.insert("labels settled by people".to_string(), b.human_labels.to_string());
    for r in &b.rows {
        out.insert(format!("{} · trials", r.agent), r.trials.to_string());
        out.insert(format!("{} · errors", r.agent), r.errors.to_string());
        for (metric, est) in &r.cells {
            let shown = est.map_or_else(|| "n/a".to_string(), |e| format!("{:.3}", e.mean));
            out.insert(format!("{} · {}", r.agent, metric), shown);
        }
    }
    out
}

#[cfg(any(feature = "hydrate", test))]
/// Each figure that differs between two visits, as "name: before → now" (a figure new or
/// gone reads "—" on the side it is missing from).
pub fn changes(before: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> = before.keys().chain(now.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let (a, b) = (before.get(name), now.get(name));
            (a != b).then(|| format!("{name}: {} → {}", a.map_or("—", String::as_str), b.map_or("—", String::as_str)))
        })
        .collect()
}

#[cfg(feature = "hydrate")]
/// What this browser saw on its last visit to one run and tier.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Visit {
    /// When the figures then shown were computed.
    pub as_of: Option<i64>,
    pub figures: BTreeMap<String, String>,
}

/// The line comparing this visit with the last one from this browser (kept in its local
/// storage, per run and tier). Written only once figures are computed and not pending.
#[component]
fn SinceLastVisit(board: Leaderboard) -> impl IntoView {
    let said = RwSignal::new(None::<(String, Vec<String>)>);
    #[cfg(feature = "hydrate")]
    {
        let key = format!("mirage.team.{}.{}", board.run, board.tier);
        Effect::new(move |_| {
            let Some(storage) = web_sys::window().and_then(|w| w.local_storage().ok().flatten()) else { return };
            let now = Visit { as_of: board.as_of, figures: figures(&board) };
            let before = storage.get_item(&key).ok().flatten().and_then(|s| serde_json::from_str::<Visit>(&s).ok());
            said.set(Some(match &before {
                None => (
                    "First visit to this run and tier from this browser: the next one will show what changed.".into(),
                    Vec::new(),
                ),
                Some(v) => {
                    let list = changes(&v.figures, &now.figures);
                    let then = v.as_of.map_or_else(|| "not computed".to_string(), when);
                    if list.is_empty() {
                        (format!("No figure changed since your last visit (figures then as of {then})."), list)
                    } else {
                        (
                            format!(
                                "{} figures changed since your last visit (figures then as of {then}):",
                                list.len()
                            ),
                            list,
                        )
                    }
                }
            }));
            if board.pending.is_none()
                && board.as_of.is_some()
                && let Ok(s) = serde_json::to_string(&now)
            {
                let _ = storage.set_item(&key, &s);
            }
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = board;
    move || {
        said.get().map(|(line, list)| {
            view! {
                <div class="since" data-testid="since-last-visit">
                    <p class:changed=!list.is_empty()>{line}</p>
                    {(!list.is_empty()).then(|| view! {
                        <ul>{list.into_iter().map(|c| view! { <li>{c}</li> }).collect_view()}</ul>
                    })}
                </div>
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(a, b)| ((*a).to_string(), (*b).to_string())).collect()
    }

    #[test]
    fn changes_name_every_figure_that_moved_appeared_or_went() {
        let before = map(&[("a · utility", "0.363"), ("a · trials", "600"), ("b · utility", "0.500")]);
        let now = map(&[("a · utility", "0.372"), ("a · trials", "600"), ("c · utility", "0.100")]);
        assert_eq!(
            changes(&before, &now),
            vec!["a · utility: 0.363 → 0.372", "b · utility: 0.500 → —", "c · utility: — → 0.100"]
        );
        assert!(changes(&now, &now).is_empty());
    }
}
