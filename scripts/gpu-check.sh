#!/usr/bin/env bash
# The GPU check of issue 26, in two halves:
#
#   scripts/gpu-check.sh pack    # here (a Rust toolchain, ../shared beside the checkout)
#   scripts/gpu-check.sh run     # on the GPU machine, in one device call: carry [".gpu"]
#
# `pack` builds `epimine` with the `cuda` feature (release), strips and xz-packs it, packs
# all-MiniLM-L6-v2 with ../shared/gpu/pack-minilm.py (int8 rows, 23 MB; unpacked to f32 there),
# and copies the development set, the background and the development segments (one a line) into
# .gpu/ (about 45 MB in all, under the device tool's 64 MiB).
#
# `run` (the GPU machine has CUDA's driver, Python with torch, sentence-transformers and pyarrow,
# no Rust and no network) writes everything to $OUT (default .gpu/out):
#   1. parity: epimine encode (bucketed shapes, warm-up) against SentenceTransformer fp32 on the
#      same weights and texts: worst and mean cosine;
#   2. throughput on the development segments: epimine encode f32 (and f16) — model load,
#      warm-up and encoding said apart — against sentence-transformers fp32 and fp16 (batch 32
#      and 128), segments/s and tokens/s;
#   3. a second epimine encode in a fresh process: what the kernel cache saves at start;
#   4. the development set end to end: epimine import, background build, run -w 1 and -w 4
#      (the workers share the GPU), wall time and run.json's stages, eval's 5-F1;
# and prints a summary (also $OUT/summary.md) to paste into docs/gpu.md (and the README's headline
# figures) and the issue.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}

case "$mode" in
pack)
    shared=${EPIMINE_SHARED:-../shared}
    grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo /.gpu/ >> .git/info/exclude
    rm -rf .gpu && mkdir -p .gpu/data
    echo "== cargo build --release --features cuda (own target dir: target/cuda)"
    CARGO_TARGET_DIR=target/cuda cargo build --release --features cuda --bin epimine
    cp target/cuda/release/epimine .gpu/epimine
    strip .gpu/epimine
    echo "== model (fetching needs no GPU)"
    .gpu/epimine models fetch
    xz -6 -T0 .gpu/epimine
    model=${EPIMINE_MODELS:-$HOME/.cache/epimine/models}/all-MiniLM-L6-v2
    python3 -c 'import numpy' 2>/dev/null || pip install -q numpy
    python3 "$shared/gpu/pack-minilm.py" "$model" .gpu/minilm
    cp "$shared/gpu/pack-minilm.py" .gpu/
    echo "== data"
    cp -r "$shared/data/epimine" .gpu/data/epimine
    cp "$shared/data/background/bbc-news-2225.txt" .gpu/data/bbc.txt
    # Every development segment, one a line (the throughput texts).
    find .gpu/data/epimine -name segments.txt | sort | xargs cat | grep -v '^$' > .gpu/data/segments.txt
    du -sh .gpu
    echo "now: device run with carry [\".gpu\"] and command: scripts/gpu-check.sh run"
    ;;
run)
    OUT=${OUT:-.gpu/out}
    mkdir -p "$OUT"
    exec > >(tee "$OUT/log.txt") 2>&1
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    date -u
    [ -x .gpu/epimine ] || xz -dk .gpu/epimine.xz
    chmod +x .gpu/epimine
    [ -f .gpu/minilm/model.safetensors ] || python3 .gpu/pack-minilm.py --unpack .gpu/minilm
    export EPIMINE_KERNELS=$PWD/.gpu/kernels
    bin=$PWD/.gpu/epimine
    texts=.gpu/data/segments.txt
    echo "== epimine encode (f32, bucketed shapes, warm-up; empty kernel cache)"
    rm -rf "$EPIMINE_KERNELS"
    "$bin" encode --model .gpu/minilm --input "$texts" --out "$OUT/epimine-f32.parquet" | tee "$OUT/encode-f32.txt"
    echo "== the same in a fresh process (kernel cache kept)"
    "$bin" encode --model .gpu/minilm --input "$texts" --out "$OUT/epimine-f32b.parquet" | tee "$OUT/encode-f32-warm.txt"
    echo "== epimine encode f16"
    "$bin" encode --model .gpu/minilm --input "$texts" --out "$OUT/epimine-f16.parquet" --precision f16 | tee "$OUT/encode-f16.txt"
    echo "== sentence-transformers, parity and throughput"
    python3 scripts/gpu_check.py encode --model .gpu/minilm --texts "$texts" --out "$OUT" \
        --epimine "$OUT/epimine-f32.parquet" --epimine-f16 "$OUT/epimine-f16.parquet"
    echo "== development set end to end"
    "$bin" import .gpu/data/epimine --out "$OUT/corpus"
    "$bin" background build .gpu/data/bbc.txt --out "$OUT/bg.parquet"
    for w in 1 4; do
        start=$(date +%s.%N)
        "$bin" run --corpus "$OUT/corpus" --background "$OUT/bg.parquet" --out "$OUT/run-w$w" \
            --model .gpu/minilm -w "$w" --fresh --overwrite
        end=$(date +%s.%N)
        echo "run -w $w: $(python3 -c "print(f'{$end - $start:.1f}')") s wall" | tee "$OUT/run-w$w.txt"
        "$bin" eval --corpus "$OUT/corpus" --run "$OUT/run-w$w" | tee -a "$OUT/run-w$w.txt"
    done
    cmp "$OUT/run-w1/assignments.parquet" "$OUT/run-w4/assignments.parquet" \
        && echo "assignments.parquet: the same bytes with 1 and 4 workers"
    python3 scripts/gpu_check.py summary --out "$OUT"
    ;;
*)
    echo "usage: scripts/gpu-check.sh pack|run" >&2
    exit 2
    ;;
esac
