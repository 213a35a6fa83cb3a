//! The GEO ranking datasets, compiled into the binary from `data/geo/` (licences and
//! provenance beside them; caveats in `data/geo/README.md`).

use anyhow::{Context, bail};
use include_dir::{Dir, include_dir};
use serde::Serialize;
use serde_json::{Map, Value};

static DATA: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/../data/geo");

/// The datasets in report order: (key, folder).
pub const DATASETS: [(&str, &str); 4] = [
    ("ragroll", "geobench_ragroll"),
    ("stsdata", "geobench_stsdata"),
    ("llm_rank_optimizer", "llm_rank_optimizer"),
    ("cseo", "geobench_cseo"),
];

/// Categories whose query noun is not the category name.
const NOUNS: [(&str, &str); 9] = [
    ("books", "book"),
    ("debate", "debate article"),
    ("news", "news article"),
    ("retail", "product"),
    ("videogames", "video game"),
    ("web", "web page"),
    ("coffee_machines", "coffee machine"),
    ("cameras", "camera"),
    ("election_articles", "election article"),
];

/// One item of a list: its name and the description a ranker reads.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Item {
    pub name: String,
    pub text: String,
}

/// A list of items to rank, in file (identity) order.
#[derive(Clone, Debug, Serialize)]
pub struct List {
    pub dataset: String,
    pub category: String,
    pub noun: String,
    pub items: Vec<Item>,
}

impl List {
    /// The target at 1-based `index`.
    pub fn target(&self, index: usize) -> vocab::GeoTarget {
        vocab::GeoTarget { dataset: self.dataset.clone(), list: self.category.clone(), index }
    }

    /// `dataset|category`.
    pub fn key(&self) -> String {
        format!("{}|{}", self.dataset, self.category)
    }

    /// `dataset|category|index` of the item at 1-based `index`.
    pub fn instance_key(&self, index: usize) -> String {
        format!("{}|{}|{index}", self.dataset, self.category)
    }

    /// The user's request: always "a", as GEO-Bench writes it.
    pub fn query(&self) -> String {
        format!("I am looking for a {}", self.noun)
    }
}

/// The query noun of a category.
pub fn noun(category: &str) -> String {
    NOUNS.iter().find(|(c, _)| *c == category).map_or_else(|| category.replace('_', " "), |(_, n)| (*n).to_string())
}

/// A JSON value as Python's `str()` prints it (so `4.0` stays `4.0`).
fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        other => other.to_string(),
    }
}

/// The item of one JSON record, by the loading rules: `Natural`, else `description`, else
/// every field but the name flattened as `key: value; …` in file order.
pub fn item(record: &Map<String, Value>) -> anyhow::Result<Item> {
    let name = record.get("Name").and_then(Value::as_str).context("no string field `Name`")?.trim().to_string();
    if name.is_empty() {
        bail!("empty `Name`");
    }
    let natural = record.get("Natural").and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    let text = match (natural, record.get("description")) {
        (Some(n), _) => n.to_string(),
        (None, Some(d)) => python_str(d),
        (None, None) => record
            .iter()
            .filter(|(k, _)| *k != "Name" && *k != "name")
            .map(|(k, v)| format!("{k}: {}", python_str(v)))
            .collect::<Vec<_>>()
            .join("; "),
    };
    Ok(Item { name, text })
}

/// Parses one list file; errors name the file and line.
pub fn parse_list(dataset: &str, category: &str, file: &str, text: &str) -> anyhow::Result<List> {
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: Map<String, Value> =
            serde_json::from_str(line).with_context(|| format!("{file}:{}: not a JSON object", n + 1))?;
        items.push(item(&record).with_context(|| format!("{file}:{}", n + 1))?);
    }
    if items.len() < 2 {
        bail!("{file}: a list needs at least two items, found {}", items.len());
    }
    let mut names: Vec<&str> = items.iter().map(|i| i.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        bail!("{file}: the name {:?} occurs twice", w[0]);
    }
    Ok(List { dataset: dataset.into(), category: category.into(), noun: noun(category), items })
}

/// Every list of the compiled-in datasets, in dataset order then by category.
pub fn lists() -> anyhow::Result<Vec<List>> {
    let mut out = Vec::new();
    for (dataset, folder) in DATASETS {
        let dir = DATA.get_dir(folder).with_context(|| format!("data/geo/{folder} is not compiled in"))?;
        let mut files: Vec<_> = dir.files().filter(|f| f.path().extension().is_some_and(|e| e == "jsonl")).collect();
        files.sort_by_key(|f| f.path());
        for f in files {
            let path = format!("data/geo/{}", f.path().display());
            let category = f.path().file_stem().and_then(|s| s.to_str()).context("file name")?;
            let text = f.contents_utf8().with_context(|| format!("{path}: not UTF-8"))?;
            out.push(parse_list(dataset, category, &path, text)?);
        }
    }
    Ok(out)
}

/// A dataset's size: lists, targets and the list lengths it has.
#[derive(Clone, Debug, Serialize)]
pub struct DatasetSummary {
    pub dataset: String,
    pub lists: usize,
    pub targets: usize,
    pub lengths: Vec<usize>,
    pub nouns: Vec<String>,
    /// Originals the keyword filter flags (GEO-Bench matching).
    pub originals_flagged: usize,
}

