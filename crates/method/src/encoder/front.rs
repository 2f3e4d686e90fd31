//! The encoder itself: a loaded model, its tokenizer and settings, and how it runs batches
//! (longest first, in waves of concurrent forward passes, shapes logged).

use std::path::Path;

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

use super::batching::length_batches;
use super::config::{ModelConfig, SentenceConfig};
use super::device::default_concurrency;
use super::error::EncoderError;
use super::host::{host_block, tensor_values};
use super::model::{EncoderInput, EncoderModel};
use super::ops::EncoderBackend;
use super::options::{EncoderOptions, Precision};
use super::shapes::{self, ShapePolicy};
use super::tokenize::TextTokenizer;
use super::{loader, quant};

/// A loaded encoder: model, tokenizer and sentence-transformers settings.
#[derive(Debug)]
pub struct Encoder<B: Backend> {
    /// The model's architecture.
    pub config: ModelConfig,
    /// How sentence embeddings are made.
    pub sentence: SentenceConfig,
    pub(super) model: EncoderModel<B>,
    pub(super) tokenizer: TextTokenizer,
    pub(super) device: B::Device,
    pub(super) batch_size: usize,
    pub(super) concurrency: usize,
    /// The int8 linear layers, when the int8 option is on ([`Self::with_int8`]).
    pub(super) quant: Option<quant::QuantModel>,
    pub(super) shapes: ShapePolicy,
    pub(super) precision: Precision,
    /// Whether the attention mask is built whole on the host ([`EncoderBackend::FULL_BIAS`]).
    pub(super) full_bias: bool,
    pub(super) shape_log: shapes::ShapeLog,
}

/// Checks a model folder by loading it on the CPU and dropping it: `config.json`, the
/// sentence-transformers files, `tokenizer.json` and every weight of `model.safetensors` (names,
/// shapes, a file cut short) are read as a real load reads them. `epimine run` does this before
/// it writes anything, so a broken model never costs a finished run. Returns its last layer
/// ([`Encoder::last_layer`]), so that a layer a job asks of it is checked as early.
pub fn check_model(dir: &Path) -> Result<usize, EncoderError> {
    Encoder::<burn::backend::Flex>::load(dir, &Default::default()).map(|e| e.last_layer())
}

/// Whether `layer` is one of the hidden layers of a model whose last is `last` (0: the
/// embeddings); [`EncoderError::Invalid`] naming the model's count when not.
pub fn check_layer(layer: usize, last: usize) -> Result<(), EncoderError> {
    if layer > last {
        return Err(EncoderError::Invalid(format!(
            "layer {layer} does not exist (the model has {last} layers; 0 is the embeddings)"
        )));
    }
    Ok(())
}

impl<B: EncoderBackend> Encoder<B> {
    /// Loads a model folder (`config.json`, `model.safetensors`, `tokenizer.json`, and the
    /// sentence-transformers files when present) onto `device`.
    pub fn load(dir: &Path, device: &B::Device) -> Result<Self, EncoderError> {
        let config = ModelConfig::from_file(&dir.join("config.json"))?;
        let sentence = SentenceConfig::from_dir(dir, &config)?;
        let tokenizer =
            TextTokenizer::from_file(&dir.join("tokenizer.json"), sentence.max_seq_length)?;
        let mut model = config.init::<B>(device);
        loader::load_weights(&mut model, &dir.join("model.safetensors"))?;
        let options = EncoderOptions::default();
        Ok(Self {
            config,
            sentence,
            model,
            tokenizer,
            device: device.clone(),
            batch_size: options.batch_size,
            concurrency: default_concurrency(),
            quant: None,
            shapes: options.shapes,
            precision: options.precision,
            full_bias: B::FULL_BIAS,
            shape_log: shapes::ShapeLog::default(),
        })
    }

    /// Applies every option at once (see each setter); the options must be valid
    /// ([`EncoderOptions::validate`]).
    pub fn with_options(self, options: &EncoderOptions) -> Result<Self, EncoderError> {
        options.validate().map_err(EncoderError::Invalid)?;
        Ok(self
            .with_batch_size(options.batch_size)
            .with_shapes(options.shapes)
            .with_precision(options.precision)
            .with_int8(options.int8))
    }

