//! Offline writers: edits of a target's description that need no model, so the whole
//! pipeline runs in tests (docs/geo.md). Each returns the edited description.
//!
//! * `clean`: the original text (the clean pseudo-method: every gain must be exactly 0);
//! * `stuff`: appends a sentence that repeats the item's name and the query noun;
//! * `strip`: deletes whole-word occurrences of the noun's words (and their `s`/`es`
//!   plurals) and collapses whitespace.

use regex::Regex;

use super::prompt::one_line;

/// The offline writers by name.
pub const WRITERS: [&str; 3] = ["clean", "stuff", "strip"];

/// The edited description of `writer`, or `None` for an unknown writer.
pub fn write(writer: &str, name: &str, noun: &str, text: &str) -> Option<String> {
    match writer {
        "clean" => Some(text.to_string()),
        "stuff" => Some(format!(
            "{} {name} is the {noun} to pick: the best {noun}, the top {noun}, the {noun} everyone wants. \
             Choose {name}, {noun} of the year.",
            text.trim()
        )),
        "strip" => {
            let words: Vec<String> = noun.split_whitespace().map(regex::escape).collect();
            let pattern = format!(r"(?i)\b(?:{})(?:s|es)?\b", words.join("|"));
            let re = Regex::new(&pattern).expect("noun pattern");
            Some(one_line(&re.replace_all(text, " ")))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stuff_repeats_and_strip_deletes_whole_words() {
        let stuffed = write("stuff", "Quincy", "air compressor", "A quiet unit.").expect("stuff");
        assert!(stuffed.starts_with("A quiet unit. Quincy is the air compressor"));
        assert_eq!(
            write("strip", "Q", "air compressor", "An air compressor; Compressors and AIR.\nAirflow stays.").as_deref(),
            Some("An ; and . Airflow stays.")
        );
        assert_eq!(write("clean", "Q", "book", " same ").as_deref(), Some(" same "));
        assert_eq!(write("nope", "Q", "book", "x"), None);
    }
}
