//! Phases (issue 45): the kept episodes of one event grouped into the phases they tell, beside
//! them, not instead. A phase of a story told in several vocabularies (a rescue in the words of
//! the crews, of the survivors, of the officials) becomes several episodes, which is what the
//! development set's fine gold episodes need and what a reader following the story does not
//! want: the `episodes` table keeps the episodes and names each one's phase (`phase_id`), so
//! both granularities are there and neither costs the other.
//!
//! The grouping is §5's merge rule over what classification put in each episode: complete
//! linkage of the episodes' member centroids (the mean unit embedding of their segments), cut
//! at μ − σ of their pairwise cosine distances ([`super::join`], which with `episodes.join =
//! "centroids"` joins the episodes themselves). Linear in the segments, quadratic in the
//! episodes (at most `max_episodes`, or the candidates when coverage adds some).

use super::join;

/// Each episode's phase, as the index of the first episode of its phase: `members` are the kept
/// episodes' segments, in episode order. Deterministic (the linkage's ties by index). With
/// fewer than three episodes each is its own phase: one distance has no spread to cut by.
pub fn phases(embeddings: &[Vec<f32>], members: &[Vec<usize>]) -> Vec<usize> {
    if members.len() < 3 {
        return (0..members.len()).collect();
    }
    let labels = join::join(embeddings, members, join::JoinRule::Centroids);
    // Labels are numbered by first group: label ℓ's first episode is the first index holding it.
    let mut first = vec![usize::MAX; members.len()];
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
        assert_eq!(phases(&e, &members), vec![0, 1, 0, 1, 4]);
        assert_eq!(phases(&e, &members[..2]), vec![0, 1]);
        assert!(phases(&e, &[]).is_empty());
    }
}
