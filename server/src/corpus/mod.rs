//! The task corpus: model, URL matcher, generator, validator and the JSON Lines format.

pub mod generate;
pub mod jsonl;
pub mod model;
pub mod urls;
pub mod validate;

pub use model::{Domain, Task};
