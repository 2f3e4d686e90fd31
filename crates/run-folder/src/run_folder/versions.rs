//! Snapshot commits of a run folder (issue 64; after Delta Lake's and Iceberg's commit logs).
//!
//! A run writes everything it commits — the final tables, the history's state files,
//! `job.toml` and `run.json` — into a folder of its own, `_versions/<run>-<pid>-<ms>/`, while the
//! previous run's files stay untouched where readers open them. Then, in one atomic step, it
//! *switches*: it writes `_commits/<run>.json` ([`Record`]) with a create-only write (a hard link
//! on a local disk, a conditional put `If-None-Match: *` on S3). The number is the previous
//! committed run's plus one, read when the run took the folder's lock, so of two runs that
//! both think they follow run 4 — one stalled past its lock's expiry (SIGSTOP, a frozen VM)
//! while another took the folder over — exactly one commits run 5; the other exits non-zero
//! naming the winner, and replaces nothing (the fence at the switch).
//!
//! After the switch the version is *published*: each of its files copied to the name the README
//! gives (on a local disk a hard link renamed into place: no bytes copied, each file replaced
//! whole), `run.json` last, then the history's file and head. A run stopped between the switch
//! and the end of its publication is finished by the next run before any work
//! (`history::writer::previous`); a run that resumes its publication after a newer run
//! committed publishes the newest version again at its end, so the folder's top level always
//! ends as the newest commit's. Nothing at the top level is touched before the switch: a run
//! that fails or is killed before it (disk full, a folder it may not write) leaves the last good
//! result whole.
//!
//! The newest `keep_versions` committed versions are kept and can be read as runs of their own
//! (`epimine report --run <out>/_versions/<folder>`: each holds its `run.json`); older ones, and
//! the folders of runs that lost a switch, are removed after the switch. `_commits/` keeps every
//! record (a few hundred bytes each): the folder's log of commits.

use serde::{Deserialize, Serialize};

use crate::storage::{Location, StorageError};

/// The folder of the committed (and staged) versions.
pub const VERSIONS_DIR: &str = "_versions";

/// The folder of the commit records.
pub const COMMITS_DIR: &str = "_commits";

/// Why a version cannot be committed or read.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Another run committed this run's number first.
    #[error("--out {location}: another run committed run {run} first ({by}) while this one worked: this run's tables were not made current (the newer result is kept)")]
    Fenced {
        /// The record.
        location: String,
        /// The run number.
        run: u32,
        /// Who committed it.
        by: String,
    },
    /// A record that does not parse.
    #[error("--out {location}: not a commit record ({reason}); it was not written by epimine, or was damaged: restore it from a copy, or delete it and the folder it names")]
    Unreadable {
        /// The record.
        location: String,
        /// Why.
        reason: String,
    },
}

/// `_commits/<run>.json`: one committed version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The run's number in the folder's history.
    pub run: u32,
    /// The run's time, ms since 1970 UTC.
    pub run_time_ms: i64,
    /// The version's folder, relative to `--out`.
    pub folder: String,
    /// Its files (relative to the folder and to `--out`), in the order they are published:
    /// `run.json` last.
    pub files: Vec<String>,
    /// Who committed it (command, host, pid, start).
    pub holder: String,
    /// When (UTC, RFC 3339).
    pub committed: String,
}

/// The record of run `run`.
pub fn record_name(run: u32) -> String {
    format!("{COMMITS_DIR}/{run:06}.json")
}

/// A new version folder for run `run`, unique to this process and moment.
pub fn new_folder(run: u32) -> String {
    format!(
        "{VERSIONS_DIR}/{run:06}-{}-{}",
        std::process::id(),
        super::history::now_ms()
    )
}

/// The run number a record's or a version folder's name starts with.
fn number(name: &str) -> Option<u32> {
    name.get(..6)?.parse().ok()
}

