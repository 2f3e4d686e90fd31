"""What the daily measure of fed_stories.py (`daily`) reads of a run folder: statuses, stable
ids, each article's episodes, the honest share of `new` flags, and what the previous run told.
Needs pyarrow."""

import os
from collections import Counter, defaultdict

def statuses(run, column="status"):
    """(event, episode_id) -> status (or another `column`) of trial 0 (episodes.parquet)."""
    import pyarrow.parquet as pq
    path = os.path.join(run, "episodes.parquet")
    if not os.path.exists(path):
        return {}
    t = pq.read_table(path, columns=["key_event", "trial", "episode_id", column])
    return {(r["key_event"], r["episode_id"]): r[column] for r in t.to_pylist() if r["trial"] == 0}


def new_flags(run, truth_rows, day):
    """The run's `new` episodes (trial 0) and how many are honest: at least half of the episode's
    articles came in batch `day`. Returns (honest, flagged, [dishonest (event, episode, share)])."""
    import pyarrow.parquet as pq
    st = statuses(run)
    arrived = {r["url"] for r in truth_rows if int(r["day"]) == day}
    path = os.path.join(run, "episode_articles.parquet")
    if not os.path.exists(path):
        return 0, 0, []
    urls = defaultdict(set)
    for r in pq.read_table(path, columns=["key_event", "trial", "episode_id", "source_id"]).to_pylist():
        if r["trial"] == 0:
            urls[r["key_event"], r["episode_id"]].add(r["source_id"])
    honest, flagged, bad = 0, 0, []
    for key, status in sorted(st.items()):
        if status != "new" or not urls.get(key):
            continue
        flagged += 1
        share = len(urls[key] & arrived) / len(urls[key])
        if share >= 0.5:
            honest += 1
        else:
            bad.append((key[0], key[1], share))
    return honest, flagged, bad


def id_meanings(run, truth_rows):
    """(event, stable_id) -> the phase most of its articles (trial 0) belong to."""
    import pyarrow.parquet as pq
    path = os.path.join(run, "episode_articles.parquet")
    if not os.path.exists(path):
        return {}
    phase = {r["url"]: r["phase"] for r in truth_rows}
    votes = defaultdict(Counter)
    for r in pq.read_table(path, columns=["key_event", "trial", "stable_id", "source_id"]).to_pylist():
        if r["trial"] == 0 and r["stable_id"] is not None and r["source_id"] in phase:
            votes[r["key_event"], r["stable_id"]][phase[r["source_id"]]] += 1
    return {k: max(v.items(), key=lambda kv: (kv[1], kv[0]))[0] for k, v in votes.items()}


def left_out_reasons(run, corpus, urls, event):
    """The most common reason (left_out.parquet) among the segments of `urls` of `event`."""
    import pyarrow.parquet as pq
    docs = set()
    for name in sorted(os.listdir(corpus)):
        if name.startswith("segments") and name.endswith(".parquet"):
            for r in pq.read_table(os.path.join(corpus, name), columns=["key_event", "doc_id", "source_id"]).to_pylist():
                if r["key_event"] == event and r["source_id"] in urls:
                    docs.add(r["doc_id"])
    path = os.path.join(run, "left_out.parquet")
    if not os.path.exists(path):
        return "-"
    reasons = Counter(r["reason"] for r in pq.read_table(path, columns=["key_event", "trial", "doc_id", "reason"]).to_pylist()
                      if r["trial"] == 0 and r["key_event"] == event and r["doc_id"] in docs)
    return ", ".join(f"{k} {n}" for k, n in reasons.most_common(2)) or "-"


def homes(run):
    """(event, url) -> the set of episodes (trial 0, by stable id) holding that article in the
    run's tables."""
    import pyarrow.parquet as pq
    path = os.path.join(run, "episode_articles.parquet")
    out = defaultdict(set)
    if os.path.exists(path):
        for r in pq.read_table(path, columns=["key_event", "trial", "stable_id", "source_id"]).to_pylist():
            if r["trial"] == 0:
                out[r["key_event"], r["source_id"]].add(r["stable_id"])
    return out


def told_before(yesterday, truth_rows, event, phase, day):
    """How many of `phase`'s articles before `day` the previous run held in an episode, and in
    how many episodes: a phase partly told the day before can only grow old episodes."""
    held = [yesterday.get((event, r["url"]), set()) for r in truth_rows
            if r["event"] == event and r["phase"] == phase and int(r["day"]) < day]
    held = [h for h in held if h]
    return len(held), len(set().union(*held)) if held else 0


def mostly_before(yesterday, truth_rows, event, phase, day):
    """The previous run's episode most made of `phase` (of at least 5 articles, over half of them
    the phase's): (its articles, the phase's share, the stable ids of every such episode), or None. A phase such an episode told the
    day before was found then: today's articles grow it (`grown`), and a `new` episode of them
    would say a development is new that the previous run already told."""
    phase_of = {r["url"]: r["phase"] for r in truth_rows if r["event"] == event and int(r["day"]) < day}
    mix = defaultdict(lambda: [0, 0])
    for (e, url), eps in yesterday.items():
        if e != event or url not in phase_of:
            continue
        for ep in eps:
            mix[ep][0] += 1
            mix[ep][1] += phase_of[url] == phase
    mostly = {ep: (n, k / n) for ep, (n, k) in mix.items() if n >= 5 and k / n > 0.5}
    best = max(mostly.values(), key=lambda x: (x[1], x[0]), default=None)
    return best + (set(mostly),) if best else None
