//! Word-vector steps of docs/method.md §1 for one key event — expansion of the salient set and
//! synonym groups — and the discriminative co-occurrence (§2, paper eq. 1) of the resulting
//! term set, counted in the group sense (a term occurs where it or a member of its group does).
//!
//! Without vectors (or with no word expanded and every group a single term) the pairs equal
//! those of the statistics dataflow (tested).

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::stats::formulas::discriminative;
use crate::tables::{Pair, Term};

use crate::episodes::terms::termspace::SalientTerm;

/// The event's terms after expansion and grouping.
#[derive(Debug, Clone, Default)]
pub struct TermSet {
    /// Every vocabulary term of the event (the `terms` rows), updated: expanded words become
    /// salient with `expanded_from`, and salient terms carry their group.
    pub rows: Vec<Term>,
    /// T, with salience and group, by descending salience.
    pub salient: Vec<SalientTerm>,
    /// Co-occurring pairs of T (a < b), with freq and d.
    pub pairs: Vec<Pair>,
}

fn unit(v: &[f32]) -> Option<Vec<f32>> {
    let n = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    (n > 0.0).then(|| v.iter().map(|x| (f64::from(*x) / n) as f32).collect())
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

/// A fast f32 dot product (32 lanes; the compiler vectorises it). For unit vectors it is within
/// [`APPROX`] of [`dot`]: each product and sum is rounded at most once per lane step, so the error
/// is below n·2⁻²⁴·Σ|xᵢyᵢ| ≤ n·2⁻²⁴ (2.3·10⁻⁵ at n = 384).
fn dot_approx(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 32];
    let (ca, cb) = (a.chunks_exact(32), b.chunks_exact(32));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        let (x, y): (&[f32; 32], &[f32; 32]) = match (x.try_into(), y.try_into()) {
            (Ok(x), Ok(y)) => (x, y),
            _ => continue,
        };
        for k in 0..32 {
            lanes[k] += x[k] * y[k];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
}

/// A bound on `|dot_approx − dot|` for unit vectors of up to ~4,000 dimensions (see
/// [`dot_approx`]); generous, since it only decides which candidates get an exact dot.
const APPROX: f64 = 2e-4;

/// The candidate (`(id, unit vector)`) with the largest exact [`dot`] with `u`, ties to the smaller
/// id, when that dot is at least `bound`. Exact dots only for the candidates whose fast
/// [`dot_approx`] is within 2·[`APPROX`] of the best fast one (the exact best is always among
/// them), so the answer is the one comparing every candidate exactly would give. The candidate
/// `skip` (the word itself) is left out.
fn best_match(
    u: &[f32],
    candidates: &[(usize, &Vec<f32>)],
    bound: f64,
    skip: Option<usize>,
) -> Option<(usize, f64)> {
    let approx: Vec<f32> = candidates
        .iter()
        .map(|&(id, c)| {
            if Some(id) == skip {
                f32::NEG_INFINITY
            } else {
                dot_approx(u, c)
            }
        })
        .collect();
    let top = approx.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if !top.is_finite() || f64::from(top) + APPROX < bound {
        return None;
    }
    candidates
        .iter()
        .zip(&approx)
        .filter(|(_, &a)| a.is_finite() && f64::from(a) >= f64::from(top) - 2.0 * APPROX)
        .map(|(&(id, c), _)| (id, dot(u, c)))
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
        .filter(|b| b.1 >= bound)
}

/// The bounds of [`build_term_set`] (docs/method.md §1 and the caps that keep a big event's term
/// steps bounded).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TermParams {
    /// Expansion bound (paper: 0.75).
    pub expansion: f64,
    /// Synonym bound (reference: 0.85).
    pub synonym: f64,
    /// At most this many terms in T, the most salient (0: no cap). T's discriminative
    /// co-occurrence and similarity are |T|×|T| matrices ([`crate::episodes::terms::termspace::TermSpace`]), so
    /// the cap bounds their memory and the synonym search.
    pub max_terms: usize,
    /// At most this many non-salient words are tried for expansion, the most frequent in the
    /// event (0: no cap); each is compared with every salient term.
    pub max_candidates: usize,
}

impl TermParams {
    /// The paper's bounds with no caps.
    pub fn uncapped(expansion: f64, synonym: f64) -> Self {
        Self {
            expansion,
            synonym,
            max_terms: 0,
            max_candidates: 0,
        }
    }
}

/// The `cap` first of `items` under `order` (all of them when `cap` is 0 or not reached), in
/// their original order.
fn cap_by<T: Copy + Ord>(
    mut items: Vec<T>,
    cap: usize,
    order: impl Fn(&T, &T) -> std::cmp::Ordering,
) -> Vec<T> {
    if cap == 0 || items.len() <= cap {
        return items;
    }
    items.sort_by(&order);
    items.truncate(cap);
    items.sort_unstable();
    items
}

