#!/usr/bin/env python3
"""Quality figures from `epimine eval --json` reports (standard library only).

usage:
  quality_report.py [--split FILE] [--corpus DIR] table NAME=REPORT.json[@RUN] ...
      per system: the per-event mean 5-F1 with a bootstrap 90% interval over events, and the
      per-theme means (5-prec / 5-recall / 5-F1 of each theme's events). NAME=A.json,B.json,…
      (one report per seed of a system) scores each event by its mean over the seeds, and adds
      the spread: every seed's per-event mean, overall and per theme, with their mean and range.
  quality_report.py [--split FILE] [--corpus DIR] select CANDIDATE=REPORT.json[@RUN] ...
      the selection protocol (leave one theme out): for each theme, the candidate with the best
      per-event mean 5-F1 on the *other* themes is chosen and scored on this theme's events; the
      out-of-theme figure is the per-event mean of those held-out scores, with its interval.
      Also prints every candidate's in-sample figures, so a reader sees what was chosen over.

The split (--split, default scripts/quality/quality-split.txt: `PART THEME EVENT` lines, PART `explore`
or `locked`) adds each system's exploration-part and locked-part means with their intervals: rules
are chosen on the exploration part only, and the locked part's figure is the one to quote beside
the out-of-theme figure (issue 27).

Smoother measures, from the run's assignments.parquet (RUN; default: REPORT.json without `.json`
when that folder exists) and the corpus's labels (--corpus, default target/quality/corpus), need
pyarrow; without it, or without the run folder, they are left out:
  soft 5-F1: 5-F1 with each hit counted by its share instead of 0/1 — every counted episode's
      top 5 gives a share to each gold episode (segments labelled with it / 5); episodes and gold
      episodes are paired one to one, largest share first; soft-prec = Σ shares / counted,
      soft-recall = Σ shares / N. It moves with every segment of a top 5, not only at 3 of 5.
  B-cubed F1: over the segments with one described gold label, the run's episodes as clusters
      (an unassigned segment is a cluster of its own), against the labels (Bagga & Baldwin).
Both are per event (mean over trials), then averaged like 5-F1.

The bootstrap resamples events with replacement (10,000 draws, fixed seed), so the interval
says how much the mean could move with other events of the same kind.
"""
import json
import os
import random
import sys
from collections import Counter, defaultdict

DRAWS = 10_000
SEED = 20251123


SPREADS = {}
SPLIT = {}  # event -> "explore" | "locked"
CORPUS = "target/quality/corpus"
LABELS = None  # event -> ({(doc_id, seg_idx): gold id or None}, gold ids)
MEASURES = [("k_f1", "5-F1"), ("k_recall", "gold-episode recall (5-recall: gold episodes with a counted episode whose top 5 it holds the majority of)"),
            ("soft_f1", "soft 5-F1"), ("bcubed_f1", "B-cubed F1")]


def read_split(path):
    split = {}
    for n, raw in enumerate(open(path), 1):
        text = raw.split("#")[0].split()
        if not text:
            continue
        if len(text) != 3 or text[0] not in ("explore", "locked"):
            sys.exit(f"quality_report.py: {path}:{n}: expected `explore|locked THEME EVENT`")
        split[text[2]] = text[0]
    return split


def labels():
    """Per event: each labelled segment's described gold id (None for M, X, lists…), gold ids."""
    global LABELS
    if LABELS is None:
        import pyarrow.parquet as pq
        gold = defaultdict(set)
        for row in pq.read_table(os.path.join(CORPUS, "gold_episodes.parquet")).to_pylist():
            gold[row["key_event"]].add(row["episode_id"])
        LABELS = {}
        for row in pq.read_table(os.path.join(CORPUS, "labels.parquet")).to_pylist():
            ev = row["key_event"]
            seg_labels, _ = LABELS.setdefault(ev, ({}, gold[ev]))
            label = row["label"].strip()
            gid = int(label) if label.isdigit() and int(label) in gold[ev] else None
            seg_labels[(row["doc_id"], row["seg_idx"])] = gid
    return LABELS


