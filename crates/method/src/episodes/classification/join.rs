//! Episodes that tell one episode, joined after classification (issue 45; docs/method.md §5,
//! "join"; default off): complete linkage of the kept episodes' member centroids (the mean
//! unit embedding of the segments classification put in each) cut at μ − σ of their cosine
//! distances — §5's merge and significance rule, over what each episode holds rather than over
//! the candidates' salience-weighted vectors. Linear in the segments, then quadratic in the
//! episodes.
//!
//! Why it exists: §5's merge joins the candidates before classification, and one phase told in
//! several vocabularies stays several episodes, which then crowd smaller phases out of the cap
//! (docs/quality.md, "Where a phase is lost"). What it costs: on the development set it joins
//! gold episodes that the evaluation keeps apart (docs/quality.md).

use serde::{Deserialize, Serialize};

use crate::episodes::classification::classify;

/// When two episodes join.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JoinRule {
    /// Never (the paper: only §5's merge).
    None,
    /// Complete linkage of the episodes' member centroids cut at μ − σ of their cosine
    /// distances (module doc).
    Centroids,
}

/// The mean direction of `members`' unit embeddings, itself of unit length (zero for none).
fn centroid(embeddings: &[Vec<f32>], members: &[usize]) -> Vec<f64> {
    let mut sum = classify::unit_sum(embeddings, members);
    let norm = dot(&sum, &sum).sqrt();
    if norm > 0.0 {
        sum.iter_mut().for_each(|x| *x /= norm);
    }
    sum
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Joins `groups` (segment indices) by `rule`. Returns, per input group, the index of its
/// joined group (numbered by first group).
pub fn join(embeddings: &[Vec<f32>], groups: &[Vec<usize>], rule: JoinRule) -> Vec<usize> {
    match rule {
        JoinRule::None => (0..groups.len()).collect(),
        JoinRule::Centroids if groups.len() < 2 => (0..groups.len()).collect(),
        JoinRule::Centroids => by_centroids(embeddings, groups),
    }
}

/// The cosine distances between `groups`' member centroids, condensed (pairs `(a, b)`, `a < b`,
/// in row order).
pub fn centroid_distances(embeddings: &[Vec<f32>], groups: &[Vec<usize>]) -> Vec<f64> {
    let centroids: Vec<Vec<f64>> = groups.iter().map(|g| centroid(embeddings, g)).collect();
    cosine_distances(&centroids.iter().map(Vec::as_slice).collect::<Vec<_>>())
}

/// The cosine distances (1 − the dot product) between unit `vectors`, condensed (pairs
/// `(a, b)`, `a < b`, in row order): the input of [`crate::grouping::linkage`].
pub fn cosine_distances(vectors: &[&[f64]]) -> Vec<f64> {
    let n = vectors.len();
    let mut condensed = Vec::with_capacity(n * n.saturating_sub(1) / 2);
    for a in 0..n {
        for b in a + 1..n {
            condensed.push(1.0 - dot(vectors[a], vectors[b]));
        }
    }
    condensed
}

/// [`JoinRule::Centroids`].
fn by_centroids(embeddings: &[Vec<f32>], groups: &[Vec<usize>]) -> Vec<usize> {
    let condensed = centroid_distances(embeddings, groups);
    let bound = crate::episodes::terms::termspace::Cut::MeanMinusStd.bound(&condensed);
    crate::grouping::linkage::linkage_cut(&condensed, groups.len(), kodama::Method::Complete, bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_centroids_join_and_far_ones_stay_apart() {
        // Groups 0 and 1 along x (a little apart), 2 and 3 along y, 4 along z: the distances
        // within {0, 1} and {2, 3} fall below μ − σ of the ten pairs, the rest do not.
        let e: Vec<Vec<f32>> = vec![
            vec![1.0, 0.0, 0.0],
            vec![1.0, 0.1, 0.0],
            vec![0.0, 1.0, 0.0],
            vec![0.1, 1.0, 0.0],
            vec![0.0, 0.0, 1.0],
        ];
        let groups: Vec<Vec<usize>> = (0..5).map(|i| vec![i]).collect();
        assert_eq!(join(&e, &groups, JoinRule::Centroids), vec![0, 0, 1, 1, 2]);
        assert_eq!(join(&e, &groups, JoinRule::None), vec![0, 1, 2, 3, 4]);
        assert_eq!(join(&e, &groups[..1], JoinRule::Centroids), vec![0]);
    }
}