/// Expands T, forms synonym groups and counts pairs over `segments` (the event's segment texts;
/// a segment's terms are [`crate::terms::distinct_terms`]). `vectors` may be empty (no vectors).
/// Linear in the segments; the expansion compares at most `max_candidates` words with at most
/// `max_terms` salient ones, and the synonym search T with itself, in parallel (rayon) with the
/// same result for any number of threads.
pub fn build_term_set(
    rows: &[Term],
    vectors: &HashMap<String, Vec<f32>>,
    params: &TermParams,
    segments: &[&str],
) -> TermSet {
    let mut rows: Vec<Term> = rows.to_vec();
    let units: HashMap<&str, Vec<f32>> = vectors
        .iter()
        .filter_map(|(w, v)| unit(v).map(|u| (w.as_str(), u)))
        .collect();
    let by_salience = |a: &usize, b: &usize| {
        rows[*b]
            .salience
            .total_cmp(&rows[*a].salience)
            .then(rows[*a].term.cmp(&rows[*b].term))
    };
    let seeds: Vec<usize> = cap_by(
        (0..rows.len()).filter(|&i| rows[i].salient).collect(),
        params.max_terms,
        by_salience,
    );
    let before: Vec<(f64, bool)> = rows.iter().map(|r| (r.salience, r.salient)).collect();
    if !units.is_empty() {
        expand(&mut rows, &units, &seeds, params);
    }
    let t = term_set(&mut rows, &before, params);
    let groups = synonym_groups(&rows, &t, &units, params.synonym);
    for row in rows.iter_mut() {
        row.group = None;
    }
    for (k, &i) in t.iter().enumerate() {
        rows[i].group = Some(groups[k]);
    }
    let salient: Vec<SalientTerm> = t
        .iter()
        .zip(&groups)
        .map(|(&i, &g)| SalientTerm {
            term: rows[i].term.clone(),
            salience: rows[i].salience,
            group: g,
        })
        .collect();
    let key_event = rows
        .first()
        .map(|r| r.key_event.clone())
        .unwrap_or_default();
    let pairs = group_pairs(&key_event, &salient, segments);
    TermSet {
        rows,
        salient,
        pairs,
    }
}

/// Expansion: a non-salient word (of the `max_candidates` most frequent with a vector) whose
/// best cosine to a salient term of `seeds` is ≥ `params.expansion` becomes salient, its
/// salience that cosine times the term's.
fn expand(
    rows: &mut [Term],
    units: &HashMap<&str, Vec<f32>>,
    seeds: &[usize],
    params: &TermParams,
) {
    let expansion = params.expansion;
    let seed_units: Vec<(usize, &Vec<f32>)> = seeds
        .iter()
        .filter_map(|&i| units.get(rows[i].term.as_str()).map(|u| (i, u)))
        .collect();
    let candidates: Vec<usize> = cap_by(
        (0..rows.len())
            .filter(|&w| !rows[w].salient && units.contains_key(rows[w].term.as_str()))
            .collect(),
        params.max_candidates,
        |a, b| {
            rows[*b]
                .freq
                .cmp(&rows[*a].freq)
                .then(rows[*a].term.cmp(&rows[*b].term))
        },
    );
    let expanded: Vec<(usize, usize, f64)> = candidates
        .par_iter()
        .filter_map(|&w| {
            let u = &units[rows[w].term.as_str()];
            best_match(u, &seed_units, expansion, None).map(|(s, cos)| (w, s, cos))
        })
        .collect();
    for (w, s, cos) in expanded {
        let (from, salience) = (rows[s].term.clone(), rows[s].salience);
        rows[w].salient = true;
        rows[w].salience = cos * salience;
        rows[w].expanded_from = Some(from);
    }
}

/// T: the salient rows by descending salience (ties by term), at most `params.max_terms`; the
/// rest leave T (an expanded word as it was before: `before`).
fn term_set(rows: &mut [Term], before: &[(f64, bool)], params: &TermParams) -> Vec<usize> {
    let mut t: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].salient).collect();
    t.sort_by(|&a, &b| {
        rows[b]
            .salience
            .total_cmp(&rows[a].salience)
            .then(rows[a].term.cmp(&rows[b].term))
    });
    if params.max_terms > 0 && t.len() > params.max_terms {
        for &i in &t[params.max_terms..] {
            (rows[i].salience, rows[i].salient) = before[i];
            rows[i].salient = false;
            rows[i].expanded_from = None;
        }
        t.truncate(params.max_terms);
    }
    t
}

