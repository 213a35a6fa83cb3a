//! `/leaderboard`: agent configurations × metrics with 95 % intervals, tie bands, the
//! Default/Strict/Loose toggle, breakdowns by domain, condition or level, sortable columns,
//! pairwise comparisons (Holm-adjusted) on demand, κ of automatic vs human labels, and CSV /
//! JSON downloads. `/team` (in `team.rs`) shows the same table read-only.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use super::Loading;
use crate::api::get_leaderboard;
use crate::components::{
    AgreementCell, AsOfLine, ChecksTable, EstCell, PendingLine, RunPicker, fmt3, query_param, query_string,
};
use crate::model::{BoardQuery, BoardRow, GraderCheck, Leaderboard};

const TIERS: [&str; 3] = ["default", "strict", "loose"];

/// A column's header. On the main table utility is L0 Acc_dec and robustness is pooled over
/// the manipulated levels; a breakdown row holds only its own trials (one level, domain or
/// condition), and the headers say so.
fn column_title(c: &str, tier: &str, breakdown: bool) -> String {
    match (c, breakdown) {
        ("utility", false) => format!("Utility (Acc_dec {tier}, L0)"),
        ("utility", true) => format!("Acc_dec {tier} (this row's trials)"),
        ("robustness", false) => "Robustness (paired, L1–L4 pooled)".into(),
        ("robustness", true) => "Robustness (paired, this row's manipulated trials)".into(),
        ("acc_inv", _) => "Acc_inv".into(),
        ("e_inv", _) => "E_inv".into(),
        ("acc_rsn", _) => "Acc_rsn".into(),
        ("q_ev", _) => "Q_ev (1–5)".into(),
        ("manipulation_effect", _) => "Manipulation effect (paired)".into(),
        ("exposure", _) => "Exposure (manipulated trials)".into(),
        ("noise_floor", _) => "Noise floor (L0 vs L0 across seeds)".into(),
        ("cost", _) => "Cost per trial (US$)".into(),
        (other, _) => {
            let mut s = other.replace('_', " ");
            if let Some(first) = s.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            s
        }
    }
}

fn sorted(mut rows: Vec<BoardRow>, sort: Option<&str>) -> Vec<BoardRow> {
    if let Some(key) = sort {
        let (key, asc) = key.strip_prefix('-').map_or((key, false), |k| (k, true));
        rows.sort_by(|a, b| {
            let va = a.cells.get(key).copied().flatten().map_or(f64::NEG_INFINITY, |e| e.mean);
            let vb = b.cells.get(key).copied().flatten().map_or(f64::NEG_INFINITY, |e| e.mean);
            let o = vb.total_cmp(&va);
            if asc { o.reverse() } else { o }
        });
    }
    rows
}

/// Columns computed by rules that the grader self-tests cover (each mutation of a correct
/// trajectory must lower one of them).
const SELF_TESTED: [&str; 4] = ["utility", "acc_inv", "q_ev", "hallucination"];
/// Columns whose automatic value people can settle on the annotation page.
const SETTLEABLE: [&str; 4] = ["exposure", "adoption", "verification", "recovery"];

