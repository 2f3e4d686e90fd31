//! Runs that survive: per-event checkpoints, resume after SIGKILL at several points, incremental
//! re-mining of a changed event, corrupt checkpoints, the commit (`run.json` last, `eval`
//! refusing an inconsistent folder), and the checks on `--out` before any work. Real processes,
//! real kills (`EPIMINE_FAULT` makes the process SIGKILL itself at a named point; one test kills
//! it from outside).

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::*;
use epimine::storage::Location;
use epimine::tables::{Segment, Table};

mod failures;
mod kills;

/// `epimine run` on `corpus` into `out` with the tiny model, extra flags, and environment.
fn run(corpus: &Path, out: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let model = tiny_model();
    let bg = corpus.join("background.txt");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_epimine"));
    cmd.args([
        "run",
        "--corpus",
        s(corpus),
        "--background",
        s(&bg),
        "--out",
        out,
        "--model",
        &model,
    ])
    .args(extra)
    .env("RUST_LOG", "warn")
    .env_remove("EPIMINE_FAULT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("epimine runs")
}

fn report(out: &Path) -> serde_json::Value {
    crate::util::run_json(out)
}

/// Per event: (checkpoint, encoded_units).
fn per_event(report: &serde_json::Value) -> BTreeMap<String, (String, u64)> {
    report["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["key_event"].as_str().unwrap().to_string(),
                (
                    e["checkpoint"].as_str().unwrap().to_string(),
                    e["encoded_units"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

fn assert_same_tables(a: &Path, b: &Path, what: &str) {
    for f in OUTPUTS {
        let x = std::fs::read(a.join(f)).unwrap_or_else(|e| panic!("{what}: {f}: {e}"));
        assert!(!x.is_empty());
        if x == std::fs::read(b.join(f)).unwrap() {
            continue;
        }
        // A run into an `--out` with a history gives its episodes' status in this run (`new`
        // in a fresh one, `continued` after): the rows must match but for that column.
        let rows = |dir: &Path| -> Vec<String> {
            let loc = Location::parse(s(dir), false).unwrap();
            match f {
                "episodes.parquet" => block_on(loc.read_table::<epimine::tables::Episode>())
                    .unwrap()
                    .into_iter()
                    .map(|r| format!("{:?}", epimine::tables::Episode { status: None, ..r }))
                    .collect(),
                "assignments.parquet" => block_on(loc.read_table::<epimine::tables::Assignment>())
                    .unwrap()
                    .into_iter()
                    .map(|r| format!("{:?}", epimine::tables::Assignment { status: None, ..r }))
                    .collect(),
                "episode_articles.parquet" => {
                    block_on(loc.read_table::<epimine::tables::EpisodeArticle>())
                        .unwrap()
                        .into_iter()
                        .map(|r| {
                            format!(
                                "{:?}",
                                epimine::tables::EpisodeArticle { status: None, ..r }
                            )
                        })
                        .collect()
                }
                _ => panic!("{what}: {f} differs from the uninterrupted run"),
            }
        };
        assert!(
            rows(a) == rows(b),
            "{what}: {f} differs from the uninterrupted run (status aside)"
        );
    }
}

/// The whole checkpoints of a run (`.ckpt`; not the temporary file of one being written when
/// the run was killed, which object_store renames into place only once written).
fn checkpoints(out: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(out.join("_checkpoints"))
        .map(|d| {
            d.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "ckpt"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn eval(corpus: &Path, out: &Path) -> Output {
    epimine(&["eval", "--corpus", s(corpus), "--run", s(out), "--json"])
}

/// `epimine run` as process `p` of 2 (one worker each) into `out`.
fn spawn_process(
    corpus: &Path,
    out: &Path,
    hosts: &Path,
    p: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> std::process::Child {
    let model = tiny_model();
    let bg = corpus.join("background.txt");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_epimine"));
    cmd.args([
        "run",
        "--corpus",
        s(corpus),
        "--background",
        s(&bg),
        "--out",
        s(out),
        "--model",
        &model,
        "-w",
        "1",
        "-n",
        "2",
        "-p",
        p,
        "-H",
        s(hosts),
    ])
    .args(extra)
    .env("RUST_LOG", "warn")
    .env_remove("EPIMINE_FAULT")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("epimine starts")
}
