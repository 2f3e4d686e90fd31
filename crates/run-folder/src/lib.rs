//! epimine's run folder: [`run_folder`] is what a run leaves in `--out` (tables, `run.json`,
//! checkpoints, the commit, the history — its files and their writing at the commit —, the
//! summary a run prints), read by the engines and the commands alike. It depends only on the
//! crates below it, `epimine_base` and `epimine_method` (whose modules it names at their old
//! paths, `crate::storage` …).
// No unsafe code.
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(test)]
use epimine_base::runtime;
use epimine_base::{digest, fault, storage, tables, topology};
use epimine_method::{corpus, coverage, encoder, episodes, job, lineage, llm};

pub mod run_folder;
