//! The library's errors as the Python package's exceptions (`epimine.exceptions`): one base,
//! `EpimineError`, and a subclass per kind (`InputError`, `StorageError`, `ClusterError`,
//! `LLMError`), each with the message the CLI prints after `error: `.

use epimine::background::BackgroundError;
use epimine::commands::CommandError;
use epimine::corpus::CorpusError;
use epimine::eval::EvalError;
use epimine::import::articles::ArticlesError;
use epimine::import::ImportError;
use epimine::job::JobError;
use epimine::report::ReportError;
use epimine::run::RunError;
use epimine::run_folder::commit::CommitError;
use epimine::run_folder::history::HistoryError;
use epimine::stats::StatsError;
use epimine::storage::StorageError;
use pyo3::prelude::*;

/// Which exception an error becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `InputError`: a file, a row, a column or a setting the user gave is wrong.
    Input,
    /// `StorageError`: reading or writing failed (a disk, an object store).
    Storage,
    /// `ClusterError`: the layout of workers.
    Cluster,
    /// `LLMError`: the LLM stage could not start.
    Llm,
    /// `EpimineError` itself: anything else (the encoder, a worker).
    Other,
    /// Stopped by Ctrl-C (the caller raises `KeyboardInterrupt`).
    Interrupted,
}

impl Kind {
    fn class(self) -> &'static str {
        match self {
            Kind::Input => "InputError",
            Kind::Storage => "StorageError",
            Kind::Cluster => "ClusterError",
            Kind::Llm => "LLMError",
            Kind::Other | Kind::Interrupted => "EpimineError",
        }
    }
}

/// A failed command: its kind and the CLI's one-line message.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) kind: Kind,
    pub(crate) message: String,
}

impl Failure {
    /// A failure of `kind` with `e`'s message and causes, as the CLI prints them.
    pub(crate) fn of(kind: Kind, e: &(dyn std::error::Error + 'static)) -> Self {
        Self {
            kind,
            message: epimine::error_line::one_line(e),
        }
    }

    /// A failure with a message of the package's own.
    pub(crate) fn new(kind: Kind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The Python exception (`epimine.exceptions.<Kind>`).
    pub(crate) fn into_py(self, py: Python<'_>) -> PyErr {
        let made = py
            .import("epimine.exceptions")
            .and_then(|m| m.getattr(self.kind.class()))
            .and_then(|class| class.call1((self.message.clone(),)));
        match made {
            Ok(exception) => PyErr::from_value(exception),
            Err(e) => e,
        }
    }
}

fn storage_kind(e: &StorageError) -> Kind {
    match e {
        // A path that is not there, a table with other columns: what the user named is wrong.
        StorageError::BadLocation { .. }
        | StorageError::Schema { .. }
        | StorageError::Table { .. } => Kind::Input,
        // A file or object that is not there: the path given is wrong.
        StorageError::Store { .. } if e.is_not_found() => Kind::Input,
        StorageError::Store { .. } | StorageError::Parquet { .. } | StorageError::Io { .. } => {
            Kind::Storage
        }
    }
}

fn corpus_kind(e: &CorpusError) -> Kind {
    match e {
        CorpusError::Storage(s) => storage_kind(s),
        _ => Kind::Input,
    }
}

fn background_kind(e: &BackgroundError) -> Kind {
    match e {
        BackgroundError::Storage(s) => storage_kind(s),
        BackgroundError::Corpus(c) => corpus_kind(c),
        _ => Kind::Input,
    }
}

fn commit_kind(e: &CommitError) -> Kind {
    match e {
        CommitError::Storage(s) => storage_kind(s),
        _ => Kind::Input,
    }
}

fn stats_kind(e: &StatsError) -> Kind {
    match e {
        StatsError::Storage(s) => storage_kind(s),
        StatsError::Background(b) => background_kind(b),
        StatsError::Corpus(c) => corpus_kind(c),
        StatsError::Cluster(_) => Kind::Cluster,
        _ => Kind::Other,
    }
}

fn run_kind(e: &RunError) -> Kind {
    match e {
        RunError::Storage(s) => storage_kind(s),
        RunError::Stats(s) => stats_kind(s),
        RunError::Background(b) => background_kind(b),
        RunError::Corpus(c) => corpus_kind(c),
        RunError::Job(_) | RunError::Resolve(_) => Kind::Input,
        RunError::Llm(_) => Kind::Llm,
        RunError::Cluster(_) => Kind::Cluster,
        RunError::History(HistoryError::Storage(s)) => storage_kind(s),
        RunError::Out { .. } | RunError::Checkpoint(_) | RunError::History(_) => Kind::Storage,
        RunError::Interrupted(_) => Kind::Interrupted,
        _ => Kind::Other,
    }
}

macro_rules! failure_from {
    ($($error:ty => $kind:expr;)*) => {
        $(
            impl From<$error> for Failure {
                fn from(e: $error) -> Self {
                    #[allow(clippy::redundant_closure_call)]
                    let kind = ($kind)(&e);
                    Failure::of(kind, &e)
                }
            }
        )*
    };
}

fn articles_kind(e: &ArticlesError) -> Kind {
    match e {
        ArticlesError::Storage(s) => storage_kind(s),
        ArticlesError::Corpus(c) => corpus_kind(c),
        _ => Kind::Input,
    }
}

fn import_kind(e: &ImportError) -> Kind {
    match e {
        ImportError::Storage(s) => storage_kind(s),
        _ => Kind::Input,
    }
}

fn eval_kind(e: &EvalError) -> Kind {
    match e {
        EvalError::Storage(s) => storage_kind(s),
        EvalError::NotCommitted(c) => commit_kind(c),
        _ => Kind::Input,
    }
}

fn report_kind(e: &ReportError) -> Kind {
    match e {
        ReportError::Storage(s) => storage_kind(s),
        ReportError::Corpus(c) => corpus_kind(c),
        ReportError::Run(c) => commit_kind(c),
        _ => Kind::Input,
    }
}

/// A command's error ([`epimine::commands`]) as the kind of the error inside it.
fn command_kind(e: &CommandError) -> Kind {
    match e {
        CommandError::Location { source, .. } => storage_kind(source),
        CommandError::Storage(s) => storage_kind(s),
        CommandError::Usage(_) | CommandError::Job(_) => Kind::Input,
        CommandError::Import(e) => import_kind(e),
        CommandError::Articles(e) => articles_kind(e),
        CommandError::Eval(e) => eval_kind(e),
        CommandError::Report(e) => report_kind(e),
        CommandError::Stats(e) => stats_kind(e),
        CommandError::Run(e) => run_kind(e),
        CommandError::Background(e) => background_kind(e),
        CommandError::Cluster(_) => Kind::Cluster,
        _ => Kind::Other,
    }
}

failure_from! {
    StorageError => storage_kind;
    CorpusError => corpus_kind;
    BackgroundError => background_kind;
    CommitError => commit_kind;
    RunError => run_kind;
    JobError => |_: &JobError| Kind::Input;
    ArticlesError => articles_kind;
    ImportError => import_kind;
    EvalError => eval_kind;
    ReportError => report_kind;
    CommandError => command_kind;
}
