//! Every integration test in one binary (one link of burn, arrow and timely instead of one a
//! file: issue 49 item 6); each file of tests/ is a module, `cargo test --test integration NAME::`
//! runs one (e.g. `follow::`).

mod util;

mod admission;
mod articles;
mod baseline;
mod batches;
mod cli;
mod encode;
mod encoder;
mod eval;
mod faults;
mod fetch;
mod follow;
mod import;
mod interrupt;
mod launcher;
mod llm;
mod own_articles;
mod recipes;
mod report;
mod resume;
mod run;
mod schemas;
mod shapes;
mod stats;
mod storage;
