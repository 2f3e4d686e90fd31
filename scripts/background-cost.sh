#!/usr/bin/env bash
# What the default background (none given: the corpus's own articles) costs against the BBC
# background on the development set: two no-LLM runs of the release build, each scored by
# `epimine eval` (5-F1, mean per event). Needs ../shared beside the checkout (or
# $EPIMINE_SHARED) and the model all-MiniLM-L6-v2 (fetched on first use), or MODEL=<dir>.
# Writes under target/background-cost/ (BACKGROUNDS="corpus" runs one of the two). About 2 × 2
# minutes on 2 quiet cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${EPIMINE_SHARED:-$root/../shared}"
model="${MODEL:-all-MiniLM-L6-v2}"
work="$root/target/background-cost"
bin="$root/target/release/epimine"
cargo build --release --manifest-path "$root/Cargo.toml" >&2
rm -rf "$work" && mkdir -p "$work"
"$bin" import "$shared/data/epimine" --out "$work/corpus" >/dev/null
for bg in ${BACKGROUNDS:-bbc corpus}; do
    args=(run --corpus "$work/corpus" --out "$work/run-$bg" --model "$model" -w 2)
    [ "$bg" = bbc ] && args+=(--background "$shared/data/background/bbc-news-2225.txt")
    start=$(date +%s)
    "$bin" "${args[@]}" >/dev/null
    secs=$(( $(date +%s) - start ))
    f1=$("$bin" eval --corpus "$work/corpus" --run "$work/run-$bg" --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
events = r["events"]
print("%.1f" % (100 * sum(e["k_f1"] for e in events) / len(events)))')
    echo "background $bg: 5-F1 x100 (mean per event) $f1; run $secs s"
done
