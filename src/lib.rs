//! epimine: unsupervised episode detection for large news events (EpiMine, ACL 2025).
//!
//! Modules follow the pipeline: [`tables`] defines every table once, [`storage`] reads and
//! writes them on local disk or S3, [`import`] turns the dataset layout into the corpus tables,
//! [`eval`] scores detected episodes (paper appendix C), and [`demo`] is the built-in default run.
//! [`encoder`] holds the word and sentence encoders (ALGORITHM.md §1, §6) on burn, and
//! [`encode`] is the command that runs them on a text file. [`report`] writes the HTML page
//! of a run.
// No unsafe code but one allowed call (`encoder::tune_allocator`, glibc `mallopt`).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod background;
pub mod baseline;
pub mod cli;
pub mod cluster;
pub mod clustering;
pub mod corpus;
pub mod demo;
pub mod encode;
pub mod encoder;
pub mod episodes;
pub mod eval;
pub mod import;
pub mod job;
pub mod keys;
pub mod llm;
pub mod progress;
pub mod report;
pub mod run;
pub mod stats;
pub mod storage;
pub mod synth;
pub mod tables;
pub mod text;
