//! The run folder's contract: what an `epimine run` leaves in `--out`, apart from the engine
//! that writes it. The engine (`epimine_engines::run`), `epimine eval`
//! (`epimine_engines::eval`) and `epimine report` (`epimine_engines::report`), in the crate above
//! this one, all read and verify a run through this module.
//!
//! A run folder holds:
//! - the final tables (`episodes`, `assignments`, `episode_articles`, `fragments`, `terms`,
//!   `pairs`, `lineage` .parquet) and the resolved job ([`commit::JOB_FILE`]);
//! - `run.json` ([`commit::MANIFEST`], its rows in [`manifest`]): written last, it lists every
//!   file with its sha256 and row count, and its presence is the commit ([`commit`]: a reader
//!   trusts the folder only when every listed file matches, [`commit::verify`]);
//! - one checkpoint per event in `_checkpoints/` ([`checkpoint`]: the event's rows,
//!   [`outputs`], its status and fingerprint, written whole or not at all);
//! - the history of the folder ([`history`]: `history/`, `_identity/`);
//! - the committed versions and their log ([`versions`]: `_versions/`, `_commits/`): a run
//!   writes its files into a version folder of its own and makes it current in one atomic step,
//!   then publishes it to the names above;
//! - while a run holds the folder, its lock in [`LOCK_DIR`] (taken and kept by
//!   `crate::storage::lock`).

pub mod checkpoint;
pub mod commit;
pub mod history;
pub mod manifest;
pub mod outputs;
pub mod summary;
pub mod versions;

/// The folder of the lock objects inside `--out` (one run per output folder at a time).
pub use crate::storage::lock::LOCK_DIR;
