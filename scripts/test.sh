#!/usr/bin/env bash
# The project's test command (README, .ci/run): format and lint checks, then every test, with a
# real S3-protocol server on 127.0.0.1 for the s3:// backend. Needs only cargo, python3 and curl;
# the S3 server is installed from PyPI into target/ on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

start=$(date +%s)
echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== starting the S3 test server"
eval "$(scripts/s3-server.sh start)"
trap 'scripts/s3-server.sh stop' EXIT

echo "== cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings

echo "== cargo test"
cargo test --all-targets
cargo test --doc
echo "== tests done in $(( $(date +%s) - start )) s"