/// The committed records' run numbers, ascending.
async fn committed_runs(out: &Location) -> Result<Vec<u32>, StorageError> {
    let mut runs: Vec<u32> = out
        .list_folder(COMMITS_DIR)
        .await?
        .into_iter()
        .filter_map(|(name, _, _)| {
            let file = name.strip_prefix(&format!("{COMMITS_DIR}/"))?;
            file.strip_suffix(".json")
                .filter(|f| f.len() == 6)
                .and_then(number)
        })
        .collect();
    runs.sort_unstable();
    Ok(runs)
}

/// Reads the record of run `run`.
pub async fn read(out: &Location, run: u32) -> Result<Record, VersionError> {
    let name = record_name(run);
    serde_json::from_slice(&out.get(&name).await?).map_err(|e| VersionError::Unreadable {
        location: out.display_child(&name),
        reason: e.to_string(),
    })
}

/// The newest committed version's record, if any.
pub async fn latest(out: &Location) -> Result<Option<Record>, VersionError> {
    match committed_runs(out).await?.last() {
        Some(&run) => Ok(Some(read(out, run).await?)),
        None => Ok(None),
    }
}

/// The switch: makes `record` the newest commit, only where no run committed its number
/// before ([`VersionError::Fenced`] naming the one that did).
pub async fn switch(out: &Location, record: &Record) -> Result<(), VersionError> {
    let name = record_name(record.run);
    let json = serde_json::to_vec_pretty(record).expect("records serialize");
    if out.put_new(&name, json.into()).await? {
        return Ok(());
    }
    let by = read(out, record.run)
        .await
        .map_or_else(|_| "another run".to_string(), |r| r.holder);
    Err(VersionError::Fenced {
        location: out.display_child(&name),
        run: record.run,
        by,
    })
}

/// Copies each file of `record`'s version to its name at the top of `out`, `run.json` last
/// (test hook: `EPIMINE_FAULT=publish:n` stops after the n-th).
pub async fn publish(out: &Location, record: &Record) -> Result<(), StorageError> {
    for (i, file) in record.files.iter().enumerate() {
        out.copy(&format!("{}/{file}", record.folder), file).await?;
        crate::fault::fault("publish", i + 1);
    }
    Ok(())
}

/// Where a reader of the run in `run` reads its tables: the version folder its `run.json`
/// names, while it is kept and holds the same `run.json` (so that a run committing meanwhile
/// does not mix its tables in); else `run` itself (a run from before the snapshot commits, a
/// baseline's folder, a version folder given as the run, a run.json edited by hand).
pub async fn tables_of(run: &Location) -> Location {
    let Ok(manifest) = run.get(super::commit::MANIFEST).await else {
        return run.clone();
    };
    let version = serde_json::from_slice::<serde_json::Value>(&manifest)
        .ok()
        .and_then(|v| v.get("version")?.as_str().map(str::to_string))
        .filter(|v| v.starts_with(VERSIONS_DIR));
    if let Some(v) = version {
        let same = run
            .get(&format!("{v}/{}", super::commit::MANIFEST))
            .await
            .is_ok_and(|b| b == manifest);
        if same {
            return run.folder(&v);
        }
    }
    run.clone()
}

/// Deletes every object of the folder `folder` of `out`.
pub async fn delete_folder(out: &Location, folder: &str) -> Result<(), StorageError> {
    for (name, _, _) in out.list_folder(folder).await? {
        out.delete(&name).await?;
    }
    if let Some(dir) = out.local_path() {
        let _ = std::fs::remove_dir_all(dir.join(folder));
    }
    Ok(())
}

