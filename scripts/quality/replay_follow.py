#!/usr/bin/env python3
"""Replays the development set as a stream (issue 39) and prints what following it costs.

Each key event's articles are taken in date order (`doc_dates.txt`) and cut at CUTS points (by
default 40%, 60%, 80% and 100% of the event's articles; every article of the date the cut falls
on is taken). After each cut the articles seen so far are imported into a fresh corpus (as a
feed of one's own would be) and two runs are made: one that follows (the same `--out` every
time, so its episodes are matched to the previous run's) and a fresh one (its own `--out`). It
prints, per cut and over all:

- id stability: among the segments assigned to an episode at two consecutive cuts, the share
  whose episode keeps its id (`lineage.stable_id`);
- new gold episodes: a gold episode with no labelled segment before a cut and some after it
  "shows as new" when the episode of the next run that holds most of its segments has status
  `new` or `split`;
- each follow run's time against the fresh run's of the same cut;
- the final cut's 5-F1 of the follow run against the fresh run's (`epimine eval`);
- each gold episode that arrives after the first cut (at the cut that brings most of its
  articles) and whether the follow run of that cut tells it on its cut: the episode holding
  most of its labelled segments holds at least half of them, they are more than half of that
  episode's labelled segments, and its status is `new` (issue 63's measure of the fed stories).

Usage: scripts/quality/replay_follow.py --bin target/release/epimine --dataset ../shared/data/epimine \
    --background bg.parquet --model all-MiniLM-L6-v2 --work /tmp/replay [--cuts 0.5,0.75,1.0] \
    [--events a,b,…] [--workers 2] [--set episodes.carry=false]…
Needs pyarrow (run it with a Python that has it: python3 -m venv v && v/bin/pip install pyarrow).
Each cut costs two runs (follow and fresh): on 2 cores the whole development set with
all-MiniLM-L6-v2 takes about an hour for four cuts.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from datetime import date

import pyarrow.parquet as pq


def parse_date(text):
    text = text.strip()
    if "/" in text:
        m, d, y = text.split("/")
        return date(int(y), int(m), int(d))
    if text:
        y, m, d = text.split("-")
        return date(int(y), int(m), int(d))
    return None


def read_articles(path):
    """segments.txt: one segment a line, a blank line ends an article."""
    articles, current = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.strip():
                current.append(line)
            elif current:
                articles.append(current)
                current = []
    if current:
        articles.append(current)
    return articles


def events_of(dataset):
    out = []
    for theme in sorted(os.listdir(dataset)):
        tdir = os.path.join(dataset, theme)
        if not os.path.isdir(tdir):
            continue
        for event in sorted(os.listdir(tdir)):
            edir = os.path.join(tdir, event)
            if os.path.isfile(os.path.join(edir, "segments.txt")):
                out.append((theme, event, edir))
    return out


def table(path, columns=None):
    return pq.read_table(path, columns=columns).to_pylist()


def run(cmd, log):
    t0 = time.time()
    with open(log, "w") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT,
                             env=dict(os.environ, RUST_LOG="warn"))
    secs = time.time() - t0
    if rc not in (0, 3):
        sys.exit(f"failed ({rc}): {' '.join(cmd)}; see {log}")
    return secs


def gold_told(ci, labels, events, seg_ids, status_of, arrival):
    """The gold episodes arriving at cut `ci` and whether the follow run of that cut tells each
    on its cut: the episode holding most of its labelled segments (of the articles taken so far)
    holds at least half of them, they are more than half of that episode's labelled segments,
    and its status is `new`."""
    out = []
    held = defaultdict(Counter)  # (event, gold) -> stable id -> its labelled segments there
    labelled = defaultdict(Counter)  # (event, stable id) -> labelled segments
    for (event, art, s), sid in seg_ids.items():
        lab = labels.get((event, art, s))
        if lab and lab not in ("M", "X"):
            labelled[event][sid] += 1
            for g in lab.split(","):
                held[(event, g.strip())][sid] += 1
    total = Counter()  # (event, gold) -> its labelled segments so far
    taken = {event: set(e["taken"][ci]) for event, e in events.items()}
    for (event, art, _), lab in labels.items():
        if event in taken and art in taken[event] and lab not in ("M", "X"):
            for g in lab.split(","):
                total[(event, g.strip())] += 1
    for (event, g), cut in sorted(arrival.items()):
        if cut != ci:
            continue
        if not held[(event, g)]:
            out.append((ci, event, g, False, "in no episode"))
            continue
        sid, n = held[(event, g)].most_common(1)[0]
        status = status_of.get((event, sid))
        share = n / max(1, total[(event, g)])
        purity = n / labelled[event][sid]
        told = share >= 0.5 and purity > 0.5 and status == "new"
        why = "" if told else f"best #{sid} holds {share:.2f} at purity {purity:.2f}, status {status}"
        out.append((ci, event, g, told, why))
    return out


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--background", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cuts", default="0.4,0.6,0.8,1.0")
    ap.add_argument("--workers", default="2")
    ap.add_argument("--events", default="", help="comma-separated key events (default all)")
    ap.add_argument("--set", action="append", default=[], dest="settings",
                    help="a job setting for every run (epimine run --set), e.g. episodes.carry=false")
    return ap.parse_args()


def events_cut(a, cuts):
    """Per event: its articles in file order, their dates, and the articles each cut takes (in
    date order; every article of the date the cut falls on)."""
    wanted = set(filter(None, a.events.split(",")))
    events = {}
    for theme, event, edir in events_of(a.dataset):
        if wanted and event not in wanted:
            continue
        arts = read_articles(os.path.join(edir, "segments.txt"))
        dpath = os.path.join(edir, "doc_dates.txt")
        dates = [parse_date(l) for l in open(dpath, encoding="utf-8")] if os.path.exists(dpath) else []
        dates = (dates + [None] * len(arts))[: len(arts)]
        order = sorted(range(len(arts)), key=lambda i: (dates[i] or date.max, i))
        taken = []
        for c in cuts:
            n = max(1, round(c * len(arts)))
            last = dates[order[n - 1]]
            # Every article of the date the cut falls on.
            while n < len(arts) and last is not None and dates[order[n]] == last:
                n += 1
            taken.append(sorted(order[:n]))
        events[event] = dict(theme=theme, dir=edir, articles=arts, dates=dates, taken=taken)
    return events


def arrivals(events, labels, n_cuts):
    """(event, gold) -> the cut that brings most of the gold episode's articles (its arrival)."""
    gold_articles = defaultdict(set)  # (event, gold) -> article indices
    for (event, i, _), lab in labels.items():
        if event in events and lab not in ("M", "X"):
            for g in lab.split(","):
                gold_articles[(event, g.strip())].add(i)
    arrival = {}
    for (event, g), arts in gold_articles.items():
        brought, seen = [], set()
        for ci in range(n_cuts):
            now = arts & set(events[event]["taken"][ci])
            brought.append(len(now - seen))
            seen = now
        arrival[(event, g)] = max(range(n_cuts), key=lambda ci: (brought[ci], -ci))
    return arrival


