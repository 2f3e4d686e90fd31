"""Prototype harness: episode methods over cached embeddings, scored with eval's rule, LOTO."""
import json, os, sys, random, itertools, math
import numpy as np
import pyarrow.parquet as pq

CORPUS = "target/quality/corpus"
EMB = "target/proto/emb"  # written by scripts/proto/embed.py


def load():
    seg = pq.read_table(os.path.join(CORPUS, "segments.parquet")).to_pylist()
    lab = pq.read_table(os.path.join(CORPUS, "labels.parquet")).to_pylist()
    gold = pq.read_table(os.path.join(CORPUS, "gold_episodes.parquet")).to_pylist()
    ev = {}
    for s in seg:
        e = ev.setdefault(s["key_event"], {"theme": s["theme"], "segs": [], "labels": {}, "gold": set()})
        e["segs"].append((s["doc_id"], s["seg_idx"], s["text"], s["doc_date"]))
    for l in lab:
        ev[l["key_event"]]["labels"][(l["doc_id"], l["seg_idx"])] = l["label"]
    for g in gold:
        ev[g["key_event"]]["gold"].add(g["episode_id"])
    for name, e in ev.items():
        p = os.path.join(EMB, name + ".parquet")
        if os.path.exists(p):
            t = pq.read_table(p).to_pydict()
            X = np.array(t["embedding"], dtype=np.float64)
            order = np.argsort(t["idx"])
            e["X"] = X[order]
    return ev


def score(e, episodes, k=5):
    """episodes: list of lists of segment indices, ranked."""
    hit = set()
    counted = 0
    for eps in episodes:
        if len(eps) < k:
            continue
        counted += 1
        votes = {}
        for i in eps[:k]:
            d, s = e["segs"][i][0], e["segs"][i][1]
            l = e["labels"].get((d, s))
            try:
                gid = int(l)
            except (TypeError, ValueError):
                continue
            if gid in e["gold"]:
                votes[gid] = votes.get(gid, 0) + 1
        for gid, n in votes.items():
            if 2 * n > k:
                hit.add(gid)
    p = len(hit) / counted if counted else 0.0
    r = len(hit) / len(e["gold"]) if e["gold"] else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f, counted, len(hit)


def boot(vals, n=2000, seed=7):
    rng = random.Random(seed)
    m = [sum(rng.choice(vals) for _ in vals) / len(vals) for _ in range(n)]
    m.sort()
    return m[int(0.05 * n)], m[int(0.95 * n) - 1]


def loto(results, ev):
    """results: config -> {event: f1}. Returns out-of-theme per-event f1 dict and choices."""
    themes = sorted({e["theme"] for e in ev.values()})
    out = {}
    chosen = {}
    for held in themes:
        train = [n for n in ev if ev[n]["theme"] != held]
        test = [n for n in ev if ev[n]["theme"] == held]
        best = max(results, key=lambda c: (np.mean([results[c][n] for n in train]), c))
        chosen[held] = best
        for n in test:
            out[n] = results[best][n]
    return out, chosen


def report(name, per_event, ev):
    themes = sorted({e["theme"] for e in ev.values()})
    vals = [per_event[n] for n in sorted(per_event)]
    lo, hi = boot(vals)
    th = " / ".join(f"{100*np.mean([per_event[n] for n in per_event if ev[n]['theme']==t]):.1f}" for t in themes)
    print(f"{name:<40} mean {100*np.mean(vals):5.1f} [{100*lo:.1f}, {100*hi:.1f}]  {th}")
