#!/usr/bin/env bash
# Installs (once) Debian's `chromium` for the browser test of `epimine report` (tests/report.rs
# renders a report in headless Chromium and checks its DOM). apt-get; needs root the first time.
# Prints the environment the test needs as an `export` line.
# Usage: eval "$(scripts/ci/chromium.sh)"
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
        echo "installing chromium needs root (apt-get)" >&2
        exit 1
    fi
    echo "installing chromium (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends chromium >&2 || {
        apt-get update -q >&2
        apt-get install -y -q --no-install-recommends chromium >&2
    }
fi
bin=$(command -v chromium)
"$bin" --headless --no-sandbox --version >&2 || {
    echo "$bin does not start" >&2
    exit 1
}
echo "export EPIMINE_CHROMIUM=$bin"
