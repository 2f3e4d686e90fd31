//! One key event's salient term space (docs/method.md §2–§3): the discriminative co-occurrence
//! matrix d (paper eq. 1, with its −∞ and synonym rules), the min–max-normalised cosine
//! similarity cs of static word vectors, and the term rank `ln(max_b freq(a,b)) · max_b d(a,b)`.

use std::collections::HashMap;

/// Mean and (population) standard deviation.
pub fn mean_std(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// μ − σ of `values`: the paper's bound of statistical significance.
pub fn lower_bound(values: &[f64]) -> f64 {
    Cut::MeanMinusStd.bound(values)
}

/// A significance bound over a distribution of values: μ − σ, μ or μ + σ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cut {
    /// μ − σ (the paper's bound of significance).
    MeanMinusStd,
    /// μ.
    Mean,
    /// μ + σ.
    MeanPlusStd,
}

impl Cut {
    /// The bound over `values`.
    pub fn bound(self, values: &[f64]) -> f64 {
        let (m, s) = mean_std(values);
        match self {
            Cut::MeanMinusStd => m - s,
            Cut::Mean => m,
            Cut::MeanPlusStd => m + s,
        }
    }
}

/// Min–max normalises in place to [0, 1] (all zeros when every value is equal).
pub fn min_max(values: &mut [f64]) {
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let span = hi - lo;
    for v in values.iter_mut() {
        *v = if span > 0.0 { (*v - lo) / span } else { 0.0 };
    }
}

/// Cosine of two vectors (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// Σ x·y of f32 vectors in f64, in index order, of `a` with each of four others at once (four
/// independent sums, each the bits [`cosine`]'s own sum gives).
fn dots4(a: &[f32], b: [&[f32]; 4]) -> [f64; 4] {
    let mut acc = [0f64; 4];
    let n = b.iter().map(|v| v.len()).min().unwrap_or(0).min(a.len());
    for k in 0..n {
        let x = f64::from(a[k]);
        for (s, v) in acc.iter_mut().zip(&b) {
            *s += x * f64::from(v[k]);
        }
    }
    acc
}

/// [`cosine`] of `a` with each of `bs`, to the bit, given the squared norms (`na` of `a`, `nbs`
/// of `bs`, each [`squared_norm`]): four dot products a pass over `a` (independent sums, each in
/// index order), the plain formula for vectors of another length (unknown words have none).
pub fn cosines(a: &[f32], na: f64, bs: &[&[f32]], nbs: &[f64]) -> Vec<f64> {
    let of = |dot: f64, nb: f64| -> f64 {
        if na == 0.0 || nb == 0.0 {
            0.0
        } else {
            dot / (na.sqrt() * nb.sqrt())
        }
    };
    let mut out = Vec::with_capacity(bs.len());
    let mut j = 0;
    while j < bs.len() {
        let four = j + 4 <= bs.len() && bs[j..j + 4].iter().all(|b| b.len() == a.len());
        if four {
            let d = dots4(a, [bs[j], bs[j + 1], bs[j + 2], bs[j + 3]]);
            out.extend((0..4).map(|k| of(d[k], nbs[j + k])));
            j += 4;
        } else {
            out.push(cosine(a, bs[j]));
            j += 1;
        }
    }
    out
}

/// Σ x² of an f32 vector in f64, in index order ([`cosine`]'s own sum).
pub fn squared_norm(v: &[f32]) -> f64 {
    v.iter().fold(0f64, |n, &x| n + f64::from(x) * f64::from(x))
}

/// The |V|×|V| matrix of [`cosine`]s (1 on the diagonal), rows in parallel (rayon); the same
/// bits as calling [`cosine`] on every pair ([`cosines`]).
fn cosine_matrix(vecs: &[Vec<f32>]) -> Vec<f64> {
    use rayon::prelude::*;
    let n = vecs.len();
    let norms: Vec<f64> = vecs.iter().map(|v| squared_norm(v)).collect();
    let refs: Vec<&[f32]> = vecs.iter().map(Vec::as_slice).collect();
    let rows: Vec<Vec<f64>> = (0..n)
        .into_par_iter()
        .map(|i| cosines(refs[i], norms[i], &refs[i + 1..], &norms[i + 1..]))
        .collect();
    let mut cs = vec![0.0; n * n];
    for (i, row) in rows.into_iter().enumerate() {
        cs[i * n + i] = 1.0;
        for (k, c) in row.into_iter().enumerate() {
            let j = i + 1 + k;
            cs[i * n + j] = c;
            cs[j * n + i] = c;
        }
    }
    cs
}

