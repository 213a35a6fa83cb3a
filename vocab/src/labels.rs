//! The per-trial labels and the decision classes people and the rules give, by typed name.

named_enum! {
    /// The four per-trial labels (the book's scoring chapter).
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum LabelKind("label kind") {
        Exposure,
        Adoption,
        Verification,
        Recovery,
    }
}

named_enum! {
    /// A person's (or the rules') call on a trial's decision.
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum DecisionClass("decision") {
        /// The optimal verdict.
        Right,
        /// A verdict that earns partial credit.
        Acceptable,
        /// Any other verdict, or none.
        Wrong,
    }
}