def soft_f1(top5s, seg_labels, gold, k=5):
    """Soft 5-F1 of one trial: `top5s` are the counted episodes' top-k segments."""
    if not gold:
        return 0.0
    shares = []
    for e, top in enumerate(top5s):
        votes = Counter(seg_labels.get(s) for s in top)
        for g, n in votes.items():
            if g is not None:
                shares.append((n / k, e, g))
    shares.sort(key=lambda x: (-x[0], x[1], x[2]))
    used_e, used_g, total = set(), set(), 0.0
    for share, e, g in shares:
        if e not in used_e and g not in used_g:
            used_e.add(e)
            used_g.add(g)
            total += share
    p = total / len(top5s) if top5s else 0.0
    r = total / len(gold)
    return 2 * p * r / (p + r) if p + r else 0.0


def bcubed_f1(cluster_of, seg_labels):
    """B-cubed F1 over the segments with one described label; unassigned: own cluster."""
    items = [(s, g) for s, g in seg_labels.items() if g is not None]
    if not items:
        return 0.0
    clusters = Counter()
    pair = Counter()
    by_label = Counter(g for _, g in items)
    for s, g in items:
        c = cluster_of.get(s, ("single", s))
        clusters[c] += 1
        pair[(c, g)] += 1
    prec = rec = 0.0
    for s, g in items:
        c = cluster_of.get(s, ("single", s))
        prec += pair[(c, g)] / clusters[c]
        rec += pair[(c, g)] / by_label[g]
    prec /= len(items)
    rec /= len(items)
    return 2 * prec * rec / (prec + rec) if prec + rec else 0.0


def smooth_scores(run_dir, events):
    """Adds soft_f1 and bcubed_f1 to every event of `events` from RUN/assignments.parquet."""
    import pyarrow.parquet as pq
    rows = pq.read_table(os.path.join(run_dir, "assignments.parquet"),
                         columns=["key_event", "trial", "episode_id", "doc_id", "seg_idx", "rank"]).to_pylist()
    by_event = defaultdict(lambda: defaultdict(list))
    trials = set()
    for r in rows:
        trials.add(r["trial"])
        by_event[r["key_event"]][(r["trial"], r["episode_id"])].append((r["rank"], (r["doc_id"], r["seg_idx"])))
    trials = sorted(trials) or [0]
    lab = labels()
    for k, e in events.items():
        seg_labels, gold = lab.get(k, ({}, set()))
        soft, bc = [], []
        for t in trials:
            eps = {ep: sorted(m) for (tr, ep), m in by_event.get(k, {}).items() if tr == t}
            top5s = [[s for _, s in m[:5]] for _, m in sorted(eps.items()) if len(m) >= 5]
            soft.append(soft_f1(top5s, seg_labels, gold))
            cluster_of = {s: ep for ep, m in eps.items() for _, s in m}
            bc.append(bcubed_f1(cluster_of, seg_labels))
        e["soft_f1"] = mean(soft)
        e["bcubed_f1"] = mean(bc)


def load(arg):
    name, _, path = arg.partition("=")
    if not path:
        sys.exit(f"quality_report.py: expected NAME=REPORT.json, got {arg!r}")
    if "," in path:
        seeds = [load(f"{name}={p}")[1] for p in path.split(",") if p]
        events = {}
        for k in seeds[0]:
            if any(k not in s for s in seeds):
                sys.exit(f"quality_report.py: {name}: the seeds score other events")
            e = dict(seeds[0][k])
            for m in ("k_prec", "k_recall", "k_f1", "soft_f1", "bcubed_f1"):
                if all(m in s[k] for s in seeds):
                    e[m] = mean([s[k][m] for s in seeds])
                else:
                    e.pop(m, None)
            e["counted"] = round(mean([s[k]["counted"] for s in seeds]))
            e["hits"] = round(mean([s[k]["hits"] for s in seeds]))
            events[k] = e
        SPREADS[name] = seeds
        return name, events
    path, _, run_dir = path.partition("@")
    try:
        report = json.load(open(path))
    except (OSError, ValueError) as e:
        sys.exit(f"quality_report.py: {path}: {e}")
    events = {e["key_event"]: e for e in report["events"]}
    if not events:
        sys.exit(f"quality_report.py: {path}: no scored events")
    if not run_dir and path.endswith(".json"):
        run_dir = path[: -len(".json")]
    if os.path.isfile(os.path.join(run_dir, "assignments.parquet")) and os.path.isdir(CORPUS):
        try:
            smooth_scores(run_dir, events)
        except ImportError:
            pass
    return name, events


