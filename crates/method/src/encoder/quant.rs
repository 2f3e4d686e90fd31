//! The int8 option of the CPU encoder (docs/method.md §1, §6: the encoders' linear layers): dynamic
//! quantization of every linear layer `y = x · W + b` of the transformer, as PyTorch's
//! `quantize_dynamic`, off by default (`encoder.int8`).
//!
//! - **Weights:** symmetric int8 per output column, `W[k][j] ≈ s_j · w[j][k]` with
//!   `s_j = max_k |W[k][j]| / 127`, made once when the model loads.
//! - **Activations:** symmetric 13-bit per row, made at every product:
//!   `x[i][k] ≈ t_i · q[i][k]` with `t_i = max_k |x[i][k]| / 4095`.
//! - **Product:** `y[i][j] = (Σ_k q[i][k] · w[j][k]) · (t_i · s_j) + b[j]`. The sums are exact
//!   integers (|Σ| ≤ 4095 · 127 · K < 2³¹ for K ≤ [`MAX_D_IN`]), so every instruction set gives
//!   the same bits: the AVX2 kernel and the portable loop are tested equal.
//!
//! The AVX2 kernel multiplies with `vpmaddwd` (16 i16 products added pairwise into 8 i32, through
//! pulp's safe intrinsics; no `unsafe`). Why 13-bit activations and not 8: on
//! all-MiniLM-L6-v2 over 1,000 development segments, 7-bit unsigned activations on the
//! `vpmaddubsw` kernel (x86's u8 × i8 product, as fbgemm's; 7 bits so that its i16 pair sums
//! cannot saturate) gave embeddings at cosine 0.9969 (mean) / 0.9916 (worst) to f32 and cost
//! 7.5 points of 5-F1 on the development set, at the same speed on this AVX2 CPU (AMD Zen 3;
//! our reading: one vector-integer multiply a cycle, so `vpmaddubsw` + the widening `vpmaddwd`
//! do 32 products in two multiplies, as one `vpmaddwd` does 16). 13-bit activations give cosine 0.9995 / 0.9981.
//! Attention's own products (`q kᵀ`, `p v`) stay in f32.

use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use rayon::prelude::*;

/// Values a quantized row holds per SIMD step (i16 lanes of a 256-bit register).
const STEP: usize = 16;
/// Rows of the activations one kernel call computes.
const MR: usize = 2;
/// Output columns one kernel call computes (4: the AVX2 kernel's lane sums assume it).
const NR: usize = 4;
const _: () = assert!(NR == 4 && ROWS_PER_TASK.is_multiple_of(MR));
/// Rows one rayon task quantizes and multiplies (a multiple of [`MR`]).
const ROWS_PER_TASK: usize = 32 * MR;
/// The largest weight magnitude (symmetric int8: -127..=127).
const QMAX: f32 = 127.0;
/// The largest activation magnitude (symmetric 13-bit: -4095..=4095).
const QMAX_A: f32 = 4095.0;
/// The widest input the exact i32 sums allow: `4095 · 127 · K < 2³¹` (all-mpnet-base-v2's
/// widest is 3,072).
pub const MAX_D_IN: usize = 4128;
/// `1.5 · 2²³`: adding and subtracting it rounds an f32 below 2²² to the nearest integer, ties to
/// even (IEEE round-to-nearest), in two vectorisable operations.
const ROUND: f32 = 12_582_912.0;

/// One step of `MR` activation rows: `[row][lane]`.
type AStep = [[i16; STEP]; MR];
/// One step of `NR` weight columns: `[column][lane]`.
type WStep = [[i16; STEP]; NR];

/// One linear layer, quantized.
#[derive(Debug, Clone)]
pub struct QuantLinear {
    /// Input width `K`.
    d_in: usize,
    /// Output width `N`.
    d_out: usize,
    /// Steps of [`STEP`] values covering `K` (zero padded).
    steps: usize,
    /// `w[j][k]` packed by panels of [`NR`] columns: panel `p`, step `s` at `p · steps + s`
    /// holds columns `p·NR..p·NR+NR`, inputs `s·STEP..s·STEP+STEP`; zero beyond `N` and `K`.
    weights: Vec<WStep>,
    /// `s_j`, one per output column, zero padded to whole panels.
    scales: Vec<f32>,
    /// `b[j]` (zeros when the layer has none), zero padded to whole panels.
    bias: Vec<f32>,
}

