#!/usr/bin/env bash
# Quality and speed on the development set (issue: episodes end to end). Not a test: it prints
# figures. import → run (no LLM, default model, BBC background) → eval, and baseline kmeans →
# eval, then per theme 5-prec / 5-recall / 5-F1 of both beside the paper's rows, wall time per
# stage and peak memory. Extra arguments go to `epimine run` (e.g. --set episodes.prune=mean).
# QUALITY_CACHE=1 keeps encoder outputs between runs (for parameter sweeps; timings then leave
# out encoding).
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${EPIMINE_SHARED:-../shared}
work=${QUALITY_DIR:-target/quality}
mkdir -p "$work"
cargo build --release --quiet
bin=target/release/epimine
export RUST_LOG=${RUST_LOG:-warn}
"$bin" import "$shared/data/epimine" --out "$work/corpus" >/dev/null
[ -f "$work/bg.parquet" ] || "$bin" background build "$shared/data/background/bbc-news-2225.txt" --out "$work/bg.parquet" >/dev/null
cache=()
[ "${QUALITY_CACHE:-0}" = 1 ] && cache=(--set "encoder.cache_dir=\"$PWD/$work/cache\"")
rm -rf "$work/run"
/usr/bin/time -f '%e %M' -o "$work/run.time" "$bin" run --corpus "$work/corpus" --background "$work/bg.parquet" \
    --out "$work/run" -w 2 "${cache[@]}" "$@" >"$work/run.out" || [ $? = 3 ]
"$bin" eval --corpus "$work/corpus" --run "$work/run" --json >"$work/epimine.json"
if [ "${QUALITY_KMEANS:-1}" = 1 ]; then
    "$bin" baseline kmeans --corpus "$work/corpus" --out "$work/kmeans" >/dev/null
    "$bin" eval --corpus "$work/corpus" --run "$work/kmeans" --json >"$work/kmeans.json"
fi
python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
paper = {  # ALGORITHM.md, paper Table 2: 5-prec / 5-recall / 5-F1
    "terrorism": {"Claude": (71.21, 22.07, 32.43), "no LLM": (37.73, 21.62, 24.77), "K-means": (21.23, 21.23, 21.23)},
    "natural_disasters": {"Claude": (70.98, 28.46, 34.53), "no LLM": (37.19, 14.78, 17.52), "K-means": (27.85, 28.47, 28.14)},
    "politics": {"Claude": (62.67, 21.54, 29.23), "no LLM": (30.64, 23.51, 19.06), "K-means": (16.04, 16.04, 16.04)},
}
rows = {}
for name in ("epimine", "kmeans"):
    path = os.path.join(work, name + ".json")
    if os.path.exists(path):
        for t in json.load(open(path))["themes"]:
            rows.setdefault(t["theme"], {})[name] = tuple(100 * t[k] for k in ("k_prec", "k_recall", "k_f1"))
print(f"{'theme':<18} {'method':<22} {'5-prec':>7} {'5-rec':>7} {'5-F1':>7}")
for theme in sorted(rows):
    for label, key in (("epimine (no LLM)", "epimine"), ("k-means (ours)", "kmeans")):
        if key in rows[theme]:
            p, r, f = rows[theme][key]
            print(f"{theme:<18} {label:<22} {p:7.2f} {r:7.2f} {f:7.2f}")
    for label, (p, r, f) in paper.get(theme, {}).items():
        print(f"{theme:<18} {'paper ' + label:<22} {p:7.2f} {r:7.2f} {f:7.2f}")
report = json.load(open(os.path.join(work, "run", "run.json")))
wall, rss = open(os.path.join(work, "run.time")).read().split()
print("stages:", ", ".join(f"{s['stage']} {s['seconds']:.1f} s" for s in report["stages"]))
print(f"run wall time {float(wall):.1f} s, peak memory {int(rss) / 1024:.0f} MiB")
eps = sum(e["counts"]["episodes"] for e in report["events"])
failed = [e["key_event"] for e in report["events"] if e["status"] != "ok"]
print(f"{len(report['events'])} events, {eps} episodes, failed: {failed or 'none'}")
PY
