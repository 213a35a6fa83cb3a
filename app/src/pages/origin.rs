//! On the trajectory page of an imported trial: what its harness (Inspect AI, ATIF,
//! AgentDojo) said about the sample — its scores, answer, usage, timings, metadata, the
//! attack it ran under — and whether Mirage's own metrics apply to it.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::model::OriginView;

fn link(run: &str, sample: &str, trial: Option<&crate::model::TrialId>) -> AnyView {
    match trial {
        Some(t) => {
            let (href, text) = (crate::model::routes::trial(run, t, ""), sample.to_string());
            view! { <A href=href>{text}</A> }.into_any()
        }
        None => view! { <span>{format!("{sample} (not imported)")}</span> }.into_any(),
    }
}

/// The harness's record of the sample.
pub(crate) fn harness_record(o: &OriginView, run: &str) -> AnyView {
    let harness = o.harness.clone();
    view! {
        <section class="harness" data-testid="harness">
            <h2>{format!("From {harness}")}</h2>
            {(!o.metrics_apply).then(|| view! {
                <p class="notice" data-testid="metrics-na">
                    "Mirage's metrics do not apply: this sample is not one of Mirage's tasks, so only "
                    {harness.clone()}"'s own scores are shown. Import it with "<code>"--map"</code>
                    " (sample id → Mirage task) to have Mirage's judges score it."
                </p>
            })}
            {o.attack.clone().map(|(kind, goal, success)| view! {
                <p class="attack" data-testid="attack">
                    {format!("Prompt injection: the {kind} attack with injection task {goal}. Attack success: ")}
                    <strong>{match success { Some(true) => "yes", Some(false) => "no", None => "unknown" }}</strong>
                    " (AgentDojo's security check). Injected text is marked in the turns that showed it."
                </p>
            })}
            <table class="kv harness-record"><tbody>
                <tr><th>"File"</th><td><code>{o.file.clone()}</code></td></tr>
                <tr><th>"Sample"</th><td><code>{o.sample.clone()}</code></td></tr>
                {o.task.clone().map(|t| view! { <tr><th>"Task"</th><td>{t}</td></tr> })}
                {o.model.clone().map(|m| view! { <tr><th>"Model"</th><td>{m}</td></tr> })}
                {o.target.clone().map(|t| view! { <tr><th>"Target"</th><td>{t}</td></tr> })}
                {o.tokens.clone().map(|t| view! { <tr><th>"Tokens"</th><td>{t}</td></tr> })}
                {o.timings.iter().map(|(k, v)| view! { <tr><th>{k.clone()}</th><td class="num">{v.clone()}</td></tr> }).collect_view()}
                {o.parent.as_ref().map(|(sample, trial)| view! { <tr><th>"Delegated by"</th><td>{link(run, sample, trial.as_ref())}</td></tr> })}
                {(!o.subagents.is_empty()).then(|| view! {
                    <tr><th>"Subagents"</th><td><ul class="plain">
                        {o.subagents.iter().map(|(sample, trial)| view! { <li>{link(run, sample, trial.as_ref())}</li> }).collect_view()}
                    </ul></td></tr>
                })}
            </tbody></table>
            {o.error.clone().map(|e| view! { <p class="error" role="alert">{format!("{harness} recorded an error: {e}")}</p> })}
            <h3>{format!("{harness}'s scores")}</h3>
            {if o.scores.is_empty() {
                view! { <p class="muted">"None recorded."</p> }.into_any()
            } else {
                view! {
                    <table class="harness-scores" data-testid="harness-scores">
                        <thead><tr><th>"Scorer"</th><th>"Value"</th><th>"Answer"</th><th>"Explanation"</th></tr></thead>
                        <tbody>
                            {o.scores.iter().map(|(name, value, answer, explanation)| view! {
                                <tr>
                                    <td>{name.clone()}</td>
                                    <td><code>{value.clone()}</code></td>
                                    <td>{answer.clone().unwrap_or_default()}</td>
                                    <td>{explanation.clone().unwrap_or_default()}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
            {o.answer.clone().map(|a| view! { <h3>"Final answer"</h3><blockquote class="answer">{a}</blockquote> })}
            {(!o.metadata.is_empty()).then(|| view! {
                <details>
                    <summary>{format!("Metadata ({})", o.metadata.len())}</summary>
                    <table class="kv"><tbody>
                        {o.metadata.iter().map(|(k, v)| view! { <tr><th>{k.clone()}</th><td><code>{v.clone()}</code></td></tr> }).collect_view()}
                    </tbody></table>
                </details>
            })}
        </section>
    }
    .into_any()
}
