//! Scoring a trajectory file at the speed of reading it: lines are read in chunks and
//! handed to one worker per core, which parses each straight into a [`Trajectory`], checks
//! what the types do not (the schema's enums, non-empty ids, an error's reason) and scores
//! it; only the scores are kept, so memory stays bounded by the chunks in flight. A line
//! that fails the quick path goes through the full schema check, so its problems are
//! reported exactly as [`super::read_trajectories`] reports them (file, line, field).

use std::collections::hash_map::Entry;
use std::io::BufRead;
use std::ops::Range;
use std::sync::{Arc, Mutex, mpsc};

use serde_json::Value;

use super::aside::Keep;
use super::{Scorer, Trajectory, TrialScore, VALIDATOR};
use crate::corpus::jsonl::read_line;
use crate::env::World;

/// Lines per chunk handed to a worker.
const CHUNK: usize = 128;

/// The schema's enums, checked on the quick path (a test compares them with the schema).
pub const ACTION_TYPES: [&str; 7] = ["goto", "click", "search", "back", "verdict", "tool", "answer"];
pub const STATUSES: [&str; 2] = ["done", "error"];

/// Whether a trajectory that parsed meets the schema's rules its types leave open.
fn meets_schema(t: &Trajectory) -> bool {
    let string_or_absent = |v: Option<&Value>| v.is_none_or(Value::is_string);
    !t.trial_id.is_empty()
        && !t.task_id.is_empty()
        && t.level.known().is_some()
        && t.condition.known().is_some()
        && STATUSES.contains(&t.status.as_str())
        && (t.status != "error" || t.error.as_ref().is_some_and(|e| !e.is_empty()))
        && t.appeal.as_ref().is_none_or(Value::is_object)
        && t.extra.get("spans_marked").is_none_or(Value::is_boolean)
        && t.steps.iter().all(|s| {
            s.action.as_ref().is_none_or(|a| {
                a.get("type").and_then(Value::as_str).is_some_and(|k| ACTION_TYPES.contains(&k))
                    && string_or_absent(a.get("url"))
                    && string_or_absent(a.get("verdict"))
            })
        })
}

/// One line: its score (its detail handled as `keep` says), or its problems.
fn score_line(
    file: &str,
    line_no: usize,
    line: &str,
    scorer: &Scorer<'_>,
    tasks: &str,
    keep: Keep<'_>,
) -> anyhow::Result<Outcome> {
    let traj: Trajectory = match serde_json::from_str::<Trajectory>(line) {
        Ok(t) if meets_schema(&t) => t,
        _ => match read_line::<Trajectory>(file, line_no, line, &VALIDATOR) {
            Ok(t) => t,
            Err(errors) => return Ok(Err(errors.iter().map(ToString::to_string).collect())),
        },
    };
    match scorer.score(&traj) {
        Some(mut score) => {
            score.keep(keep)?;
            Ok(Ok((traj.trial_id, score)))
        }
        None => Ok(Err(vec![format!("{file}:{line_no}:task_id: task {:?} is not in {tasks}", traj.task_id)])),
    }
}

/// A chunk of lines in file order: its number, its lines back to back (each checked to be
/// UTF-8), and each line's number and place among them. One buffer a chunk, not a string a
/// line: a line of kilobytes read into a string of its own grows it again and again.
struct Chunk {
    n: usize,
    text: Vec<u8>,
    lines: Vec<(usize, Range<usize>)>,
}

impl Chunk {
    fn new(n: usize, bytes: usize) -> Chunk {
        Chunk { n, text: Vec::with_capacity(bytes), lines: Vec::with_capacity(CHUNK) }
    }

    /// Chunk `n` in the buffers of one a worker is done with, or in new ones of `bytes`.
    /// Buffers go round between the reader and the workers: a chunk of a large file takes
    /// megabytes, and new ones would be grown, copied and faulted in page by page.
    fn next(n: usize, bytes: usize, done: &mpsc::Receiver<Chunk>) -> Chunk {
        match done.try_recv() {
            Ok(mut c) => {
                c.text.clear();
                c.lines.clear();
                c.n = n;
                c
            }
            Err(_) => Chunk::new(n, bytes),
        }
    }
}

/// A line's outcome: its trial id and score, or its problems.
type Outcome = Result<(String, TrialScore), Vec<String>>;
/// A chunk's outcomes, line by line.
type Outcomes = (usize, Vec<(usize, Outcome)>, usize);

