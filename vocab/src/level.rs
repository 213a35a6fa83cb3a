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
