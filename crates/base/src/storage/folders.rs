//! The local folders a command creates, and their removal when it fails and leaves them empty.

/// The local folders that writing to `location` would create: the folder itself and the
/// missing ones above it, deepest first (none for an existing folder or an `s3://` location).
/// A command that fails hands them to [`remove_empty_folders`], so that it leaves nothing new
/// behind.
pub fn new_local_folders(location: &str) -> Vec<std::path::PathBuf> {
    let path = if location.starts_with("file://") {
        match url::Url::parse(location)
            .ok()
            .and_then(|u| u.to_file_path().ok())
        {
            Some(path) => path,
            None => return Vec::new(),
        }
    } else if location.contains("://") || location.is_empty() {
        return Vec::new();
    } else {
        std::path::PathBuf::from(location)
    };
    let mut new = Vec::new();
    let mut at = Some(path.as_path());
    while let Some(p) = at.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
        new.push(p.to_path_buf());
        at = p.parent();
    }
    new
}

/// Removes those of `folders` (deepest first, as [`new_local_folders`] gives them) that are
/// empty; a folder something was written into stays.
pub fn remove_empty_folders(folders: &[std::path::PathBuf]) {
    for folder in folders {
        if std::fs::remove_dir(folder).is_err() {
            break;
        }
    }
}
