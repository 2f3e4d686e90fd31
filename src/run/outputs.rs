//! The rows a run writes, of one event or gathered over events.

use serde::{Deserialize, Serialize};

use crate::tables::{Assignment, Episode, FragmentRow, Pair, Term};

/// Everything a run writes, of one event or gathered over events.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Outputs {
    /// `episodes` rows.
    pub episodes: Vec<Episode>,
    /// `assignments` rows.
    pub assignments: Vec<Assignment>,
    /// `fragments` rows.
    pub fragments: Vec<FragmentRow>,
    /// `terms` rows.
    pub terms: Vec<Term>,
    /// `pairs` rows.
    pub pairs: Vec<Pair>,
}

impl Outputs {
    /// Appends another event's rows.
    pub fn extend(&mut self, other: Outputs) {
        self.episodes.extend(other.episodes);
        self.assignments.extend(other.assignments);
        self.fragments.extend(other.fragments);
        self.terms.extend(other.terms);
        self.pairs.extend(other.pairs);
    }
}