/// The six linear layers of one transformer layer, quantized.
#[derive(Debug, Clone)]
pub struct QuantLayer {
    /// Query projection.
    pub query: QuantLinear,
    /// Key projection.
    pub key: QuantLinear,
    /// Value projection.
    pub value: QuantLinear,
    /// Attention output projection.
    pub attention_output: QuantLinear,
    /// Feed-forward up-projection.
    pub intermediate: QuantLinear,
    /// Feed-forward down-projection.
    pub output: QuantLinear,
}

/// Every transformer layer's linear layers, quantized (see [`super::EncoderModel::quantize`]).
#[derive(Debug, Clone)]
pub struct QuantModel {
    /// One per transformer layer, in order.
    pub layers: Vec<QuantLayer>,
}

/// [`QuantLinear::forward`] on a backend tensor, for several layers of one input (quantized
/// once): `[rows, d_in]` → one `[rows, d_out]` per layer, through host memory (the generic
/// [`super::EncoderBackend::quant_linear_many`]; burn-flex uses its buffers directly).
pub fn linear_many<B: Backend>(layers: &[&QuantLinear], x: Tensor<B, 2>) -> Vec<Tensor<B, 2>> {
    let [rows, _] = x.dims();
    let device = x.device();
    let values = super::host::tensor_values(x.into_data());
    forward_many(layers, &values, Kernel::best())
        .into_iter()
        .zip(layers)
        .map(|(y, l)| Tensor::from_data(TensorData::new(y, [rows, l.d_out]), &device))
        .collect()
}

/// `n` rounded up to a multiple of `m`.
fn round_up(n: usize, m: usize) -> usize {
    n.div_ceil(m) * m
}

/// The symmetric scale of `v` for integers up to `qmax`, `max |v| / qmax` (0 for an all-zero
/// `v`), with lane-wise partial maxima so that it vectorises.
#[inline(always)]
fn scale_of(v: &[f32], qmax: f32) -> f32 {
    let mut lanes = [0.0f32; STEP];
    let (chunks, rest) = v.as_chunks::<STEP>();
    for c in chunks {
        for i in 0..STEP {
            let a = c[i].abs();
            lanes[i] = if a > lanes[i] { a } else { lanes[i] };
        }
    }
    let max = rest
        .iter()
        .chain(&lanes)
        .fold(0.0f32, |m, x| if x.abs() > m { x.abs() } else { m });
    max / qmax
}

impl QuantLinear {
    /// Quantizes `weight` (`[d_in, d_out]` row-major, burn's `Linear` layout: `y = x · W`) and
    /// keeps `bias` (`d_out` values) as it is.
    pub fn new(weight: &[f32], d_in: usize, d_out: usize, bias: Option<&[f32]>) -> Self {
        assert_eq!(weight.len(), d_in * d_out, "weight shape");
        assert!(d_in <= MAX_D_IN, "input width {d_in} above {MAX_D_IN}");
        let steps = d_in.div_ceil(STEP);
        let n_pad = round_up(d_out, NR);
        let mut weights = vec![[[0i16; STEP]; NR]; n_pad / NR * steps];
        let mut scales = vec![0.0f32; n_pad];
        let mut column = vec![0.0f32; d_in];
        for j in 0..d_out {
            for (k, v) in column.iter_mut().enumerate() {
                *v = weight[k * d_out + j];
            }
            let s = scale_of(&column, QMAX);
            scales[j] = s;
            let inv = if s > 0.0 { 1.0 / s } else { 0.0 };
            let panel = &mut weights[j / NR * steps..(j / NR + 1) * steps];
            for (k, v) in column.iter().enumerate() {
                panel[k / STEP][j % NR][k % STEP] = round_i16(v * inv);
            }
        }
        let mut b = vec![0.0f32; n_pad];
        if let Some(bias) = bias {
            assert_eq!(bias.len(), d_out, "bias shape");
            b[..d_out].copy_from_slice(bias);
        }
        Self {
            d_in,
            d_out,
            steps,
            weights,
            scales,
            bias: b,
        }
    }

