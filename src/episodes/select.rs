//! Which classified episodes are kept (ALGORITHM.md §6, after the size rule): an optional
//! cohesion rule in the method's own significance terms.

use super::termspace::mean_std;

/// Episodes kept by cohesion: the mean cosine of an episode's assigned segments to its vector,
/// against the same mean over the event's episodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CohesionRule {
    /// Every episode is kept (ALGORITHM.md §6 as written).
    All,
    /// Keep episodes whose cohesion is ≥ μ − σ of the event's episodes' cohesions.
    MeanMinusStd,
    /// Keep episodes whose cohesion is ≥ μ.
    Mean,
}

/// `similarities[e]` holds the cosine of each of episode e's segments to e's vector. Returns
/// which episodes are kept; an episode without segments has cohesion 0. With a rule other than
/// `All`, at least the most cohesive episode is kept.
pub fn cohesive(similarities: &[Vec<f64>], rule: CohesionRule) -> Vec<bool> {
    let cohesion: Vec<f64> = similarities
        .iter()
        .map(|s| if s.is_empty() { 0.0 } else { mean_std(s).0 })
        .collect();
    let (m, sd) = mean_std(&cohesion);
    let bound = match rule {
        CohesionRule::All => return vec![true; similarities.len()],
        CohesionRule::MeanMinusStd => m - sd,
        CohesionRule::Mean => m,
    };
    let best = cohesion.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    cohesion.iter().map(|&c| c >= bound || c == best).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