/// The mean of some vectors (empty when there are none).
pub fn mean_vector<'a>(vectors: impl Iterator<Item = &'a [f32]>) -> Vec<f32> {
    let mut sum: Vec<f64> = Vec::new();
    let mut n = 0usize;
    for v in vectors {
        if sum.is_empty() {
            sum = vec![0.0; v.len()];
        }
        for (s, x) in sum.iter_mut().zip(v) {
            *s += f64::from(*x);
        }
        n += 1;
    }
    sum.into_iter()
        .map(|s| (s / n.max(1) as f64) as f32)
        .collect()
}

/// A salient term of the event.
#[derive(Debug, Clone)]
pub struct SalientTerm {
    /// The word.
    pub term: String,
    /// Its salience (eq. 3, or the expansion's).
    pub salience: f64,
    /// Its synonym group.
    pub group: u32,
}

/// The event's term space: indices into `terms` are term ids.
#[derive(Debug, Clone)]
pub struct TermSpace {
    /// Salient terms, in the order given.
    pub terms: Vec<SalientTerm>,
    /// Term index by word.
    pub index: HashMap<String, usize>,
    /// Static word vector of each term (may be empty when unknown).
    pub vectors: Vec<Vec<f32>>,
    /// |T|×|T| discriminative co-occurrence, with the replacements of §2.
    d: Vec<f64>,
    /// |T|×|T| normalised cosine similarity.
    cs: Vec<f64>,
    /// Term rank (higher first).
    pub rank: Vec<f64>,
    /// Salience min–max normalised over T.
    pub norm_salience: Vec<f64>,
    /// The terms of each synonym group, by index.
    members: HashMap<u32, Vec<usize>>,
}

impl TermSpace {
    /// Builds the term space from the salient terms, the co-occurring pairs `(a, b, freq, d)`
    /// and static word vectors.
    pub fn new(
        terms: Vec<SalientTerm>,
        pairs: &[(String, String, u32, f64)],
        vectors: &HashMap<String, Vec<f32>>,
    ) -> Self {
        let n = terms.len();
        let index: HashMap<String, usize> = terms
            .iter()
            .enumerate()
            .map(|(i, t)| (t.term.clone(), i))
            .collect();
        let mut d = vec![f64::NEG_INFINITY; n * n];
        let mut max_freq = vec![0u32; n];
        let mut max_d = vec![f64::NEG_INFINITY; n];
        for (a, b, freq, dab) in pairs {
            let (Some(&i), Some(&j)) = (index.get(a), index.get(b)) else {
                continue;
            };
            if i == j {
                continue;
            }
            d[i * n + j] = *dab;
            d[j * n + i] = *dab;
            for k in [i, j] {
                max_freq[k] = max_freq[k].max(*freq);
                max_d[k] = max_d[k].max(*dab);
            }
        }
        let finite: Vec<f64> = d.iter().copied().filter(|v| v.is_finite()).collect();
        let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if finite.is_empty() {
            (0.0, 0.0)
        } else {
            (lo, hi)
        };
        for i in 0..n {
            for j in 0..n {
                let v = &mut d[i * n + j];
                if i == j || terms[i].group == terms[j].group {
                    *v = hi;
                } else if !v.is_finite() {
                    *v = lo;
                }
            }
        }
        let rank = (0..n)
            .map(|i| {
                if max_freq[i] == 0 {
                    f64::NEG_INFINITY
                } else {
                    f64::from(max_freq[i]).ln() * max_d[i]
                }
            })
            .collect();
        let vecs: Vec<Vec<f32>> = terms
            .iter()
            .map(|t| vectors.get(&t.term).cloned().unwrap_or_default())
            .collect();
        let mut cs = cosine_matrix(&vecs);
        min_max(&mut cs);
        let mut norm_salience: Vec<f64> = terms.iter().map(|t| t.salience).collect();
        min_max(&mut norm_salience);
        let mut members: HashMap<u32, Vec<usize>> = HashMap::new();
        for (i, t) in terms.iter().enumerate() {
            members.entry(t.group).or_default().push(i);
        }
        Self {
            terms,
            index,
            vectors: vecs,
            d,
            cs,
            rank,
            norm_salience,
            members,
        }
    }

