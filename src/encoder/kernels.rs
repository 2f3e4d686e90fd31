//! Where a CUDA build keeps what it learns about its kernels (no paper equation: the encoder's
//! running cost). cubecl, under burn-cuda, compiles a kernel the first time it meets a shape and
//! autotunes its matrix products; both are cached on disk here (`encoder.kernel_cache`), so a
//! later process on the same GPU model pays neither again. A CPU build only checks the folder.

use std::path::{Path, PathBuf};

use super::error::EncoderError;
use super::options::AutotuneLevel;

/// The environment variable naming the kernel cache (`encoder.kernel_cache` wins over it).
pub const KERNELS_ENV: &str = "EPIMINE_KERNELS";

/// The kernel cache: `setting`, else `$EPIMINE_KERNELS`, else `kernels/` beside the model
/// cache (`~/.cache/epimine/kernels` by default).
pub fn kernel_cache_dir(setting: Option<&str>) -> Result<PathBuf, EncoderError> {
    if let Some(dir) = setting.filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os(KERNELS_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let models = super::fetch::model_cache(None).map_err(|e| {
        EncoderError::Invalid(format!(
            "no kernel cache: set encoder.kernel_cache or ${KERNELS_ENV} ({e})"
        ))
    })?;
    Ok(models
        .parent()
        .map_or_else(|| models.join("kernels"), |p| p.join("kernels")))
}

/// Makes the kernel cache and checks that it can be written (before any work, so that a run
/// does not learn it hours in).
pub fn check_writable(dir: &Path) -> Result<(), EncoderError> {
    let io = |source| EncoderError::Io {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let probe = dir.join(format!(".epimine-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"ok").map_err(io)?;
    std::fs::remove_file(&probe).map_err(io)?;
    Ok(())
}

/// Points cubecl's autotune results and compiled kernels at `dir` with `autotune` effort, once
/// per process (cubecl reads its settings once; a later call with other settings is logged and
/// has no effect). In a CPU build: checks `dir` only.
pub fn configure(dir: &Path, autotune: AutotuneLevel) -> Result<(), EncoderError> {
    check_writable(dir)?;
    #[cfg(feature = "cuda")]
    {
        use cubecl_runtime::config::cache::CacheConfig;
        use cubecl_runtime::config::{CubeClRuntimeConfig, RuntimeConfig};
        let storage = CubeClRuntimeConfig::storage();
        let mut state = storage.lock();
        if let Some(current) = state.as_ref() {
            let same = matches!(&current.autotune.cache, CacheConfig::File(d) if *d == dir.join("autotune"));
            if !same {
                tracing::warn!(
                    "cubecl's settings were fixed earlier in this process; the kernel cache stays \
                     {:?} (asked: {})",
                    current.autotune.cache,
                    dir.display()
                );
            }
            return Ok(());
        }
        let mut config = CubeClRuntimeConfig::default();
        config.autotune.cache = CacheConfig::File(dir.join("autotune"));
        config.compilation.cache = Some(CacheConfig::File(dir.join("compiled")));
        config.autotune.level = match autotune {
            AutotuneLevel::Minimal => cubecl_runtime::config::autotune::AutotuneLevel::Minimal,
            AutotuneLevel::Balanced => cubecl_runtime::config::autotune::AutotuneLevel::Balanced,
            AutotuneLevel::Extensive => cubecl_runtime::config::autotune::AutotuneLevel::Extensive,
            AutotuneLevel::Full => cubecl_runtime::config::autotune::AutotuneLevel::Full,
        };
        *state = Some(std::sync::Arc::new(config));
        tracing::debug!(
            kernel_cache = %dir.display(),
            autotune = autotune.name(),
            "cubecl configured"
        );
    }
    #[cfg(not(feature = "cuda"))]
    let _ = autotune;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_wins_and_an_unwritable_folder_is_refused_early() {
        assert_eq!(
            kernel_cache_dir(Some("/x/kernels")).unwrap(),
            PathBuf::from("/x/kernels")
        );
        let tmp = std::env::temp_dir().join(format!("epimine-kc-{}", std::process::id()));
        check_writable(&tmp.join("a/b")).unwrap();
        assert!(tmp.join("a/b").is_dir());
        // A file where the folder should be.
        std::fs::write(tmp.join("file"), b"x").unwrap();
        let err = check_writable(&tmp.join("file/kernels")).unwrap_err();
        assert!(err.to_string().contains("file/kernels"), "{err}");
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
