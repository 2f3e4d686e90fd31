#!/usr/bin/env bash
# How far the development set's episodes move under small changes (issue 45 item 4). Not a
# test: it prints figures.
#
#   scripts/quality/perturbation-spread.sh [RUN ARGS…]
#
# The reference is the quality run (scripts/quality/quality.sh's: release build, BBC background, -w 2,
# default job, RUN ARGS added to every run); then one change at a time:
#   w1        -w 1 (must give the same bytes: the run is deterministic for any layout)
#   batch8 / batch64   encoder.batch_size 8 / 64 (other padding, other float sums)
#   int8      the model's 2-D weights through an int8 round trip (scripts/quality/perturb_model.py)
#   f16 / bf16  the encoder computing in half precision (encoder.precision: what a GPU run with
#             precision f16 or bf16 gives; on the CPU 3-4x slower, ~7 min each)
#   wordfreq  the default background (general English) instead of the BBC's
#   drop1..3  3% of each event's articles left out, three seeded draws (scripts/quality/drop_articles.py)
# and prints, per change, 5-F1 and gold-episode recall (all / exploration / locked, per theme),
# the per-event mean |Δ 5-F1| against the reference (issue 66 item 4), and how many of the
# reference's episodes come back (a segment-set Jaccard ≥ 0.5 with one of
# the changed run's, over the segments both runs hold): scripts/perturbation_spread.py.
# Encoder outputs are cached (PERTURB_DIR/cache, default target/quality/perturb); the first
# pass encodes the development set five times (~2 min each on 2 cores). PERTURB_TAG=T names the
# runs T-ref, T-w1, … so that several settings share one folder, corpora and cache.
# PERTURB_BG=default makes the built-in background (wordfreq's general English: what a user's
# run gets) the reference's and every run's, and the BBC's the change (its run is named `bbc`
# instead of `wordfreq`); the default, PERTURB_BG=bbc, is the quality protocol's.
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=${EPIMINE_SHARED:-../shared}
work=${PERTURB_DIR:-target/quality/perturb}
mkdir -p "$work"
reference_bg=${PERTURB_BG:-bbc}
case $reference_bg in
    bbc) other_bg=default other_name=wordfreq ;;
    default) other_bg=bbc other_name=bbc ;;
    *) echo "perturbation-spread.sh: PERTURB_BG=$reference_bg: expected bbc or default" >&2; exit 2 ;;
esac
# BIN=PATH runs that binary instead of building one (e.g. a copy, while the tree changes).
if [ -z "${BIN:-}" ]; then
    cargo build --release --quiet
fi
bin=${BIN:-target/release/epimine}
# PYTHON: one with pyarrow for the report (scripts/ci/pyarrow-python.sh says which); checked
# before any run.
python=$(scripts/ci/pyarrow-python.sh perturbation-spread.sh)
export RUST_LOG=${RUST_LOG:-warn}
[ -d "$work/corpus" ] || "$bin" import "$shared/data/epimine" --out "$work/corpus" >/dev/null
[ -f "$work/bg.parquet" ] || "$bin" background build "$shared/data/background/bbc-news-2225.txt" --out "$work/bg.parquet" >/dev/null
models=${EPIMINE_MODELS:-$HOME/.cache/epimine/models}
"$bin" models fetch >/dev/null
[ -d "$work/minilm-int8" ] || "$python" scripts/quality/perturb_model.py "$models/all-MiniLM-L6-v2" "$work/minilm-int8" >/dev/null
for seed in 1 2 3; do
    if [ ! -d "$work/drop$seed-corpus" ]; then
        python3 scripts/quality/drop_articles.py "$shared/data/epimine" "$work/drop$seed-data" --share 0.03 --seed "$seed" >/dev/null
        "$bin" import "$work/drop$seed-data" --out "$work/drop$seed-corpus" >/dev/null
    fi
done
cache=(--set "encoder.cache_dir=\"$PWD/$work/cache\"")
tag=${PERTURB_TAG:+$PERTURB_TAG-}

# run NAME CORPUS ARGS…: into $work/NAME with background BG (bbc, or default: the built-in
# one), scored into $work/NAME.json.
run() {
    local name=$tag$1 corpus=$2
    shift 2
    echo "== $name" >&2
    rm -rf "${work:?}/$name"
    local bg=(--background "$work/bg.parquet")
    if [ "${BG:-$reference_bg}" = default ]; then bg=(); fi
    "$bin" run --corpus "$corpus" "${bg[@]}" --out "$work/$name" \
        "${cache[@]}" "$@" >"$work/$name.out" || [ $? = 3 ]
    "$bin" eval --corpus "$corpus" --run "$work/$name" --json >"$work/$name.json"
}

run ref "$work/corpus" -w 2 "$@"
run w1 "$work/corpus" -w 1 "$@"
run batch8 "$work/corpus" -w 2 --set encoder.batch_size=8 "$@"
run batch64 "$work/corpus" -w 2 --set encoder.batch_size=64 "$@"
run int8 "$work/corpus" -w 2 --model "$work/minilm-int8" "$@"
run f16 "$work/corpus" -w 2 --set 'encoder.precision="f16"' "$@"
run bf16 "$work/corpus" -w 2 --set 'encoder.precision="bf16"' "$@"
BG=$other_bg run "$other_name" "$work/corpus" -w 2 "$@"
for seed in 1 2 3; do
    run "drop$seed" "$work/drop$seed-corpus" -w 2 "$@"
done
"$python" scripts/quality/perturbation_spread.py --work "$work" "${tag}ref" "${tag}w1" "${tag}batch8" \
    "${tag}batch64" "${tag}int8" "${tag}f16" "${tag}bf16" "${tag}$other_name" "${tag}drop1" \
    "${tag}drop2" "${tag}drop3"