    /// |T|.
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// Whether T is empty.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// d(a, b) with the §2 replacements.
    pub fn d(&self, a: usize, b: usize) -> f64 {
        self.d[a * self.len() + b]
    }

    /// cs(a, b) in [0, 1].
    pub fn cs(&self, a: usize, b: usize) -> f64 {
        self.cs[a * self.len() + b]
    }

    /// The salient terms of a segment's text, by descending term rank (ties by index). A term
    /// occurs when it or a member of its synonym group occurs. Linear in the segment's words
    /// (each word's group looked up once), not in |T|.
    pub fn segment_terms(&self, text: &str) -> Vec<usize> {
        let mut groups: Vec<u32> = crate::terms::distinct_terms(text)
            .iter()
            .filter_map(|w| self.index.get(w))
            .map(|&i| self.terms[i].group)
            .collect();
        groups.sort_unstable();
        groups.dedup();
        let mut found: Vec<usize> = groups
            .iter()
            .flat_map(|g| self.members[g].iter().copied())
            .collect();
        found.sort_unstable();
        found.sort_by(|&a, &b| self.rank[b].total_cmp(&self.rank[a]).then(a.cmp(&b)));
        found
    }

    /// Harmonic-weighted average over `c`'s terms (weights 1, 1/2, … in rank order) of the mean
    /// d to `p`'s terms (§3 cross co-occurrence).
    pub fn cross_cooccurrence(&self, p: &[usize], c: &[usize]) -> f64 {
        if p.is_empty() || c.is_empty() {
            return 0.0;
        }
        let (mut num, mut den) = (0.0, 0.0);
        for (i, &b) in c.iter().enumerate() {
            let w = 1.0 / (i as f64 + 1.0);
            let m = p.iter().map(|&a| self.d(a, b)).sum::<f64>() / p.len() as f64;
            num += w * m;
            den += w;
        }
        num / den
    }

    /// Mean cs over every (term of p, term of c) pair (§3 cross similarity).
    pub fn cross_similarity(&self, p: &[usize], c: &[usize]) -> f64 {
        if p.is_empty() || c.is_empty() {
            return 0.0;
        }
        let sum: f64 = p
            .iter()
            .flat_map(|&a| c.iter().map(move |&b| (a, b)))
            .map(|(a, b)| self.cs(a, b))
            .sum();
        sum / (p.len() * c.len()) as f64
    }

    /// Cosine of the mean static vectors of two term lists (§3 average-vector similarity).
    pub fn average_vector_similarity(&self, p: &[usize], c: &[usize]) -> f64 {
        cosine(&self.mean_term_vector(p), &self.mean_term_vector(c))
    }

    /// The mean static vector of a term list (terms without a vector left out): one side of
    /// [`TermSpace::average_vector_similarity`], for a caller that compares one list many times.
    pub fn mean_term_vector(&self, terms: &[usize]) -> Vec<f32> {
        mean_vector(
            terms
                .iter()
                .map(|&i| self.vectors[i].as_slice())
                .filter(|v| !v.is_empty()),
        )
    }

    /// For every term t of T, Σ d(a, t) over `p`'s terms a, summed in `p`'s order: with it,
    /// [`TermSpace::cross_cooccurrence`]`(p, c)` is [`cross_cooccurrence_from`] over `c` alone
    /// (the same value to the bit).
    pub fn d_sums(&self, p: &[usize]) -> Vec<f64> {
        (0..self.len())
            .map(|t| p.iter().map(|&a| self.d(a, t)).sum::<f64>())
            .collect()
    }
}

