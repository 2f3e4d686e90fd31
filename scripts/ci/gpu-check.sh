#!/usr/bin/env bash
# The GPU check of issue 26, in two halves:
#
#   scripts/ci/gpu-check.sh pack    # here (a Rust toolchain, ../shared beside the checkout)
#   scripts/ci/gpu-check.sh run     # on the GPU machine, in one device call: carry [".gpu"]
#
# `pack` builds `epimine` with the `cuda` feature (release), strips and xz-packs it, packs
# all-MiniLM-L6-v2 with ../shared/gpu/pack-minilm.py (int8 rows, 23 MB; unpacked to f32 there),
# and copies the development set, the background and the development segments (one a line) into
# .gpu/ (about 45 MB in all, under the device tool's 64 MiB).
#
# `run` (the GPU machine has CUDA's driver, Python with torch, sentence-transformers and pyarrow,
# no Rust and no network) writes everything to $OUT (default .gpu/out), each step time-boxed and
# the whole under GPU_CHECK_SECS (450 s) (issue 48 item 5):
#   1. cold start: epimine encode of the development segments with an empty kernel cache
#      (autotune minimal) — model load, warm-up and encoding said apart —, then a fresh process
#      with the cache kept (steady throughput);
#   2. the development set end to end with -w 1, 2 and 4 on the one GPU: wall time, run.json's
#      stages, eval's 5-F1, the same bytes;
#   3. half precision: epimine encode f16 and bf16; sentence-transformers fp32 and fp16 on the
#      same weights and texts (batch 32 and 128; the cosines of every epimine output to its
#      fp32); the development set's 5-F1 in f16 and bf16;
#   4. one 100,000-article synthetic event end to end (-w 2);
#   5. with time left, the cold start with cubecl's default autotune (balanced);
# and prints a summary (also $OUT/summary.md) to paste into docs/gpu.md and the issue.
# BIN, MODEL and DATA replace the packed binary, model and data (to try the script on a CPU).
set -euo pipefail
cd "$(dirname "$0")/../.."
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
    echo "now: device run with carry [\".gpu\"] and command: scripts/ci/gpu-check.sh run"
    ;;
