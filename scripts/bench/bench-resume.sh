#!/usr/bin/env bash
# Benchmark of resumable runs (`epimine run` with per-event checkpoints) on a synthetic corpus:
#   1. a full run of EVENTS events, uninterrupted;
#   2. the same run killed (SIGKILL) when half the events are checkpointed, then re-run:
#      the re-run's time against the full run's;
#   3. a re-run with no change (statistics and the final assembly only);
#   4. a re-run after one event's articles changed (statistics, one event, the assembly);
#   5. the peak memory of the final assembly at SMALL and EVENTS events.
# Every re-run's tables are compared byte for byte with the full run's.
#
# Usage: scripts/bench/bench-resume.sh [EVENTS (1000)] [DOCS_PER_EVENT (10)] [SMALL (100)]
# Environment: MODEL (an encoder folder or cached name; default all-MiniLM-L6-v2), WORKERS (2),
# BIN (default: target/release/epimine, built here), WORK (a scratch folder; default a temp dir),
# PYTHON (one with pyarrow, for the one-event change; default python3).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
events=${1:-1000}
docs=${2:-10}
small=${3:-100}
workers=${WORKERS:-2}
model=${MODEL:-all-MiniLM-L6-v2}
if [ -z "${BIN:-}" ]; then
    (cd "$root" && cargo build --release --quiet)
    BIN="${CARGO_TARGET_DIR:-$root/target}/release/epimine"
fi
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
echo "work folder: $work; $events events × $docs articles; model $model; -w $workers" >&2

secs() { python3 -c 'import time; print(f"{time.time():.3f}")'; }

# run NAME CORPUS OUT [extra args…]: times one run; prints nothing, leaves NAME's seconds in
# $work/NAME.secs and its stderr in $work/NAME.log.
run() {
    local name=$1 corpus=$2 out=$3
    shift 3
    local t0 t1 rc=0
    t0=$(secs)
    RUST_LOG=warn "$BIN" run --corpus "$corpus" --background "$corpus/background.txt" \
        --out "$out" --model "$model" -w "$workers" "$@" >"$work/$name.out" 2>"$work/$name.log" || rc=$?
    t1=$(secs)
    python3 -c "print(f'{$t1 - $t0:.1f}')" >"$work/$name.secs"
    echo "$rc" >"$work/$name.rc"
}

same_tables() {
    for f in episodes assignments fragments terms pairs; do
        cmp -s "$1/$f.parquet" "$2/$f.parquet" || { echo "DIFFERENT: $f.parquet ($1 vs $2)"; return; }
    done
    echo "byte-identical"
}

report() { # report OUT KEY…: fields of run.json
    python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/run.json"))
c = r["checkpoints"]
m = r.get("assembly_memory") or {}
stages = {s["stage"]: s["seconds"] for s in r["stages"]}
print(f"computed {c['computed']}, reused {c['reused']}, units encoded {c['encoded_units']}; "
      f"statistics {stages.get('statistics', 0):.1f} s, encoding {stages.get('encoding', 0):.1f} s, "
      f"episodes {stages.get('episodes', 0):.1f} s, write {stages.get('write', 0):.1f} s; "
      f"assembly RSS {m.get('rss_before_mib', 0):.0f} MiB at start, peak {m.get('peak_mib', 0):.0f} MiB")
PY
}

"$BIN" synth --events "$events" --docs-per-event "$docs" --out "$work/corpus" >&2

# 1. Full run.
run full "$work/corpus" "$work/full"
echo "full run:            $(cat "$work/full.secs") s   ($(report "$work/full"))"

# 2. Killed at half, re-run.
half=$((events / 2))
EPIMINE_FAULT="checkpoint:$half" run killed "$work/corpus" "$work/resumed"
echo "killed at $half checkpoints after $(cat "$work/killed.secs") s (exit $(cat "$work/killed.rc"))"
run resumed "$work/corpus" "$work/resumed"
echo "re-run after the kill: $(cat "$work/resumed.secs") s   ($(report "$work/resumed")); $(same_tables "$work/full" "$work/resumed")"

# 3. No change.
run nochange "$work/corpus" "$work/resumed"
echo "re-run, no change:   $(cat "$work/nochange.secs") s   ($(report "$work/resumed")); $(same_tables "$work/full" "$work/resumed")"

# 4. One event's articles changed: a sentence added to one article.
"${PYTHON:-python3}" - "$work/corpus" <<'PY'
import sys
try:
    import pyarrow.parquet as pq, pyarrow as pa
except ImportError:
    sys.exit("pyarrow is needed for the one-event change (pip install pyarrow)")
path = sys.argv[1] + "/segments.parquet"
t = pq.read_table(path)
rows = t.to_pylist()
first = rows[0]["key_event"]
for r in rows:
    if r["key_event"] == first and r["doc_id"] == 0 and r["seg_idx"] == 0:
        r["text"] += " Officials later confirmed the report."
pq.write_table(pa.Table.from_pylist(rows, schema=t.schema), path)
PY
run onechange "$work/corpus" "$work/resumed"
run onechange-fresh "$work/corpus" "$work/onechange-fresh"
echo "re-run, one event changed: $(cat "$work/onechange.secs") s   ($(report "$work/resumed")); against a fresh run of the changed corpus ($(cat "$work/onechange-fresh.secs") s): $(same_tables "$work/onechange-fresh" "$work/resumed")"

# 5. Assembly memory at SMALL events (a fresh corpus), against EVENTS above.
"$BIN" synth --events "$small" --docs-per-event "$docs" --out "$work/small-corpus" >&2
run small "$work/small-corpus" "$work/small"
run small-again "$work/small-corpus" "$work/small"
echo "assembly at $small events: $(report "$work/small")"
echo "assembly at $events events: $(report "$work/resumed")"
