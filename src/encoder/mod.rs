//! The word and sentence encoders (ALGORITHM.md §1 static word representations, §6 segment
//! embeddings), on burn, from Hugging Face weights.
//!
//! - [`Encoder::sentence_embeddings`]: one vector per text, as sentence-transformers computes it
//!   for the model (truncation at `max_seq_length`, the model's pooling, L2 normalisation when
//!   its modules say so). The paper uses all-mpnet-base-v2; the default is all-MiniLM-L6-v2.
//! - [`Encoder::word_vectors`]: the static representation of every word of a key event, exactly
//!   as X-Class's `static_representations.py` computes it (the paper's reference code runs it):
//!   each word occurrence is the mean of its pieces' vectors at `layer`, read from the one
//!   X-Class chunk it was placed in ([`tokenize::word_chunks`]); a word's vector is the mean over
//!   its occurrences; words made only of punctuation are dropped.
//! - [`Encoder::encode_both`]: when one model serves both roles, one forward pass over the
//!   sentence inputs yields both; its word vectors read each word from the sentence's own
//!   tokens (uncleaned text, truncated at `max_seq_length`) instead of X-Class's cleaned chunks.
//!
//! Sequences are batched longest first; under [`ShapePolicy::Exact`] (the CPU default) a batch
//! ends early before a much shorter sequence (little padding per batch, [`BATCH_LENGTH_RATIO`]),
//! under [`ShapePolicy::Buckets`] (the CUDA default) batches have a fixed number of rows and a
//! bucketed length, so a run meets a few known shapes ([`shapes`], [`Encoder::warm_up`]). The
//! batch size, the shapes and the float precision are [`EncoderOptions`]. The backend is burn-flex (multi-threaded CPU) by default and burn-cuda with the
//! `cuda` feature ([`DefaultBackend`]).
//!
//! Layout: [`config`] → [`model`] (init, forward) → [`loader`] (weights, key map) →
//! [`pooling`]; [`tokenize`] for both roles; [`fetch`] fills the model cache.

pub mod config;
pub mod fetch;
pub mod kernels;
pub mod loader;
pub mod model;
pub mod ops;
pub mod options;
pub mod pooling;
pub mod quant;
pub mod shapes;
pub mod tokenize;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

pub use config::{Architecture, EncoderConfig, Pooling, SentenceConfig};
pub use model::{EncoderInput, EncoderModel};
pub use ops::EncoderBackend;
pub use options::{AutotuneLevel, EncoderOptions, Precision, DEFAULT_BATCH_SIZE};
pub use shapes::ShapePolicy;
pub use tokenize::TextTokenizer;

/// The backend the encoders run on: burn-flex on the CPU, or burn-cuda with feature `cuda`.
#[cfg(not(feature = "cuda"))]
pub type DefaultBackend = burn::backend::Flex;
/// The backend the encoders run on: burn-flex on the CPU, or burn-cuda with feature `cuda`.
#[cfg(feature = "cuda")]
pub type DefaultBackend = burn::backend::Cuda;

/// The default device of [`DefaultBackend`].
pub fn default_device() -> burn::tensor::Device<DefaultBackend> {
    Default::default()
}

/// The instruction set the CPU encoder's matrix products and kernels run with on this machine:
/// `"avx512"` (AVX-512F present and the `avx512` feature built in), `"avx2"` (AVX2 and FMA),
/// else `"baseline"` (SSE2 on x86-64, or another architecture's default). gemm and pulp pick
/// it at run time; build with `--no-default-features` to force `"avx2"` on an AVX-512 machine.
pub fn simd_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if cfg!(feature = "avx512") && std::arch::is_x86_feature_detected!("avx512f") {
            return "avx512";
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return "avx2";
        }
    }
    "baseline"
}

