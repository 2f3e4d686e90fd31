//! The encoder operations a backend may run faster than burn's generic composition
//! (docs/method.md §1, §6: the encoders' hot loop): the attention probabilities
//! `softmax(scores · scale + bias)` and GELU.
//!
//! [`EncoderBackend`] gives each a generic default made of burn tensor operations (what runs on
//! CUDA). On burn-flex, burn's generic softmax is five single-threaded passes and its GELU a
//! scalar `erf` loop on one thread; the burn-flex implementation here does each in one
//! row-parallel pass over the tensor's own buffer (in place when the buffer is not shared):
//!
//! - `exp` is Cephes' `expf` (range reduction by ln 2 and a degree-6 polynomial, ≤ 2 ulp), written
//!   without branches so the compiler vectorises it;
//! - `erf` is Abramowitz & Stegun 7.1.26 (absolute error ≤ 1.5e-7 in exact arithmetic, ≤ 5e-7
//!   evaluated in f32), the formula of PyTorch's own vectorised CPU `erf` (ATen `vec512_float.h`),
//!   which its CPU GELU uses.

use burn::backend::flex::FlexTensor;
use burn::tensor::backend::Backend;
use burn::tensor::{activation, Tensor, TensorPrimitive};
use rayon::prelude::*;

use super::quant::QuantLinear;

/// A burn backend the encoders run on.
pub trait EncoderBackend: Backend {
    /// Whether the attention mask is built whole, `[batch, heads, seq, seq]`, on the host (true:
    /// fastest where same-shape adds beat broadcasting, burn-flex) or as `[batch, 1, 1, seq]`
    /// and broadcast on the device (false: a GPU, where the whole mask would be the largest
    /// host-to-device copy of a batch).
    const FULL_BIAS: bool = true;

    /// Attention probabilities: softmax over the last dimension of `scores · scale + bias`.
    ///
    /// Shapes: `scores`, `bias` and the result `[batch, heads, seq, seq]`.
    fn attention_probs(
        scores: Tensor<Self, 4>,
        scale: f32,
        bias: Tensor<Self, 4>,
    ) -> Tensor<Self, 4> {
        activation::softmax(scores * scale + bias, 3)
    }

    /// GELU with the exact (erf) formulation: `x/2 · (1 + erf(x/√2))`.
    ///
    /// Shapes: any, unchanged.
    fn gelu_exact(x: Tensor<Self, 2>) -> Tensor<Self, 2> {
        activation::gelu(x)
    }

    /// The heads' outputs side by side: `[batch, heads, seq, head_dim]` →
    /// `[batch · seq, heads · head_dim]` (row `b · seq + s` holds every head's vector of token
    /// `s` of sequence `b`, head after head).
    fn merge_heads(x: Tensor<Self, 4>) -> Tensor<Self, 2> {
        let [batch, heads, seq, head_dim] = x.dims();
        x.swap_dims(1, 2).reshape([batch * seq, heads * head_dim])
    }

    /// The int8 linear layers of one input (`encoder.int8`, [`super::quant`]): `[rows, d_in]` →
    /// one `[rows, d_out]` per layer. The default goes through host memory.
    fn quant_linear_many(layers: &[&QuantLinear], x: Tensor<Self, 2>) -> Vec<Tensor<Self, 2>> {
        super::quant::linear_many(layers, x)
    }
}

#[cfg(feature = "cuda")]
impl EncoderBackend for burn::backend::Cuda {
    const FULL_BIAS: bool = false;
}

/// Whether every dtype is f32 (the burn-flex kernels here are written for f32 buffers).
fn all_f32(dtypes: &[burn::tensor::DType]) -> bool {
    dtypes.iter().all(|d| *d == burn::tensor::DType::F32)
}

