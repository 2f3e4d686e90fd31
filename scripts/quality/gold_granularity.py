#!/usr/bin/env python3
"""How a run's episodes cover a labelled corpus's gold episodes (issue 45): found, split, absorbed.

    scripts/quality/gold_granularity.py --corpus CORPUS --run RUN [--trial 0] [--k 5]

Reads CORPUS/labels.parquet, CORPUS/gold_episodes.parquet and RUN/assignments.parquet (pyarrow)
and prints, over every gold episode with at least one labelled segment:
  - captured: some episode's top k holds a majority of its segments (the 5-recall of
    scripts/quality/quality_report.py);
  - the plurality of some episode: among an episode's segments with a gold episode's label (not
    M, X or none), this one is the most frequent — some episode is mainly about it;
  - absorbed: it is the plurality of no episode (its segments, if in episodes, sit inside
    episodes about other gold episodes or about none);
  - split: the plurality of two or more episodes (and how many episodes beyond one);
  - its segments in any episode;
and, of the run's episodes, how many are mainly about one gold episode, and the share that gold
episode has of them. Label-free runs are judged here only; nothing is tuned on it.
"""
import argparse
import collections

import pyarrow.parquet as pq

UNLABELLED = (None, "M", "X")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--trial", type=int, default=0)
    p.add_argument("--k", type=int, default=5)
    a = p.parse_args()

    label = {(r["key_event"], r["doc_id"], r["seg_idx"]): r["label"]
             for r in pq.read_table(f"{a.corpus}/labels.parquet").to_pylist()}
    gold = collections.defaultdict(set)
    for r in pq.read_table(f"{a.corpus}/gold_episodes.parquet").to_pylist():
        gold[r["key_event"]].add(str(r["episode_id"]))
    labelled = collections.Counter((k[0], v) for k, v in label.items() if v not in UNLABELLED)

    episodes = collections.defaultdict(list)  # (event, episode) -> [(rank, label)]
    for r in pq.read_table(f"{a.run}/assignments.parquet").to_pylist():
        if r["trial"] == a.trial:
            key = (r["key_event"], r["doc_id"], r["seg_idx"])
            episodes[(r["key_event"], r["episode_id"])].append((r["rank"], label.get(key)))
    for m in episodes.values():
        m.sort(key=lambda x: x[0])

    plurality = {}  # episode -> (gold, share of the episode's segments)
    for e, m in episodes.items():
        c = collections.Counter(l for _, l in m if l not in UNLABELLED)
        if c:
            g, n = sorted(c.items(), key=lambda x: (-x[1], x[0]))[0]
            plurality[e] = (g, n / len(m))
    about = collections.Counter((e[0], g) for e, (g, _) in plurality.items())

    s = collections.Counter()
    for event, gs in sorted(gold.items()):
        mine = [m for e, m in episodes.items() if e[0] == event]
        for g in gs:
            if labelled[(event, g)] == 0:
                continue
            s["gold"] += 1
            s["captured"] += any(sum(1 for _, l in m[:a.k] if l == g) * 2 > a.k for m in mine)
            s["about"] += about[(event, g)] > 0
            s["absorbed"] += about[(event, g)] == 0
            s["split"] += about[(event, g)] > 1
            s["extra"] += max(0, about[(event, g)] - 1)
            s["segments"] += labelled[(event, g)]
            s["in episodes"] += sum(1 for m in mine for _, l in m if l == g)
    shares = [sh for _, sh in plurality.values()]
    print(f"run {a.run}, trial {a.trial}: {len(episodes)} episodes for {s['gold']} gold episodes")
    print(f"gold episodes captured by some episode's top {a.k}: {s['captured']}")
    print(f"gold episodes some episode is mainly about: {s['about']}")
    print(f"  of them split (mainly about in 2 or more episodes): {s['split']}, "
          f"{s['extra']} episodes beyond one")
    print(f"gold episodes no episode is mainly about (absorbed or lost): {s['absorbed']}")
    print(f"gold-labelled segments in an episode: {s['in episodes']} of {s['segments']}")
    print(f"episodes mainly about a gold episode: {len(plurality)} of {len(episodes)}; "
          f"that gold episode's share of their segments: median "
          f"{sorted(shares)[len(shares) // 2]:.2f}" if shares else "no episode has a gold label")


if __name__ == "__main__":
    main()
