"""Synthetic articles for the import benchmark (scripts/bench/bench-import.sh), and the reference reader.

gen N OUT.parquet [EVENTS]: N articles over EVENTS key events (default N/1000), in the columns
`epimine import --articles` reads by default (key_event, id, published, title, text), shaped like
the development set's articles: ~13 paragraphs of 3 sentences (~600 words, ~3.9 KB), plus a
byline paragraph that repeats across an event's articles (dropped as boilerplate). Sentences come
from a fixed pool (seeded), so texts differ but generation is quick; written in row groups of
50,000 articles (bounded memory).
read FILE.parquet: reads the whole file with pyarrow (the I/O reference) and prints rows/s.
"""

import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema(
    [
        ("key_event", pa.string()),
        ("id", pa.string()),
        ("published", pa.string()),
        ("title", pa.string()),
        ("text", pa.string()),
    ]
)


def gen(n, out, events):
    rng = np.random.default_rng(16)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, size=rng.integers(2, 10))) for _ in range(20000)]
    zipf = 1.0 / np.arange(1, len(vocab) + 1)
    zipf /= zipf.sum()
    lengths = rng.integers(8, 24, size=200000)
    drawn = rng.choice(len(vocab), size=int(lengths.sum()), p=zipf)
    ends = np.cumsum(lengths)
    pool = [
        " ".join(vocab[i] for i in drawn[e - n : e]).capitalize() + "."
        for n, e in zip(lengths, ends)
    ]
    bylines = [f"(Staff/Reporter {i})" for i in range(20)]
    per_event = -(-n // events)
    writer = pq.ParquetWriter(out, SCHEMA)
    start = time.time()
    chunk = 50000
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        rows = {k: [] for k in SCHEMA.names}
        picks = rng.integers(0, len(pool), size=(hi - lo, 39))
        event_of = np.arange(lo, hi) // per_event
        start_of = np.array(
            [np.datetime64(f"2024-{1 + (e % 10):02d}-01T00:00:00") for e in range(event_of[0], event_of[-1] + 1)]
        )
        published = start_of[event_of - event_of[0]] + rng.integers(0, 60 * 86400, size=hi - lo).astype("timedelta64[s]")
        published = np.datetime_as_string(published)
        for j, i in enumerate(range(lo, hi)):
            event = i // per_event
            p = picks[j]
            paragraphs = [" ".join(pool[k] for k in p[m : m + 3]) for m in range(0, 39, 3)]
            paragraphs.append(bylines[(i * 7) % 20])
            rows["key_event"].append(f"event_{event:05d}")
            rows["id"].append(f"e{event}-a{i}")
            rows["published"].append(published[j] + "Z")
            rows["title"].append(pool[p[0]][:80])
            rows["text"].append("\n\n".join(paragraphs))
        writer.write_table(pa.table(rows, schema=SCHEMA))
        print(f"  {hi} of {n} articles ({time.time() - start:.0f} s)", file=sys.stderr)
    writer.close()


def read(path):
    start = time.time()
    t = pq.read_table(path)
    secs = time.time() - start
    text = pa.compute.sum(pa.compute.binary_length(t["text"])).as_py()
    print(f"pyarrow read_table: {t.num_rows} rows, {text / 1e6:.0f} MB of text in {secs:.2f} s: {t.num_rows / secs:,.0f} rows/s")


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        n = int(sys.argv[2])
        gen(n, sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else max(1, n // 1000))
    elif sys.argv[1] == "read":
        read(sys.argv[2])
    else:
        sys.exit(__doc__)
