//! Which classified episodes are kept (docs/method.md §6, after the fixed size rule): optional
//! cohesion and size rules in the method's own significance terms (μ − σ over the event's
//! episodes).

use crate::episodes::terms::termspace::{mean_std, Cut};

/// Episodes kept by cohesion: the mean cosine of an episode's assigned segments to its vector,
/// against the same mean over the event's episodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CohesionRule {
    /// Every episode is kept (docs/method.md §6 as written).
    All,
    /// Keep episodes whose cohesion is ≥ μ − σ of the event's episodes' cohesions.
    MeanMinusStd,
    /// Keep episodes whose cohesion is ≥ μ.
    Mean,
    /// Keep an episode whose members are significantly closer to its vector than the event's
    /// segments are: cohesion ≥ μ + σ of the cosines of all the event's segments to that
    /// vector (issue 45, [`significant`]). Judged per episode against the event, not against
    /// the other episodes, so a coherent episode is kept however coherent the others are. For
    /// `cohesion` only.
    Significant,
    /// Kept by either: ≥ μ − σ of the event's episodes, or significant against the event's
    /// segments ([`CohesionRule::Significant`]) — the default's episodes and every coherent one
    /// it would drop. For `cohesion` only.
    Either,
}

/// [`CohesionRule::Significant`]: `cohesion[e]` (the mean cosine of episode e's members to its
/// vector) against `spread[e]` = (μ, σ) of the cosines of every segment of the event to that
/// vector. Returns which episodes are kept.
pub fn significant(cohesion: &[f64], spread: &[(f64, f64)]) -> Vec<bool> {
    cohesion
        .iter()
        .zip(spread)
        .map(|(&c, &(m, s))| c >= m + s)
        .collect()
}

/// `similarities[e]` holds the cosine of each of episode e's segments to e's vector. Returns
/// which episodes are kept; an episode without segments has cohesion 0. With a rule other than
/// `All`, at least the most cohesive episode is kept.
pub fn cohesive(similarities: &[Vec<f64>], rule: CohesionRule) -> Vec<bool> {
    let cohesion: Vec<f64> = similarities
        .iter()
        .map(|s| if s.is_empty() { 0.0 } else { mean_std(s).0 })
        .collect();
    let bound = match rule {
        // `Significant` needs the event's segments; callers judge it with [`significant`].
        CohesionRule::All | CohesionRule::Significant | CohesionRule::Either => {
            return vec![true; similarities.len()]
        }
        CohesionRule::MeanMinusStd => Cut::MeanMinusStd.bound(&cohesion),
        CohesionRule::Mean => Cut::Mean.bound(&cohesion),
    };
    let best = cohesion.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    cohesion.iter().map(|&c| c >= bound || c == best).collect()
}

/// Narrows `kept` by a rule over the kept entries only: `rule` gets `value(e)` of each kept
/// entry e, in order, and says which of them stay kept.
pub fn narrow<T>(
    kept: &mut [bool],
    value: impl Fn(usize) -> T,
    rule: impl FnOnce(&[T]) -> Vec<bool>,
) {
    let entries: Vec<usize> = (0..kept.len()).filter(|&e| kept[e]).collect();
    let values: Vec<T> = entries.iter().map(|&e| value(e)).collect();
    for (e, keep) in entries.into_iter().zip(rule(&values)) {
        kept[e] = keep;
    }
}

/// Episodes kept by how many segments they were assigned, against the event's other episodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SizeRule {
    /// Only the fixed minimum (`min_segments`, docs/method.md §6) applies.
    All,
    /// Keep episodes whose ln(size) is ≥ μ − σ of the event's episodes' ln(size): sizes spread
    /// multiplicatively (a few episodes absorb most segments), so the bound is taken on their
    /// logarithms, where it does not fall below zero as it does on the raw sizes.
    LogMeanMinusStd,
}

