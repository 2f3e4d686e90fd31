//! Pooling of token vectors into one sentence vector, as sentence-transformers' `Pooling` and
//! `Normalize` modules compute it (docs/method.md §6: segment embeddings).

use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Tensor};

/// The mean of the kept token vectors: `Σ_t keep[b,t]·h[b,t] / max(Σ_t keep[b,t], 1e-9)`.
///
/// Shapes: `hidden` `[batch, seq, hidden]`, `padding` `[batch, seq]` (`true` = padding);
/// result `[batch, hidden]`.
pub fn mean_pool<B: Backend>(hidden: Tensor<B, 3>, padding: Tensor<B, 2, Bool>) -> Tensor<B, 2> {
    let keep = padding.bool_not().float().unsqueeze_dim::<3>(2); // [batch, seq, 1]
    let sum = (hidden * keep.clone()).sum_dim(1); // [batch, 1, hidden]
    let count = keep.sum_dim(1).clamp_min(1e-9); // [batch, 1, 1]
    (sum / count).squeeze_dim::<2>(1)
}

/// The first token's vector (`[CLS]` / `<s>`).
///
/// Shapes: `hidden` `[batch, seq, hidden]`; result `[batch, hidden]`.
pub fn cls_pool<B: Backend>(hidden: Tensor<B, 3>) -> Tensor<B, 2> {
    hidden.narrow(1, 0, 1).squeeze_dim::<2>(1)
}

/// The element-wise maximum over the kept tokens (padding set to -1e9 first, as
/// sentence-transformers does).
///
/// Shapes: `hidden` `[batch, seq, hidden]`, `padding` `[batch, seq]`; result `[batch, hidden]`.
pub fn max_pool<B: Backend>(hidden: Tensor<B, 3>, padding: Tensor<B, 2, Bool>) -> Tensor<B, 2> {
    let dims = hidden.dims();
    let pad = padding.unsqueeze_dim::<3>(2).expand(dims);
    hidden.mask_fill(pad, -1e9).max_dim(1).squeeze_dim::<2>(1)
}

/// Rows scaled to unit length: `x / max(‖x‖₂, 1e-12)` (PyTorch's `F.normalize`).
///
/// Shapes: `x` `[batch, hidden]`; result `[batch, hidden]`.
pub fn l2_normalize<B: Backend>(x: Tensor<B, 2>) -> Tensor<B, 2> {
    let norm = x.clone().powi_scalar(2).sum_dim(1).sqrt().clamp_min(1e-12);
    x / norm
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Flex;
    use burn::tensor::TensorData;

    fn hidden() -> (Tensor<Flex, 3>, Tensor<Flex, 2, Bool>) {
        let device = Default::default();
        // Two sequences of three tokens, width 2; the second has one padding token.
        let h = Tensor::from_data(
            TensorData::new(
                vec![
                    1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 10.0, 0.0, 20.0, -2.0, 99.0, 99.0,
                ],
                [2, 3, 2],
            ),
            &device,
        );
        let pad = Tensor::from_data(
            TensorData::new(vec![false, false, false, false, false, true], [2, 3]),
            &device,
        );
        (h, pad)
    }

    fn values(t: Tensor<Flex, 2>) -> Vec<f32> {
        t.into_data().into_vec::<f32>().unwrap()
    }

    #[test]
    fn mean_pool_skips_padding() {
        let (h, pad) = hidden();
        assert_eq!(values(mean_pool(h, pad)), vec![3.0, 4.0, 15.0, -1.0]);
    }

    #[test]
    fn cls_pool_takes_the_first_token() {
        let (h, _) = hidden();
        assert_eq!(values(cls_pool(h)), vec![1.0, 2.0, 10.0, 0.0]);
    }

    #[test]
    fn max_pool_skips_padding() {
        let (h, pad) = hidden();
        assert_eq!(values(max_pool(h, pad)), vec![5.0, 6.0, 20.0, 0.0]);
    }

    #[test]
    fn l2_normalize_makes_unit_rows() {
        let device = Default::default();
        let x: Tensor<Flex, 2> = Tensor::from_data(
            TensorData::new(vec![3.0f32, 4.0, 0.0, 0.0], [2, 2]),
            &device,
        );
        assert_eq!(values(l2_normalize(x)), vec![0.6, 0.8, 0.0, 0.0]);
    }
}