/// [`TermSpace::cross_cooccurrence`]`(p, c)` from `p`'s [`TermSpace::d_sums`] and its length:
/// O(|c|) instead of O(|p|·|c|).
pub fn cross_cooccurrence_from(p_sums: &[f64], p_len: usize, c: &[usize]) -> f64 {
    if p_len == 0 || c.is_empty() {
        return 0.0;
    }
    let (mut num, mut den) = (0.0, 0.0);
    for (i, &b) in c.iter().enumerate() {
        let w = 1.0 / (i as f64 + 1.0);
        let m = p_sums[b] / p_len as f64;
        num += w * m;
        den += w;
    }
    num / den
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> TermSpace {
        let terms = ["flood", "deluge", "rescue", "vote"]
            .iter()
            .enumerate()
            .map(|(i, t)| SalientTerm {
                term: t.to_string(),
                salience: 10.0 - i as f64,
                group: if *t == "deluge" { 0 } else { i as u32 },
            })
            .collect();
        let pairs = vec![
            ("flood".to_string(), "rescue".to_string(), 4, 1.5),
            ("rescue".to_string(), "vote".to_string(), 1, -0.5),
        ];
        let vectors = HashMap::from([
            ("flood".to_string(), vec![1.0, 0.0]),
            ("deluge".to_string(), vec![0.9, 0.1]),
            ("rescue".to_string(), vec![0.0, 1.0]),
            ("vote".to_string(), vec![-1.0, 0.0]),
        ]);
        TermSpace::new(terms, &pairs, &vectors)
    }

    #[test]
    fn the_cosine_matrix_is_pairwise_cosine_to_the_bit() {
        let mut x = 3u64;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 33) as f64 / f64::from(u32::MAX)) as f32 - 0.5
        };
        // 11 vectors (not a multiple of four), one unknown (empty) and one zero.
        let mut vecs: Vec<Vec<f32>> = (0..9).map(|_| (0..37).map(|_| next()).collect()).collect();
        vecs.insert(4, Vec::new());
        vecs.push(vec![0.0; 37]);
        let n = vecs.len();
        let m = cosine_matrix(&vecs);
        for i in 0..n {
            for j in 0..n {
                let want = if i == j {
                    1.0
                } else {
                    cosine(&vecs[i], &vecs[j])
                };
                assert_eq!(m[i * n + j].to_bits(), want.to_bits(), "{i} {j}");
            }
        }
    }

    #[test]
    fn d_replacements() {
        let s = space();
        // Pairs as given; missing pairs get the smallest finite d; self and same group the largest.
        assert_eq!(s.d(0, 2), 1.5);
        assert_eq!(s.d(2, 3), -0.5);
        assert_eq!(s.d(0, 3), -0.5);
        assert_eq!(s.d(0, 1), 1.5, "flood and deluge share a group");
        assert_eq!(s.d(3, 3), 1.5);
    }

    #[test]
    fn cs_is_normalised_and_rank_orders_terms() {
        let s = space();
        // cos(fire, vote) = −1 is the minimum, 1 (self) the maximum.
        assert_eq!(s.cs(0, 3), 0.0);
        assert_eq!(s.cs(0, 0), 1.0);
        assert!((s.cs(0, 2) - 0.5).abs() < 1e-12);
        // rank: fire ln4·1.5, rescue ln4·1.5, vote ln1·(−0.5) = 0, blaze −∞.
        assert_eq!(
            s.segment_terms("Rescue teams fought the flood; a vote."),
            vec![0, 2, 3, 1]
        );
        assert_eq!(
            s.segment_terms("A deluge."),
            vec![0, 1],
            "group members occur together"
        );
    }

    #[test]
    fn cross_scores_by_hand() {
        let s = space();
        // p = [fire], c = [rescue, vote]: (1·d(f,r) + ½·d(f,v)) / 1.5 = (1.5 − 0.25) / 1.5.
        assert!((s.cross_cooccurrence(&[0], &[2, 3]) - 1.25 / 1.5).abs() < 1e-12);
        assert!((s.cross_similarity(&[0], &[2, 3]) - 0.25).abs() < 1e-12);
        assert!(
            (s.average_vector_similarity(&[0], &[0, 1]) - cosine(&[1.0, 0.0], &[0.95, 0.05])).abs()
                < 1e-6
        );
        let (m, sd) = mean_std(&[1.0, 3.0]);
        assert_eq!((m, sd, lower_bound(&[1.0, 3.0])), (2.0, 1.0, 1.0));
    }
}
