//! The history of an `--out` (issue 39), in one module: the names of its files, its part of
//! `run.json` (here; what the report reads), and its reading before a run and writing at the
//! commit ([`writer`]), with its errors ([`HistoryError`]). How one run's episodes are matched
//! to the previous run's is a part of its own, [`crate::lineage`] (the episodes' carry and the
//! import read it too); the engine (`epimine_engines::run`) calls [`writer`] and nothing else
//! of it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::storage::StorageError;

use crate::tables::{Development, Lineage, Table};

pub mod writer;

/// Why the history of an `--out` cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The history in `--out` cannot be used (a head or state that does not parse, a missing
    /// head beside committed runs).
    #[error("--out {location}: {reason}")]
    Out {
        /// The object.
        location: String,
        /// Why.
        reason: String,
    },
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A commit record cannot be read.
    #[error(transparent)]
    Version(#[from] super::versions::VersionError),
}

/// The folder of the per-run history files.
pub const HISTORY_DIR: &str = "history";

/// The folder of the ids handed on from run to run.
pub const STATE_DIR: &str = "_identity";

/// The object naming the last run whose history is committed.
pub const HEAD: &str = "_identity/head.json";

/// The history part of `run.json`.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryReport {
    /// This run's number in this `--out`.
    pub run: u32,
    /// Its time (RFC 3339, UTC): `--run-time`, else when it committed.
    pub run_time: String,
    /// The same, ms since 1970.
    pub run_time_ms: i64,
    /// The previous run whose episodes this one's were matched to, and its time.
    pub previous_run: Option<u32>,
    /// Its time.
    pub previous_run_time: Option<String>,
    /// This run's history file.
    pub file: String,
    /// Rows of `lineage` by status (`new`, `continued`, `grown`, `split`, `merged`, `ended`).
    pub statuses: BTreeMap<String, usize>,
    /// The previous run's episodes (trial 0) that ended or merged into another in this run, so
    /// that none vanishes without a word.
    #[serde(default)]
    pub ended: Vec<EndedEpisode>,
    /// What happened in this run (`developments.parquet`'s rows, trial 0): each episode new,
    /// grown with today's articles, split, merged or ended, with today's article count.
    #[serde(default)]
    pub developments: Vec<Development>,
}

/// An episode of the previous run that this run does not go on with (`lineage`'s `ended` or
/// `merged` row).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EndedEpisode {
    /// Its key event.
    pub key_event: String,
    /// Its id across runs.
    pub stable_id: u32,
    /// Its title in the previous run.
    pub title: String,
    /// Its segments in the previous run.
    pub previous_segments: u32,
    /// `merged`: the episode it went into; `None` when it ended.
    pub into_id: Option<u32>,
}

/// `ms` since 1970 as RFC 3339, UTC.
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_else(|| ms.to_string())
}

/// Now, ms since 1970.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Whether `name` is a file of the history a run writes in `--out`.
pub fn is_history(name: &str) -> bool {
    name == Lineage::file_name()
        || name == Development::file_name()
        || name.starts_with(&format!("{HISTORY_DIR}/"))
        || name.starts_with(&format!("{STATE_DIR}/"))
}
