//! Episode names without an LLM (docs/method.md §5, the no-LLM ablation's keywords; issue 27):
//! the salient terms that set an episode apart from the rest of its key event, not the event's
//! own words that every episode shares.
//!
//! A term's weight in an episode is its contribution to the KL divergence of the episode's term
//! distribution from the event's, over segments: `p_e · ln(p_e / p)`, where `p_e` is the share of
//! the episode's segments that contain the term and `p` the share of all the event's segments
//! that do. A term as common in the episode as in the event ("maui" in every episode of the Maui
//! fires) weighs 0; one frequent in the episode and rare elsewhere weighs most. Terms with no
//! lift (`p_e ≤ p`) come after every term with lift, by `p_e`.
//!
//! Boilerplate — bylines, outlet names, datelines — sits in articles' opening segments: a term
//! whose rate among opening segments is at least [`OPENING_LIFT`] times its rate among the other
//! segments, and which opens at least [`MIN_OPENINGS`] articles, names no episode.

use std::collections::BTreeMap;

/// How much likelier in an article's opening segment than elsewhere a boilerplate term is.
pub const OPENING_LIFT: f64 = 4.0;

/// The fewest articles a boilerplate term opens (fewer is chance).
pub const MIN_OPENINGS: usize = 3;

/// An episode's title without an LLM: its first three keywords.
pub fn title_of(keywords: &[String]) -> String {
    keywords
        .iter()
        .take(3)
        .cloned()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Per term (`0..n_terms`), whether it is boilerplate of articles' openings. `seg_terms[s]` are
/// the terms of segment `s`; `opening[s]` says whether `s` is its article's first segment.
pub fn boilerplate_terms(seg_terms: &[Vec<usize>], opening: &[bool], n_terms: usize) -> Vec<bool> {
    let openings = opening.iter().filter(|&&o| o).count();
    let others = opening.len() - openings;
    let mut in_openings = vec![0usize; n_terms];
    let mut in_others = vec![0usize; n_terms];
    for (terms, &first) in seg_terms.iter().zip(opening) {
        for &t in unique(terms).iter() {
            if first {
                in_openings[t] += 1;
            } else {
                in_others[t] += 1;
            }
        }
    }
    (0..n_terms)
        .map(|t| {
            if openings == 0 || in_openings[t] < MIN_OPENINGS {
                return false;
            }
            let rate_open = in_openings[t] as f64 / openings as f64;
            let rate_other = in_others[t] as f64 / others.max(1) as f64;
            rate_open >= OPENING_LIFT * rate_other
        })
        .collect()
}

/// The `n` most distinctive terms of each group of segments (module doc), boilerplate left out
/// and one term per synonym group (`synonyms[t]`; a segment holds every member of a group that
/// occurs in it, so members weigh the same: the first by index stands for the group); ties by the
/// term's index. Deterministic.
pub fn distinctive_terms(
    groups: &[Vec<usize>],
    seg_terms: &[Vec<usize>],
    boilerplate: &[bool],
    synonyms: &[u32],
    n: usize,
) -> Vec<Vec<usize>> {
    let total = seg_terms.len().max(1) as f64;
    let mut in_event: BTreeMap<usize, usize> = BTreeMap::new();
    for terms in seg_terms {
        for t in unique(terms) {
            *in_event.entry(t).or_default() += 1;
        }
    }
    groups
        .iter()
        .map(|members| {
            let size = members.len().max(1) as f64;
            let mut in_group: BTreeMap<usize, usize> = BTreeMap::new();
            for &s in members {
                for t in unique(&seg_terms[s]) {
                    *in_group.entry(t).or_default() += 1;
                }
            }
            let mut ranked: Vec<(usize, bool, f64)> = in_group
                .into_iter()
                .filter(|&(t, _)| !boilerplate.get(t).copied().unwrap_or(false))
                .map(|(t, k)| {
                    let p_e = k as f64 / size;
                    let p = in_event.get(&t).copied().unwrap_or(k) as f64 / total;
                    let lift = p_e > p;
                    let weight = if lift { p_e * (p_e / p).ln() } else { p_e };
                    (t, lift, weight)
                })
                .collect();
            ranked.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.total_cmp(&a.2)).then(a.0.cmp(&b.0)));
            let mut seen = std::collections::BTreeSet::new();
            ranked
                .into_iter()
                .filter(|&(t, _, _)| seen.insert(synonyms.get(t).copied().unwrap_or(t as u32)))
                .take(n)
                .map(|(t, _, _)| t)
                .collect()
        })
        .collect()
}

