//! Pooling of token vectors into one sentence vector, as sentence-transformers' `Pooling` and
//! `Normalize` modules compute it (ALGORITHM.md §6: segment embeddings).

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
