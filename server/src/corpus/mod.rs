//! The task corpus: model, URL matcher, generator, validator and the JSON Lines format.

pub mod generate;
pub mod jsonl;
pub mod model;
pub mod shape;
mod site_index;
pub mod urls;
pub mod validate;

pub use model::{Domain, Task};

/// A short fingerprint of a corpus: the first 16 hex digits of the SHA-256 of its JSON
/// Lines export. Recorded with every run, so a result names the corpus it came from.
pub fn fingerprint(tasks: &[Task]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(jsonl::write_tasks(tasks).as_bytes()))[..16].to_string()
}
