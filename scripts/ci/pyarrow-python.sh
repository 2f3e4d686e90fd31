#!/usr/bin/env bash
# Prints a Python that has pyarrow and numpy, for the scripts that read Parquet in their reports
# (quality.sh, perturbation-spread.sh): $PYTHON when set, else target/python-venv's (made by
# scripts/ci/python-tests.sh), else python3. Exits 2 with a line saying what to do when it has none,
# so that a script can check before hours of runs. Usage: python=$(scripts/ci/pyarrow-python.sh NAME)
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-}
if [ -z "$python" ]; then
    python=python3
    [ -x target/python-venv/bin/python ] && python=$PWD/target/python-venv/bin/python
fi
"$python" -c 'import pyarrow, numpy' 2>/dev/null || {
    echo "${1:-$0}: $python lacks pyarrow or numpy (set PYTHON to one that has, or run scripts/ci/python-tests.sh once)" >&2
    exit 2
}
echo "$python"
