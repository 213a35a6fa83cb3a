//! The trajectory page's replay panel: what the agent did when the trial was re-run from a
//! turn with an intervention (its manipulated text stripped, the clean level, the hidden
//! evidence revealed, another ticket condition). Each replay is set beside the original
//! turn by turn, its first divergent turn marked. Operators start replays here; everyone
//! sees them.

use leptos::prelude::*;

use crate::api::{StartReplay, get_replays};
use crate::components::may;
use crate::model::{NewReplay, ReplayView, ReplaysView, Role};

const INTERVENTIONS: [&str; 6] =
    ["clean-level", "strip-spans", "reveal-evidence", "condition:raw", "condition:hint", "condition:evidence_anchored"];

fn replay_row(r: ReplayView) -> AnyView {
    let outcome = match (&r.error, r.goal, r.left_goal) {
        (Some(e), _, _) => format!("failed: {e}"),
        (None, true, _) => "still the party's goal".to_string(),
        (None, false, true) => "left the party's goal".to_string(),
        (None, false, false) => "not the party's goal".to_string(),
    };
    let first = r.first_divergent;
    view! {
        <details class="replay" data-replay=r.id.clone() data-state=r.state.as_str()>
            <summary>
                <code>{r.intervention.clone()}</code>
                {format!(" from turn {} (sample {}): {} · verdict {} · {outcome}", r.from_turn, r.sample, r.state,
                    r.verdict.clone().unwrap_or_else(|| "none".into()))}
                {first.map(|t| format!(" · first divergent turn {t}"))}
            </summary>
            <table class="aligned">
                <thead><tr><th>"Turn"</th><th>"Original"</th><th>"Replay"</th></tr></thead>
                <tbody>
                    {r.turns.into_iter().map(|a| {
                        let class = if Some(a.t) == first { "divergent" } else if a.original != a.replay { "differs" } else { "" };
                        view! {
                            <tr class=class>
                                <td class="num">{a.t}{(Some(a.t) == first).then_some(" ◆")}</td>
                                <td>{a.original.unwrap_or_default()}</td>
                                <td>{a.replay.unwrap_or_default()}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </details>
    }
    .into_any()
}

fn summary(v: &ReplaysView) -> String {
    let verdict = v.verdict.clone().unwrap_or_else(|| "none".into());
    let causal = match v.caused {
        Some((true, n, left)) => {
            format!(" Caused by the manipulation: {left} of {n} clean-level replays left the party's goal.")
        }
        Some((false, n, left)) => {
            format!(" Not caused by the manipulation: {left} of {n} clean-level replays left the party's goal.")
        }
        None => String::new(),
    };
    format!(
        "Original verdict {verdict} ({}).{causal}",
        if v.goal { "the party's goal" } else { "not the party's goal" }
    )
}

/// The replay panel of one trial.
#[component]
pub fn ReplayPanel(trial: Memo<String>) -> AnyView {
    let start = ServerAction::<StartReplay>::new();
    let data = Resource::new(move || (trial.get(), start.version().get()), |(t, _)| get_replays(t));
    let operator = may(Role::Operator);
    let from_turn = RwSignal::new("0".to_string());
    let intervention = RwSignal::new(INTERVENTIONS[0].to_string());
    let samples = RwSignal::new("1".to_string());
    let error = move || match start.value().get() {
        Some(Err(e)) => Some(e.to_string()),
        _ => None,
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        start.dispatch(StartReplay {
            request: NewReplay {
                trial: trial.get_untracked().into(),
                from_turn: from_turn.get_untracked(),
                intervention: intervention.get_untracked(),
                samples: samples.get_untracked(),
            },
        });
    };
    view! {
        <section class="replays" aria-label="Counterfactual replays">
            <h2>"Counterfactual replays"</h2>
            <p class="muted">"What the agent does when re-run from a turn with the text changed: it gets its own steps before that turn as recorded, then the altered pages."</p>
            // Not `Loading`: a replay list that fails to load is said here without making the
            // trajectory page around it an error page (no status is set).
            <Transition fallback=|| view! { <p>"Loading replays…"</p> }>
                {move || data.get().map(|d| match d {
                    Err(e) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
                    Ok(v) if v.replays.is_empty() => view! { <p>{summary(&v)}" No replays yet."</p> }.into_any(),
                    Ok(v) => view! {
                        <p>{summary(&v)}</p>
                        {v.replays.into_iter().map(replay_row).collect_view()}
                    }.into_any(),
                })}
            </Transition>
            <button type="button" on:click=move |_| data.refetch()>"Refresh"</button>
            <Transition>{move || operator.get().then(|| view! {
                <form class="replay-form" on:submit=submit aria-label="Replay this trial">
                    <label>"From turn "<input name="from_turn" size="3" prop:value=move || from_turn.get()
                        on:input=move |ev| from_turn.set(event_target_value(&ev))/></label>
                    <label>" Intervention "
                        <select name="intervention" on:change=move |ev| intervention.set(event_target_value(&ev))>
                            {INTERVENTIONS.iter().map(|i| view! { <option value=*i selected=move || intervention.get() == *i>{*i}</option> }).collect_view()}
                        </select>
                    </label>
                    <label>" Samples "<input name="samples" size="2" prop:value=move || samples.get()
                        on:input=move |ev| samples.set(event_target_value(&ev))/></label>
                    " "<button type="submit" disabled=move || start.pending().get()>"Replay"</button>
                    <span class="error" role="alert">{error}</span>
                </form>
            })}</Transition>
        </section>
    }
    .into_any()
}