    /// Output width.
    pub fn d_out(&self) -> usize {
        self.d_out
    }

    /// `x · W + b` for `x` of `rows` rows of `d_in` values, row-major; the result has
    /// `rows` rows of [`Self::d_out`] values. Row-parallel on rayon's pool.
    pub fn forward(&self, x: &[f32]) -> Vec<f32> {
        forward_many(&[self], x, Kernel::best())
            .pop()
            .expect("one layer")
    }
}

/// `x · W + b` for several layers of the same input width (a transformer layer's query, key and
/// value): the activations are quantized once. One result per layer, in order.
fn forward_many(layers: &[&QuantLinear], x: &[f32], kernel: Kernel) -> Vec<Vec<f32>> {
    let k = layers.first().map_or(0, |l| l.d_in);
    let rows = x.len().checked_div(k).unwrap_or(0);
    let mut ys: Vec<Vec<f32>> = layers
        .iter()
        .map(|l| vec![0.0f32; rows * l.d_out])
        .collect();
    let mut outs: Vec<&mut [f32]> = ys.iter_mut().map(Vec::as_mut_slice).collect();
    forward_into_with(layers, x, &mut outs, kernel);
    ys
}

/// `forward_many` into given outputs, `rows · d_out` values each (every value is written): for
/// a backend that hands out its own buffers ([`super::EncoderBackend::quant_linear_many`]).
pub fn forward_into(layers: &[&QuantLinear], x: &[f32], ys: &mut [&mut [f32]]) {
    forward_into_with(layers, x, ys, Kernel::best())
}

fn forward_into_with(layers: &[&QuantLinear], x: &[f32], ys: &mut [&mut [f32]], kernel: Kernel) {
    let k = layers.first().map_or(0, |l| l.d_in);
    assert!(layers.iter().all(|l| l.d_in == k), "input widths differ");
    let rows = x.len().checked_div(k).unwrap_or(0);
    assert_eq!(rows * k, x.len(), "input width");
    assert_eq!(ys.len(), layers.len(), "one output per layer");
    for (y, l) in ys.iter().zip(layers) {
        assert_eq!(y.len(), rows * l.d_out, "output size");
    }
    if rows == 0 {
        return;
    }
    // Per task: its rows of the input and of every output.
    let mut tasks: Vec<(&[f32], Vec<&mut [f32]>)> = x
        .chunks(ROWS_PER_TASK * k)
        .map(|x| (x, Vec::with_capacity(layers.len())))
        .collect();
    for (y, layer) in ys.iter_mut().zip(layers) {
        let width = (ROWS_PER_TASK * layer.d_out).max(1);
        for (task, chunk) in tasks.iter_mut().zip(y.chunks_mut(width)) {
            task.1.push(chunk);
        }
    }
    tasks.into_par_iter().for_each(|(x, mut ys)| match kernel {
        Kernel::Portable => block(layers, x, &mut ys, kernel),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2(simd) => simd.vectorize(|| block(layers, x, &mut ys, kernel)),
    });
}

