//! The transformer encoder behind both EpiMine encoders (docs/method.md §1 static word vectors,
//! §6 sentence embeddings): BERT and MPNet, generic over the burn backend.
//!
//! Laid out as tracel-ai/models' `bert-burn`: [`ModelConfig::init`] builds the module with
//! placeholder weights, [`super::loader`] fills it from a Hugging Face checkpoint, and
//! [`EncoderModel::forward`] maps token ids to hidden states.
//!
//! Both are post-LayerNorm transformers: per layer `x = LN(x + Attn(x))`, `x = LN(x + FFN(x))`
//! with an exact (erf) GELU. They differ in positions: BERT adds absolute position and token type
//! embeddings; MPNet numbers positions after the padding id and adds a bucketed relative position
//! bias (`relative_position_bucket` of Hugging Face's `MPNetEncoder`, computed once per forward and
//! shared by every layer) to each head's attention scores.
//!
//! Activations stay two-dimensional, `[batch · seq, hidden]`, between layers, so every linear layer
//! is one large matrix product (burn's `Linear` on a 3-D input runs one small product per sequence).
//! Attention is Hugging Face's eager attention, `softmax(q kᵀ/√d + bias) v` with the padding mask
//! as an additive bias of `f32::MIN`: the products run on strided views of the projections (no
//! head-splitting copies), and the scale, bias and softmax are one backend operation
//! ([`EncoderBackend::attention_probs`]), as are GELU ([`EncoderBackend::gelu_exact`]) and the
//! merge of the heads' outputs ([`EncoderBackend::merge_heads`]).

use burn::module::{Module, ModuleMapper, Param};
use burn::nn::{
    Embedding, EmbeddingConfig, Initializer, LayerNorm, LayerNormConfig, Linear, LinearConfig,
};
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, DType, Int, Tensor, TensorData};

use super::config::{Architecture, ModelConfig};
use super::host::tensor_values;
use super::ops::EncoderBackend;
use super::quant::{QuantLayer, QuantLinear, QuantModel};

/// Largest relative distance MPNet's bucketing tells apart (Hugging Face's `max_distance`).
const MPNET_MAX_DISTANCE: f64 = 128.0;

/// Token embeddings: word + position (+ token type 0 for BERT), then LayerNorm.
#[derive(Module, Debug)]
pub struct Embeddings<B: Backend> {
    /// `[vocab, hidden]`.
    pub word_embeddings: Embedding<B>,
    /// `[max_positions, hidden]`.
    pub position_embeddings: Embedding<B>,
    /// `[type_vocab, hidden]`, BERT only.
    pub token_type_embeddings: Option<Embedding<B>>,
    /// LayerNorm over the sum.
    pub layer_norm: LayerNorm<B>,
}

/// Multi-head self-attention with its output projection.
#[derive(Module, Debug)]
pub struct SelfAttention<B: Backend> {
    /// Query projection.
    pub query: Linear<B>,
    /// Key projection.
    pub key: Linear<B>,
    /// Value projection.
    pub value: Linear<B>,
    /// Output projection.
    pub output: Linear<B>,
}

/// One transformer layer.
#[derive(Module, Debug)]
pub struct EncoderLayer<B: Backend> {
    /// Self-attention.
    pub attention: SelfAttention<B>,
    /// LayerNorm after the attention residual.
    pub attention_norm: LayerNorm<B>,
    /// Feed-forward up-projection (GELU follows).
    pub intermediate: Linear<B>,
    /// Feed-forward down-projection.
    pub output: Linear<B>,
    /// LayerNorm after the feed-forward residual.
    pub output_norm: LayerNorm<B>,
}

/// A BERT or MPNet encoder.
#[derive(Module, Debug)]
pub struct EncoderModel<B: Backend> {
    /// Input embeddings.
    pub embeddings: Embeddings<B>,
    /// The transformer layers.
    pub layers: Vec<EncoderLayer<B>>,
    /// MPNet's relative position bias, `[buckets, heads]`.
    pub relative_attention_bias: Option<Embedding<B>>,
    num_heads: usize,
}