impl EncoderBackend for burn::backend::Flex {
    fn attention_probs(
        scores: Tensor<Self, 4>,
        scale: f32,
        bias: Tensor<Self, 4>,
    ) -> Tensor<Self, 4> {
        if scores.dims() != bias.dims() || !all_f32(&[scores.dtype(), bias.dtype()]) {
            // A broadcast mask or half precision (the GPU's forms, run here in tests): burn's
            // generic composition.
            return activation::softmax(scores * scale + bias, 3);
        }
        let row = scores.dims()[3];
        let mut scores = owned_contiguous(scores.into_primitive().tensor());
        let bias = bias.into_primitive().tensor().to_contiguous();
        let bias: &[f32] = bias.storage();
        let rows_per_task = (ELEMENTS_PER_TASK / row.max(1)).max(1);
        scores
            .storage_mut::<f32>()
            .par_chunks_mut(row * rows_per_task)
            .zip(bias.par_chunks(row * rows_per_task))
            .for_each(|(s, b)| {
                pulp::Arch::new().dispatch(SoftmaxRows {
                    scores: s,
                    bias: b,
                    row,
                    scale,
                })
            });
        Tensor::from_primitive(TensorPrimitive::Float(scores))
    }

    fn gelu_exact(x: Tensor<Self, 2>) -> Tensor<Self, 2> {
        if !all_f32(&[x.dtype()]) {
            return activation::gelu(x);
        }
        let mut x = owned_contiguous(x.into_primitive().tensor());
        x.storage_mut::<f32>()
            .par_chunks_mut(ELEMENTS_PER_TASK)
            .for_each(|chunk| pulp::Arch::new().dispatch(Gelu(chunk)));
        Tensor::from_primitive(TensorPrimitive::Float(x))
    }

    /// One pass of row copies, a sequence a task: burn-flex's generic path (`swap_dims` then a
    /// strided `to_contiguous`) walks the tensor element by element (4% of the encoder's time
    /// at 1 thread, `perf`). The values are the same.
    fn merge_heads(x: Tensor<Self, 4>) -> Tensor<Self, 2> {
        let [batch, heads, seq, head_dim] = x.dims();
        if !all_f32(&[x.dtype()]) {
            return x.swap_dims(1, 2).reshape([batch * seq, heads * head_dim]);
        }
        let hidden = heads * head_dim;
        let x = x.into_primitive().tensor().to_contiguous();
        let src: &[f32] = x.storage();
        let mut out = FlexTensor::empty(
            burn::tensor::Shape::new([batch * seq, hidden]),
            burn::tensor::DType::F32,
        );
        if hidden > 0 && seq > 0 {
            out.storage_mut::<f32>()
                .par_chunks_mut(seq * hidden)
                .zip(src.par_chunks(heads * seq * head_dim))
                .for_each(|(dst, src)| {
                    for (s, row) in dst.chunks_mut(hidden).enumerate() {
                        for (h, piece) in row.chunks_mut(head_dim).enumerate() {
                            let at = (h * seq + s) * head_dim;
                            piece.copy_from_slice(&src[at..at + head_dim]);
                        }
                    }
                });
        }
        Tensor::from_primitive(TensorPrimitive::Float(out))
    }

    /// Reads the input's buffer and writes each result into a fresh tensor's: no host copies
    /// (they were 7% of an int8 run's time, `perf`).
    fn quant_linear_many(layers: &[&QuantLinear], x: Tensor<Self, 2>) -> Vec<Tensor<Self, 2>> {
        let [rows, _] = x.dims();
        let x = owned_contiguous(x.into_primitive().tensor());
        let mut outs: Vec<FlexTensor> = layers
            .iter()
            .map(|l| {
                FlexTensor::empty(
                    burn::tensor::Shape::new([rows, l.d_out()]),
                    burn::tensor::DType::F32,
                )
            })
            .collect();
        {
            let mut ys: Vec<&mut [f32]> = outs.iter_mut().map(|o| o.storage_mut::<f32>()).collect();
            super::quant::forward_into(layers, x.storage(), &mut ys);
        }
        outs.into_iter()
            .map(|o| Tensor::from_primitive(TensorPrimitive::Float(o)))
            .collect()
    }
}

/// Elements one rayon task handles.
const ELEMENTS_PER_TASK: usize = 1 << 14;

/// Lanes the loops are written in (fixed-size inner loops the compiler turns into SIMD).
const LANES: usize = 16;

/// A contiguous f32 tensor covering its whole buffer, which is not shared when the input's
/// was not (so writing to it does not copy).
fn owned_contiguous(t: FlexTensor) -> FlexTensor {
    assert_eq!(
        t.dtype(),
        burn::tensor::DType::F32,
        "the encoders compute in f32"
    );
    let c = t.to_contiguous();
    drop(t);
    c
}

