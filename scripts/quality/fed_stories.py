#!/usr/bin/env python3
"""Invented news stories fed in daily batches, as a scraper hands them over, with each article's
true phase kept apart; a scorer of an `epimine run` against those phases; and a daily driver.

Each story is one invented key event of some KIND (flood, wildfire, shooting, coup, earthquake,
chemical blast) told in 4-7 of its kind's phases in date order. Each phase has its own templated
sentences (names, places and numbers drawn per story) and shares 2-4 templates with the next one;
phase sizes run 15-150 articles (every story has one under 30 and one over 90). About 20% of
articles recap an earlier phase in one paragraph; ~10% per story are off-topic local news keyed
to the story (phase `noise`). The templates live in fed_stories_kinds.py beside this file.
Same seed, same bytes. `generate` needs only the standard library; `score` and `daily` need
pyarrow (python3 -m venv v && v/bin/pip install pyarrow).

    python3 scripts/quality/fed_stories.py generate --seed 1 --out /tmp/fed [--stories 4] [--days 3]
        writes /tmp/fed/day1.csv .. dayD.csv (columns event,url,date,headline,body; one batch per
        third of each story's timeline), all.csv, and truth.csv
        (event,url,phase,phase_index,second_phase,day); prints a summary to stderr.
    python3 scripts/quality/fed_stories.py score --truth /tmp/fed/truth.csv --run RUNDIR \
        [--days 1,2] [--corpus CORPUS] [--json] [--level episode|phase]
        a phase (>= 15 articles among the counted truth rows) is FOUND when one episode (trial
        0) holds >= half its articles and the phase is > 50% of that episode's articles (its
        purity). --days counts only those batches; --corpus only urls imported into CORPUS.
        --level phase judges the run's phases instead (episodes.parquet's phase_id: the
        episodes of one phase count as one); --level either counts the phases found by one or
        the other.
    python3 scripts/quality/fed_stories.py daily --truth-dir /tmp/fed --bin target/release/epimine \
        --work /tmp/fedwork [--background BG] [--level episode|phase] [-- extra run args]
        per day d: import dayd.csv into WORK/corpus (--append from day 2), run into WORK/run
        (the same --out every day, so episodes are followed), score days 1..d. From day 2 it
        also prints the phases that ARRIVE that day (>= 2/3 of all their >= 15 articles come in
        that day's batch), whether each is TOLD ON ITS DAY (one episode holds >= half of it, is
        mostly it, and has status `new`), TOLD THE DAY BEFORE and grown on its day (that
        episode has the stable id of a previous run's episode mostly it: the development was
        told while still small, and today's articles grow it) or what missed it (in no episode
        and the left-out reasons of its segments, split, absorbed, or the status it got), and
        how many `new` flags are honest (>= half of the episode's articles came that day); the
        last lines count both ways of being told. The run-folder readers are in
        fed_stories_tables.py beside this file. WORK/corpus,
        WORK/run and WORK/logs are made afresh. Exit 0 unless a command fails.
    python3 scripts/quality/fed_stories.py fresh --truth-dir /tmp/fed1 [--truth-dir /tmp/fed2 ...] \
        --bin target/release/epimine --work /tmp/fedfresh [--background BG] [-- extra run args]
        per draw: import its all.csv into WORK/DRAW/corpus, one run into WORK/DRAW/run, scored
        at the phase and the episode level (WORK/DRAW/score-*.txt); prints each draw's totals
        and their sum, the phases of <= 30 articles apart. WORK/DRAW is made afresh.
    python3 scripts/quality/fed_stories.py days --truth T1 --run R1 [--truth T2 --run R2 ...]
        the date overlap (Σ_day min of the two normalised date histograms) of every pair of a
        run's episodes that tell one phase and of those that tell two, as percentiles.
    python3 scripts/quality/fed_stories.py oracle --truth-dir /tmp/fed --bin target/release/epimine \
        --work /tmp/fedoracle
        what the articles allow, day by day (days 1..d as `daily` sees them): imports the days
        as `daily` does, encodes every segment once (`epimine encode`, all-MiniLM-L6-v2), and
        makes each article one vector (the mean of its segments'). Per event it prints the
        phases FOUND (the `score` rule, clusters as episodes) by k-means told the TRUE number
        of phases (k = the scored phases, and k + 2 to leave room for the off-topic articles;
        best of 10 k-means++ starts, fixed seed), and the mean recall of a SUPERVISED
        nearest-centroid classifier (leave one out) — whether the phases are apart at all in
        the vectors. Last line: the phases found in every daily run by each. Needs numpy.
"""

