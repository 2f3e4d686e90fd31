//! The commit of a run's `--out`: checked before any work (a probe object written and removed;
//! files of no run of ours refused unless `--overwrite`), and committed last: `run.json` of an
//! earlier finished run is removed only then (a run that fails or is killed before leaves it
//! whole), the final tables are streamed from the checkpoints to their names, then `run.json`,
//! which lists every file with its sha256 and row count, is written. A reader ([`verify`],
//! `epimine eval`) trusts an `--out` only when `run.json` is there and every file it lists
//! matches.

use super::manifest::TableEntry;
use super::LOCK_DIR;
use crate::digest::sha256_hex;
use crate::storage::{Location, StorageError};
use crate::tables::{Assignment, Episode, EpisodeArticle, FragmentRow, LeftOut, Pair, Table, Term};

/// The file that marks a committed run.
pub const MANIFEST: &str = "run.json";

/// The resolved job, next to the outputs.
pub const JOB_FILE: &str = "job.toml";

const PROBE_PREFIX: &str = ".epimine-probe-";

/// Why an `--out` cannot be read as one whole run.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// Reading failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The run never committed.
    #[error("{0}: no run.json, so this is not a finished run (it was interrupted, is still running, or failed); run `epimine run` again to finish it")]
    Uncommitted(String),
    /// `run.json` is not one of ours, or of an older format.
    #[error("{location}: {reason}; run `epimine run` again to rewrite it")]
    Unreadable {
        /// `run.json`.
        location: String,
        /// What is wrong.
        reason: String,
    },
    /// A file does not match `run.json`.
    #[error("{location} does not match run.json ({reason}): the folder mixes files of different runs; run `epimine run` again (a run stopped while publishing its committed version is finished first; each kept version is whole in _versions/, named in _commits/)")]
    Mismatch {
        /// The file.
        location: String,
        /// What differs.
        reason: String,
    },
}

/// The file names a run of ours writes in `--out` (anything under `_checkpoints/` too).
pub fn is_ours(name: &str) -> bool {
    let tables = [
        Episode::file_name(),
        Assignment::file_name(),
        FragmentRow::file_name(),
        Term::file_name(),
        Pair::file_name(),
        EpisodeArticle::file_name(),
        LeftOut::file_name(),
    ];
    name == MANIFEST
        || name == JOB_FILE
        || tables.iter().any(|t| t == name)
        || name.starts_with(&format!("{}/", super::checkpoint::DIR))
        || name.starts_with(&format!("{}/", LOCK_DIR))
        || name.starts_with(&format!("{}/", super::versions::VERSIONS_DIR))
        || name.starts_with(&format!("{}/", super::versions::COMMITS_DIR))
        || name.starts_with(PROBE_PREFIX)
        || super::history::is_history(name)
}

/// The folders a run writes in `--out` besides its top.
const FOLDERS: [&str; 5] = [
    super::checkpoint::DIR,
    super::versions::VERSIONS_DIR,
    super::versions::COMMITS_DIR,
    super::history::HISTORY_DIR,
    super::history::STATE_DIR,
];

/// Checks before any work that `--out` and every folder a run writes there can be written (a
/// probe object written and deleted in each; on a local disk only in the folders already
/// there, as a missing one is made in the top) and that it holds no files of anything but a
/// run of ours (unless `overwrite`).
pub async fn check_out(out: &Location, process: usize, overwrite: bool) -> Result<(), String> {
    let probe = format!("{PROBE_PREFIX}{process}");
    let local = out.local_path();
    for folder in std::iter::once("").chain(FOLDERS) {
        if let Some(dir) = &local {
            let path = dir.join(folder);
            if !folder.is_empty() && path.exists() && !path.is_dir() {
                return Err(format!(
                    "{} is not a folder: a run writes its {folder}/ there; move it away",
                    path.display()
                ));
            }
            if !folder.is_empty() && !path.is_dir() {
                continue;
            }
        }
        let name = if folder.is_empty() {
            probe.clone()
        } else {
            format!("{folder}/{probe}")
        };
        let shown = if folder.is_empty() {
            String::new()
        } else {
            format!(" (its folder {folder}/)")
        };
        out.put(&name, bytes::Bytes::from_static(b"probe"))
            .await
            .map_err(|e| format!("cannot write there{shown}: {e}"))?;
        out.delete(&name)
            .await
            .map_err(|e| format!("cannot delete there{shown}: {e}"))?;
    }
    if overwrite {
        return Ok(());
    }
    let names = out
        .list()
        .await
        .map_err(|e| format!("cannot list it: {e}"))?;
    let foreign: Vec<&String> = names.iter().filter(|n| !is_ours(n)).collect();
    if let Some(first) = foreign.first() {
        return Err(format!(
            "it holds {} file(s) that no epimine run wrote (e.g. `{first}`); choose another --out, or pass --overwrite to write there anyway",
            foreign.len()
        ));
    }
    Ok(())
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// A committed run: every file `run.json` lists matches.
    Committed(Vec<TableEntry>),
    /// No `run.json`, and nothing else of `epimine run` either (no `job.toml`, no checkpoints):
    /// tables written by another command, e.g. `epimine baseline kmeans`.
    NotARun,
}

/// Checks that `run` holds one whole committed run: `run.json` there, of this format, and every
/// file it lists present with its sha256.
pub async fn verify(run: &Location) -> Result<Verified, CommitError> {
    if !run.exists(MANIFEST).await? {
        let names = run.list().await?;
        let started = names
            .iter()
            .any(|n| n == JOB_FILE || n.starts_with(&format!("{}/", super::checkpoint::DIR)));
        if started {
            return Err(CommitError::Uncommitted(run.display().to_string()));
        }
        return Ok(Verified::NotARun);
    }
    let location = run.display_child(MANIFEST);
    let unreadable = |reason: String| CommitError::Unreadable {
        location: location.clone(),
        reason,
    };
    let json: serde_json::Value = serde_json::from_slice(&run.get(MANIFEST).await?)
        .map_err(|e| unreadable(format!("not JSON: {e}")))?;
    match json.get("format").and_then(|f| f.as_u64()) {
        Some(f) if f == u64::from(super::checkpoint::FORMAT) => {}
        Some(f) => {
            return Err(unreadable(format!(
                "output format {f}, this epimine reads {}",
                super::checkpoint::FORMAT
            )))
        }
        None => {
            return Err(unreadable(
                "written by an older epimine (no format, no list of tables)".into(),
            ))
        }
    }
    let tables: Vec<TableEntry> = json
        .get("tables")
        .cloned()
        .ok_or_else(|| unreadable("no list of tables".into()))
        .and_then(|t| serde_json::from_value(t).map_err(|e| unreadable(e.to_string())))?;
    for t in &tables {
        let file = run.display_child(&t.name);
        let mismatch = |reason: String| CommitError::Mismatch {
            location: file.clone(),
            reason,
        };
        if !run.exists(&t.name).await? {
            return Err(mismatch("missing".into()));
        }
        let bytes = run.get(&t.name).await?;
        if bytes.len() as u64 != t.bytes {
            return Err(mismatch(format!(
                "{} bytes, run.json says {}",
                bytes.len(),
                t.bytes
            )));
        }
        if sha256_hex(&bytes) != t.sha256 {
            return Err(mismatch("another sha256".into()));
        }
    }
    Ok(Verified::Committed(tables))
}
