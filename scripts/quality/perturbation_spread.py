#!/usr/bin/env python3
"""The spread of the development set's scores under small changes (scripts/quality/perturbation-spread.sh).

    scripts/quality/perturbation_spread.py --work DIR REF CHANGE…

Each NAME is a run folder DIR/NAME with its `epimine eval --json` report DIR/NAME.json and its
corpus (the run's run.json names it). Prints, per run, 5-F1 ×100 and gold-episode recall ×100
(per-event means: all, exploration, locked; per theme), their mean over the distinct runs
(the reference and each run that scores some event differently; a steadier figure than any one
run; by part and theme too), their spread over the changes (max − min, and the largest move of
one event), and, against REF, the share of REF's episodes that come back:
an episode of REF whose segments (those both runs' corpora hold, matched by event and text) have
a Jaccard ≥ 0.5 with one episode of the changed run, and the mean best Jaccard. pyarrow.
"""
import argparse
import json
import os
import sys
from collections import defaultdict

import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))


def read_split():
    split = {}
    for raw in open(os.path.join(HERE, "quality-split.txt")):
        t = raw.split("#")[0].split()
        if len(t) == 3:
            split[t[2]] = t[0]
    return split


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def corpus_of(run):
    m = json.load(open(os.path.join(run, "run.json")))
    return m["job"]["corpus"]


def episodes_by_text(run):
    """event -> {episode: set of (text, occurrence)} of trial 0; and event -> segment keys."""
    seg = pq.read_table(os.path.join(corpus_of(run), "segments.parquet"),
                        columns=["key_event", "doc_id", "seg_idx", "text"]).to_pylist()
    key, seen, universe = {}, defaultdict(int), defaultdict(set)
    for r in seg:
        k = (r["key_event"], r["text"])
        seen[k] += 1
        key[(r["key_event"], r["doc_id"], r["seg_idx"])] = (r["text"], seen[k])
        universe[r["key_event"]].add((r["text"], seen[k]))
    eps = defaultdict(lambda: defaultdict(set))
    for r in pq.read_table(os.path.join(run, "assignments.parquet"),
                           columns=["key_event", "trial", "episode_id", "doc_id", "seg_idx"]).to_pylist():
        if r["trial"] == 0:
            eps[r["key_event"]][r["episode_id"]].add(key[(r["key_event"], r["doc_id"], r["seg_idx"])])
    return eps, universe


