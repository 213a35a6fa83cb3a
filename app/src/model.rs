//! Wire types shared by the browser and the server: Mirage's vocabulary (the `vocab`
//! crate, re-exported whole), and the checks a page makes before it sends.

pub use vocab::*;

use crate::error::AppError;

/// `Invalid` naming the note when it is longer than [`MAX_NOTE_CHARS`].
pub fn check_note(note: &str) -> Result<(), AppError> {
    let n = note.chars().count();
    if n > MAX_NOTE_CHARS {
        return Err(AppError::Invalid {
            field: "note".into(),
            message: format!("{n} characters; a note holds at most {MAX_NOTE_CHARS}"),
        });
    }
    Ok(())
}
