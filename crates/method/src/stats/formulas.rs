//! The term statistics as plain functions: salience (paper eq. 3, docs/method.md §1) and
//! discriminative co-occurrence (paper eq. 1, docs/method.md §2).

/// Words occurring in fewer segments than this get salience −1 (docs/method.md §1; the reference
/// code uses `freq ≤ 5`, the paper `< 5`: we follow the spec).
pub const MIN_FREQ: u32 = 5;

/// The salience of a word that is not a term.
pub const NOT_SALIENT: f64 = -1.0;

/// Salience, paper eq. 3: `(1 + ln²(freq)) · ln(N_bg / bgf)`, with `ln(N_bg)` when `bgf = 0`,
/// and −1 when `freq < MIN_FREQ`.
pub fn salience(freq: u32, bg_freq: u32, n_bg: u64) -> f64 {
    if freq < MIN_FREQ {
        return NOT_SALIENT;
    }
    let l = f64::from(freq).ln();
    let idf = if bg_freq == 0 {
        (n_bg as f64).ln()
    } else {
        (n_bg as f64 / f64::from(bg_freq)).ln()
    };
    (1.0 + l * l) * idf
}

/// Discriminative co-occurrence, paper eq. 1 (with the reference's +1):
/// `d(a,b) = ln(freq(a,b) / max(f̄_a, f̄_b)) · ln(|T| / (max(|F_a|, |F_b|) + 1))`, where
/// `f̄_x = (Σ_w freq(x,w)) / |T|` — `sum_a`, `sum_b` are those sums.
pub fn discriminative(
    freq_ab: u32,
    sum_a: u64,
    sum_b: u64,
    f_a: u32,
    f_b: u32,
    t_size: u32,
) -> f64 {
    let t = f64::from(t_size);
    let fbar = sum_a.max(sum_b) as f64 / t;
    (f64::from(freq_ab) / fbar).ln() * (t / (f64::from(f_a.max(f_b)) + 1.0)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salience_by_hand() {
        // freq 5, bgf 10, N 100: (1 + ln²5) · ln 10.
        let l = 5f64.ln();
        assert!((salience(5, 10, 100) - (1.0 + l * l) * 10f64.ln()).abs() < 1e-12);
        assert!((salience(5, 0, 100) - (1.0 + l * l) * 100f64.ln()).abs() < 1e-12);
        assert_eq!(salience(4, 0, 100), NOT_SALIENT);
    }

    #[test]
    fn discriminative_by_hand() {
        // freq 4, sums 8 and 6 over |T| = 4 -> f̄ = 2; F = 3 and 1 -> ln(4 / 4) = 0.
        assert_eq!(discriminative(4, 8, 6, 3, 1, 4), 0.0);
        // |T| = 8 -> f̄ = 8/8 = 1; F = 1 -> ln(4/1) · ln(8/(1+1)).
        let d = discriminative(4, 8, 6, 1, 1, 8);
        assert!((d - (4.0f64 / 1.0).ln() * 4f64.ln()).abs() < 1e-12, "{d}");
    }
}
