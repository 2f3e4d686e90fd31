//! The commands: one function per `epimine` command, each taking its parsed arguments
//! ([`crate::cli`]) and returning a typed outcome whose `Display` is the summary the command
//! prints, and whether it was [`partial`](Finished::partial) (exit code 3). The binary
//! (`src/main.rs`) parses, calls [`dispatch`], prints and maps the outcome to an exit code.
//!
//! - [`corpus`]: `import`, `synth`, `background build|fetch`, `models fetch`, `schemas`;
//! - [`pipeline`]: `run`, `stats`, `encode`, `demo`, `baseline kmeans|hdbscan`;
//! - [`results`]: `eval`, `report`.

pub mod corpus;
pub mod pipeline;
pub mod results;

use crate::cli::{BackgroundCommand, BaselineCommand, Command, ModelsCommand};

/// What a command that did not fail hands back: its summary (`Display`) and whether some of
/// its work was skipped.
pub trait Finished: std::fmt::Display + Send {
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
    Encode(#[from] crate::encode::EncodeError),
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

/// Runs one parsed command.
pub async fn dispatch(command: Command) -> Result<Box<dyn Finished>, CommandError> {
    Ok(match command {
        Command::Import(args) => Box::new(corpus::import(args).await?),
        Command::Synth(args) => Box::new(corpus::synth(args).await?),
        Command::Background(BackgroundCommand::Build(args)) => {
            Box::new(corpus::background_build(args).await?)
        }
        Command::Background(BackgroundCommand::Fetch(args)) => {
            Box::new(corpus::background_fetch(args).await?)
        }
        Command::Models(args) => match args.command {
            ModelsCommand::Fetch(args) => Box::new(corpus::models_fetch(args).await?),
        },
        Command::Schemas(args) => Box::new(corpus::schemas(args).await?),
        Command::Run(args) => Box::new(pipeline::run(args).await?),
        Command::Stats(args) => Box::new(pipeline::stats(args).await?),
        Command::Encode(args) => Box::new(pipeline::encode(args).await?),
        Command::Demo(args) => Box::new(pipeline::demo(args).await?),
        Command::Baseline(BaselineCommand::Kmeans(args)) => Box::new(pipeline::kmeans(args).await?),
        Command::Baseline(BaselineCommand::Hdbscan(args)) => {
            Box::new(pipeline::hdbscan(args).await?)
        }
        Command::Eval(args) => Box::new(results::eval(args).await?),
        Command::Report(args) => Box::new(results::report(args).await?),
    })
}

/// What a signal that stops the process leaves, for its one log line: what is kept and how to
/// resume (`run::kept`), and the locks given back.
pub fn on_signal() -> String {
    let kept = crate::run::kept::interrupted().unwrap_or_else(|| {
        "nothing is left half-written (each output file is written whole, then renamed, or not at all); run the command again".into()
    });
    let given = crate::storage::lock::give_back_held();
    if given.is_empty() {
        kept
    } else {
        format!("{kept} (the lock of {} is given back)", given.join(", "))
    }
}

/// The output folders `command` would create (a command that fails leaves none of them
/// behind; those it wrote into stay, with what it wrote).
pub fn new_folders(command: &Command) -> Vec<std::path::PathBuf> {
    let out = match command {
        Command::Import(args) => Some(args.out.as_str()),
        Command::Run(args) => args.out.as_deref(),
        Command::Stats(args) => Some(args.out.as_str()),
        Command::Synth(args) => Some(args.out.as_str()),
        _ => None,
    };
    out.map(crate::storage::new_local_folders)
        .unwrap_or_default()
}
