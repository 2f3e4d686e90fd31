//! Candidate episodes (ALGORITHM.md §4; paper §4.3): top articles, fragment distances,
//! complete-linkage clustering (kodama) and cluster pruning.

use std::collections::BTreeMap;

use super::partition::{Fragment, SegmentScore};
use super::termspace::{mean_std, min_max, Cut, TermSpace};
use crate::clustering::linkage::linkage_cut;

/// The paper's δ: the share of top-ranked articles whose fragments become candidates.
pub const DEFAULT_TOP_ARTICLES: f64 = 0.25;

/// Article rank (§4): (mean co-occurrence score of its salient segments' terms) ×
/// ln(#fragments + 1). Returns (doc_id, rank) for every article with fragments.
pub fn article_ranks(fragments: &[Fragment], scores: &[SegmentScore]) -> Vec<(u32, f64)> {
    let mut by_doc: BTreeMap<u32, (Vec<f64>, usize)> = BTreeMap::new();
    for f in fragments {
        let entry = by_doc.entry(f.doc_id).or_default();
        entry.1 += 1;
        entry
            .0
            .extend(f.segments.iter().map(|&s| scores[s].cooccurrence));
    }
    by_doc
        .into_iter()
        .map(|(doc, (co, n))| (doc, mean_std(&co).0 * ((n + 1) as f64).ln()))
        .collect()
}

/// The top `delta` share of articles by rank, and at least `min` of them (at least one; ties by
/// doc id).
pub fn top_articles(ranks: &[(u32, f64)], delta: f64, min: usize) -> Vec<u32> {
    let mut sorted = ranks.to_vec();
    sorted.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let n = ((ranks.len() as f64 * delta).ceil() as usize)
        .max(min)
        .clamp(1.min(ranks.len()), ranks.len());
    let mut top: Vec<u32> = sorted.into_iter().take(n).map(|(d, _)| d).collect();
    top.sort_unstable();
    top
}

/// Pairwise fragment distances as a condensed upper-triangle matrix (kodama's layout): the
/// cross co-occurrence (both directions averaged) and the average-vector similarity of two
/// fragments' terms, each min–max normalised, inverted as 1/(x+1), normalised again;
/// distance = co + 2·sim (the reference's weights).
pub fn fragment_distances(space: &TermSpace, fragments: &[&Fragment]) -> Vec<f64> {
    let n = fragments.len();
    let mut co = Vec::with_capacity(n * n.saturating_sub(1) / 2);
    let mut sim = Vec::with_capacity(co.capacity());
    for i in 0..n {
        for j in i + 1..n {
            let (a, b) = (&fragments[i].terms, &fragments[j].terms);
            co.push((space.cross_cooccurrence(a, b) + space.cross_cooccurrence(b, a)) / 2.0);
            sim.push(space.average_vector_similarity(a, b));
        }
    }
    for scores in [&mut co, &mut sim] {
        min_max(scores);
        for v in scores.iter_mut() {
            *v = 1.0 / (*v + 1.0);
        }
        min_max(scores);
    }
    co.iter().zip(&sim).map(|(c, s)| c + 2.0 * s).collect()
}

/// Complete-linkage clustering of `n` items cut at μ − σ of all pairwise distances. Returns a
/// cluster label per item, labels numbered by first item.
pub fn cluster(condensed: &[f64], n: usize) -> Vec<usize> {
    cluster_cut(condensed, n, Cut::MeanMinusStd)
}

/// Complete-linkage clustering of `n` items cut at the `cut` bound of all pairwise distances
/// (merges at distances ≤ the bound). Labels as in [`cluster`].
pub fn cluster_cut(condensed: &[f64], n: usize, cut: Cut) -> Vec<usize> {
    if n < 2 {
        return vec![0; n];
    }
    linkage_cut(condensed, n, kodama::Method::Complete, cut.bound(condensed))
}

/// How candidate clusters are pruned by size (total segments in their fragments).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PruneRule {
    /// Keep clusters of size ≥ μ + σ (the reference's rule for most themes).
    MeanPlusStd,
    /// Keep clusters of size ≥ μ.
    Mean,
    /// Keep clusters of size ≥ μ − σ (the reference's rule for natural disasters).
    MeanMinusStd,
    /// Keep clusters whose fragments come from at least two articles.
    MultiArticle,
}

