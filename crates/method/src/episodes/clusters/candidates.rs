//! Candidate episodes (docs/method.md §4; paper §4.3): top articles, fragment distances,
//! complete-linkage clustering (kodama) and cluster pruning.

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::episodes::clusters::partition::{Fragment, SegmentScore};
use crate::episodes::terms::termspace::{
    cosines, cross_cooccurrence_from, mean_std, min_max, squared_norm, Cut, TermSpace,
};
use crate::grouping::linkage::linkage_cut;
use crate::progress::steps::Steps;

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
    sorted.sort_by(by_rank);
    let n = top_count(ranks.len(), delta, min);
    let mut top: Vec<u32> = sorted.into_iter().take(n).map(|(d, _)| d).collect();
    top.sort_unstable();
    top
}

/// How many of `articles` the top holds: the `delta` share rounded up, at least `min`, at least
/// one and at most all.
fn top_count(articles: usize, delta: f64, min: usize) -> usize {
    ((articles as f64 * delta).ceil() as usize)
        .max(min)
        .clamp(1.min(articles), articles)
}

/// Descending rank, ties by doc id.
fn by_rank(a: &(u32, f64), b: &(u32, f64)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// [`top_articles`]' count, spread over the articles' days (`episodes.top_by_day`, issue 45):
/// the same number of top articles, each day's share in proportion to its articles with
/// fragments (largest remainder, ties by day), and each day's share taken by rank within that
/// day. A story's phases are told on different days, so a phase of few articles on its own days
/// brings its best articles to §4 instead of losing them to a larger phase's on other days.
/// Undated articles form a day of their own. Ties by doc id, as [`top_articles`].
pub fn top_articles_by_day(
    ranks: &[(u32, f64)],
    dates: &BTreeMap<u32, Option<i32>>,
    delta: f64,
    min: usize,
) -> Vec<u32> {
    let n = top_count(ranks.len(), delta, min);
    let mut days: BTreeMap<Option<i32>, Vec<(u32, f64)>> = BTreeMap::new();
    for &(doc, rank) in ranks {
        days.entry(dates.get(&doc).copied().flatten())
            .or_default()
            .push((doc, rank));
    }
    // Largest remainder: each day's quota n·share, floors first, then the largest fractions.
    let total = ranks.len().max(1) as f64;
    // Each day's (quota, fraction), in day order.
    let mut quota: Vec<(usize, f64)> = days
        .values()
        .map(|docs| {
            let exact = n as f64 * docs.len() as f64 / total;
            (exact.floor() as usize, exact - exact.floor())
        })
        .collect();
    let given: usize = quota.iter().map(|q| q.0).sum();
    let mut order: Vec<usize> = (0..quota.len()).collect();
    order.sort_by(|&a, &b| quota[b].1.total_cmp(&quota[a].1).then(a.cmp(&b)));
    for &i in order.iter().take(n.saturating_sub(given)) {
        quota[i].0 += 1;
    }
    let mut top: Vec<u32> = Vec::with_capacity(n);
    for (mut docs, (take, _)) in days.into_values().zip(quota) {
        docs.sort_by(by_rank);
        top.extend(docs.into_iter().take(take).map(|(d, _)| d));
    }
    top.sort_unstable();
    top
}

/// Pairwise fragment distances as a condensed upper-triangle matrix (kodama's layout): the
/// cross co-occurrence (both directions averaged) and the average-vector similarity of two
/// fragments' terms, each min–max normalised, inverted as 1/(x+1), normalised again;
/// distance = co + 2·sim (the reference's weights). Each fragment's mean term vector and d sums
/// ([`TermSpace::d_sums`]) are computed once, so a pair costs O(|terms|) and not
/// O(|terms|²); rows are computed in parallel (rayon, the caller's pool) and joined in order,
/// so the result is the same for any number of threads. Quadratic in `fragments.len()`: the
/// caller bounds it ([`capped_top`]).
pub fn fragment_distances(space: &TermSpace, fragments: &[&Fragment], steps: &Steps) -> Vec<f64> {
    let n = fragments.len();
    steps.stage("fragment distances", n);
    let prepared: Vec<(Vec<f32>, Vec<f64>)> = fragments
        .par_iter()
        .map(|f| (space.mean_term_vector(&f.terms), space.d_sums(&f.terms)))
        .collect();
    let means: Vec<&[f32]> = prepared.iter().map(|p| p.0.as_slice()).collect();
    let norms: Vec<f64> = means.iter().map(|m| squared_norm(m)).collect();
    let rows: Vec<Vec<(f64, f64)>> = (0..n)
        .into_par_iter()
        .map(|i| {
            let (a, sums_a) = (&fragments[i].terms, &prepared[i].1);
            let sims = cosines(means[i], norms[i], &means[i + 1..], &norms[i + 1..]);
            let row = (i + 1..n)
                .zip(sims)
                .map(|(j, sim)| {
                    let (b, sums_b) = (&fragments[j].terms, &prepared[j].1);
                    let co = (cross_cooccurrence_from(sums_a, a.len(), b)
                        + cross_cooccurrence_from(sums_b, b.len(), a))
                        / 2.0;
                    (co, sim)
                })
                .collect();
            steps.inc(1);
            row
        })
        .collect();
    let (mut co, mut sim): (Vec<f64>, Vec<f64>) = rows.into_iter().flatten().unzip();
    for scores in [&mut co, &mut sim] {
        min_max(scores);
        for v in scores.iter_mut() {
            *v = 1.0 / (*v + 1.0);
        }
        min_max(scores);
    }
    co.iter().zip(&sim).map(|(c, s)| c + 2.0 * s).collect()
}

/// The fragments that enter the pairwise steps (§4), at most `cap` of them (0: no cap): the top
/// articles' fragments, article by article in descending rank (`ranks`, ties by doc id), while
/// the next article's fragments still fit; an article with more than `cap` fragments on its own,
/// when it comes first, gives its first `cap`. Returns the indices into `fragments`, in order,
/// and the articles taken. Without a cap (or under it) these are all the top articles'
/// fragments, as the paper has it.
pub fn capped_top(
    fragments: &[Fragment],
    ranks: &[(u32, f64)],
    top: &[u32],
    cap: usize,
) -> (Vec<usize>, Vec<u32>) {
    let mut of_doc: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, f) in fragments.iter().enumerate() {
        of_doc.entry(f.doc_id).or_default().push(i);
    }
    let total: usize = top.iter().map(|d| of_doc.get(d).map_or(0, Vec::len)).sum();
    if cap == 0 || total <= cap {
        let mut chosen: Vec<usize> = top
            .iter()
            .flat_map(|d| of_doc.get(d).into_iter().flatten().copied())
            .collect();
        chosen.sort_unstable();
        return (chosen, top.to_vec());
    }
    let rank: BTreeMap<u32, f64> = ranks.iter().copied().collect();
    let mut by_rank = top.to_vec();
    by_rank.sort_by(|a, b| {
        let (ra, rb) = (rank.get(a).copied(), rank.get(b).copied());
        rb.unwrap_or(f64::NEG_INFINITY)
            .total_cmp(&ra.unwrap_or(f64::NEG_INFINITY))
            .then(a.cmp(b))
    });
    let mut chosen = Vec::new();
    let mut taken = Vec::new();
    for doc in by_rank {
        let own = of_doc.get(&doc).map_or(&[][..], Vec::as_slice);
        if chosen.len() + own.len() > cap {
            if chosen.is_empty() {
                chosen.extend(own.iter().take(cap).copied());
                taken.push(doc);
            }
            break;
        }
        chosen.extend(own.iter().copied());
        taken.push(doc);
    }
    chosen.sort_unstable();
    taken.sort_unstable();
    (chosen, taken)
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
    use crate::episodes::terms::termspace::SalientTerm;
    use std::collections::HashMap;

    /// A term space of `n` terms with pseudo-random d and vectors (a fixed recurrence).
    fn space(n: usize) -> TermSpace {
        let mut x = 7u64;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 33) as f64) / f64::from(u32::MAX) - 0.25
        };
        let terms: Vec<SalientTerm> = (0..n)
            .map(|i| SalientTerm {
                term: format!("t{i}"),
                salience: 1.0 + i as f64,
                group: i as u32,
            })
            .collect();
        let mut pairs = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                if (a * 7 + b) % 3 != 0 {
                    pairs.push((format!("t{a}"), format!("t{b}"), 2, next()));
                }
            }
        }
        let vectors: HashMap<String, Vec<f32>> = (0..n)
            .filter(|i| i % 5 != 4)
            .map(|i| (format!("t{i}"), (0..6).map(|_| next() as f32).collect()))
            .collect();
        TermSpace::new(terms, &pairs, &vectors)
    }

    #[test]
    fn fragment_distances_equal_the_pairwise_formula_to_the_bit() {
        // The precomputed sums and mean vectors must give exactly what the pair-by-pair
        // formula (§4) gives, whatever the number of threads.
        let space = space(12);
        let fragments: Vec<Fragment> = (0..9)
            .map(|f| Fragment {
                doc_id: f as u32,
                segments: vec![f],
                terms: (0..12)
                    .filter(|t| (t * 5 + f) % 4 != 0)
                    .take(2 + f % 6)
                    .collect(),
            })
            .collect();
        let refs: Vec<&Fragment> = fragments.iter().collect();
        let mut co = Vec::new();
        let mut sim = Vec::new();
        for i in 0..refs.len() {
            for j in i + 1..refs.len() {
                let (a, b) = (&refs[i].terms, &refs[j].terms);
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
        let want: Vec<f64> = co.iter().zip(&sim).map(|(c, s)| c + 2.0 * s).collect();
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let got = pool.install(|| fragment_distances(&space, &refs, &Steps::quiet()));
            assert_eq!(got, want, "{threads} thread(s)");
        }
    }

    /// Eight articles: six on day 1 ranked above two on day 2. The top half by rank is four of
    /// day 1's; spread over the days it is three of day 1's best and day 2's best, the same
    /// count; with one day, or no dates, it is the plain top.
    #[test]
    fn the_top_by_day_gives_each_day_its_share_of_the_same_count() {
        let ranks: Vec<(u32, f64)> = (0..8).map(|d| (d, 10.0 - d as f64)).collect();
        let dates: BTreeMap<u32, Option<i32>> = (0..8)
            .map(|d| (d, Some(if d < 6 { 1 } else { 2 })))
            .collect();
        assert_eq!(top_articles(&ranks, 0.5, 0), vec![0, 1, 2, 3]);
        assert_eq!(
            top_articles_by_day(&ranks, &dates, 0.5, 0),
            vec![0, 1, 2, 6]
        );
        let one_day: BTreeMap<u32, Option<i32>> = (0..8).map(|d| (d, Some(1))).collect();
        assert_eq!(
            top_articles_by_day(&ranks, &one_day, 0.5, 0),
            vec![0, 1, 2, 3]
        );
        assert_eq!(
            top_articles_by_day(&ranks, &BTreeMap::new(), 0.5, 0),
            vec![0, 1, 2, 3]
        );
        assert_eq!(top_articles_by_day(&ranks, &dates, 0.25, 5).len(), 5);
    }

    #[test]
    fn the_capped_top_never_exceeds_its_cap_and_takes_whole_articles_by_rank() {
        // Articles 0..6 with 1, 2, 3, 1, 4, 2 fragments; ranks favour 4, then 2, 0, 5, 1, 3.
        let counts = [1usize, 2, 3, 1, 4, 2];
        let fragments: Vec<Fragment> = counts
            .iter()
            .enumerate()
            .flat_map(|(doc, &n)| {
                (0..n).map(move |_| Fragment {
                    doc_id: doc as u32,
                    segments: vec![0],
                    terms: vec![],
                })
            })
            .collect();
        let ranks = [(0, 4.0), (1, 2.0), (2, 5.0), (3, 1.0), (4, 9.0), (5, 3.0)];
        let top: Vec<u32> = (0..6).collect();
        // No cap, or a cap above the total: every top article's fragments.
        for cap in [0, 13, 100] {
            let (chosen, taken) = capped_top(&fragments, &ranks, &top, cap);
            assert_eq!(chosen, (0..13).collect::<Vec<_>>());
            assert_eq!(taken, top);
        }
        // Cap 8: article 4 (4), article 2 (3), then article 0 (1) fits; article 5 would not.
        let (chosen, taken) = capped_top(&fragments, &ranks, &top, 8);
        assert_eq!(taken, vec![0, 2, 4]);
        assert_eq!(chosen.len(), 8);
        assert!(chosen.iter().all(|&f| taken.contains(&fragments[f].doc_id)));
        for cap in 1..13 {
            let (chosen, taken) = capped_top(&fragments, &ranks, &top, cap);
            assert!(chosen.len() <= cap, "cap {cap}: {}", chosen.len());
            assert!(!taken.is_empty());
            assert!(chosen.windows(2).all(|w| w[0] < w[1]));
        }
        // An article with more fragments than the cap, ranked first, gives its first ones.
        let (chosen, taken) = capped_top(&fragments, &ranks, &top, 3);
        assert_eq!((chosen, taken), (vec![7, 8, 9], vec![4]));
    }

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
