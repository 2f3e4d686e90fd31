#!/usr/bin/env bash
# What each background gives on the development set (docs/design.md, "The background"): no-LLM
# runs of the release build, each scored by `epimine eval` (5-F1, mean per event), for
#   bbc            --background ../shared/data/background/bbc-news-2225.txt (general news)
#   wordfreq       no --background: the default, general English from the wordfreq package
#   corpus         --background corpus: the 21 events' articles, imported together
#   corpus-alone   --background corpus, each event imported and run on its own (a newcomer's
#                  one story: its own articles are its whole background)
# BACKGROUNDS picks some (default: all four). Needs ../shared beside the checkout (or
# $EPIMINE_SHARED) and the model all-MiniLM-L6-v2 (fetched on first use), or MODEL=<dir>; the
# wordfreq table is fetched on first use too. Per-part and per-theme figures, with intervals:
# `python3 scripts/quality/quality_report.py table NAME=target/background-cost/NAME.json …`.
# Writes under target/background-cost/. About 2 minutes a background on 2 quiet cores (the
# encoder's outputs are cached between them in target/background-cost/cache).
set -euo pipefail
export RUST_LOG=${RUST_LOG:-warn}
root="$(cd "$(dirname "$0")/../.." && pwd)"
shared="${EPIMINE_SHARED:-$root/../shared}"
model="${MODEL:-all-MiniLM-L6-v2}"
work="$root/target/background-cost"
bin="$root/target/release/epimine"
cargo build --release --manifest-path "$root/Cargo.toml" >&2
mkdir -p "$work"
rm -rf "$work/corpus" "$work"/run-* "$work"/alone
"$bin" import "$shared/data/epimine" --out "$work/corpus" >/dev/null
cache=(--set "encoder.cache_dir=\"$work/cache\"")

# score RUN CORPUS: the eval report of one run.
score() { "$bin" eval --corpus "$2" --run "$1" --json; }

# mean REPORT…: the per-event mean 5-F1 ×100 over the reports' events, written as one report.
mean() {
    python3 - "$@" <<'PY'
import json, sys
out, reports = sys.argv[1], sys.argv[2:]
merged = json.load(open(reports[0]))
merged["events"] = [e for r in reports for e in json.load(open(r))["events"]]
json.dump(merged, open(out, "w"))
events = merged["events"]
print("%.1f" % (100 * sum(e["k_f1"] for e in events) / len(events)))
PY
}

for bg in ${BACKGROUNDS:-bbc wordfreq corpus corpus-alone}; do
    start=$(date +%s)
    case "$bg" in
    corpus-alone)
        reports=()
        for dir in "$shared"/data/epimine/*/*/; do
            event=$(basename "$dir")
            theme=$(basename "$(dirname "$dir")")
            one="$work/alone/$event"
            mkdir -p "$one/dataset/$theme"
            ln -s "$(cd "$dir" && pwd)" "$one/dataset/$theme/$event"
            "$bin" import "$one/dataset" --out "$one/corpus" >/dev/null 2>&1
            "$bin" run --corpus "$one/corpus" --out "$one/run" --background corpus \
                --model "$model" -w 2 "${cache[@]}" >/dev/null 2>&1 || [ $? = 3 ]
            score "$one/run" "$one/corpus" >"$one/report.json"
            reports+=("$one/report.json")
        done
        f1=$(mean "$work/$bg.json" "${reports[@]}")
        ;;
    *)
        args=(run --corpus "$work/corpus" --out "$work/run-$bg" --model "$model" -w 2 "${cache[@]}")
        [ "$bg" = bbc ] && args+=(--background "$shared/data/background/bbc-news-2225.txt")
        [ "$bg" = corpus ] && args+=(--background corpus)
        "$bin" "${args[@]}" >/dev/null || [ $? = 3 ]
        score "$work/run-$bg" "$work/corpus" >"$work/run-$bg.json"
        f1=$(mean "$work/$bg.json" "$work/run-$bg.json")
        ;;
    esac
    echo "background $bg: 5-F1 x100 (mean per event) $f1; $(( $(date +%s) - start )) s"
done
