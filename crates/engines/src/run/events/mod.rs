//! The per-event pipeline of a run, on every worker of every process (docs/design.md): each
//! event's owner fingerprints it and reuses its checkpoint when the fingerprint matches
//! (`reuse`); the other events, in waves (`placement`), are encoded by units (`units`, with the
//! encoder cache in `cache`) on any worker, and their owners run §1 and §3–§6 (`compute`; the
//! LLM round trip from worker 0: `estimation`, an event waiting for its episodes in `pending`)
//! and write each event's checkpoint as soon as it is done (`event`, each worker's context in
//! `worker`). What workers send each other is in `exchange`, what every worker shares in
//! `shared`, the progress over workers and processes in `stage_progress`.
//!
//! The process around it (the statistics, the commit, the run's identity, interrupts and what a
//! stopped run keeps) is the rest of [`crate::run`].

mod cache;
mod compute;
mod estimation;
pub(in crate::run) mod event;
pub(in crate::run) mod exchange;
mod pending;
mod placement;
mod reuse;
pub(in crate::run) mod shared;
pub(in crate::run) mod stage_progress;
mod units;
mod worker;
