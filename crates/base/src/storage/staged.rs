//! Files object_store stages on a local disk before renaming them into place (`name#N`), and
//! the clean-up of those a killed writer left.

use super::{lock, Location};

/// Whether `name` is a file object_store stages on a local disk before renaming it into place
/// (`episodes.parquet#0`): one left by a process killed while it wrote (SIGKILL, a lost node).
pub fn is_staged(name: &str) -> bool {
    name.rsplit_once('#').is_some_and(|(head, n)| {
        !head.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// How old a staged file must be to be taken for a killed writer's: a live one (a lock being
/// taken, a probe, another process's start) lives milliseconds.
pub const STAGED_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// Deletes the staged files ([`is_staged`]) that a killed writer left in `location` (below it
/// too, but not in `_lock/`, where runs racing for the lock stage theirs), untouched for
/// [`STAGED_AGE`]; returns how many. Only on a local disk: object_store's listing leaves them
/// out, and on S3 an upload never finished is never an object. Call it while holding the lock.
pub fn delete_staged(location: &Location) -> std::io::Result<usize> {
    fn walk(dir: &std::path::Path, deleted: &mut usize) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if kind.is_dir() && name != lock::LOCK_DIR {
                walk(&entry.path(), deleted)?;
            } else if kind.is_file() && is_staged(&name) {
                let old = entry
                    .metadata()?
                    .modified()?
                    .elapsed()
                    .is_ok_and(|age| age >= STAGED_AGE);
                if old {
                    std::fs::remove_file(entry.path())?;
                    *deleted += 1;
                }
            }
        }
        Ok(())
    }
    let mut deleted = 0;
    if let Some(dir) = location.local_path().filter(|d| d.is_dir()) {
        walk(&dir, &mut deleted)?;
    }
    Ok(deleted)
}
