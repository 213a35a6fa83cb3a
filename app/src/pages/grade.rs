//! `/grade/:trial`: a person grades a trial's reasoning on the judge's five-band rubric and
//! says whether its decision was right, acceptable or wrong. The judge's own score is not
//! shown; the leaderboard compares the two (Pearson's r, κ on bands, decision agreement).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_params_map;

use super::Loading;
use crate::api::{SaveGrade, get_grade};
use crate::error::AppError;
use crate::model::NewGrade;

/// The rubric's values, best first, with their band.
const VALUES: [(&str, &str); 11] = [
    ("1.0", "1.0: decisive facts, right conclusion"),
    ("0.9", "0.9: mostly right"),
    ("0.8", "0.8: mostly right"),
    ("0.7", "0.7: mostly right"),
    ("0.6", "0.6: partly right"),
    ("0.5", "0.5: partly right"),
    ("0.4", "0.4: partly right"),
    ("0.3", "0.3: mostly wrong"),
    ("0.2", "0.2: mostly wrong"),
    ("0.1", "0.1: mostly wrong"),
    ("0.0", "0.0: no relevant facts"),
];

/// `/grade/:trial`.
#[component]
pub fn GradePage() -> impl IntoView {
    let params = use_params_map();
    let trial = Memo::new(move |_| params.read().get("trial").unwrap_or_default());
    let save = ServerAction::<SaveGrade>::new();
    let view_data = Resource::new(move || (trial.get(), save.version().get()), |(t, _)| get_grade(t));
    let acc_rsn = RwSignal::new(String::new());
    let decision = RwSignal::new(String::new());
    let note = RwSignal::new(String::new());
    let field_error = move |field: &'static str| {
        move || match save.value().get() {
            Some(Err(AppError::Invalid { field: f, message })) if f == field => Some(message),
            _ => None,
        }
    };
    view! {
        <Title text="Grade the reasoning"/>
        <Loading resource=view_data waiting="Loading…" ready=move |g| what_is_graded(&g)/>
        <form class="launch grade-form" on:submit=|ev| ev.prevent_default() aria-label="Your grade">
            <h2>"Your grade"</h2>
            <div class="field">
                <label for="grade-value">"Reasoning (Acc_rsn)"</label>
                <select id="grade-value" on:change=move |ev| acc_rsn.set(event_target_value(&ev))>
                    <option value="">"choose"</option>
                    {VALUES.iter().map(|(v, text)| view! { <option value=*v>{*text}</option> }).collect_view()}
                </select>
                <span class="field-error" role="alert">{field_error("acc_rsn")}</span>
            </div>
            <fieldset class="field">
                <legend>"Decision"</legend>
                {["right", "acceptable", "wrong"].into_iter().map(|d| view! {
                    <label><input type="radio" name="decision" value=d on:change=move |_| decision.set(d.into())/>" "{d}</label>
                }).collect_view()}
                <span class="field-error" role="alert">{field_error("decision")}</span>
            </fieldset>
            <div class="field">
                <label for="grade-note">"Note"</label>
                <textarea id="grade-note" rows="3" maxlength=crate::model::MAX_NOTE_CHARS prop:value=move || note.get() on:input=move |ev| note.set(event_target_value(&ev))></textarea>
                <span class="field-error" role="alert">{field_error("note")}</span>
            </div>
            <div class="buttons">
                <button type="button" on:click=move |_| {
                    save.dispatch(SaveGrade { grade: NewGrade {
                        trial: trial.get_untracked().into(),
                        acc_rsn: acc_rsn.get_untracked(),
                        decision: decision.get_untracked(),
                        note: note.get_untracked(),
                    } });
                }>"Save grade"</button>
            </div>
            <p class="saved" role="status">{move || matches!(save.value().get(), Some(Ok(()))).then_some("Saved.")}</p>
            <p class="error" role="alert">{move || match save.value().get() {
                Some(Err(e)) if !matches!(e, AppError::Invalid { .. }) => Some(e.to_string()),
                _ => None,
            }}</p>
        </form>
    }
}

/// The trial a person grades: its task, configuration, verdict and rationale beside the
/// facts, the reference explanation and the correct decision, and who graded it so far.
fn what_is_graded(g: &crate::model::GradeView) -> AnyView {
    let (back, trial) = (crate::model::routes::trial(&g.run, &g.trial_id, ""), g.trial_id.to_string());
    let title = format!("Grade the reasoning of {}", g.trial_id);
    view! {
        <p class="crumbs"><A href=back>{trial}</A></p>
        <h1>{title}</h1>
        <table class="kv"><tbody>
            <tr><th>"Task"</th><td>{g.task_id.clone()}</td></tr>
            <tr><th>"Configuration"</th><td>{g.agent.clone()}</td></tr>
            <tr><th>"Verdict"</th><td>{g.verdict.clone().unwrap_or_else(|| "none".into())}</td></tr>
            <tr><th>"Rationale"</th><td class="rationale">{g.rationale.clone()}</td></tr>
            <tr><th>"Facts a sound rationale rests on"</th><td>{g.gold_facts.join("; ")}</td></tr>
            <tr><th>"Reference explanation"</th><td>{g.justification.clone()}</td></tr>
            <tr><th>"Correct decision"</th><td>{g.optimal.clone()}</td></tr>
            <tr><th>"Graded by"</th><td data-testid="graded-by">{format!("{} {}", g.graded_by, if g.graded_by == 1 { "person" } else { "people" })}</td></tr>
            {g.mine.clone().map(|(v, d, n)| view! {
                <tr><th>"Your grade"</th><td data-testid="mine">{format!("{v:.1}, decision {d}: {n}")}</td></tr>
            })}
        </tbody></table>
    }
    .into_any()
}
