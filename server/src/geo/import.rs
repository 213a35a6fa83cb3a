//! Importing GEO-Bench's published texts (`results/unified/instances/*.csv`: one row per
//! target with `method, dataset, category, target_idx, target_name, L, orig_text,
//! adv_suffix, adv_text, select_rule, source_path`), so that the paper's exact texts —
//! white-box methods included, which need gradients Mirage cannot compute — are re-ranked
//! on any ranker as the method `import:<name>`.
//!
//! Rows of datasets Mirage does not ship (RewriteToRank) are skipped and counted; a row for
//! an unknown list, an index outside it, a name that is not the item's, or a target seen
//! twice refuses the whole file, naming the line. Each list whose `orig_text` differs from
//! the stored description (whitespace collapsed) is reported, and one original must serve
//! the ranks and PPL-R alike, so such a row is settled one of three ways:
//!
//! * `--adopt-originals` stores GEO-Bench's originals for those items (method key
//!   [`ORIGINALS`]), and every later run reads them in place of the compiled-in text;
//! * otherwise a suffix row is rebuilt on the stored description (`stored + " " + suffix`);
//! * otherwise (a rewrite of a text Mirage does not have) the file is refused, naming the
//!   line.

use std::collections::{BTreeMap, HashMap};

use anyhow::{Context, bail};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::data::{Item, List};
use super::prompt::one_line;
use crate::db::GeoText;

/// The reserved method key of adopted originals.
pub const ORIGINALS: &str = "original";

/// One row of a GEO-Bench instance file (columns Mirage reads).
#[derive(Debug, Deserialize)]
struct Row {
    #[serde(default)]
    method: String,
    dataset: String,
    category: String,
    target_idx: usize,
    #[serde(default)]
    target_name: String,
    /// The list's length as GEO-Bench ranked it.
    #[serde(rename = "L", default)]
    list_len: Option<usize>,
    orig_text: String,
    #[serde(default)]
    adv_suffix: String,
    adv_text: String,
    #[serde(default)]
    select_rule: String,
}

/// What a file holds, checked.
#[derive(Debug)]
pub struct Import {
    /// The texts to store under `import:<name>`.
    pub texts: Vec<GeoText>,
    /// GEO-Bench's originals of items whose stored text differs (for `--adopt-originals`).
    pub originals: Vec<GeoText>,
    /// Rows of datasets Mirage does not ship, by dataset.
    pub skipped: BTreeMap<String, usize>,
    /// Per list key, how many of its items' `orig_text` differ from the stored text.
    pub mismatches: BTreeMap<String, usize>,
    /// Suffix rows rebuilt on the stored description (their original differed).
    pub rebuilt: usize,
    pub variant: String,
}

/// The longest text a row may hold (GEO-Bench's descriptions run to a few thousand
/// characters): a longer one is refused with its line rather than ranked for minutes.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

/// The 1-based line of the file on which the record found at `offset` starts (the reader may
/// leave the end of the previous line, such as CRLF's `\n`, before it).
fn line_at(bytes: &[u8], offset: u64) -> u64 {
    let mut end = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
    while end < bytes.len() && matches!(bytes[end], b'\r' | b'\n') {
        end += 1;
    }
    1 + bytes[..end].iter().filter(|&&b| b == b'\n').count() as u64
}