impl PruneRule {
    /// The size bound, if the rule is one.
    fn cut(self) -> Option<Cut> {
        match self {
            PruneRule::MeanPlusStd => Some(Cut::MeanPlusStd),
            PruneRule::Mean => Some(Cut::Mean),
            PruneRule::MeanMinusStd => Some(Cut::MeanMinusStd),
            PruneRule::MultiArticle => None,
        }
    }
}

/// Which clusters survive pruning. `sizes[c]` is cluster c's total segments, `articles[c]` the
/// number of distinct articles among its fragments. At least the largest cluster survives.
pub fn keep_clusters(sizes: &[usize], articles: &[usize], rule: PruneRule) -> Vec<bool> {
    let values: Vec<f64> = sizes.iter().map(|&s| s as f64).collect();
    let keep: Vec<bool> = match rule.cut() {
        Some(cut) => {
            let bound = cut.bound(&values);
            values.iter().map(|&size| size >= bound).collect()
        }
        None => articles.iter().map(|&arts| arts >= 2).collect(),
    };
    if keep.iter().any(|&k| k) || sizes.is_empty() {
        return keep;
    }
    let largest = (0..sizes.len())
        .max_by_key(|&c| (sizes[c], std::cmp::Reverse(c)))
        .unwrap_or(0);
    (0..sizes.len()).map(|c| c == largest).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_linkage_cut_by_hand() {
        // Points on a line: 0, 1, 10, 11 → distances (condensed): 1, 10, 11, 9, 10, 1.
        // μ = 7, σ = sqrt(((6²+3²+4²+2²+3²+6²)/6)) = sqrt(110/6) ≈ 4.28 → cut ≈ 2.72:
        // {0,1} and {2,3}.
        let d = [1.0, 10.0, 11.0, 9.0, 10.0, 1.0];
        assert_eq!(cluster(&d, 4), vec![0, 0, 1, 1]);
        assert_eq!(cluster(&[], 1), vec![0]);
        // μ = 7 cuts at 7: still {0,1}, {2,3}; μ + σ ≈ 11.28 joins all four.
        assert_eq!(cluster_cut(&d, 4, Cut::Mean), vec![0, 0, 1, 1]);
        assert_eq!(cluster_cut(&d, 4, Cut::MeanPlusStd), vec![0, 0, 0, 0]);
        // Distances 1, 2, 9: μ = 4, σ ≈ 3.56 → μ − σ ≈ 0.44 merges nothing; μ = 4 merges the
        // pair at 1 only (complete linkage puts the third point at max(2, 9) = 9).
        let d = [1.0, 2.0, 9.0];
        assert_eq!(cluster_cut(&d, 3, Cut::MeanMinusStd), vec![0, 1, 2]);
        assert_eq!(cluster_cut(&d, 3, Cut::Mean), vec![0, 0, 1]);
        assert_eq!(Cut::Mean.bound(&d), 4.0);
    }

    #[test]
    fn top_share_and_pruning() {
        let ranks = [(0, 1.0), (1, 3.0), (2, 2.0), (3, 0.5), (4, 2.5)];
        // 25% of 5 = 1.25 → 2 articles: docs 1 and 4.
        assert_eq!(top_articles(&ranks, 0.25, 0), vec![1, 4]);
        // A floor on the count: at least three, never more than there are.
        assert_eq!(top_articles(&ranks, 0.25, 3).len(), 3);
        assert_eq!(top_articles(&ranks, 0.25, 100).len(), ranks.len());
        // sizes 2, 4, 10: μ = 5.33, σ ≈ 3.40.
        let sizes = [2, 4, 10];
        assert_eq!(
            keep_clusters(&sizes, &[1, 2, 3], PruneRule::MeanPlusStd),
            vec![false, false, true]
        );
        assert_eq!(
            keep_clusters(&sizes, &[1, 2, 3], PruneRule::MeanMinusStd),
            vec![true, true, true]
        );
        assert_eq!(
            keep_clusters(&sizes, &[1, 2, 3], PruneRule::Mean),
            vec![false, false, true]
        );
        assert_eq!(
            keep_clusters(&sizes, &[1, 2, 3], PruneRule::MultiArticle),
            vec![false, true, true]
        );
        assert_eq!(
            keep_clusters(&[3, 3], &[1, 1], PruneRule::MultiArticle),
            vec![true, false]
        );
    }
}
