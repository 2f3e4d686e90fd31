//! What this process's run has kept so far, for the line the binary writes when a signal stops
//! it ([`interrupted`]): the folder, the checkpoints written, whether a finished run is still
//! there whole, whether the final tables were being written.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The run of this process, once its `--out` is open.
struct Kept {
    out: String,
    /// A finished run was there when this one began (its `run.json` stays until the commit).
    finished_before: bool,
    /// The version folder of the commit under way.
    committing: Option<String>,
    /// Whether the switch is done.
    switched: bool,
}

static RUN: Mutex<Option<Kept>> = Mutex::new(None);
static CHECKPOINTS: AtomicUsize = AtomicUsize::new(0);

/// This process's run opened `out`.
pub(super) fn opened(out: &str, finished_before: bool) {
    CHECKPOINTS.store(0, Ordering::SeqCst);
    *RUN.lock().expect("kept") = Some(Kept {
        out: out.to_string(),
        finished_before,
        committing: None,
        switched: false,
    });
}

/// An event's checkpoint was written.
pub(super) fn checkpoint_written() {
    CHECKPOINTS.fetch_add(1, Ordering::SeqCst);
}

/// The commit began: the final tables are written into the version folder `folder`.
pub(super) fn committing(folder: &str) {
    if let Some(k) = RUN.lock().expect("kept").as_mut() {
        k.committing = Some(folder.to_string());
    }
}

/// The switch is done: this run is committed, its publication under way.
pub(super) fn switched() {
    if let Some(k) = RUN.lock().expect("kept").as_mut() {
        k.switched = true;
    }
}

/// What a run stopped now keeps and how to resume it; `None` when no run has opened its
/// `--out` in this process.
pub fn interrupted() -> Option<String> {
    let run = RUN.lock().ok()?;
    let k = run.as_ref()?;
    let written = CHECKPOINTS.load(Ordering::SeqCst);
    let state = if k.switched {
        format!(
            "this run was committed ({}) while its tables were being published; the next run \
             finishes that first",
            k.committing.as_deref().unwrap_or("_versions/")
        )
    } else if let Some(folder) = k.committing.as_deref().filter(|_| k.finished_before) {
        format!(
            "{}/run.json and the tables of the finished run that was there are kept whole (this \
             run was writing its own into {folder}, not committed)",
            k.out
        )
    } else if k.finished_before {
        format!(
            "{}/run.json and the tables of the finished run that was there are kept whole (this run had not committed)",
            k.out
        )
    } else {
        format!("{} holds no run.json (not a finished run)", k.out)
    };
    Some(format!(
        "kept: the {written} event checkpoint(s) this run wrote in {}/_checkpoints, with those of earlier runs; {state}. To resume, run the same command again: it reuses every checkpoint that still matches",
        k.out
    ))
}
