#!/usr/bin/env python3
"""Speed of the sentence encoder: burn (CPU, burn-flex) against PyTorch (sentence-transformers),
same model, same texts, same batch size, same thread count, side by side on one machine.

    scripts/ci/encoder-pyenv.sh python scripts/bench/bench_encoders.py [--model DIR] [--n 2000]
        [--threads 1,2] [--batch-size 32] [--path native|avx2] [--int8]
        [--data ../shared/data/epimine]

Texts: the first N non-blank lines of the dataset's segments.txt files (in path order).
Tokens: every text's token count after truncation at max_seq_length, special tokens included
(padding excluded), the same count on both sides. Each engine runs in its own process (its peak
resident memory is its own) after one warm-up batch. Prints both and the ratio burn / PyTorch.
The engines alternate for --rounds rounds and each reports its best round (the machine may be
shared; the fastest round is the one least disturbed), with the CPU time it used. PyTorch runs
each round twice, with OpenMP's default (spinning) and passive wait policies, and keeps the
faster: spinning threads lose badly on a busy machine.
Padding share: positions the forward passes compute beyond the real tokens, over the real
tokens, in each engine's own batching (burn: its `Encoder::positions`; sentence-transformers:
texts sorted by character length, `batch_size` at a time, each padded to its longest).
SIMD path: `--path native` (default) builds with the default features, so gemm uses AVX-512
where the CPU has it; `--path avx2` builds with `--no-default-features` (into
target/bench-avx2), which forces the AVX2 path on an AVX-512 machine. burn's JSON line names
the path it ran (`simd`). PyTorch picks its own kernels (set ATEN_CPU_CAPABILITY=avx2 in the
environment to force its AVX2 path too).
--int8 adds a third engine each round: burn with the int8 linear layers (`encoder.int8`), whose
line also gives the cosine of its embeddings to burn's f32 ones (`cos_min`, `cos_mean`).
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
    lengths = [min(len(tok(t)["input_ids"]), st.max_seq_length) for t in texts]
    tokens = sum(lengths)
    # sentence-transformers' batching: sorted by character length, longest first.
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    padded = sum(max(lengths[i] for i in order[b:b + batch_size]) * len(order[b:b + batch_size])
                 for b in range(0, len(order), batch_size))
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
        "padding_share": round(padded / tokens - 1, 4),
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
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    ap.add_argument("--path", choices=("native", "avx2"), default="native")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--int8", action="store_true", help="also run burn with int8 linear layers")
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
    target = os.path.join(ROOT, "target") if args.path == "native" else os.path.join(
        ROOT, "target", "bench-avx2")
    if not args.skip_build:
        cmd = ["cargo", "build", "--release", "--example", "bench_encoder"]
        if args.path == "avx2":
            cmd += ["--no-default-features", "--target-dir", target]
        subprocess.run(cmd, cwd=ROOT, check=True)
    exe = os.path.join(target, "release", "examples", "bench_encoder")
    summary = []
    for threads in [int(t) for t in str(args.threads).split(",")]:
        summary.append(bench(args, exe, texts_file, len(texts), threads))
    os.remove(texts_file)
    print("\nsummary (best round each):")
    for line in summary:
        print(line)


def bench(args, exe, texts_file, n_texts, threads):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), RUST_LOG="warn")
    print(f"{n_texts} texts, batch size {args.batch_size}, {threads} threads, "
          f"model {args.model}", flush=True)
    print(f"load average before: {os.getloadavg()}", flush=True)
    burn_runs, torch_runs, int8_runs = [], [], []
    for _ in range(args.rounds):
        burn_runs.append(json.loads(subprocess.run(
            [exe, args.model, texts_file, str(args.batch_size)], env=env, check=True,
            capture_output=True, text=True).stdout))
        print(json.dumps(burn_runs[-1]), flush=True)
        if args.int8:
            int8_runs.append(json.loads(subprocess.run(
                [exe, args.model, texts_file, str(args.batch_size), "--int8"], env=env,
                check=True, capture_output=True, text=True).stdout))
            print(json.dumps(int8_runs[-1]), flush=True)
        for policy in ("ACTIVE", "PASSIVE"):
            out = subprocess.run([sys.executable, __file__, "--torch-worker", args.model,
                                  texts_file, str(args.batch_size), str(threads)],
                                 env=dict(env, OMP_WAIT_POLICY=policy), check=True,
                                 capture_output=True, text=True).stdout
            torch_runs.append(dict(json.loads(out.strip().splitlines()[-1]),
                                   omp_wait_policy=policy))
            print(json.dumps(torch_runs[-1]), flush=True)
    print(f"load average after: {os.getloadavg()}", flush=True)
    burn = max(burn_runs, key=lambda r: r["tokens_per_s"])
    torch_res = max(torch_runs, key=lambda r: r["tokens_per_s"])
    assert burn["tokens"] == torch_res["tokens"], "token counts differ"
    ratio = burn["tokens_per_s"] / torch_res["tokens_per_s"]
    cpu_ratio = (torch_res["cpu_seconds"] / burn["cpu_seconds"])
    int8 = ""
    if int8_runs:
        q = max(int8_runs, key=lambda r: r["tokens_per_s"])
        int8 = (f"; burn int8 {q['tokens_per_s']:.0f} tokens/s ({q['cpu_seconds']:.1f} CPU s, "
                f"{q['tokens_per_s'] / torch_res['tokens_per_s']:.2f}× PyTorch, "
                f"{q['tokens_per_s'] / burn['tokens_per_s']:.2f}× burn f32, cosine to f32 "
                f"min {q['cos_min']:.4f} mean {q['cos_mean']:.4f})")
    return (f"{threads} thread(s), burn {burn['simd']}: burn {burn['tokens_per_s']:.0f} tokens/s "
            f"({burn['cpu_seconds']:.1f} CPU s, padding {burn['padding_share']:.1%}, peak "
            f"{burn['peak_rss_mib']:.0f} MiB), PyTorch {torch_res['tokens_per_s']:.0f} tokens/s "
            f"({torch_res['cpu_seconds']:.1f} CPU s, padding {torch_res['padding_share']:.1%}, "
            f"peak {torch_res['peak_rss_mib']:.0f} MiB); burn / PyTorch {ratio:.2f} in tokens/s, "
            f"{cpu_ratio:.2f} in tokens per CPU second{int8}")

if __name__ == "__main__":
    sys.exit(main())
