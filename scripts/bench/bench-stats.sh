#!/usr/bin/env bash
# Scale benchmark of `epimine stats --no-vectors` (issue: statistics job). For each size it writes
# a synthetic corpus with `epimine synth`, then runs the statistics job with 1 and 2 workers and
# prints wall time, segments/s and peak memory (max RSS). Not a test: it prints figures.
# Usage: scripts/bench/bench-stats.sh [SIZES…]   (default: 10000 100000 1000000 segments)
# By default a size of N segments is N/1000 events of ~1,000 segments each, so the vocabulary
# (distinct terms per event) grows with N too. With BENCH_EVENTS=E the event count stays E and the
# events grow instead: the vocabulary levels off, and so should the memory.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --quiet
bin=target/release/epimine
work=${BENCH_DIR:-target/bench-stats}
mkdir -p "$work"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000)
printf '%-10s %-8s %-10s %10s %12s %12s\n' segments workers events wall_s segments/s peak_MiB
for size in "${sizes[@]}"; do
    if [ -n "${BENCH_EVENTS:-}" ]; then
        events=$BENCH_EVENTS
        per_event=$(( size / events ))
    else
        events=$(( (size + 999) / 1000 ))
        per_event=1000
    fi
    # synth writes ~7.6 segments per article: 130 articles ≈ 1,000 segments.
    docs=$(( per_event * 13 / 100 ))
    corpus="$work/synth-$size-e$events"
    if [ ! -f "$corpus/segments.parquet" ]; then
        "$bin" synth --events "$events" --docs-per-event "$docs" --out "$corpus" >"$corpus.synth.txt"
    fi
    segs=$(sed -n 's/^[0-9]* events, \([0-9]*\) segments.*/\1/p' "$corpus.synth.txt")
    for w in 1 2; do
        out="$work/stats-$size-e$events-w$w"
        RUST_LOG=warn /usr/bin/time -f '%e %M' -o "$work/time.txt" \
            "$bin" stats --corpus "$corpus" --background "$corpus/background.txt" \
            --out "$out" --no-vectors -w "$w" >"$work/stdout.txt"
        read -r wall rss <"$work/time.txt"
        awk -v s="$segs" -v w="$w" -v e="$events" -v t="$wall" -v m="$rss" \
            'BEGIN { printf "%-10d %-8d %-10d %10.1f %12.0f %12.0f\n", s, w, e, t, s / t, m / 1024 }'
    done
    if cmp -s "$work/stats-$size-e$events-w1/pairs.parquet" "$work/stats-$size-e$events-w2/pairs.parquet" &&
        cmp -s "$work/stats-$size-e$events-w1/terms.parquet" "$work/stats-$size-e$events-w2/terms.parquet"; then
        echo "           outputs of 1 and 2 workers: byte-identical"
    else
        echo "           outputs of 1 and 2 workers: DIFFER"
    fi
done
