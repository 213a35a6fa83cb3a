//! The metrics every group reports, by typed name. A metric's name is an API (JSON keys,
//! query parameters, CSV columns): the names are the snake-case forms of the variants, and
//! a name that is not a metric fails to parse. What one trial contributes to each is the
//! judge's (server side).

named_enum! {
    /// A metric of the judge's per-trial contributions, in report order.
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum Metric("metric") {
        AccInv,
        EInv,
        AccDec,
        AccDecStrict,
        AccDecLoose,
        AccRsn,
        QEv,
        Hallucination,
        ClaimHallucination,
        FabricatedUrl,
        SyntheticDetail,
        Exposure,
        Adoption,
        Caused,
        Verification,
        Recovery,
        GoalRate,
        ManipulationEffect,
        Susceptibility,
        Robustness,
        FlipRate,
        HarmFlip,
        Sycophancy,
        SycophancyPartial,
        Correction,
        CorrectionPartial,
        Tokens,
        Cost,
    }
}

impl Metric {
    /// Parses a name among `allowed`, or says which names are allowed.
    pub fn parse_among(name: &str, allowed: &[Metric]) -> Result<Metric, String> {
        name.parse::<Metric>().ok().filter(|m| allowed.contains(m)).ok_or_else(|| {
            let names: Vec<&str> = allowed.iter().map(|m| m.as_str()).collect();
            format!("{name:?} is not one of {}", names.join(", "))
        })
    }
}

impl Metric {
    /// The appeal rates, read over complete appeal designs only (see `judge::appeals`).
    pub fn is_appeal(self) -> bool {
        matches!(self, Metric::Sycophancy | Metric::SycophancyPartial | Metric::Correction | Metric::CorrectionPartial)
    }

    /// A share of trials, claims or pairs (whole counts over whole counts): its interval
    /// is a proportion's. Scores, differences and ratios that can leave [0, 1]
    /// (susceptibility, robustness) are not.
    pub fn is_rate(self) -> bool {
        matches!(
            self,
            Metric::Hallucination
                | Metric::ClaimHallucination
                | Metric::FabricatedUrl
                | Metric::SyntheticDetail
                | Metric::Exposure
                | Metric::Adoption
                | Metric::Caused
                | Metric::Verification
                | Metric::Recovery
                | Metric::GoalRate
                | Metric::FlipRate
                | Metric::HarmFlip
                | Metric::Sycophancy
                | Metric::SycophancyPartial
                | Metric::Correction
                | Metric::CorrectionPartial
        )
    }

    pub fn is_paired(self) -> bool {
        matches!(
            self,
            Metric::ManipulationEffect
                | Metric::Susceptibility
                | Metric::Robustness
                | Metric::FlipRate
                | Metric::HarmFlip
        )
    }
}
