"""Two studies of fed stories, run as `fed_stories.py oracle` and `fed_stories.py days` (see its
docstring for the commands):
- `oracle` (issue 63): what the articles allow, day by day — the phases k-means finds when told
  the true number of phases, and the recall of a supervised nearest-centroid classifier —
  beside which the follow job's figures are read. Needs numpy (and pyarrow, as `score` does).
- `days`: the date overlap of a run's episode pairs that tell one phase and of those that tell
  two (what crates/method/src/episodes/classification/phases.rs's "told over the same days" test separates).
"""

import csv
import os
import shutil
import sys
from collections import Counter, defaultdict


def kmeans(x, k, rng, starts=10, rounds=50):
    """Lloyd's k-means with k-means++ starts (the lowest inertia of `starts`), numpy only."""
    import numpy as np
    best, best_inertia = None, float("inf")
    for _ in range(starts):
        centres = [x[rng.integers(len(x))]]
        for _ in range(1, k):
            d = np.min(((x[:, None, :] - np.array(centres)[None]) ** 2).sum(-1), axis=1)
            centres.append(x[rng.choice(len(x), p=d / d.sum())] if d.sum() > 0 else x[rng.integers(len(x))])
        c = np.array(centres)
        for _ in range(rounds):
            label = ((x[:, None, :] - c[None]) ** 2).sum(-1).argmin(1)
            new = np.array([x[label == j].mean(0) if (label == j).any() else c[j] for j in range(k)])
            if np.allclose(new, c):
                break
            c = new
        inertia = ((x - c[label]) ** 2).sum()
        if inertia < best_inertia:
            best, best_inertia = label, inertia
    return best


def clusters_found(phase_of, label, scored):
    """The `score` rule with clusters for episodes: the scored phases one cluster holds at least
    half of and is mostly (> 1/2) made of."""
    sizes = Counter(label)
    found = set()
    for p in scored:
        n = sum(1 for q in phase_of if q == p)
        hits = Counter(c for q, c in zip(phase_of, label) if q == p)
        if any(h >= n / 2 and h > sizes[c] / 2 for c, h in hits.items()):
            found.add(p)
    return found


def nearest_centroid_recall(x, phase_of, scored):
    """Mean recall over the scored phases of a leave-one-out nearest-centroid classifier."""
    import numpy as np
    keys = sorted(set(phase_of))
    lab = np.array([keys.index(p) for p in phase_of])
    sums = np.array([x[lab == j].sum(0) for j in range(len(keys))])
    counts = np.array([(lab == j).sum() for j in range(len(keys))], dtype=float)
    right = Counter()
    for i in range(len(x)):
        s, n = sums.copy(), counts.copy()
        s[lab[i]] -= x[i]
        n[lab[i]] -= 1
        c = s / np.maximum(n, 1)[:, None]
        c /= np.linalg.norm(c, axis=1, keepdims=True) + 1e-9
        right[phase_of[i]] += int((c @ x[i]).argmax() == lab[i])
    return sum(right[p] / phase_of.count(p) for p in scored) / len(scored)


