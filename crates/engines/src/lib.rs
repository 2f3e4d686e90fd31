//! epimine's engines of the commands: [`encode_file`], [`run`] (the engine of the whole
//! pipeline), [`eval`] (paper appendix C), [`report`] (the HTML page of a run), [`baseline`],
//! [`synth`] and [`demo`] (the built-in default run). It depends only on the crates below it,
//! `epimine_base`, `epimine_method` and `epimine_run_folder` (whose modules it names at their
//! old paths, `crate::episodes` …).
// No unsafe code.
#![deny(unsafe_code)]
#![warn(missing_docs)]

use epimine_base::{digest, fault, progress, runtime, sharding, storage, tables, topology};
use epimine_method::{
    background, corpus, coverage, encoder, episodes, grouping, import, job, lineage, llm, models,
    stats,
};
use epimine_run_folder::run_folder;

pub mod baseline;
pub mod demo;
pub mod encode_file;
pub mod eval;
pub mod report;
pub mod run;
pub mod synth;
