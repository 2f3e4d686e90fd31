#!/usr/bin/env bash
# The Python package's tests (python/tests/, pytest), as scripts/ci/test.sh runs them: a venv in
# target/python-venv with the build and test tools from PyPI (pinned below), the package built
# by maturin in the dev profile into target/ (so it reuses what `cargo test` compiled: see
# python/Cargo.toml) and installed from its wheel, then pytest. The tests compare against the
# `epimine` binary: $EPIMINE_BIN, else target/debug/epimine (built here when missing). Needs
# cargo, python3 >= 3.11 (with venv) and, on first use, the network.
set -euo pipefail
cd "$(dirname "$0")/../.."

venv="$PWD/target/python-venv"
tools=(maturin==1.16.0 pytest==9.2.0 pyarrow==26.0.1 pandas==3.1.1 polars==2.1.0 tqdm==4.70.1)

start=$(date +%s)
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check "${tools[@]}"
echo "   venv ready in $(( $(date +%s) - start )) s"

build_start=$(date +%s)
rm -rf target/python-wheels
VIRTUAL_ENV="$venv" "$venv/bin/maturin" build --profile dev --strip --out target/python-wheels
"$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps \
    target/python-wheels/epimine-*.whl
echo "   package built and installed in $(( $(date +%s) - build_start )) s"

export EPIMINE_BIN="${EPIMINE_BIN:-$PWD/target/debug/epimine}"
[ -x "$EPIMINE_BIN" ] || cargo build --bin epimine
test_start=$(date +%s)
# From python/tests, so that the installed package is imported, not the source folder.
(cd python/tests && "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@")
echo "   pytest done in $(( $(date +%s) - test_start )) s"
