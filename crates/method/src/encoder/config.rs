//! Encoder configuration (docs/method.md §1 word encoder, §6 sentence encoder): the Hugging Face
//! `config.json` of a BERT or MPNet model, and the sentence-transformers files beside it that say
//! how a sentence embedding is made (`modules.json`, `sentence_bert_config.json`,
//! `1_Pooling/config.json`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::error::EncoderError;

/// The encoder families this crate runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    /// BERT (bert-base-uncased, all-MiniLM-L6-v2): absolute position embeddings, token types.
    Bert,
    /// MPNet (all-mpnet-base-v2): position ids offset by the padding id, a relative position
    /// bias shared by every layer's attention, no token types.
    MpNet,
}

/// The architecture of a model, as read from its `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// BERT or MPNet.
    pub architecture: Architecture,
    /// Rows of the word embedding table.
    pub vocab_size: usize,
    /// Width of every hidden state.
    pub hidden_size: usize,
    /// Transformer layers.
    pub num_layers: usize,
    /// Attention heads per layer.
    pub num_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Rows of the position embedding table.
    pub max_position_embeddings: usize,
    /// Rows of the token type table (0 for MPNet).
    pub type_vocab_size: usize,
    /// LayerNorm epsilon (BERT: 1e-12, MPNet: 1e-5; burn's default of 1e-5 is wrong for BERT).
    pub layer_norm_eps: f64,
    /// The padding token id (MPNet's position ids start after it).
    pub pad_token_id: usize,
    /// Buckets of MPNet's relative position bias (0 for BERT).
    pub relative_attention_num_buckets: usize,
}

#[derive(Debug, Deserialize)]
struct HfConfig {
    model_type: String,
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    #[serde(default)]
    type_vocab_size: usize,
    layer_norm_eps: Option<f64>,
    #[serde(default = "default_act")]
    hidden_act: String,
    pad_token_id: Option<usize>,
    relative_attention_num_buckets: Option<usize>,
    position_embedding_type: Option<String>,
}

fn default_act() -> String {
    "gelu".to_string()
}

pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, EncoderError> {
    let text = std::fs::read_to_string(path).map_err(|source| EncoderError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| EncoderError::Json {
        path: path.to_path_buf(),
        source,
    })
}

impl ModelConfig {
    /// Reads `config.json` of a Hugging Face model folder.
    pub fn from_file(path: &Path) -> Result<Self, EncoderError> {
        let hf: HfConfig = read_json(path)?;
        let unsupported = |reason: String| EncoderError::Unsupported {
            path: path.to_path_buf(),
            reason,
        };
        let architecture = match hf.model_type.as_str() {
            "bert" => Architecture::Bert,
            "mpnet" => Architecture::MpNet,
            other => {
                return Err(unsupported(format!(
                    "model_type `{other}` (supported: bert, mpnet)"
                )))
            }
        };
        if hf.hidden_act != "gelu" {
            return Err(unsupported(format!(
                "hidden_act `{}` (supported: gelu)",
                hf.hidden_act
            )));
        }
        if let Some(kind) = hf.position_embedding_type.as_deref() {
            if kind != "absolute" {
                return Err(unsupported(format!("position_embedding_type `{kind}`")));
            }
        }
        if hf.num_attention_heads == 0 || !hf.hidden_size.is_multiple_of(hf.num_attention_heads) {
            return Err(unsupported(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                hf.hidden_size, hf.num_attention_heads
            )));
        }
        let (pad_default, eps_default, buckets) = match architecture {
            Architecture::Bert => (0, 1e-12, 0),
            Architecture::MpNet => (1, 1e-5, hf.relative_attention_num_buckets.unwrap_or(32)),
        };
        Ok(Self {
            architecture,
            vocab_size: hf.vocab_size,
            hidden_size: hf.hidden_size,
            num_layers: hf.num_hidden_layers,
            num_heads: hf.num_attention_heads,
            intermediate_size: hf.intermediate_size,
            max_position_embeddings: hf.max_position_embeddings,
            type_vocab_size: match architecture {
                Architecture::Bert => hf.type_vocab_size.max(1),
                Architecture::MpNet => 0,
            },
            layer_norm_eps: hf.layer_norm_eps.unwrap_or(eps_default),
            pad_token_id: hf.pad_token_id.unwrap_or(pad_default),
            relative_attention_num_buckets: buckets,
        })
    }

    /// The first position id of a sequence: 0 for BERT, `pad_token_id + 1` for MPNet (as
    /// RoBERTa, it numbers positions after the padding id).
    pub fn position_offset(&self) -> usize {
        match self.architecture {
            Architecture::Bert => 0,
            Architecture::MpNet => self.pad_token_id + 1,
        }
    }

    /// The longest sequence (special tokens included) the position table can hold.
    pub fn max_tokens(&self) -> usize {
        self.max_position_embeddings
            .saturating_sub(self.position_offset())
    }
}

