//! Manipulation levels, by typed name.

named_enum! {
    /// A manipulation level (the book's manipulation chapter), in order of threat. Its name (`L0` … `L4`) is
    /// how runs, trajectories and episodes record it.
    pub enum Level("level") {
        /// Clean text.
        L0,
        /// A white-hat rewrite in one style.
        L1,
        /// A persuasive passage written without feedback.
        L2,
        /// Text addressed to the reviewing agent (prompt injection).
        L3,
        /// A passage searched against the agent under test (TAP).
        L4,
    }
}

impl Level {
    /// Whether a recorded level name is the clean one.
    pub fn is_clean(name: &str) -> bool {
        name == Level::L0.as_str()
    }
}

/// Whether a run naming these levels gets clean twins added: it manipulates (names a level
/// other than L0) without naming L0, and every manipulated trial needs its clean twin. The
/// planner adds them; the launch form says so before it is sent.
pub fn needs_clean_twins<S: AsRef<str>>(levels: &[S]) -> bool {
    let manipulated = levels.iter().any(|l| !Level::is_clean(l.as_ref()));
    manipulated && !levels.iter().any(|l| Level::is_clean(l.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_twins_are_added_only_to_manipulation_without_l0() {
        assert!(needs_clean_twins(&["L3"]));
        assert!(needs_clean_twins(&["L1", "L4"]));
        assert!(!needs_clean_twins(&["L0", "L3"]));
        assert!(!needs_clean_twins(&["L0"]));
        assert!(!needs_clean_twins::<&str>(&[]));
    }
}
