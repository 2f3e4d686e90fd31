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
//!   of all the event's episode pairs' ([`super::join::centroid_distances`]);
//! - *the same days*: the dates of their segments' articles overlap by at least half (the
//!   intersection of the two date histograms, each normalised to 1, is ≥ ½). A story's phases
//!   follow one another, so episodes that lie close but are told on different days (a warning
//!   and the breach it warned of) stay apart; where articles carry no date this test passes.
//!
//! Episodes join by complete linkage: every pair of a phase passes both tests. Linear in the
//! segments, quadratic in the episodes (at most `max_episodes`, or the candidates when coverage
//! adds some).

use std::collections::BTreeMap;

use super::join;

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
    let bound = super::termspace::Cut::MeanMinusStd.bound(&condensed);
    let days: Vec<BTreeMap<i32, f64>> = members.iter().map(|m| histogram(dates, m)).collect();
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

/// The share of `members`' dated segments on each day (empty when none is dated).
fn histogram(dates: &[Option<i32>], members: &[usize]) -> BTreeMap<i32, f64> {
    let mut counts = BTreeMap::new();
    for &s in members {
        if let Some(day) = dates[s] {
            *counts.entry(day).or_insert(0.0) += 1.0;
        }
    }
    let total: f64 = counts.values().sum();
    counts.values_mut().for_each(|c| *c /= total);
    counts
}

/// Σ_day min(a, b): 1 for the same dates in the same shares, 0 for no day in common; 1 when
/// either side has no date (nothing tells them apart).
fn overlap(a: &BTreeMap<i32, f64>, b: &BTreeMap<i32, f64>) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 1.0;
    }
    a.iter()
        .filter_map(|(day, x)| b.get(day).map(|y| x.min(*y)))
        .sum()
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

    /// Half the dates in common is one phase; less is not; an undated side never separates.
    #[test]
    fn overlap_is_the_shared_share_of_days() {
        let dates = vec![Some(1), Some(2), Some(2), Some(3), None];
        let a = histogram(&dates, &[0, 1]); // days 1, 2 at ½ each
        let b = histogram(&dates, &[2, 3]); // days 2, 3 at ½ each
        assert_eq!(overlap(&a, &b), 0.5);
        assert_eq!(overlap(&a, &histogram(&dates, &[3])), 0.0);
        assert_eq!(overlap(&a, &histogram(&dates, &[4])), 1.0);
        assert_eq!(overlap(&a, &a), 1.0);
    }
}