/// Mean Jaccard overlap of the first `k` keywords over every pair of an event's episodes (the
/// distinctness measure of issue 27: 0 = no shared keyword, 1 = the same). `None` for fewer than
/// two episodes.
pub fn mean_pairwise_jaccard(keywords: &[Vec<String>], k: usize) -> Option<f64> {
    let sets: Vec<std::collections::BTreeSet<&str>> = keywords
        .iter()
        .map(|w| w.iter().take(k).map(String::as_str).collect())
        .collect();
    let mut sum = 0.0;
    let mut pairs = 0usize;
    for i in 0..sets.len() {
        for j in i + 1..sets.len() {
            let inter = sets[i].intersection(&sets[j]).count() as f64;
            let union = sets[i].union(&sets[j]).count().max(1) as f64;
            sum += inter / union;
            pairs += 1;
        }
    }
    (pairs > 0).then(|| sum / pairs as f64)
}

/// The distinct terms of a segment, in order.
fn unique(terms: &[usize]) -> Vec<usize> {
    let mut u = terms.to_vec();
    u.sort_unstable();
    u.dedup();
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_words_name_no_episode_and_distinct_words_do() {
        // Terms: 0 "maui" (every segment), 1 "fire", 2 "evacuation", 3 "funding", 4 "aid".
        let seg_terms = vec![
            vec![0, 1],
            vec![0, 1, 2],
            vec![0, 2],
            vec![0, 3],
            vec![0, 3, 4],
            vec![0, 4],
        ];
        let groups = vec![vec![0, 1, 2], vec![3, 4, 5]];
        let own = [0, 1, 2, 3, 4];
        let names = distinctive_terms(&groups, &seg_terms, &[false; 5], &own, 2);
        assert_eq!(names, vec![vec![1, 2], vec![3, 4]]);
        // "fire" and "evacuation" as synonyms: one stands for both.
        let synonyms = [0, 1, 1, 3, 4];
        let one = distinctive_terms(&groups, &seg_terms, &[false; 5], &synonyms, 2);
        assert_eq!(one, vec![vec![1, 0], vec![3, 4]]);
        // "maui" comes last: no lift anywhere.
        let all = distinctive_terms(&groups, &seg_terms, &[false; 5], &own, 5);
        assert_eq!(all[0].last(), Some(&0));
        assert_eq!(all[1].last(), Some(&0));
        let words = |ids: &[Vec<usize>]| -> Vec<Vec<String>> {
            ids.iter()
                .map(|w| w.iter().map(|t| t.to_string()).collect())
                .collect()
        };
        assert_eq!(mean_pairwise_jaccard(&words(&names), 2), Some(0.0));
        assert_eq!(mean_pairwise_jaccard(&words(&all), 5), Some(0.2));
        assert_eq!(mean_pairwise_jaccard(&words(&names[..1]), 2), None);
    }

    #[test]
    fn opening_bylines_are_boilerplate_and_body_words_are_not() {
        // Six articles of three segments; term 0 (a byline) opens five of them and appears
        // once elsewhere; term 1 is everywhere; term 2 opens two articles only.
        let mut seg_terms = Vec::new();
        let mut opening = Vec::new();
        for a in 0..6 {
            let mut first = vec![1];
            if a < 5 {
                first.push(0);
            }
            if a < 2 {
                first.push(2);
            }
            seg_terms.push(first);
            opening.push(true);
            seg_terms.push(if a == 0 { vec![0, 1] } else { vec![1] });
            seg_terms.push(vec![1]);
            opening.extend([false, false]);
        }
        assert_eq!(
            boilerplate_terms(&seg_terms, &opening, 3),
            vec![true, false, false]
        );
        // Left out of names even where it has lift.
        let groups = vec![vec![0, 3, 6]];
        let names = distinctive_terms(&groups, &seg_terms, &[true, false, false], &[0, 1, 2], 3);
        assert!(!names[0].contains(&0), "{names:?}");
    }
}