def oracle(args, import_cmd, call, min_phase, arrives):
    """`arrives`: the share of a phase's articles that come on one day for it to arrive that day
    (as `daily` counts it, from day 2: day 1 has no previous run)."""
    import numpy as np
    import pyarrow.parquet as pq
    n_days = 0
    while os.path.exists(os.path.join(args.truth_dir, f"day{n_days + 1}.csv")):
        n_days += 1
    if not n_days:
        sys.exit(f"no day1.csv in {args.truth_dir}")
    corpus, logs = os.path.join(args.work, "corpus"), os.path.join(args.work, "logs")
    for d in (corpus, logs):
        shutil.rmtree(d, ignore_errors=True)
    os.makedirs(logs)
    for day in range(1, n_days + 1):
        call(f"day {day} import", import_cmd(args, os.path.join(args.truth_dir, f"day{day}.csv"), corpus, day > 1),
             os.path.join(logs, f"day{day}-import.log"), (0,))
    rows = []
    for name in sorted(os.listdir(corpus)):
        if name.startswith("segments") and name.endswith(".parquet"):
            rows += pq.read_table(os.path.join(corpus, name), columns=["key_event", "source_id", "text"]).to_pylist()
    texts, vectors = os.path.join(args.work, "segments.txt"), os.path.join(args.work, "vectors.parquet")
    lines = "".join(" ".join(r["text"].split()) + "\n" for r in rows)
    same = os.path.exists(vectors) and os.path.exists(texts) and open(texts, encoding="utf-8").read() == lines
    if not same:  # the same segments as the last oracle in this --work: its vectors serve
        with open(texts, "w", encoding="utf-8") as f:
            f.write(lines)
        call("encode", [args.bin, "encode", "--input", texts, "--out", vectors], os.path.join(logs, "encode.log"), (0,))
    t = pq.read_table(vectors)
    v = np.array(t.column(t.num_columns - 1).to_pylist(), dtype=np.float64)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    with open(os.path.join(args.truth_dir, "truth.csv"), newline="", encoding="utf-8") as f:
        truth = {r["url"]: r for r in csv.DictReader(f)}
    by_article = defaultdict(list)
    for i, r in enumerate(rows):
        if r["source_id"] in truth:
            by_article[r["key_event"], r["source_id"]].append(i)
    seen = defaultdict(lambda: defaultdict(list))  # method -> (event, phase) -> found per day
    on_day = defaultdict(list)  # method -> found on its day, for each phase arriving on a day
    per_day = defaultdict(Counter)  # (event, phase) -> day -> articles
    for r in truth.values():
        if r["phase"] != "noise":
            per_day[r["event"], r["phase"]][int(r["day"])] += 1
    rng = np.random.default_rng(0)
    for day in range(1, n_days + 1):
        line = []
        for event in sorted({e for e, _ in by_article}):
            urls = sorted(u for e, u in by_article if e == event and int(truth[u]["day"]) <= day)
            size = Counter(truth[u]["phase"] for u in urls)
            # A phase is scored on its truth rows of days 1..d, as `score` counts them.
            every = Counter(r["phase"] for r in truth.values() if r["event"] == event and int(r["day"]) <= day)
            scored = sorted(p for p, n in every.items() if p != "noise" and n >= min_phase)
            if not scored:
                continue
            x = np.array([v[by_article[event, u]].mean(0) for u in urls])
            x /= np.linalg.norm(x, axis=1, keepdims=True)
            phase_of = [truth[u]["phase"] for u in urls]
            found = {}
            for name, k in (("k", len(scored)), ("k+2", len(scored) + 2)):
                found[name] = clusters_found(phase_of, kmeans(x, min(k, len(x)), rng), scored)
            recall = nearest_centroid_recall(x, phase_of, [p for p in scored if size[p]])
            for name, f in found.items():
                for p in scored:
                    seen[name][event, p].append(p in f)
                    days = per_day[event, p]
                    if day > 1 and sum(days.values()) >= min_phase and days[day] >= arrives * sum(days.values()):
                        on_day[name].append(p in f)
            line.append(f"  {event}: {len(scored)} phases; k-means found {len(found['k'])} (k), "
                        f"{len(found['k+2'])} (k+2); supervised recall {recall:.2f}")
        print(f"--- day {day} (days 1..{day})\n" + "\n".join(line))
    for name in ("k", "k+2"):
        always = sum(all(f) for f in seen[name].values())
        runs = sum(sum(f) for f in seen[name].values())
        print(f"k-means told the true count ({name}): phases found in every daily run {always} of "
              f"{len(seen[name])}; phase-runs found {runs} of {sum(len(f) for f in seen[name].values())}; "
              f"arriving phases found on their day {sum(on_day[name])} of {len(on_day[name])}")


def day_overlap(a, b):
    """Σ_day min of two date histograms, each normalised to 1 (crates/method/src/episodes/classification/phases.rs)."""
    ta, tb = sum(a.values()), sum(b.values())
    if not ta or not tb:
        return 1.0
    return sum(min(n / ta, b.get(d, 0) / tb) for d, n in a.items())


def days_cmd(args):
    """The date overlap of pairs of a run's episodes (trial 0) that tell one phase (their home
    articles' majority phase is the same) and of pairs that tell two, over every --run given
    with its --truth: what phases.rs's "told over the same days" test separates."""
    import pyarrow.parquet as pq
    same, other = [], []
    for truth_path, run in zip(args.truth, args.run):
        with open(truth_path, newline="") as f:
            truth = {r["url"]: r["phase"] for r in csv.DictReader(f)}
        rows = pq.read_table(os.path.join(run, "episode_articles.parquet"),
                             columns=["key_event", "trial", "episode_id", "source_id", "segments", "published"]).to_pylist()
        days, phase = defaultdict(Counter), defaultdict(Counter)
        for r in rows:
            if r["trial"] == 0:
                if r["published"] is not None:
                    days[r["key_event"], r["episode_id"]][r["published"]] += r["segments"]
                phase[r["key_event"], r["episode_id"]][truth.get(r["source_id"], "?")] += r["segments"]
        by_event = defaultdict(list)
        for key in sorted(phase):
            by_event[key[0]].append(key)
        for keys in by_event.values():
            for i, a in enumerate(keys):
                for b in keys[i + 1:]:
                    pa, pb = phase[a].most_common(1)[0][0], phase[b].most_common(1)[0][0]
                    (same if pa == pb and pa != "?" else other).append(day_overlap(days[a], days[b]))

    def pct(v):
        v = sorted(v)
        return " ".join(f"{v[min(len(v) - 1, int(q * len(v)))]:.2f}" for q in (0.1, 0.25, 0.5, 0.75, 0.9)) if v else "-"
    print("date overlap, percentiles 10/25/50/75/90:")
    print(f"  {len(same)} pairs of episodes of one phase: {pct(same)}")
    print(f"  {len(other)} pairs of episodes of two phases: {pct(other)}")
    for cut in (1 / 3, 0.5, 2 / 3):
        print(f"  overlap >= {cut:.2f}: {sum(x >= cut for x in same)} of one phase, {sum(x >= cut for x in other)} of two")
