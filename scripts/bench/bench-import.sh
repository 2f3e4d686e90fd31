#!/usr/bin/env bash
# Import benchmark (issue 16): N synthetic articles (scripts/bench/bench_import.py gen: ~3.9 KB of text
# each, 1,000 articles a key event, like the development set's articles) written once to Parquet,
# then `epimine import --articles` timed (rows/s, peak RSS from /usr/bin/time) against reading
# the same file whole with pyarrow (the I/O reference).
# Usage: [N=1000000] [BIN=target/release/epimine] [PYTHON=python3] scripts/bench/bench-import.sh [--out DIR]
# PYTHON needs pyarrow and numpy (e.g. target/bertopic-venv/bin/python, scripts/quality/bertopic-peer.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/target/bench-import
[ "${1:-}" = "--out" ] && out=$2
n=${N:-1000000}
bin=${BIN:-$root/target/release/epimine}
python=${PYTHON:-python3}
mkdir -p "$out"
articles=$out/articles-$n.parquet
if [ ! -s "$articles" ]; then
    echo "== writing $n articles to $articles"
    "$python" "$root/scripts/bench/bench_import.py" gen "$n" "$articles.tmp"
    mv "$articles.tmp" "$articles"
fi
echo "input: $(stat -c %s "$articles") bytes of Parquet"
measure() { # label, command…
    local label=$1
    shift
    /usr/bin/time -f "%e %M" -o "$out/time" "$@" >"$out/$label.out" 2>"$out/$label.err" || {
        echo "$label failed:"
        tail -5 "$out/$label.err"
        exit 1
    }
    read -r secs kib <"$out/time"
    printf '%-8s %8.2f s wall  %10.0f rows/s  peak RSS %6.0f MiB\n' "$label" "$secs" \
        "$(echo "$n / $secs" | bc -l)" "$(echo "$kib / 1024" | bc -l)"
}
echo "== pyarrow read_table (reference)"
measure pyarrow "$python" "$root/scripts/bench/bench_import.py" read "$articles"
cat "$out/pyarrow.out"
echo "== epimine import --articles ($bin)"
rm -rf "$out/corpus"
measure import "$bin" import --articles "$articles" --out "$out/corpus"
tail -2 "$out/import.out"
echo "output: $(stat -c %s "$out/corpus/segments.parquet") bytes of segments.parquet"
