//! The per-event mean with a bootstrap interval over events: how much the mean could move with
//! other events of the same kind (events resampled with replacement). What
//! `scripts/quality/quality_report.py` computes for a table of systems; here for one run.

use rand_xoshiro::rand_core::{RngCore, SeedableRng};

/// Bootstrap draws.
pub const DRAWS: usize = 10_000;

/// The generator's fixed seed (`quality_report.py`'s), so the interval is the same every time.
const SEED: u64 = 20_251_123;

/// The 5th and 95th percentiles of the mean of `values` over [`DRAWS`] resamples with
/// replacement (a 90% interval); `None` without values.
pub fn bootstrap_90(values: &[f64]) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(SEED);
    let mut means: Vec<f64> = (0..DRAWS)
        .map(|_| {
            (0..n)
                .map(|_| values[(rng.next_u64() % n as u64) as usize])
                .sum::<f64>()
                / n as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((q * DRAWS as f64) as usize).min(DRAWS - 1)];
    Some((at(0.05), at(0.95)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_holds_the_mean_and_narrows_with_more_events() {
        let few: Vec<f64> = (0..6).map(|i| (i % 3) as f64 / 2.0).collect();
        let many: Vec<f64> = (0..60).map(|i| (i % 3) as f64 / 2.0).collect();
        let (lo, hi) = bootstrap_90(&few).unwrap();
        let (lo2, hi2) = bootstrap_90(&many).unwrap();
        assert!(lo < 0.5 && 0.5 < hi, "{lo} {hi}");
        assert!(hi2 - lo2 < (hi - lo) / 2.0, "{lo2} {hi2} against {lo} {hi}");
        // The same values, the same interval; one value, no spread.
        assert_eq!(bootstrap_90(&few), Some((lo, hi)));
        assert_eq!(bootstrap_90(&[0.25]), Some((0.25, 0.25)));
        assert_eq!(bootstrap_90(&[]), None);
    }
}
