//! The HTTP of every fetch: one client with bounded waits, a streamed and hashed download, a
//! JSON GET, and request errors with their causes.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::digest::hex;

/// The HTTP client of every fetch: bounded waits (15 s to connect, 60 s between reads).
pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .user_agent(concat!("epimine/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(15))
        .read_timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| e.to_string())
}
/// GET `url`, streamed into `file`; returns the sha256 of the body (lower-case hex), or `None`
/// for a 404.
pub(super) async fn download(
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

/// GET `url` and parse its JSON body.
pub(super) async fn get_json<T: serde::de::DeserializeOwned>(
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
pub(super) fn http_error(url: &str, e: reqwest::Error) -> String {
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