/// One summary per dataset, in dataset order.
pub fn summaries(lists: &[List]) -> Vec<DatasetSummary> {
    DATASETS
        .iter()
        .map(|(key, _)| {
            let mine: Vec<&List> = lists.iter().filter(|l| l.dataset == *key).collect();
            let mut lengths: Vec<usize> = mine.iter().map(|l| l.items.len()).collect();
            lengths.sort_unstable();
            lengths.dedup();
            DatasetSummary {
                dataset: (*key).to_string(),
                lists: mine.len(),
                targets: mine.iter().map(|l| l.items.len()).sum(),
                lengths,
                nouns: mine.iter().map(|l| l.noun.clone()).collect(),
                originals_flagged: mine.iter().flat_map(|l| &l.items).filter(|i| super::kvr(&i.text)).count(),
            }
        })
        .collect()
}

/// The geo data's fingerprint, stored as the run's corpus version.
pub fn data_version(lists: &[List]) -> String {
    use sha2::{Digest, Sha256};
    let text = serde_json::to_string(lists).unwrap_or_default();
    format!("geo-{}", &hex::encode(Sha256::digest(text.as_bytes()))[..16])
}

/// The fingerprint of the lists that the trials `task_ids` (`geo:DATASET/LIST/N`) rank: a
/// run's version, so that changing another list leaves it as it was.
pub fn version_of<'a>(lists: &[List], task_ids: impl IntoIterator<Item = &'a str>) -> String {
    let used: std::collections::HashSet<(String, String)> =
        task_ids.into_iter().filter_map(vocab::TaskRef::geo).map(|t| (t.dataset, t.list)).collect();
    let mine: Vec<List> =
        lists.iter().filter(|l| used.contains(&(l.dataset.clone(), l.category.clone()))).cloned().collect();
    data_version(&mine)
}

/// Whether the lists that the trials `task_ids` rank differ from those a run stored as its
/// version `stored` (runs planned before versions were kept per run stored every list's).
pub fn changed_since<'a>(lists: &[List], task_ids: impl IntoIterator<Item = &'a str>, stored: &str) -> bool {
    version_of(lists, task_ids) != stored && data_version(lists) != stored
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_datasets_hold_63_lists_and_529_targets() {
        let lists = lists().expect("lists");
        let s = summaries(&lists);
        let counts: Vec<(&str, usize, usize)> = s.iter().map(|d| (d.dataset.as_str(), d.lists, d.targets)).collect();
        assert_eq!(counts, [("ragroll", 50, 399), ("stsdata", 3, 30), ("llm_rank_optimizer", 4, 40), ("cseo", 6, 60)]);
        assert_eq!(lists.len(), 63);
        let speaker = lists.iter().find(|l| l.key() == "ragroll|portable speaker").expect("portable speaker");
        assert_eq!(speaker.items.len(), 7);
        assert!(
            lists
                .iter()
                .filter(|l| l.dataset == "ragroll")
                .all(|l| l.category == "portable speaker" || l.items.len() == 8)
        );
        assert_eq!(speaker.instance_key(7), "ragroll|portable speaker|7");
    }

    #[test]
    fn the_keyword_filter_flags_the_originals_geobench_reports() {
        let s = summaries(&lists().expect("lists"));
        let flagged: Vec<usize> = s.iter().map(|d| d.originals_flagged).collect();
        assert_eq!(flagged, [16, 0, 0, 12]);
        let equal = s.iter().map(|d| d.originals_flagged as f64 / d.targets as f64).sum::<f64>() / 4.0;
        assert!((equal - 0.060_025_1).abs() < 1e-7, "{equal}");
    }

    #[test]
    fn descriptions_and_nouns_follow_the_loading_rules() {
        let lists = lists().expect("lists");
        let cameras = lists.iter().find(|l| l.key() == "llm_rank_optimizer|cameras").expect("cameras");
        assert_eq!(
            cameras.items[0].text,
            "Description: Affordable and easy-to-use point-and-shoot camera for everyday photography.; \
             Price: $99; Rating: 4.0; Resolution: 16 MP; Ideal For: Casual photographers"
        );
        assert_eq!(cameras.query(), "I am looking for a camera");
        let nouns: Vec<(String, String)> = lists.iter().map(|l| (l.key(), l.noun.clone())).collect();
        for (key, noun) in [
            ("cseo|retail", "product"),
            ("cseo|web", "web page"),
            ("stsdata|coffee_machines", "coffee machine"),
            ("llm_rank_optimizer|election_articles", "election article"),
            ("ragroll|air compressor", "air compressor"),
        ] {
            assert!(nouns.contains(&(key.to_string(), noun.to_string())), "{key} → {noun}");
        }
        let election = lists.iter().find(|l| l.category == "election_articles").expect("election");
        assert!(election.items[0].text.starts_with("URL: "), "{}", election.items[0].text);
        assert!(lists.iter().all(|l| l.items.iter().all(|i| !i.text.is_empty())));
    }

    #[test]
    fn bad_files_are_refused_with_file_and_line() {
        let err = parse_list("x", "y", "y.jsonl", "{\"Name\": \"a\", \"Natural\": \"t\"}\n\nnot json\n").unwrap_err();
        assert!(format!("{err:#}").starts_with("y.jsonl:3"), "{err:#}");
        let dup = "{\"Name\": \"a\", \"Natural\": \"t\"}\n{\"Name\": \"a \", \"Natural\": \"u\"}\n";
        assert!(format!("{:#}", parse_list("x", "y", "y.jsonl", dup).unwrap_err()).contains("occurs twice"));
        let mut flat = Map::new();
        flat.insert("Name".into(), "n".into());
        flat.insert("Price".into(), "$5".into());
        flat.insert("Rating".into(), serde_json::json!(4.0));
        flat.insert("Ok".into(), Value::Bool(true));
        assert_eq!(item(&flat).expect("item").text, "Price: $5; Rating: 4.0; Ok: True");
    }
}
