#!/usr/bin/env bash
# The project's test command (README, .ci/run): format and lint checks, then every test, with a
# real S3-protocol server on 127.0.0.1 for the s3:// backend, a real one-machine Slurm for the
# launcher test (sbatch + srun -n 2), the real all-MiniLM-L6-v2 fetched into the model cache for
# its parity test, Debian's chromium for the HTML report's browser test, the Python package's
# tests (scripts/ci/python-tests.sh: its build and venv in target/), and a check of the CUDA
# feature (EPIMINE_TEST_CUDA_BUILD=1: its build too). Needs cargo, python3 (>= 3.11, with venv), curl and root with
# apt-get, and the network for the S3 server, Slurm and the model on first use (the S3 server
# is installed from PyPI into target/; Slurm, munge and chromium from Debian with apt-get, configured in
# target/slurm/; the model goes to $EPIMINE_MODELS or ~/.cache/epimine/models).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
# One build, never rebuilt in place: incremental state would add GBs to target/ for nothing.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

# A full build with every test binary, clippy's, the Python package's and the CUDA build's
# artifacts takes about 8 GB under target/ (7.3 GB measured before the Python step, 2026-11-25);
# the check asks EPIMINE_TEST_DISK_GB (10) free. A disk that fills makes the linker die with a
# bus error far into the run, so say it at once.
need_gb=${EPIMINE_TEST_DISK_GB:-10}
mkdir -p target
have_kb=$(df -Pk target | awk 'NR == 2 { print $4 }')
used_kb=$(du -sk target 2>/dev/null | awk '{ print $1 }')
if (( have_kb + used_kb < need_gb * 1024 * 1024 )); then
  echo "scripts/ci/test.sh: $(( have_kb / 1024 / 1024 )) GB free beside target/ ($(( used_kb / 1024 / 1024 )) GB already in it); a full test build needs about ${need_gb} GB (set EPIMINE_TEST_DISK_GB to change the check)" >&2
  exit 1
fi

start=$(date +%s)
echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== links between the README and docs/ (scripts/ci/doc-links.py)"
python3 scripts/ci/doc-links.py .

echo "== the code's shape: no function over 100 lines (src, tests, python, scripts), no file over 700, no circle among the top-level modules"
python3 scripts/ci/code-shape.py --check > /dev/null

echo "== starting the S3 test server"
eval "$(scripts/ci/s3-server.sh start)"
trap 'scripts/ci/s3-server.sh stop' EXIT

echo "== starting the test Slurm (slurmctld + slurmd on 127.0.0.1)"
slurm_start=$(date +%s)
eval "$(scripts/ci/slurm-server.sh start)"
trap 'scripts/ci/s3-server.sh stop; scripts/ci/slurm-server.sh stop' EXIT
export EPIMINE_REQUIRE_SLURM=1
echo "   Slurm installed and up in $(( $(date +%s) - slurm_start )) s"
echo "== headless Chromium for the report's browser test (tests/report.rs; apt-get once)"
chromium_start=$(date +%s)
eval "$(scripts/ci/chromium.sh)"
export EPIMINE_REQUIRE_CHROMIUM=1
echo "   Chromium ready in $(( $(date +%s) - chromium_start )) s"
# tests/recipes.rs reads the Kubernetes manifests with PyYAML.
python3 -c 'import yaml' 2>/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-yaml

# From the root, cargo's commands cover the workspace's default members: the `epimine` package
# and the library's layer crates under crates/ (not the Python package's crate, built by maturin).
echo "== cargo clippy --all-targets -- -D warnings (the library's crates, then the Python package's crate)"
cargo clippy --all-targets -- -D warnings
cargo clippy -p epimine-python --all-targets -- -D warnings
# The CUDA build compiles and its own code is linted: a check reuses the checks above for every
# crate the feature does not change (~2 min on 2 cores, against ~6 for the build it replaced in
# CI; EPIMINE_TEST_CUDA_BUILD=1 builds and runs it as well, at the end).
echo "== cargo clippy --all-targets --features cuda -- -D warnings (the CUDA build compiles)"
cargo clippy --all-targets --features cuda -- -D warnings

