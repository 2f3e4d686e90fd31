//! A run stopped from outside the process's signals (the Python package's Ctrl-C): raising its
//! `epimine::run::Interrupt` stops it at the next event, with nothing committed and the lock
//! given back, and the same run again resumes from the checkpoints written before, to the
//! bytes of an uninterrupted run. The interrupt is raised by a progress observer
//! (`epimine::progress::observe`, what the Python package draws its bars from) once the first
//! event is counted done, so the point is the same on every machine.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::util::*;
use epimine::job::{EncoderConfig, Job};
use epimine::progress::{observe, Observer, Update};
use epimine::run::{self, Interrupt, RunError, RunOptions};

/// Raises `interrupt` when the events bar counts its first event.
struct AfterFirstEvent {
    interrupt: Interrupt,
    events_bar: Mutex<Option<u64>>,
}

impl Observer for AfterFirstEvent {
    fn update(&self, update: Update<'_>) {
        let mut bar = self.events_bar.lock().unwrap();
        match update {
            Update::Started { id, name, .. } if name.starts_with("events") => *bar = Some(id),
            Update::Counted { id, done, .. } if Some(id) == *bar && done >= 1 => {
                self.interrupt.interrupt()
            }
            _ => {}
        }
    }
}

fn job(corpus: &Path, out: &Path) -> Job {
    let mut job = Job {
        corpus: s(corpus).into(),
        background: s(&corpus.join("background.txt")).into(),
        out: s(out).into(),
        encoder: EncoderConfig {
            model: tiny_model(),
            ..Default::default()
        },
        ..Default::default()
    };
    // One worker: the events one after another, so that the first is done before the next.
    job.cluster.workers = 1;
    job
}

#[test]
fn an_interrupted_run_commits_nothing_gives_its_lock_back_and_resumes_to_the_same_bytes() {
    let dir = scratch();
    let corpus = synth(dir.path(), 5, 20);
    let out = dir.path().join("run");
    let interrupt = Interrupt::new();
    observe(Some(Arc::new(AfterFirstEvent {
        interrupt: interrupt.clone(),
        events_bar: Mutex::new(None),
    })));
    let stopped = run::run_interruptible(&job(&corpus, &out), &RunOptions::default(), &interrupt);
    observe(None);
    match stopped {
        Err(RunError::Interrupted(location)) => assert_eq!(location, s(&out)),
        other => panic!("expected an interrupted run, got {other:?}"),
    }
    let message = RunError::Interrupted(s(&out).into()).to_string();
    assert!(message.contains("resumes"), "{message}");
    assert!(
        !out.join("run.json").exists(),
        "an interrupted run commits nothing"
    );
    for table in OUTPUTS {
        assert!(
            !out.join(table).exists(),
            "{table} written by an interrupted run"
        );
    }
    let kept = files_in(&out.join("_checkpoints"));
    assert_eq!(
        kept.len(),
        1,
        "the event done before the interrupt keeps its checkpoint, no later one is written: {kept:?}"
    );
    assert!(
        files_in(&out.join("_lock")).is_empty(),
        "the lock is given back: {:?}",
        files_in(&out.join("_lock"))
    );

    // The same run again resumes from that checkpoint, to the bytes of a fresh run.
    let resumed = run::run(&job(&corpus, &out))
        .expect("the resumed run")
        .expect("process 0");
    assert_eq!(resumed.report.checkpoints.reused, 1);
    let fresh = dir.path().join("fresh");
    run::run(&job(&corpus, &fresh))
        .expect("the fresh run")
        .expect("process 0");
    for table in OUTPUTS {
        assert_eq!(
            std::fs::read(out.join(table)).unwrap(),
            std::fs::read(fresh.join(table)).unwrap(),
            "{table} differs between the resumed and the fresh run"
        );
    }
}
