#!/usr/bin/env python3
"""What gold-episode recall the sentence vectors allow when the gold labels place the episodes
(issue 45): oracles, not methods.

    scripts/quality/recall_ceiling.py texts --corpus CORPUS --out SEGMENTS.txt
    epimine encode --input SEGMENTS.txt --out VECTORS.parquet [--model DIR]
    scripts/quality/recall_ceiling.py score --corpus CORPUS --vectors VECTORS.parquet [--split FILE]

`texts` writes CORPUS/segments.parquet's texts one a line, in its row order; `epimine encode`
turns them into sentence vectors (row i = segment i). `score` reads CORPUS/labels.parquet and
CORPUS/gold_episodes.parquet and prints, per part of the split (scripts/quality/quality-split.txt) and
per theme, the mean over events of the share of gold episodes hit as `epimine eval` counts a hit
(≥ 3 of an episode's top 5 segments carry that gold episode's label; method.md §7) when each gold
episode G is given an episode made with G's labels (an oracle no label-free method has):

  feasible          G has ≥ 3 labelled segments at all (no method can hit the others);
  centre, all       G's centre (the mean of its labelled segments' unit vectors); its top 5 are
                    the event's segments nearest that centre;
  centre, held out  the centre of a random half of G's labelled segments; its top 5 are the
                    nearest of the event's other segments (the half it was made from left out);
  partition         every segment joins its nearest gold centre (as a clustering that found the
                    gold centres would place it); an episode's top 5 are its members nearest
                    its centre;
  partition, no M/X   the same over the segments labelled with one gold episode only (as if
                    the segments about several episodes or none, `M` and `X`, could be told
                    apart and left out);
  partition, density  the same members ranked by core density (the mean cosine to their 10
                    most similar members; the default job's rank);
  k-means from gold   spherical k-means (Lloyd, 50 rounds) started at the gold centres: where
                    the vectors' own cluster structure takes those centres; ranked as partition.

Each is run once (held out: seed 1). Nothing is tuned on it.

    scripts/quality/recall_ceiling.py rerank --corpus CORPUS --vectors VECTORS.parquet --run RUN

keeps each episode of RUN/assignments.parquet (trial 0) with its members and ranks them again
by core density (as the run does: a check that the vectors are the run's), by the cosine to the
members' mean, by the cosine to the mean of their densest 10% / 25% / 50%, and by core density
plus the cosine to the mean; prints 5-F1 and gold-episode recall as `epimine eval` counts them,
per part. Needs numpy and pyarrow.

Cost: `score` takes 1.7 s and 350 MB on the development set (12,824 segments), 20 s and 1.6 GB on
it tiled ten times within each event: linear but for core density, quadratic in an episode's
members in time (as `classify::core_density` is), computed in row blocks so its memory is linear.
"""
import argparse
import collections
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

UNLABELLED = (None, "M", "X")
K = 5


def majority(order, label):
    """The label that more than half of the top K of `order` carry (None when it has fewer than
    K segments or no label has a majority), as `epimine eval` counts a hit."""
    if len(order) < K:
        return None
    top, n = collections.Counter(label[i] for i in order[:K]).most_common(1)[0]
    return top if 2 * n > K else None


def hit(top, g, label):
    return majority(top, label) == g


def ranked(members, vectors, centre):
    return by_score(members, vectors[members] @ centre)


def core_density(members, vectors, neighbours=10):
    """Each member's mean cosine to its `neighbours` most similar members (`classify::core_density`)."""
    if len(members) < 2:
        return np.zeros(len(members))
    x = vectors[members]
    n = min(neighbours, len(members) - 1)
    density = np.empty(len(members))
    for start in range(0, len(members), 1024):  # rows in blocks: memory linear in the members
        sims = x[start:start + 1024] @ x.T
        sims[np.arange(len(sims)), np.arange(start, start + len(sims))] = -np.inf
        density[start:start + len(sims)] = np.partition(sims, -n, axis=1)[:, -n:].mean(axis=1)
    return density


def by_score(members, score):
    return [members[k] for k in np.argsort(-score, kind="stable")]


def by_density(members, vectors):
    return by_score(members, core_density(members, vectors))


def unit(v):
    return v / np.linalg.norm(v)


def partition_hits(idx, vectors, centres, gs, label, rank):
    cm = np.stack(centres)
    assign = np.argmax(vectors[idx] @ cm.T, axis=1)
    hits = 0
    for a, g in enumerate(gs):
        members = [idx[k] for k in np.where(assign == a)[0]]
        order = rank(members, cm[a])
        hits += hit(order, g, label)
    return hits


