#!/usr/bin/env bash
# The LLM path of `epimine run` on the development set against a local OpenAI-compatible server
# (examples/llm_stand_in.rs, the tests' LLM server: answers the appendix-G prompt from the input
# groups; not a model). Runs twice with the same answer cache and prints each run's request counts, wall time
# and whether the outputs are byte-identical. Not a test: it prints figures.
#   scripts/ci/llm-smoke.sh [--set llm.trials=3 ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=${EPIMINE_SHARED:-../shared}
work=${LLM_SMOKE_DIR:-target/llm-smoke}
mkdir -p "$work"
cargo build --release --quiet --bin epimine --example llm_stand_in
bin=target/release/epimine
export RUST_LOG=${RUST_LOG:-warn}
"$bin" import "$shared/data/epimine" --out "$work/corpus" >/dev/null
[ -f "$work/bg.parquet" ] || "$bin" background build "$shared/data/background/bbc-news-2225.txt" --out "$work/bg.parquet" >/dev/null
target/release/examples/llm_stand_in >"$work/server.url" 2>"$work/server.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$work/server.url" ] && break; sleep 0.1; done
url=$(cat "$work/server.url")
rm -rf "$work/llm-cache"
for pass in first second; do
    rm -rf "$work/$pass"
    /usr/bin/time -f '%e %M' -o "$work/$pass.time" "$bin" run --corpus "$work/corpus" --background "$work/bg.parquet" \
        --out "$work/$pass" -w 2 --set "encoder.cache_dir=\"$PWD/$work/enc-cache\"" \
        --set llm.backend=openai --set llm.model=local --set "llm.base_url=\"$url/v1\"" \
        --set "llm.cache_dir=\"$PWD/$work/llm-cache\"" --set llm.trials=3 "$@" >/dev/null || [ $? = 3 ]
done
python3 - "$work" <<'PY'
import json, os, sys, filecmp
work = sys.argv[1]
for p in ("first", "second"):
    r = json.load(open(os.path.join(work, p, "run.json")))
    wall, rss = open(os.path.join(work, p + ".time")).read().split()
    u = r["llm"]["usage"]
    stages = ", ".join(f"{s['stage']} {s['seconds']:.1f} s" for s in r["stages"])
    print(f"{p} run: {len(r['events'])} events x {r['llm']['trials']} trials: {u['requests']} requests, "
          f"{u['cache_hits']} from the cache, {u['retries']} retries, {u['repairs']} repairs, "
          f"{r['llm']['fallbacks']} fallbacks; wall {float(wall):.1f} s ({stages}), peak {int(rss) / 1024:.0f} MiB")
same = all(filecmp.cmp(os.path.join(work, "first", f), os.path.join(work, "second", f), shallow=False)
           for f in ("episodes.parquet", "assignments.parquet", "fragments.parquet", "terms.parquet", "pairs.parquet"))
print("outputs byte-identical:", same)
# What a hosted model would be sent (first run; a repair resends the conversation, counted as
# its own request): characters per request from the server's log, tokens at 4 characters each.
sizes = [tuple(int(kv.split("=")[1]) for kv in line.split()[1:])
         for line in open(os.path.join(work, "server.log")) if line.startswith("sizes ")]
first = json.load(open(os.path.join(work, "first", "run.json")))
n_events = len(first["events"])
requests = first["llm"]["usage"]["requests"]
if sizes and requests:
    sizes = sizes[:requests]
    p_tok = sum(p for p, _ in sizes) / len(sizes) / 4
    a_tok = sum(a for _, a in sizes) / len(sizes) / 4
    per_event = requests / n_events
    print(f"per request: ~{p_tok:.0f} prompt tokens (min {min(p for p, _ in sizes) / 4:.0f}, "
          f"max {max(p for p, _ in sizes) / 4:.0f}), ~{a_tok:.0f} answer tokens (the stand-in's "
          f"answers, shaped like a model's); {per_event:.1f} requests per event at "
          f"{first['llm']['trials']} trials")
    print(f"per 1,000 events: ~{p_tok * per_event * 1000 / 1e6:.2f} M tokens in, "
          f"~{a_tok * per_event * 1000 / 1e6:.2f} M tokens out (x the model's price per M tokens)")
PY
