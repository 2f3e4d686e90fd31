//! The word and sentence encoders (docs/method.md §1 static word representations, §6 segment
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
//! batch size, the shapes and the float precision are [`EncoderOptions`]. The backend is
//! burn-flex (multi-threaded CPU) by default and burn-cuda with the `cuda` feature
//! ([`DefaultBackend`]).
//!
//! Layout: `front` is the [`Encoder`] (load, options, batches run in waves) and `passes` what it
//! computes; `batching` groups sequences, `words` sums a word's occurrences, `device` picks the
//! backend and tunes the CPU, `host` reads tensors back, `error` is [`EncoderError`]. The model:
//! [`config`] → [`model`] (init, forward) → [`loader`] (weights, key map) → [`pooling`];
//! [`tokenize`] for both roles; the model cache and its fetch are [`crate::models`].

mod batching;
pub mod config;
mod device;
mod error;
mod front;
mod host;
pub mod kernels;
pub mod loader;
pub mod model;
pub mod ops;
pub mod options;
mod passes;
pub mod pooling;
pub mod quant;
pub mod shapes;
pub mod tokenize;
mod words;

pub use batching::{length_batches, BATCHING, BATCH_LENGTH_RATIO};
pub use config::{Architecture, ModelConfig, Pooling, SentenceConfig};
pub use model::{EncoderInput, EncoderModel};
pub use ops::EncoderBackend;
pub use options::{AutotuneLevel, EncoderOptions, Precision, DEFAULT_BATCH_SIZE};
pub use shapes::ShapePolicy;
pub use tokenize::TextTokenizer;

pub use device::{
    check_device, cuda_device_count, default_concurrency, default_device, simd_path,
    tune_allocator, DefaultBackend, CUDA,
};
pub use error::EncoderError;
pub use front::{check_layer, check_model, Encoder};
pub use words::{Vectors, WordSum, WordVector, XCLASS_MAX_TOKENS};