import argparse
import csv
import datetime
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fed_stories_kinds import (  # noqa: E402  (the templates, beside this file)
    BYLINES, COUNTRY_A, COUNTRY_B, FIRST, KINDS, LAST, NOISE, PLACES, TOWN_A, TOWN_B)
import fed_stories_studies  # noqa: E402  (`oracle` and `days`, beside this file)
from fed_stories_tables import (  # noqa: E402  (the run folder's tables, beside this file)
    homes, id_meanings, left_out_reasons, mostly_before, new_flags, statuses, told_before)

MIN_PHASE = 15  # phases smaller than this (among the counted rows) are not scored
SMALL_PHASE = 30  # `fresh` counts the phases of at most this many articles apart


# --pure: each phase told in its own words only (no template shared with the next phase, no
# story-wide background sentence, no recap of an earlier phase), as the feed was.
PURE = False


def build_story(rng, kind, year, taken):
    """One story: names, places, the drawn phases (key, headlines, templates, sizes, dates)."""
    spec = KINDS[kind]
    while True:
        town = (rng.choice(COUNTRY_A) + rng.choice(COUNTRY_B)) if kind == "coup" else \
            rng.choice(TOWN_A) + rng.choice(TOWN_B)
        if town not in taken:
            taken.add(town)
            break
    feature = rng.choice(TOWN_A) + rng.choice(TOWN_B) if kind == "coup" else rng.choice(spec["features"])
    firsts, lasts = rng.sample(FIRST, 6), rng.sample(LAST, 6)
    names = [f"{r} {f} {l}" for r, f, l in zip(spec["roles"], firsts, lasts)]
    all_phases = spec["phases"]
    chosen = sorted(rng.sample(range(len(all_phases)), rng.randint(4, len(all_phases))))
    k = len(chosen)
    sizes = [rng.randint(15, 150) for _ in range(k)]
    small, big = rng.sample(range(k), 2)
    sizes[small], sizes[big] = rng.randint(15, 29), rng.randint(91, 150)
    day = datetime.date(year, 1, 1) + datetime.timedelta(days=rng.randint(0, 300))
    phases = []
    for i, pi in enumerate(chosen):
        key, headlines, own = all_phases[pi]
        if i:
            day = phases[-1]["days"][-1] + datetime.timedelta(days=0 if rng.random() < 0.35 else 1)
        days = [day + datetime.timedelta(days=d) for d in range(rng.randint(1, 3))]
        pool = list(own)
        if i + 1 < k and not PURE:  # share 2-4 templates with the next phase
            pool += rng.sample(all_phases[chosen[i + 1]][2], rng.randint(2, 4))
        phases.append(dict(key=key, headlines=headlines, own=own, pool=pool, size=sizes[i], days=days))
    start = phases[0]["days"][0]
    return dict(kind=kind, town=town, feature=feature, names=names, places=rng.sample(PLACES, 5),
                event=f"{town.lower()}_{kind}_{year}", phases=phases, first=start,
                last=max(d for p in phases for d in p["days"]),
                start=f"{start.day} {start.strftime('%B')}", background=spec["background"].split("|"))


def fill(rng, story, template):
    s = template.format(who=rng.choice(story["names"]), n=rng.randint(12, 900), k=rng.randint(2, 9),
                        place=rng.choice(story["places"]), town=story["town"], feature=story["feature"],
                        start=story["start"])
    return s[0].upper() + s[1:]


