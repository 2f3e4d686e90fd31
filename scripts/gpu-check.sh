#!/usr/bin/env bash
# The GPU check at the path the device instructions name; it lives in scripts/ci/gpu-check.sh.
exec "$(dirname "$0")/ci/gpu-check.sh" "$@"
