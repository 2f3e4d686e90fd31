#!/usr/bin/env python3
"""A copy of a dataset folder with a few articles of each event left out (issue 45 item 4).

    scripts/quality/drop_articles.py SRC_DATASET OUT_DATASET --share 0.03 --seed S

For each `<theme>/<event>/` of SRC (segments.txt, doc_dates.txt, groundtruth.tsv, episodes.tsv):
a seeded draw of `share` of its articles (at least one) is removed from segments.txt and
doc_dates.txt, and groundtruth.tsv keeps the lines whose text is still in the event. The rest of
each event is unchanged, so a run on it shows how much the episodes move when a feed misses a
few articles.
"""
import argparse
import os
import random
import shutil


def articles(path):
    """segments.txt as a list of articles, each a list of lines."""
    out, cur = [], []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line.strip():
            if cur:
                out.append(cur)
                cur = []
        else:
            cur.append(line)
    if cur:
        out.append(cur)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--share", type=float, default=0.03)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    dropped = total = 0
    for theme in sorted(os.listdir(a.src)):
        tdir = os.path.join(a.src, theme)
        if not os.path.isdir(tdir):
            continue
        for event in sorted(os.listdir(tdir)):
            edir = os.path.join(tdir, event)
            seg = os.path.join(edir, "segments.txt")
            if not os.path.isfile(seg):
                continue
            odir = os.path.join(a.out, theme, event)
            os.makedirs(odir, exist_ok=True)
            docs = articles(seg)
            rng = random.Random(f"{a.seed}/{theme}/{event}")
            n = max(1, round(a.share * len(docs)))
            gone = set(rng.sample(range(len(docs)), n))
            dropped += n
            total += len(docs)
            kept = [d for i, d in enumerate(docs) if i not in gone]
            with open(os.path.join(odir, "segments.txt"), "w", encoding="utf-8") as f:
                f.write("\n\n".join("\n".join(d) for d in kept) + "\n")
            dates = os.path.join(edir, "doc_dates.txt")
            if os.path.isfile(dates):
                lines = [l for l in open(dates, encoding="utf-8").read().split("\n") if l.strip()]
                if len(lines) != len(docs):
                    raise SystemExit(f"{dates}: {len(lines)} dates for {len(docs)} articles")
                with open(os.path.join(odir, "doc_dates.txt"), "w", encoding="utf-8") as f:
                    f.write("\n".join(l for i, l in enumerate(lines) if i not in gone) + "\n")
            texts = {line for d in kept for line in d}
            gt = os.path.join(edir, "groundtruth.tsv")
            if os.path.isfile(gt):
                with open(os.path.join(odir, "groundtruth.tsv"), "w", encoding="utf-8") as f:
                    for line in open(gt, encoding="utf-8"):
                        if line.rstrip("\n").partition("\t")[2] in texts:
                            f.write(line)
            ep = os.path.join(edir, "episodes.tsv")
            if os.path.isfile(ep):
                shutil.copyfile(ep, os.path.join(odir, "episodes.tsv"))
    print(f"left out {dropped} of {total} articles; wrote {a.out}")


if __name__ == "__main__":
    main()