def write_cut(a, ci, events):
    """Cut `ci`'s articles as a dataset folder, imported into a corpus. Returns the corpus and
    (event, doc_id in the cut corpus) -> article index in the full event (file order kept)."""
    cut_dir = os.path.join(a.work, f"cut{ci}-data")
    doc_map = {}
    for event, e in events.items():
        edir = os.path.join(cut_dir, e["theme"], event)
        os.makedirs(edir)
        with open(os.path.join(edir, "segments.txt"), "w", encoding="utf-8") as f:
            f.write("\n\n".join("\n".join(e["articles"][i]) for i in e["taken"][ci]) + "\n")
        with open(os.path.join(edir, "doc_dates.txt"), "w", encoding="utf-8") as f:
            for i in e["taken"][ci]:
                d = e["dates"][i]
                f.write(f"{d.month}/{d.day}/{d.year}\n" if d else "\n")
        for d, i in enumerate(e["taken"][ci]):
            doc_map[(event, d)] = i
    corpus = os.path.join(a.work, f"cut{ci}-corpus")
    run([a.bin, "import", cut_dir, "--out", corpus], os.path.join(a.work, f"import{ci}.log"))
    return corpus, doc_map


def follow_ids(follow, doc_map):
    """The follow run's (event, stable id) -> status, its statuses counted, and each segment
    (event, article index, seg_idx) -> its episode's stable id."""
    lineage = table(os.path.join(follow, "lineage.parquet"))
    stable = {}
    status_of = {}
    for r in lineage:
        if r["trial"] == 0 and r["episode_id"] is not None:
            stable[(r["key_event"], r["episode_id"])] = r["stable_id"]
            status_of[(r["key_event"], r["stable_id"])] = r["status"]
    statuses = Counter(r["status"] for r in lineage)
    seg_ids = {}
    for r in table(os.path.join(follow, "assignments.parquet")):
        if r["trial"] != 0:
            continue
        art = doc_map[(r["key_event"], r["doc_id"])]
        seg_ids[(r["key_event"], art, r["seg_idx"])] = stable[(r["key_event"], r["episode_id"])]
    return status_of, statuses, seg_ids


