//! Distinct candidates come back (issue 45; `episodes.distinct`, default off): after §6's
//! relative rules (cohesion, size, core; docs/method.md §6), a dropped candidate whose members
//! are set apart from the kept episodes at least as clearly as the least distinct kept episode's
//! members are from the others is kept again. The relative rules judge a candidate by how tight
//! or large it is beside the event's other candidates, so a phase told in its own words but
//! looser than the rest (a vigil beside a manhunt) falls with the general text; this rule judges
//! it by what the kept episodes would lose without it: a silhouette-like separation of its
//! members (the cosine to their own episode vector, paper eq. 2's similarity, less the cosine to
//! the nearest kept episode's vector).

use crate::episodes::terms::termspace;

/// One candidate's separation from the episodes of `against` (itself excluded): the mean over
/// its members of the cosine to its own vector less the highest cosine to another episode's
/// vector. `None` without members or without another episode.
pub(in crate::episodes) fn separation(
    embeddings: &[Vec<f32>],
    vectors: &[Vec<f32>],
    members: &[(f64, usize)],
    own: usize,
    against: &[usize],
) -> Option<f64> {
    let others: Vec<usize> = against.iter().copied().filter(|&k| k != own).collect();
    if members.is_empty() || others.is_empty() {
        return None;
    }
    let sum: f64 = members
        .iter()
        .map(|&(_, s)| {
            let e = &embeddings[s];
            let nearest = others
                .iter()
                .map(|&k| termspace::cosine(e, &vectors[k]))
                .fold(f64::NEG_INFINITY, f64::max);
            termspace::cosine(e, &vectors[own]) - nearest
        })
        .sum();
    Some(sum / members.len() as f64)
}

/// Brings back every dropped candidate that a relative rule dropped (`eligible`: cohesion, size
/// or core; not `min_segments`) whose [`separation`] from the `kept` episodes is at least the lowest separation of a
/// kept episode from the other kept ones. Every separation is taken against the kept set as the
/// rules left it, so the order of candidates does not matter. Nothing changes with fewer than
/// two kept episodes (the floor, `min_episodes`, handles those events). Returns the candidates
/// brought back.
pub(in crate::episodes) fn restore_distinct(
    kept: &mut [bool],
    eligible: &[bool],
    embeddings: &[Vec<f32>],
    vectors: &[Vec<f32>],
    members: &[Vec<(f64, usize)>],
) -> Vec<usize> {
    let base: Vec<usize> = (0..kept.len()).filter(|&e| kept[e]).collect();
    if base.len() < 2 {
        return Vec::new();
    }
    let least = base
        .iter()
        .filter_map(|&k| separation(embeddings, vectors, &members[k], k, &base))
        .fold(f64::INFINITY, f64::min);
    if !least.is_finite() {
        return Vec::new();
    }
    let back: Vec<usize> = (0..kept.len())
        .filter(|&e| !kept[e] && eligible[e])
        .filter(|&e| {
            separation(embeddings, vectors, &members[e], e, &base).is_some_and(|s| s >= least)
        })
        .collect();
    for &e in &back {
        kept[e] = true;
    }
    back
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three kept episodes along three axes and a dropped one along a fourth: its members are as
    /// far from every kept vector as the kept ones are from each other, so it comes back; a
    /// dropped one whose members sit between two kept episodes does not.
    #[test]
    fn a_dropped_candidate_apart_from_the_kept_comes_back_one_between_them_does_not() {
        let axis = |i: usize, j: usize, w: f32| {
            let mut v = vec![0.0f32; 4];
            v[i] = 1.0;
            v[j] += w;
            v
        };
        // Members: two segments per candidate, slightly off their axis.
        let mut embeddings = Vec::new();
        let mut members = Vec::new();
        for c in 0..4 {
            let first = embeddings.len();
            // The dropped candidate 3 is the tightest, so its separation is the largest.
            let w = if c == 3 { 0.05 } else { 0.1 };
            embeddings.push(axis(c, (c + 1) % 4, w));
            embeddings.push(axis(c, (c + 3) % 4, w));
            members.push(vec![(0.0, first), (0.0, first + 1)]);
        }
        // Candidate 4: segments halfway between kept 0 and 1.
        embeddings.push(vec![1.0, 1.0, 0.0, 0.0]);
        embeddings.push(vec![1.0, 0.9, 0.1, 0.0]);
        members.push(vec![(0.0, 8), (0.0, 9)]);
        let mut vectors: Vec<Vec<f32>> = (0..4).map(|c| axis(c, c, 0.0)).collect();
        vectors.push(vec![1.0, 1.0, 0.1, 0.0]);
        let mut kept = vec![true, true, true, false, false];
        let eligible = vec![false, false, false, true, true];
        let back = restore_distinct(&mut kept, &eligible, &embeddings, &vectors, &members);
        assert_eq!(back, vec![3]);
        assert_eq!(kept, vec![true, true, true, true, false]);
    }

    /// A candidate no relative rule dropped (too few segments) never comes back, and one kept
    /// episode is not enough to judge separation.
    #[test]
    fn min_segments_drops_stay_and_one_kept_episode_changes_nothing() {
        let embeddings = vec![vec![1.0f32, 0.0], vec![0.0, 1.0], vec![-1.0, 0.0]];
        let vectors = embeddings.clone();
        let members = vec![vec![(0.0, 0)], vec![(0.0, 1)], vec![(0.0, 2)]];
        let mut kept = vec![true, true, false];
        let eligible = vec![false, false, false];
        assert!(restore_distinct(&mut kept, &eligible, &embeddings, &vectors, &members).is_empty());
        let mut kept = vec![true, false, false];
        let eligible = vec![false, true, true];
        assert!(restore_distinct(&mut kept, &eligible, &embeddings, &vectors, &members).is_empty());
        assert_eq!(kept, vec![true, false, false]);
    }
}
