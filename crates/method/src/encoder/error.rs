//! The errors of the encoder boundary.

use std::path::PathBuf;

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
    /// The CUDA build found no usable GPU (no driver library, or no device).
    #[error("{0}")]
    NoGpu(String),
}
