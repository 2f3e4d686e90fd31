//! The history: whole or not at all after a kill, forward only, restored when damaged.

use super::*;

#[test]
fn the_history_survives_a_killed_run_whole_or_not_at_all() {
    let dir = scratch();
    let corpus = corpus_with_ids(dir.path(), 3, 10);
    let reference = dir.path().join("reference");
    ok(run_at(&corpus, &reference, "2024-05-01", &[], &[]));
    // A change in one event.
    let mut segments: Vec<Segment> = read_rows(&corpus);
    segments.retain(|s| !(s.key_event == "synth_event_000" && s.doc_id == 9));
    block_on(loc(&corpus).write_table(&segments)).unwrap();
    ok(run_at(&corpus, &reference, "2024-05-02", &[], &[]));
    let want = history_files(&reference);
    assert_eq!(want.len(), 3);

    // The same two runs, the second killed: at each table of the assembly (the state file, then
    // lineage.parquet), and after run.json before the history's head.
    // The assembly's writes, counted: the seven tables, then the history's state, its
    // articles and lineage.parquet (stopped after the state, and after lineage.parquet).
    // Then after the third file of the committed version is published (issue 64: committed,
    // its publication finished by the next run).
    for fault in ["assembly:8", "assembly:10", "publish:3", "history"] {
        let out = dir.path().join(format!("out-{}", fault.replace(':', "-")));
        // Run 1 on the same first corpus (synth gives the same bytes), then the same change.
        let original = corpus_with_ids(
            &dir.path().join(format!("c-{}", fault.replace(':', "-"))),
            3,
            10,
        );
        ok(run_at(&original, &out, "2024-05-01", &[], &[]));
        let after_first = history_files(&out);
        block_on(loc(&original).write_table(&segments)).unwrap();
        let killed = run_at(
            &original,
            &out,
            "2024-05-02",
            &[],
            &[("EPIMINE_FAULT", fault)],
        );
        assert_eq!(killed.status.signal(), Some(9), "{fault}: {killed:?}");
        let committed = fault == "history" || fault.starts_with("publish");
        assert_what_the_killed_run_left(&out, fault, committed, &after_first);
        assert_the_same_command_again_completes_the_history(
            &original, &out, fault, committed, &want,
        );
    }
}

/// What the second run, killed at `fault`, left in `out`: run 2 committed whole, or its
/// publication stopped, or (not committed) run 1 whole, with its history and head as they were.
fn assert_what_the_killed_run_left(
    out: &Path,
    fault: &str,
    committed: bool,
    after_first: &[(String, Vec<u8>)],
) {
    let manifest = || -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap()
    };
    if fault == "history" {
        // Committed (run.json) but stopped before the head: history/ holds run 2 whole.
        assert_eq!(manifest()["history"]["run"], 2);
    } else if committed {
        // Committed (`_commits/000002.json`), its publication stopped before run.json.
        assert_eq!(
            files_in(&out.join("_commits")),
            ["000001.json", "000002.json"]
        );
        assert_eq!(manifest()["history"]["run"], 1, "{fault}");
    } else {
        // Not committed: run 1 is there whole (its run.json and every file it lists), and
        // history/ and the head are run 1's, as they were.
        assert_eq!(manifest()["history"]["run"], 1, "{fault}");
        assert!(
            matches!(
                block_on(epimine::run_folder::commit::verify(&loc(out))),
                Ok(epimine::run_folder::commit::Verified::Committed(_))
            ),
            "{fault}: run 1 is not whole"
        );
        assert_eq!(files_in(&out.join("_commits")), ["000001.json"], "{fault}");
        let now = history_files(out);
        assert_eq!(
            now[..1],
            after_first[..1],
            "{fault}: history/000001 changed"
        );
        assert_eq!(
            files_in(&out.join("history")),
            ["000001.parquet"],
            "{fault}"
        );
        let head = std::fs::read_to_string(out.join("_identity/head.json")).unwrap();
        assert!(head.contains("\"run\": 1"), "{fault}: {head}");
    }
}

/// The same command again (on `original` into `out`, killed at `fault`): the history is the
/// uninterrupted one's, `want`, byte for byte, and only the head's ids are kept.
fn assert_the_same_command_again_completes_the_history(
    original: &Path,
    out: &Path,
    fault: &str,
    committed: bool,
    want: &[(String, Vec<u8>)],
) {
    let again = run_at(original, out, "2024-05-02", &[], &[]);
    ok(again);
    let got = history_files(out);
    if committed {
        // Run 2 was committed: the re-run finished its head and is run 3 (nothing changed).
        assert_eq!(got[..2], want[..2], "{fault}");
        assert_eq!(got.len(), 4);
        let rows = lineage(out);
        assert!(rows.iter().all(|r| r.run == 3 && r.status == "continued"));
    } else {
        assert_eq!(
            got, want,
            "{fault}: the history differs from the uninterrupted run's"
        );
    }
    let head = std::fs::read_to_string(out.join("_identity/head.json")).unwrap();
    let n = if committed { 3 } else { 2 };
    assert!(head.contains(&format!("\"run\": {n}")), "{fault}: {head}");
    // Only the head's ids (and its articles) are kept.
    assert_eq!(
        files_in(&out.join("_identity")),
        [
            format!("{n:06}.articles.parquet"),
            format!("{n:06}.parquet"),
            "head.json".to_string()
        ]
    );
}

