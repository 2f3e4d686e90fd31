//! The tokio runtimes that commands and workers block on, built in one place, and what a
//! failure to build one says (the OS refused its threads or its I/O driver): not a model or a
//! dataflow error, but this.

use tokio::runtime::{Builder, Runtime};

/// A tokio runtime could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot start the async runtime: {0}")]
pub struct RuntimeError(pub String);

/// A runtime on the calling thread: one per worker thread, which blocks on its own I/O.
pub fn current_thread() -> Result<Runtime, RuntimeError> {
    Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RuntimeError(e.to_string()))
}

/// A runtime with its own pool of threads: one per command, for its storage and network I/O.
pub fn multi_thread() -> Result<Runtime, RuntimeError> {
    Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RuntimeError(e.to_string()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn both_kinds_start_and_run_a_future() {
        for runtime in [super::current_thread(), super::multi_thread()] {
            assert_eq!(runtime.expect("a runtime").block_on(async { 6 * 7 }), 42);
        }
    }
}
