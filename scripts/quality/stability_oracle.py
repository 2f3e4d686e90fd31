#!/usr/bin/env python3
"""Are unstable episodes the bad ones? (issue 45, item 4) Not a test: it prints figures.

    scripts/quality/stability_oracle.py --work DIR --bin EPIMINE REF MIN CHANGE…

Keeps only the episodes of the run DIR/REF that come back (a segment-set Jaccard ≥ 0.5 with one
episode of the changed run, over the segments both hold: perturbation_spread.py's measure) in at
least MIN of the runs DIR/CHANGE…, writes that run to DIR/REF-stable-MIN (its other tables and
run.json's digests as they must be for `epimine eval`) and prints its 5-F1 and gold-episode
recall ×100 per part (exploration, locked) and theme. An oracle: the perturbed runs of
scripts/quality/perturbation-spread.sh stand for what a run could compute of its own stability.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from perturbation_spread import episodes_by_text, mean, read_split


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("ref")
    ap.add_argument("min", type=int)
    ap.add_argument("changes", nargs="+")
    a = ap.parse_args()
    ref = os.path.join(a.work, a.ref)
    eps, universe = episodes_by_text(ref)
    back = {(ev, e): 0 for ev, es in eps.items() for e in es}
    for change in a.changes:
        theirs_all, their_universe = episodes_by_text(os.path.join(a.work, change))
        for ev, es in eps.items():
            common = universe[ev] & their_universe.get(ev, set())
            theirs = [t & common for t in theirs_all.get(ev, {}).values()]
            for e, s in es.items():
                s = s & common
                best = max((len(s & t) / len(s | t) for t in theirs if t and s), default=0.0)
                back[(ev, e)] += best >= 0.5
    keep = {k for k, n in back.items() if n >= a.min}
    out = f"{ref}-stable-{a.min}"
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(ref, out)
    manifest = json.load(open(os.path.join(out, "run.json")))
    for table in manifest["tables"]:
        if table["name"] not in ("assignments.parquet", "episodes.parquet"):
            continue
        path = os.path.join(out, table["name"])
        t = pq.read_table(path)
        rows = t.select(["key_event", "trial", "episode_id"]).to_pylist()
        mask = [r["trial"] != 0 or (r["key_event"], r["episode_id"]) in keep for r in rows]
        pq.write_table(t.filter(pa.array(mask)), path)
        data = open(path, "rb").read()
        table.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest(),
                     rows=pq.read_metadata(path).num_rows)
    json.dump(manifest, open(os.path.join(out, "run.json"), "w"))
    corpus = manifest["job"]["corpus"]
    r = subprocess.run([a.bin, "eval", "--corpus", corpus, "--run", out, "--json"],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"stability_oracle.py: eval of {out}: {r.stderr.strip()}")
    events = json.loads(r.stdout)["events"]
    split = read_split()
    themes = sorted({e["theme"] for e in events})
    print(f"{a.ref}: {len(keep)} of {len(back)} episodes back in ≥ {a.min} of {len(a.changes)} runs")
    for part in ("explore", "locked"):
        es = [e for e in events if split.get(e["key_event"]) == part]
        by_theme = ", ".join(f"{t} {100 * mean(e['k_f1'] for e in es if e['theme'] == t):.1f}"
                             for t in themes)
        print(f"  {part}: 5-F1 {100 * mean(e['k_f1'] for e in es):.1f} ({by_theme}); "
              f"recall {100 * mean(e['k_recall'] for e in es):.1f}")


if __name__ == "__main__":
    main()
