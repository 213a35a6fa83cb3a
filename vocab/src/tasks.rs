//! What a trial is about: the ticket's condition, the harness another tool's sample came
//! from, and the reference a trial stores as its task id (a Mirage task, another harness's
//! sample, or a GEO target), with one way to write and read each.

use std::fmt;
use std::str::FromStr;

named_enum! {
    /// How the ticket is worded (the book's corpus chapter): as filed, with a hint to
    /// investigate, or asking that every claim be anchored in evidence.
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum Condition("condition") {
        Raw,
        Hint,
        EvidenceAnchored,
    }
}

named_enum! {
    /// Another harness whose logs Mirage imports; its samples that are not Mirage tasks are
    /// stored under task ids of their own (`<harness>:<sample>`).
    #[serde(rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum Harness("harness") {
        Inspect,
        Atif,
        Agentdojo,
    }
}

impl Harness {
    /// The harness's own name, as its users know it.
    pub fn label(self) -> &'static str {
        match self {
            Harness::Inspect => "Inspect AI",
            Harness::Atif => "ATIF",
            Harness::Agentdojo => "AgentDojo",
        }
    }
}

/// One target of a GEO ranking list: the dataset, the list (its query or category) and the
/// target's 1-based place in the list. Written `geo:DATASET/LIST/INDEX`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct GeoTarget {
    pub dataset: String,
    pub list: String,
    /// 1-based.
    pub index: usize,
}

/// What a trial's task id refers to. Stored as the id it writes ([`fmt::Display`]); sent to
/// the pages as itself, so they tell the three apart without reading the id again.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskRef {
    /// A task of the Mirage corpus, by its id.
    Mirage(String),
    /// Another harness's sample that is not a Mirage task.
    Foreign { harness: Harness, sample: String },
    /// A GEO ranking target.
    Geo(GeoTarget),
}

/// The prefix of GEO targets' task ids.
const GEO: &str = "geo";

impl fmt::Display for GeoTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{GEO}:{}/{}/{}", self.dataset, self.list, self.index)
    }
}

impl fmt::Display for TaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskRef::Mirage(id) => f.write_str(id),
            TaskRef::Foreign { harness, sample } => write!(f, "{harness}:{sample}"),
            TaskRef::Geo(target) => target.fmt(f),
        }
    }
}

/// A `geo:` task id that does not name a target, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{id:?} is not a GEO target (geo:DATASET/LIST/INDEX): {why}")]
pub struct NotATarget {
    pub id: String,
    pub why: &'static str,
}

impl FromStr for GeoTarget {
    type Err = NotATarget;

    fn from_str(id: &str) -> Result<GeoTarget, NotATarget> {
        let fail = |why| NotATarget { id: id.to_string(), why };
        let rest = id.strip_prefix(GEO).and_then(|r| r.strip_prefix(':')).ok_or_else(|| fail("no geo: prefix"))?;
        let (key, index) = rest.rsplit_once('/').ok_or_else(|| fail("no index"))?;
        let (dataset, list) = key.split_once('/').ok_or_else(|| fail("no list"))?;
        let index: usize = index.parse().map_err(|_| fail("the index is not a number"))?;
        if dataset.is_empty() || list.is_empty() {
            return Err(fail("an empty dataset or list"));
        }
        if index == 0 {
            return Err(fail("indices start at 1"));
        }
        Ok(GeoTarget { dataset: dataset.to_string(), list: list.to_string(), index })
    }
}

impl TaskRef {
    /// Reads a stored task id: `geo:` ids must name a target; `<harness>:` ids of a known
    /// harness are its samples; anything else is a Mirage task id.
    pub fn parse(id: &str) -> Result<TaskRef, NotATarget> {
        match id.split_once(':') {
            Some((GEO, _)) => id.parse().map(TaskRef::Geo),
            Some((h, sample)) => Ok(match h.parse::<Harness>() {
                Ok(harness) => TaskRef::Foreign { harness, sample: sample.to_string() },
                Err(_) => TaskRef::Mirage(id.to_string()),
            }),
            None => Ok(TaskRef::Mirage(id.to_string())),
        }
    }

    /// Whether the id names another harness's sample rather than a Mirage task (read per
    /// trial when a run is scored: nothing is copied).
    pub fn is_foreign(id: &str) -> bool {
        id.split_once(':').is_some_and(|(h, _)| h.parse::<Harness>().is_ok())
    }

    /// The GEO target an id names, if it names one.
    pub fn geo(id: &str) -> Option<GeoTarget> {
        match TaskRef::parse(id) {
            Ok(TaskRef::Geo(t)) => Some(t),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_refs_read_back_what_they_write() {
        let all = [
            TaskRef::Mirage("shop-refund-01".into()),
            TaskRef::Foreign { harness: Harness::Inspect, sample: "refunds/t2".into() },
            TaskRef::Foreign { harness: Harness::Agentdojo, sample: "banking/user_task_0".into() },
            TaskRef::Geo(GeoTarget { dataset: "stsdata".into(), list: "books".into(), index: 11 }),
        ];
        for r in all {
            assert_eq!(TaskRef::parse(&r.to_string()), Ok(r.clone()), "{r}");
            let sent = serde_json::to_string(&r).expect("json");
            assert_eq!(serde_json::from_str::<TaskRef>(&sent).expect("read back"), r, "{sent}");
        }
        assert_eq!(
            TaskRef::Geo(GeoTarget { dataset: "d".into(), list: "l".into(), index: 3 }).to_string(),
            "geo:d/l/3"
        );
        // A list name with a slash keeps it: the index is after the last one.
        assert_eq!(GeoTarget::from_str("geo:ragroll/a/b/2").map(|t| t.list), Ok("a/b".into()));
    }

    #[test]
    fn malformed_geo_ids_are_refused_and_other_prefixes_are_mirage_ids() {
        for bad in ["geo:q1", "geo:d/l/x", "geo:d/l/0", "geo:/l/1", "geo:d//1"] {
            assert!(TaskRef::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(TaskRef::parse("wiki:edit-3"), Ok(TaskRef::Mirage("wiki:edit-3".into())));
        assert!(TaskRef::is_foreign("atif:x"));
        assert!(!TaskRef::is_foreign("shop-example-01"));
        assert!(!TaskRef::is_foreign("geo:d/l/1"));
    }

    #[test]
    fn conditions_and_harnesses_keep_their_stored_names() {
        let names: Vec<&str> = Condition::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names, ["raw", "hint", "evidence_anchored"]);
        let names: Vec<&str> = Harness::ALL.iter().map(|h| h.as_str()).collect();
        assert_eq!(names, ["inspect", "atif", "agentdojo"]);
        assert_eq!(Harness::parse("agentdojo").map(Harness::label), Ok("AgentDojo"));
    }
}