/// The grader-validity cell of a column: each check of its grader against people (the
/// statistic, its interval and n), or how the column is produced where nobody checked it.
fn validity_cell(column: &str, checks: &[GraderCheck]) -> AnyView {
    let metric = if column == "utility" { "acc_dec" } else { column };
    let mine: Vec<&GraderCheck> = checks.iter().filter(|c| c.metric == metric).collect();
    if !mine.is_empty() {
        let title = mine
            .iter()
            .map(|c| {
                let note = c.note.as_ref().map(|n| format!(" † {n}")).unwrap_or_default();
                format!("{} ({}) against {}{note}", c.statistic, c.grader, c.against)
            })
            .collect::<Vec<_>>()
            .join("; ");
        return view! {
            <td class="validity checked" title=title>
                {mine.iter().map(|c| view! { <span class:few=!c.enough>{c.short()}</span> }).collect_view()}
            </td>
        }
        .into_any();
    }
    let (text, title) = if SETTLEABLE.contains(&metric) {
        ("not checked", "No label of this kind was settled by people in this run: settle some on the annotation page")
    } else if metric == "acc_rsn" {
        ("not checked", "No person graded a trial's reasoning in this run: grade trials from their trajectory pages")
    } else if SELF_TESTED.contains(&column) {
        (
            "rules, self-tested",
            "Computed by rules from the trajectory. The grader self-tests (mirage score --self-test) spoil the correct trajectory of every built-in task and check that this figure falls; they do not measure it against people, and a run on other tasks is covered only if they are self-tested with --tasks",
        )
    } else if metric == "caused" {
        ("replays", "Measured by replaying the trial without the manipulated text")
    } else if metric == "noise_floor" {
        ("–", "A statistic of the other figures, not a grader")
    } else if metric == "cost" {
        ("usage × price", "The endpoint's reported token usage times the configured price: counted, not graded")
    } else {
        (
            "rules",
            "Computed by rules from the trajectories (and, for the manipulation figures, from each trial's clean twin)",
        )
    };
    view! { <td class="validity" title=title>{text}</td> }.into_any()
}