/// Synonym groups of T (`t`, indices into `rows`): each term joins its nearest neighbour in T
/// when their cosine is ≥ `synonym`; groups are numbered by their most salient member.
fn synonym_groups(
    rows: &[Term],
    t: &[usize],
    units: &HashMap<&str, Vec<f32>>,
    synonym: f64,
) -> Vec<u32> {
    let mut parent: Vec<usize> = (0..t.len()).collect();
    fn find(p: &mut [usize], x: usize) -> usize {
        let mut r = x;
        while p[r] != r {
            r = p[r];
        }
        p[x] = r;
        r
    }
    if !units.is_empty() {
        let tu: Vec<Option<&Vec<f32>>> = t
            .iter()
            .map(|&i| units.get(rows[i].term.as_str()))
            .collect();
        let with_vectors: Vec<(usize, &Vec<f32>)> = tu
            .iter()
            .enumerate()
            .filter_map(|(b, u)| u.map(|u| (b, u)))
            .collect();
        let nearest: Vec<Option<usize>> = (0..t.len())
            .into_par_iter()
            .map(|a| {
                let ua = tu[a]?;
                best_match(ua, &with_vectors, synonym, Some(a)).map(|(b, _)| b)
            })
            .collect();
        for (a, b) in nearest.into_iter().enumerate() {
            if let Some(b) = b {
                let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
                // The root is the more salient member, so groups number by their best term.
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    let mut group_of_root: BTreeMap<usize, u32> = BTreeMap::new();
    let mut groups = vec![0u32; t.len()];
    for (k, group) in groups.iter_mut().enumerate() {
        let r = find(&mut parent, k);
        let next = group_of_root.len() as u32;
        *group = *group_of_root.entry(r).or_insert(next);
    }
    groups
}

/// Pairs in the group sense: two salient terms co-occur in a segment when their groups both
/// appear in it (counted per chunk of segments and added up: integers, the same for any
/// split), with each pair's discriminative score (docs/method.md §2).
fn group_pairs(key_event: &str, salient: &[SalientTerm], segments: &[&str]) -> Vec<Pair> {
    let index: HashMap<&str, usize> = salient
        .iter()
        .enumerate()
        .map(|(k, s)| (s.term.as_str(), k))
        .collect();
    let mut members: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (k, s) in salient.iter().enumerate() {
        members.entry(s.group).or_default().push(k);
    }
    let count = |chunk: &[&str]| -> FxHashMap<(usize, usize), u32> {
        let mut freq: FxHashMap<(usize, usize), u32> = FxHashMap::default();
        for text in chunk {
            let mut present_groups: Vec<u32> = crate::terms::distinct_terms(text)
                .iter()
                .filter_map(|w| index.get(w.as_str()))
                .map(|&k| salient[k].group)
                .collect();
            present_groups.sort_unstable();
            present_groups.dedup();
            let mut present: Vec<usize> = present_groups
                .iter()
                .flat_map(|g| members[g].iter().copied())
                .collect();
            present.sort_unstable();
            for x in 0..present.len() {
                for y in x + 1..present.len() {
                    *freq.entry((present[x], present[y])).or_default() += 1;
                }
            }
        }
        freq
    };
    // Counts per chunk of segments, added up (integers: the same for any split).
    let freq: FxHashMap<(usize, usize), u32> =
        segments
            .par_chunks(4096)
            .map(count)
            .reduce(FxHashMap::default, |a, b| {
                let (small, mut big) = if a.len() < b.len() { (a, b) } else { (b, a) };
                for (k, v) in small {
                    *big.entry(k).or_default() += v;
                }
                big
            });
    let n = salient.len();
    let mut sum = vec![0u64; n];
    let mut big_f = vec![0u32; n];
    for (&(a, b), &f) in &freq {
        for x in [a, b] {
            sum[x] += u64::from(f);
            if f > 1 {
                big_f[x] += 1;
            }
        }
    }
    let mut pairs: Vec<Pair> = freq
        .iter()
        .map(|(&(a, b), &f)| {
            let (mut x, mut y) = (salient[a].term.clone(), salient[b].term.clone());
            if y < x {
                std::mem::swap(&mut x, &mut y);
            }
            Pair {
                key_event: key_event.to_string(),
                a: x,
                b: y,
                freq: f,
                d: discriminative(f, sum[a], sum[b], big_f[a], big_f[b], n as u32),
            }
        })
        .collect();
    pairs.sort_by(|p, q| (&p.a, &p.b).cmp(&(&q.a, &q.b)));
    pairs
}

#[cfg(test)]
pub(in crate::episodes) mod tests {
    use super::*;

    /// A term row of event "e" (one background document).
    pub(in crate::episodes) fn row(term: &str, freq: u32, salience: f64, salient: bool) -> Term {
        Term {
            key_event: "e".into(),
            term: term.into(),
            freq,
            bg_freq: 1,
            salience,
            salient,
            expanded_from: None,
            group: None,
        }
    }

    #[test]
    fn best_match_is_the_exact_best_with_its_ties() {
        // Pseudo-random unit vectors of 384 dimensions, plus exact copies (ties) and near
        // copies: the fast pre-selection must give what comparing every pair exactly gives.
        let mut x = 11u64;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 33) as f64 / f64::from(u32::MAX)) as f32 - 0.25
        };
        let mut vectors: Vec<Vec<f32>> = (0..60)
            .map(|_| unit(&(0..384).map(|_| next()).collect::<Vec<_>>()).unwrap())
            .collect();
        vectors.push(vectors[7].clone());
        let near: Vec<f32> = vectors[3].iter().map(|v| v * (1.0 + 1e-6)).collect();
        vectors.push(unit(&near).unwrap());
        let candidates: Vec<(usize, &Vec<f32>)> = vectors.iter().enumerate().collect();
        for (a, u) in vectors.iter().enumerate() {
            for bound in [-1.0, 0.0, 0.1, 0.75, 0.999_999] {
                let want = candidates
                    .iter()
                    .filter(|&&(b, _)| b != a)
                    .map(|&(b, v)| (b, dot(u, v)))
                    .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.cmp(&x.0)))
                    .filter(|b| b.1 >= bound);
                assert_eq!(
                    best_match(u, &candidates, bound, Some(a)),
                    want,
                    "{a} {bound}"
                );
            }
        }
    }

    #[test]
    fn the_term_caps_keep_the_most_salient_and_try_the_most_frequent() {
        // Salient: flood (9), rescue (8), levee (7); not: deluge (freq 9), torrent (freq 2).
        let rows = vec![
            row("flood", 20, 9.0, true),
            row("rescue", 15, 8.0, true),
            row("levee", 12, 7.0, true),
            row("deluge", 9, 1.0, false),
            row("torrent", 2, 1.0, false),
        ];
        let vectors: HashMap<String, Vec<f32>> = [
            ("flood", vec![1.0, 0.0, 0.0]),
            ("rescue", vec![0.0, 1.0, 0.0]),
            ("levee", vec![0.0, 0.0, 1.0]),
            ("deluge", vec![0.95, 0.1, 0.0]),
            ("torrent", vec![0.9, 0.0, 0.1]),
        ]
        .into_iter()
        .map(|(w, v)| (w.to_string(), v))
        .collect();
        let texts = ["flood rescue levee", "flood deluge torrent", "rescue levee"];
        let uncapped = build_term_set(&rows, &vectors, &TermParams::uncapped(0.75, 0.85), &texts);
        let names =
            |set: &TermSet| -> Vec<String> { set.salient.iter().map(|t| t.term.clone()).collect() };
        // Both words expand from flood (salience 0.99 · 9, 0.99 · 9 ·…); all five are in T.
        assert_eq!(uncapped.salient.len(), 5, "{:?}", names(&uncapped));
        // At most 3 terms: the three most salient; the expanded words that fall out are back to
        // what they were (not salient, not expanded, their own salience).
        let capped = build_term_set(
            &rows,
            &vectors,
            &TermParams {
                max_terms: 3,
                ..TermParams::uncapped(0.75, 0.85)
            },
            &texts,
        );
        assert_eq!(capped.salient.len(), 3);
        let kept = names(&capped);
        let mut by_salience = uncapped.salient.clone();
        by_salience.truncate(3);
        assert_eq!(
            kept,
            by_salience
                .iter()
                .map(|t| t.term.clone())
                .collect::<Vec<_>>()
        );
        for r in &capped.rows {
            if !kept.contains(&r.term) {
                let before = rows.iter().find(|b| b.term == r.term).unwrap();
                assert_eq!(
                    (r.salient, r.salience, &r.expanded_from),
                    (false, before.salience, &None)
                );
                assert_eq!(r.group, None);
            }
        }
        assert!(capped
            .pairs
            .iter()
            .all(|p| kept.contains(&p.a) && kept.contains(&p.b)));
        // One expansion candidate: the more frequent word (deluge) is tried, torrent is not.
        let one = build_term_set(
            &rows,
            &vectors,
            &TermParams {
                max_candidates: 1,
                ..TermParams::uncapped(0.75, 0.85)
            },
            &texts,
        );
        let expanded: Vec<&str> = one
            .rows
            .iter()
            .filter(|r| r.expanded_from.is_some())
            .map(|r| r.term.as_str())
            .collect();
        assert_eq!(expanded, ["deluge"]);
    }
}