/// The scores in file order, gathered as the workers hand in their chunks: each chunk's
/// scores are moved into one vector as soon as the chunks before it are in, so memory
/// holds every score once and the chunks only while they wait.
#[derive(Default)]
struct Gathered {
    /// The file's size in bytes, when known: the first chunk in tells how many scores to
    /// make room for (a vector grown by doubling copies its scores and faults in new pages
    /// again and again).
    bytes: Option<u64>,
    next: usize,
    waiting: std::collections::BTreeMap<usize, Vec<(usize, Outcome)>>,
    scores: Vec<TrialScore>,
    problems: Vec<String>,
    /// Each trial id and the last line it was on (hashed with a random key: the ids are the
    /// file's, which may be made to collide under a fixed one).
    seen: std::collections::HashMap<String, usize>,
}

impl Gathered {
    fn take(&mut self, file: &str, (n, outcomes, read): Outcomes) {
        if let Some(bytes) = self.bytes.take()
            && read > 0
        {
            // Room that cannot be had (a limit on address space) is not needed: the vector
            // grows as it must.
            let _ = self.scores.try_reserve(expected_lines(bytes, outcomes.len(), read));
        }
        self.waiting.insert(n, outcomes);
        while let Some(outcomes) = self.waiting.remove(&self.next) {
            self.next += 1;
            for (line, r) in outcomes {
                match r {
                    Ok((trial, score)) => {
                        match self.seen.entry(trial) {
                            Entry::Occupied(mut e) => {
                                let before = e.insert(line);
                                self.problems
                                    .push(format!("{file}:{line}:trial_id: {:?} repeats line {before}", e.key()));
                            }
                            Entry::Vacant(e) => {
                                e.insert(line);
                            }
                        }
                        self.scores.push(score);
                    }
                    Err(p) => self.problems.extend(p),
                }
            }
        }
    }
}

/// Most scores [`Gathered`] makes room for from an estimate (256 MiB of them), whatever the
/// file's size: past that the vector grows as it must.
const EXPECT_AT_MOST: usize = (256 << 20) / std::mem::size_of::<TrialScore>();

/// How many lines a file of `bytes` is likely to hold, from a chunk of `lines` lines that
/// took `read` bytes (a tenth more, for lines longer than the chunk's).
fn expected_lines(bytes: u64, lines: usize, read: usize) -> usize {
    let per_line = (read / lines.max(1)).max(1) as u64;
    let expected = bytes / per_line;
    usize::try_from(expected.saturating_add(expected / 10)).unwrap_or(usize::MAX).min(EXPECT_AT_MOST)
}

/// Scores every line of `reader` (a trajectory file named `file`) against `world`'s tasks
/// (named `tasks` in messages; `bytes`: its size, when known) with the rule-based judges,
/// on every core, each score's detail handled as `keep` says. Returns the scores in line
/// order, or every problem found (schema, unknown task, repeated trial id), each naming
/// file, line and field.
pub fn stream_scores<R: BufRead>(
    (file, bytes): (&str, Option<u64>),
    reader: R,
    world: &World,
    tasks: &str,
    keep: Keep<'_>,
) -> anyhow::Result<Result<Vec<TrialScore>, Vec<String>>> {
    let scorer = Scorer::new(world);
    let workers = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let (tx, rx) = mpsc::sync_channel::<Chunk>(workers * 2);
    // The workers own the receiver: when the last one has stopped, for whatever reason, the
    // reader's next send fails instead of waiting for ever.
    let rx = Arc::new(Mutex::new(rx));
    let (done_tx, done_rx) = mpsc::channel::<Outcomes>();
    // Chunks the workers are done with, back to the reader to be filled again.
    let (free_tx, free_rx) = mpsc::channel::<Chunk>();
    let (read, worked, gathered) = std::thread::scope(|scope| {
        let gatherer = scope.spawn(move || {
            let mut gathered = Gathered { bytes, ..Gathered::default() };
            for outcomes in done_rx {
                gathered.take(file, outcomes);
            }
            gathered
        });
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let (rx, scorer, done, free) = (rx.clone(), &scorer, done_tx.clone(), free_tx.clone());
                scope.spawn(move || -> anyhow::Result<()> {
                    let mut failed = None;
                    loop {
                        let chunk = match rx.lock() {
                            Ok(r) => r.recv(),
                            Err(_) => break,
                        };
                        let Ok(chunk) = chunk else { break };
                        // After a failure the chunks are still taken, so the reader never waits.
                        if failed.is_some() {
                            continue;
                        }
                        let score = |&(no, ref at): &(usize, Range<usize>)| {
                            // The reader checked each line; a line that is no text is a bug.
                            let line = std::str::from_utf8(&chunk.text[at.clone()])
                                .map_err(|e| anyhow::anyhow!("{file}:{no}: not UTF-8 after reading: {e}"))?;
                            Ok((no, score_line(file, no, line, scorer, tasks, keep)?))
                        };
                        let mut scored = Vec::with_capacity(chunk.lines.len());
                        match chunk.lines.iter().try_for_each(|l| score(l).map(|s| scored.push(s))) {
                            Ok(()) => {
                                let read = chunk.text.len();
                                done.send((chunk.n, scored, read))
                                    .map_err(|_| anyhow::anyhow!("the gatherer stopped"))?
                            }
                            Err(e) => failed = Some(e),
                        }
                        // A buffer a line of a gigabyte grew is let go, not handed round.
                        if chunk.text.capacity() <= CHUNK_BYTES_MAX {
                            free.send(chunk).ok();
                        }
                    }
                    failed.map_or(Ok(()), Err)
                })
            })
            .collect();
        drop(done_tx);
        drop(rx);
        drop(free_tx);
        let read = send_chunks(file, reader, (&tx, &free_rx));
        drop(tx);
        let worked: anyhow::Result<()> = handles
            .into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a scoring worker panicked"))));
        let gathered = gatherer.join().map_err(|_| anyhow::anyhow!("the gatherer panicked"));
        (read, worked, gathered)
    });
    read?;
    worked?;
    let gathered = gathered?;
    Ok(if gathered.problems.is_empty() { Ok(gathered.scores) } else { Err(gathered.problems) })
}