/// One padded batch of token sequences.
#[derive(Debug, Clone)]
pub struct EncoderInput<B: Backend> {
    /// Token ids, `[batch, seq]`.
    pub input_ids: Tensor<B, 2, Int>,
    /// Position ids, `[batch, seq]`.
    pub position_ids: Tensor<B, 2, Int>,
    /// `true` at padding, `[batch, seq]`.
    pub padding: Tensor<B, 2, Bool>,
    /// Additive attention mask, `[batch, heads, seq, seq]` (or `[batch, 1, 1, seq]`, broadcast;
    /// [`Self::padded`]): 0 for a real key, `f32::MIN` for a padding key (Hugging Face's
    /// `(1 - mask) · finfo.min`), the same for every head and query.
    pub key_bias: Tensor<B, 4>,
}

impl<B: Backend> EncoderInput<B> {
    /// Pads `sequences` (token ids, special tokens included) to the longest one and numbers their
    /// positions the way `config`'s architecture does.
    pub fn new(config: &ModelConfig, sequences: &[&[u32]], device: &B::Device) -> Self {
        let seq = sequences.iter().map(|s| s.len()).max().unwrap_or(0).max(1);
        Self::padded(config, sequences, [sequences.len(), seq], true, device)
    }

    /// [`Self::new`] padded to a given `[rows, seq]` shape (at least the batch's own): rows past
    /// the sequences are pad rows of one unmasked pad token (a row with every key masked would
    /// make a softmax of `-inf`s in half precision), dropped by the caller. With `full_bias`
    /// the attention mask is `[rows, heads, seq, seq]` (same-shape adds, fastest on the CPU);
    /// without, `[rows, 1, 1, seq]`, broadcast on the device (for a GPU: `heads · seq` times
    /// less to build and copy).
    pub fn padded(
        config: &ModelConfig,
        sequences: &[&[u32]],
        [rows, seq]: [usize; 2],
        full_bias: bool,
        device: &B::Device,
    ) -> Self {
        let heads = config.num_heads;
        let longest = sequences.iter().map(|s| s.len()).max().unwrap_or(0);
        let batch = rows.max(sequences.len());
        let seq = seq.max(longest).max(1);
        let offset = config.position_offset() as i64;
        let pad_position = match config.architecture {
            Architecture::Bert => 0,
            Architecture::MpNet => config.pad_token_id as i64,
        };
        let mut ids = vec![config.pad_token_id as i64; batch * seq];
        let mut positions = vec![pad_position; batch * seq];
        let mut padding = vec![true; batch * seq];
        for b in 0..batch {
            let tokens = sequences.get(b).copied().unwrap_or(&[]);
            for (i, &t) in tokens.iter().enumerate() {
                ids[b * seq + i] = i64::from(t);
                positions[b * seq + i] = offset + i as i64;
                padding[b * seq + i] = false;
            }
            if tokens.is_empty() {
                // A pad row: its first position is a real (pad) token.
                positions[b * seq] = offset;
                padding[b * seq] = false;
            }
            if config.architecture == Architecture::Bert {
                // BERT numbers padding positions too (arange); they are masked anyway.
                for i in tokens.len().max(1)..seq {
                    positions[b * seq + i] = i as i64;
                }
            }
        }
        let mask_row = |b: usize| -> Vec<f32> {
            padding[b * seq..(b + 1) * seq]
                .iter()
                .map(|&pad| if pad { f32::MIN } else { 0.0 })
                .collect()
        };
        let key_bias = if full_bias {
            // Built whole on the host: adding a same-shape tensor is one vectorised pass per
            // layer on burn-flex, a broadcast one is not.
            let mut key_bias = Vec::with_capacity(batch * heads * seq * seq);
            for b in 0..batch {
                let row = mask_row(b);
                for _ in 0..heads * seq {
                    key_bias.extend_from_slice(&row);
                }
            }
            Tensor::from_data(TensorData::new(key_bias, [batch, heads, seq, seq]), device)
        } else {
            let key_bias: Vec<f32> = (0..batch).flat_map(mask_row).collect();
            Tensor::from_data(TensorData::new(key_bias, [batch, 1, 1, seq]), device)
        };
        Self {
            input_ids: Tensor::from_data(TensorData::new(ids, [batch, seq]), device),
            position_ids: Tensor::from_data(TensorData::new(positions, [batch, seq]), device),
            padding: Tensor::from_data(TensorData::new(padding, [batch, seq]), device),
            key_bias,
        }
    }
}

