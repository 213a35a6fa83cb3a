//! The annotation port: the queue of disputed labels and of the audit sample, filtered; items
//! anyone may read; locks taken when a person starts labelling; blind labels by annotators,
//! settled when enough agree ([`crate::judge::aggregate::settle`]); adjudication by an
//! operator; reasoning grades. Every label is a `label_event`.
//!
//! By concern: the queue as one caller sees it ([`queue`]), labelling with its one blinding
//! rule ([`labels`]), and grades ([`grades`]); the port below only hands each call on.

mod grades;
mod labels;
mod queue;

use std::sync::Arc;

use app::error::AppError;
use app::model::{GradeView, Identity, NewGrade, NewLabel, OpenItem, Queue, QueueFilter, TrialId};

use super::insights::InsightsService;
use crate::db::Store;
use crate::env::World;
use crate::judge::labels::LabelKind;

/// How long "Start labelling" holds an item for its annotator.
pub const LOCK_MS: i64 = 10 * 60 * 1000;

/// The queue, locks, labels and grades.
pub struct AnnotateService {
    pub store: Arc<dyn Store>,
    pub world: Arc<World>,
    pub insights: Arc<InsightsService>,
}

fn check_kind(kind: &str) -> Result<LabelKind, AppError> {
    LabelKind::parse(kind).map_err(|e| AppError::Invalid { field: "kind".into(), message: e.to_string() })
}

#[async_trait::async_trait]
impl app::ssr::Annotate for AnnotateService {
    async fn queue(
        &self,
        who: Option<Identity>,
        run: Option<String>,
        page: usize,
        filter: QueueFilter,
    ) -> Result<Queue, AppError> {
        self.queue_page(who, run, page, filter).await
    }

    async fn open(
        &self,
        who: Option<Identity>,
        trial: TrialId,
        kind: String,
        filter: QueueFilter,
    ) -> Result<OpenItem, AppError> {
        self.open_item(who, trial, kind, filter).await
    }

    async fn start(&self, who: Identity, trial: TrialId, kind: String) -> Result<i64, AppError> {
        self.hold(who, trial, kind).await
    }

    async fn label(
        &self,
        who: Identity,
        label: NewLabel,
        adjudicate: bool,
        filter: QueueFilter,
    ) -> Result<Option<String>, AppError> {
        self.save_label(who, label, adjudicate, filter).await
    }

    async fn grade_view(&self, who: Identity, trial: TrialId) -> Result<GradeView, AppError> {
        self.grade_form(who, trial).await
    }

    async fn grade(&self, who: Identity, grade: NewGrade) -> Result<(), AppError> {
        self.save_grade(who, grade).await
    }

    async fn release(&self, who: Identity, trial: TrialId, kind: String) -> Result<(), AppError> {
        self.give_back(who, trial, kind).await
    }
}
