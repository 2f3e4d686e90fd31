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
    let models = crate::models::model_cache(None).map_err(|e| {
        EncoderError::Invalid(format!(
            "no kernel cache: set encoder.kernel_cache or ${KERNELS_ENV} ({e})"
        ))
    })?;
    Ok(models
        .parent()
        .map_or_else(|| models.join("kernels"), |p| p.join("kernels")))
}

/// Makes the kernel cache and checks that it can be written (before any work, so that a run
/// does not learn it hours in). Safe from any number of threads and processes at once: each
/// call writes and removes a probe of its own (process id and a per-process count), created
/// new, so no caller removes another's (issue 48 item 2: the workers of `-w 4` on one GPU
/// failed here when the probe was named by the process alone).
pub fn check_writable(dir: &Path) -> Result<(), EncoderError> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static PROBES: AtomicU64 = AtomicU64::new(0);
    let io = |source| EncoderError::Io {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let probe = dir.join(format!(
        ".epimine-write-check-{}-{}",
        std::process::id(),
        PROBES.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .and_then(|mut f| f.write_all(b"ok"));
    let removed = std::fs::remove_file(&probe);
    written.map_err(io)?;
    removed.map_err(io)?;
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

    /// Issue 48 item 2: `-w 4` on one GPU failed with "<kernel cache>: No such file or
    /// directory" from two workers. Every worker thread of a process checks the cache before
    /// loading its encoder, and the probe file was named by the process id alone: one thread
    /// removed the probe another had just written.
    #[test]
    fn many_workers_of_one_process_check_the_cache_at_once() {
        let tmp = std::env::temp_dir().join(format!("epimine-kc-race-{}", std::process::id()));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let dir = tmp.clone();
                std::thread::spawn(move || {
                    (0..200).try_for_each(|_| check_writable(&dir).map_err(|e| e.to_string()))
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        // No probe is left behind.
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
