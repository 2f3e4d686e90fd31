//! Everything that becomes a corpus: a dataset folder ([`dataset`], `epimine import`) or a table
//! of articles ([`articles`], `epimine import --articles`), both cut into segments by
//! [`segment`].

pub mod articles;
pub mod dataset;
pub mod segment;

pub use dataset::{
    format_summary, import, parse_date, ImportError, DATES_FILE, EPISODES_FILE, GROUNDTRUTH_FILE,
    SEGMENTS_FILE,
};
