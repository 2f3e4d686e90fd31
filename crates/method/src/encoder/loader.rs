//! Hugging Face `model.safetensors` → burn (docs/method.md §1, §6: the encoders run the published
//! weights). Loads through burn-store: [`SafetensorsStore`], a [`KeyRemapper`] with the key map
//! below, and [`PyTorchToBurnAdapter`], which transposes linear weights (PyTorch stores
//! `[out, in]`, burn `[in, out]`).
//!
//! # Key map (Hugging Face → [`EncoderModel`])
//!
//! | Hugging Face | burn |
//! |---|---|
//! | `bert.` / `mpnet.` prefix (checkpoints saved with a task head) | dropped |
//! | `embeddings.{word,position,token_type}_embeddings.weight` | same |
//! | `embeddings.LayerNorm.{weight,bias}` (or `gamma`/`beta`) | `embeddings.layer_norm.{gamma,beta}` |
//! | `encoder.layer.N.` | `layers.N.` |
//! | BERT `attention.self.{query,key,value}` | `attention.{query,key,value}` |
//! | BERT `attention.output.dense` | `attention.output` |
//! | BERT `attention.output.LayerNorm` | `attention_norm` |
//! | MPNet `attention.attn.{q,k,v,o}` | `attention.{query,key,value,output}` |
//! | MPNet `attention.LayerNorm` | `attention_norm` |
//! | `intermediate.dense` | `intermediate` |
//! | `output.dense` / `output.LayerNorm` | `output` / `output_norm` |
//! | MPNet `encoder.relative_attention_bias.weight` | `relative_attention_bias.weight` |
//! | `pooler.*`, `cls.*`, `lm_head.*`, `embeddings.position_ids` | unused (ignored) |
//!
//! Every parameter of the module must be found with the right shape; otherwise loading fails
//! and names what is missing.

use std::path::Path;

use burn::tensor::backend::Backend;
use burn_store::{KeyRemapper, ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};

use super::error::EncoderError;
use super::model::EncoderModel;

/// The Hugging Face → burn key map, applied in order (each rule sees the previous rules' output).
pub const KEY_MAP: &[(&str, &str)] = &[
    (r"^(bert|mpnet)\.", ""),
    (r"^encoder\.layer\.([0-9]+)\.", "layers.${1}."),
    (
        r"^encoder\.relative_attention_bias\.",
        "relative_attention_bias.",
    ),
    (r"\.attention\.self\.query\.", ".attention.query."),
    (r"\.attention\.self\.key\.", ".attention.key."),
    (r"\.attention\.self\.value\.", ".attention.value."),
    (r"\.attention\.output\.dense\.", ".attention.output."),
    (r"\.attention\.output\.LayerNorm\.", ".attention_norm."),
    (r"\.attention\.attn\.q\.", ".attention.query."),
    (r"\.attention\.attn\.k\.", ".attention.key."),
    (r"\.attention\.attn\.v\.", ".attention.value."),
    (r"\.attention\.attn\.o\.", ".attention.output."),
    (r"\.attention\.LayerNorm\.", ".attention_norm."),
    (r"\.intermediate\.dense\.", ".intermediate."),
    (r"^(layers\.[0-9]+)\.output\.dense\.", "${1}.output."),
    (
        r"^(layers\.[0-9]+)\.output\.LayerNorm\.",
        "${1}.output_norm.",
    ),
    (r"^embeddings\.LayerNorm\.", "embeddings.layer_norm."),
    (r"(_norm)\.(weight|gamma)$", "${1}.gamma"),
    (r"(_norm)\.(bias|beta)$", "${1}.beta"),
];

/// Fills `model` with the weights of the safetensors file at `path`.
///
/// Returns how many tensors were applied.
pub fn load_weights<B: Backend>(
    model: &mut EncoderModel<B>,
    path: &Path,
) -> Result<usize, EncoderError> {
    let err = |reason: String| EncoderError::Weights {
        path: path.to_path_buf(),
        reason,
    };
    if !path.is_file() {
        return Err(err("no such file".into()));
    }
    let remapper = KeyRemapper::from_patterns(KEY_MAP.to_vec())
        .expect("the key map's patterns are valid regular expressions");
    let mut store = SafetensorsStore::from_file(path)
        .with_from_adapter(PyTorchToBurnAdapter)
        .remap(remapper)
        .allow_partial(false)
        .validate(true);
    let result = model
        .load_from(&mut store)
        .map_err(|e| err(e.to_string()))?;
    if !result.errors.is_empty() || !result.missing.is_empty() {
        return Err(err(format!(
            "missing: {:?}; errors: {:?}",
            result.missing.iter().map(|m| &m.0).collect::<Vec<_>>(),
            result.errors
        )));
    }
    tracing::debug!(
        applied = result.applied.len(),
        unused = ?result.unused,
        "loaded {}",
        path.display()
    );
    Ok(result.applied.len())
}
