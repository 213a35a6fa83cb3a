//! Where trials and runs are in their lives: the states the store keeps, the pages show
//! and the event stream sends, one type each from the database to the browser.

named_enum! {
    /// Where a trial is in its life.
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum TrialState("trial state") {
        Queued,
        Running,
        Done,
        Error,
        Cancelled,
    }
}

impl TrialState {
    /// Done or error: the trial has a result to score (a cancelled one has none).
    pub fn is_finished(self) -> bool {
        matches!(self, TrialState::Done | TrialState::Error)
    }
}

named_enum! {
    /// Where a run is in its life.
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum RunStatus("run status") {
        /// Has queued or running trials (or is waiting to be marked done).
        Active,
        Cancelled,
        Done,
    }
}

impl Default for RunStatus {
    /// A run starts active.
    fn default() -> Self {
        RunStatus::Active
    }
}

#[cfg(test)]
mod tests {
    use super::{RunStatus, TrialState};

    #[test]
    fn states_travel_as_their_names_and_an_unknown_one_is_named() {
        assert_eq!(serde_json::to_string(&RunStatus::Cancelled).expect("serialises"), "\"cancelled\"");
        assert_eq!(RunStatus::default(), RunStatus::Active);
        assert_eq!(TrialState::parse("error"), Ok(TrialState::Error));
        let e = TrialState::parse("finished").expect_err("not a state");
        assert_eq!(e.to_string(), r#"trial state "finished" is not one of queued, running, done, error, cancelled"#);
        assert!(TrialState::Done.is_finished() && !TrialState::Cancelled.is_finished());
    }
}
