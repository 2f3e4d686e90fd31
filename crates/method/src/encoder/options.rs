//! How an [`super::Encoder`] runs: batch size, batch shapes, float precision and int8 (none of
//! them changes what is computed, only how: docs/method.md §1's word vectors and §6's sentence embeddings).

use serde::{Deserialize, Serialize};

use super::shapes::ShapePolicy;

/// The float type the transformer computes in. Weights are loaded in f32 and cast once; the
/// hidden states leave the model in f32 (pooling, normalisation and word sums stay f32/f64).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 32-bit floats (the default; sentence-transformers' fp32).
    #[default]
    F32,
    /// IEEE half precision: for GPUs with f16 tensor cores.
    F16,
    /// bfloat16: f32's range with 8 bits of mantissa.
    Bf16,
}

impl Precision {
    /// The name used in job files and flags.
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
        }
    }

    /// burn's float type of this precision.
    pub fn dtype(self) -> burn::tensor::FloatDType {
        match self {
            Self::F32 => burn::tensor::FloatDType::F32,
            Self::F16 => burn::tensor::FloatDType::F16,
            Self::Bf16 => burn::tensor::FloatDType::BF16,
        }
    }
}

impl std::str::FromStr for Precision {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "f32" => Ok(Self::F32),
            "f16" => Ok(Self::F16),
            "bf16" => Ok(Self::Bf16),
            other => Err(format!("unknown precision {other:?} (f32, f16 or bf16)")),
        }
    }
}

/// Sequences per forward pass unless told otherwise: sentence-transformers' 32 on the CPU
/// (more only adds padding there), 128 on CUDA (a GPU needs large batches to be busy; with
/// [`ShapePolicy::Buckets`] every batch has exactly this many rows).
pub const DEFAULT_BATCH_SIZE: usize = if cfg!(feature = "cuda") { 128 } else { 32 };

/// Everything that sets how an encoder runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncoderOptions {
    /// Sequences per forward pass (at least 1).
    pub batch_size: usize,
    /// Linear layers in int8 (CPU; [`super::quant`]).
    pub int8: bool,
    /// Batch shapes ([`ShapePolicy`]).
    pub shapes: ShapePolicy,
    /// Float type of the transformer.
    pub precision: Precision,
}

impl Default for EncoderOptions {
    fn default() -> Self {
        Self {
            batch_size: DEFAULT_BATCH_SIZE,
            int8: false,
            shapes: ShapePolicy::default_for_build(),
            precision: Precision::F32,
        }
    }
}

impl EncoderOptions {
    /// Checks the combination: a batch of at least one sequence; int8 only in f32.
    pub fn validate(&self) -> Result<(), String> {
        if self.batch_size == 0 {
            return Err("batch_size must be at least 1".into());
        }
        if self.int8 && self.precision != Precision::F32 {
            return Err(format!(
                "int8 and precision {} exclude each other (int8 runs the linear layers in \
                 integers from f32 activations)",
                self.precision.name()
            ));
        }
        Ok(())
    }

    /// What changes the floats beyond the model and the batch size, for cache keys and
    /// checkpoint digests: empty for the CPU defaults (exact shapes, f32, no int8) so that their
    /// keys stay those of earlier versions.
    pub fn float_tag(&self) -> String {
        let mut tag = String::new();
        if self.int8 {
            tag.push_str("int8 linear layers");
        }
        if self.shapes != ShapePolicy::Exact {
            tag.push_str(&format!("|shapes {}", self.shapes.name()));
        }
        if self.precision != Precision::F32 {
            tag.push_str(&format!("|precision {}", self.precision.name()));
        }
        tag
    }
}

/// cubecl's autotuning effort (`encoder.autotune`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AutotuneLevel {
    /// The fewest candidate kernels.
    Minimal,
    /// cubecl's default.
    #[default]
    Balanced,
    /// More candidates.
    Extensive,
    /// Every candidate.
    Full,
}

impl AutotuneLevel {
    /// The name cubecl gives it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Minimal => "minimal",
            Self::Balanced => "balanced",
            Self::Extensive => "extensive",
            Self::Full => "full",
        }
    }
}

impl std::str::FromStr for AutotuneLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "minimal" => Ok(Self::Minimal),
            "balanced" => Ok(Self::Balanced),
            "extensive" => Ok(Self::Extensive),
            "full" => Ok(Self::Full),
            other => Err(format!(
                "unknown autotune level {other:?} (minimal, balanced, extensive or full)"
            )),
        }
    }
}
