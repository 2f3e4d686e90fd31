//! What one worker of the per-event stages holds throughout, and what it does for every phase:
//! record an error, write an event's checkpoint.

use super::shared::Shared;
use crate::fault::fault;
use crate::job::Job;
use crate::run_folder::checkpoint::{self, Checkpoint};
use crate::run_folder::manifest::EventStatus;
use crate::run_folder::outputs::Outputs;

/// What one worker of the per-event stages holds throughout: its place, the shared state and
/// its own tokio runtime (storage and the LLM).
pub(in crate::run) struct Ctx<'a> {
    pub(in crate::run) index: usize,
    pub(in crate::run) peers: usize,
    pub(in crate::run) shared: &'a Shared,
    pub(in crate::run) runtime: tokio::runtime::Runtime,
}

impl<'a> Ctx<'a> {
    /// `None` (the error recorded) when no runtime starts.
    pub(in crate::run) fn start(
        worker: &timely::worker::Worker,
        shared: &'a Shared,
    ) -> Option<Self> {
        let (index, peers) = (worker.index(), worker.peers());
        match crate::runtime::current_thread() {
            Ok(runtime) => Some(Self {
                index,
                peers,
                shared,
                runtime,
            }),
            Err(e) => {
                fail(shared, index, e.to_string());
                None
            }
        }
    }

    pub(in crate::run) fn job(&self) -> &'a Job {
        &self.shared.job
    }

    pub(in crate::run) fn fail(&self, e: String) {
        fail(self.shared, self.index, e);
    }

    /// Writes an event's checkpoint (nothing without `--out`).
    pub(in crate::run) fn write_checkpoint(
        &self,
        fingerprint: &str,
        status: &EventStatus,
        outputs: Outputs,
    ) {
        let Some(out) = &self.shared.out else {
            return;
        };
        if self.shared.interrupted() {
            // What an event holds after the run was stopped (an LLM round cut short) is not
            // written: a resumed run computes it.
            tracing::debug!(
                "not writing the checkpoint of {}: the run was interrupted",
                status.key_event
            );
            return;
        }
        if self.shared.failed() {
            // The run has failed (the encoder, the corpus, storage): what this event holds is
            // not written over whatever checkpoint it had.
            tracing::debug!(
                "not writing the checkpoint of {}: the run has failed",
                status.key_event
            );
            return;
        }
        // The fence: a run that lost `--out` to another (it stalled past the lock's expiry)
        // writes no checkpoint that the other would read.
        if let Err(e) = self.runtime.block_on(crate::storage::lock::check_held(out)) {
            self.fail(format!(
                "not writing the checkpoint of {}: {e}; this run stops",
                status.key_event
            ));
            return;
        }
        let c = Checkpoint {
            fingerprint: fingerprint.to_string(),
            status: status.clone(),
            outputs,
        };
        match self.runtime.block_on(checkpoint::write(out, &c)) {
            Ok(()) => {
                crate::run::kept::checkpoint_written();
                let n = self
                    .shared
                    .checkpoints_written
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                fault("checkpoint", n + 1);
            }
            Err(e) => self.fail(format!(
                "writing the checkpoint of {}: {e}",
                status.key_event
            )),
        }
    }
}

/// Records a worker's error; reported once, by the caller (every worker may fail the same way).
fn fail(shared: &Shared, index: usize, e: String) {
    tracing::debug!(worker = index, "{e}");
    shared.errors.lock().expect("error list").push(e);
}
