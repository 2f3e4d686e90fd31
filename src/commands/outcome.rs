//! What every command hands back: a [`CommandOutcome`] outcome, or a [`CommandError`].

/// What a command that did not fail hands back: its summary (`Display`) and whether some of
/// its work was skipped.
pub trait CommandOutcome: std::fmt::Display + Send {
    /// Whether some key events were skipped, or fell back to no-LLM episodes (exit code 3).
    fn partial(&self) -> bool {
        false
    }
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// A location given on the command line, named by its flag.
    #[error("{what}: {source}")]
    Location {
        /// The flag or argument (`the corpus (--corpus)`).
        what: &'static str,
        /// Why it is not a usable location.
        #[source]
        source: crate::storage::StorageError,
    },
    /// The arguments do not go together, or name nothing usable.
    #[error("{0}")]
    Usage(String),
    /// Storage.
    #[error(transparent)]
    Storage(#[from] crate::storage::StorageError),
    /// The job (file, flags, `--set`).
    #[error(transparent)]
    Job(#[from] crate::job::JobError),
    /// `import` of a dataset folder.
    #[error(transparent)]
    Import(#[from] crate::import::ImportError),
    /// `import --articles`.
    #[error(transparent)]
    Articles(#[from] crate::import::articles::ArticlesError),
    /// `eval`.
    #[error(transparent)]
    Eval(#[from] crate::eval::EvalError),
    /// `report`.
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
    /// `demo`.
    #[error(transparent)]
    Demo(#[from] crate::demo::DemoError),
    /// `stats --no-vectors`.
    #[error(transparent)]
    Stats(#[from] crate::stats::StatsError),
    /// `run`, `stats`.
    #[error(transparent)]
    Run(#[from] crate::run::RunError),
    /// The layout of processes.
    #[error(transparent)]
    Cluster(#[from] crate::topology::ClusterError),
    /// `background build`.
    #[error(transparent)]
    Background(#[from] crate::background::BackgroundError),
    /// `background fetch`.
    #[error(transparent)]
    Wordfreq(#[from] crate::background::wordfreq::WordfreqError),
    /// `models fetch`, or the model cache.
    #[error(transparent)]
    Fetch(#[from] crate::models::FetchError),
    /// `encode`.
    #[error(transparent)]
    Encode(#[from] crate::encode_file::EncodeError),
    /// `baseline`.
    #[error(transparent)]
    Baseline(#[from] crate::baseline::BaselineError),
    /// A blocking task of the command ended without an answer (it panicked).
    #[error("the command's worker thread ended without an answer: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// A location given on the command line, its flag named in the error.
pub(crate) fn location(
    text: &str,
    create: bool,
    what: &'static str,
) -> Result<crate::storage::Location, CommandError> {
    crate::storage::Location::parse(text, create)
        .map_err(|source| CommandError::Location { what, source })
}