run)
    # Every step is time-boxed and the whole has one deadline (GPU_CHECK_SECS, default 450 s:
    # under 8 minutes with the unpacking), so one slow step cannot use up the machine's time: a
    # step that runs out is killed and said so, the steps after it still run while time is
    # left, and the ones that no longer fit are listed as skipped. Most needed first.
    OUT=${OUT:-.gpu/out}
    mkdir -p "$OUT"
    exec > >(tee "$OUT/log.txt") 2>&1
    budget=${GPU_CHECK_SECS:-450}
    deadline=$(( $(date +%s) + budget ))
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    date -u
    bin=${BIN:-$PWD/.gpu/epimine}
    if [ -z "${BIN:-}" ]; then
        [ -x .gpu/epimine ] || xz -dk .gpu/epimine.xz
        chmod +x .gpu/epimine
    fi
    model=${MODEL:-.gpu/minilm}
    [ -n "${MODEL:-}" ] || [ -f .gpu/minilm/model.safetensors ] || python3 .gpu/pack-minilm.py --unpack .gpu/minilm
    data=${DATA:-.gpu/data}
    texts=$data/segments.txt
    kernels=$PWD/.gpu/kernels
    printf 'step\tbox_s\tseconds\texit\n' > "$OUT/steps.tsv"
    # box NAME SECONDS COMMAND…: runs COMMAND for at most SECONDS (and never past the
    # deadline), its output to the log and $OUT/NAME.txt, its time and exit status (124: out of
    # time; "skipped": no time left) to $OUT/steps.tsv.
    box() {
        local name=$1 secs=$2; shift 2
        local left=$(( deadline - $(date +%s) ))
        if [ "$left" -lt 10 ]; then
            echo "== $name: skipped (no time left of $budget s)"
            printf '%s\t%s\t-\tskipped\n' "$name" "$secs" >> "$OUT/steps.tsv"
            return 0
        fi
        [ "$secs" -le "$left" ] || secs=$left
        echo "== $name (at most $secs s)"
        local t0 rc
        t0=$(date +%s.%N)
        set +e
        timeout -k 5 "$secs" bash -c '"$@"' "$name" "$@" 2>&1 | tee "$OUT/$name.txt"
        rc=${PIPESTATUS[0]}
        set -e
        local took
        took=$(python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$t0")
        [ "$rc" = 124 ] && echo "== $name: out of time after $secs s"
        printf '%s\t%s\t%s\t%s\n' "$name" "$secs" "$took" "$rc" >> "$OUT/steps.tsv"
        return 0
    }
    enc() { # enc CACHE AUTOTUNE PRECISION OUT: epimine encode of the development segments
        EPIMINE_KERNELS=$1 "$bin" encode --model "$model" --input "$texts" --out "$4" \
            --autotune "$2" --precision "$3"
    }
    devrun() { # devrun WORKERS NAME [RUN ARGS…]: the development set end to end, then eval
        local w=$1 name=$2 t0; shift 2
        t0=$(date +%s.%N)
        EPIMINE_KERNELS=$kernels "$bin" run --corpus "$OUT/corpus" --background "$OUT/bg.parquet" \
            --out "$OUT/$name" --model "$model" -w "$w" --fresh --overwrite "$@" >"$OUT/$name.log" 2>&1 \
            || { tail -5 "$OUT/$name.log"; return 1; }
        echo "run -w $w $*: $(python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$t0") s wall"
        "$bin" eval --corpus "$OUT/corpus" --run "$OUT/$name"
    }
    export bin model texts kernels OUT
    export -f enc devrun
    rm -rf "$kernels" "$kernels-balanced"
    # 1. Item 1: a fresh process with an empty kernel cache, autotune minimal; then the same in
    #    a second process (the cache kept): what the cache saves, and steady throughput.
    box encode-cold-minimal 90 enc "$kernels" minimal f32 "$OUT/epimine-f32.parquet"
    box encode-warm 30 enc "$kernels" minimal f32 "$OUT/epimine-f32b.parquet"
    # 2. Item 2: any number of workers on one GPU (same bytes, wall time each).
    box prepare 40 bash -c "'$bin' import '$data/epimine' --out '$OUT/corpus' && '$bin' background build '$data/bbc.txt' --out '$OUT/bg.parquet'"
    for w in 1 2 4; do
        box "run-w$w" 45 devrun "$w" "run-w$w" --set encoder.autotune=minimal
    done
    # 3. Item 3: half precision (kernels of its own to compile, then the steady pass).
    box encode-f16 60 enc "$kernels" minimal f16 "$OUT/epimine-f16.parquet"
    box encode-bf16 60 enc "$kernels" minimal bf16 "$OUT/epimine-bf16.parquet"
    box st 75 python3 scripts/ci/gpu_check.py encode --model "$model" --texts "$texts" --out "$OUT" \
        --epimine "$OUT/epimine-f32.parquet" --epimine-f16 "$OUT/epimine-f16.parquet" \
        --epimine-bf16 "$OUT/epimine-bf16.parquet"
    for p in f16 bf16; do
        box "run-w2-$p" 45 devrun 2 "run-w2-$p" --set encoder.autotune=minimal --set "encoder.precision=$p"
    done
    # 4. One 100,000-article synthetic event end to end.
    timed=""
    [ -x /usr/bin/time ] && timed="/usr/bin/time -f 'wall %e s, peak %M KiB'"
    box synth-100k 150 bash -c "'$bin' synth --events 1 --docs-per-event 100000 --out '$OUT/synth' >/dev/null &&
        EPIMINE_KERNELS='$kernels' $timed '$bin' run --corpus '$OUT/synth' \
        --background '$OUT/synth/background.txt' --out '$OUT/run-synth' --model '$model' -w 2 --fresh \
        --overwrite --set encoder.autotune=minimal >'$OUT/run-synth.log' 2>&1; s=\$?; tail -3 '$OUT/run-synth.log'; exit \$s"
    # 5. Last, while time is left: the cold start with cubecl's default autotune, for the choice.
    box encode-cold-balanced 150 enc "$kernels-balanced" balanced f32 "$OUT/epimine-f32c.parquet"
    for w in 1 2 4; do
        cmp -s "$OUT/run-w1/assignments.parquet" "$OUT/run-w$w/assignments.parquet" \
            && echo "assignments.parquet: -w $w gives -w 1's bytes" \
            || echo "assignments.parquet: -w $w DIFFERS from -w 1 (or is missing)"
    done
    python3 scripts/ci/gpu_check.py summary --out "$OUT"
    ;;
*)
    echo "usage: scripts/ci/gpu-check.sh pack|run" >&2
    exit 2
    ;;
esac
