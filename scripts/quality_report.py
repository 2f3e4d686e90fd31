#!/usr/bin/env python3
"""Quality figures from `epimine eval --json` reports (standard library only).

usage:
  quality_report.py table NAME=REPORT.json ...
      per system: the per-event mean 5-F1 with a bootstrap 90% interval over events, and the
      per-theme means (5-prec / 5-recall / 5-F1 of each theme's events). NAME=A.json,B.json,…
      (one report per seed of a system) scores each event by its mean over the seeds, and adds
      the spread: every seed's per-event mean, overall and per theme, with their mean and range.
  quality_report.py select CANDIDATE=REPORT.json ...
      the selection protocol (leave one theme out): for each theme, the candidate with the best
      per-event mean 5-F1 on the *other* themes is chosen and scored on this theme's events; the
      out-of-theme figure is the per-event mean of those held-out scores, with its interval.
      Also prints every candidate's in-sample figures, so a reader sees what was chosen over.

The bootstrap resamples events with replacement (10,000 draws, fixed seed), so the interval
says how much the mean could move with other events of the same kind.
"""
import json
import random
import sys

DRAWS = 10_000
SEED = 20251123


SPREADS = {}


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
            for m in ("k_prec", "k_recall", "k_f1"):
                e[m] = mean([s[k][m] for s in seeds])
            e["counted"] = round(mean([s[k]["counted"] for s in seeds]))
            e["hits"] = round(mean([s[k]["hits"] for s in seeds]))
            events[k] = e
        SPREADS[name] = seeds
        return name, events
    try:
        report = json.load(open(path))
    except (OSError, ValueError) as e:
        sys.exit(f"quality_report.py: {path}: {e}")
    events = {e["key_event"]: e for e in report["events"]}
    if not events:
        sys.exit(f"quality_report.py: {path}: no scored events")
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
    for name, seeds in SPREADS.items():
        print(f"\n{name}: {len(seeds)} seeds, per-event mean 5-F1 of each (mean, min–max)")
        def spread(select):
            vals = [100 * mean([e["k_f1"] for e in s.values() if select(e)]) for s in seeds]
            return f"{mean(vals):.1f} ({min(vals):.1f}–{max(vals):.1f}): " + ", ".join(f"{v:.1f}" for v in vals)
        print(f"  all events: {spread(lambda e: True)}")
        for t in themes_of(seeds[0]):
            print(f"  {t}: {spread(lambda e, t=t: (e['theme'] or '-') == t)}")


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


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("table", "select"):
        sys.exit(__doc__)
    {"table": table, "select": select}[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