    /// Sets how batches are shaped ([`ShapePolicy`]).
    pub fn with_shapes(mut self, shapes: ShapePolicy) -> Self {
        self.shapes = shapes;
        self
    }

    /// Casts the weights to `precision` (once; the forward passes then compute in it).
    pub fn with_precision(mut self, precision: Precision) -> Self {
        if precision != self.precision {
            self.model = self.model.cast(precision.dtype());
            self.precision = precision;
        }
        self
    }

    /// Builds the attention mask whole on the host (`true`, [`EncoderBackend::FULL_BIAS`] of
    /// burn-flex) or as one row per sequence broadcast on the device (`false`, CUDA's form);
    /// the results agree to rounding. For testing the GPU's form on the CPU.
    pub fn with_full_bias(mut self, full_bias: bool) -> Self {
        self.full_bias = full_bias;
        self
    }

    /// The batch shape policy.
    pub fn shapes(&self) -> ShapePolicy {
        self.shapes
    }

    /// The batch size.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Every `[rows, seq]` shape this encoder has run a forward pass at, with its batch count.
    pub fn shapes_seen(&self) -> Vec<([usize; 2], u64)> {
        self.shape_log.seen()
    }

    /// The shapes a [`ShapePolicy::Buckets`] encoder runs sentence inputs at: `[batch_size,
    /// len]` for every [`shapes::length_buckets`] length of `max_seq_length`. Empty under
    /// [`ShapePolicy::Exact`] (its shapes follow the texts).
    pub fn sentence_shapes(&self) -> Vec<[usize; 2]> {
        match self.shapes {
            ShapePolicy::Exact => Vec::new(),
            ShapePolicy::Buckets => self
                .sentence_buckets()
                .into_iter()
                .map(|len| [self.batch_size, len])
                .collect(),
        }
    }

    /// One forward pass, with pooling and the host read of [`Self::encode_parts`], at every
    /// shape of [`Self::sentence_shapes`], so that a backend that compiles and autotunes its
    /// kernels per shape (CUDA) pays for it here, once, and not in the middle of a run. Returns
    /// the shapes run; none under [`ShapePolicy::Exact`].
    pub fn warm_up(&self) -> Vec<[usize; 2]> {
        let shapes = self.sentence_shapes();
        let last = self.last_layer();
        for &[rows, len] in &shapes {
            let tokens = vec![self.config.pad_token_id as u32; len];
            let input = EncoderInput::padded(
                &self.config,
                &[tokens.as_slice()],
                [rows, len],
                self.full_bias,
                &self.device,
            );
            self.shape_log.note([rows, len]);
            let mut hidden = self
                .model
                .forward_quant(&input, &[last, last], self.quant.as_ref());
            let block = host_block(hidden.pop().expect("two layers asked"));
            let pooled = tensor_values(
                self.pool(hidden.pop().expect("two layers asked"), &input)
                    .into_data(),
            );
            debug_assert!(!block.values.is_empty() && !pooled.is_empty());
        }
        shapes
    }

    /// The sentence inputs' length buckets ([`shapes::length_buckets`] of `max_seq_length`).
    pub(super) fn sentence_buckets(&self) -> Vec<usize> {
        shapes::length_buckets(self.sentence.max_seq_length.min(self.config.max_tokens()))
    }

    /// Runs every transformer linear layer in int8 (dynamic quantization, [`quant`]) when
    /// `int8` is true, in f32 (the default) when false. Faster on the CPU; the embeddings move
    /// (cosine ≈ 0.9995 to the f32 ones on all-MiniLM-L6-v2, `bench_encoder --int8`).
    pub fn with_int8(mut self, int8: bool) -> Self {
        self.quant = int8.then(|| self.model.quantize());
        self
    }

    /// Whether the linear layers run in int8 ([`Self::with_int8`]).
    pub fn int8(&self) -> bool {
        self.quant.is_some()
    }