/// `sizes[e]` is the number of segments episode e was assigned (each ≥ 1). Returns which
/// episodes are kept; with `LogMeanMinusStd`, at least the largest is kept.
pub fn large_enough(sizes: &[usize], rule: SizeRule) -> Vec<bool> {
    match rule {
        SizeRule::All => vec![true; sizes.len()],
        SizeRule::LogMeanMinusStd => {
            let logs: Vec<f64> = sizes.iter().map(|&n| (n.max(1) as f64).ln()).collect();
            let bound = Cut::MeanMinusStd.bound(&logs);
            let largest = sizes.iter().copied().max().unwrap_or(0);
            logs.iter()
                .zip(sizes)
                .map(|(&l, &n)| l >= bound || n == largest)
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_applies_a_rule_to_the_kept_entries_only() {
        let mut kept = vec![true, false, true, true];
        // The rule sees the values of entries 0, 2 and 3 and drops the middle one (entry 2).
        narrow(
            &mut kept,
            |e| e * 10,
            |values| {
                assert_eq!(values, [0, 20, 30]);
                vec![true, false, true]
            },
        );
        assert_eq!(kept, [true, false, false, true]);
    }

    #[test]
    fn log_size_bound_by_hand() {
        // ln 100 = 4.605, ln 50 = 3.912, ln 20 = 2.996, ln 3 = 1.099: μ = 3.153,
        // σ = sqrt((2.108 + 0.576 + 0.025 + 4.219) / 4) = 1.316 → μ − σ = 1.837 (≈ 6.3 segments).
        assert_eq!(
            large_enough(&[100, 50, 20, 3], SizeRule::LogMeanMinusStd),
            vec![true, true, true, false]
        );
        // ln-sizes: μ − σ = 2.653 − 1.769 = 0.884 (≈ 2.4 segments). On raw sizes the bound
        // would be 85.8 − 157.1 < 0 and keep every episode: one large episode hides the tail.
        assert_eq!(
            large_enough(&[400, 10, 9, 8, 2], SizeRule::LogMeanMinusStd),
            vec![true, true, true, true, false]
        );
        assert_eq!(
            large_enough(&[7, 7], SizeRule::LogMeanMinusStd),
            vec![true; 2]
        );
        assert_eq!(large_enough(&[5, 1], SizeRule::All), vec![true; 2]);
        assert!(large_enough(&[], SizeRule::LogMeanMinusStd).is_empty());
    }

    #[test]
    fn significance_against_the_event_by_hand() {
        // Episode 0: members at 0.8, the event's segments at 0.5 ± 0.2 → kept (0.8 ≥ 0.7);
        // episode 1: members at 0.6 against 0.5 ± 0.2 → dropped; episode 2: exactly at the bound.
        assert_eq!(
            significant(&[0.8, 0.6, 0.7], &[(0.5, 0.2), (0.5, 0.2), (0.5, 0.2)]),
            vec![true, false, true]
        );
    }

    #[test]
    fn cohesion_bounds_by_hand() {
        // Cohesions: 0.8, 0.6, 0.7, 0.1 → μ = 0.55, σ = sqrt((0.0625 + 0.0025 + 0.0225 +
        // 0.2025) / 4) = sqrt(0.0725) ≈ 0.269: μ − σ ≈ 0.281.
        let sims = vec![vec![0.9, 0.7], vec![0.6], vec![0.5, 0.8, 0.8], vec![0.1]];
        assert_eq!(
            cohesive(&sims, CohesionRule::MeanMinusStd),
            vec![true, true, true, false]
        );
        assert_eq!(
            cohesive(&sims, CohesionRule::Mean),
            vec![true, true, true, false]
        );
        let sims = vec![vec![0.9], vec![0.5], vec![0.6]];
        // μ ≈ 0.667: only the first; μ − σ ≈ 0.667 − 0.170 = 0.497: all three.
        assert_eq!(
            cohesive(&sims, CohesionRule::Mean),
            vec![true, false, false]
        );
        assert_eq!(
            cohesive(&sims, CohesionRule::MeanMinusStd),
            vec![true, true, true]
        );
        assert_eq!(cohesive(&sims, CohesionRule::All), vec![true; 3]);
        assert!(cohesive(&[], CohesionRule::Mean).is_empty());
    }
}
