//! Batch shapes of the encoders' forward passes (docs/method.md §1, §6: how the texts are fed to
//! the model; no paper equation, the floats are those of Eq. 1's encoder).
//!
//! Two policies ([`ShapePolicy`]):
//!
//! - [`ShapePolicy::Exact`] (the CPU default): a batch is padded to its own longest sequence and
//!   has as many rows as sequences ([`super::length_batches`]: longest first, ending early before
//!   a much shorter sequence). Least padding, so least work on the CPU, but nearly every batch
//!   of real text has a new `[rows, seq]` shape.
//! - [`ShapePolicy::Buckets`] (the CUDA default): sequences sorted longest first are cut into
//!   batches of exactly `batch_size` rows (the last one filled with one-token pad rows) and each
//!   batch is padded to the smallest [`length_buckets`] length that holds its longest sequence.
//!   A run then meets at most `length_buckets(max).len()` shapes, all known before the first
//!   batch, so a GPU backend that compiles and autotunes kernels per shape (cubecl) pays that
//!   once per shape ([`super::Encoder::warm_up`]), not once per batch.
//!
//! Padding is exact in both: padded keys get the additive mask `f32::MIN` (zero attention),
//! pooling skips padded positions and pad rows are dropped; only the order of float sums
//! changes, so the embeddings move by rounding (cosine ≥ 0.99999 to [`ShapePolicy::Exact`],
//! `tests/encoder.rs`). A sequence's batch, and so its floats, depends only on the lengths of
//! the texts encoded with it (one encoding unit), never on the worker layout.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// How sequences are grouped and padded into forward passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShapePolicy {
    /// Each batch padded to its own longest sequence, as many rows as sequences.
    Exact,
    /// Fixed rows (`batch_size`, pad rows added) and lengths rounded up to [`length_buckets`].
    Buckets,
}

impl ShapePolicy {
    /// The default of this build: [`Self::Buckets`] with the `cuda` feature, else
    /// [`Self::Exact`].
    pub fn default_for_build() -> Self {
        if cfg!(feature = "cuda") {
            Self::Buckets
        } else {
            Self::Exact
        }
    }

    /// The name used in job files and flags.
    pub fn name(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::Buckets => "buckets",
        }
    }
}

impl std::str::FromStr for ShapePolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "exact" => Ok(Self::Exact),
            "buckets" => Ok(Self::Buckets),
            other => Err(format!("unknown shape policy {other:?} (exact or buckets)")),
        }
    }
}

/// The sequence lengths batches are padded to under [`ShapePolicy::Buckets`] for sequences of
/// at most `max_len` tokens: 16, 32, 48, 64, then steps of ×1.5 and ×2 alternately (96, 128,
/// 192, 256, 384, 512, …), every one a multiple of 16 (tensor-core tiles), the last one
/// `max_len` itself. For all-MiniLM-L6-v2 (`max_seq_length` 256): 8 lengths.
pub fn length_buckets(max_len: usize) -> Vec<usize> {
    let max_len = max_len.max(1);
    let mut out = Vec::new();
    let mut next = 16usize;
    let mut step = 0usize;
    while next < max_len {
        out.push(next);
        next = if next < 64 {
            next + 16
        } else if step.is_multiple_of(2) {
            step += 1;
            next / 2 * 3
        } else {
            step += 1;
            next / 3 * 4
        };
    }
    out.push(max_len);
    out
}

/// The smallest bucket that holds `len` (the last bucket when none does).
pub fn bucket_of(len: usize, buckets: &[usize]) -> usize {
    buckets
        .iter()
        .copied()
        .find(|&b| b >= len)
        .or_else(|| buckets.last().copied())
        .unwrap_or(len)
}

/// Batches of sequences given as `(index, length)` under [`ShapePolicy::Buckets`]: longest first
/// (ties in the given order), `batch_size` at a time; empty sequences skipped.
pub fn fixed_batches(
    sequences: impl IntoIterator<Item = (usize, usize)>,
    batch_size: usize,
) -> Vec<Vec<usize>> {
    let mut order: Vec<(usize, usize)> = sequences.into_iter().filter(|s| s.1 > 0).collect();
    order.sort_by_key(|&(_, len)| std::cmp::Reverse(len));
    order
        .chunks(batch_size.max(1))
        .map(|c| c.iter().map(|&(i, _)| i).collect())
        .collect()
}

/// The `[rows, seq]` shape a batch whose sequences have `lengths` runs at.
pub fn batch_shape(
    policy: ShapePolicy,
    lengths: &[usize],
    batch_size: usize,
    buckets: &[usize],
) -> [usize; 2] {
    let longest = lengths.iter().copied().max().unwrap_or(0).max(1);
    match policy {
        ShapePolicy::Exact => [lengths.len(), longest],
        ShapePolicy::Buckets => [
            batch_size.max(lengths.len()),
            bucket_of(longest, buckets).max(longest),
        ],
    }
}

/// The distinct `[rows, seq]` shapes an encoder has run, with how many batches ran at each.
#[derive(Debug, Default)]
pub struct ShapeLog(Mutex<BTreeMap<[usize; 2], u64>>);

impl ShapeLog {
    /// Notes one batch of `shape`.
    pub fn note(&self, shape: [usize; 2]) {
        if let Ok(mut seen) = self.0.lock() {
            *seen.entry(shape).or_default() += 1;
        }
    }

    /// Every shape met so far with its batch count, in shape order.
    pub fn seen(&self) -> Vec<([usize; 2], u64)> {
        self.0
            .lock()
            .map(|s| s.iter().map(|(k, v)| (*k, *v)).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_few_multiples_of_16_ending_at_the_limit() {
        assert_eq!(length_buckets(256), vec![16, 32, 48, 64, 96, 128, 192, 256]);
        assert_eq!(
            length_buckets(512),
            vec![16, 32, 48, 64, 96, 128, 192, 256, 384, 512]
        );
        assert_eq!(length_buckets(128), vec![16, 32, 48, 64, 96, 128]);
        assert_eq!(length_buckets(200), vec![16, 32, 48, 64, 96, 128, 192, 200]);
        assert_eq!(length_buckets(10), vec![10]);
        for max in 1..2000 {
            let b = length_buckets(max);
            assert_eq!(*b.last().unwrap(), max);
            assert!(b.windows(2).all(|w| w[0] < w[1]), "{b:?}");
            assert!(b.len() <= 16, "{max}: {b:?}");
        }
    }

    #[test]
    fn a_length_goes_to_the_smallest_bucket_that_holds_it() {
        let b = length_buckets(256);
        assert_eq!(bucket_of(1, &b), 16);
        assert_eq!(bucket_of(16, &b), 16);
        assert_eq!(bucket_of(17, &b), 32);
        assert_eq!(bucket_of(97, &b), 128);
        assert_eq!(bucket_of(256, &b), 256);
        assert_eq!(bucket_of(300, &b), 256);
    }

    #[test]
    fn fixed_batches_are_full_but_the_last_and_longest_first() {
        let lengths = [10, 100, 0, 90, 86, 84, 50, 50, 50, 49, 3];
        let batches = fixed_batches(lengths.iter().copied().enumerate(), 4);
        assert_eq!(
            batches,
            vec![vec![1, 3, 4, 5], vec![6, 7, 8, 9], vec![0, 10]]
        );
        let b = length_buckets(256);
        assert_eq!(batch_shape(ShapePolicy::Buckets, &[10, 3], 4, &b), [4, 16]);
        assert_eq!(batch_shape(ShapePolicy::Exact, &[10, 3], 4, &b), [2, 10]);
    }
}
