//! epimine's ground layer, the lowest crate of the workspace (it depends on no other of it):
//! [`tables`] defines every table once, [`storage`] reads and writes them on local disk or S3
//! and locks a folder for one writer (a run's `--out`, a corpus appended to), [`terms`]
//! tokenizes, [`sharding`] shards every exchange, [`digest`] spells every sha256, [`runtime`]
//! builds the async runtimes, [`progress`] shows progress, [`topology`] is the layout of
//! processes and workers (the machines a run spans, as the job's `[cluster]` and the deployment
//! recipes in the repository's `cluster/`), [`error_line`] how an error reads, and `fault` the
//! resume tests' hook that kills a process at a named point.
// No unsafe code.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod digest;
pub mod error_line;
// The resume tests' hook, called by the layers above (not an interface of the library).
#[doc(hidden)]
pub mod fault;
pub mod progress;
pub mod runtime;
pub mod sharding;
pub mod storage;
pub mod tables;
pub mod terms;
pub mod topology;
