//! The density baseline (`epimine baseline hdbscan`) end to end on a synthetic corpus: the same
//! bytes on every run, noise left out, each cluster ranked by membership, and `eval` scores it.

use std::collections::{BTreeMap, HashSet};

use crate::util::*;
use epimine::storage::Location;
use epimine::tables::{Assignment, Episode, Segment};

#[test]
fn hdbscan_baseline_repeats_ranks_by_membership_and_is_scored() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 30);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for out in [&a, &b] {
        let said = epimine_ok(&[
            "baseline",
            "hdbscan",
            "--corpus",
            s(&corpus),
            "--out",
            s(out),
            "--model",
            &tiny_model(),
            "--min-cluster-size",
            "5",
        ]);
        assert!(said.contains("hdbscan episodes"), "{said}");
    }
    for f in ["episodes.parquet", "assignments.parquet"] {
        assert!(
            std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(),
            "{f} differs between two runs"
        );
    }
    let segments: Vec<Segment> =
        block_on(Location::parse(s(&corpus), false).unwrap().read_table()).unwrap();
    let out = Location::parse(s(&a), false).unwrap();
    let episodes: Vec<Episode> = block_on(out.read_table()).unwrap();
    let assignments: Vec<Assignment> = block_on(out.read_table()).unwrap();
    assert!(!episodes.is_empty(), "no cluster found on planted episodes");
    assert!(episodes.iter().all(|e| e.source == "hdbscan"));
    // Every segment at most once; noise stays out; sizes agree with the episodes table.
    let mut seen = HashSet::new();
    for x in &assignments {
        assert!(
            seen.insert((x.key_event.clone(), x.doc_id, x.seg_idx)),
            "{x:?} twice"
        );
    }
    assert!(assignments.len() <= segments.len());
    let mut by_episode: BTreeMap<(String, u32), Vec<&Assignment>> = BTreeMap::new();
    for x in &assignments {
        by_episode
            .entry((x.key_event.clone(), x.episode_id))
            .or_default()
            .push(x);
    }
    assert_eq!(by_episode.len(), episodes.len());
    for e in &episodes {
        let mut rows = by_episode[&(e.key_event.clone(), e.episode_id)].clone();
        assert_eq!(rows.len() as u32, e.n_segments);
        assert!(e.n_segments >= 5, "a cluster below --min-cluster-size");
        rows.sort_by_key(|x| x.rank);
        assert!(rows.iter().enumerate().all(|(i, x)| x.rank == i as u32));
        // Membership never rises down the ranking and lies in [0, 1].
        assert!(rows.windows(2).all(|w| w[0].confidence >= w[1].confidence));
        assert!(rows.iter().all(|x| (0.0..=1.0).contains(&x.confidence)));
    }
    let report = epimine_ok(&["eval", "--corpus", s(&corpus), "--run", s(&a), "--json"]);
    assert!(report.contains("\"k_f1\""), "{report}");
}

#[test]
fn hdbscan_baseline_refuses_a_min_cluster_size_below_2() {
    let dir = scratch();
    let corpus = synth(dir.path(), 1, 10);
    let out = epimine(&[
        "baseline",
        "hdbscan",
        "--corpus",
        s(&corpus),
        "--out",
        s(&dir.path().join("o")),
        "--model",
        &tiny_model(),
        "--min-cluster-size",
        "1",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("min_cluster_size must be at least 2"), "{err}");
}

#[test]
fn density_candidates_in_run_give_the_same_bytes_for_1_and_2_workers() {
    let dir = scratch();
    let corpus = synth(dir.path(), 2, 40);
    let bg = corpus.join("background.txt");
    let model = tiny_model();
    let run = |out: &std::path::Path, workers: &str| {
        epimine(&[
            "run",
            "--corpus",
            s(&corpus),
            "--background",
            s(&bg),
            "--out",
            s(out),
            "--model",
            &model,
            "-w",
            workers,
            "--set",
            "episodes.candidates=\"density\"",
            "--set",
            "episodes.density.min_cluster_size=5",
        ])
    };
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    for (out, w) in [(&one, "1"), (&two, "2")] {
        let done = run(out, w);
        // Exit 3: some event was skipped (listed in run.json); the others are written.
        assert!(
            matches!(done.status.code(), Some(0) | Some(3)),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
    }
    for f in OUTPUTS {
        assert!(
            std::fs::read(one.join(f)).unwrap() == std::fs::read(two.join(f)).unwrap(),
            "{f} differs between 1 and 2 workers"
        );
    }
    let job = std::fs::read_to_string(one.join("job.toml")).unwrap();
    assert!(job.contains("candidates = \"density\""), "{job}");
    let out = Location::parse(s(&one), false).unwrap();
    let episodes: Vec<Episode> = block_on(out.read_table()).unwrap();
    assert!(!episodes.is_empty(), "density candidates gave no episode");
    // Density candidates skip the fragment clustering: no fragment carries a cluster.
    let fragments: Vec<epimine::tables::FragmentRow> = block_on(out.read_table()).unwrap();
    assert!(!fragments.is_empty());
    assert!(fragments.iter().all(|f| f.cluster.is_none()));
}
