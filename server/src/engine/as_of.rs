//! `as_of=`: the point in the label history a figure page shows (see `vocab::AsOf`).

use vocab::RunId;

use super::{EngineError, fail};
use crate::db::Store;

/// What a run's cached scores depend on: (finished trials, the label generation read,
/// whether a URL pinned that generation). Pinned figures have cache slots of their own, so
/// a frozen link does not push the current figures out.
pub type Fingerprint = (i64, i64, bool);

/// An `as_of=` value: a label generation (a whole number) or a time (RFC 3339, or the
/// `YYYY-MM-DD HH:MM:SS UTC` the pages print), as a generation or the time in ms.
pub fn parse(value: &str) -> Result<Result<i64, i64>, EngineError> {
    let v = value.trim();
    if let Ok(g) = v.parse::<i64>() {
        return if g >= 0 { Ok(Ok(g)) } else { Err(invalid(v)) };
    }
    let time = chrono::DateTime::parse_from_rfc3339(v).map(|t| t.with_timezone(&chrono::Utc)).or_else(|_| {
        chrono::NaiveDateTime::parse_from_str(v.trim_end_matches(" UTC"), "%Y-%m-%d %H:%M:%S").map(|t| t.and_utc())
    });
    // A time given to the second means the whole of that second: labels are recorded in ms,
    // and the time a page prints for a label is cut to its second.
    time.map(|t| Err(t.timestamp_millis() + if t.timestamp_subsec_millis() == 0 { 999 } else { 0 }))
        .map_err(|_| invalid(v))
}

fn invalid(v: &str) -> EngineError {
    EngineError::Invalid {
        field: "as_of".into(),
        message: format!(
            "{:?} is neither a label generation (a whole number) nor a time such as 2026-12-05T10:21:00Z",
            v.chars().take(100).collect::<String>()
        ),
    }
}

/// What a page says of the point its figures stand at: the generation and when it was
/// recorded, whether the URL pinned it, how many of people's labels on these runs came
/// later, and whether one of the runs is still under way.
pub async fn view(store: &dyn Store, runs: &[&RunId], key: Fingerprint) -> Result<vocab::AsOf, EngineError> {
    let mut view = vocab::AsOf {
        generation: key.1,
        at: store.label_event_time(key.1).await.map_err(fail)?,
        pinned: key.2,
        ..vocab::AsOf::default()
    };
    for run in runs {
        if key.2 {
            let events = store.people_label_events(run).await.map_err(fail)?;
            view.newer += events.iter().filter(|e| e.event_id > key.1).count();
        }
        let status = store.run(run).await.map_err(fail)?.status;
        view.run_active |= status == crate::db::RunStatus::Active;
    }
    Ok(view)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generation_or_a_time_is_read_and_anything_else_names_the_field() {
        assert_eq!(parse("42"), Ok(Ok(42)));
        assert_eq!(parse(" 0 "), Ok(Ok(0)));
        let ms = 1_764_930_060_999; // the whole of 2025-12-05 10:21:00 UTC
        assert_eq!(parse("2025-12-05T10:21:00Z"), Ok(Err(ms)));
        assert_eq!(parse("2025-12-05T11:21:00+01:00"), Ok(Err(ms)));
        assert_eq!(parse("2025-12-05 10:21:00 UTC"), Ok(Err(ms)));
        assert_eq!(parse("2025-12-05T10:21:00.250Z"), Ok(Err(ms - 749)), "to the ms when given so");
        for bad in ["-1", "yesterday", "2025-12-05", "4.5"] {
            assert!(matches!(parse(bad), Err(EngineError::Invalid { ref field, .. }) if field == "as_of"), "{bad}");
        }
    }
}