def gold_seen_at(events, labels, ci):
    """Gold episodes seen by cut `ci`: by their labelled segments in the full corpus's doc ids
    (the full corpus keeps file order, so its doc_id is the article index)."""
    gold_seen = defaultdict(set)
    for event, e in events.items():
        for i in e["taken"][ci]:
            for s in range(len(e["articles"][i])):
                lab = labels.get((event, i, s))
                if lab and lab not in ("M", "X"):
                    for g in lab.split(","):
                        gold_seen[event].add(g.strip())
    return gold_seen


def against_previous(events, labels, seg_ids, status_of, gold_seen, prev_seg_ids, prev_gold_seen):
    """(segments keeping their id, segments assigned at both cuts, new gold episodes shown as
    new or split, new gold episodes) between the previous cut and this one."""
    same = both = shown = total = 0
    for k, sid in seg_ids.items():
        if k in prev_seg_ids:
            both += 1
            same += prev_seg_ids[k] == sid
    for event in events:
        for g in gold_seen[event] - prev_gold_seen[event]:
            total += 1
            held = Counter(
                sid for (ev, art, s), sid in seg_ids.items()
                if ev == event and g in [x.strip() for x in
                                         (labels.get((ev, art, s)) or "").split(",")])
            if held:
                top = held.most_common(1)[0][0]
                shown += status_of.get((event, top)) in ("new", "split")
    return same, both, shown, total


def f1(a, full, out, events):
    """The mean 5-F1 (×100) of `out`'s events and their count. The last cut holds every article
    of its events in file order: the full corpus's segments (and labels) under the same keys."""
    r = json.loads(subprocess.check_output(
        [a.bin, "eval", "--corpus", full, "--run", out, "--json"], stderr=subprocess.DEVNULL))
    scores = [e["k_f1"] for e in r["events"] if e["key_event"] in events]
    return 100 * sum(scores) / max(1, len(scores)), len(scores)


def print_cuts(rows, cuts, told_on_cut):
    """The per-cut table and the totals over the cuts."""
    print("cut  articles  follow s  fresh s  id stability      new gold shown new  statuses")
    for ci, c, n, tf, tr, same, both, shown, total, st in rows:
        stab = f"{same}/{both} ({100 * same / both:.1f}%)" if both else "-"
        new = f"{shown}/{total}" if ci else "-"
        st_text = ", ".join(f"{v} {k}" for k, v in sorted(st.items()))
        print(f"{c:>4}  {n:>8}  {tf:>8.1f}  {tr:>7.1f}  {stab:<17} {new:<14}  {st_text}")
    stab_same, stab_both = sum(r[5] for r in rows), sum(r[6] for r in rows)
    print(f"id stability over all cuts: {stab_same}/{stab_both} "
          f"({100 * stab_same / max(1, stab_both):.1f}%) of segments assigned at two consecutive cuts")
    print(f"new gold episodes shown as new: {sum(r[7] for r in rows)}/{sum(r[8] for r in rows)}")
    for ci, event, g, told, why in told_on_cut:
        print(f"  arrives at cut {cuts[ci]}: {event}/{g}: {'told' if told else 'MISSED, ' + why}")
    print(f"gold episodes told at the cut that brings most of their articles (cuts after the "
          f"first): {sum(t[3] for t in told_on_cut)}/{len(told_on_cut)}")
    print(f"time: follow {sum(r[3] for r in rows):.1f} s, fresh {sum(r[4] for r in rows):.1f} s")