/// How token vectors become one sentence vector (sentence-transformers' `Pooling` module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean over the tokens the attention mask keeps (all-MiniLM-L6-v2, all-mpnet-base-v2).
    Mean,
    /// The first token's vector.
    Cls,
    /// Element-wise maximum over the kept tokens.
    Max,
}

/// How sentence-transformers makes a sentence embedding with this model.
#[derive(Debug, Clone, PartialEq)]
pub struct SentenceConfig {
    /// Token limit, special tokens included; longer texts are truncated.
    pub max_seq_length: usize,
    /// Pooling of the last layer's token vectors.
    pub pooling: Pooling,
    /// Whether a `Normalize` module follows (unit-length embeddings).
    pub normalize: bool,
}

#[derive(Debug, Deserialize)]
struct ModuleEntry {
    #[serde(default)]
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Debug, Deserialize)]
struct SbertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Debug, Deserialize)]
struct TokenizerConfig {
    model_max_length: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
struct PoolingConfig {
    /// sentence-transformers ≥ 5: "mean", "cls", "max", ….
    pooling_mode: Option<String>,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
}

fn module_kind(kind: &str) -> &str {
    kind.rsplit('.').next().unwrap_or(kind)
}

impl SentenceConfig {
    /// Reads the sentence-transformers files of `dir`. A plain Hugging Face folder (no
    /// `modules.json`) gets what sentence-transformers gives it: mean pooling, no normalisation.
    ///
    /// `max_seq_length` is `sentence_bert_config.json`'s, else `tokenizer_config.json`'s
    /// `model_max_length`, and never more than the position table holds.
    pub fn from_dir(dir: &Path, model: &ModelConfig) -> Result<Self, EncoderError> {
        let mut pooling = Pooling::Mean;
        let mut normalize = false;
        let modules_path = dir.join("modules.json");
        if modules_path.is_file() {
            let modules: Vec<ModuleEntry> = read_json(&modules_path)?;
            for m in &modules {
                match module_kind(&m.kind) {
                    "Transformer" => {}
                    "Pooling" => pooling = Self::read_pooling(&dir.join(&m.path))?,
                    "Normalize" => normalize = true,
                    other => {
                        return Err(EncoderError::Unsupported {
                            path: modules_path.clone(),
                            reason: format!("sentence-transformers module `{other}`"),
                        })
                    }
                }
            }
        }
        let mut max_seq_length = None;
        let sbert = dir.join("sentence_bert_config.json");
        if sbert.is_file() {
            max_seq_length = read_json::<SbertConfig>(&sbert)?.max_seq_length;
        }
        let tok_config = dir.join("tokenizer_config.json");
        if max_seq_length.is_none() && tok_config.is_file() {
            max_seq_length = read_json::<TokenizerConfig>(&tok_config)?
                .model_max_length
                .filter(|n| (1.0..1e9).contains(n))
                .map(|n| n as usize);
        }
        let max_seq_length = max_seq_length.unwrap_or(usize::MAX).min(model.max_tokens());
        Ok(Self {
            max_seq_length,
            pooling,
            normalize,
        })
    }