def make_article(rng, story, phase_i, i):
    """One article of phase `phase_i` (None: noise): (row, truth)."""
    if phase_i is None:
        headlines, templates = (t.split("|") for t in rng.choice(NOISE))
        date = story["first"] + datetime.timedelta(days=rng.randint(0, (story["last"] - story["first"]).days))
        pools, second, key = [templates] * rng.randint(3, 5), "", "noise"
    else:
        phase = story["phases"][phase_i]
        headlines, date, key = phase["headlines"], rng.choice(phase["days"]), phase["key"]
        pools = []
        for j in range(rng.randint(3, 7)):
            pools.append(story["background"] if j and not PURE and rng.random() < 0.12 else phase["pool"])
        second = ""
        if phase_i and not PURE and rng.random() < 0.26:  # one paragraph recaps an earlier phase
            earlier = story["phases"][rng.randrange(phase_i)]
            pools[rng.randrange(1, len(pools))], second = earlier["own"], earlier["key"]
    decks, paragraphs = {}, []
    for pool in pools:
        deck = decks.setdefault(id(pool), [])
        sentences = []
        for _ in range(1 if pool is story["background"] else rng.randint(1, 3)):
            if not deck:
                deck.extend(rng.sample(pool, len(pool)))
            sentences.append(fill(rng, story, deck.pop()))
        paragraphs.append(" ".join(sentences))
    if rng.random() < 0.4:
        paragraphs.append(rng.choice(BYLINES).format(town=story["town"]))
    headline = fill(rng, story, rng.choice(headlines))
    slug = re.sub(r"[^a-z0-9]+", "-", headline.lower()).strip("-")
    url = f"https://news.example.org/{story['event']}/{date.isoformat()}/{slug}-{i}"
    return [story["event"], url, date.isoformat(), headline, "\n\n".join(paragraphs)], (key, phase_i, second)