/// The table of one set of rows. `sort_href` builds the link of a column header (none on
/// the read-only page). `checks` gives the grader-validity row under the headers (none on a
/// breakdown table).
pub(super) fn board_table(
    rows: Vec<BoardRow>,
    columns: &[String],
    tier: &str,
    show_band: bool,
    sort_href: Option<&dyn Fn(&str) -> String>,
    checks: Option<&[GraderCheck]>,
) -> impl IntoView {
    // The breakdown tables are the ones without bands.
    let breakdown = !show_band;
    let most_k = rows.iter().map(|r| r.pass_k.len()).max().unwrap_or(0);
    view! {
        <table class="board">
            <thead><tr>
                {show_band.then(|| view! { <th title="Configurations in one band are not significantly different on utility">"Band"</th> })}
                <th>"Configuration"</th><th>"Trials"</th><th title="Trials that ended in error, and their share: they stay in every mean, scored 0 on decision and reasoning">"Errors (rate)"</th><th>"Disputed"</th>
                {(most_k > 0).then(|| view! {
                    <th title=crate::glossary::definition_of(crate::glossary::Column::PassK)>
                        {format!("pass^k (k = 1…{most_k})")}" "<a class="def" href=crate::glossary::href_of(crate::glossary::Column::PassK)>"?"</a>
                    </th>
                })}
                {columns.iter().map(|c| {
                    let title = column_title(c, tier, breakdown);
                    let hover = crate::glossary::definition(c).unwrap_or_default();
                    let help = view! { " "<a class="def" href=crate::glossary::href(c) aria-label=format!("definition of {c}")>"?"</a> };
                    match sort_href {
                        Some(f) => view! { <th title=hover><A href=f(c) attr:class="sort">{title}</A>{help}</th> }.into_any(),
                        None => view! { <th title=hover>{title}{help}</th> }.into_any(),
                    }
                }).collect_view()}
            </tr>
            {checks.map(|checks| {
                let lead = usize::from(show_band) + 4 + usize::from(most_k > 0);
                view! {
                    <tr class="validity" data-testid="grader-validity">
                        <th colspan=lead.to_string() scope="row" title="Each grader measured against what people said about the same trials: 95 % intervals, n pairs; shown from n = 10">"Grader checked against people"</th>
                        {columns.iter().map(|c| validity_cell(c, checks)).collect_view()}
                    </tr>
                }
            })}
            </thead>
            <tbody>
                {rows.into_iter().map(|r| {
                    let cells: Vec<_> =
                        columns.iter().map(|c| (c == "cost", r.cells.get(c).copied().flatten())).collect();
                    view! {
                        <tr class=format!("band-{}", r.band % 2) data-agent=r.agent.clone()>
                            {show_band.then(|| view! { <td class="num band">{r.band}</td> })}
                            <th scope="row">{r.agent.clone()}{provenance_badge(&r)}{design_badge(&r)}</th>
                            <td class="num">{r.trials}</td>
                            <td class="num">{format!("{} ({:.1} %)", r.errors, if r.trials == 0 { 0.0 } else { 100.0 * r.errors as f64 / r.trials as f64 })}</td>
                            <td class="num">{r.disputed}</td>
                            {(most_k > 0).then(|| view! {
                                <td class="num pass-k">{r.pass_k.iter().map(|p| format!("{p:.2}")).collect::<Vec<_>>().join(" / ")}</td>
                            })}
                            {cells.into_iter().map(|(dollars, e)| view! { <EstCell est=e dollars=dollars/> }).collect_view()}
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

pub(super) fn export_links(b: &Leaderboard) -> impl IntoView {
    let q = |extra: &[(&str, Option<String>)]| {
        let mut pairs = vec![
            ("run", Some(b.run.to_string())),
            ("tier", Some(b.tier.clone())),
            ("by", b.by.clone()),
            ("as_of", b.frozen.pinned.then(|| b.frozen.param())),
        ];
        pairs.extend(extra.iter().cloned());
        query_string(&pairs)
    };
    view! {
        <p class="downloads">"Download: "
            <a href=crate::model::routes::export("leaderboard.csv", &q(&[])) download="">"table (CSV)"</a>" · "
            {b.by.is_some().then(|| view! {
                <a href=crate::model::routes::export("leaderboard.csv", &q(&[("table", Some("breakdown".into()))])) download="">"breakdown (CSV)"</a>" · "
            })}
            <a href=crate::model::routes::export("leaderboard.csv", &q(&[("table", Some("pairs".into()))])) download="">"comparisons (CSV)"</a>" · "
            <a href=crate::model::routes::export("leaderboard.csv", &q(&[("table", Some("agreement".into()))])) download="">"agreement (CSV)"</a>" · "
            <a href=crate::model::routes::export("leaderboard.csv", &q(&[("table", Some("checks".into()))])) download="">"grader checks (CSV)"</a>" · "
            <a href=crate::model::routes::export("leaderboard.json", &q(&[])) download="">"everything (JSON)"</a>
        </p>
    }
}

/// `/leaderboard`.
#[component]
pub fn LeaderboardPage() -> impl IntoView {
    let run = query_param("run");
    let tier = query_param("tier");
    let by = query_param("by");
    let sort = query_param("sort");
    let as_of = query_param("as_of");
    let board = Resource::new(
        move || BoardQuery { run: run.get(), tier: tier.get(), by: by.get(), as_of: as_of.get() },
        get_leaderboard,
    );
    let show_pairs = RwSignal::new(false);
    let refetch = Callback::new(move |()| board.refetch());
    let url = crate::model::routes::leaderboard_view;
    // Every link of the page keeps the label generation it is pinned to, if any.
    let href = move |run: Option<String>, tier: Option<String>, by: Option<String>, sort: Option<String>| {
        url(run, tier, by, sort, as_of.get_untracked())
    };
    view! {
        <Title text="Leaderboard"/>
        <h1>"Leaderboard"</h1>
        <Loading resource=board waiting="Scoring…" keep=true ready=move |b| {
            let (r, t, g) = (b.run.to_string(), b.tier.clone(), b.by.clone());
            let picker = Callback::new({
                let (t, g) = (t.clone(), g.clone());
                move |run: String| href(Some(run), Some(t.clone()), g.clone(), None)
            });
            let sort_now = sort.get();
            let sort_href = {
                let (r, t, g, s) = (r.clone(), t.clone(), g.clone(), sort_now.clone());
                move |c: &str| {
                    let next = if s.as_deref() == Some(c) { format!("-{c}") } else { c.to_string() };
                    href(Some(r.clone()), Some(t.clone()), g.clone(), Some(next))
                }
            };
            let rows = sorted(b.rows.clone(), sort_now.as_deref());
            let pairs = b.pairs.clone();
            view! {
                <div class="controls">
                    <RunPicker runs=b.runs.clone() current=b.run.clone() href=picker/>
                    <span class="toggle" role="group" aria-label="Decision tier">"Tier: "
                        {TIERS.iter().map(|tt| view! {
                            <A href=href(Some(r.clone()), Some((*tt).to_string()), g.clone(), sort_now.clone())
                                attr:class=if *tt == t { "on" } else { "" } attr:aria-current=(*tt == t).then_some("true")>{*tt}</A>
                        }).collect_view()}
                    </span>
                    <span class="toggle" role="group" aria-label="Break down by">"By: "
                        {[None, Some("domain"), Some("condition"), Some("level")].into_iter().map(|x| {
                            let on = g.as_deref() == x;
                            view! {
                                <A href=href(Some(r.clone()), Some(t.clone()), x.map(String::from), sort_now.clone())
                                    attr:class=if on { "on" } else { "" }>{x.unwrap_or("none")}</A>
                            }
                        }).collect_view()}
                    </span>
                </div>
                <PendingLine pending=b.pending.clone() refetch=refetch/>
                <AsOfLine as_of=b.frozen href=Callback::new({
                    let (r, t, g, s) = (r.clone(), t.clone(), g.clone(), sort_now.clone());
                    move |a: Option<String>| url(Some(r.clone()), Some(t.clone()), g.clone(), s.clone(), a)
                })/>
                <p class="muted">{format!(
                    "Judges: {}. {} labels settled by people (they override automatic labels everywhere).",
                    if b.judges.is_empty() { "none".to_string() } else { b.judges.join(", ") }, b.human_labels
                )}</p>
                {b.judges.iter().any(|j| j.contains(crate::model::FALLBACK_RSN_JUDGE)).then(|| view! {
                    <p class="muted fallback" data-testid="rsn-fallback">
                        "Acc_rsn and Q_ev here come from the judge-less fallback (gold facts cited in the rationale's own words from pages the agent saw): they are not comparable with a model judge's grades."
                    </p>
                })}
                {board_table(rows, &b.columns, &b.tier, true, Some(&sort_href), Some(&b.checks))}
                {export_links(&b)}
                {b.breakdown.iter().map(|(value, rows)| view! {
                    <h2>{format!("{}: {value}", g.clone().unwrap_or_default())}</h2>
                    {board_table(rows.clone(), &b.columns, &b.tier, false, None, None)}
                }).collect_view()}
                <h2>"Pairwise comparisons"</h2>
                <button on:click=move |_| show_pairs.update(|s| *s = !*s)>
                    {move || if show_pairs.get() { "Hide comparisons" } else { "Compare every pair" }}
                </button>
                {move || show_pairs.get().then(|| pairs_table(&pairs))}
                <h2>"Grader validity"</h2>
                <ChecksTable checks=b.checks.clone()/>
                {agreement_tables(&b)}
                <h2>"Reasoning judge vs people"</h2>
                {validation_table(&b.validation)}
            }.into_any()
        }/>
    }
}

/// Every pair of configurations: the difference, its interval and p, Holm-adjusted.
fn pairs_table(pairs: &[crate::model::PairView]) -> impl IntoView + use<> {
    view! {
        <table class="pairs">
            <thead><tr><th>"A"</th><th>"B"</th><th>"A − B"</th><th>"95% CI"</th><th>"n"</th><th>"p"</th><th>"p (Holm)"</th></tr></thead>
            <tbody>
                {pairs.iter().map(|p| view! {
                    <tr class:significant=p.p_holm < 0.05>
                        <td>{p.a.clone()}</td><td>{p.b.clone()}</td>
                        <td class="num">{fmt3(p.diff)}</td>
                        <td class="num">{if p.no_interval { "no interval".to_string() } else { format!("[{:.3}, {:.3}]{}", p.lo, p.hi, crate::model::covers(p.coverage)) }}</td>
                        <td class="num">{p.n}</td>
                        <td class="num">{format!("{:.4}", p.p)}</td>
                        <td class="num">{format!("{:.4}", p.p_holm)}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// People's labels against the automatic ones (κ per label), and the adoption rule against
/// the replays where there are any.
fn agreement_tables(b: &crate::model::Leaderboard) -> impl IntoView + use<> {
    view! {
        <h2>"Judge vs human agreement"</h2>
        <table class="agreement">
            <thead><tr><th>"Label"</th><th>"Trials labelled by a person"</th><th>"Cohen's κ"</th></tr></thead>
            <tbody>
                {b.agreement.iter().map(|(k, n, kappa)| view! {
                    <tr><td>{k.clone()}</td><td class="num">{*n}</td>
                    <AgreementCell n=*n value=*kappa/></tr>
                }).collect_view()}
            </tbody>
        </table>
        {(!b.causal.is_empty()).then(|| view! {
            <h2>"Adoption rule vs replays"</h2>
            <table class="agreement causal">
                <caption>"Replayed trials: caused when at least half of their clean-level replays left the party's goal"</caption>
                <thead><tr><th>"Configuration"</th><th>"Replayed trials"</th><th>"Caused"</th>
                    <th title="Of the replayed trials the adoption rule labels adopted, the share the manipulation caused">"Rule precision"</th>
                    <th title="Of the trials the manipulation caused, the share the adoption rule labels adopted">"Rule recall"</th></tr></thead>
                <tbody>
                    {b.causal.iter().map(|c| view! {
                        <tr><td>{c.agent.clone()}</td><td class="num">{c.replayed}</td><td class="num">{c.caused}</td>
                        <EstCell est=c.precision/><EstCell est=c.recall/></tr>
                    }).collect_view()}
                </tbody>
            </table>
        })}
    }
}

/// The reasoning judge against people's grades.
fn validation_table(v: &crate::model::Validation) -> impl IntoView + use<> {
    view! {
        <p class="muted" data-testid="validation-n">{if v.enough {
            format!("{} graded trials ({} grades: each person's latest; a trial counts once, with people's mean grade and majority call), judge: {}.", v.n, v.grades, if v.judges.is_empty() { "none".to_string() } else { v.judges.join(", ") })
        } else {
            format!("{} graded trials: too few to judge agreement (at least {}). Grade trials from their trajectory pages.", v.n, crate::model::MIN_AGREEMENT_N)
        }}</p>
        <table class="agreement validation">
            <thead><tr><th>"Statistic"</th><th>"n"</th><th>"Value"</th></tr></thead>
            <tbody>
                <tr><td>"Pearson's r, judge vs people's Acc_rsn"</td><td class="num">{v.n}</td><AgreementCell n=v.n value=v.pearson/></tr>
                <tr><td>"Cohen's κ on the rubric bands"</td><td class="num">{v.n}</td><AgreementCell n=v.n value=v.kappa_bands/></tr>
                <tr><td>"Agreement on the decision"</td><td class="num">{v.decision_n}</td><AgreementCell n=v.decision_n value=v.decision_agreement/></tr>
            </tbody>
        </table>
    }
}

/// A row whose configuration lacks cells of the run's design (or weighs some tasks more
/// with extra seeds) says so: its figures read other tasks than the other rows'.
pub fn design_badge(r: &crate::model::BoardRow) -> Option<impl IntoView + use<>> {
    let note = r.design_note.clone().filter(|_| r.design_gaps > 0)?;
    Some(view! { " " <span class="badge warn design" title=note data-testid="design-gap">"incomplete"</span> })
}

/// A row whose trials Mirage did not run or watch says so: all of them from a file make it
/// self-reported, some of them mixed (executed and self-reported trials pooled).
pub fn provenance_badge(r: &crate::model::BoardRow) -> Option<impl IntoView + use<>> {
    let (label, title) = match r.self_reported {
        0 => return None,
        n if n >= r.trials => (
            "self-reported",
            "Every trial of this row was imported from a file: its figures rest on what the file says, not on what Mirage ran or watched.".to_string(),
        ),
        n => ("mixed", format!("{n} of {} trials were imported from a file; the rest Mirage ran or watched over HTTP. Both are pooled in this row.", r.trials)),
    };
    Some(view! { " " <span class="badge provenance" title=title data-testid="provenance">{label}</span> })
}
