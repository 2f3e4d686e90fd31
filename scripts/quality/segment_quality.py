"""The two halves of scripts/quality/segment-quality.sh (see there): write the development set as
articles, and compare our segments with the original ones (boundaries; labels that follow text).

  segment_quality.py articles DATASET_DIR space|line OUT.jsonl
  segment_quality.py compare ORIGINAL_CORPUS OUR_CORPUS
"""

import datetime
import json
import os
import sys
from collections import defaultdict


def read_articles(event_dir):
    text = open(os.path.join(event_dir, "segments.txt"), encoding="utf-8").read()
    articles, current = [], []
    for line in text.split("\n"):
        if line.strip():
            current.append(line)
        elif current:
            articles.append(current)
            current = []
    if current:
        articles.append(current)
    dates = []
    path = os.path.join(event_dir, "doc_dates.txt")
    if os.path.exists(path):
        dates = [l.strip() for l in open(path, encoding="utf-8") if l.strip()]
    return articles, dates


def iso(date):
    if "/" in date:
        m, d, y = date.split("/")
        return f"{int(y):04d}-{int(m):02d}-{int(d):02d}"
    return date


def write_articles(dataset, join, out):
    sep = " " if join == "space" else "\n"
    n = 0
    with open(out, "w", encoding="utf-8") as f:
        for theme in sorted(os.listdir(dataset)):
            for event in sorted(os.listdir(os.path.join(dataset, theme))):
                articles, dates = read_articles(os.path.join(dataset, theme, event))
                for i, segs in enumerate(articles):
                    row = {"key_event": event, "theme": theme, "id": f"{i:05d}",
                           "text": sep.join(segs)}
                    if dates:
                        row["published"] = iso(dates[i])
                    f.write(json.dumps(row) + "\n")
                    n += 1
    print(f"{n} articles written to {out} (segments joined by {join!r})")


def by_article(table, key):
    """{(event, article key): [(seg_idx, text)]} sorted by seg_idx."""
    out = defaultdict(list)
    cols = table.to_pydict()
    for i in range(table.num_rows):
        out[(cols["key_event"][i], key(cols, i))].append((cols["seg_idx"][i], cols["text"][i]))
    for v in out.values():
        v.sort()
    return out


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def compare(original_dir, ours_dir):
    import pyarrow as pa
    import pyarrow.parquet as pq

    orig = pq.read_table(os.path.join(original_dir, "segments.parquet"))
    ours = pq.read_table(os.path.join(ours_dir, "segments.parquet"))
    labels = pq.read_table(os.path.join(original_dir, "labels.parquet")).to_pydict()
    label_of = {(labels["key_event"][i], labels["doc_id"][i], labels["seg_idx"][i]): labels["label"][i]
                for i in range(len(labels["label"]))}
    orig_docs = by_article(orig, lambda c, i: c["doc_id"][i])
    # Our source_id is the original article index; keep our doc_id beside it.
    our_docs = by_article(ours, lambda c, i: (int(c["source_id"][i]), c["doc_id"][i]))
    tp = fp = fn = 0
    exact = 0
    new_labels = {"key_event": [], "doc_id": [], "seg_idx": [], "label": []}
    lengths = [len(t) for t in ours.column("text").to_pylist()]
    dropped_words = total_words = 0
    for (event, (src, our_doc)), segs in sorted(our_docs.items()):
        original = orig_docs[(event, src)]
        # Word positions of the original: word -> original segment index.
        words, owner = [], []
        bounds_orig = set()
        for k, (_, text) in enumerate(original):
            w = text.split()
            words.extend(w)
            owner.extend([k] * len(w))
            bounds_orig.add(len(words))
        bounds_orig.discard(len(words))
        total_words += len(words)
        # Align ours (a subsequence: boilerplate may be gone) greedily.
        pos = 0
        bounds_ours = set()
        for seg_idx, text in segs:
            counts = defaultdict(int)
            for w in text.split():
                while pos < len(words) and words[pos] != w:
                    pos += 1
                    dropped_words += 1
                if pos < len(words):
                    counts[owner[pos]] += 1
                    pos += 1
            bounds_ours.add(pos)
            if counts:
                best = max(sorted(counts), key=lambda k: counts[k])
                label = label_of.get((event, src, best))
                if label is not None:
                    new_labels["key_event"].append(event)
                    new_labels["doc_id"].append(our_doc)
                    new_labels["seg_idx"].append(seg_idx)
                    new_labels["label"].append(label)
        dropped_words += len(words) - pos
        bounds_ours.discard(len(words))
        bounds_ours.discard(pos)
        tp += len(bounds_ours & bounds_orig)
        fp += len(bounds_ours - bounds_orig)
        fn += len(bounds_orig - bounds_ours)
        exact += bounds_ours == bounds_orig
    p = tp / max(1, tp + fp)
    r = tp / max(1, tp + fn)
    f1 = 2 * p * r / max(1e-12, p + r)
    print(f"articles: {len(our_docs)} ours, {len(orig_docs)} original; "
          f"segments: {ours.num_rows} ours, {orig.num_rows} original")
    print(f"boundaries: precision {p:.3f}, recall {r:.3f}, F1 {f1:.3f} "
          f"(tp {tp}, fp {fp}, fn {fn}); articles cut exactly as the original: "
          f"{exact / max(1, len(our_docs)):.1%}")
    ol = [len(t) for t in orig.column("text").to_pylist()]
    print(f"segment length (characters) ours: median {quantile(lengths, .5)}, 10% {quantile(lengths, .1)}, "
          f"90% {quantile(lengths, .9)}; original: median {quantile(ol, .5)}, 10% {quantile(ol, .1)}, "
          f"90% {quantile(ol, .9)}")
    print(f"words dropped (boilerplate): {dropped_words} of {total_words} ({dropped_words / max(1, total_words):.2%})")
    schema = pa.schema([
        pa.field("key_event", pa.string(), nullable=False),
        pa.field("doc_id", pa.uint32(), nullable=False),
        pa.field("seg_idx", pa.uint32(), nullable=False),
        pa.field("label", pa.string(), nullable=False),
    ])
    pq.write_table(pa.table(new_labels, schema=schema), os.path.join(ours_dir, "labels.parquet"))
    gold = pq.read_table(os.path.join(original_dir, "gold_episodes.parquet"))
    pq.write_table(gold, os.path.join(ours_dir, "gold_episodes.parquet"))
    print(f"labels following text: {len(new_labels['label'])} of our segments labelled "
          f"({len(label_of)} original segments were)")


if __name__ == "__main__":
    if sys.argv[1] == "articles":
        write_articles(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
