//! The errors of `epimine report`.

use crate::run_folder::commit::CommitError;
use crate::storage::StorageError;

/// Errors of `epimine report`.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading or writing failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The corpus could not be read.
    #[error(transparent)]
    Corpus(#[from] crate::corpus::CorpusError),
    /// The run is not one whole committed run of this format.
    #[error(transparent)]
    Run(#[from] CommitError),
    /// The folder holds no `run.json` at all.
    #[error("{0}: no run.json and no episodes.parquet; `epimine report` reads the output folder of `epimine run` or `epimine baseline`")]
    NotARun(String),
    /// `run.json` lacks what the report needs.
    #[error("{location}: {reason}")]
    Manifest {
        /// `run.json`.
        location: String,
        /// What is wrong.
        reason: String,
    },
    /// The corpus is not the one the run read.
    #[error("corpus {corpus} does not match run {run}: {reason}")]
    CorpusMismatch {
        /// The corpus.
        corpus: String,
        /// The run.
        run: String,
        /// What differs.
        reason: String,
    },
    /// The asked trial is not in the run.
    #[error("--trial {trial}: the run has trials 0..{trials}")]
    NoTrial {
        /// Asked.
        trial: u32,
        /// Trials in the run.
        trials: u32,
    },
}
