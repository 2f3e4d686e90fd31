//! Word-vector steps of ALGORITHM.md §1 for one key event — expansion of the salient set and
//! synonym groups — and the discriminative co-occurrence (§2, paper eq. 1) of the resulting
//! term set, counted in the group sense (a term occurs where it or a member of its group does).
//!
//! Without vectors (or with no word expanded and every group a single term) the pairs equal
//! those of the statistics dataflow (tested).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::stats::formulas::discriminative;
use crate::tables::{Pair, Term};

use super::termspace::SalientTerm;

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

/// Expands T, forms synonym groups and counts pairs over `segments` (each a segment's set of
/// terms, as [`crate::text::distinct_terms`] gives them). `vectors` may be empty (no vectors).
pub fn build_term_set(
    rows: &[Term],
    vectors: &HashMap<String, Vec<f32>>,
    expansion: f64,
    synonym: f64,
    segments: &[HashSet<String>],
) -> TermSet {
    let mut rows: Vec<Term> = rows.to_vec();
    let units: HashMap<&str, Vec<f32>> = vectors
        .iter()
        .filter_map(|(w, v)| unit(v).map(|u| (w.as_str(), u)))
        .collect();
    let seeds: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].salient).collect();

    // Expansion: a non-salient word whose best cosine to a salient term is ≥ `expansion`.
    if !units.is_empty() {
        let seed_units: Vec<(usize, &Vec<f32>)> = seeds
            .iter()
            .filter_map(|&i| units.get(rows[i].term.as_str()).map(|u| (i, u)))
            .collect();
        let mut expanded: Vec<(usize, usize, f64)> = Vec::new();
        for (w, row) in rows.iter().enumerate() {
            if row.salient {
                continue;
            }
            let Some(u) = units.get(row.term.as_str()) else {
                continue;
            };
            let best = seed_units
                .iter()
                .map(|&(s, su)| (s, dot(u, su)))
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
            if let Some((s, cos)) = best.filter(|b| b.1 >= expansion) {
                expanded.push((w, s, cos));
            }
        }
        for (w, s, cos) in expanded {
            let (from, salience) = (rows[s].term.clone(), rows[s].salience);
            rows[w].salient = true;
            rows[w].salience = cos * salience;
            rows[w].expanded_from = Some(from);
        }
    }

    // T by descending salience (ties by term).
    let mut t: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].salient).collect();
    t.sort_by(|&a, &b| {
        rows[b]
            .salience
            .total_cmp(&rows[a].salience)
            .then(rows[a].term.cmp(&rows[b].term))
    });

    // Synonym groups: each term joins its nearest neighbour in T when cos ≥ `synonym`.
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
        for a in 0..t.len() {
            let Some(ua) = tu[a] else { continue };
            let best = (0..t.len())
                .filter(|&b| b != a)
                .filter_map(|b| tu[b].map(|ub| (b, dot(ua, ub))))
                .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.cmp(&x.0)));
            if let Some((b, _)) = best.filter(|b| b.1 >= synonym) {
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

    // Pairs in the group sense.
    let index: HashMap<&str, usize> = salient
        .iter()
        .enumerate()
        .map(|(k, s)| (s.term.as_str(), k))
        .collect();
    let mut members: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (k, s) in salient.iter().enumerate() {
        members.entry(s.group).or_default().push(k);
    }
    let mut freq: HashMap<(usize, usize), u32> = HashMap::new();
    for seg in segments {
        let mut present_groups: Vec<u32> = seg
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
    let key_event = rows
        .first()
        .map(|r| r.key_event.clone())
        .unwrap_or_default();
    let mut pairs: Vec<Pair> = freq
        .iter()
        .map(|(&(a, b), &f)| {
            let (mut x, mut y) = (salient[a].term.clone(), salient[b].term.clone());
            if y < x {
                std::mem::swap(&mut x, &mut y);
            }
            Pair {
                key_event: key_event.clone(),
                a: x,
                b: y,
                freq: f,
                d: discriminative(f, sum[a], sum[b], big_f[a], big_f[b], n as u32),
            }
        })
        .collect();
    pairs.sort_by(|p, q| (&p.a, &p.b).cmp(&(&q.a, &q.b)));
    TermSet {
        rows,
        salient,
        pairs,
    }
}