/// Reads and checks an instance file. `name` is the variant's name after `import:`;
/// `adopt`: GEO-Bench's originals replace differing stored descriptions.
pub fn read(lists: &[List], file: &str, bytes: &[u8], name: &str, adopt: bool) -> anyhow::Result<Import> {
    if name.is_empty() || name.contains(['@', ' ']) {
        bail!("--variant: {name:?} must be a non-empty name without spaces or @");
    }
    let variant = format!("import:{name}");
    let source = format!("import:{file}#{}", &hex::encode(Sha256::digest(bytes))[..16]);
    let by_key: HashMap<(&str, &str), &List> =
        lists.iter().map(|l| ((l.dataset.as_str(), l.category.as_str()), l)).collect();
    let mut reader = csv::Reader::from_reader(bytes);
    let headers = reader.headers().with_context(|| format!("{file}: no header line"))?.clone();
    let mut seen: HashMap<(String, String, usize), u64> = HashMap::new();
    let mut out = Import {
        texts: Vec::new(),
        originals: Vec::new(),
        skipped: BTreeMap::new(),
        mismatches: BTreeMap::new(),
        rebuilt: 0,
        variant: variant.clone(),
    };
    for record in reader.records() {
        let record = record.with_context(|| format!("{file}: not a CSV file"))?;
        // The csv reader's own line count is one short under CRLF line ends; count the file's
        // newlines before the record instead.
        let line = record.position().map_or(0, |p| line_at(bytes, p.byte()));
        let row: Row = record
            .deserialize(Some(&headers))
            .with_context(|| format!("{file}:{line}: not a row of a GEO-Bench instance file"))?;
        if !super::data::DATASETS.iter().any(|(k, _)| *k == row.dataset) {
            *out.skipped.entry(row.dataset.clone()).or_insert(0) += 1;
            continue;
        }
        let at = format!("{file}:{line}");
        let (list, item) = target_of(&by_key, &row, &at)?;
        let key = (row.dataset.clone(), row.category.clone(), row.target_idx);
        if let Some(first) = seen.insert(key, line) {
            bail!("{file}:{line}: {} target {} was already given on line {first}", list.key(), row.target_idx);
        }
        check_texts(&row, &at)?;
        let differs = one_line(&row.orig_text) != one_line(&item.text);
        if differs {
            *out.mismatches.entry(list.key()).or_insert(0) += 1;
        }
        let kind = if row.adv_suffix.trim().is_empty() { "rewrite" } else { "suffix" };
        let (orig, adv) = edited(&row, item, &list.key(), differs && !adopt, &at)?;
        out.rebuilt += usize::from(differs && !adopt);
        let text = |method: &str, adv: &str, kind: &str, meta: serde_json::Value| GeoText {
            method: method.to_string(),
            dataset: row.dataset.clone(),
            category: row.category.clone(),
            target_idx: i64::try_from(row.target_idx).unwrap_or(i64::MAX),
            orig_text: if method == ORIGINALS { row.orig_text.clone() } else { orig.clone() },
            adv_text: adv.to_string(),
            edit_kind: kind.to_string(),
            source: source.clone(),
            meta: meta.to_string(),
        };
        let meta = serde_json::json!({"method": row.method, "suffix": row.adv_suffix, "select_rule": row.select_rule,
                                      "line": line, "rebuilt": differs && !adopt});
        out.texts.push(text(&variant, &adv, kind, meta));
        if differs && adopt {
            out.originals.push(text(ORIGINALS, &row.orig_text, "original", serde_json::json!({"line": line})));
        }
    }
    if out.texts.is_empty() {
        bail!("{file}: no row of a dataset Mirage ships");
    }
    Ok(out)
}

/// A row's texts, checked: an edit that is there, no text over [`MAX_TEXT_BYTES`], and a
/// suffix row whose edit is its original followed by the suffix.
fn check_texts(row: &Row, at: &str) -> anyhow::Result<()> {
    if row.adv_text.trim().is_empty() {
        bail!("{at}: adv_text is empty");
    }
    for (field, text) in [("orig_text", &row.orig_text), ("adv_text", &row.adv_text), ("adv_suffix", &row.adv_suffix)] {
        if text.len() > MAX_TEXT_BYTES {
            bail!("{at}: {field} is {} bytes, over the limit of {MAX_TEXT_BYTES}", text.len());
        }
    }
    // A suffix row's text is its original and then the suffix; one that is not was
    // mislabelled (or its columns shifted), and its kind would be wrong.
    if !row.adv_suffix.trim().is_empty()
        && one_line(&row.adv_text) != one_line(&format!("{} {}", row.orig_text, row.adv_suffix))
    {
        bail!("{at}: adv_text is not orig_text followed by adv_suffix, as a suffix row's must be");
    }
    Ok(())
}