impl ModelConfig {
    /// The module with placeholder weights (zeros, LayerNorm ones) on `device`; load real
    /// weights with [`super::loader::load_weights`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> EncoderModel<B> {
        let h = self.hidden_size;
        let linear = |d_in: usize, d_out: usize| {
            LinearConfig::new(d_in, d_out)
                .with_initializer(Initializer::Zeros)
                .init(device)
        };
        let embedding = |n: usize, d: usize| {
            EmbeddingConfig::new(n, d)
                .with_initializer(Initializer::Zeros)
                .init(device)
        };
        let norm = || {
            LayerNormConfig::new(h)
                .with_epsilon(self.layer_norm_eps)
                .init(device)
        };
        let embeddings = Embeddings {
            word_embeddings: embedding(self.vocab_size, h),
            position_embeddings: embedding(self.max_position_embeddings, h),
            token_type_embeddings: (self.architecture == Architecture::Bert)
                .then(|| embedding(self.type_vocab_size, h)),
            layer_norm: norm(),
        };
        let layers = (0..self.num_layers)
            .map(|_| EncoderLayer {
                attention: SelfAttention {
                    query: linear(h, h),
                    key: linear(h, h),
                    value: linear(h, h),
                    output: linear(h, h),
                },
                attention_norm: norm(),
                intermediate: linear(h, self.intermediate_size),
                output: linear(self.intermediate_size, h),
                output_norm: norm(),
            })
            .collect();
        EncoderModel {
            embeddings,
            layers,
            relative_attention_bias: (self.architecture == Architecture::MpNet)
                .then(|| embedding(self.relative_attention_num_buckets, self.num_heads)),
            num_heads: self.num_heads,
        }
    }
}

/// `x · W + b` on a 2-D input: one matrix product, in f32, or in int8 when `quant` is given.
fn linear_any<B: EncoderBackend>(
    layer: &Linear<B>,
    quant: Option<&QuantLinear>,
    x: Tensor<B, 2>,
) -> Tensor<B, 2> {
    match quant {
        Some(q) => B::quant_linear_many(&[q], x).pop().expect("one layer"),
        None => linear2d(layer, x),
    }
}

/// The int8 form of one linear layer ([`quant`]).
fn quantize_linear<B: Backend>(layer: &Linear<B>) -> QuantLinear {
    let [d_in, d_out] = layer.weight.dims();
    let weight = tensor_values(layer.weight.val().into_data());
    let bias = layer
        .bias
        .as_ref()
        .map(|b| tensor_values(b.val().into_data()));
    QuantLinear::new(&weight, d_in, d_out, bias.as_deref())
}

/// `x · W + b` on a 2-D input: one matrix product.
///
/// Shapes: `x` `[n, d_in]`, result `[n, d_out]`.
fn linear2d<B: Backend>(layer: &Linear<B>, x: Tensor<B, 2>) -> Tensor<B, 2> {
    let y = x.matmul(layer.weight.val());
    match &layer.bias {
        Some(bias) => y + bias.val().unsqueeze_dim::<2>(0),
        None => y,
    }
}

/// MPNet's bucket of a relative position `memory - context` (Hugging Face
/// `MPNetEncoder.relative_position_bucket`, `num_buckets` total, `max_distance` 128): half the
/// buckets for each sign, exact below `num_buckets / 4`, logarithmic above.
pub fn relative_position_bucket(relative_position: i64, num_buckets: usize) -> usize {
    let half = (num_buckets / 2) as i64;
    let n = -relative_position;
    let mut bucket = if n < 0 { half } else { 0 };
    let n = n.abs();
    let max_exact = half / 2;
    if n < max_exact {
        bucket += n;
    } else {
        // Computed in f32 as PyTorch does (`n.float()`), then truncated toward zero.
        let denominator = (MPNET_MAX_DISTANCE / max_exact as f64).ln() as f32;
        let scaled =
            ((n as f32 / max_exact as f32).ln() / denominator * (half - max_exact) as f32) as i64;
        bucket += (max_exact + scaled).min(half - 1);
    }
    bucket as usize
}

/// Casts every float parameter to one float type ([`EncoderModel::cast`]).
struct CastParams(burn::tensor::FloatDType);