/// One task: quantize up to [`ROWS_PER_TASK`] rows, multiply by each layer, dequantize into its
/// `ys`. Inlined into the SIMD context of `kernel`, so its loops are compiled for that
/// instruction set.
#[inline(always)]
fn block(layers: &[&QuantLinear], x: &[f32], ys: &mut [&mut [f32]], kernel: Kernel) {
    let (k, steps) = (layers[0].d_in, layers[0].steps);
    let rows = x.len() / k;
    let strips = rows.div_ceil(MR);
    // Activations packed by strips of MR rows: strip `i`, step `s` at `i · steps + s`.
    let mut q = vec![[[0i16; STEP]; MR]; strips * steps];
    let mut t = vec![0.0f32; strips * MR];
    for (i, row) in x.chunks_exact(k).enumerate() {
        let scale = scale_of(row, QMAX_A);
        t[i] = scale;
        let inv = if scale > 0.0 { 1.0 / scale } else { 0.0 };
        let strip = &mut q[i / MR * steps..(i / MR + 1) * steps];
        let (chunks, rest) = row.as_chunks::<STEP>();
        for (dst, src) in strip.iter_mut().zip(chunks) {
            for l in 0..STEP {
                dst[i % MR][l] = round_i16(src[l] * inv);
            }
        }
        for (l, v) in rest.iter().enumerate() {
            strip[chunks.len()][i % MR][l] = round_i16(v * inv);
        }
    }
    let mut acc = [[0i32; NR]; MR];
    for (layer, y) in layers.iter().zip(ys.iter_mut()) {
        let n = layer.d_out;
        for (p, panel) in layer.weights.chunks_exact(steps).enumerate() {
            let j0 = p * NR;
            let scales: &[f32; NR] = layer.scales[j0..j0 + NR].try_into().expect("NR scales");
            let bias: &[f32; NR] = layer.bias[j0..j0 + NR].try_into().expect("NR biases");
            let cols = NR.min(n - j0);
            for (i, strip) in q.chunks_exact(steps).enumerate() {
                kernel.tile(strip, panel, &mut acc);
                for (r, sums) in acc.iter().enumerate().take(rows - i * MR) {
                    let row = i * MR + r;
                    let mut v = [0.0f32; NR];
                    for c in 0..NR {
                        v[c] = sums[c] as f32 * (t[row] * scales[c]) + bias[c];
                    }
                    y[row * n + j0..row * n + j0 + cols].copy_from_slice(&v[..cols]);
                }
            }
        }
    }
}

/// `v` rounded to the nearest integer, ties to even, as i16 (`|v| ≤ 4095` here).
#[inline(always)]
fn round_i16(v: f32) -> i16 {
    ((v + ROUND) - ROUND) as i16
}

/// Which integer kernel runs: exact, so they differ only in speed.
#[derive(Debug, Clone, Copy)]
enum Kernel {
    /// Portable loops.
    Portable,
    /// AVX2 `vpmaddwd` (x86-64 with AVX2 and FMA, detected at run time).
    #[cfg(target_arch = "x86_64")]
    Avx2(pulp::x86::V3),
}

impl Kernel {
    fn best() -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = pulp::x86::V3::try_new() {
            return Kernel::Avx2(simd);
        }
        Kernel::Portable
    }

    /// `acc[r][c] = Σ_k a[r][k] · w[c][k]` over the packed steps of one strip of activations
    /// and one panel of weights.
    #[inline(always)]
    fn tile(self, a: &[AStep], w: &[WStep], acc: &mut [[i32; NR]; MR]) {
        match self {
            Kernel::Portable => portable_tile(a, w, acc),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2(simd) => avx2_tile(simd, a, w, acc),
        }
    }
}

fn portable_tile(a: &[AStep], w: &[WStep], acc: &mut [[i32; NR]; MR]) {
    *acc = [[0; NR]; MR];
    for (a, w) in a.iter().zip(w) {
        for r in 0..MR {
            for c in 0..NR {
                acc[r][c] += a[r]
                    .iter()
                    .zip(&w[c])
                    .map(|(&x, &y)| i32::from(x) * i32::from(y))
                    .sum::<i32>();
            }
        }
    }
}

