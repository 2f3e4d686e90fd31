//! Readers while runs commit (issue 64 item 1): a reader that takes the folder `run.json`'s
//! `version` names reads one run's tables, whatever commits meanwhile.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::*;

/// One read as `epimine report` and Python's `Run` make it: `run.json`, then `episodes.parquet`
/// and `assignments.parquet` from its version folder. `Some(true)` when both tables are the ones
/// that `run.json` lists, `Some(false)` when one is another run's, `None` when a file was gone
/// (a version pruned between the two reads: the reader reads again).
fn read_once(out: &Path) -> Option<bool> {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).ok()?).ok()?;
    let version = manifest["version"].as_str()?;
    let listed = |name: &str| {
        manifest["tables"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == name))
            .and_then(|t| t["sha256"].as_str())
            .map(str::to_string)
    };
    let mut same = true;
    for name in ["episodes.parquet", "assignments.parquet"] {
        let bytes = std::fs::read(out.join(version).join(name)).ok()?;
        let digest = format!("{:x}", Sha256::digest(&bytes));
        same &= listed(name).as_deref() == Some(digest.as_str());
    }
    Some(same)
}

#[test]
fn readers_of_the_version_folder_see_one_runs_tables_while_runs_commit() {
    let dir = scratch();
    let corpus = synth(dir.path(), 3, 10);
    let out = dir.path().join("out");
    ok(run(&corpus, s(&out), &[], &[]).output().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let (reads, mixed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (out, stop) = (out.clone(), stop.clone());
            let (reads, mixed) = (reads.clone(), mixed.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match read_once(&out) {
                        Some(true) => reads.fetch_add(1, Ordering::Relaxed),
                        Some(false) => mixed.fetch_add(1, Ordering::Relaxed),
                        None => 0,
                    };
                }
            })
        })
        .collect();
    // Consecutive runs' tables differ (three keywords an episode, then four), so a read of two
    // runs' files would not match run.json.
    let mut digests = std::collections::BTreeSet::new();
    for i in 0..6 {
        let keywords = format!("episodes.keywords={}", 3 + i % 2);
        ok(run(&corpus, s(&out), &["--set", &keywords], &[])
            .output()
            .unwrap());
        digests.insert(std::fs::read(out.join("episodes.parquet")).unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(
        digests.len(),
        2,
        "the runs alternate between two different tables"
    );
    assert!(
        reads.load(Ordering::Relaxed) > 50,
        "the readers read while the runs committed"
    );
    assert_eq!(
        mixed.load(Ordering::Relaxed),
        0,
        "a read through `version` saw two runs' tables"
    );
}