impl<B: Backend> ModuleMapper<B> for CastParams {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        Param::from_mapped_value(id, tensor.cast(self.0), mapper)
    }
}

impl<B: EncoderBackend> EncoderModel<B> {
    /// The model with every weight cast to `dtype` ([`super::Precision`]); its forward passes
    /// then compute in that type and return f32.
    pub fn cast(self, dtype: burn::tensor::FloatDType) -> Self {
        self.map(&mut CastParams(dtype))
    }

    /// Number of transformer layers.
    pub fn num_layers(&self) -> usize {
        self.layers.len()
    }

    /// Runs the encoder and returns the hidden states of `layers`, in that order: 0 is the
    /// embedding output, `i` the output of layer `i` (Hugging Face's `hidden_states[i]`).
    ///
    /// Shapes: each result `[batch, seq, hidden]`.
    ///
    /// # Panics
    /// If a requested layer is above [`Self::num_layers`].
    pub fn forward(&self, input: &EncoderInput<B>, layers: &[usize]) -> Vec<Tensor<B, 3>> {
        self.forward_quant(input, layers, None)
    }

    /// The int8 form of every transformer layer's linear layers, for
    /// [`Self::forward_quant`].
    pub fn quantize(&self) -> QuantModel {
        QuantModel {
            layers: self
                .layers
                .iter()
                .map(|l| QuantLayer {
                    query: quantize_linear(&l.attention.query),
                    key: quantize_linear(&l.attention.key),
                    value: quantize_linear(&l.attention.value),
                    attention_output: quantize_linear(&l.attention.output),
                    intermediate: quantize_linear(&l.intermediate),
                    output: quantize_linear(&l.output),
                })
                .collect(),
        }
    }

    /// [`Self::forward`], with the linear layers in int8 when `quant` (from
    /// [`Self::quantize`] of this model) is given.
    ///
    /// # Panics
    /// If a requested layer is above [`Self::num_layers`], or `quant` has fewer layers.
    pub fn forward_quant(
        &self,
        input: &EncoderInput<B>,
        layers: &[usize],
        quant: Option<&QuantModel>,
    ) -> Vec<Tensor<B, 3>> {
        let [batch, seq] = input.input_ids.dims();
        let deepest = layers.iter().copied().max().unwrap_or(0);
        assert!(
            deepest <= self.layers.len(),
            "layer {deepest} does not exist"
        );
        let device = input.input_ids.device();

        let e = &self.embeddings;
        let mut x = e.word_embeddings.forward(input.input_ids.clone())
            + e.position_embeddings.forward(input.position_ids.clone());
        if let Some(types) = &e.token_type_embeddings {
            // Token type 0 everywhere: add its row.
            let row = types.weight.val().narrow(0, 0, 1).unsqueeze_dim::<3>(0);
            x = x + row;
        }
        let hidden = x.dims()[2];
        let mut x: Tensor<B, 2> = e.layer_norm.forward(x).reshape([batch * seq, hidden]);

        // The additive attention bias of every layer: the padding mask, plus MPNet's relative
        // position bias.
        let heads = self.num_heads;
        // In half precision ([`super::Precision`]) the mask follows the weights' float type.
        let dtype = x.dtype();
        let key_bias = if input.key_bias.dtype() == dtype {
            input.key_bias.clone()
        } else {
            input.key_bias.clone().cast(dtype)
        };
        let bias = match &self.relative_attention_bias {
            Some(table) => key_bias + self.position_bias(table, seq, &device),
            None => key_bias,
        };

        let mut out = vec![None; layers.len()];
        let mut keep = |depth: usize, x: &Tensor<B, 2>| {
            for (slot, &l) in out.iter_mut().zip(layers) {
                if l == depth {
                    let kept = x.clone().reshape([batch, seq, hidden]);
                    // Hidden states leave the model in f32, whatever it computes in.
                    *slot = Some(if dtype == DType::F32 {
                        kept
                    } else {
                        kept.cast(DType::F32)
                    });
                }
            }
        };
        keep(0, &x);
        for (i, layer) in self.layers.iter().take(deepest).enumerate() {
            let q = quant.map(|q| &q.layers[i]);
            x = layer.forward(x, batch, seq, heads, bias.clone(), q);
            keep(i + 1, &x);
        }
        out.into_iter()
            .map(|t| t.expect("every requested layer was kept"))
            .collect()
    }