def event_shares(idx, vectors, label, gold, rng):
    """The share of `gold` hit by each oracle, over the event's segment rows `idx`."""
    n = len(gold)
    mem = {g: [i for i in idx if label[i] == g] for g in gold}
    present = [g for g in gold if mem[g]]
    centre = {g: unit(vectors[mem[g]].mean(axis=0)) for g in present}
    out = {"feasible": sum(len(mem[g]) >= 3 for g in gold) / n}
    out["centre, all"] = sum(hit(ranked(idx, vectors, centre[g]), g, label) for g in present) / n
    held = 0
    for g in present:
        m = mem[g][:]
        rng.shuffle(m)
        fit = set(m[: len(m) // 2])
        if not fit:
            continue
        c = unit(vectors[sorted(fit)].mean(axis=0))
        held += hit([i for i in ranked(idx, vectors, c) if i not in fit], g, label)
    out["centre, held out"] = held / n
    centres = [centre[g] for g in present]
    out["partition"] = partition_hits(
        idx, vectors, centres, present, label, lambda m, c: ranked(m, vectors, c)) / n
    single = [i for i in idx if label[i] not in UNLABELLED]
    out["partition, no M/X"] = partition_hits(
        single, vectors, centres, present, label, lambda m, c: ranked(m, vectors, c)) / n
    out["partition, density"] = partition_hits(
        idx, vectors, centres, present, label, lambda m, c: by_density(m, vectors)) / n
    km = np.stack(centres) if centres else np.zeros((0, vectors.shape[1]))
    x = vectors[idx]
    for _ in range(50):
        assign = np.argmax(x @ km.T, axis=1)
        new = np.stack([unit(x[assign == a].mean(axis=0)) if (assign == a).any() else km[a]
                        for a in range(len(km))])
        if np.allclose(new, km):
            break
        km = new
    out["k-means from gold"] = partition_hits(
        idx, vectors, list(km), present, label, lambda m, c: ranked(m, vectors, c)) / n
    return out


def load(a):
    """The corpus's segments, their unit vectors (row i = segment i), each segment's label, the
    gold episodes by event, the split's part and each event's theme."""
    segs = pq.read_table(f"{a.corpus}/segments.parquet",
                         columns=["key_event", "theme", "doc_id", "seg_idx"]).to_pylist()
    table = pq.read_table(a.vectors)
    if table.num_rows != len(segs):
        raise SystemExit(f"{a.vectors}: {table.num_rows} rows for {len(segs)} segments of "
                         f"{a.corpus}/segments.parquet (encode `texts`' output)")
    order = np.argsort(np.asarray(table.column("idx").to_pylist()), kind="stable")
    emb = table.column("embedding").combine_chunks()
    vectors = emb.flatten().to_numpy().astype(np.float64).reshape(len(emb), -1)[order]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    labels = {(r["key_event"], r["doc_id"], r["seg_idx"]): r["label"]
              for r in pq.read_table(f"{a.corpus}/labels.parquet").to_pylist()}
    gold = collections.defaultdict(list)
    for r in pq.read_table(f"{a.corpus}/gold_episodes.parquet").to_pylist():
        gold[r["key_event"]].append(str(r["episode_id"]))
    part = {}
    with open(a.split) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                p, _theme, event = line.split()
                part[event] = p
    theme = {s["key_event"]: s["theme"] for s in segs}
    label = [labels.get((s["key_event"], s["doc_id"], s["seg_idx"])) for s in segs]
    return segs, vectors, label, {e: sorted(g) for e, g in gold.items()}, part, theme


def score(a):
    segs, vectors, label, gold, part, theme = load(a)
    events = collections.defaultdict(list)
    for i, s in enumerate(segs):
        events[s["key_event"]].append(i)
    rng = random.Random(1)
    shares = {e: event_shares(idx, vectors, label, gold[e], rng)
              for e, idx in sorted(events.items()) if gold.get(e)}
    measures = list(next(iter(shares.values())))
    groups = [("all", list(shares))]
    groups += [(p, [e for e in shares if part.get(e) == p]) for p in ("explore", "locked")]
    groups += [(t, [e for e in shares if theme[e] == t]) for t in sorted(set(theme.values()))]
    print(f"{len(shares)} events, {sum(len(gold[e]) for e in shares)} gold episodes; "
          "gold-episode recall ×100 (mean over events)")
    print("| oracle | " + " | ".join(g for g, _ in groups) + " |")
    print("|---|" + "---|" * len(groups))
    for m in measures:
        cells = [100 * sum(shares[e][m] for e in es) / len(es) if es else float("nan")
                 for _, es in groups]
        print(f"| {m} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")
    if a.per_event:
        for e in shares:
            print(e, part.get(e, "-"), " ".join(f"{100 * shares[e][m]:.0f}" for m in measures))


def rerankers(vectors):
    def density(m):
        return by_density(m, vectors)

    def centre(m):
        return ranked(m, vectors, unit(vectors[m].mean(axis=0)))

    def core(share):
        def rank(m):
            dense = by_density(m, vectors)[: max(1, int(np.ceil(share * len(m))))]
            return ranked(m, vectors, unit(vectors[dense].mean(axis=0)))
        return rank

    def blend(m):
        return by_score(m, core_density(m, vectors) + vectors[m] @ unit(vectors[m].mean(axis=0)))

    return {"core density (the run's)": density, "cosine to the mean": centre,
            "densest 10%'s mean": core(0.1), "densest 25%'s mean": core(0.25),
            "densest 50%'s mean": core(0.5), "core density + cosine to the mean": blend}


def rerank(a):
    segs, vectors, label, gold, part, theme = load(a)
    row = {(s["key_event"], s["doc_id"], s["seg_idx"]): i for i, s in enumerate(segs)}
    episodes = collections.defaultdict(list)
    for r in pq.read_table(f"{a.run}/assignments.parquet",
                           columns=["key_event", "trial", "episode_id", "doc_id", "seg_idx"]).to_pylist():
        if r["trial"] == 0:
            key = (r["key_event"], r["doc_id"], r["seg_idx"])
            if key not in row:
                raise SystemExit(f"{a.run}/assignments.parquet: segment {key} is not in {a.corpus}")
            episodes[(r["key_event"], r["episode_id"])].append(row[key])
    by_event = collections.defaultdict(list)
    for (e, _), members in sorted(episodes.items()):
        by_event[e].append(sorted(members))
    print("| rank | 5-F1 all / explore / locked | explore ND / P / T | recall all / explore / locked |")
    print("|---|---|---|---|")
    themes = sorted(set(theme.values()))
    for name, rank in rerankers(vectors).items():
        f1, rec = {}, {}
        for e in gold:
            hits, counted = set(), 0
            for members in by_event.get(e, []):
                if len(members) < K:
                    continue
                counted += 1
                g = majority(rank(members), label)
                if g in gold[e]:
                    hits.add(g)
            p = len(hits) / counted if counted else 0.0
            rec[e] = len(hits) / len(gold[e])
            f1[e] = 2 * p * rec[e] / (p + rec[e]) if p + rec[e] else 0.0

        def mean(d, keep):
            es = [e for e in d if keep(e)]
            return 100 * sum(d[e] for e in es) / len(es) if es else float("nan")

        parts = [lambda e: True, lambda e: part.get(e) == "explore", lambda e: part.get(e) == "locked"]
        print(f"| {name} | " + " / ".join(f"{mean(f1, k):.1f}" for k in parts) + " | "
              + " / ".join(f"{mean(f1, lambda e, t=t: part.get(e) == 'explore' and theme[e] == t):.1f}"
                           for t in themes) + " | "
              + " / ".join(f"{mean(rec, k):.1f}" for k in parts) + " |")


def texts(a):
    segs = pq.read_table(f"{a.corpus}/segments.parquet", columns=["text"]).column("text")
    with open(a.out, "w") as f:
        for t in segs.to_pylist():
            f.write(" ".join(t.split()) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("texts", help="write the corpus's segment texts, one a line")
    t.add_argument("--corpus", required=True)
    t.add_argument("--out", required=True)
    s = sub.add_parser("score", help="print the oracles' gold-episode recall")
    s.add_argument("--corpus", required=True)
    s.add_argument("--vectors", required=True)
    s.add_argument("--split", default="scripts/quality/quality-split.txt")
    s.add_argument("--per-event", action="store_true")
    r = sub.add_parser("rerank", help="re-rank a run's episodes' members; print 5-F1 and recall")
    r.add_argument("--corpus", required=True)
    r.add_argument("--vectors", required=True)
    r.add_argument("--run", required=True)
    r.add_argument("--split", default="scripts/quality/quality-split.txt")
    a = p.parse_args()
    try:
        {"texts": texts, "score": score, "rerank": rerank}[a.cmd](a)
    except (OSError, KeyError, pa.ArrowException) as e:
        raise SystemExit(f"recall_ceiling.py {a.cmd}: {e}")


if __name__ == "__main__":
    main()
