#!/usr/bin/env bash
# How close `epimine import --articles` cuts articles to the development set's own segmentation,
# and what the cut does to the episodes.
#
# Each development article's segments are joined back into one text — with spaces (`--join
# space`, the default: only sentence boundaries are left to find) or with line breaks (`--join
# line`: paragraphs marked) — written as JSON Lines articles (id = the article's index, published
# = its date, theme), and imported with `epimine import --articles`. Our segments are aligned to
# the original ones word by word; a boundary is the word position where a segment ends inside an
# article. Printed: boundary precision / recall / F1 over all articles, segment length
# quantiles, boilerplate dropped.
#
# With --run, both corpora also go through `epimine run` and `epimine eval` (5-F1). Labels follow
# text: each of our segments takes the gold label of the original segment that holds most of its
# words (ties: the earlier one); a segment whose words come mostly from unlabelled segments gets
# no label (as unlabelled originals have none). The gold episodes are the same.
#
# Usage: BIN=target/release/epimine PYTHON=<python with pyarrow> \
#        scripts/quality/segment-quality.sh [--join space|line] [--run] [--out DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${BIN:-$root/target/release/epimine}"
PYTHON="${PYTHON:-python3}"
shared="${EPIMINE_SHARED:-$root/../shared}"
join=space
run=0
work="$root/target/segment-quality"
while [ $# -gt 0 ]; do
    case "$1" in
        --join) join="$2"; shift 2 ;;
        --run) run=1; shift ;;
        --out) work="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
"$PYTHON" -c "import pyarrow" || { echo "PYTHON must have pyarrow" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
"$BIN" import "$shared/data/epimine" --out "$work/original" > "$work/import-original.txt"
"$PYTHON" "$root/scripts/quality/segment_quality.py" articles "$shared/data/epimine" "$join" "$work/articles.jsonl"
/usr/bin/time -f "import --articles: %e s, peak %M KiB" \
    "$BIN" import --articles "$work/articles.jsonl" --out "$work/ours" | tee "$work/import-ours.txt" | tail -1
"$PYTHON" "$root/scripts/quality/segment_quality.py" compare "$work/original" "$work/ours"
if [ "$run" = 1 ]; then
    bg="$shared/data/background/bbc-news-2225.txt"
    for corpus in original ours; do
        "$BIN" run --corpus "$work/$corpus" --background "$bg" --out "$work/run-$corpus" -w 2 > /dev/null
        echo "== 5-F1 on the $corpus segments"
        "$BIN" eval --corpus "$work/$corpus" --run "$work/run-$corpus" | tail -4
    done
fi
