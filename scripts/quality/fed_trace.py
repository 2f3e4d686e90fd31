#!/usr/bin/env python3
"""Where a fed story's phases go before §6 (issue 45): for each phase of a draw, how many of its
articles have a salient fragment and a fragment among the top articles' clusters, and what
became of each of those clusters (pruned, or merged into which candidate episode, of what phase
mix, kept or dropped by which rule). Reads a run made with `RUST_LOG=epimine=debug … -w 1` (the
trace of docs/quality.md, "Where a phase is lost"), its fragments.parquet, the corpus's
segments and the draw's truth.csv. Needs pyarrow. Not a test: it prints figures.

usage:
  RUST_LOG=epimine=debug epimine run --corpus C --out R -w 1 … 2> R.log
  python3 scripts/quality/fed_trace.py --truth DRAW/truth.csv --corpus C --run R --log R.log [--max-size 30]

Prints one summary line per size band (≤ 30, 31–60, > 60 articles), then, for each phase of at
most --max-size articles, its clusters: `cK(own/all fragments, segments) -> candN[phase mix]
(segments, fate)`.
"""
import argparse
import collections
import csv
import os
import re
import statistics
import sys


def read_trace(path):
    """Per event: clusters {id: (segments, articles, group or 'pruned')}, merge [candidate by
    group], fate {candidate: (segments, fate)}."""
    info, event = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.search(r"events \(.*\): (\S+)$", line.rstrip())
            if m:
                event = m.group(1)
                info[event] = {"clusters": {}, "merge": [], "fate": {}}
            elif event and "candidate clusters (" in line:
                info[event]["clusters"] = {int(a): (int(b), int(c), g) for a, b, c, g in
                                           re.findall(r"(\d+): (\d+)/(\d+) (g\d+|pruned)", line)}
            elif event and "merge: group g" in line:
                info[event]["merge"] = [int(x) for x in re.search(r"\[(.*)\]", line).group(1).split(", ")]
            elif event and "selection (" in line:
                info[event]["fate"] = {int(a): (int(b), f) for a, b, f in
                                       re.findall(r"(\d+): (\d+), [\d.]+, [\d.]+, ([a-z-]+)", line)}
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--truth", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--max-size", type=int, default=30)
    a = ap.parse_args()
    for path in (a.truth, a.log, os.path.join(a.run, "fragments.parquet")):
        if not os.path.isfile(path):
            sys.exit(f"fed_trace.py: {path}: no such file")
    if not os.path.isdir(a.corpus):
        sys.exit(f"fed_trace.py: {a.corpus}: no such corpus folder")
    import pyarrow.parquet as pq
    info = read_trace(a.log)
    with open(a.truth, newline="", encoding="utf-8") as f:
        truth = {r["url"]: (r["event"], r["phase"]) for r in csv.DictReader(f)}
    phase_of = {}
    for name in sorted(os.listdir(a.corpus)):
        if name.startswith("segments") and name.endswith(".parquet"):
            t = pq.read_table(os.path.join(a.corpus, name), columns=["key_event", "doc_id", "source_id"])
            for r in t.to_pylist():
                if r["source_id"] in truth:
                    phase_of[r["key_event"], r["doc_id"]] = truth[r["source_id"]][1]
    size = collections.Counter(truth.values())
    with_fragment, clustered = collections.defaultdict(set), collections.defaultdict(set)
    mix = collections.defaultdict(collections.Counter)  # (event, cluster) -> phases of its fragments
    for r in pq.read_table(os.path.join(a.run, "fragments.parquet")).to_pylist():
        phase = phase_of.get((r["key_event"], r["doc_id"]))
        if phase is None:
            continue
        with_fragment[r["key_event"], phase].add(r["doc_id"])
        if r["cluster"] is not None:
            clustered[r["key_event"], phase].add(r["doc_id"])
            mix[r["key_event"], r["cluster"]][phase] += 1
    phases = [(k, n) for k, n in size.items() if k[1] != "noise" and n >= 15]
    for name, test in ((f"≤ {a.max_size}", lambda n: n <= a.max_size),
                       (f"{a.max_size + 1}–60", lambda n: a.max_size < n <= 60), ("> 60", lambda n: n > 60)):
        band = [(k, n) for k, n in phases if test(n)]
        if band:
            print(f"phases of {name} articles: {len(band)}; articles with a salient fragment "
                  f"{statistics.mean(len(with_fragment[k]) / n for k, n in band):.2f}, with a fragment in a "
                  f"top articles' cluster {statistics.mean(len(clustered[k]) / n for k, n in band):.2f}; "
                  f"phases with none in a cluster: {sum(not clustered[k] for k, _ in band)}")
    for (event, phase), n in sorted(phases):
        if n > a.max_size:
            continue
        trace = info.get(event, {"clusters": {}, "merge": [], "fate": {}})
        notes = []
        for c in sorted(c for (e, c), m in mix.items() if e == event and m.get(phase)):
            segs, _, group = trace["clusters"].get(c, (0, 0, "?"))
            own, total = mix[event, c][phase], sum(mix[event, c].values())
            if not group.startswith("g") or int(group[1:]) >= len(trace["merge"]):
                notes.append(f"c{c}({own}/{total}, {segs} seg) {group}")
                continue
            cand = trace["merge"][int(group[1:])]
            mates = collections.Counter()
            for cc, (_, _, g) in trace["clusters"].items():
                if g.startswith("g") and int(g[1:]) < len(trace["merge"]) and trace["merge"][int(g[1:])] == cand:
                    mates.update(mix[event, cc])
            held, fate = trace["fate"].get(cand, (0, "?"))
            notes.append(f"c{c}({own}/{total}, {segs} seg) -> cand{cand}{dict(mates.most_common(2))} ({held} seg, {fate})")
        print(f"{event} {phase} ({n} articles): " + ("; ".join(notes) or "no fragment in a cluster"))


if __name__ == "__main__":
    main()