/// Removes the versions no longer kept: those of committed runs older than the newest `keep`,
/// and the folders of runs that lost a switch (a number already committed by another folder).
/// Folders of numbers not yet committed belong to runs in flight and stay. Returns how many
/// folders were removed.
pub async fn prune(out: &Location, keep: usize) -> Result<usize, VersionError> {
    let runs = committed_runs(out).await?;
    let Some(&newest) = runs.last() else {
        return Ok(0);
    };
    let mut kept = std::collections::BTreeSet::new();
    for &run in runs.iter().rev().take(keep.max(1)) {
        kept.insert(read(out, run).await?.folder);
    }
    let folders: std::collections::BTreeSet<String> = out
        .list_folder(VERSIONS_DIR)
        .await?
        .into_iter()
        .filter_map(|(name, _, _)| {
            let mut parts = name.splitn(3, '/');
            let (dir, folder) = (parts.next()?, parts.next()?);
            parts.next()?;
            Some(format!("{dir}/{folder}"))
        })
        .collect();
    let mut removed = 0;
    for folder in folders {
        let run = folder
            .strip_prefix(&format!("{VERSIONS_DIR}/"))
            .and_then(number);
        if kept.contains(&folder) || run.is_none_or(|r| r > newest) {
            continue;
        }
        delete_folder(out, &folder).await?;
        removed += 1;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(run: u32, folder: &str) -> Record {
        Record {
            run,
            run_time_ms: 1,
            folder: folder.into(),
            files: vec!["a.txt".into(), "run.json".into()],
            holder: format!("run {run}"),
            committed: "now".into(),
        }
    }

    #[test]
    fn one_run_wins_a_number_and_the_loser_is_told_who() {
        let dir = tempfile::tempdir().unwrap();
        let out = Location::parse(dir.path().to_str().unwrap(), true).unwrap();
        let rt = crate::runtime::current_thread().unwrap();
        rt.block_on(async {
            for (folder, text) in [
                ("_versions/000001-1-1", "one"),
                ("_versions/000001-2-2", "two"),
            ] {
                out.put(&format!("{folder}/a.txt"), text.as_bytes().to_vec().into())
                    .await
                    .unwrap();
                out.put(&format!("{folder}/run.json"), b"{}".to_vec().into())
                    .await
                    .unwrap();
            }
            let first = record(1, "_versions/000001-1-1");
            switch(&out, &first).await.unwrap();
            let second = Record {
                holder: "the stalled one".into(),
                ..record(1, "_versions/000001-2-2")
            };
            let err = switch(&out, &second).await.unwrap_err().to_string();
            assert!(err.contains("committed run 1 first (run 1)"), "{err}");
            assert_eq!(latest(&out).await.unwrap(), Some(first.clone()));
            publish(&out, &first).await.unwrap();
            assert_eq!(&out.get("a.txt").await.unwrap()[..], b"one");
            // The loser's folder goes at the next prune; the winner's stays.
            assert_eq!(prune(&out, 3).await.unwrap(), 1);
            assert!(out.exists("_versions/000001-1-1/a.txt").await.unwrap());
            assert!(!out.exists("_versions/000001-2-2/a.txt").await.unwrap());
        });
    }

    #[test]
    fn older_versions_go_and_runs_in_flight_stay() {
        let dir = tempfile::tempdir().unwrap();
        let out = Location::parse(dir.path().to_str().unwrap(), true).unwrap();
        let rt = crate::runtime::current_thread().unwrap();
        rt.block_on(async {
            for run in 1..=5u32 {
                let folder = format!("_versions/{run:06}-9-9");
                out.put(&format!("{folder}/a.txt"), b"x".to_vec().into())
                    .await
                    .unwrap();
                if run <= 4 {
                    switch(&out, &record(run, &folder)).await.unwrap();
                }
            }
            assert_eq!(prune(&out, 2).await.unwrap(), 2);
            let left: Vec<String> = out
                .list_folder(VERSIONS_DIR)
                .await
                .unwrap()
                .into_iter()
                .map(|(n, _, _)| n)
                .collect();
            assert_eq!(
                left,
                [
                    "_versions/000003-9-9/a.txt",
                    "_versions/000004-9-9/a.txt",
                    "_versions/000005-9-9/a.txt"
                ]
            );
            assert_eq!(latest(&out).await.unwrap().map(|r| r.run), Some(4));
        });
    }
}
