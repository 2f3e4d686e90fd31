//! `epimine run` end to end on synthetic corpora, with the tiny random-weight BERT fixture as
//! the encoder (fast in any build): every output written, byte-identical for 1 and 2 workers
//! and for 2 processes, failed events recorded while the others complete, the K-means baseline,
//! and the documented example job.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use crate::util::*;
use epimine::background::Background;
use epimine::episodes::expand::{build_term_set, TermParams};
use epimine::stats::{compute, Cluster, Round};
use epimine::storage::Location;
use epimine::tables::{Assignment, Episode, FragmentRow, LeftOut, Pair, Segment, Term};

mod layouts;
mod outputs;

fn run_args<'a>(corpus: &'a str, bg: &'a str, out: &'a str, model: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--corpus",
        corpus,
        "--background",
        bg,
        "--out",
        out,
        "--model",
        model,
    ]
}
