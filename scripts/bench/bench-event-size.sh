#!/usr/bin/env bash
# One key event of growing size (issue: one big event): for each size, `epimine synth --events 1
# --docs-per-event N`, then `epimine run -w W` with the tiny fixture encoder (so that encoding is
# cheap and the episode stages show; MODEL=… for another), under /usr/bin/time. Prints per size:
# segments, fragments, each run.json stage's seconds, the event's own stages (from its "stages
# done" log line), the CPU seconds (user + system), the peak RSS, the 5-F1 against the planted episodes, and the growth exponent
# of the whole run (wall and CPU seconds) and of the episode stages between consecutive sizes.
# On a machine shared with other work, the CPU seconds are the steadier figure. Not a test: it
# prints figures.
# Usage: scripts/bench/bench-event-size.sh [SIZES…]   (default: 1000 4000 8000 32000 100000 articles)
# Environment: BIN (default target/release/epimine, built if missing), MODEL (default the tiny
# fixture), WORKERS (default 2), BENCH_DIR (default target/bench-event-size), SAME=1 also runs
# -w 1 and checks that its five tables are byte-identical to -w W's.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${BIN:-target/release/epimine}
if [ -z "${BIN:-}" ]; then
    cargo build --release --quiet
fi
model=${MODEL:-tests/fixtures/encoders/tiny-bert}
workers=${WORKERS:-2}
work=${BENCH_DIR:-target/bench-event-size}
mkdir -p "$work"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 4000 8000 32000 100000)

stage() { # stage NAME RUN_JSON → seconds of that run.json stage
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(s["seconds"] for s in r["stages"] if s["stage"]==sys.argv[2]))' "$2" "$1"
}

printf '%-8s %-9s %-9s %9s %9s %9s %9s %9s %9s %8s\n' \
    articles segments fragments stats_s encode_s episode_s whole_s cpu_s peak_MiB 5-F1
prev_n=""; prev_whole=""; prev_epi=""
for n in "${sizes[@]}"; do
    corpus="$work/synth-$n"
    if [ ! -f "$corpus/segments.parquet" ]; then
        "$bin" synth --events 1 --docs-per-event "$n" --out "$corpus" >"$corpus.synth.txt"
    fi
    out="$work/run-$n-w$workers"
    log="$work/run-$n-w$workers.log"
    start=$(date +%s.%N)
    EPIMINE_PROGRESS_SECS=5 RUST_LOG=info /usr/bin/time -f '%e %M %U %S' -o "$work/time.txt" \
        "$bin" run --corpus "$corpus" --background "$corpus/background.txt" --out "$out" \
        --model "$model" -w "$workers" --fresh --overwrite >"$log" 2>&1
    read -r whole rss user sys <"$work/time.txt"
    json="$out/run.json"
    segs=$(python3 -c 'import json,sys; print(sum(e["segments"] for e in json.load(open(sys.argv[1]))["events"]))' "$json")
    frags=$(python3 -c 'import json,sys; print(sum(e["counts"]["fragments"] for e in json.load(open(sys.argv[1]))["events"]))' "$json")
    st=$(stage statistics "$json"); enc=$(stage encoding "$json"); epi=$(stage episodes "$json")
    f1=$("$bin" eval --corpus "$corpus" --run "$out" --json 2>/dev/null |
        python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.1f" % (100*r["events"][0]["k_f1"]))' 2>/dev/null || echo "?")
    cpu=$(python3 -c 'import sys; print(float(sys.argv[1]) + float(sys.argv[2]))' "$user" "$sys")
    printf '%-8s %-9s %-9s %9.1f %9.1f %9.1f %9.1f %9.1f %9.0f %8s\n' \
        "$n" "$segs" "$frags" "$st" "$enc" "$epi" "$whole" "$cpu" "$((rss / 1024))" "$f1"
    grep -o 'stages done in .*' "$log" | sed 's/^/           event: /' || true
    if [ -n "$prev_n" ]; then
        python3 -c 'import math,sys; n0,n1,w0,w1,e0,e1,c0,c1=map(float,sys.argv[1:]); g=lambda a,b: math.log(max(b,1e-3)/max(a,1e-3))/math.log(n1/n0);
print("           growth from %d to %d articles: whole run ^%.2f (CPU seconds ^%.2f), episode stages ^%.2f" % (n0, n1, g(w0,w1), g(c0,c1), g(e0,e1)))' \
            "$prev_n" "$n" "$prev_whole" "$whole" "$prev_epi" "$epi" "$prev_cpu" "$cpu"
    fi
    if [ "${SAME:-0}" = 1 ]; then
        one="$work/run-$n-w1"
        "$bin" run --corpus "$corpus" --background "$corpus/background.txt" --out "$one" \
            --model "$model" -w 1 --fresh --overwrite >"$one.log" 2>&1
        same=yes
        for t in episodes assignments fragments terms pairs; do
            cmp -s "$out/$t.parquet" "$one/$t.parquet" || same=no
        done
        echo "           -w 1 and -w $workers byte-identical: $same"
    fi
    prev_n=$n; prev_whole=$whole; prev_epi=$epi; prev_cpu=$cpu
done
