//! Where and how fast the encoders run: the backend and its device, the CPU's instruction set,
//! the allocator tuning and the default number of batches in flight.

/// The backend the encoders run on: burn-flex on the CPU, or burn-cuda with feature `cuda`.
#[cfg(not(feature = "cuda"))]
pub type DefaultBackend = burn::backend::Flex;

/// The backend the encoders run on: burn-flex on the CPU, or burn-cuda with feature `cuda`.
#[cfg(feature = "cuda")]
pub type DefaultBackend = burn::backend::Cuda;

/// Whether this is the CUDA build (feature `cuda` of this crate, which the `epimine` package's
/// feature of the same name turns on): for the crates above, whose own features do not say.
pub const CUDA: bool = cfg!(feature = "cuda");

/// Whether the encoders can run here: always on the CPU build; on the CUDA build, whether the
/// NVIDIA driver library (`libcuda.so.1`) loads, initialises and sees at least one device.
/// Asked before any work, so that a CUDA build on a machine without a GPU ends with one line
/// naming the cause and the CPU build as the alternative, instead of cudarc's panic in a worker
/// thread (issue 48 item 4).
pub fn check_device() -> Result<(), String> {
    #[cfg(feature = "cuda")]
    {
        cuda_device_count().and_then(|n| {
            if n > 0 {
                Ok(())
            } else {
                Err(no_gpu("the NVIDIA driver sees no CUDA device".into()))
            }
        })
    }
    #[cfg(not(feature = "cuda"))]
    Ok(())
}

/// The message for a CUDA build that cannot run here.
fn no_gpu(cause: String) -> String {
    format!(
        "this is the CUDA build of epimine and it cannot use a GPU here: {cause}; run it on a \
         machine with an NVIDIA GPU and driver, or use the CPU build (`cargo build --release` \
         without `--features cuda`)"
    )
}

/// The number of CUDA devices the driver reports (`cuInit`, `cuDeviceGetCount`), or the line
/// [`check_device`] ends a CUDA build with when it cannot use a GPU here. Built into both
/// builds, so that the CPU build's tests run it (`scripts/ci/test.sh` checks the CUDA build
/// compiles; `EPIMINE_TEST_CUDA_BUILD=1` also builds and runs it).
#[allow(unsafe_code)]
pub fn cuda_device_count() -> Result<i32, String> {
    // SAFETY: loading the driver library runs its initialisers, as cudarc's own loading does;
    // the two symbols have the signatures of the CUDA driver API (CUresult = c_int).
    unsafe {
        let lib = ["libcuda.so.1", "libcuda.so"]
            .iter()
            .find_map(|name| libloading::Library::new(name).ok())
            .ok_or_else(|| no_gpu("no NVIDIA driver library (libcuda.so.1) was found".into()))?;
        let init: libloading::Symbol<unsafe extern "C" fn(u32) -> i32> = lib
            .get(b"cuInit\0")
            .map_err(|e| no_gpu(format!("libcuda has no cuInit ({e})")))?;
        let code = init(0);
        if code != 0 {
            return Err(no_gpu(format!(
                "the NVIDIA driver did not initialise (cuInit error {code})"
            )));
        }
        let count: libloading::Symbol<unsafe extern "C" fn(*mut i32) -> i32> = lib
            .get(b"cuDeviceGetCount\0")
            .map_err(|e| no_gpu(format!("libcuda has no cuDeviceGetCount ({e})")))?;
        let mut n = 0i32;
        let code = count(&mut n);
        if code != 0 {
            return Err(no_gpu(format!(
                "the NVIDIA driver could not count its devices (error {code})"
            )));
        }
        // The library stays loaded for cudarc, which loads it again by name.
        std::mem::forget(lib);
        Ok(n)
    }
}

/// The default device of [`DefaultBackend`].
pub fn default_device() -> burn::tensor::Device<DefaultBackend> {
    Default::default()
}

/// The instruction set the CPU encoder's matrix products and kernels run with on this machine:
/// `"avx512"` (AVX-512F present and the `avx512` feature built in), `"avx2"` (AVX2 and FMA),
/// else `"baseline"` (SSE2 on x86-64, or another architecture's default). gemm and pulp pick
/// it at run time; build with `--no-default-features` to force `"avx2"` on an AVX-512 machine.
pub fn simd_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if cfg!(feature = "avx512") && std::arch::is_x86_feature_detected!("avx512f") {
            return "avx512";
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return "avx2";
        }
    }
    "baseline"
}

/// Tells glibc's allocator to keep large blocks in the heap: every tensor of a forward pass is
/// a fresh allocation of megabytes, which glibc otherwise serves with `mmap` and returns with
/// `munmap`, so each one is paid again in page faults (14% of the CPU encoder's time at 1
/// thread on all-MiniLM-L6-v2, `perf`). Blocks up to 32 MiB (glibc's largest threshold) come
/// from the heap and up to 512 MiB of free heap is kept. Process-wide: call it once at start in
/// a program that encodes (the `epimine` binary does). A no-op off glibc.
#[allow(unsafe_code)]
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; it is called before the encoders
    // allocate, and glibc serialises it against allocations itself.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
    }
}

/// Batches in flight at once by default: one per thread of rayon's pool on the CPU backend
/// (`RAYON_NUM_THREADS`, else one per core), one on CUDA.
pub fn default_concurrency() -> usize {
    if cfg!(feature = "cuda") {
        1
    } else {
        rayon::current_num_threads()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without the NVIDIA driver library the check names that cause and the CPU build, in one
    /// line; with it, it counts devices or says why it cannot.
    #[test]
    fn the_cuda_check_says_why_in_one_line() {
        let has_driver = ["libcuda.so.1", "libcuda.so"].iter().any(|name| {
            // SAFETY: as in cuda_device_count: the driver library's initialisers only.
            #[allow(unsafe_code)]
            unsafe {
                libloading::Library::new(name).is_ok()
            }
        });
        match cuda_device_count() {
            Ok(n) => assert!(has_driver && n >= 0, "{n} devices without a driver library"),
            Err(line) => {
                assert!(!line.contains('\n'), "{line}");
                assert!(
                    line.starts_with(
                        "this is the CUDA build of epimine and it cannot use a GPU here: "
                    ),
                    "{line}"
                );
                assert!(line.contains("use the CPU build"), "{line}");
                if !has_driver {
                    assert!(
                        line.contains("no NVIDIA driver library (libcuda.so.1) was found"),
                        "{line}"
                    );
                }
            }
        }
        // The CPU build runs anywhere; the CUDA build only where the check passes.
        assert_eq!(
            check_device().is_ok(),
            !cfg!(feature = "cuda") || cuda_device_count().is_ok_and(|n| n > 0)
        );
    }
}