def generate(args):
    global PURE
    PURE = args.pure
    rng = random.Random(args.seed)
    kinds = sorted(KINDS)
    order = rng.sample(kinds, len(kinds))
    taken, stories = set(), []
    for s in range(args.stories):
        kind = order[s] if s < len(order) else rng.choice(kinds)
        stories.append(build_story(rng, kind, 2025, taken))
    os.makedirs(args.out, exist_ok=True)
    batches = [[] for _ in range(args.days)]
    for story in stories:
        jobs = [p for p, ph in enumerate(story["phases"]) for _ in range(ph["size"])]
        jobs += [None] * round(len(jobs) / 9)  # noise: ~10% of the story's articles
        rng.shuffle(jobs)
        span = (story["last"] - story["first"]).days + 1
        story["per_day"] = defaultdict(Counter)
        for i, phase_i in enumerate(jobs):
            row, (key, idx, second) = make_article(rng, story, phase_i, i)
            day = (datetime.date.fromisoformat(row[2]) - story["first"]).days * args.days // span + 1
            story["per_day"][key][day] += 1
            batches[day - 1].append((row, [row[0], row[1], key, -1 if idx is None else idx, second, day]))
    for batch in batches:
        rng.shuffle(batch)
    header = ["event", "url", "date", "headline", "body"]
    with open(os.path.join(args.out, "all.csv"), "w", newline="", encoding="utf-8") as fa, \
            open(os.path.join(args.out, "truth.csv"), "w", newline="", encoding="utf-8") as ft:
        wa, wt = csv.writer(fa, lineterminator="\n"), csv.writer(ft, lineterminator="\n")
        wa.writerow(header)
        wt.writerow(["event", "url", "phase", "phase_index", "second_phase", "day"])
        for d, batch in enumerate(batches, 1):
            with open(os.path.join(args.out, f"day{d}.csv"), "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f, lineterminator="\n")
                w.writerow(header)
                w.writerows(row for row, _ in batch)
            wa.writerows(row for row, _ in batch)
            wt.writerows(truth for _, truth in batch)
    for story in stories:
        n = sum(p["size"] for p in story["phases"])
        print(f"{story['event']} ({story['kind']}, {story['first']}..{story['last']}): {n} articles + "
              f"{sum(story['per_day']['noise'].values())} noise", file=sys.stderr)
        for i, p in enumerate(story["phases"]):
            days = ", ".join(f"d{d}:{c}" for d, c in sorted(story["per_day"][p["key"]].items()))
            print(f"  {i} {p['key']:<14}{p['size']:>4}  {p['days'][0]}..{p['days'][-1]}  {days}", file=sys.stderr)
    print("batches: " + ", ".join(f"day{d}.csv {len(b)}" for d, b in enumerate(batches, 1))
          + f"; written to {args.out}", file=sys.stderr)


def score(truth, run, days=None, corpus=None, level="episode"):
    """The figures of one run (trial 0) against truth.csv's rows of `days` (all: None) whose url
    is in `corpus` (any: None): a dict (see --json). Episode articles that are truth rows left
    out this way are left out of the episodes too. `level="phase"` judges the run's phases
    (episodes.parquet's `phase_id`: an episode's segments count for its phase) instead of its
    episodes."""
    import pyarrow.parquet as pq
    with open(truth, newline="", encoding="utf-8") as f:
        every = list(csv.DictReader(f))
    truth_rows = [r for r in every if days is None or int(r["day"]) in days]
    if corpus:
        urls = set()
        for name in sorted(os.listdir(corpus)):
            if name.startswith("segments") and name.endswith(".parquet"):
                urls.update(pq.read_table(os.path.join(corpus, name), columns=["source_id"]).column(0).to_pylist())
        truth_rows = [r for r in truth_rows if r["url"] in urls]
    path = os.path.join(run, "episode_articles.parquet")
    rows = pq.read_table(path, columns=["key_event", "trial", "episode_id", "source_id", "segments"]).to_pylist() \
        if os.path.exists(path) else []
    counted = {r["url"] for r in truth_rows}
    left_out = {r["url"] for r in every} - counted
    # An article's home: the episode holding most of its segments (ties: the lower id). A phase
    # is judged on the articles whose home an episode is; "in any" counts an article in every
    # episode that holds one of its segments.
    unit = {}  # (event, episode) -> the phase it counts for (level "phase")
    path = os.path.join(run, "episodes.parquet")
    if level == "phase":
        for r in pq.read_table(path, columns=["key_event", "trial", "episode_id", "phase_id"]).to_pylist():
            if r["trial"] == 0:
                unit[r["key_event"], r["episode_id"]] = r["phase_id"]
    anywhere = defaultdict(set)  # event -> urls in some episode
    held = defaultdict(int)  # (event, url, episode or phase) -> segments
    for r in rows:
        if r["trial"] == 0 and r["source_id"] not in left_out:
            anywhere[r["key_event"]].add(r["source_id"])
            e = unit.get((r["key_event"], r["episode_id"]), r["episode_id"])
            held[r["key_event"], r["source_id"], e] += r["segments"]
    best = {}  # (event, url) -> (segments, -episode)
    for (event, url, e), n in held.items():
        best[event, url] = max(best.get((event, url), (0, float("-inf"))), (n, -e))
    members = defaultdict(lambda: defaultdict(set))  # event -> episode -> urls at home there
    for (event, url), (_, neg) in best.items():
        members[event][-neg].add(url)
    titles, stable = {}, {}
    path = os.path.join(run, "episodes.parquet")
    if os.path.exists(path):
        t = pq.read_table(path)
        cols = [c for c in ("key_event", "trial", "episode_id", "title", "stable_id") if c in t.column_names]
        for r in t.select(cols).to_pylist():
            if r["trial"] == 0:
                titles[r["key_event"], r["episode_id"]] = r.get("title", "")
                if r.get("stable_id") is not None:
                    stable[r["key_event"], r["episode_id"]] = r["stable_id"]
    path = os.path.join(run, "lineage.parquet")
    if os.path.exists(path):
        for r in pq.read_table(path, columns=["key_event", "trial", "stable_id", "episode_id"]).to_pylist():
            if r["trial"] == 0 and r["episode_id"] is not None:
                stable.setdefault((r["key_event"], r["episode_id"]), r["stable_id"])
    phases = defaultdict(lambda: defaultdict(set))  # event -> (index, phase) -> urls
    for r in truth_rows:
        if r["phase"] != "noise":
            phases[r["event"]][int(r["phase_index"]), r["phase"]].add(r["url"])
    stories, found_purity, n_phases, lost, n_eps = [], [], 0, [], 0
    for event in sorted(phases):
        eps = members.get(event, {})
        in_any = anywhere.get(event, set())
        out = []
        for (idx, key), urls in sorted(phases[event].items()):
            item = dict(phase=key, phase_index=idx, size=len(urls), covered=len(urls & in_any) / len(urls),
                        best_episode=None, stable_id=None, title=None, share=0.0, purity=0.0, found=False,
                        scored=len(urls) >= MIN_PHASE)
            cands = []
            for e, m in eps.items():
                hit = len(urls & m)
                if hit:
                    share, purity = hit / len(urls), hit / len(m)
                    ok = share >= 0.5 and purity > 0.5
                    cands.append(((ok, purity if ok else share, purity, -e), e, share, purity, ok))
            if cands:
                _, e, share, purity, ok = max(cands)
                item.update(best_episode=e, stable_id=stable.get((event, e)), title=titles.get((event, e)),
                            share=share, purity=purity, found=ok and item["scored"])
            if item["scored"]:
                n_phases += 1
                if item["found"]:
                    found_purity.append(item["purity"])
                if not urls & in_any:
                    lost.append(f"{event}/{key}")
            out.append(item)
        n_eps += len(eps)
        stories.append(dict(event=event, n_episodes=len(eps), n_phases=sum(i["scored"] for i in out), phases=out))
    totals = dict(level=level, phases=n_phases, found=len(found_purity), episodes=n_eps, lost=lost,
                  mean_purity=sum(found_purity) / len(found_purity) if found_purity else None,
                  min_purity=min(found_purity) if found_purity else None)
    return dict(run=run, articles=len(truth_rows), stories=stories, totals=totals)


def fmt(x):
    return "-" if x is None else f"{x:.2f}"


def print_score(res, out=sys.stdout):
    for s in res["stories"]:
        print(f"== {s['event']}: {s['n_episodes']} episodes for {s['n_phases']} phases (trial 0)", file=out)
        print(f"   {'phase':<16}{'size':>5}{'in any':>8}{'episode':>9}{'stable':>7}{'share':>7}{'purity':>8}"
              f"  found  title", file=out)
        for p in s["phases"]:
            found = ("yes" if p["found"] else "no") if p["scored"] else f"(<{MIN_PHASE})"
            ep = "-" if p["best_episode"] is None else f"e{p['best_episode']}"
            st = "-" if p["stable_id"] is None else f"#{p['stable_id']}"
            print(f"   {p['phase_index']} {p['phase']:<14}{p['size']:>5}{fmt(p['covered']):>8}{ep:>9}{st:>7}"
                  f"{fmt(p['share']):>7}{fmt(p['purity']):>8}  {found:<6} {(p['title'] or '')[:50]}", file=out)
    t = res["totals"]
    print(f"TOTAL: phases found {t['found']}/{t['phases']}; purity of found mean {fmt(t['mean_purity'])} min "
          f"{fmt(t['min_purity'])}; {t['episodes']} {t.get('level', 'episode')}s for {t['phases']} phases; entirely lost: "
          f"{len(t['lost'])}{' (' + ', '.join(t['lost']) + ')' if t['lost'] else ''}", file=out)


def parse_days(text):
    return None if not text else {int(d) for d in text.split(",")}


def score_cmd(args):
    if args.level == "either":
        # A phase found by the run's episodes or by its phases (a reader has both).
        found = set()
        for level in ("episode", "phase"):
            res = score(args.truth, args.run, parse_days(args.days), args.corpus, level)
            found |= {(s["event"], p["phase"]) for s in res["stories"] for p in s["phases"] if p["found"]}
        print(f"TOTAL: phases found at either level {len(found)}/{res['totals']['phases']}")
        return
    res = score(args.truth, args.run, parse_days(args.days), args.corpus, args.level)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print_score(res)


def import_cmd(args, articles, corpus, append=False):
    """`epimine import` of a draw's CSV (columns event,url,date,headline,body) into `corpus`."""
    return [args.bin, "import", "--articles", articles, "--out", corpus,
            "--key-event-column", "event", "--id-column", "url", "--published-column", "date",
            "--title-column", "headline", "--text-column", "body"] + (["--append"] if append else [])


def run_cmd(args, corpus, run, extra):
    """`epimine run` of `corpus` into `run` with --workers, --background and the extra args."""
    cmd = [args.bin, "run", "--corpus", corpus, "--out", run, "-w", str(args.workers)]
    return cmd + (["--background", args.background] if args.background else []) + extra


def call(name, cmd, log, ok):
    """Runs `cmd` into `log`; exits naming the step and the log when its status is not in `ok`."""
    print(f"{name}: {' '.join(cmd)}", flush=True)
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc not in ok:
        with open(log) as f:
            print(f.read()[-3000:], file=sys.stderr)
        sys.exit(f"{name} exited {rc} (log: {log})")


def fresh(args, extra):
    """One run of all of each draw's articles (all.csv), scored at both levels; the phases found
    summed over the draws, with the phases of <= SMALL_PHASE articles apart."""
    for draw in args.truth_dir:
        for f in ("all.csv", "truth.csv"):
            if not os.path.isfile(os.path.join(draw, f)):
                sys.exit(f"no {f} in {draw} (a folder written by `generate`)")
    sums = defaultdict(int)
    for draw in args.truth_dir:
        name = os.path.basename(os.path.normpath(draw))
        work = os.path.join(args.work, name)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        corpus, run = os.path.join(work, "corpus"), os.path.join(work, "run")
        call(f"{name} import", import_cmd(args, os.path.join(draw, "all.csv"), corpus),
             os.path.join(work, "import.log"), (0,))
        call(f"{name} run", run_cmd(args, corpus, run, extra), os.path.join(work, "run.log"), (0, 3))
        truth = os.path.join(draw, "truth.csv")
        found, line = {}, []
        for level in ("phase", "episode"):
            res = score(truth, run, level=level)
            with open(os.path.join(work, f"score-{level}.txt"), "w") as f:
                print_score(res, out=f)
            t = res["totals"]
            found[level] = {(st["event"], p["phase"]) for st in res["stories"] for p in st["phases"] if p["found"]}
            line.append(f"{level}s {t['found']}/{t['phases']} (purity mean {fmt(t['mean_purity'])} min "
                        f"{fmt(t['min_purity'])}, lost {len(t['lost'])})")
            sums[level] += t["found"]
            sums[f"lost {level}"] += len(t["lost"])
            if level == "phase":
                sums["phases"] += t["phases"]
                for st in res["stories"]:
                    for p in st["phases"]:
                        if p["scored"]:
                            band = "small" if p["size"] <= SMALL_PHASE else "larger"
                            sums[band] += 1
                            sums[f"{band} found"] += p["found"]
        either = len(found["phase"] | found["episode"])
        sums["either"] += either
        print(f"--- {name}: as {'; as '.join(line)}; either {either}")
    print(f"=== {len(args.truth_dir)} draws: phases found as phases {sums['phase']}/{sums['phases']} "
          f"(of <= {SMALL_PHASE} articles {sums['small found']}/{sums['small']}, larger "
          f"{sums['larger found']}/{sums['larger']}), as episodes {sums['episode']}, at either level "
          f"{sums['either']}; entirely lost {sums['lost phase']}")


ARRIVES = 2 / 3  # a phase arrives on a day when at least this share of its articles come that day


def told_on_day(res, run, corpus, truth_rows, day, yesterday):
    """The phases (>= MIN_PHASE articles in all) that arrive on `day` (>= ARRIVES of all their
    articles, every batch counted, come that day) and, for each, whether the run of that day
    tells it: one episode holds >= half of its articles so far, is mostly it (the `score` rule)
    and has status `new` (the issue's rule: told "new"), or has the stable id of the previous
    run's episode that was mostly it ([`mostly_before`]: told the day before, while still small,
    and grown on its day: "grown"). `truth_rows`: every truth row; `yesterday`: the previous
    run's [`homes`]. Returns a list of (event, phase, size, told, why), told "new", "grown" or
    False."""
    every = defaultdict(Counter)  # (event, phase) -> day -> articles
    for r in truth_rows:
        if r["phase"] != "noise":
            every[r["event"], r["phase"]][int(r["day"])] += 1
    st, ids = statuses(run), statuses(run, "stable_id")
    out = []
    for s in res["stories"]:
        for p in s["phases"]:
            days = every[s["event"], p["phase"]]
            total = sum(days.values())
            if total < MIN_PHASE or days[day] < ARRIVES * total:
                continue
            status = st.get((s["event"], p["best_episode"])) if p["best_episode"] is not None else None
            # `found` asks MIN_PHASE articles so far; a phase that arrives with fewer (the rest
            # come later) is told by the same rule on what is there.
            found = p["best_episode"] is not None and p["share"] >= 0.5 and p["purity"] > 0.5
            if found and status == "new":
                out.append((s["event"], p["phase"], total, "new", ""))
                continue
            mostly = mostly_before(yesterday, truth_rows, s["event"], p["phase"], day)
            if found and mostly and ids.get((s["event"], p["best_episode"])) in mostly[2]:
                out.append((s["event"], p["phase"], total, "grown", f"told the day before, {status} on its day"))
                continue
            if found:
                why = f"status {status}"
            elif p["best_episode"] is None:
                urls = {r["url"] for r in truth_rows if r["event"] == s["event"] and r["phase"] == p["phase"]
                        and int(r["day"]) <= day}
                why = "in no episode: " + left_out_reasons(run, corpus, urls, s["event"])
            elif p["share"] < 0.5:
                why = f"split: best episode holds {p['share']:.2f} (status {status})"
            else:
                why = f"absorbed: purity {p['purity']:.2f} in e{p['best_episode']} (status {status})"
            out.append((s["event"], p["phase"], total, False, why))
    return out


def daily(args, extra):
    n_days = 0
    while os.path.exists(os.path.join(args.truth_dir, f"day{n_days + 1}.csv")):
        n_days += 1
    if not n_days:
        sys.exit(f"no day1.csv in {args.truth_dir}")
    corpus, run, logs = (os.path.join(args.work, x) for x in ("corpus", "run", "logs"))
    for d in (corpus, run, logs):
        shutil.rmtree(d, ignore_errors=True)
    os.makedirs(logs)
    truth = os.path.join(args.truth_dir, "truth.csv")
    with open(truth, newline="", encoding="utf-8") as f:
        every = list(csv.DictReader(f))
    seen, purities, lines = {}, [], []
    meaning, changed = {}, set()  # (event, stable id) -> its phase so far; ids whose phase changed
    arriving, told, honest, flagged, seconds, partly, already = 0, 0, 0, 0, 0.0, 0, 0
    grown = 0  # arriving phases told the day before and grown on their day under the same id
    yesterday = {}
    for day in range(1, n_days + 1):
        imp = import_cmd(args, os.path.join(args.truth_dir, f"day{day}.csv"), corpus, append=day > 1)
        cmd = run_cmd(args, corpus, run, extra)
        call(f"day {day} import", imp, os.path.join(logs, f"day{day}-import.log"), (0,))
        t0 = time.time()
        call(f"day {day} run", cmd, os.path.join(logs, f"day{day}-run.log"), (0, 3))
        took = time.time() - t0
        seconds += took
        res = score(truth, run, set(range(1, day + 1)), level=args.level)
        print(f"--- day {day} (days 1..{day}, run {took:.0f}s)")
        print_score(res)
        for s in res["stories"]:
            for p in s["phases"]:
                if p["scored"]:
                    seen.setdefault((s["event"], p["phase"]), []).append(p["found"])
                    if p["found"]:
                        purities.append(p["purity"])
        for key, phase in id_meanings(run, every).items():
            if meaning.setdefault(key, phase) != phase:
                changed.add(key)
                meaning[key] = phase
        t = res["totals"]
        line = (f"day {day}: found {t['found']}/{t['phases']}, purity mean {fmt(t['mean_purity'])} min "
                f"{fmt(t['min_purity'])}, {t['episodes']} episodes, lost {len(t['lost'])}")
        if day > 1:
            phases = told_on_day(res, run, corpus, every, day, yesterday)
            h, n, bad = new_flags(run, [r for r in every if int(r["day"]) <= day], day)
            arriving += len(phases)
            told += sum(p[3] == "new" for p in phases)
            grown += sum(p[3] == "grown" for p in phases)
            honest += h
            flagged += n
            line += (f"; arriving {len(phases)}, told on their day {sum(p[3] == 'new' for p in phases)}"
                     f" (and {sum(p[3] == 'grown' for p in phases)} told the day before, grown); "
                     f"new flags honest {h}/{n}")
            for event, phase, size, ok, why in phases:
                before = told_before(yesterday, every, event, phase, day)
                mostly = mostly_before(yesterday, every, event, phase, day)
                if not ok and before[0]:
                    partly += 1
                if not ok and mostly:
                    already += 1
                said = (f"; an episode of {mostly[0]} articles, {mostly[1]:.2f} of them this phase"
                        if mostly else "; no episode mostly it")
                said_ok = {"new": "told", "grown": "told the day before, grown on its day"}.get(ok)
                print(f"    arrives day {day}: {event}/{phase} ({size}): {said_ok or 'MISSED, ' + why}"
                      f"; the day before: {before[0]} of its articles there, in {before[1]} episode(s){said}")
            for event, episode, share in bad:
                print(f"    new but not news: {event} e{episode} ({share:.2f} of its articles arrived)")
        lines.append(line + f"; run {took:.1f}s")
        yesterday = homes(run)
    print("\n".join(["=== summary"] + lines))
    always = sum(all(v) for v in seen.values())
    print(f"phases found in every daily run: {always} of {len(seen)}; purity min/mean "
          f"{fmt(min(purities) if purities else None)}/{fmt(sum(purities) / len(purities) if purities else None)}")
    print(f"arriving phases told on their day: {told} of {arriving}; honest new flags: {honest} of {flagged}; "
          f"ids whose majority phase changed: {len(changed)} of {len(meaning)}; runs {seconds:.1f}s in all")
    print(f"arriving phases told on their day or, still small, the day before by the episode that "
          f"grows on their day (same id): {told + grown} of {arriving} ({grown} so)")
    print(f"missed phases partly there the day before (some of their articles in the previous run's "
          f"episodes): {partly} of {arriving - told}; of them told the day before (an episode of "
          f"at least 5 articles, over half of them the phase's): {already}")


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        argv, extra = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="write day batches, all.csv and truth.csv")
    g.add_argument("--seed", type=int, required=True)
    g.add_argument("--pure", action="store_true", help="each phase in its own words only: no shared templates, background or recaps")
    g.add_argument("--out", required=True)
    g.add_argument("--stories", type=int, default=4)
    g.add_argument("--days", type=int, default=3)
    s = sub.add_parser("score", help="score a run folder against truth.csv")
    s.add_argument("--truth", required=True)
    s.add_argument("--run", required=True)
    s.add_argument("--days", help="only these batches count, e.g. 1,2")
    s.add_argument("--corpus", help="only urls imported into this corpus count")
    s.add_argument("--json", action="store_true")
    s.add_argument("--level", choices=("episode", "phase", "either"), default="episode",
                   help="judge the run's episodes (default), its phases (episodes.parquet's phase_id), "
                        "or count the phases found at either level")
    o = sub.add_parser("days", help="date overlap of a run's episode pairs, one phase against two")
    o.add_argument("--truth", action="append", required=True, help="truth.csv (repeat, one per --run)")
    o.add_argument("--run", action="append", required=True, help="run folder (repeat)")
    d = sub.add_parser("daily", help="import, run and score day by day")
    d.add_argument("--truth-dir", required=True)
    d.add_argument("--bin", default="target/release/epimine")
    d.add_argument("--work", required=True)
    d.add_argument("--background")
    d.add_argument("--workers", type=int, default=2)
    d.add_argument("--level", choices=("episode", "phase"), default="episode")
    orc = sub.add_parser("oracle", help="what k-means told the true phase count finds, day by day")
    orc.add_argument("--truth-dir", required=True)
    orc.add_argument("--bin", default="target/release/epimine")
    orc.add_argument("--work", required=True)
    fr = sub.add_parser("fresh", help="import and run each draw's all.csv once, score both levels")
    fr.add_argument("--truth-dir", action="append", required=True, help="a draw's folder (repeat)")
    fr.add_argument("--bin", default="target/release/epimine")
    fr.add_argument("--work", required=True)
    fr.add_argument("--background")
    fr.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    if args.cmd == "generate":
        generate(args)
    elif args.cmd == "score":
        score_cmd(args)
    elif args.cmd == "days":
        if len(args.truth) != len(args.run):
            ap.error("give one --truth per --run")
        fed_stories_studies.days_cmd(args)
    elif args.cmd == "fresh":
        fresh(args, extra)
    elif args.cmd == "oracle":
        fed_stories_studies.oracle(args, import_cmd, call, MIN_PHASE, ARRIVES)
    else:
        daily(args, extra)


if __name__ == "__main__":
    main()