    fn read_pooling(dir: &Path) -> Result<Pooling, EncoderError> {
        let path: PathBuf = dir.join("config.json");
        let config: PoolingConfig = if path.is_file() {
            read_json(&path)?
        } else {
            PoolingConfig::default()
        };
        let unsupported = |what: &str| EncoderError::Unsupported {
            path: path.clone(),
            reason: format!("pooling mode `{what}`"),
        };
        if let Some(mode) = config.pooling_mode.as_deref() {
            return match mode {
                "mean" => Ok(Pooling::Mean),
                "cls" => Ok(Pooling::Cls),
                "max" => Ok(Pooling::Max),
                other => Err(unsupported(other)),
            };
        }
        let chosen = [
            (config.pooling_mode_mean_tokens, "mean"),
            (config.pooling_mode_cls_token, "cls"),
            (config.pooling_mode_max_tokens, "max"),
            (
                config.pooling_mode_mean_sqrt_len_tokens,
                "mean_sqrt_len_tokens",
            ),
            (config.pooling_mode_weightedmean_tokens, "weightedmean"),
            (config.pooling_mode_lasttoken, "lasttoken"),
        ];
        let on: Vec<&str> = chosen.iter().filter(|(on, _)| *on).map(|c| c.1).collect();
        match on.as_slice() {
            [] | ["mean"] => Ok(Pooling::Mean),
            ["cls"] => Ok(Pooling::Cls),
            ["max"] => Ok(Pooling::Max),
            other => Err(unsupported(&other.join("+"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    const BERT: &str = r#"{"model_type": "bert", "vocab_size": 10, "hidden_size": 8,
        "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 16,
        "max_position_embeddings": 64, "type_vocab_size": 2}"#;

    #[test]
    fn bert_defaults_to_its_own_layer_norm_epsilon() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "config.json", BERT);
        let c = ModelConfig::from_file(&dir.path().join("config.json")).unwrap();
        assert_eq!(c.architecture, Architecture::Bert);
        assert_eq!(c.layer_norm_eps, 1e-12);
        assert_eq!(c.max_tokens(), 64);
    }

    #[test]
    fn unsupported_models_are_named() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "config.json",
            &BERT.replace("\"bert\"", "\"roberta\""),
        );
        let err = ModelConfig::from_file(&dir.path().join("config.json")).unwrap_err();
        assert!(err.to_string().contains("model_type `roberta`"), "{err}");
        write(
            dir.path(),
            "config.json",
            &BERT.replace(
                "\"type_vocab_size\"",
                "\"hidden_act\": \"relu\", \"type_vocab_size\"",
            ),
        );
        let err = ModelConfig::from_file(&dir.path().join("config.json")).unwrap_err();
        assert!(err.to_string().contains("hidden_act `relu`"), "{err}");
    }

    #[test]
    fn sentence_settings_from_either_layout() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "config.json", BERT);
        let model = ModelConfig::from_file(&dir.path().join("config.json")).unwrap();
        // A plain Hugging Face folder: mean pooling, no normalisation, the position limit.
        let s = SentenceConfig::from_dir(dir.path(), &model).unwrap();
        assert_eq!(
            (s.max_seq_length, s.pooling, s.normalize),
            (64, Pooling::Mean, false)
        );
        // sentence-transformers 2.x layout.
        write(
            dir.path(),
            "modules.json",
            r#"[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
                {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
                {"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}]"#,
        );
        write(
            dir.path(),
            "sentence_bert_config.json",
            r#"{"max_seq_length": 32}"#,
        );
        write(
            dir.path(),
            "1_Pooling/config.json",
            r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
        );
        let s = SentenceConfig::from_dir(dir.path(), &model).unwrap();
        assert_eq!(
            (s.max_seq_length, s.pooling, s.normalize),
            (32, Pooling::Cls, true)
        );
        // sentence-transformers 5+ layout: the limit is the tokenizer's, capped by positions.
        std::fs::remove_file(dir.path().join("sentence_bert_config.json")).unwrap();
        write(
            dir.path(),
            "tokenizer_config.json",
            r#"{"model_max_length": 512}"#,
        );
        write(
            dir.path(),
            "1_Pooling/config.json",
            r#"{"pooling_mode": "max"}"#,
        );
        let s = SentenceConfig::from_dir(dir.path(), &model).unwrap();
        assert_eq!((s.max_seq_length, s.pooling), (64, Pooling::Max));
        write(
            dir.path(),
            "1_Pooling/config.json",
            r#"{"pooling_mode": "lasttoken"}"#,
        );
        let err = SentenceConfig::from_dir(dir.path(), &model).unwrap_err();
        assert!(
            err.to_string().contains("pooling mode `lasttoken`"),
            "{err}"
        );
    }
}