/// Tells glibc's allocator to keep large blocks in the heap: every tensor of a forward pass is
/// a fresh allocation of megabytes, which glibc otherwise serves with `mmap` and returns with
/// `munmap`, so each one is paid again in page faults (14% of the CPU encoder's time at 1
/// thread on all-MiniLM-L6-v2, `perf`). Blocks up to 32 MiB (glibc's largest threshold) come
/// from the heap and up to 512 MiB of free heap is kept. Process-wide: call it once at start in
/// a program that encodes (the `epimine` binary does). A no-op off glibc.
#[allow(unsafe_code)]
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; it is called before the encoders
    // allocate, and glibc serialises it against allocations itself.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
    }
}

/// Batches in flight at once by default: one per thread of rayon's pool on the CPU backend
/// (`RAYON_NUM_THREADS`, else one per core), one on CUDA.
pub fn default_concurrency() -> usize {
    if cfg!(feature = "cuda") {
        1
    } else {
        rayon::current_num_threads()
    }
}

/// A batch ends before a sequence shorter than this share of the batch's longest (see
/// [`length_batches`]). On the development set's encoding units (64 articles each, batch size
/// 32) it cuts the padded positions from 13.8% of the real ones to 5.2%.
pub const BATCH_LENGTH_RATIO: f64 = 0.85;

/// How sequences are grouped into batches, for cache keys and checkpoints: a change moves
/// the floats a little (padding changes the order of sums), so results of another batching
/// are not reused.
pub const BATCHING: &str = "longest-first, ratio 0.85";

/// X-Class's model input limit for the word chunks (`model_max_tokens = 512`).
pub const XCLASS_MAX_TOKENS: usize = 512;

/// Errors of the encoder boundary: model files, weights, tokenization.
#[derive(Debug, thiserror::Error)]
pub enum EncoderError {
    /// A model file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON model file is malformed.
    #[error("{path}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The model is of a kind this crate does not run.
    #[error("{path}: unsupported: {reason}")]
    Unsupported {
        /// The file that says so.
        path: PathBuf,
        /// What is unsupported.
        reason: String,
    },
    /// The weights could not be loaded into the model.
    #[error("{path}: loading weights: {reason}")]
    Weights {
        /// The safetensors file.
        path: PathBuf,
        /// What went wrong (missing tensors, shapes, format).
        reason: String,
    },
    /// The tokenizer failed.
    #[error("{path}: tokenizer: {reason}")]
    Tokenizer {
        /// `tokenizer.json`.
        path: PathBuf,
        /// The tokenizer's message.
        reason: String,
    },
    /// A parameter is out of range.
    #[error("{0}")]
    Invalid(String),
}

/// Row-major vectors of one width.
#[derive(Debug, Clone, PartialEq)]
pub struct Vectors {
    /// Width of every vector.
    pub dim: usize,
    /// `len × dim` values.
    pub data: Vec<f32>,
}

