#!/usr/bin/env python3
"""Speed of the sentence encoder: burn (CPU, burn-flex) against PyTorch (sentence-transformers),
same model, same texts, same batch size, same thread count, side by side on one machine.

    scripts/encoder-pyenv.sh python scripts/bench_encoders.py [--model DIR] [--n 2000]
        [--threads 2] [--batch-size 32] [--data ../shared/data/epimine]

Texts: the first N non-blank lines of the dataset's segments.txt files (in path order).
Tokens: every text's token count after truncation at max_seq_length, special tokens included
(padding excluded), the same count on both sides. Each engine runs in its own process (its peak
resident memory is its own) after one warm-up batch. Prints both and the ratio burn / PyTorch.
The engines alternate for --rounds rounds and each reports its best round (the machine may be
shared; the fastest round is the one least disturbed), with the CPU time it used. PyTorch runs
each round twice, with OpenMP's default (spinning) and passive wait policies, and keeps the
faster: spinning threads lose badly on a busy machine.
Not a test: a measurement.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def segments(data, n):
    out = []
    for dirpath, dirnames, filenames in os.walk(data):
        dirnames.sort()
        if "segments.txt" in filenames:
            with open(os.path.join(dirpath, "segments.txt"), encoding="utf-8") as f:
                out.extend(line.rstrip("\n") for line in f if line.strip())
        if len(out) >= n:
            break
    return out[:n]


def torch_worker(model, texts_file, batch_size, threads):
    import torch

    torch.set_num_threads(threads)
    from sentence_transformers import SentenceTransformer

    with open(texts_file, encoding="utf-8") as f:
        texts = f.read().split("\n")
    st = SentenceTransformer(model, device="cpu")
    tok = st.tokenizer
    tokens = sum(min(len(tok(t)["input_ids"]), st.max_seq_length) for t in texts)
    st.encode(texts[:batch_size], batch_size=batch_size)  # warm-up
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    emb = st.encode(texts, batch_size=batch_size, convert_to_numpy=True)
    seconds = time.perf_counter() - start
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    assert emb.shape[0] == len(texts)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({
        "engine": f"pytorch {torch.__version__}",
        "texts": len(texts),
        "tokens": tokens,
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 2),
        "tokens_per_s": round(tokens / seconds, 1),
        "peak_rss_mib": round(peak, 1),
        "threads": str(torch.get_num_threads()),
    }))


def main():
    ap = argparse.ArgumentParser()
    default_model = os.path.join(
        os.environ.get("EPIMINE_MODELS", os.path.expanduser("~/.cache/epimine/models")),
        "all-MiniLM-L6-v2",
    )
    ap.add_argument("--model", default=default_model)
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "epimine"))
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--torch-worker", nargs=4, metavar=("MODEL", "TEXTS", "BATCH", "THREADS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        m, t, b, th = args.torch_worker
        return torch_worker(m, t, int(b), int(th))

    texts = segments(args.data, args.n)
    fd, texts_file = tempfile.mkstemp(suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(texts))
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads),
               MKL_NUM_THREADS=str(args.threads), RUST_LOG="warn")
    if not args.skip_build:
        subprocess.run(["cargo", "build", "--release", "--example", "bench_encoder"], cwd=ROOT,
                       check=True)
    exe = os.path.join(ROOT, "target", "release", "examples", "bench_encoder")
    print(f"{len(texts)} texts, batch size {args.batch_size}, {args.threads} threads, "
          f"model {args.model}", flush=True)
    print(f"load average before: {os.getloadavg()}", flush=True)
    burn_runs, torch_runs = [], []
    for _ in range(args.rounds):
        burn_runs.append(json.loads(subprocess.run(
            [exe, args.model, texts_file, str(args.batch_size)], env=env, check=True,
            capture_output=True, text=True).stdout))
        print(json.dumps(burn_runs[-1]), flush=True)
        for policy in ("ACTIVE", "PASSIVE"):
            out = subprocess.run([sys.executable, __file__, "--torch-worker", args.model,
                                  texts_file, str(args.batch_size), str(args.threads)],
                                 env=dict(env, OMP_WAIT_POLICY=policy), check=True,
                                 capture_output=True, text=True).stdout
            torch_runs.append(dict(json.loads(out.strip().splitlines()[-1]),
                                   omp_wait_policy=policy))
            print(json.dumps(torch_runs[-1]), flush=True)
    print(f"load average after: {os.getloadavg()}", flush=True)
    os.remove(texts_file)
    burn = max(burn_runs, key=lambda r: r["tokens_per_s"])
    torch_res = max(torch_runs, key=lambda r: r["tokens_per_s"])
    assert burn["tokens"] == torch_res["tokens"], "token counts differ"
    ratio = burn["tokens_per_s"] / torch_res["tokens_per_s"]
    cpu_ratio = (torch_res["cpu_seconds"] / burn["cpu_seconds"])
    print(f"best of {args.rounds}: burn {burn['tokens_per_s']:.0f} tokens/s "
          f"({burn['cpu_seconds']:.1f} CPU s, peak {burn['peak_rss_mib']:.0f} MiB), "
          f"PyTorch {torch_res['tokens_per_s']:.0f} tokens/s "
          f"({torch_res['cpu_seconds']:.1f} CPU s, peak {torch_res['peak_rss_mib']:.0f} MiB)")
    print(f"ratio burn / PyTorch: {ratio:.2f} in tokens/s, {cpu_ratio:.2f} in tokens per CPU second")


if __name__ == "__main__":
    sys.exit(main())
