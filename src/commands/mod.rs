//! The commands: one function per `epimine` command, each taking its parsed arguments
//! ([`crate::cli`]) and returning a typed outcome whose `Display` is the summary the command
//! prints, and whether it was [`partial`](CommandOutcome::partial) (exit code 3). The binary
//! (`src/main.rs`) parses, calls [`dispatch`], prints and maps the outcome to an exit code.
//!
//! - [`inputs`]: `import`, `synth`, `background build|fetch`, `models fetch`, `schemas`;
//! - [`pipeline`]: `run`, `stats`, `encode`, `demo`, `baseline kmeans|hdbscan`;
//! - [`results`]: `eval`, `report`.

pub mod inputs;
mod outcome;
pub mod pipeline;
pub mod results;

pub use outcome::{CommandError, CommandOutcome};

use crate::cli::{BackgroundCommand, BaselineCommand, Command, ModelsCommand};

/// Runs one parsed command.
pub async fn dispatch(command: Command) -> Result<Box<dyn CommandOutcome>, CommandError> {
    Ok(match command {
        Command::Import(args) => Box::new(inputs::import(args).await?),
        Command::Synth(args) => Box::new(inputs::synth(args).await?),
        Command::Background(BackgroundCommand::Build(args)) => {
            Box::new(inputs::background_build(args).await?)
        }
        Command::Background(BackgroundCommand::Fetch(args)) => {
            Box::new(inputs::background_fetch(args).await?)
        }
        Command::Models(args) => match args.command {
            ModelsCommand::Fetch(args) => Box::new(inputs::models_fetch(args).await?),
        },
        Command::Schemas(args) => Box::new(inputs::schemas(args).await?),
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
