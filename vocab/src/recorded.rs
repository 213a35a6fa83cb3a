//! Names a record carries that are usually one of an enum's (a level, a condition) and
//! sometimes another program's: an outside harness's attack or injection task, a GEO
//! trial's method. Typed so that the enum's rules (is this the clean level?) are methods,
//! and the text travels unchanged.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An enum of typed names (see [`named_enum!`](crate::named_enum)).
pub trait Name: Copy + PartialEq + 'static {
    /// The variant's name.
    fn name(self) -> &'static str;
    /// The variant of that name, if there is one.
    fn of(name: &str) -> Option<Self>;
}

/// A recorded name: one of `E`'s, or another's text kept as it was written. Read from text
/// it is always `Known` when the text names a variant, so two values are equal exactly when
/// their texts are; order and hash are the text's too (a map keyed by it is looked up by
/// `&str`, and sorts as the text did).
#[derive(Clone, Debug)]
pub enum Recorded<E> {
    Known(E),
    Other(String),
}

/// The level a trial records: a rung of Mirage's ladder, an outside harness's attack name
/// (AgentDojo's `important_instructions`), or a GEO trial's method.
pub type TrialLevel = Recorded<crate::Level>;
/// The condition a trial records: one of Mirage's, an outside harness's (AgentDojo's
/// injection task), or `geo` on GEO trials.
pub type TrialCondition = Recorded<crate::Condition>;

impl<E: Name> Recorded<E> {
    /// The text.
    pub fn as_str(&self) -> &str {
        match self {
            Recorded::Known(e) => e.name(),
            Recorded::Other(s) => s,
        }
    }

    /// The variant, when the text names one (an `Other` built by hand with a variant's
    /// name included: every rule reads the text, as equality does).
    pub fn known(&self) -> Option<E> {
        match self {
            Recorded::Known(e) => Some(*e),
            Recorded::Other(s) => E::of(s),
        }
    }

    /// Whether it is that variant.
    pub fn is(&self, e: E) -> bool {
        self.known() == Some(e)
    }
}

impl TrialLevel {
    /// Whether it is the clean level (L0; the one rule, [`Level::is_clean`](crate::Level::is_clean));
    /// an outside harness's clean trials are recorded so.
    pub fn is_clean(&self) -> bool {
        crate::Level::is_clean(self.as_str())
    }
}

impl<E: Name> From<E> for Recorded<E> {
    fn from(e: E) -> Self {
        Recorded::Known(e)
    }
}

impl<E: Name> From<&str> for Recorded<E> {
    fn from(s: &str) -> Self {
        E::of(s).map_or_else(|| Recorded::Other(s.to_string()), Recorded::Known)
    }
}

impl<E: Name> From<String> for Recorded<E> {
    fn from(s: String) -> Self {
        E::of(&s).map_or(Recorded::Other(s), Recorded::Known)
    }
}

impl<E: Name> From<&String> for Recorded<E> {
    fn from(s: &String) -> Self {
        Recorded::from(s.as_str())
    }
}

impl<E: Name> std::str::FromStr for Recorded<E> {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Recorded::from(s))
    }
}

impl<E: Name> fmt::Display for Recorded<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<E: Name> PartialEq for Recorded<E> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl<E: Name> Eq for Recorded<E> {}

impl<E: Name> PartialEq<str> for Recorded<E> {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl<E: Name> PartialEq<&str> for Recorded<E> {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl<E: Name> PartialEq<E> for Recorded<E> {
    fn eq(&self, other: &E) -> bool {
        self.is(*other)
    }
}

impl<E: Name> Ord for Recorded<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl<E: Name> PartialOrd for Recorded<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E: Name> Hash for Recorded<E> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl<E: Name> Borrow<str> for Recorded<E> {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl<E: Name> AsRef<str> for Recorded<E> {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// The empty text, as an unset `String` was.
impl<E: Name> Default for Recorded<E> {
    fn default() -> Self {
        Recorded::Other(String::new())
    }
}

impl<E: Name> Serialize for Recorded<E> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de, E: Name> Deserialize<'de> for Recorded<E> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Recorded::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Condition, Level};

    #[test]
    fn a_recorded_name_is_its_text_typed_where_it_can_be() {
        let l: TrialLevel = "L0".into();
        assert!(matches!(l, Recorded::Known(Level::L0)) && l.is_clean());
        let attack: TrialLevel = "important_instructions".into();
        assert!(!attack.is_clean() && attack.known().is_none());
        assert_eq!(attack.to_string(), "important_instructions");
        assert_eq!(Recorded::<Level>::Other("L3".into()), TrialLevel::from(Level::L3), "equal by text");
        assert!(Recorded::<Level>::Other("L0".into()).is_clean(), "and read by text");
        let mut sorted: Vec<TrialLevel> = ["L3", "Zed", "L0", "attack"].map(TrialLevel::from).to_vec();
        sorted.sort();
        assert_eq!(sorted.iter().map(TrialLevel::as_str).collect::<Vec<_>>(), ["L0", "L3", "Zed", "attack"]);
        let c: TrialCondition = serde_json::from_str("\"evidence_anchored\"").expect("json");
        assert!(c.is(Condition::EvidenceAnchored));
        assert_eq!(serde_json::to_string(&TrialCondition::from("geo")).expect("json"), "\"geo\"");
        let map: std::collections::BTreeMap<TrialLevel, u8> = [("L1".into(), 1)].into();
        assert_eq!(map.get("L1"), Some(&1), "looked up by text");
    }
}
