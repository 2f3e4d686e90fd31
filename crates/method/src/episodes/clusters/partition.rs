//! Segment salience and article partitioning into episode fragments (docs/method.md §3; paper
//! §4.2 and appendix G).

use rayon::prelude::*;

use crate::episodes::terms::termspace::{lower_bound, mean_std, min_max, TermSpace};

/// Per-segment scores of §3.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentScore {
    /// The segment's score: the mean of its salience, co-occurrence and similarity means (each
    /// min–max normalised over the event); 0 without terms.
    pub score: f64,
    /// The mean of its (normalised) co-occurrence vector, used to rank articles (§4).
    pub cooccurrence: f64,
}

/// Scores every segment (§3): over a segment's terms, three vectors — salience
/// (normalised salience × ln(#terms + 1)), co-occurrence (mean d to the other terms) and
/// similarity (mean cs to the other terms) — each min–max normalised over the whole event.
pub fn score_segments(space: &TermSpace, segment_terms: &[Vec<usize>]) -> Vec<SegmentScore> {
    // Per term of every segment, in order: (salience, co-occurrence, similarity). Segments in
    // parallel (rayon), joined in order; each mean summed in the terms' order, as `mean_std`.
    let per_term: Vec<[f64; 3]> = segment_terms
        .par_chunks(1024)
        .flat_map_iter(|chunk| {
            chunk.iter().flat_map(|terms| {
                let k = terms.len();
                let boost = ((k + 1) as f64).ln();
                terms.iter().map(move |&t| {
                    let others = || terms.iter().filter(move |&&o| o != t);
                    let n = others().count();
                    let mean = |sum: f64| if n == 0 { 0.0 } else { sum / n as f64 };
                    let d = mean(others().map(|&o| space.d(t, o)).sum::<f64>());
                    let c = mean(others().map(|&o| space.cs(t, o)).sum::<f64>());
                    [space.norm_salience[t] * boost, d, c]
                })
            })
        })
        .collect();
    let mut sal: Vec<f64> = per_term.iter().map(|v| v[0]).collect();
    let mut co: Vec<f64> = per_term.iter().map(|v| v[1]).collect();
    let mut sim: Vec<f64> = per_term.iter().map(|v| v[2]).collect();
    drop(per_term);
    min_max(&mut sal);
    min_max(&mut co);
    min_max(&mut sim);
    let mut at = 0;
    segment_terms
        .iter()
        .map(|terms| {
            let k = terms.len();
            if k == 0 {
                return SegmentScore {
                    score: 0.0,
                    cooccurrence: 0.0,
                };
            }
            let range = at..at + k;
            at += k;
            let m = |v: &[f64]| mean_std(&v[range.clone()]).0;
            let (s, c, i) = (m(&sal), m(&co), m(&sim));
            SegmentScore {
                score: (s + c + i) / 3.0,
                cooccurrence: c,
            }
        })
        .collect()
}

/// Which segments are salient: score ≥ μ − σ of all segment scores of the event. A segment
/// without salient terms (score 0) never is: it has nothing to partition on.
pub fn salient_segments(scores: &[SegmentScore]) -> Vec<bool> {
    let values: Vec<f64> = scores.iter().map(|s| s.score).collect();
    let bound = lower_bound(&values);
    scores
        .iter()
        .map(|s| s.score > 0.0 && s.score >= bound)
        .collect()
}

/// An episode fragment: consecutive salient segments of one article that tell one episode.
#[derive(Debug, Clone, PartialEq)]
pub struct Fragment {
    /// The article.
    pub doc_id: u32,
    /// Indices (into the event's segments) of its segments, in order.
    pub segments: Vec<usize>,
    /// The union of its segments' terms, by descending term rank.
    pub terms: Vec<usize>,
}

fn ranked_union(space: &TermSpace, lists: &[&[usize]]) -> Vec<usize> {
    let mut all: Vec<usize> = lists.iter().flat_map(|l| l.iter().copied()).collect();
    all.sort_unstable();
    all.dedup();
    all.sort_by(|&a, &b| space.rank[b].total_cmp(&space.rank[a]).then(a.cmp(&b)));
    all
}

/// Partitions each article's salient segments into fragments (§3): for consecutive salient
/// segments (p, c), c joins p's fragment when the cross co-occurrence, the cross similarity and
/// the average-vector similarity are all at least μ − σ of the same quantity over the article's
/// consecutive pairs. Fragments whose joined text repeats an earlier fragment are dropped.
///
/// `docs` gives each segment's article; segments are in (doc, position) order.
pub fn partition(
    space: &TermSpace,
    docs: &[u32],
    texts: &[&str],
    segment_terms: &[Vec<usize>],
    salient: &[bool],
) -> Vec<Fragment> {
    // Each article's segments (a range), partitioned in parallel (rayon), joined in order.
    let mut articles: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    while start < docs.len() {
        let doc = docs[start];
        let end = start + docs[start..].iter().take_while(|&&d| d == doc).count();
        articles.push((start, end));
        start = end;
    }
    let mut fragments: Vec<Fragment> = articles
        .par_iter()
        .flat_map_iter(|&(start, end)| {
            partition_article(space, docs[start], start..end, segment_terms, salient)
        })
        .collect();
    // Drop fragments whose joined text repeats an earlier one.
    let mut seen = std::collections::HashSet::new();
    fragments.retain(|f| {
        let text: Vec<&str> = f.segments.iter().map(|&i| texts[i]).collect();
        seen.insert(text.join("\n"))
    });
    fragments
}

/// One article's fragments (§3): its salient segments (of `range`), walked in order.
fn partition_article(
    space: &TermSpace,
    doc: u32,
    range: std::ops::Range<usize>,
    segment_terms: &[Vec<usize>],
    salient: &[bool],
) -> Vec<Fragment> {
    let chosen: Vec<usize> = range.filter(|&i| salient[i]).collect();
    if chosen.is_empty() {
        return Vec::new();
    }
    let scores: Vec<[f64; 3]> = chosen
        .windows(2)
        .map(|w| {
            let (p, c) = (&segment_terms[w[0]], &segment_terms[w[1]]);
            [
                space.cross_cooccurrence(p, c),
                space.cross_similarity(p, c),
                space.average_vector_similarity(p, c),
            ]
        })
        .collect();
    let bounds: Vec<f64> = (0..3)
        .map(|q| lower_bound(&scores.iter().map(|s| s[q]).collect::<Vec<_>>()))
        .collect();
    let mut fragments = Vec::new();
    let mut current = vec![chosen[0]];
    for (pair, &c) in scores.iter().zip(&chosen[1..]) {
        let same = (0..3).all(|q| pair[q] >= bounds[q]);
        if !same {
            fragments.push(make(
                space,
                doc,
                std::mem::take(&mut current),
                segment_terms,
            ));
        }
        current.push(c);
    }
    fragments.push(make(space, doc, current, segment_terms));
    fragments
}

fn make(
    space: &TermSpace,
    doc_id: u32,
    segments: Vec<usize>,
    segment_terms: &[Vec<usize>],
) -> Fragment {
    let lists: Vec<&[usize]> = segments
        .iter()
        .map(|&i| segment_terms[i].as_slice())
        .collect();
    Fragment {
        doc_id,
        terms: ranked_union(space, &lists),
        segments,
    }
}