/// One `MR × NR` tile with AVX2: `MR · NR` accumulators of 8 i32 lanes, each step one
/// `vpmaddwd` (16 i16 products added pairwise into 8 i32) and one add per accumulator; the
/// lanes are summed at the end with `vphaddd`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn avx2_tile(simd: pulp::x86::V3, a: &[AStep], w: &[WStep], out: &mut [[i32; NR]; MR]) {
    use core::arch::x86_64::__m256i;
    let avx2 = simd.avx2;
    let zero: __m256i = pulp::cast([0i32; 8]);
    let mut acc = [[zero; NR]; MR];
    for (a, w) in a.iter().zip(w) {
        let b: [__m256i; NR] = std::array::from_fn(|c| pulp::cast(w[c]));
        for r in 0..MR {
            let a: __m256i = pulp::cast(a[r]);
            for c in 0..NR {
                acc[r][c] = avx2._mm256_add_epi32(acc[r][c], avx2._mm256_madd_epi16(a, b[c]));
            }
        }
    }
    for r in 0..MR {
        // [c0 c1 c2 c3] pairwise sums, twice per 128-bit half, then the halves added.
        let h01 = avx2._mm256_hadd_epi32(acc[r][0], acc[r][1]);
        let h23 = avx2._mm256_hadd_epi32(acc[r][2], acc[r][3]);
        let h: [i32; 8] = pulp::cast(avx2._mm256_hadd_epi32(h01, h23));
        out[r] = std::array::from_fn(|c| h[c] + h[c + 4]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random stream in [-1, 1) with occasional large values.
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|i| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
                if i % 97 == 0 {
                    v * 8.0
                } else {
                    v
                }
            })
            .collect()
    }

    fn reference(x: &[f32], w: &[f32], b: &[f32], k: usize, n: usize) -> Vec<f32> {
        let rows = x.len() / k;
        let mut y = vec![0.0f32; rows * n];
        for i in 0..rows {
            for j in 0..n {
                let mut s = 0.0f64;
                for kk in 0..k {
                    s += f64::from(x[i * k + kk]) * f64::from(w[kk * n + j]);
                }
                y[i * n + j] = s as f32 + b[j];
            }
        }
        y
    }

    /// Odd shapes (rows, widths not multiples of the tile or step) give the same bits on every
    /// kernel, and stay close to the f32 product.
    #[test]
    fn kernels_agree_and_approximate_the_f32_product() {
        for &(rows, k, n) in &[(1, 5, 3), (7, 37, 10), (50, 384, 384), (101, 130, 9)] {
            let x = values(rows * k, 1);
            let w = values(k * n, 2);
            let b = values(n, 3);
            let q = QuantLinear::new(&w, k, n, Some(&b));
            let portable = forward_many(&[&q], &x, Kernel::Portable).remove(0);
            let best = q.forward(&x);
            assert_eq!(portable, best, "kernels differ at {rows}×{k}×{n}");
            let exact = reference(&x, &w, &b, k, n);
            let (mut err, mut norm) = (0.0f64, 0.0f64);
            for (a, e) in best.iter().zip(&exact) {
                err += f64::from(a - e).powi(2);
                norm += f64::from(*e).powi(2);
            }
            let rel = (err / norm).sqrt();
            assert!(rel < 0.03, "relative error {rel} at {rows}×{k}×{n}");
            assert!(rel > 0.0, "quantization changed nothing at {rows}×{k}×{n}");
        }
    }

    /// Several layers of one input give what each gives alone.
    #[test]
    fn shared_quantization_equals_one_at_a_time() {
        let (rows, k) = (70, 40);
        let x = values(rows * k, 7);
        let layers: Vec<QuantLinear> = [9, 16, 1]
            .iter()
            .enumerate()
            .map(|(i, &n)| QuantLinear::new(&values(k * n, 10 + i as u64), k, n, None))
            .collect();
        let refs: Vec<&QuantLinear> = layers.iter().collect();
        let many = forward_many(&refs, &x, Kernel::best());
        for (l, y) in layers.iter().zip(&many) {
            assert_eq!(&l.forward(&x), y);
        }
    }

    /// The widest input at full scale, all of one sign: the largest exact sum (4095 · 127 ·
    /// 4128 < 2³¹) does not wrap, on every kernel.
    #[test]
    fn the_largest_sums_do_not_overflow() {
        let (rows, k, n) = (3, MAX_D_IN, 4);
        let x = vec![2.0f32; rows * k];
        let w = vec![-0.25f32; k * n];
        let q = QuantLinear::new(&w, k, n, None);
        let best = q.forward(&x);
        assert_eq!(forward_many(&[&q], &x, Kernel::Portable).remove(0), best);
        let want = -0.5 * k as f32;
        for v in best {
            assert!((v - want).abs() <= 1e-3 * want.abs(), "{v} against {want}");
        }
    }

    #[test]
    fn zero_rows_and_no_bias() {
        let w = values(4 * 6, 5);
        let q = QuantLinear::new(&w, 4, 6, None);
        let x = vec![0.0f32; 8];
        assert_eq!(q.forward(&x), vec![0.0f32; 12]);
        assert!(q.forward(&[]).is_empty());
    }
}