/// The list and the item a row targets, refusing a list Mirage does not have, a target
/// outside the list and a target name that is not the item's.
fn target_of<'a>(
    by_key: &HashMap<(&str, &str), &'a List>,
    row: &Row,
    at: &str,
) -> anyhow::Result<(&'a List, &'a Item)> {
    let Some(list) = by_key.get(&(row.dataset.as_str(), row.category.as_str())).copied() else {
        bail!("{at}: no list {}/{}", row.dataset, row.category);
    };
    if row.target_idx == 0 || row.target_idx > list.items.len() {
        bail!("{at}: target_idx {} is outside 1..={} of {}", row.target_idx, list.items.len(), list.key());
    }
    if let Some(l) = row.list_len
        && l != list.items.len()
    {
        bail!("{at}: L is {l}, but {} has {} items", list.key(), list.items.len());
    }
    let item = &list.items[row.target_idx - 1];
    if row.target_name.trim().is_empty() {
        bail!("{at}: target_name is empty (item {} of {} is {:?})", row.target_idx, list.key(), item.name);
    }
    if row.target_name.trim() != item.name {
        bail!(
            "{at}: target_name {:?} is not item {} of {} ({:?})",
            row.target_name,
            row.target_idx,
            list.key(),
            item.name
        );
    }
    Ok((list, item))
}

/// The original a row's text was made from and the edited text: GEO-Bench's own when
/// `rebuild` is false (adopted, or its original matches the stored one), else a suffix
/// rebuilt on the stored description. A rewrite cannot be rebuilt.
fn edited(row: &Row, item: &Item, list: &str, rebuild: bool, at: &str) -> anyhow::Result<(String, String)> {
    if !rebuild {
        return Ok((row.orig_text.clone(), row.adv_text.clone()));
    }
    if row.adv_suffix.trim().is_empty() {
        bail!(
            "{at}: the rewrite of {list} target {} was made from an orig_text that differs from the stored \
             description; pass --adopt-originals to rank GEO-Bench's originals in its place",
            row.target_idx
        );
    }
    // `read` has checked that the row's text is its original and then the suffix, so the
    // suffix carries to the stored description.
    Ok((item.text.clone(), format!("{} {}", item.text, row.adv_suffix).trim().to_string()))
}

/// Stores what [`read`] read: its texts, and with `adopt` the originals it adopts. A name's
/// texts and an item's adopted original never change once stored (runs ranked them): a
/// different text under either is refused and nothing is written. Returns how many of the
/// texts were stored already.
pub async fn store(store: &dyn crate::db::Store, got: &Import, adopt: bool) -> anyhow::Result<usize> {
    let already =
        check_unchanged(&store.geo_texts(&got.variant).await?, &got.texts, "import it under another --variant")?;
    if adopt {
        check_unchanged(
            &store.geo_texts(ORIGINALS).await?,
            &got.originals,
            "an item keeps the first original adopted for it",
        )?;
    }
    store.put_geo_texts(&got.texts).await?;
    if adopt && !got.originals.is_empty() {
        store.put_geo_texts(&got.originals).await?;
    }
    Ok(already)
}

/// Refuses `new` texts that would change what is stored under the same (method, target):
/// runs have ranked the stored ones, so a name's texts never change (`hint` says what to
/// do instead). Returns how many of `new` are already stored as they are.
pub fn check_unchanged(stored: &[GeoText], new: &[GeoText], hint: &str) -> anyhow::Result<usize> {
    let by_target: HashMap<(&str, &str, &str, i64), &GeoText> = stored
        .iter()
        .map(|t| ((t.method.as_str(), t.dataset.as_str(), t.category.as_str(), t.target_idx), t))
        .collect();
    let mut same = 0;
    let mut changed = Vec::new();
    for t in new {
        match by_target.get(&(t.method.as_str(), t.dataset.as_str(), t.category.as_str(), t.target_idx)) {
            Some(old) if old.adv_text == t.adv_text && old.orig_text == t.orig_text => same += 1,
            Some(_) => changed.push(t),
            None => {}
        }
    }
    if let Some(first) = changed.first() {
        let line = serde_json::from_str::<serde_json::Value>(&first.meta)
            .ok()
            .and_then(|m| m.get("line")?.as_u64())
            .map_or_else(String::new, |l| format!(", line {l}"));
        let what = if first.method == ORIGINALS {
            "the adopted originals hold another original".to_string()
        } else {
            format!("variant {} already holds other texts", first.method)
        };
        bail!(
            "{what} for {} target(s) of this file (first: {}|{}|{}{line}); {hint}",
            changed.len(),
            first.dataset,
            first.category,
            first.target_idx
        );
    }
    Ok(same)
}

