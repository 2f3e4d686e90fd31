//! The errors that stop a whole run.

use crate::background;
use crate::encoder;
use crate::llm::LlmError;
use crate::run_folder::checkpoint::CheckpointError;
use crate::stats::StatsError;
use crate::storage::StorageError;

/// Errors that stop a whole run (a single event's failure does not).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The `--out`'s history cannot be read or written.
    #[error(transparent)]
    History(#[from] crate::run_folder::history::HistoryError),
    /// The statistics job failed.
    #[error(transparent)]
    Stats(#[from] StatsError),
    /// The background failed to load.
    #[error("background: {0}")]
    Background(#[from] background::BackgroundError),
    /// The encoder failed to load.
    #[error("encoder: {0}")]
    Encoder(#[from] encoder::EncoderError),
    /// No async runtime could be started.
    #[error(transparent)]
    Runtime(#[from] crate::runtime::RuntimeError),
    /// The model is neither a folder nor in the cache, or its fetch failed.
    #[error("model: {0}")]
    Resolve(#[from] crate::models::ResolveError),
    /// The job is invalid.
    #[error(transparent)]
    Job(#[from] crate::job::JobError),
    /// The LLM stage could not start (no key, no cache folder).
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// A worker of the per-event stages failed.
    #[error("per-event stages: {0}")]
    Workers(String),
    /// The corpus could not be read.
    #[error("corpus: {0}")]
    Corpus(#[from] crate::corpus::CorpusError),
    /// The cluster layout is invalid.
    #[error(transparent)]
    Cluster(#[from] crate::topology::ClusterError),
    /// `--out` cannot be used.
    #[error("--out {location}: {reason}")]
    Out {
        /// The output location.
        location: String,
        /// Why.
        reason: String,
    },
    /// The switch to this run's version failed: another run committed first.
    #[error(transparent)]
    Version(#[from] crate::run_folder::versions::VersionError),
    /// A checkpoint needed for the final tables could not be read.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The run was stopped by its [`super::Interrupt`] (the `--out` it wrote into).
    #[error("the run was interrupted: nothing was committed in {0}; the checkpoints of the events done are kept there, so the same run again resumes from them")]
    Interrupted(String),
}
