"""Builds a many-event run for `epimine report`'s size and load-time benchmark (scripts/bench/bench-report.sh).

Copies of one real run: every key event of RUN (and its segments in CORPUS) is repeated COPIES times
under the names `<event>_cNN`, so the page has the shape of a real run (real date spans, real
episode counts and segments), only more of it. Writes OUT/corpus/segments.parquet and
OUT/run/{episodes,assignments}.parquet, job.toml and run.json (its list of tables rewritten with
the new files' sha256, so `epimine report` reads it as a committed run).
Usage: python bench_report.py RUN CORPUS COPIES OUT
"""

import hashlib
import json
import os
import shutil
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def copies(table, n):
    parts = []
    for i in range(n):
        names = pc.binary_join_element_wise(table["key_event"], pa.scalar(f"_c{i:02d}"), "")
        parts.append(table.set_column(0, table.schema.field(0), names))
    out = pa.concat_tables(parts)
    return out.sort_by([("key_event", "ascending")])


def main():
    run, corpus, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(f"{out}/corpus")
    os.makedirs(f"{out}/run")
    for name, src, dst in [
        ("segments", corpus, f"{out}/corpus"),
        ("episodes", run, f"{out}/run"),
        ("assignments", run, f"{out}/run"),
    ]:
        t = pq.read_table(f"{src}/{name}.parquet")
        t = copies(t, n)
        pq.write_table(t, f"{dst}/{name}.parquet", use_compliant_nested_type=False, row_group_size=64 * 1024)
    shutil.copy(f"{run}/job.toml", f"{out}/run/job.toml")
    manifest = json.load(open(f"{run}/run.json"))
    manifest["events"] = sorted(
        [dict(e, key_event=f"{e['key_event']}_c{i:02d}") for i in range(n) for e in manifest["events"]],
        key=lambda e: e["key_event"],
    )
    tables = []
    for name in ["episodes.parquet", "assignments.parquet", "job.toml"]:
        data = open(f"{out}/run/{name}", "rb").read()
        rows = pq.read_metadata(f"{out}/run/{name}").num_rows if name.endswith(".parquet") else 0
        tables.append({"name": name, "sha256": hashlib.sha256(data).hexdigest(), "rows": rows, "bytes": len(data)})
    manifest["tables"] = tables
    json.dump(manifest, open(f"{out}/run/run.json", "w"), indent=1)
    print(f"{len(manifest['events'])} events in {out}/run and {out}/corpus")


main()