def interval(values):
    """Bootstrap 90% interval of the mean of `values` (percentiles 5 and 95)."""
    rng = random.Random(SEED)
    n = len(values)
    means = sorted(sum(rng.choice(values) for _ in range(n)) / n for _ in range(DRAWS))
    return means[int(0.05 * DRAWS)], means[int(0.95 * DRAWS) - 1]


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def themes_of(events):
    return sorted({e["theme"] or "-" for e in events.values()})


def line(name, f1_by_event, events, width):
    values = [f1_by_event[k] for k in sorted(f1_by_event)]
    lo, hi = interval(values)
    per_theme = [
        mean([f1_by_event[k] for k in f1_by_event if (events[k]["theme"] or "-") == t])
        for t in themes_of(events)
    ]
    cells = " ".join(f"{100 * f:7.1f}" for f in per_theme)
    return f"{name:<{width}} {100 * mean(values):6.1f}  [{100 * lo:5.1f}, {100 * hi:5.1f}]  {cells}"


def header(events, width):
    cells = " ".join(f"{t[:7]:>7}" for t in themes_of(events))
    return f"{'system':<{width}} {'5-F1':>6}  {'90% interval':<14}  {cells}"


def table(args):
    systems = [load(a) for a in args]
    events = systems[0][1]
    width = max(24, max(len(n) for n, _ in systems))
    print("per-event mean 5-F1 ×100 with bootstrap 90% interval over events; per-theme means")
    print(header(events, width))
    for name, evs in systems:
        if set(evs) != set(events):
            sys.exit(f"quality_report.py: {name} scores other events than {systems[0][0]}")
        print(line(name, {k: e["k_f1"] for k, e in evs.items()}, evs, width))
    print()
    print(f"{'system':<{width}} {'theme':<18} {'5-prec':>7} {'5-rec':>7} {'5-F1':>7} {'counted':>8} {'hits':>5}")
    for name, evs in systems:
        for t in themes_of(evs):
            sel = [e for e in evs.values() if (e["theme"] or "-") == t]
            p, r, f = (mean([e[m] for e in sel]) for m in ("k_prec", "k_recall", "k_f1"))
            counted = sum(e["counted"] for e in sel)
            hits = sum(e["hits"] for e in sel)
            print(f"{name:<{width}} {t:<18} {100 * p:7.2f} {100 * r:7.2f} {100 * f:7.2f} {counted:8} {hits:5}")
    split_table(systems, width)
    for name, seeds in SPREADS.items():
        print(f"\n{name}: {len(seeds)} seeds, per-event mean 5-F1 of each (mean, min–max)")
        def spread(select):
            vals = [100 * mean([e["k_f1"] for e in s.values() if select(e)]) for s in seeds]
            return f"{mean(vals):.1f} ({min(vals):.1f}–{max(vals):.1f}): " + ", ".join(f"{v:.1f}" for v in vals)
        print(f"  all events: {spread(lambda e: True)}")
        for t in themes_of(seeds[0]):
            print(f"  {t}: {spread(lambda e, t=t: (e['theme'] or '-') == t)}")


def measures_of(systems):
    return [(m, label) for m, label in MEASURES
            if all(all(m in e for e in evs.values()) for _, evs in systems)]