def comeback(ref, other):
    """(REF episodes, those back with Jaccard ≥ 0.5, sum of best Jaccards)."""
    (a, ua), (b, ub) = ref, other
    n = back = 0
    best_sum = 0.0
    for ev, eps in a.items():
        common = ua[ev] & ub.get(ev, set())
        theirs = [s & common for s in b.get(ev, {}).values()]
        for s in eps.values():
            s = s & common
            if not s:
                continue
            best = max((len(s & t) / len(s | t) for t in theirs if t), default=0.0)
            n += 1
            back += best >= 0.5
            best_sum += best
    return n, back, best_sum


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    split = read_split()
    reports = {}
    for name in a.runs:
        path = os.path.join(a.work, name + ".json")
        try:
            reports[name] = {e["key_event"]: e for e in json.load(open(path))["events"]}
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"perturbation_spread.py: {path}: {e}")
    ref_name = a.runs[0]
    events = reports[ref_name]
    themes = sorted({e["theme"] for e in events.values()})
    parts = [("all", lambda k: True), ("explore", lambda k: split.get(k) == "explore"),
             ("locked", lambda k: split.get(k) == "locked")]
    ref_eps = episodes_by_text(os.path.join(a.work, ref_name))
    short = [t[:6] for t in themes]
    print(f"{'run':<9} {'measure':<7} {'all':>6} {'explore':>8} {'locked':>7} " +
          " ".join(f"{t:>7}" for t in short) + f" {'episodes':>9} {'back':>6} {'Jaccard':>8}")
    rows = defaultdict(dict)
    for name, evs in reports.items():
        for m, label in (("k_f1", "5-F1"), ("k_recall", "recall")):
            cells = [100 * mean(e[m] for k, e in evs.items() if sel(k)) for _, sel in parts]
            cells += [100 * mean(e[m] for e in evs.values() if e["theme"] == t) for t in themes]
            rows[m][name] = cells
            extra = ""
            if m == "k_f1":
                other = episodes_by_text(os.path.join(a.work, name))
                n, back, js = comeback(ref_eps, other)
                extra = f" {n:9} {100 * back / max(n, 1):5.0f}% {js / max(n, 1):8.2f}"
            print(f"{name:<9} {label:<7} " + f"{cells[0]:6.1f} {cells[1]:8.1f} {cells[2]:7.1f} " +
                  " ".join(f"{c:7.1f}" for c in cells[3:]) + extra)
    print()
    # The means count each distinct outcome once: a run that scores every event as the reference
    # does (-w 1 gives its bytes, batch 8 its episodes) adds nothing but weight to the reference.
    def scores(n):
        return {k: (e["k_f1"], e["k_recall"]) for k, e in reports[n].items()}
    distinct = [n for n in reports if n == ref_name or scores(n) != scores(ref_name)]
    print(f"distinct runs (scores not the reference's): {len(distinct)} of {len(reports)}")
    for m, label in (("k_f1", "5-F1"), ("k_recall", "recall")):
        cols = list(zip(*(rows[m][n] for n in distinct)))
        means = [mean(c) for c in cols]
        print(f"mean over the distinct runs, {label}: all {means[0]:.1f}, explore {means[1]:.1f}, "
              f"locked {means[2]:.1f}; " + ", ".join(f"{t} {v:.1f}" for t, v in zip(themes, means[3:])))
        for part in ("explore", "locked"):
            by_theme = [mean(100 * mean(e[m] for k, e in reports[n].items()
                                        if split.get(k) == part and e["theme"] == t)
                             for n in distinct) for t in themes]
            print(f"  {part} by theme: " + ", ".join(f"{t} {v:.1f}" for t, v in zip(themes, by_theme)))
    for m, label in (("k_f1", "5-F1"), ("k_recall", "recall")):
        cols = list(zip(*rows[m].values()))
        spread = [max(c) - min(c) for c in cols]
        print(f"spread (max − min over the runs), {label}: all {spread[0]:.1f}, explore {spread[1]:.1f}, "
              f"locked {spread[2]:.1f}; " + ", ".join(f"{t} {s:.1f}" for t, s in zip(themes, spread[3:])))
    moves = []
    for name, evs in reports.items():
        if name == ref_name:
            continue
        for k, e in evs.items():
            if k in events:
                moves.append((abs(e["k_f1"] - events[k]["k_f1"]), name, k))
    # Per change: how far the per-event mean moves, and how far each event moves on average
    # (issue 66 item 4: a mean can stay while its events move).
    print(f"against {ref_name}, per change: Δ of the per-event mean 5-F1 / mean |Δ 5-F1| of an event "
          "(points; all events)")
    for name, evs in reports.items():
        if name == ref_name:
            continue
        common = [k for k in evs if k in events]
        delta = 100 * (mean(evs[k]["k_f1"] for k in common) - mean(events[k]["k_f1"] for k in common))
        spread = 100 * mean(abs(evs[k]["k_f1"] - events[k]["k_f1"]) for k in common)
        flips = sum(1 for k in common if evs[k]["hits"] != events[k]["hits"])
        print(f"  {name:<12} {delta:+6.1f} / {spread:5.1f}; events that gained or lost a hit: "
              f"{flips} of {len(common)}")
    # The metric's own step: one gold episode hit more or less moves an event's k-F1 by about
    # 2 / (counted + gold) — what an event can move by without moving by a whole hit.
    steps = [200 / (e["counted"] + e["gold"]) for e in events.values() if e["counted"] + e["gold"]]
    if steps:
        steps.sort()
        print(f"one hit more or less moves an event's 5-F1 by {mean(steps):.1f} points on average "
              f"(median {steps[len(steps) // 2]:.1f}, {steps[0]:.1f}–{steps[-1]:.1f}): a mean |Δ| of 5 "
              f"allows about {5 / mean(steps):.2f} events in one to gain or lose a hit")
    moves.sort(reverse=True)
    if moves:
        big = sum(1 for d, _, _ in moves if d >= 0.10)
        print(f"event moves against {ref_name}: {big} of {len(moves)} (event, change) pairs move 5-F1 by ≥ 10 points; "
              f"largest {100 * moves[0][0]:.1f} ({moves[0][2]}, {moves[0][1]})")


if __name__ == "__main__":
    main()
