//! Segment classification (docs/method.md §6; paper §4.4, eq. 2): harmonic-weighted episode
//! vectors, top-two cosine gaps, confidence = gap / Σ gaps, and the significance rule.

use rayon::prelude::*;

use crate::episodes::terms::termspace::Cut;
use crate::progress::steps::Steps;

/// Which confidences count as significant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfidenceRule {
    /// confidence ≥ μ − σ (the paper's text).
    MeanMinusStd,
    /// confidence ≥ μ + σ (the authors' code).
    MeanPlusStd,
    /// confidence ≥ μ.
    Mean,
    /// Every segment goes to its top episode (the paper's "No Confidence" ablation).
    All,
}

impl ConfidenceRule {
    /// The bound over the event's confidences (`None`: every segment is assigned).
    fn cut(self) -> Option<Cut> {
        match self {
            ConfidenceRule::MeanMinusStd => Some(Cut::MeanMinusStd),
            ConfidenceRule::MeanPlusStd => Some(Cut::MeanPlusStd),
            ConfidenceRule::Mean => Some(Cut::Mean),
            ConfidenceRule::All => None,
        }
    }
}

/// How an episode's assigned segments are ranked (docs/method.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RankBy {
    /// By confidence, descending (docs/method.md §6, the paper).
    Confidence,
    /// By cosine to the episode vector, descending: the segments that best represent it.
    Similarity,
    /// By local density among the episode's own segments, descending: the mean cosine of a
    /// segment to its `rank_neighbors` most similar fellow members, so that the episode's
    /// tight core (segments that tell one thing in nearly the same words) comes first and
    /// segments that touch the episode only loosely (general ones, several episodes at once)
    /// come after ([`core_density`]).
    Density,
}

/// The unit mean of `members`' unit vectors (`units`, indexed by segment; `None` for none, or
/// for a zero sum).
pub fn unit_centre(units: &[Vec<f64>], members: &[usize]) -> Option<Vec<f64>> {
    let first = members.first()?;
    let mut sum = vec![0f64; units[*first].len()];
    for &s in members {
        for (a, x) in sum.iter_mut().zip(&units[s]) {
            *a += x;
        }
    }
    let norm = dot64(&sum, &sum).sqrt();
    (norm > 0.0).then(|| sum.iter().map(|x| x / norm).collect())
}

/// The embeddings of `members`, each scaled to unit length (a zero vector stays zero), in f64.
pub fn unit_vectors(embeddings: &[Vec<f32>], members: &[usize]) -> Vec<Vec<f64>> {
    members
        .iter()
        .map(|&s| {
            let v = &embeddings[s];
            let norm = v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
            let norm = if norm > 0.0 { norm } else { 1.0 };
            v.iter().map(|&x| f64::from(x) / norm).collect()
        })
        .collect()
}

/// For each of `members` (indices into `embeddings`), the mean cosine to its `k` most similar
/// other members (k clamped to members − 1; 0 for a lone member). Cosines in f64 over the
/// normalized vectors, so the result does not depend on the order of the members. Compares every
/// pair: quadratic in `members.len()` (callers bound it: [`ranked_density`]); rows in parallel
/// (rayon), the same result for any number of threads.
pub fn core_density(embeddings: &[Vec<f32>], members: &[usize], k: usize) -> Vec<f64> {
    let m = members.len();
    let k = k.min(m.saturating_sub(1));
    if k == 0 {
        return vec![0.0; m];
    }
    let unit = unit_vectors(embeddings, members);
    // The upper triangle, rows in parallel, four dot products a pass (each in index order).
    let upper: Vec<Vec<f64>> = (0..m)
        .into_par_iter()
        .map(|i| {
            let mut row = Vec::with_capacity(m - i - 1);
            let mut j = i + 1;
            while j + 4 <= m {
                row.extend(dots4_f64(
                    &unit[i],
                    [&unit[j], &unit[j + 1], &unit[j + 2], &unit[j + 3]],
                ));
                j += 4;
            }
            row.extend((j..m).map(|j| dot64(&unit[i], &unit[j])));
            row
        })
        .collect();
    (0..m)
        .into_par_iter()
        .map(|i| {
            // Row i: the column above the diagonal from the earlier rows, then its own row.
            let mut row: Vec<f64> = (0..i).map(|h| upper[h][i - h - 1]).collect();
            row.extend_from_slice(&upper[i]);
            row.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
            // Summed in a fixed order, so the members' order does not move the last bits.
            row[..k].sort_by(|a, b| b.total_cmp(a));
            row[..k].iter().sum::<f64>() / k as f64
        })
        .collect()
}