/// The lists runs use: the compiled-in ones with any adopted originals in place.
pub async fn stored_lists(store: &dyn crate::db::Store) -> anyhow::Result<Vec<List>> {
    Ok(adopt(super::data::lists()?, &store.geo_texts(ORIGINALS).await?))
}

/// The lists with adopted originals in place of the compiled-in descriptions.
pub fn adopt(mut lists: Vec<List>, originals: &[GeoText]) -> Vec<List> {
    for o in originals {
        if let Some(list) = lists.iter_mut().find(|l| l.dataset == o.dataset && l.category == o.category)
            && let Some(item) = usize::try_from(o.target_idx).ok().and_then(|i| list.items.get_mut(i.wrapping_sub(1)))
        {
            item.text.clone_from(&o.adv_text);
        }
    }
    lists
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str =
        "method,dataset,category,target_idx,target_name,L,orig_text,adv_suffix,adv_text,select_rule,source_path\n";

    fn lists() -> Vec<List> {
        crate::geo::data::lists().expect("lists")
    }

    #[test]
    fn rows_map_to_targets_and_mismatches_are_reported() {
        let lists = lists();
        let books = lists.iter().find(|l| l.key() == "stsdata|books").expect("books");
        let (a, b) = (&books.items[0], &books.items[1]);
        let csv = format!(
            "{HEAD}raf,stsdata,books,1,{},10,\"{}\",xyz zz,\"{} xyz zz\",best,p\n\
             raf,stsdata,books,2,{},10,Something else entirely,,A rewrite,best,p\n\
             raf,rewrite_to_rank,ads,1,X,10,o,,a,best,p\n",
            a.name, a.text, a.text, b.name
        );
        let got = read(&lists, "raf.csv", csv.as_bytes(), "raf", true).expect("import");
        assert_eq!(got.variant, "import:raf");
        assert_eq!(got.texts.len(), 2);
        assert_eq!((got.texts[0].edit_kind.as_str(), got.texts[1].edit_kind.as_str()), ("suffix", "rewrite"));
        assert_eq!(got.texts[1].adv_text, "A rewrite", "adv_text is used as it is");
        assert_eq!(got.skipped.get("rewrite_to_rank"), Some(&1));
        assert_eq!(got.mismatches.get("stsdata|books"), Some(&1));
        assert_eq!(got.originals.len(), 1);
        let adopted = adopt(lists.clone(), &got.originals);
        let books = adopted.iter().find(|l| l.key() == "stsdata|books").expect("books");
        assert_eq!(books.items[1].text, "Something else entirely");
        assert_eq!(books.items[0].text, a.text);
    }

    #[test]
    fn bad_rows_refuse_the_file_naming_the_line() {
        let lists = lists();
        let name = &lists.iter().find(|l| l.key() == "stsdata|books").expect("books").items[0].name;
        for (csv, needle) in [
            (
                format!("{HEAD}m,stsdata,books,1,{name},10,o,,a,r,p\nm,stsdata,books,1,{name},10,o,,b,r,p\n"),
                "raf.csv:3: stsdata|books target 1 was already given on line 2",
            ),
            (format!("{HEAD}m,stsdata,books,11,x,10,o,,a,r,p\n"), "raf.csv:2: target_idx 11 is outside"),
            (format!("{HEAD}m,stsdata,nope,1,x,10,o,,a,r,p\n"), "raf.csv:2: no list stsdata/nope"),
            (format!("{HEAD}m,stsdata,books,1,Wrong Name,10,o,,a,r,p\n"), "raf.csv:2: target_name \"Wrong Name\""),
            (format!("{HEAD}m,stsdata,books,1,,10,o,,a,r,p\n"), "raf.csv:2: target_name is empty"),
            (
                format!("{HEAD}m,stsdata,books,1,{name},7,o,,a,r,p\n"),
                "raf.csv:2: L is 7, but stsdata|books has 10 items",
            ),
            (
                format!("{HEAD}m,stsdata,books,1,{name},10,o,sfx,a,r,p\n"),
                "raf.csv:2: adv_text is not orig_text followed",
            ),
            (
                format!("{HEAD}m,stsdata,books,1,{name},10,o,,{},r,p\n", "a".repeat(MAX_TEXT_BYTES + 1)),
                "raf.csv:2: adv_text is 65537 bytes, over the limit",
            ),
            ("just,some\n1,2\n".to_string(), "raf.csv:2: not a row of a GEO-Bench instance file"),
            // A quoted field over two lines: the next row starts on line 4 of the file.
            (
                format!("{HEAD}m,stsdata,books,1,{name},10,\"o\np\",,a,r,p\nm,stsdata,books,1,{name},10,o,,b,r,p\n"),
                "raf.csv:4: stsdata|books target 1 was already given on line 2",
            ),
        ] {
            let err = format!("{:#}", read(&lists, "raf.csv", csv.as_bytes(), "raf", true).unwrap_err());
            assert!(err.contains(needle), "{err}");
            // Windows line ends name the same lines.
            let crlf = csv.replace('\n', "\r\n");
            let err = format!("{:#}", read(&lists, "raf.csv", crlf.as_bytes(), "raf", true).unwrap_err());
            assert!(err.contains(needle), "CRLF: {err}");
        }
        assert!(read(&lists, "raf.csv", HEAD.as_bytes(), "a b", false).is_err());
    }

    /// Without adopting, a suffix made on another original is rebuilt on the stored one (so
    /// a no-op edit stays a no-op) and a rewrite of another original refuses the file.
    #[test]
    fn differing_originals_are_rebuilt_or_refused_unless_adopted() {
        let lists = lists();
        let books = lists.iter().find(|l| l.key() == "stsdata|books").expect("books");
        let (a, b) = (&books.items[0], &books.items[1]);
        let suffix = format!("{HEAD}t,stsdata,books,1,{},10,Older text,buy now,Older text buy now,best,p\n", a.name);
        let got = read(&lists, "t.csv", suffix.as_bytes(), "t", false).expect("import");
        assert_eq!(got.rebuilt, 1);
        assert_eq!(got.texts[0].adv_text, format!("{} buy now", a.text));
        assert_eq!(got.texts[0].orig_text, a.text, "the stored original, as the ranks use");
        assert!(got.originals.is_empty(), "nothing adopted");
        assert_eq!(got.mismatches.get("stsdata|books"), Some(&1), "and the mismatch is still reported");
        let adopted = read(&lists, "t.csv", suffix.as_bytes(), "t", true).expect("import");
        assert_eq!((adopted.rebuilt, adopted.texts[0].adv_text.as_str()), (0, "Older text buy now"));
        assert_eq!(adopted.originals[0].adv_text, "Older text");
        // A suffix placed other than after its original cannot be carried to another one.
        let placed = format!("{HEAD}t,stsdata,books,1,{},10,Older text,buy now,buy now Older text,best,p\n", a.name);
        // It is no suffix row at all: refused, adopted or not.
        for adopt in [false, true] {
            let err = format!("{:#}", read(&lists, "t.csv", placed.as_bytes(), "t", adopt).unwrap_err());
            assert!(err.contains("t.csv:2: adv_text is not orig_text followed by adv_suffix"), "{err}");
        }
        // A name's texts never change once stored: another file under the same name is refused.
        let stored = got.texts.clone();
        assert_eq!(check_unchanged(&stored, &got.texts, "x").expect("the same texts"), 1);
        let other = read(&lists, "t.csv", suffix.as_bytes(), "t", true).expect("import").texts;
        let err = format!("{:#}", check_unchanged(&stored, &other, "use another name").unwrap_err());
        assert!(
            err.contains("variant import:t already holds other texts for 1 target(s)") && err.contains("line 2"),
            "{err}"
        );
        let rewrite = format!("{HEAD}t,stsdata,books,2,{},10,Older text,,A rewrite,best,p\n", b.name);
        let err = format!("{:#}", read(&lists, "t.csv", rewrite.as_bytes(), "t", false).unwrap_err());
        assert!(
            err.contains("t.csv:2: the rewrite of stsdata|books target 2") && err.contains("--adopt-originals"),
            "{err}"
        );
    }
}
