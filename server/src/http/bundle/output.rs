//! Where a copy is written: the checks on its folder or archive name, the staging folder
//! it is filled in, and the archive a `.zip` name asks for.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::safe;

/// Refuses an output folder that exists and holds anything, or an archive that exists
/// (`mirage runs bundle` asks before it scores the run, so a mistyped name is named at once).
pub fn check_out(out: &Path) -> anyhow::Result<()> {
    // `DIR/.` and `..` name a folder by a path it cannot be moved to: ask for its name.
    let last = out.to_string_lossy().trim_end_matches(['/', '\\']).rsplit(['/', '\\']).next().map(str::to_string);
    if matches!(last.as_deref(), Some("." | ".." | "") | None) {
        bail!("{} names no folder of its own: give the copy's folder by name (nothing was written)", out.display());
    }
    if is_zip(out) && out.exists() {
        bail!("{} exists: choose a new name (nothing was written)", out.display());
    }
    if out.exists() && std::fs::read_dir(out).with_context(|| format!("reading {}", out.display()))?.next().is_some() {
        bail!("{} exists and is not empty: choose a new folder (nothing was written)", out.display());
    }
    Ok(())
}

/// Whether the copy is to be one archive: its name ends in `.zip`.
pub fn is_zip(out: &Path) -> bool {
    out.extension().is_some_and(|e| e.eq_ignore_ascii_case("zip"))
}

/// The folder an archive's files sit under: the archive's name without `.zip`, made of
/// safe characters (`bundle` when nothing is left of it).
pub fn archive_folder(out: &Path) -> String {
    let stem = out.file_stem().and_then(|s| s.to_str()).map(safe).unwrap_or_default();
    if stem.is_empty() { "bundle".to_string() } else { stem }
}

/// Archives the folder `dir` as `out` (deflated, each file under a folder named like the
/// archive), written beside it first and renamed into place. Returns the archive's size.
pub(super) fn archive(dir: &Path, out: &Path) -> anyhow::Result<u64> {
    use std::io::Write;
    let stem = archive_folder(out);
    let partial = out.with_extension(format!("zip.partial-{:08x}", rand::random::<u32>()));
    let written: anyhow::Result<()> = (|| {
        let file = std::fs::File::create(&partial).with_context(|| format!("creating {}", partial.display()))?;
        let mut zip = zip::ZipWriter::new(std::io::BufWriter::new(file));
        let now = chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now()).naive_utc();
        let stamp = {
            use chrono::{Datelike, Timelike};
            let small = |n: u32| u8::try_from(n).unwrap_or(0);
            zip::DateTime::from_date_and_time(
                u16::try_from(now.year()).unwrap_or(1980),
                small(now.month()),
                small(now.day()),
                small(now.hour()),
                small(now.minute()),
                small(now.second()),
            )
            .unwrap_or_default()
        };
        let deflate = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .last_modified_time(stamp);
        for path in files_under(dir)? {
            let inside = path.strip_prefix(dir).context("a file outside the copy")?;
            let name = format!("{stem}/{}", inside.to_string_lossy().replace('\\', "/"));
            zip.start_file(name, deflate)?;
            zip.write_all(&std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?)?;
        }
        zip.finish()?.flush()?;
        Ok(())
    })();
    if let Err(e) = written.and_then(|()| {
        std::fs::rename(&partial, out).with_context(|| format!("moving {} to {}", partial.display(), out.display()))
    }) {
        let _ = std::fs::remove_file(&partial);
        return Err(e.context(format!("writing the archive {}", out.display())));
    }
    Ok(std::fs::metadata(out).with_context(|| format!("reading {}", out.display()))?.len())
}

/// The files under `dir`, at any depth, in name order.
fn files_under(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading {}", dir.display()))?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            files.extend(files_under(&path)?);
        } else {
            files.push(path);
        }
    }
    Ok(files)
}

/// A fresh folder beside `out` to write into.
pub(super) fn staging_dir(out: &Path) -> anyhow::Result<PathBuf> {
    let name = out.file_name().and_then(|n| n.to_str()).unwrap_or("bundle");
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let staging = parent.join(format!(".{name}.partial-{:08x}", rand::random::<u32>()));
    std::fs::create_dir(&staging).with_context(|| format!("creating {}", staging.display()))?;
    Ok(staging)
}

/// Writes `file` (a path inside the copy) under `dir`, making its folder.
pub(super) fn write_file(dir: &Path, file: &str, bytes: &[u8]) -> anyhow::Result<()> {
    let path = dir.join(file);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))
}
