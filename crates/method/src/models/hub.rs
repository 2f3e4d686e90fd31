//! The Hugging Face hub as a source: the model's files, each LFS file checked against the sha256
//! the hub's API lists.

use std::path::Path;

use serde::Deserialize;

use super::http::{download, get_json};
use super::known::{Sources, OPTIONAL_FILES, REQUIRED_FILES};

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

/// Downloads `repo`'s files into `staging`.
pub(super) async fn from_hub(
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
