#!/usr/bin/env bash
# Size and load time of `epimine report` for ~1,000 key events. The input is COPIES copies of
# one real run (default: the development-set run of README, 21 events × 48 = 1,008 events),
# made by scripts/bench_report.py. Prints the time and peak memory of `epimine report`, the
# page's size, and its load time in headless Chromium (scripts/ci/chromium.sh installs it): a
# wrapper page loads the report in an iframe and writes the milliseconds from navigation start
# to the iframe's load event (HTML parsed, the inline script run) into its DOM, which
# `chromium --dump-dom` prints; three loads, each in a fresh browser.
# Usage: RUN=… CORPUS=… [COPIES=48] [BIN=target/release/epimine] [PYTHON=python3] \
#        scripts/bench/bench-report.sh [--out DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/target/bench-report
[ "${1:-}" = "--out" ] && out=$2
bin=${BIN:-$root/target/release/epimine}
python=${PYTHON:-python3}
copies=${COPIES:-48}
: "${RUN:?set RUN to a run folder of epimine run}" "${CORPUS:?set CORPUS to its corpus}"
eval "$("$root/scripts/ci/chromium.sh")"
mkdir -p "$out"
"$python" "$root/scripts/bench/bench_report.py" "$RUN" "$CORPUS" "$copies" "$out/input"
echo "== epimine report ($bin)"
/usr/bin/time -f "report: %e s wall, %M KiB peak RSS" \
    "$bin" report --run "$out/input/run" --corpus "$out/input/corpus" --out "$out/report.html"
bytes=$(stat -c %s "$out/report.html")
echo "page: $bytes bytes ($(( bytes / 1024 / 1024 )) MiB), $(gzip -c "$out/report.html" | wc -c) gzipped"
cat >"$out/load.html" <<HTML
<!DOCTYPE html><html><body><p id="ms">none</p>
<iframe id="f" style="width:1100px;height:900px" src="report.html"></iframe>
<script>document.getElementById('f').onload=function(){
var d=this.contentDocument;document.getElementById('ms').textContent='loaded '+Math.round(performance.now())+' ms; '
+(d?d.querySelectorAll('section.event').length+' events, '+d.querySelectorAll('rect.m').length+' marks':'(no access)');};</script>
</body></html>
HTML
for i in 1 2 3; do
    start=$(date +%s.%N)
    line=$("$EPIMINE_CHROMIUM" --headless --no-sandbox --disable-gpu --allow-file-access-from-files \
        --user-data-dir="$out/chromium-profile-$i" --dump-dom "file://$out/load.html" 2>/dev/null |
        grep -o '<p id="ms">[^<]*' | sed 's/<p id="ms">//')
    end=$(date +%s.%N)
    echo "chromium load $i: $line (whole browser run $(echo "$end - $start" | bc) s)"
    rm -rf "$out/chromium-profile-$i"
done
