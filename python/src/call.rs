//! How every command runs: on a thread of its own, the GIL released, while the calling thread
//! wakes every [`POLL`] to hand the logs to `logging`, the progress to the callback, and to
//! check for signals. Ctrl-C raises the library's [`Interrupt`] (a run stops at its next event
//! or encoding batch and writes nothing more; an import, an evaluation or a report is dropped
//! before it publishes anything), waits for the command to stop, then raises
//! `KeyboardInterrupt`.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::OnceLock;
use std::time::Duration;

use epimine::run::Interrupt;
use pyo3::prelude::*;

use crate::errors::{Failure, Kind};
use crate::logs;
use crate::watch::Watch;

/// How often the calling thread looks up from waiting.
const POLL: Duration = Duration::from_millis(100);

/// A command's result, or the panic that ended it.
type Outcome<T> = std::thread::Result<Result<T, Failure>>;

/// Runs `work` on a thread of its own with the GIL released (see the module's comment).
/// `progress`: a callable told what changed ([`Watch`]); without one, the library draws its
/// bars on the terminal as the CLI does.
pub(crate) fn blocking<T: Send + 'static>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    work: impl FnOnce(Interrupt) -> Result<T, Failure> + Send + 'static,
) -> PyResult<T> {
    logs::read_threshold(py)?;
    let watch = progress.map(Watch::start);
    let interrupt = Interrupt::new();
    let flag = interrupt.clone();
    let (tx, mut rx) = mpsc::channel::<Outcome<T>>();
    let thread = std::thread::Builder::new()
        .name("epimine".into())
        .spawn(move || {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| work(flag)));
            let _ = tx.send(outcome);
        })
        .map_err(|e| {
            Failure::new(Kind::Other, format!("cannot start a thread: {e}")).into_py(py)
        })?;
    // What stopped the command from here: Ctrl-C, or the progress callback raising.
    let mut stopped_by: Option<PyErr> = None;
    let outcome: Outcome<T> = loop {
        // The receiver goes with the detached wait and back (it is not `Sync`).
        let (got, back) = py.detach(move || (rx.recv_timeout(POLL), rx));
        rx = back;
        hand_over(py, watch.as_ref(), &interrupt, &mut stopped_by);
        match got {
            Ok(outcome) => break outcome,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                break Err(Box::new("the command's thread ended without a result"))
            }
        }
        if let Err(e) = py.check_signals() {
            stop(py, &interrupt, &mut stopped_by, e);
        }
    };
    let _ = py.detach(|| thread.join());
    hand_over(py, watch.as_ref(), &interrupt, &mut stopped_by);
    drop(watch);
    if let Some(e) = stopped_by {
        // The command's own account of what it kept, then the exception that stopped it.
        if let Ok(Err(f)) = &outcome {
            logs::warn(py, &f.message);
        }
        return Err(e);
    }
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(failure)) => Err(failure.into_py(py)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Failure::new(
                Kind::Other,
                format!("internal error (please report it): {what}"),
            )
            .into_py(py))
        }
    }
}

/// The logs to `logging` and the progress to its callback; a callback that raises stops the
/// command as Ctrl-C does, and its exception is raised.
fn hand_over(
    py: Python<'_>,
    watch: Option<&Watch>,
    interrupt: &Interrupt,
    stopped_by: &mut Option<PyErr>,
) {
    if let Err(e) = logs::drain(py) {
        e.print(py);
    }
    if let Some(watch) = watch {
        // Ctrl-C may be raised inside the callback too.
        if let Err(e) = watch.drain(py) {
            stop(py, interrupt, stopped_by, e);
        }
    }
}

/// Stops the command for `e` (Ctrl-C's `KeyboardInterrupt`, or what the progress callback
/// raised), once: the first exception is the one raised when the command has stopped.
fn stop(py: Python<'_>, interrupt: &Interrupt, stopped_by: &mut Option<PyErr>, e: PyErr) {
    if stopped_by.is_some() {
        return;
    }
    interrupt.interrupt();
    let why = if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
        "interrupted".to_string()
    } else {
        format!("the progress callback raised {e}")
    };
    logs::warn(
        py,
        &format!("{why}: stopping at the next event (what is done is kept)"),
    );
    *stopped_by = Some(e);
}

/// The runtime of the library's async commands (import, evaluation, report, tables).
fn runtime() -> Result<&'static tokio::runtime::Runtime, Failure> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| epimine::runtime::multi_thread().map_err(|e| e.0))
        .as_ref()
        .map_err(|e| Failure::new(Kind::Other, format!("cannot start the async runtime: {e}")))
}

/// Runs an async command to its end, or until `interrupt` is raised: then it is dropped
/// (nothing it had not yet published appears; a staged upload is abandoned as when the CLI
/// is killed).
pub(crate) fn until_interrupted<T>(
    interrupt: &Interrupt,
    command: impl Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    let raised = async {
        while !interrupt.is_set() {
            tokio::time::sleep(POLL / 2).await;
        }
    };
    runtime()?.block_on(async {
        tokio::select! {
            result = command => result,
            () = raised => Err(Failure::new(
                Kind::Interrupted,
                "interrupted before it finished (each file is written whole or not at all)",
            )),
        }
    })
}