echo "== cargo doc (the library's doc comments, every crate: every link resolves, warnings are errors; ~20 s)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --exclude epimine-python

# The test build first: it builds the binary too (the integration tests run it), with the
# features the tests unify, so the fetches below use it instead of a second build of every
# dependency (`cargo run` would build them again without the test-only features: ~10 min on
# 2 cores, issue 49 item 6).
echo "== cargo test --no-run (the unit and integration test binaries and target/debug/epimine)"
cargo test --all-targets --no-run
echo "== epimine models fetch (all-MiniLM-L6-v2 for its parity test; a no-op once cached)"
target/debug/epimine models fetch
echo "== epimine background fetch (the default background: wordfreq's word lists, a 57 MB wheel; a no-op once cached)"
target/debug/epimine background fetch
export EPIMINE_REQUIRE_MINILM=1

echo "== cargo test"
cargo test --all-targets
cargo test --doc

# Right after the tests: its dev-profile build reuses what they compiled in target/debug.
echo "== the Python package: maturin build and pytest (scripts/ci/python-tests.sh)"
python_start=$(date +%s)
scripts/ci/python-tests.sh
echo "   Python package built and tested in $(( $(date +%s) - python_start )) s"

# The CUDA build itself, with EPIMINE_TEST_CUDA_BUILD=1 (off in CI since 2026-11-28: ~6 min of
# a 37-min run, issue 49 item 6; the clippy pass above checks that it compiles, and the check it
# runs before any work, encoder::cuda_device_count, is a unit test of the CPU build). It needs no
# download and no CUDA toolkit (burn 0.21: cubecl 0.10 loads libcuda at run time). Its own target
# dir keeps the CPU build's artifacts; no debug info keeps it small, and its dependencies are not
# optimised: nothing heavy runs in it here, and optimised they took this step to 27 min on the
# 2-core CI machine (6.6 min without, cold, on ours). In the CPU build's target dir, sharing what
# the tests built, it took longer (8.7 min: the feature changes rebuild much of the tree).
if [ "${EPIMINE_TEST_CUDA_BUILD:-0}" != 1 ]; then
  echo "== tests done in $(( $(date +%s) - start )) s; target/ holds $(du -sh target | cut -f1) (the CUDA build checked, not built: EPIMINE_TEST_CUDA_BUILD=1 builds and runs it)"
  exit 0
fi
echo "== cargo build --features cuda"
CARGO_TARGET_DIR=target/cuda CARGO_PROFILE_DEV_DEBUG=0 cargo build --features cuda --bins \
    --config 'profile.dev.package."*".opt-level=0'
# Where there is no GPU (no libcuda, or no device) the CUDA build says so in one line and exits 1
# (issue 48 item 4: it used to panic in a worker thread and end with a segmentation fault);
# where there is one, it encodes.
echo "== the CUDA build without a GPU: one clear line, exit 1 (or, with a GPU, it encodes)"
cuda_check=target/cuda/gpu-check
mkdir -p "$cuda_check"
printf 'a flood\nthe river rose\n' >"$cuda_check/in.txt"
set +e
cuda_err=$(target/cuda/debug/epimine encode --input "$cuda_check/in.txt" --out "$cuda_check/out.parquet" 2>&1 >/dev/null)
cuda_rc=$?
set -e
if [ "$cuda_rc" = 0 ]; then
  echo "   a GPU is here: encoded"
elif [ "$cuda_rc" = 1 ] && [ "$(printf '%s\n' "$cuda_err" | grep -c .)" = 1 ] \
    && printf '%s' "$cuda_err" | grep -q "CUDA build of epimine and it cannot use a GPU here"; then
  echo "   $cuda_err"
else
  echo "scripts/ci/test.sh: the CUDA build without a GPU exited $cuda_rc with: $cuda_err" >&2
  exit 1
fi
echo "== tests done in $(( $(date +%s) - start )) s; target/ holds $(du -sh target | cut -f1)"