/// [`dot64`] of `a` with four vectors in one pass: four independent sums, each from −0 (as
/// `Iterator::sum`) in index order, so the same bits.
fn dots4_f64(a: &[f64], b: [&[f64]; 4]) -> [f64; 4] {
    let mut acc = [-0f64; 4];
    let n = b.iter().map(|v| v.len()).min().unwrap_or(0).min(a.len());
    for k in 0..n {
        for (s, v) in acc.iter_mut().zip(&b) {
            *s += a[k] * v[k];
        }
    }
    acc
}

/// The dot product of two f64 vectors, summed in index order (so `x·y` and `y·x` are the same
/// bits; the cosine of two unit vectors).
pub fn dot64(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// [`core_density`] of an episode's members, with at most `cap` of them compared (0: no cap):
/// when there are more, the `cap` most similar to the episode (`similarity`, aligned with
/// `members`; ties by position) are compared among themselves and the rest get `None`. Returns
/// one entry per member, in `members`' order.
pub fn ranked_density(
    embeddings: &[Vec<f32>],
    members: &[usize],
    similarity: &[f64],
    k: usize,
    cap: usize,
) -> Vec<Option<f64>> {
    if cap == 0 || members.len() <= cap {
        return core_density(embeddings, members, k)
            .into_iter()
            .map(Some)
            .collect();
    }
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by(|&a, &b| similarity[b].total_cmp(&similarity[a]).then(a.cmp(&b)));
    let mut ranked: Vec<usize> = order[..cap].to_vec();
    ranked.sort_unstable();
    let ids: Vec<usize> = ranked.iter().map(|&i| members[i]).collect();
    let mut out = vec![None; members.len()];
    for (i, d) in ranked.into_iter().zip(core_density(embeddings, &ids, k)) {
        out[i] = Some(d);
    }
    out
}

/// The mean pairwise cosine of `members`' unit embeddings (1 for fewer than two).
pub fn mean_pairwise_cosine(embeddings: &[Vec<f32>], members: &[usize]) -> f64 {
    let m = members.len();
    if m < 2 {
        return 1.0;
    }
    // Σ_{i<j} u_i·u_j = (|Σ u|² − Σ |u_i|²) / 2: linear in the members; a unit vector's
    // |u|² is 1, a zero embedding's 0.
    let self_dots = members
        .iter()
        .filter(|&&s| embeddings[s].iter().any(|&x| x != 0.0))
        .count() as f64;
    let total: f64 = unit_sum(embeddings, members).iter().map(|x| x * x).sum();
    let pairs = (m * (m - 1) / 2) as f64;
    (total - self_dots) / 2.0 / pairs
}

/// [`harmonic_mean_vector`] of the embeddings of `members`, in their order (an episode's vector,
/// §6).
pub fn harmonic_vector_of(embeddings: &[Vec<f32>], members: &[usize]) -> Vec<f32> {
    let vectors: Vec<&[f32]> = members.iter().map(|&s| embeddings[s].as_slice()).collect();
    harmonic_mean_vector(&vectors)
}

/// The sum of `members`' unit embeddings ([`unit_vectors`]); zero for none.
pub fn unit_sum(embeddings: &[Vec<f32>], members: &[usize]) -> Vec<f64> {
    let mut sum = vec![0f64; embeddings.first().map_or(0, Vec::len)];
    for u in unit_vectors(embeddings, members) {
        for (a, x) in sum.iter_mut().zip(&u) {
            *a += x;
        }
    }
    sum
}

/// Harmonic-weighted average (weights 1, 1/2, 1/3, …) of vectors in the given order.
pub fn harmonic_mean_vector(vectors: &[&[f32]]) -> Vec<f32> {
    let Some(first) = vectors.first() else {
        return Vec::new();
    };
    let mut sum = vec![0f64; first.len()];
    let mut weights = 0f64;
    for (i, v) in vectors.iter().enumerate() {
        let w = 1.0 / (i as f64 + 1.0);
        weights += w;
        for (s, x) in sum.iter_mut().zip(v.iter()) {
            *s += w * f64::from(*x);
        }
    }
    sum.into_iter().map(|s| (s / weights) as f32).collect()
}

/// One segment's classification.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Classified {
    /// Its top episode.
    pub episode: usize,
    /// gap / Σ gaps (paper eq. 2).
    pub confidence: f64,
    /// Whether the confidence is significant under the rule.
    pub assigned: bool,
    /// Cosine of the segment to its top episode.
    pub similarity: f64,
}

