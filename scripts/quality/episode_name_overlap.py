#!/usr/bin/env python3
"""How distinct a run's episode names are: per event, the mean Jaccard overlap of the
top-K keywords over every pair of its episodes (0 = no shared keyword, 1 = the same names), then
the mean over events, overall and per theme; and the keywords shared by most episodes of an event.

usage: scripts/quality/episode_name_overlap.py RUN_DIR [RUN_DIR…] [--corpus CORPUS] [-k 5]
  RUN_DIR  an `epimine run` output folder (episodes.parquet); trial 0 only
  --corpus the corpus, for the themes (segments.parquet's `theme` column), optional
Needs pyarrow. Not a test: it prints figures.
"""
import argparse, collections, itertools, os, sys

try:
    import pyarrow.parquet as pq
except ImportError:  # said after the arguments, so that -h works without it
    pq = None


def overlap(run, k):
    eps = pq.read_table(os.path.join(run, "episodes.parquet"),
                        columns=["key_event", "trial", "keywords"]).to_pylist()
    by_event = collections.defaultdict(list)
    for e in eps:
        if e["trial"] == 0:
            by_event[e["key_event"]].append(set(e["keywords"][:k]))
    out = {}
    for event, sets in by_event.items():
        pairs = list(itertools.combinations(sets, 2))
        if pairs:
            out[event] = sum(len(a & b) / max(1, len(a | b)) for a, b in pairs) / len(pairs)
    shared = {}
    for event, sets in by_event.items():
        counts = collections.Counter(w for s in sets for w in s)
        shared[event] = [w for w, c in counts.most_common(3) if c > len(sets) / 2]
    return out, shared


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+")
    p.add_argument("--corpus")
    p.add_argument("-k", type=int, default=5)
    a = p.parse_args()
    if pq is None:
        sys.exit("episode_name_overlap.py needs pyarrow (pip install pyarrow)")
    themes = {}
    if a.corpus:
        t = pq.read_table(os.path.join(a.corpus, "segments.parquet"), columns=["key_event", "theme"])
        themes = dict(zip(t.column("key_event").to_pylist(), t.column("theme").to_pylist()))
    for run in a.runs:
        per, shared = overlap(run, a.k)
        mean = sum(per.values()) / max(1, len(per))
        line = f"{run}: mean top-{a.k} keyword Jaccard between episodes {mean:.3f} over {len(per)} events"
        by_theme = collections.defaultdict(list)
        for e, v in per.items():
            by_theme[themes.get(e, "?")].append(v)
        if themes:
            line += " (" + ", ".join(f"{t} {sum(v) / len(v):.3f}" for t, v in sorted(by_theme.items())) + ")"
        print(line)
        words = [f"{e}: {', '.join(w)}" for e, w in sorted(shared.items()) if w]
        print(f"  keywords in most episodes of their event ({len(words)} events): " + "; ".join(words[:8]))


if __name__ == "__main__":
    sys.exit(main())
