//! The task interchange format: JSON Lines checked against `schemas/task.schema.json`,
//! then against the corpus validator. Reading is all-or-nothing: callers get either every
//! task of a file or the full list of problems, each naming file, line and field.

use std::fmt;
use std::sync::LazyLock;

use serde_json::Value;

use super::model::Task;
use super::validate::validate_corpus;

/// The task schema shipped in the repository.
pub const TASK_SCHEMA: &str = include_str!("../../../schemas/task.schema.json");

static VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(TASK_SCHEMA).expect("the shipped task schema is valid JSON");
    jsonschema::validator_for(&schema).expect("the shipped task schema compiles")
});

/// A problem at a place in an input file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    pub file: String,
    pub line: usize,
    /// JSON path of the field (`$` for the whole line).
    pub field: String,
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.field, self.message)
    }
}

fn pointer_to_path(pointer: &str) -> String {
    if pointer.is_empty() {
        return "$".to_string();
    }
    let mut out = String::new();
    for seg in pointer.trim_start_matches('/').split('/') {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if seg.chars().all(|c| c.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

/// Parses every non-blank line of a JSON Lines file, checks it against `schema` and
/// deserialises it. Returns the values with their 1-based line numbers, and every problem
/// found (each naming file, line and field).
pub fn read_lines<T: serde::de::DeserializeOwned>(
    file: &str,
    contents: &str,
    schema: &jsonschema::Validator,
) -> (Vec<(usize, T)>, Vec<LineError>) {
    let mut values = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in contents.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match read_line(file, i + 1, line, schema) {
            Ok(v) => values.push((i + 1, v)),
            Err(e) => errors.extend(e),
        }
    }
    (values, errors)
}

/// One line of a JSON Lines file (`line_no` 1-based): parsed, checked against `schema`
/// and deserialised, or every problem found in it.
pub fn read_line<T: serde::de::DeserializeOwned>(
    file: &str,
    line_no: usize,
    line: &str,
    schema: &jsonschema::Validator,
) -> Result<T, Vec<LineError>> {
    let err = |field: String, message: String| LineError { file: file.to_string(), line: line_no, field, message };
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Err(vec![err("$".to_string(), format!("invalid JSON at column {}: {e}", e.column()))]),
    };
    let schema_errors: Vec<LineError> = schema
        .iter_errors(&value)
        .map(|e| {
            // A missing property is named itself, not by the object that lacks it.
            let mut pointer = e.instance_path().as_str().to_string();
            if let jsonschema::error::ValidationErrorKind::Required { property } = e.kind() {
                let name = property.as_str().map_or_else(|| property.to_string(), ToString::to_string);
                pointer.push('/');
                pointer.push_str(&name.replace('~', "~0").replace('/', "~1"));
            }
            err(pointer_to_path(&pointer), e.to_string())
        })
        .collect();
    if !schema_errors.is_empty() {
        return Err(schema_errors);
    }
    serde_json::from_value::<T>(value).map_err(|e| vec![err("$".to_string(), e.to_string())])
}

/// Parses and validates a task file's contents. `file` names the input in messages.
/// Blank lines are skipped. Returns every task, or every problem found.
pub fn read_tasks(file: &str, contents: &str) -> Result<Vec<Task>, Vec<LineError>> {
    let (read, mut errors) = read_lines::<Task>(file, contents, &VALIDATOR);
    let (lines_of, tasks): (Vec<usize>, Vec<Task>) = read.into_iter().unzip();
    for finding in validate_corpus(&tasks) {
        let line = tasks.iter().position(|t| t.id == finding.task_id).map_or(0, |i| lines_of[i]);
        errors.push(LineError { file: file.to_string(), line, field: finding.field, message: finding.message });
    }
    if errors.is_empty() {
        Ok(tasks)
    } else {
        errors.sort_by_key(|e| e.line);
        Err(errors)
    }
}

/// Writes tasks as JSON Lines, one task per line, in the given order.
pub fn write_tasks(tasks: &[Task]) -> String {
    let mut out = String::new();
    for task in tasks {
        out.push_str(&serde_json::to_string(task).expect("tasks always serialise"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::generate::corpus;

    fn one_task_line() -> Value {
        serde_json::to_value(&corpus()[0]).expect("serialises")
    }

    #[test]
    fn export_then_read_round_trips() {
        let tasks: Vec<Task> = corpus().into_iter().take(20).collect();
        let text = write_tasks(&tasks);
        let back = read_tasks("x.jsonl", &text).expect("valid");
        assert_eq!(back, tasks);
    }

    #[test]
    fn unknown_fields_are_kept() {
        let mut v = one_task_line();
        v["team_note"] = serde_json::json!({"owner": "qa"});
        let back = read_tasks("x.jsonl", &v.to_string()).expect("valid");
        assert_eq!(write_tasks(&back).trim(), serde_json::to_string(&back[0]).expect("serialises"));
        assert!(write_tasks(&back).contains("\"team_note\":{\"owner\":\"qa\"}"));
    }

    #[test]
    fn schema_errors_name_file_line_and_field() {
        let good = one_task_line();
        let mut bad = good.clone();
        bad["difficulty"] = serde_json::json!("impossible");
        bad["id"] = serde_json::json!("other-id");
        let text = format!("{good}\n\n{bad}\n");
        let errors = read_tasks("tasks.jsonl", &text).expect_err("invalid");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!((errors[0].line, errors[0].field.as_str()), (3, "difficulty"));
        assert!(errors[0].to_string().starts_with("tasks.jsonl:3:difficulty: "));
    }

    #[test]
    fn broken_json_is_reported_with_its_line() {
        let errors = read_tasks("t.jsonl", "{\"id\": ").expect_err("invalid");
        assert_eq!((errors[0].line, errors[0].field.as_str()), (1, "$"));
        assert!(errors[0].message.contains("invalid JSON"));
    }

    #[test]
    fn nested_fields_are_named_as_paths() {
        let mut bad = one_task_line();
        bad["gold_facts"][0]["url"] = serde_json::json!("no-slash");
        let errors = read_tasks("t.jsonl", &bad.to_string()).expect_err("invalid");
        assert_eq!(errors[0].field, "gold_facts[0].url");
    }

    #[test]
    fn validator_findings_carry_the_line_of_their_task() {
        let good = one_task_line();
        let mut bad = good.clone();
        bad["id"] = serde_json::json!("second");
        bad["verdict"]["optimal"] = serde_json::json!("LAUNCH_ROCKET");
        let errors = read_tasks("t.jsonl", &format!("{good}\n{bad}")).expect_err("invalid");
        assert!(errors.iter().any(|e| e.line == 2 && e.field == "verdict.optimal"), "{errors:?}");
    }
}