/// A history runs forward and is never restarted by accident (issue 47, items 3 and 7): a
/// `--run-time` before the last run's is refused before any work, naming both times; with the
/// head (or all of `_identity/`) gone while `history/` holds runs, the run stops and names what
/// is missing and how to start afresh on purpose; the history is left as it was each time.
#[test]
fn a_history_runs_forward_and_a_lost_head_is_an_error_not_a_restart() {
    let dir = scratch();
    let corpus = corpus_with_ids(dir.path(), 2, 8);
    let out = dir.path().join("out");
    ok(run_at(&corpus, &out, "2024-05-01", &[], &[]));
    ok(run_at(&corpus, &out, "2024-05-02", &[], &[]));
    let before = history_files(&out);
    let run_json = std::fs::read(out.join("run.json")).unwrap();

    let o = run_at(&corpus, &out, "2024-04-01", &[], &[]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("--run-time 2024-04-01T00:00:00") && err.contains("run 2 at 2024-05-02"),
        "{err}"
    );
    assert!(!err.contains("events ("), "refused before any work: {err}");
    assert_eq!(history_files(&out), before);
    assert_eq!(std::fs::read(out.join("run.json")).unwrap(), run_json);
    // The same time as the last run is not before it.
    ok(run_at(&corpus, &out, "2024-05-02", &[], &[]));
    let before = history_files(&out);

    for lost in ["_identity/head.json", "_identity"] {
        let copy = dir.path().join(format!("copy-{}", lost.replace('/', "-")));
        std::fs::create_dir_all(&copy).unwrap();
        let path = out.join(lost);
        std::fs::rename(&path, copy.join("x")).unwrap();
        let o = run_at(&corpus, &out, "2024-05-03", &[], &[]);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(!o.status.success(), "{lost}: {err}");
        assert!(
            err.contains("head.json")
                && err.contains(
                    "3 committed run(s) (history/000001.parquet … history/000003.parquet)"
                )
                && err
                    .contains("delete the folders _identity/, history/, _commits/ and _versions/")
                && err.contains("this run cannot follow them")
                && !err.contains("   "),
            "{lost}: {err}"
        );
        assert_eq!(history_files(&out), before, "{lost}");
        std::fs::rename(copy.join("x"), &path).unwrap();
    }
    // Restored, the history goes on.
    ok(run_at(&corpus, &out, "2024-05-03", &[], &[]));
    assert!(lineage(&out).iter().all(|r| r.run == 4));
}

/// Issue 64's minor items: damaged files of the history (cut short) are restored from the kept
/// versions, each named in a warning; where no version keeps one, the ids' file stops the run
/// (naming it), the articles' file and a `history/` file only warn — they are no reason to
/// start the history again.
#[test]
fn damaged_history_files_are_restored_from_the_kept_versions_or_named() {
    let dir = scratch();
    let corpus = corpus_with_ids(dir.path(), 2, 10);
    let out = dir.path().join("out");
    ok(run_at(&corpus, &out, "2024-05-01", &[], &[]));
    ok(run_at(&corpus, &out, "2024-05-02", &[], &[]));
    let cut = |path: &Path| {
        let bytes = std::fs::read(path).unwrap();
        // A new file, not the hard link the version shares.
        std::fs::remove_file(path).unwrap();
        std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
    };
    let damaged = [
        "_identity/000002.parquet",
        "_identity/000002.articles.parquet",
        "history/000001.parquet",
    ];
    let whole: Vec<Vec<u8>> = damaged
        .iter()
        .map(|f| std::fs::read(out.join(f)).unwrap())
        .collect();
    for f in damaged {
        cut(&out.join(f));
    }
    let o = ok(run_at(&corpus, &out, "2024-05-03", &[], &[]));
    let said = String::from_utf8_lossy(&o.stderr).to_string();
    for f in damaged {
        assert!(
            said.contains(&format!("{}: damaged", s(&out.join(f))))
                && said.contains("restored from"),
            "{f}: {said}"
        );
    }
    assert_eq!(
        std::fs::read(out.join("history/000001.parquet")).unwrap(),
        whole[2]
    );
    assert!(lineage(&out)
        .iter()
        .all(|r| r.run == 3 && r.status == "continued"));

    // Without the versions (removed by hand) nothing has a copy left.
    std::fs::remove_dir_all(out.join("_versions")).unwrap();
    cut(&out.join("history/000002.parquet"));
    cut(&out.join("_identity/000003.articles.parquet"));
    let o = ok(run_at(&corpus, &out, "2024-05-04", &[], &[]));
    let said = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        said.contains(&format!(
            "{}: unreadable",
            s(&out.join("history/000002.parquet"))
        )) && said.contains("restore it from a copy, or delete it")
            && said.contains("its episodes' ids are kept"),
        "{said}"
    );
    assert!(lineage(&out)
        .iter()
        .all(|r| r.run == 4 && r.status == "continued"));
    std::fs::remove_dir_all(out.join("_versions")).unwrap();
    cut(&out.join("_identity/000004.parquet"));
    let o = run_at(&corpus, &out, "2024-05-05", &[], &[]);
    let said = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "{}: the episode ids of run 4",
            s(&out.join("_identity/000004.parquet"))
        )),
        "{said}"
    );
}