    /// MPNet's relative position bias for a sequence length, `[1, heads, seq, seq]`.
    fn position_bias(&self, table: &Embedding<B>, seq: usize, device: &B::Device) -> Tensor<B, 4> {
        let buckets = table.weight.dims()[0];
        let mut idx = Vec::with_capacity(seq * seq);
        for context in 0..seq as i64 {
            for memory in 0..seq as i64 {
                idx.push(relative_position_bucket(memory - context, buckets) as i64);
            }
        }
        let idx: Tensor<B, 2, Int> = Tensor::from_data(TensorData::new(idx, [seq, seq]), device);
        // [seq, seq, heads] -> [heads, seq, seq] -> [1, heads, seq, seq]
        table.forward(idx).permute([2, 0, 1]).unsqueeze_dim::<4>(0)
    }
}

impl<B: EncoderBackend> EncoderLayer<B> {
    /// Shapes: `x` `[batch · seq, hidden]`, `bias` `[batch, heads, seq, seq]` (added to the
    /// attention scores); result `[batch · seq, hidden]`.
    fn forward(
        &self,
        x: Tensor<B, 2>,
        batch: usize,
        seq: usize,
        heads: usize,
        bias: Tensor<B, 4>,
        quant: Option<&QuantLayer>,
    ) -> Tensor<B, 2> {
        let hidden = x.dims()[1];
        let head_dim = hidden / heads;
        // [batch · seq, hidden] -> [batch, heads, seq, head_dim], a strided view (no copy).
        let split = |t: Tensor<B, 2>| t.reshape([batch, seq, heads, head_dim]).swap_dims(1, 2);
        let a = &self.attention;
        let [q, k, v] = match quant {
            // One quantization of `x` for the three projections.
            Some(ql) => B::quant_linear_many(&[&ql.query, &ql.key, &ql.value], x.clone())
                .try_into()
                .expect("one result per layer"),
            None => [
                linear2d(&a.query, x.clone()),
                linear2d(&a.key, x.clone()),
                linear2d(&a.value, x.clone()),
            ],
        }
        .map(split);
        // softmax(q kᵀ / √d + bias) v, as Hugging Face's eager attention.
        let scale = 1.0 / (head_dim as f32).sqrt();
        let context =
            B::merge_heads(B::attention_probs(q.matmul(k.swap_dims(2, 3)), scale, bias).matmul(v));
        let x = self
            .attention_norm
            .forward(linear_any(&a.output, quant.map(|q| &q.attention_output), context) + x);
        let h = B::gelu_exact(linear_any(
            &self.intermediate,
            quant.map(|q| &q.intermediate),
            x.clone(),
        ));
        self.output_norm
            .forward(linear_any(&self.output, quant.map(|q| &q.output), h) + x)
    }
}

#[cfg(test)]
mod tests {
    use super::relative_position_bucket;

    /// Every bucket for relative positions -600..=600 as Hugging Face's
    /// `MPNetEncoder.relative_position_bucket(…, num_buckets=32)` computes them in PyTorch, as
    /// runs `(from, to, bucket)`.
    #[test]
    fn relative_position_buckets_match_hugging_face() {
        #[rustfmt::skip]
        let runs = [
            (-600, -91, 15), (-90, -64, 14), (-63, -46, 13), (-45, -32, 12), (-31, -23, 11),
            (-22, -16, 10), (-15, -12, 9), (-11, -8, 8), (-7, -7, 7), (-6, -6, 6), (-5, -5, 5),
            (-4, -4, 4), (-3, -3, 3), (-2, -2, 2), (-1, -1, 1), (0, 0, 0), (1, 1, 17),
            (2, 2, 18), (3, 3, 19), (4, 4, 20), (5, 5, 21), (6, 6, 22), (7, 7, 23),
            (8, 11, 24), (12, 15, 25), (16, 22, 26), (23, 31, 27), (32, 45, 28),
            (46, 63, 29), (64, 90, 30), (91, 600, 31),
        ];
        for (from, to, want) in runs {
            for rel in from..=to {
                assert_eq!(relative_position_bucket(rel, 32), want, "relative {rel}");
            }
        }
    }
}
