//! Phases (issue 45): the kept episodes of one event grouped into the phases they tell, beside
//! them, not instead. A phase of a story told in several vocabularies (a rescue in the words of
//! the crews, of the survivors, of the officials) becomes several episodes, which is what the
//! development set's fine gold episodes need and what a reader following the story does not
//! want: the `episodes` table keeps the episodes and names each one's phase (`phase_id`), so
//! both granularities are there and neither costs the other.
//!
//! Two episodes are one phase when they lie together and are told over the same days:
//! - *together*: §5's merge rule over what classification put in each episode — the cosine
//!   distance of their member centroids (the mean unit embedding of their segments) under μ − σ
//!   of all the event's episode pairs' ([`crate::episodes::classification::join::centroid_distances`]);
//! - *the same days*: the dates of their segments' articles overlap by at least half (the
//!   intersection of the two date histograms, each normalised to 1, is ≥ ½). A story's phases
//!   follow one another, so episodes that lie close but are told on different days (a warning
//!   and the breach it warned of) stay apart; where articles carry no date this test passes.
//!
//! Episodes join by complete linkage: every pair of a phase passes both tests. Linear in the
//! segments, quadratic in the episodes (at most `max_episodes`, or the candidates when coverage
//! adds some).

use std::collections::BTreeMap;

use crate::episodes::classification::dated_candidates::{histogram, overlap};
use crate::episodes::classification::join;

/// The share of their dates two episodes have in common, ½ or more for one phase.
const SAME_DAYS: f64 = 0.5;

/// Each episode's phase, as the index of the first episode of its phase: `members` are the kept
/// episodes' segments, in episode order, and `dates` every segment's article date (days since
/// the epoch; `None` when unknown), aligned with `embeddings`. Deterministic (the linkage's ties
/// by index). With fewer than three episodes each is its own phase: one distance has no spread
/// to cut by.
pub fn phases(
    embeddings: &[Vec<f32>],
    dates: &[Option<i32>],
    members: &[Vec<usize>],
) -> Vec<usize> {
    let n = members.len();
    if n < 3 {
        return (0..n).collect();
    }
    let mut condensed = join::centroid_distances(embeddings, members);
    let bound = crate::episodes::terms::termspace::Cut::MeanMinusStd.bound(&condensed);
    let days: Vec<BTreeMap<i32, f64>> = members
        .iter()
        .map(|m| histogram(dates, m.iter().copied()))
        .collect();
    let mut k = 0;
    for a in 0..n {
        for b in a + 1..n {
            if overlap(&days[a], &days[b]) < SAME_DAYS {
                // Beyond any cosine distance (≤ 2): complete linkage never joins the pair
                // under the bound.
                condensed[k] = 3.0;
            }
            k += 1;
        }
    }
    let labels =
        crate::grouping::linkage::linkage_cut(&condensed, n, kodama::Method::Complete, bound);
    // Labels are numbered by first group: label ℓ's first episode is the first index holding it.
    let mut first = vec![usize::MAX; n];
    for (e, &label) in labels.iter().enumerate() {
        if first[label] == usize::MAX {
            first[label] = e;
        }
    }
    labels.iter().map(|&label| first[label]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two episodes along x, two along y and one along z: the x and y pairs are each one phase,
    /// named by their first episode, and the z episode stands alone.
    #[test]
    fn episodes_that_lie_together_share_the_first_ones_phase() {
        let e: Vec<Vec<f32>> = vec![
            vec![0.0, 1.0, 0.0],
            vec![1.0, 0.0, 0.0],
            vec![0.1, 1.0, 0.0],
            vec![1.0, 0.1, 0.0],
            vec![0.0, 0.0, 1.0],
        ];
        // Episode order: y, x, y, x, z.
        let members = vec![vec![0], vec![1], vec![2], vec![3], vec![4]];
        let undated = vec![None; 5];
        assert_eq!(phases(&e, &undated, &members), vec![0, 1, 0, 1, 4]);
        assert_eq!(phases(&e, &undated, &members[..2]), vec![0, 1]);
        assert!(phases(&e, &undated, &[]).is_empty());
        // Same days for the y pair, different days for the x pair: only the y pair joins.
        let dated = vec![Some(1), Some(1), Some(1), Some(5), Some(9)];
        assert_eq!(phases(&e, &dated, &members), vec![0, 1, 0, 3, 4]);
    }
}
