//! Which detection filters flag a trial: one flag per filter that ran, kept in the score.

use serde::{Deserialize, Serialize};

/// Whether each detection filter flags any of a trial's manipulated texts, for the filters
/// that ran: the rule filters (`keyword`, `perplexity`, and `either` of them) on every trial
/// that showed manipulated text, the model judge's (`judge`, and `any` of the three) where
/// one is configured. Written as a map of the filters that ran, in name order; no flag at
/// all where the trial showed no manipulated text.
///
/// A score holds one for each of a run's trials, so it is five bytes in place rather than a
/// map of strings. A stored map naming another filter is refused, not dropped: no version of
/// Mirage wrote one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterFlags {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    any: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    either: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    judge: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    keyword: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    perplexity: Option<bool>,
}

impl FilterFlags {
    /// The rule filters' flags: the keyword filter's, the perplexity filter's, and whether
    /// either flags.
    pub fn rules(keyword: bool, perplexity: bool) -> FilterFlags {
        FilterFlags {
            keyword: Some(keyword),
            perplexity: Some(perplexity),
            either: Some(keyword || perplexity),
            ..FilterFlags::default()
        }
    }

    /// Adds the model judge's flag, and whether any filter flags.
    pub fn add_judge(&mut self, flagged: bool) {
        self.judge = Some(flagged);
        self.any = Some(self.either.unwrap_or(false) || flagged);
    }

    /// No filter ran.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// The flag of the filter named `filter`, if it ran.
    pub fn get(&self, filter: &str) -> Option<bool> {
        self.iter().find(|(name, _)| *name == filter).map(|(_, flagged)| flagged)
    }

    /// The filters that ran and their flags, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, bool)> + '_ {
        [
            ("any", self.any),
            ("either", self.either),
            ("judge", self.judge),
            ("keyword", self.keyword),
            ("perplexity", self.perplexity),
        ]
        .into_iter()
        .filter_map(|(name, flag)| flag.map(|f| (name, f)))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::FilterFlags;

    /// The flags are written and read as the map of the filters that ran, byte for byte as
    /// scores stored before them wrote it.
    #[test]
    fn flags_read_and_write_as_the_map_of_the_filters_that_ran() {
        let mut flags = FilterFlags::rules(false, true);
        let as_map = |f: &FilterFlags| f.iter().map(|(n, v)| (n.to_string(), v)).collect::<BTreeMap<_, _>>();
        let text = serde_json::to_string(&flags).unwrap();
        assert_eq!(text, serde_json::to_string(&as_map(&flags)).unwrap());
        assert_eq!(text, r#"{"either":true,"keyword":false,"perplexity":true}"#);
        flags.add_judge(false);
        assert_eq!(flags.get("any"), Some(true));
        assert_eq!(flags.get("judge"), Some(false));
        assert_eq!(serde_json::to_string(&flags).unwrap(), serde_json::to_string(&as_map(&flags)).unwrap());
        let back: FilterFlags = serde_json::from_str(&serde_json::to_string(&as_map(&flags)).unwrap()).unwrap();
        assert_eq!(back, flags);
        assert!(FilterFlags::default().is_empty() && !flags.is_empty());
        assert_eq!(serde_json::to_string(&FilterFlags::default()).unwrap(), "{}");
        assert_eq!(FilterFlags::rules(false, false).get("judge"), None);
    }

    /// `any` is whether any filter flags: the judge's flag counts where the rules flag none.
    #[test]
    fn any_counts_the_judges_flag_and_the_rules() {
        for (keyword, perplexity, judge) in [(false, false, true), (false, false, false), (true, false, false)] {
            let mut flags = FilterFlags::rules(keyword, perplexity);
            flags.add_judge(judge);
            assert_eq!(flags.get("any"), Some(keyword || perplexity || judge), "{flags:?}");
        }
    }

    /// A map of the rule filters alone reads back as theirs, with no judge; a filter no
    /// version wrote is refused.
    #[test]
    fn a_partial_map_reads_back_and_an_unknown_filter_is_refused() {
        let rules: FilterFlags =
            serde_json::from_str(r#"{"either":false,"keyword":false,"perplexity":false}"#).unwrap();
        assert_eq!(rules, FilterFlags::rules(false, false));
        assert_eq!(rules.iter().map(|(n, _)| n).collect::<Vec<_>>(), ["either", "keyword", "perplexity"]);
        let unknown = serde_json::from_str::<FilterFlags>(r#"{"keyword":true,"zeta":false}"#).unwrap_err();
        assert!(unknown.to_string().contains("zeta"), "{unknown}");
    }
}