def same_but_ids(follow, fresh):
    """Whether the follow run's episodes and assignments are the fresh run's but for the ids a
    followed run carries over (`stable_id`, `status`, `phase_stable_id`, different by design)."""
    def without_ids(run, name):
        t = pq.read_table(os.path.join(run, name))
        return t.drop([c for c in t.schema.names if c in ("stable_id", "status", "phase_stable_id")])
    return all(without_ids(follow, t).equals(without_ids(fresh, t))
               for t in ("episodes.parquet", "assignments.parquet"))


def main():
    a = parse_args()
    cuts = [float(c) for c in a.cuts.split(",")]
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    # The whole corpus once: its labels give each segment's gold episode.
    full = os.path.join(a.work, "full-corpus")
    run([a.bin, "import", a.dataset, "--out", full], os.path.join(a.work, "import-full.log"))
    labels = {}
    for r in table(os.path.join(full, "labels.parquet")):
        labels[(r["key_event"], r["doc_id"], r["seg_idx"])] = r["label"]
    events = events_cut(a, cuts)
    arrival = arrivals(events, labels, len(cuts))
    told_on_cut = []  # (cut, event, gold, told, why)
    follow = os.path.join(a.work, "follow")
    rows = []
    prev_seg_ids = prev_gold_seen = None
    for ci, c in enumerate(cuts):
        corpus, doc_map = write_cut(a, ci, events)
        common = ["--corpus", corpus, "--background", a.background, "--model", a.model,
                  "-w", a.workers] + [x for kv in a.settings for x in ("--set", kv)]
        t_follow = run([a.bin, "run", *common, "--out", follow],
                       os.path.join(a.work, f"follow{ci}.log"))
        shutil.copy(os.path.join(follow, "lineage.parquet"),
                    os.path.join(a.work, f"lineage{ci}.parquet"))
        t_fresh = run([a.bin, "run", *common, "--out", os.path.join(a.work, f"fresh{ci}")],
                      os.path.join(a.work, f"fresh{ci}.log"))
        status_of, statuses, seg_ids = follow_ids(follow, doc_map)
        gold_seen = gold_seen_at(events, labels, ci)
        same = both = shown = total = 0
        if prev_seg_ids is not None:
            same, both, shown, total = against_previous(
                events, labels, seg_ids, status_of, gold_seen, prev_seg_ids, prev_gold_seen)
        if ci:
            told_on_cut.extend(gold_told(ci, labels, events, seg_ids, status_of, arrival))
        articles = sum(len(e["taken"][ci]) for e in events.values())
        rows.append((ci, c, articles, t_follow, t_fresh, same, both, shown, total, statuses))
        prev_seg_ids, prev_gold_seen = seg_ids, gold_seen
    print(f"{len(events)} events, cuts at {a.cuts} of each event's articles (date order); "
          f"model {a.model}; -w {a.workers}")
    print_cuts(rows, cuts, told_on_cut)
    last = os.path.join(a.work, f"fresh{len(cuts) - 1}")
    ff, n = f1(a, full, follow, events)
    fr, _ = f1(a, full, last, events)
    print(f"final 5-F1 (mean of {n} events): follow {ff:.1f}, fresh {fr:.1f}")
    print(f"final follow tables the fresh run's but for the ids carried over: {same_but_ids(follow, last)}")


if __name__ == "__main__":
    main()
