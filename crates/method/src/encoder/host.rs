//! Tensors read back to the host as f32 values.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

/// The f32 values of tensor data (converting if the backend computed in another float type).
pub(crate) fn tensor_values(data: burn::tensor::TensorData) -> Vec<f32> {
    data.convert::<f32>()
        .into_vec::<f32>()
        .expect("converted to f32")
}

/// A batch's hidden states on the host: `[batch, seq, dim]` values and `seq`.
pub(super) struct HostBlock {
    pub(super) seq: usize,
    pub(super) values: Vec<f32>,
}

pub(super) fn host_block<B: Backend>(hidden: Tensor<B, 3>) -> HostBlock {
    let [_, seq, _] = hidden.dims();
    HostBlock {
        seq,
        values: tensor_values(hidden.into_data()),
    }
}