/// Classifies every segment embedding against the episode vectors (paper eq. 2). With one
/// episode the gap is the cosine itself. Linear in segments × episodes; segments in parallel
/// (rayon), the same result for any number of threads.
pub fn classify(
    segments: &[Vec<f32>],
    episodes: &[Vec<f32>],
    rule: ConfidenceRule,
    steps: &Steps,
) -> Vec<Classified> {
    if episodes.is_empty() {
        return Vec::new();
    }
    steps.stage("classification", segments.len());
    let episode_norms: Vec<f64> = episodes.iter().map(|v| squared_norm(v)).collect();
    let tops: Vec<(usize, f64, f64)> = segments
        .par_chunks(CHUNK)
        .flat_map_iter(|chunk| {
            steps.inc(chunk.len());
            chunk.iter().map(|s| {
                let norm = squared_norm(s);
                let mut best = (0usize, f64::NEG_INFINITY);
                let mut second = f64::NEG_INFINITY;
                for (e, v) in episodes.iter().enumerate() {
                    let c = cosine_of(dot(s, v), norm, episode_norms[e]);
                    if c > best.1 {
                        second = best.1;
                        best = (e, c);
                    } else if c > second {
                        second = c;
                    }
                }
                let gap = if second.is_finite() {
                    best.1 - second
                } else {
                    best.1
                };
                (best.0, gap, best.1)
            })
        })
        .collect();
    let total: f64 = tops.iter().map(|t| t.1).sum();
    let confidences: Vec<f64> = tops
        .iter()
        .map(|t| if total > 0.0 { t.1 / total } else { 0.0 })
        .collect();
    let bound = rule
        .cut()
        .map_or(f64::NEG_INFINITY, |cut| cut.bound(&confidences));
    tops.iter()
        .zip(confidences)
        .map(|(&(episode, _, similarity), confidence)| Classified {
            episode,
            confidence,
            assigned: confidence >= bound,
            similarity,
        })
        .collect()
}

/// For each episode vector, (μ, σ) of the cosines of every one of `segments` to it: how close
/// the event's segments lie to it at all (the background of [`crate::episodes::classification::keep_rules::significant`]).
/// Segments in fixed chunks in parallel (rayon), the chunks' sums added in order: the same bits
/// for any number of threads. Linear in segments × episodes, as [`classify`].
pub fn similarity_spread(segments: &[Vec<f32>], episodes: &[Vec<f32>]) -> Vec<(f64, f64)> {
    let k = episodes.len();
    if k == 0 || segments.is_empty() {
        return vec![(0.0, 0.0); k];
    }
    let episode_norms: Vec<f64> = episodes.iter().map(|v| squared_norm(v)).collect();
    let partial: Vec<Vec<(f64, f64)>> = segments
        .par_chunks(CHUNK)
        .map(|chunk| {
            let mut sums = vec![(0f64, 0f64); k];
            for s in chunk {
                let norm = squared_norm(s);
                for (e, v) in episodes.iter().enumerate() {
                    let c = cosine_of(dot(s, v), norm, episode_norms[e]);
                    sums[e].0 += c;
                    sums[e].1 += c * c;
                }
            }
            sums
        })
        .collect();
    let n = segments.len() as f64;
    (0..k)
        .map(|e| {
            let (sum, squares) = partial
                .iter()
                .fold((0f64, 0f64), |(a, b), p| (a + p[e].0, b + p[e].1));
            let mean = sum / n;
            (mean, (squares / n - mean * mean).max(0.0).sqrt())
        })
        .collect()
}

/// Segments per task of [`classify`]'s parallel loop.
const CHUNK: usize = 1024;

/// Σ x² in f64, in index order ([`cosine`](crate::episodes::terms::termspace::cosine)'s own sum).
fn squared_norm(v: &[f32]) -> f64 {
    v.iter().fold(0f64, |n, &x| n + f64::from(x) * f64::from(x))
}

/// Σ x·y in f64, in index order ([`cosine`](crate::episodes::terms::termspace::cosine)'s own sum).
fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .fold(0f64, |d, (&x, &y)| d + f64::from(x) * f64::from(y))
}

