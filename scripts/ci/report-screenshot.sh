#!/usr/bin/env bash
# Regenerates docs/report.png, the screenshot of the development-set report that README-linked
# docs show (issue 67 item 7), so that it follows the report's and the tables' names:
# imports ../shared/data/epimine, runs the default job on it (all-MiniLM-L6-v2, the default
# wordfreq background, no LLM), writes the report, and has headless Chromium take the page
# filtered to one key event (`?event=`, the report's own filter) at 1100x900.
# Needs: a release build (or BIN), ../shared beside the checkout, chromium (scripts/ci/chromium.sh
# installs it); the model is fetched into the model cache on first use, as `epimine run` does. About 5 minutes on
# 2 cores, most of it encoding. Not run by the tests: the picture is checked by eye.
# Usage: scripts/ci/report-screenshot.sh [EVENT]   (default 2021_kroger_shooting)
#        BIN=path/to/epimine scripts/ci/report-screenshot.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${BIN:-target/release/epimine}")
event=${1:-2021_kroger_shooting}
data=../shared/data/epimine
[ -x "$bin" ] || { echo "no $bin: cargo build --release first (or BIN=...)" >&2; exit 1; }
data=$(realpath -m "$data")
[ -d "$data" ] || { echo "no $data: the development set is read from ../shared" >&2; exit 1; }
[ -n "$(find "$data" -type d -name "$event" -print -quit)" ] || {
    echo "no key event $event under $data" >&2; exit 1; }
eval "$(scripts/ci/chromium.sh)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Relative names inside the work folder: the report shows them as given.
(cd "$work" && "$bin" import "$data" --out dev-corpus) >"$work/import.log" 2>&1 || {
    tail -20 "$work/import.log" >&2; exit 1; }
(cd "$work" && "$bin" run --corpus dev-corpus --out dev-run -w 2) >"$work/run.log" 2>&1 || {
    tail -20 "$work/run.log" >&2; exit 1; }
(cd "$work" && "$bin" report --run dev-run --corpus dev-corpus --out report.html) >/dev/null
timeout 120 "$EPIMINE_CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
    --hide-scrollbars --user-data-dir="$work/profile" --window-size=1100,900 \
    --screenshot="$work/report.png" "file://$work/report.html?event=$event" 2>/dev/null
head -c 8 "$work/report.png" | grep -q PNG || { echo "chromium wrote no PNG" >&2; exit 1; }
mv "$work/report.png" docs/report.png.tmp && mv docs/report.png.tmp docs/report.png
echo "docs/report.png: the report of $("$bin" --version 2>/dev/null || echo "$bin"), event $event"