    /// Sets the number of sequences per forward pass (at least 1).
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// The embedding width.
    pub fn dim(&self) -> usize {
        self.config.hidden_size
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// The last layer (X-Class's and the paper's default for word vectors).
    pub fn last_layer(&self) -> usize {
        self.config.num_layers
    }

    pub(super) fn check_layer(&self, layer: usize) -> Result<(), EncoderError> {
        check_layer(layer, self.config.num_layers)
    }

    /// Runs `sequences` through the model, longest first, `batch_size` at a time, and hands
    /// each batch's sequence indices and the host values `work` makes of its input and hidden
    /// states (of `layers`) to `each`, in batch order.
    ///
    /// Up to `concurrency` batches run at once (on rayon's pool): burn-flex runs matrix products
    /// on every thread but element-wise operations, softmax-free parts of attention and copies on
    /// one, so independent batches side by side keep every core busy. Results are the same as
    /// one at a time.
    pub(super) fn run<T: Send>(
        &self,
        sequences: &[Vec<u32>],
        buckets: &[usize],
        layers: &[usize],
        work: impl Fn(&EncoderInput<B>, Vec<Tensor<B, 3>>) -> T + Sync,
        each: impl FnMut(&[usize], T),
    ) {
        let batches = self.batches(sequences, 0..sequences.len());
        self.run_batches(sequences, &batches, buckets, layers, work, each);
    }

    /// The batches of `sequences[range]`: [`length_batches`] of their lengths under
    /// [`ShapePolicy::Exact`], [`shapes::fixed_batches`] under [`ShapePolicy::Buckets`].
    pub(super) fn batches(
        &self,
        sequences: &[Vec<u32>],
        range: std::ops::Range<usize>,
    ) -> Vec<Vec<usize>> {
        let lengths = range.map(|i| (i, sequences[i].len()));
        match self.shapes {
            ShapePolicy::Exact => length_batches(lengths, self.batch_size),
            ShapePolicy::Buckets => shapes::fixed_batches(lengths, self.batch_size),
        }
    }

    /// The `[rows, seq]` shape `batch` runs at ([`shapes::batch_shape`]).
    pub(super) fn shape_of(
        &self,
        sequences: &[Vec<u32>],
        batch: &[usize],
        buckets: &[usize],
    ) -> [usize; 2] {
        let lengths: Vec<usize> = batch.iter().map(|&i| sequences[i].len()).collect();
        shapes::batch_shape(self.shapes, &lengths, self.batch_size, buckets)
    }

    /// [`Self::run`] over given batches, padded to their shapes ([`Self::shape_of`] with
    /// `buckets`).
    ///
    /// One batch in flight at a time (a GPU, `concurrency` 1): batch `k + 1` is put together on
    /// the host and queued on the device before batch `k`'s results are read back, so the host's
    /// work and the copies overlap the device's (burn's backends queue work asynchronously; the
    /// read is the only wait). The results are those of one batch after another.
    pub(super) fn run_batches<T: Send>(
        &self,
        sequences: &[Vec<u32>],
        batches: &[Vec<usize>],
        buckets: &[usize],
        layers: &[usize],
        work: impl Fn(&EncoderInput<B>, Vec<Tensor<B, 3>>) -> T + Sync,
        mut each: impl FnMut(&[usize], T),
    ) {
        let forward = |batch: &[usize]| {
            let seqs: Vec<&[u32]> = batch.iter().map(|&i| sequences[i].as_slice()).collect();
            let shape = self.shape_of(sequences, batch, buckets);
            self.shape_log.note(shape);
            let input =
                EncoderInput::padded(&self.config, &seqs, shape, self.full_bias, &self.device);
            let hidden = self
                .model
                .forward_quant(&input, layers, self.quant.as_ref());
            (input, hidden)
        };
        if self.concurrency == 1 {
            let mut queued: Option<(&[usize], _)> = None;
            for batch in batches {
                let next = (batch.as_slice(), forward(batch));
                if let Some((done, (input, hidden))) = queued.replace(next) {
                    each(done, work(&input, hidden));
                }
            }
            if let Some((done, (input, hidden))) = queued {
                each(done, work(&input, hidden));
            }
            return;
        }
        let forward_work = |batch: &[usize]| {
            let (input, hidden) = forward(batch);
            work(&input, hidden)
        };
        for wave in batches.chunks(self.concurrency) {
            let results: Vec<T> = if wave.len() == 1 {
                vec![forward_work(&wave[0])]
            } else {
                use rayon::prelude::*;
                wave.par_iter().map(|b| forward_work(b)).collect()
            };
            for (batch, result) in wave.iter().zip(results) {
                each(batch.as_slice(), result);
            }
        }
    }
}