def split_table(systems, width):
    """Per measure: all events, exploration part, locked part (each with its interval), per theme."""
    events = systems[0][1]
    if not SPLIT:
        return
    missing = sorted(set(events) - set(SPLIT))
    if missing:
        print(f"\n(split: events not in the split file, left out of both parts: {', '.join(missing)})")
    parts = [("explore", [k for k in sorted(events) if SPLIT.get(k) == "explore"]),
             ("locked", [k for k in sorted(events) if SPLIT.get(k) == "locked"])]
    for m, label in measures_of(systems):
        print(f"\n{label} ×100, per-event mean [bootstrap 90% interval]: all / exploration part"
              f" ({len(parts[0][1])}) / locked part ({len(parts[1][1])}); per theme: explore | locked")
        themes = themes_of(events)
        print(f"{'system':<{width}} {'all':>20} {'explore':>20} {'locked':>20}  "
              + " ".join(f"{t[:7] + ' e|l':>13}" for t in themes))
        for name, evs in systems:
            cells = []
            for keys in [sorted(evs)] + [k for _, k in parts]:
                vals = [evs[k][m] for k in keys]
                lo, hi = interval(vals) if vals else (0.0, 0.0)
                cells.append(f"{100 * mean(vals):5.1f} [{100 * lo:5.1f},{100 * hi:5.1f}]")
            per_theme = []
            for t in themes:
                e_ = [evs[k][m] for k in parts[0][1] if (evs[k]["theme"] or "-") == t]
                l_ = [evs[k][m] for k in parts[1][1] if (evs[k]["theme"] or "-") == t]
                per_theme.append(f"{100 * mean(e_):5.1f} | {100 * mean(l_):5.1f}")
            print(f"{name:<{width}} {cells[0]:>20} {cells[1]:>20} {cells[2]:>20}  "
                  + " ".join(f"{c:>13}" for c in per_theme))


def select(args):
    candidates = dict(load(a) for a in args)
    first = next(iter(candidates.values()))
    for name, evs in candidates.items():
        if set(evs) != set(first):
            sys.exit(f"quality_report.py: candidate {name} scores other events")
    f1 = {c: {k: e["k_f1"] for k, e in evs.items()} for c, evs in candidates.items()}
    width = max(24, max(len(c) for c in candidates))
    print("in-sample (every candidate on every event; NOT the figure to quote):")
    print(header(first, width))
    for c in candidates:
        print(line(c, f1[c], first, width))
    out = {}
    print("\nleave one theme out: chosen on the other themes, scored on the held-out one")
    for held in themes_of(first):
        train = [k for k, e in first.items() if (e["theme"] or "-") != held]
        test = [k for k, e in first.items() if (e["theme"] or "-") == held]
        # Best mean on the training themes; ties go to the candidate listed first.
        best = max(candidates, key=lambda c: (mean([f1[c][k] for k in train]), -list(candidates).index(c)))
        for k in test:
            out[k] = f1[best][k]
        print(f"  held out {held:<18} chosen {best:<{width}} train {100 * mean([f1[best][k] for k in train]):5.1f}"
              f"  held-out {100 * mean([f1[best][k] for k in test]):5.1f}")
    print(header(first, width))
    print(line("out-of-theme", out, first, width))
    if SPLIT:
        locked = {k: v for k, v in out.items() if SPLIT.get(k) == "locked"}
        if locked:
            lo, hi = interval(list(locked.values()))
            print(f"out-of-theme on the locked part only ({len(locked)} events):"
                  f" {100 * mean(list(locked.values())):.1f}  [{100 * lo:.1f}, {100 * hi:.1f}]")
        explore = [k for k in first if SPLIT.get(k) == "explore"]
        if explore:
            best = max(candidates, key=lambda c: (mean([f1[c][k] for k in explore]), -list(candidates).index(c)))
            lk = [k for k in first if SPLIT.get(k) == "locked"]
            vals = [f1[best][k] for k in lk]
            lo, hi = interval(vals)
            print(f"chosen on the exploration part: {best} (explore {100 * mean([f1[best][k] for k in explore]):.1f});"
                  f" its locked-part figure {100 * mean(vals):.1f}  [{100 * lo:.1f}, {100 * hi:.1f}]")
    split_table(list(candidates.items()), width)


def main():
    global SPLIT, CORPUS
    args = sys.argv[1:]
    split = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quality-split.txt")
    while args and args[0] in ("--split", "--corpus") and len(args) > 1:
        if args[0] == "--split":
            split = args[1]
        else:
            CORPUS = args[1]
        args = args[2:]
    if len(args) < 2 or args[0] not in ("table", "select"):
        sys.exit(__doc__)
    if split and os.path.isfile(split):
        SPLIT = read_split(split)
    {"table": table, "select": select}[args[0]](args[1:])


if __name__ == "__main__":
    main()