/// GELU over a slice, compiled for the best instruction set the CPU has (pulp dispatch).
struct Gelu<'a>(&'a mut [f32]);

impl pulp::WithSimd for Gelu<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let (chunks, rest) = self.0.as_chunks_mut::<LANES>();
        for c in chunks {
            for v in c.iter_mut() {
                *v = gelu_erf(*v);
            }
        }
        for v in rest {
            *v = gelu_erf(*v);
        }
    }
}

/// Softmax of `scores · scale + bias` over rows of `row` values, in place.
struct SoftmaxRows<'a> {
    scores: &'a mut [f32],
    bias: &'a [f32],
    row: usize,
    scale: f32,
}

impl pulp::WithSimd for SoftmaxRows<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        for (s, b) in self
            .scores
            .chunks_mut(self.row)
            .zip(self.bias.chunks(self.row))
        {
            softmax_row(s, b, self.scale);
        }
    }
}

/// `s ← softmax(s · scale + b)` over one row (lane-wise partial maxima and sums).
#[inline(always)]
fn softmax_row(s: &mut [f32], b: &[f32], scale: f32) {
    let mut max = [f32::NEG_INFINITY; LANES];
    let (sc, sr) = s.as_chunks_mut::<LANES>();
    let (bc, br) = b.as_chunks::<LANES>();
    for (s, b) in sc.iter_mut().zip(bc) {
        for i in 0..LANES {
            let v = s[i] * scale + b[i];
            s[i] = v;
            max[i] = if v > max[i] { v } else { max[i] };
        }
    }
    let mut m = f32::NEG_INFINITY;
    for (s, b) in sr.iter_mut().zip(br) {
        *s = *s * scale + b;
        m = m.max(*s);
    }
    let m = max.iter().fold(m, |a, &v| a.max(v));
    let mut sum = [0.0f32; LANES];
    let (sc, sr) = s.as_chunks_mut::<LANES>();
    for s in sc.iter_mut() {
        for i in 0..LANES {
            s[i] = exp_f32(s[i] - m);
            sum[i] += s[i];
        }
    }
    let mut total = 0.0f32;
    for s in sr.iter_mut() {
        *s = exp_f32(*s - m);
        total += *s;
    }
    let inv = 1.0 / (total + sum.iter().sum::<f32>());
    for x in s.iter_mut() {
        *x *= inv;
    }
}

