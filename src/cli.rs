//! The command line: clap definitions of every subcommand.

use clap::{Args, Parser, Subcommand};

/// Find the episodes of large news events, without labels.
#[derive(Debug, Parser)]
#[command(name = "epimine", version, about, long_about = None)]
pub struct Cli {
    /// More log output (-v: debug, -vv: trace). `RUST_LOG` overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Import a dataset folder (<theme>/<event>/segments.txt, doc_dates.txt, groundtruth.tsv,
    /// episodes.tsv) into corpus tables.
    Import(ImportArgs),
    /// Score a run's assignments against a corpus's gold labels (k-prec, k-recall, k-F1).
    Eval(EvalArgs),
    /// Run the built-in default end to end and show where the outputs are.
    Demo(DemoArgs),
    /// Write the JSON copy of every table schema (as kept in `schemas/`).
    Schemas(SchemasArgs),
}

/// `epimine import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The dataset folder: a local path, file://… or s3://bucket/prefix.
    pub dataset_dir: String,
    /// Where to write segments.parquet, labels.parquet and gold_episodes.parquet.
    #[arg(long)]
    pub out: String,
}

/// `epimine eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The corpus written by `epimine import`.
    #[arg(long)]
    pub corpus: String,
    /// The run folder holding assignments.parquet.
    #[arg(long)]
    pub run: String,
    /// Top-k segments per episode.
    #[arg(short, default_value_t = crate::eval::DEFAULT_K)]
    pub k: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `epimine demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Output folder (local path, file://… or s3://…).
    #[arg(long, default_value = "epimine-demo")]
    pub out: String,
}

/// `epimine schemas`.
#[derive(Debug, Args)]
pub struct SchemasArgs {
    /// Folder to write `<table>.json` into; without it the schemas are printed.
    #[arg(long)]
    pub out: Option<String>,
}
