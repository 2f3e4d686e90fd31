//! Stopping a run from outside the process's own signals (the Python package's Ctrl-C): the
//! workers stop at the next event or encoding batch and write nothing more, and the run ends
//! with [`super::RunError::Interrupted`], uncommitted and resumable from the checkpoints
//! written before, as after a killed process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A flag shared with a run ([`super::run_interruptible`]); cloned handles raise the same flag.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// A flag not raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop.
    pub fn interrupt(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the run was asked to stop.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