impl Vectors {
    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Vector `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }
}

/// One row of the static word table.
#[derive(Debug, Clone, PartialEq)]
pub struct WordVector {
    /// The word (as the tokenizer normalises it: lower-cased for uncased models).
    pub word: String,
    /// Occurrences in the key event.
    pub count: u32,
    /// Mean of the occurrences' vectors.
    pub vector: Vec<f32>,
}

/// The sum of a word's occurrence vectors over some texts: word tables of parts of an event
/// add up ([`WordSum::add`], in a fixed order) to the table of the whole ([`WordSum::mean`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WordSum {
    /// The word.
    pub word: String,
    /// Occurrences.
    pub count: u32,
    /// Sum of the occurrences' vectors (each the mean of the word's pieces).
    pub sum: Vec<f64>,
}

impl WordSum {
    /// Adds another part's sum of the same word.
    pub fn add(&mut self, other: &WordSum) {
        self.count += other.count;
        for (s, o) in self.sum.iter_mut().zip(&other.sum) {
            *s += o;
        }
    }

    /// The mean vector.
    pub fn mean(&self) -> Vec<f32> {
        self.sum
            .iter()
            .map(|s| (s / f64::from(self.count)) as f32)
            .collect()
    }
}

impl From<WordSum> for WordVector {
    fn from(w: WordSum) -> Self {
        WordVector {
            vector: w.mean(),
            word: w.word,
            count: w.count,
        }
    }
}

/// A word occurrence inside one model sequence: its word and its pieces' positions.
#[derive(Debug, Clone, Copy)]
struct Occurrence {
    word: usize,
    start: usize,
    end: usize,
}

/// Sums of occurrence vectors per word (f64, so the mean does not depend on the order).
struct WordSums {
    dim: usize,
    words: Vec<String>,
    index: BTreeMap<String, usize>,
    sums: Vec<(u32, Vec<f64>)>,
}

impl WordSums {
    fn new(dim: usize) -> Self {
        Self {
            dim,
            words: Vec::new(),
            index: BTreeMap::new(),
            sums: Vec::new(),
        }
    }

    fn id(&mut self, word: &str) -> usize {
        if let Some(&i) = self.index.get(word) {
            return i;
        }
        let i = self.words.len();
        self.words.push(word.to_string());
        self.index.insert(word.to_string(), i);
        self.sums.push((0, vec![0.0; self.dim]));
        i
    }

    /// Adds the mean of `rows[start..end]` of a `[seq, dim]` block to `word`.
    fn add(&mut self, occ: Occurrence, block: &[f32]) {
        let dim = self.dim;
        let (count, sum) = &mut self.sums[occ.word];
        let n = (occ.end - occ.start) as f64;
        let mut mean = vec![0.0f64; dim];
        for t in occ.start..occ.end {
            for (m, &v) in mean.iter_mut().zip(&block[t * dim..(t + 1) * dim]) {
                *m += f64::from(v);
            }
        }
        for (s, m) in sum.iter_mut().zip(&mean) {
            *s += m / n;
        }
        *count += 1;
    }

    /// The sums, sorted by word.
    fn finish_sums(self) -> Vec<WordSum> {
        let mut out: Vec<WordSum> = self
            .words
            .into_iter()
            .zip(self.sums)
            .filter(|(_, (count, _))| *count > 0)
            .map(|(word, (count, sum))| WordSum { word, count, sum })
            .collect();
        out.sort_by(|a, b| a.word.cmp(&b.word));
        out
    }

    /// The table, sorted by word.
    fn finish(self) -> Vec<WordVector> {
        self.finish_sums()
            .into_iter()
            .map(WordVector::from)
            .collect()
    }
}

/// A loaded encoder: model, tokenizer and sentence-transformers settings.
#[derive(Debug)]
pub struct Encoder<B: Backend> {
    /// The model's architecture.
    pub config: EncoderConfig,
    /// How sentence embeddings are made.
    pub sentence: SentenceConfig,
    model: EncoderModel<B>,
    tokenizer: TextTokenizer,
    device: B::Device,
    batch_size: usize,
    concurrency: usize,
    /// The int8 linear layers, when the int8 option is on ([`Self::with_int8`]).
    quant: Option<quant::QuantModel>,
    shapes: ShapePolicy,
    precision: Precision,
    /// Whether the attention mask is built whole on the host ([`EncoderBackend::FULL_BIAS`]).
    full_bias: bool,
    shape_log: shapes::ShapeLog,
}

impl<B: EncoderBackend> Encoder<B> {
    /// Loads a model folder (`config.json`, `model.safetensors`, `tokenizer.json`, and the
    /// sentence-transformers files when present) onto `device`.
    pub fn load(dir: &Path, device: &B::Device) -> Result<Self, EncoderError> {
        let config = EncoderConfig::from_file(&dir.join("config.json"))?;
        let sentence = SentenceConfig::from_dir(dir, &config)?;
        let tokenizer =
            TextTokenizer::from_file(&dir.join("tokenizer.json"), sentence.max_seq_length)?;
        let mut model = config.init::<B>(device);
        loader::load_weights(&mut model, &dir.join("model.safetensors"))?;
        Ok(Self {
            config,
            sentence,
            model,
            tokenizer,
            device: device.clone(),
            batch_size: DEFAULT_BATCH_SIZE,
            concurrency: default_concurrency(),
            quant: None,
            shapes: ShapePolicy::default_for_build(),
            precision: Precision::F32,
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
    fn sentence_buckets(&self) -> Vec<usize> {
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

    /// Sets how many batches run at once (at least 1); see [`default_concurrency`].
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
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

    fn check_layer(&self, layer: usize) -> Result<(), EncoderError> {
        if layer > self.config.num_layers {
            return Err(EncoderError::Invalid(format!(
                "layer {layer} does not exist (the model has {} layers; 0 is the embeddings)",
                self.config.num_layers
            )));
        }
        Ok(())
    }

    /// Runs `sequences` through the model, longest first, `batch_size` at a time, and hands
    /// each batch's sequence indices and the host values `work` makes of its input and hidden
    /// states (of `layers`) to `each`, in batch order.
    ///
    /// Up to `concurrency` batches run at once (on rayon's pool): burn-flex runs matrix products
    /// on every thread but element-wise operations, softmax-free parts of attention and copies on
    /// one, so independent batches side by side keep every core busy. Results are the same as
    /// one at a time.
    fn run<T: Send>(
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
    fn batches(&self, sequences: &[Vec<u32>], range: std::ops::Range<usize>) -> Vec<Vec<usize>> {
        let lengths = range.map(|i| (i, sequences[i].len()));
        match self.shapes {
            ShapePolicy::Exact => length_batches(lengths, self.batch_size),
            ShapePolicy::Buckets => shapes::fixed_batches(lengths, self.batch_size),
        }
    }

    /// The `[rows, seq]` shape `batch` runs at ([`shapes::batch_shape`]).
    fn shape_of(&self, sequences: &[Vec<u32>], batch: &[usize], buckets: &[usize]) -> [usize; 2] {
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
    fn run_batches<T: Send>(
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

    /// Token positions of the sentence inputs of `parts` as they are batched (each part on its
    /// own, as [`Self::sentence_parts`] and [`Self::encode_parts`] batch them): `(real,
    /// padded)`, where `padded` counts every position a forward pass computes (pad rows
    /// included). The padding
    /// share is `padded / real - 1`.
    pub fn positions(&self, parts: &[&[&str]]) -> Result<(usize, usize), EncoderError> {
        let (mut real, mut padded) = (0, 0);
        for texts in parts {
            let sequences: Vec<Vec<u32>> = self
                .sentence_tokens(texts)?
                .into_iter()
                .map(|t| t.ids)
                .collect();
            let buckets = self.sentence_buckets();
            for batch in self.batches(&sequences, 0..sequences.len()) {
                real += batch.iter().map(|&i| sequences[i].len()).sum::<usize>();
                let [rows, seq] = self.shape_of(&sequences, &batch, &buckets);
                padded += rows * seq;
            }
        }
        Ok((real, padded))
    }

    /// Pools one batch's last layer into sentence vectors, `[batch, hidden]`.
    fn pool(&self, hidden: Tensor<B, 3>, input: &EncoderInput<B>) -> Tensor<B, 2> {
        let pooled = match self.sentence.pooling {
            Pooling::Mean => pooling::mean_pool(hidden, input.padding.clone()),
            Pooling::Cls => pooling::cls_pool(hidden),
            Pooling::Max => pooling::max_pool(hidden, input.padding.clone()),
        };
        if self.sentence.normalize {
            pooling::l2_normalize(pooled)
        } else {
            pooled
        }
    }

    /// The sentence inputs of `texts`, tokenised on rayon's pool (in order).
    fn sentence_tokens(
        &self,
        texts: &[&str],
    ) -> Result<Vec<tokenize::SentenceTokens>, EncoderError> {
        use rayon::prelude::*;
        texts
            .par_iter()
            .map(|t| self.tokenizer.sentence(t))
            .collect()
    }

    /// One embedding per text, as sentence-transformers computes it for this model.
    pub fn sentence_embeddings(&self, texts: &[&str]) -> Result<Vectors, EncoderError> {
        let mut parts = self.sentence_parts(&[texts])?;
        Ok(parts.pop().expect("one part"))
    }

    /// [`Self::sentence_embeddings`] of several parts at once, each batched on its own exactly
    /// as [`Self::encode_parts`] batches it (so a part's floats do not depend on the others).
    pub fn sentence_parts(&self, parts: &[&[&str]]) -> Result<Vec<Vectors>, EncoderError> {
        let dim = self.dim();
        let mut sequences: Vec<Vec<u32>> = Vec::new();
        let mut batches: Vec<Vec<usize>> = Vec::new();
        for texts in parts {
            let first = sequences.len();
            sequences.extend(self.sentence_tokens(texts)?.into_iter().map(|t| t.ids));
            batches.extend(self.batches(&sequences, first..sequences.len()));
        }
        let mut data = vec![0.0f32; sequences.len() * dim];
        let last = self.last_layer();
        self.run_batches(
            &sequences,
            &batches,
            &self.sentence_buckets(),
            &[last],
            |input, mut hidden| tensor_values(self.pool(hidden.remove(0), input).into_data()),
            |batch, values| {
                for (row, &i) in batch.iter().enumerate() {
                    data[i * dim..(i + 1) * dim]
                        .copy_from_slice(&values[row * dim..(row + 1) * dim]);
                }
            },
        );
        Ok(split_parts(&data, parts, dim))
    }

    /// The static word table of a key event whose texts are `texts`, from hidden layer `layer`
    /// (0 = embeddings, [`Self::last_layer`] = X-Class's default), computed as X-Class does.
    pub fn word_vectors(
        &self,
        texts: &[&str],
        layer: usize,
    ) -> Result<Vec<WordVector>, EncoderError> {
        self.check_layer(layer)?;
        let model_max = XCLASS_MAX_TOKENS.min(self.config.max_tokens());
        let mut sums = WordSums::new(self.dim());
        let mut sequences = Vec::new();
        let mut occurrences: Vec<Vec<Occurrence>> = Vec::new();
        for text in texts {
            let chunks = tokenize::word_chunks(&self.tokenizer, text, model_max)?;
            let first = sequences.len();
            occurrences.extend(chunks.chunks.iter().map(|_| Vec::new()));
            for (word, &(chunk, start, end)) in chunks.words.iter().zip(&chunks.spans) {
                if tokenize::is_punctuation_only(word) || start == end {
                    continue;
                }
                let word = sums.id(word);
                // +1: positions in the chunk count the start token.
                occurrences[first + chunk].push(Occurrence {
                    word,
                    start: start + 1,
                    end: end + 1,
                });
            }
            sequences.extend(chunks.chunks);
        }
        // Chunks no word is read from need no forward pass.
        for (seq, occ) in sequences.iter_mut().zip(&occurrences) {
            if occ.is_empty() {
                seq.clear();
            }
        }
        self.run(
            &sequences,
            &shapes::length_buckets(model_max),
            &[layer],
            |_, mut hidden| host_block(hidden.remove(0)),
            |batch, block| collect_words(&mut sums, batch, &occurrences, &block),
        );
        Ok(sums.finish())
    }

    /// Sentence embeddings and a word table from one forward pass over the sentence inputs
    /// (for one model serving both roles). The embeddings equal [`Self::sentence_embeddings`];
    /// the words are the tokenizer's words of each (uncleaned) text, read from the same
    /// sequence, truncated at `max_seq_length` (a word cut by truncation is dropped), at
    /// `layer`. On clean texts shorter than `max_seq_length` they equal
    /// [`Self::word_vectors`].
    pub fn encode_both(
        &self,
        texts: &[&str],
        layer: usize,
    ) -> Result<(Vectors, Vec<WordVector>), EncoderError> {
        let (embeddings, sums) = self.encode_both_sums(texts, layer)?;
        Ok((embeddings, sums.into_iter().map(WordVector::from).collect()))
    }

    /// [`Self::encode_both`] with the word table as sums, so that the tables of parts of an
    /// event (encoded anywhere) add up to the whole's.
    pub fn encode_both_sums(
        &self,
        texts: &[&str],
        layer: usize,
    ) -> Result<(Vectors, Vec<WordSum>), EncoderError> {
        let mut out = self.encode_parts(&[texts], layer)?;
        Ok(out.pop().expect("one part"))
    }

    /// [`Self::encode_both_sums`] of several parts at once: each part is batched on its own,
    /// exactly as alone (so its floats are the same), but the batches of all parts share the
    /// waves of concurrent forward passes, so many small parts keep every core busy.
    pub fn encode_parts(
        &self,
        parts: &[&[&str]],
        layer: usize,
    ) -> Result<Vec<(Vectors, Vec<WordSum>)>, EncoderError> {
        self.check_layer(layer)?;
        let dim = self.dim();
        let mut sequences: Vec<Vec<u32>> = Vec::new();
        let mut occurrences: Vec<Vec<Occurrence>> = Vec::new();
        let mut part_of: Vec<usize> = Vec::new();
        let mut sums: Vec<WordSums> = Vec::with_capacity(parts.len());
        let mut batches: Vec<Vec<usize>> = Vec::new();
        for (p, texts) in parts.iter().enumerate() {
            let first = sequences.len();
            let tokens = self.sentence_tokens(texts)?;
            let mut part_sums = WordSums::new(dim);
            for (text, tok) in texts.iter().zip(&tokens) {
                let words = self.tokenizer.words(text)?;
                let mut occ: Vec<Occurrence> = Vec::new();
                let mut t = 0;
                while t < tok.ids.len() {
                    let Some(w) = tok.word_ids[t] else {
                        t += 1;
                        continue;
                    };
                    let start = t;
                    while t < tok.ids.len() && tok.word_ids[t] == Some(w) {
                        t += 1;
                    }
                    let Some(word) = words.get(w as usize) else {
                        continue;
                    };
                    let complete = self.tokenizer.pieces(word)?.len() == t - start;
                    if complete && !tokenize::is_punctuation_only(word) {
                        occ.push(Occurrence {
                            word: part_sums.id(word),
                            start,
                            end: t,
                        });
                    }
                }
                occurrences.push(occ);
                part_of.push(p);
            }
            sequences.extend(tokens.into_iter().map(|t| t.ids));
            batches.extend(self.batches(&sequences, first..sequences.len()));
            sums.push(part_sums);
        }
        let mut data = vec![0.0f32; sequences.len() * dim];
        let last = self.last_layer();
        self.run_batches(
            &sequences,
            &batches,
            &self.sentence_buckets(),
            &[last, layer],
            |input, mut hidden| {
                let words_layer = host_block(hidden.pop().expect("two layers asked"));
                let pooled = self.pool(hidden.pop().expect("two layers asked"), input);
                (tensor_values(pooled.into_data()), words_layer)
            },
            |batch, (values, block)| {
                for (row, &i) in batch.iter().enumerate() {
                    data[i * dim..(i + 1) * dim]
                        .copy_from_slice(&values[row * dim..(row + 1) * dim]);
                }
                collect_words(&mut sums[part_of[batch[0]]], batch, &occurrences, &block);
            },
        );
        let mut out = Vec::with_capacity(parts.len());
        for (vectors, part_sums) in split_parts(&data, parts, dim).into_iter().zip(sums) {
            out.push((vectors, part_sums.finish_sums()));
        }
        Ok(out)
    }
}

/// Batches of sequences given as `(index, length)`: longest first (ties in the given order), at
/// most `batch_size` a batch, and a batch ends early where the next sequence is shorter than
/// [`BATCH_LENGTH_RATIO`] of its first, so that short sequences are not padded to long ones.
/// Empty sequences are skipped. The batches depend on nothing but these lengths.
pub fn length_batches(
    sequences: impl IntoIterator<Item = (usize, usize)>,
    batch_size: usize,
) -> Vec<Vec<usize>> {
    let mut order: Vec<(usize, usize)> = sequences.into_iter().filter(|s| s.1 > 0).collect();
    order.sort_by_key(|&(_, len)| std::cmp::Reverse(len));
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut longest = 0usize;
    for (i, len) in order {
        if !current.is_empty()
            && (current.len() >= batch_size.max(1)
                || (len as f64) < BATCH_LENGTH_RATIO * longest as f64)
        {
            out.push(std::mem::take(&mut current));
        }
        if current.is_empty() {
            longest = len;
        }
        current.push(i);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The rows of `data` (`dim` values each, the parts' texts in order) cut into one [`Vectors`] a
/// part.
fn split_parts(data: &[f32], parts: &[&[&str]], dim: usize) -> Vec<Vectors> {
    let mut rest = data;
    parts
        .iter()
        .map(|texts| {
            let (head, tail) = rest.split_at(texts.len() * dim);
            rest = tail;
            Vectors {
                dim,
                data: head.to_vec(),
            }
        })
        .collect()
}

/// The f32 values of tensor data (converting if the backend computed in another float type).
pub(crate) fn tensor_values(data: burn::tensor::TensorData) -> Vec<f32> {
    data.convert::<f32>()
        .into_vec::<f32>()
        .expect("converted to f32")
}

/// A batch's hidden states on the host: `[batch, seq, dim]` values and `seq`.
struct HostBlock {
    seq: usize,
    values: Vec<f32>,
}

fn host_block<B: Backend>(hidden: Tensor<B, 3>) -> HostBlock {
    let [_, seq, _] = hidden.dims();
    HostBlock {
        seq,
        values: tensor_values(hidden.into_data()),
    }
}

/// Adds the occurrences of every sequence of a batch.
fn collect_words(
    sums: &mut WordSums,
    batch: &[usize],
    occurrences: &[Vec<Occurrence>],
    block: &HostBlock,
) {
    let (seq, dim, values) = (block.seq, sums.dim, &block.values);
    for (row, &i) in batch.iter().enumerate() {
        let block = &values[row * seq * dim..(row + 1) * seq * dim];
        for &occ in &occurrences[i] {
            sums.add(occ, block);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{length_batches, BATCHING, BATCH_LENGTH_RATIO};

    #[test]
    fn batches_are_longest_first_and_end_before_much_shorter_sequences() {
        // Lengths by index; 0 is skipped.
        let lengths = [10, 100, 0, 90, 86, 84, 50, 50, 50, 49, 3];
        let batches = length_batches(lengths.iter().copied().enumerate(), 2);
        // 100, 90 (≥ 85) | 86, 84 | 50, 50 (ties in index order) | 50, 49 | 10 | 3
        assert_eq!(
            batches,
            vec![
                vec![1, 3],
                vec![4, 5],
                vec![6, 7],
                vec![8, 9],
                vec![0],
                vec![10]
            ]
        );
        let big = length_batches(lengths.iter().copied().enumerate(), 32);
        assert_eq!(
            big,
            vec![vec![1, 3, 4], vec![5], vec![6, 7, 8, 9], vec![0], vec![10]]
        );
        // Every non-empty sequence once.
        let mut all: Vec<usize> = big.concat();
        all.sort_unstable();
        assert_eq!(all, vec![0, 1, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert!(BATCHING.contains(&BATCH_LENGTH_RATIO.to_string()));
    }
}
