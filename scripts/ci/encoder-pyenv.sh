#!/usr/bin/env bash
# Runs a command inside the Python environment of the encoder tools (fixture maker, speed
# benchmark): torch, transformers and sentence-transformers from PyPI, installed into
# target/encoder-venv on first use (torch from PyPI brings its CUDA libraries: about 4 GB).
# Not needed by the tests. Usage: scripts/ci/encoder-pyenv.sh python scripts/ci/make_encoder_fixtures.py
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${EPIMINE_ENCODER_VENV:-target/encoder-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import sentence_transformers, psutil' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q torch==2.15.0 transformers==5.23.0 sentence-transformers==6.2.0 psutil
fi
export PATH="$PWD/$venv/bin:$PATH"
exec "$@"
