//! Reasoning grades: a trial's grading form and the grades people give.

use app::error::AppError;
use app::model::{GradeView, Identity, NewGrade, TrialId};

use super::super::fail;
use super::AnnotateService;
use crate::db::{DecisionClass, ReasoningGrade, now_ms};

impl AnnotateService {
    /// The `grade_view` port: a trial's grading form, with the caller's own last grade.
    pub(super) async fn grade_form(&self, who: Identity, trial: TrialId) -> Result<GradeView, AppError> {
        let row = self.store.trial(&trial).await?;
        let task = self.world.task(&row.task_id).ok_or_else(|| AppError::NotFound(format!("task {}", row.task_id)))?;
        let grades: Vec<ReasoningGrade> =
            self.store.grades(&row.run_id).await.map_err(fail)?.into_iter().filter(|g| g.trial_id == trial).collect();
        let authors: std::collections::BTreeSet<&str> = grades.iter().map(|g| g.author.as_str()).collect();
        let mine = grades
            .iter()
            .filter(|g| g.author == who.name)
            .max_by_key(|g| g.grade_id)
            .map(|g| (g.acc_rsn, g.decision.as_str().to_string(), g.note.clone()));
        Ok(GradeView {
            graded_by: authors.len(),
            trial_id: row.trial_id,
            run: row.run_id,
            task_id: row.task_id,
            agent: row.agent,
            verdict: row.verdict,
            rationale: row.rationale.unwrap_or_default(),
            gold_facts: task.gold_facts.iter().map(|f| f.text.clone()).collect(),
            justification: task.justification.clone(),
            optimal: task.verdict.optimal.clone(),
            mine,
        })
    }

    /// The `grade` port: stores a grade of a finished trial.
    pub(super) async fn save_grade(&self, who: Identity, grade: NewGrade) -> Result<(), AppError> {
        let invalid = |field: &str, message: String| AppError::Invalid { field: field.into(), message };
        let text = grade.acc_rsn.trim();
        let acc_rsn = text
            .parse::<f64>()
            .ok()
            .filter(|v| (0.0..=1.0).contains(v) && ((v * 10.0).round() - v * 10.0).abs() < 1e-9)
            .ok_or_else(|| invalid("acc_rsn", format!("{text:?}: choose a value from 0.0 to 1.0 in tenths")))?;
        let decision = DecisionClass::parse(grade.decision.trim())
            .map_err(|e| invalid("decision", format!("{:?}: choose one of {}", e.name, e.known)))?;
        if grade.note.trim().is_empty() {
            return Err(invalid("note", "say why (the note is kept with the grade)".into()));
        }
        app::model::check_note(&grade.note)?;
        let row = self.store.trial(&grade.trial).await?;
        if row.state != crate::db::TrialState::Done {
            return Err(invalid("trial", "only a finished trial with a verdict can be graded".into()));
        }
        let g = ReasoningGrade {
            grade_id: 0,
            trial_id: row.trial_id,
            author: who.name,
            acc_rsn,
            decision,
            note: grade.note.trim().to_string(),
            created_at: now_ms(),
        };
        self.store.add_grade(&g).await.map_err(fail)?;
        Ok(())
    }
}