/// [`cosine`] from its three sums (the same bits as [`cosine`](crate::episodes::terms::termspace::cosine) of vectors of equal length).
fn cosine_of(dot: f64, na: f64, nb: f64) -> f64 {
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_density_ranks_the_tight_core_above_a_loose_member() {
        let embeddings = vec![
            vec![1.0, 0.0, 0.0],
            vec![0.99, 0.1, 0.0],
            vec![0.0, 0.0, 1.0],
            vec![0.98, 0.0, 0.15],
            vec![0.5, 0.5, 0.5],
        ];
        let members = [0, 1, 3, 4];
        let d = core_density(&embeddings, &members, 2);
        assert_eq!(d.len(), 4);
        // The loose member (index 4) has the lowest density; the core's three are above it.
        let lowest = (0..4).min_by(|&a, &b| d[a].total_cmp(&d[b])).unwrap();
        assert_eq!(members[lowest], 4, "{d:?}");
        // The same members in another order get the same densities.
        let shuffled = core_density(&embeddings, &[4, 3, 1, 0], 2);
        assert_eq!(shuffled, vec![d[3], d[2], d[1], d[0]]);
        // k is clamped; a lone member gets 0.
        assert_eq!(core_density(&embeddings, &[2], 10), vec![0.0]);
        assert_eq!(core_density(&embeddings, &[0, 2], 10), vec![0.0, 0.0]);
    }

    #[test]
    fn ranked_density_compares_at_most_its_cap_the_most_similar_first() {
        let embeddings: Vec<Vec<f32>> = (0..40)
            .map(|i| {
                let a = i as f32 * 0.37;
                vec![a.cos(), a.sin(), 0.1 * (i % 3) as f32]
            })
            .collect();
        let members: Vec<usize> = (0..40).rev().collect();
        let similarity: Vec<f64> = members.iter().map(|&s| ((s * 13) % 17) as f64).collect();
        // Under the cap: every member, the same as core_density.
        let all = ranked_density(&embeddings, &members, &similarity, 4, 0);
        let exact = core_density(&embeddings, &members, 4);
        assert_eq!(all, exact.iter().copied().map(Some).collect::<Vec<_>>());
        assert_eq!(
            ranked_density(&embeddings, &members, &similarity, 4, 40),
            all
        );
        // Over it: exactly `cap` compared, the most similar ones (ties by position), and their
        // densities are those among themselves.
        let capped = ranked_density(&embeddings, &members, &similarity, 4, 10);
        let compared: Vec<usize> = (0..40).filter(|&i| capped[i].is_some()).collect();
        assert_eq!(compared.len(), 10);
        let lowest_in = compared
            .iter()
            .map(|&i| similarity[i])
            .fold(f64::MAX, f64::min);
        assert!((0..40)
            .filter(|i| capped[*i].is_none())
            .all(|i| similarity[i] <= lowest_in));
        let ids: Vec<usize> = compared.iter().map(|&i| members[i]).collect();
        let among = core_density(&embeddings, &ids, 4);
        for (k, &i) in compared.iter().enumerate() {
            assert_eq!(capped[i], Some(among[k]));
        }
        // The same for any number of threads.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let threaded = pool.install(|| ranked_density(&embeddings, &members, &similarity, 4, 10));
        assert_eq!(threaded, capped);
    }

    #[test]
    fn harmonic_weights() {
        let v = harmonic_mean_vector(&[&[3.0, 0.0], &[0.0, 3.0]]);
        // (1·(3,0) + ½·(0,3)) / 1.5 = (2, 1).
        assert_eq!(v, vec![2.0, 1.0]);
    }

    #[test]
    fn gaps_and_rules_by_hand() {
        let episodes = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
        // Gaps: (1,0) → 1 (episode 0); (0,1) → 1 (episode 1); (1,1) → 0 twice (tie: episode 0).
        // Σ = 2: confidences 0.5, 0.5, 0, 0; μ = 0.25, σ = 0.25.
        let segs = vec![
            vec![1.0, 0.0],
            vec![0.0, 1.0],
            vec![1.0, 1.0],
            vec![1.0, 1.0],
        ];
        let plus = classify(
            &segs,
            &episodes,
            ConfidenceRule::MeanPlusStd,
            &Steps::quiet(),
        );
        let minus = classify(
            &segs,
            &episodes,
            ConfidenceRule::MeanMinusStd,
            &Steps::quiet(),
        );
        assert_eq!(
            plus.iter().map(|c| c.episode).collect::<Vec<_>>(),
            [0, 1, 0, 0]
        );
        assert_eq!(
            plus.iter().map(|c| c.confidence).collect::<Vec<_>>(),
            [0.5, 0.5, 0.0, 0.0]
        );
        // μ + σ = 0.5: the first two; μ − σ = 0: all four.
        assert_eq!(
            plus.iter().map(|c| c.assigned).collect::<Vec<_>>(),
            [true, true, false, false]
        );
        assert_eq!(
            minus.iter().map(|c| c.assigned).collect::<Vec<_>>(),
            [true, true, true, true]
        );
        // μ = 0.25: the first two. Similarity: the cosine to the top episode.
        let mean = classify(&segs, &episodes, ConfidenceRule::Mean, &Steps::quiet());
        assert_eq!(
            mean.iter().map(|c| c.assigned).collect::<Vec<_>>(),
            [true, true, false, false]
        );
        let half = std::f64::consts::FRAC_1_SQRT_2;
        for (c, want) in mean.iter().zip([1.0, 1.0, half, half]) {
            assert!((c.similarity - want).abs() < 1e-9);
        }
        assert!(classify(&segs, &[], ConfidenceRule::All, &Steps::quiet()).is_empty());
    }
}