/// Bytes of a chunk's buffer to start with; later chunks start at the size of the chunk
/// before them, up to [`CHUNK_BYTES_MAX`] (a chunk that held a line of a gigabyte does not
/// make the next one reserve as much, nor is its buffer handed round).
const CHUNK_BYTES: usize = 1 << 20;
const CHUNK_BYTES_MAX: usize = 16 << 20;

/// Reads `reader`'s non-blank lines into numbered chunks for the workers. Lines end as
/// [`BufRead::lines`] ends them (at `\n`, a `\r` before it dropped), and a line that is not
/// UTF-8 is an error naming it. Chunks are filled in the buffers of those handed back on
/// `free` where there are any.
fn send_chunks<R: BufRead>(
    file: &str,
    mut reader: R,
    (tx, free): (&mpsc::SyncSender<Chunk>, &mpsc::Receiver<Chunk>),
) -> anyhow::Result<()> {
    let mut chunk = Chunk::new(0, CHUNK_BYTES);
    let mut no = 0;
    loop {
        let start = chunk.text.len();
        let read = reader.read_until(b'\n', &mut chunk.text).map_err(|e| anyhow::anyhow!("{file}:{}: {e}", no + 1))?;
        if read == 0 {
            break;
        }
        no += 1;
        let mut end = chunk.text.len();
        if chunk.text[start..end].ends_with(b"\n") {
            end -= 1;
            if chunk.text[start..end].ends_with(b"\r") {
                end -= 1;
            }
        }
        let line = std::str::from_utf8(&chunk.text[start..end])
            .map_err(|_| anyhow::anyhow!("{file}:{no}: stream did not contain valid UTF-8"))?;
        if line.trim().is_empty() {
            chunk.text.truncate(start);
            continue;
        }
        chunk.text.truncate(end);
        chunk.lines.push((no, start..end));
        if chunk.lines.len() == CHUNK {
            let next = Chunk::next(chunk.n + 1, chunk.text.len().min(CHUNK_BYTES_MAX), free);
            tx.send(std::mem::replace(&mut chunk, next)).map_err(|_| anyhow::anyhow!("a scoring worker stopped"))?;
        }
    }
    if !chunk.lines.is_empty() {
        tx.send(chunk).map_err(|_| anyhow::anyhow!("a scoring worker stopped"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quick_checks_use_the_schemas_own_enums() {
        let schema: Value = serde_json::from_str(super::super::TRAJECTORY_SCHEMA).expect("schema");
        let list = |v: &Value| -> Vec<String> {
            v.as_array().expect("an enum").iter().map(|x| x.as_str().expect("a string").to_string()).collect()
        };
        let p = &schema["properties"];
        let names = |all: &[&'static str]| all.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(list(&p["level"]["enum"]), names(&vocab::Level::ALL.iter().map(|l| l.as_str()).collect::<Vec<_>>()));
        assert_eq!(
            list(&p["condition"]["enum"]),
            names(&vocab::Condition::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>())
        );
        assert_eq!(list(&p["status"]["enum"]), STATUSES);
        assert_eq!(list(&p["steps"]["items"]["properties"]["action"]["properties"]["type"]["enum"]), ACTION_TYPES);
    }

    /// The chunks' lines, as text with their numbers, and what the reader said.
    fn chunked(bytes: &[u8]) -> (Vec<(usize, String)>, anyhow::Result<()>) {
        let (tx, rx) = mpsc::sync_channel::<Chunk>(1 << 16);
        // Buffers handed back dirty, as a worker leaves them, are filled afresh.
        let (free_tx, free) = mpsc::channel::<Chunk>();
        for n in [7, 8] {
            let mut dirty = Chunk::new(n, 3);
            dirty.text.extend_from_slice(b"left over\nfrom a chunk before");
            dirty.lines.extend([(1, 0..9), (2, 10..14)]);
            free_tx.send(dirty).expect("free");
        }
        let read = send_chunks("t.jsonl", std::io::BufReader::with_capacity(7, bytes), (&tx, &free));
        drop(tx);
        let mut out = Vec::new();
        for (k, chunk) in rx.into_iter().enumerate() {
            assert_eq!(chunk.n, k);
            for (no, at) in chunk.lines {
                out.push((no, String::from_utf8(chunk.text[at].to_vec()).expect("text")));
            }
        }
        (out, read)
    }

    #[test]
    fn chunks_hold_the_lines_that_reading_line_by_line_gives() {
        let long = "x".repeat(5_000);
        let mut text = String::new();
        for i in 0..(2 * CHUNK + 9) {
            let line = match i % 6 {
                0 => format!("{{\"n\":{i}}}\r\n"),
                1 => "   \n".to_string(),
                2 => format!("{long}{i}\n"),
                3 => "\r\n".to_string(),
                4 => format!("é{i}\r\r\n"),
                _ => format!("{i}\n"),
            };
            text.push_str(&line);
        }
        text.push_str("last\r");
        let expected: Vec<(usize, String)> = std::io::BufRead::lines(text.as_bytes())
            .enumerate()
            .map(|(i, l)| (i + 1, l.expect("line")))
            .filter(|(_, l)| !l.trim().is_empty())
            .collect();
        let (lines, read) = chunked(text.as_bytes());
        read.expect("read");
        assert_eq!(lines, expected);

        let mut bad = b"{}\n{}\n".to_vec();
        bad.extend_from_slice(b"{\"a\":\"\xff\"}\n{}\n");
        let (lines, read) = chunked(&bad);
        assert_eq!(read.expect_err("not UTF-8").to_string(), "t.jsonl:3: stream did not contain valid UTF-8");
        assert!(lines.iter().all(|(no, _)| *no < 3), "{lines:?}");
    }

    #[test]
    fn a_bad_line_is_reported_as_the_schema_reports_it_and_good_lines_are_scored() {
        let world = World::build(crate::corpus::generate::corpus()).expect("world");
        let good = r#"{"trial_id":"a","task_id":"shop-example-01","steps":[{"url":"/shop/admin/sales/order/view/order_id/1094","action":{"type":"verdict","verdict":"APPROVE"}}],"verdict":{"action":"APPROVE"}}"#;
        let bad_level = good.replace(r#""trial_id":"a""#, r#""trial_id":"b","level":"L9""#);
        let bad_action =
            good.replace(r#""trial_id":"a""#, r#""trial_id":"c""#).replace(r#""type":"verdict""#, r#""type":"jump""#);
        let error_without_reason = good.replace(r#""trial_id":"a""#, r#""trial_id":"d","status":"error""#);
        let unknown = good.replace(r#""trial_id":"a""#, r#""trial_id":"e""#).replace("shop-example-01", "nope");
        let text = [good, &bad_level, &bad_action, &error_without_reason, good, &unknown, "{oops"].join("\n");
        let problems =
            stream_scores(("t.jsonl", None), std::io::Cursor::new(text.clone()), &world, "the corpus", Keep::All)
                .expect("read")
                .expect_err("problems");
        // The schema's own messages for lines 2–4 and 7, as the whole-file reader gives them.
        let whole: Vec<String> = match super::super::read_trajectories("t.jsonl", &text) {
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
            Ok(_) => panic!("the file has schema errors"),
        };
        for w in &whole {
            assert!(problems.contains(w), "{w} missing from {problems:?}");
        }
        assert!(problems.iter().any(|p| p.starts_with("t.jsonl:5:trial_id: \"a\" repeats line 1")), "{problems:?}");
        assert!(problems.iter().any(|p| p.starts_with("t.jsonl:6:task_id: task \"nope\"")), "{problems:?}");
        let ok =
            stream_scores(("t.jsonl", None), std::io::Cursor::new(good.to_string()), &world, "the corpus", Keep::All)
                .expect("read")
                .expect("scored");
        assert_eq!(ok.len(), 1);
        assert_eq!(ok[0].acc_dec.as_ref().map(|d| d.default), Some(1.0));
    }

    #[test]
    fn room_is_made_for_the_lines_a_file_of_its_size_holds_within_a_bound() {
        assert_eq!(expected_lines(10_000, 10, 1_000), 110, "100 lines of 100 bytes, and a tenth more");
        assert_eq!(expected_lines(0, 10, 1_000), 0);
        assert_eq!(expected_lines(u64::MAX, 1_000, 1), EXPECT_AT_MOST, "a chunk of tiny lines in a huge file");
        const { assert!(EXPECT_AT_MOST > 10_000) };
    }
}