/// `e^x` in f32: Cephes `expf` without branches or float-to-int casts (≤ 2 ulp; 0 below
/// e^-87.3), so loops over it vectorise.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const MIN_ARG: f32 = -87.336_55;
    const MAX_ARG: f32 = 88.722_83;
    // 1.5·2²³: adding it rounds to an integer, which then sits in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    let xc = x.clamp(MIN_ARG, MAX_ARG);
    let t = xc * LOG2_E + ROUND;
    let n = t - ROUND;
    let r = xc - n * LN2_HI - n * LN2_LO;
    let p = ((((1.987_569_2e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * (r * r) + r + 1.0;
    // n in [-126, 128] as an integer, from t's bits; 2^n = 2^(n/2) · 2^(n - n/2) keeps both
    // factors' exponents in range.
    let ni = t.to_bits().wrapping_sub(ROUND.to_bits()) as i32;
    let half = ni >> 1;
    let scale_a = f32::from_bits(((half + 127) as u32) << 23);
    let scale_b = f32::from_bits(((ni - half + 127) as u32) << 23);
    let e = y * scale_a * scale_b;
    if x < MIN_ARG {
        0.0
    } else {
        e
    }
}

/// `erf(x)` in f32, Abramowitz & Stegun 7.1.26 (absolute error ≤ 5e-7 in f32).
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = ((((1.061_405_4 * t - 1.453_152_1) * t + 1.421_413_8) * t - 0.284_496_74) * t
        + 0.254_829_6)
        * t;
    let y = 1.0 - poly * exp_f32(-a * a);
    y.copysign(x)
}

/// GELU, `x/2 · (1 + erf(x/√2))`.
#[inline(always)]
pub fn gelu_erf(x: f32) -> f32 {
    0.5 * x * (1.0 + erf_f32(x * std::f32::consts::FRAC_1_SQRT_2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_heads_equals_swap_and_reshape() {
        type B = burn::backend::Flex;
        let device = Default::default();
        let [batch, heads, seq, head_dim] = [3, 4, 5, 6];
        let values: Vec<f32> = (0..batch * heads * seq * head_dim)
            .map(|i| i as f32 * 0.5 - 7.0)
            .collect();
        let x = Tensor::<B, 4>::from_data(
            burn::tensor::TensorData::new(values, [batch, heads, seq, head_dim]),
            &device,
        );
        let want = x
            .clone()
            .swap_dims(1, 2)
            .reshape([batch * seq, heads * head_dim])
            .into_data();
        let got = <B as EncoderBackend>::merge_heads(x).into_data();
        assert_eq!(got.shape, want.shape);
        assert_eq!(got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
        // A strided input (a view, not contiguous) gives the same.
        let y = Tensor::<B, 4>::from_data(
            burn::tensor::TensorData::new(
                (0..batch * seq * heads * head_dim)
                    .map(|i| i as f32)
                    .collect::<Vec<_>>(),
                [batch, seq, heads, head_dim],
            ),
            &device,
        )
        .swap_dims(1, 2);
        let want = y
            .clone()
            .swap_dims(1, 2)
            .reshape([batch * seq, heads * head_dim]);
        let got = <B as EncoderBackend>::merge_heads(y);
        assert_eq!(
            got.into_data().to_vec::<f32>().unwrap(),
            want.into_data().to_vec::<f32>().unwrap()
        );
    }

    #[test]
    fn exp_is_within_two_ulp() {
        let mut worst: f64 = 0.0;
        let mut x = -87.0f32;
        while x < 88.5 {
            let want = f64::from(x).exp();
            let got = f64::from(exp_f32(x));
            worst = worst.max(((got - want) / want).abs());
            x += 0.0137;
        }
        assert!(worst < 2.5e-7, "worst relative error {worst:e}");
        assert_eq!(exp_f32(-1e30), 0.0);
        assert_eq!(exp_f32(f32::MIN), 0.0);
        assert_eq!(exp_f32(0.0), 1.0);
    }

    #[test]
    fn erf_is_within_5e_minus_7() {
        let mut worst: f64 = 0.0;
        let mut x = -6.0f64;
        while x < 6.0 {
            let want = erf_f64(x);
            let got = f64::from(erf_f32(x as f32));
            worst = worst.max((got - want).abs());
            x += 0.001;
        }
        // 1.4e-7 is the formula's own error; f32 rounding near 0 (where 1 - poly·e^{-x²}
        // cancels) brings it to 4.8e-7.
        assert!(worst < 5e-7, "worst absolute error {worst:e}");
    }

    /// erf in f64 by its Taylor series (|x| < 3) or asymptotic complement (|x| ≥ 3).
    fn erf_f64(x: f64) -> f64 {
        let a = x.abs();
        let v = if a < 3.0 {
            let mut term = a;
            let mut sum = a;
            let mut n = 0.0;
            loop {
                n += 1.0;
                term *= -a * a / n;
                let add = term / (2.0 * n + 1.0);
                sum += add;
                if add.abs() < 1e-17 {
                    break;
                }
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            // erfc(a) ≈ e^{-a²}/(a√π) (1 - 1/(2a²) + 3/(4a⁴)); < 1e-7 here and erf ≈ 1.
            let a2 = a * a;
            1.0 - (-a2).exp() / (a * std::f64::consts::PI.sqrt())
                * (1.0 - 1.0 / (2.0 * a2) + 3.0 / (4.0 * a2 * a2))
        };
        v.copysign(x)
    }

    #[test]
    fn softmax_row_masks_padding_and_sums_to_one() {
        let mut s = [1.0f32, 2.0, 3.0, 50.0];
        let b = [0.0f32, 0.0, 0.0, f32::MIN];
        softmax_row(&mut s, &b, 0.5);
        let e: Vec<f64> = [0.5f64, 1.0, 1.5].iter().map(|v| v.exp()).collect();
        let z: f64 = e.iter().sum();
        for i in 0..3 {
            assert!((f64::from(s[i]) - e[i] / z).abs() < 1e-7);
        }
        assert_eq!(s[3], 0.0);
    }
}
