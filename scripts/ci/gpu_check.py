#!/usr/bin/env python3
"""The Python half of scripts/ci/gpu-check.sh (run on the GPU machine).

gpu_check.py encode --model DIR --texts FILE --out DIR --epimine F32.parquet [--epimine-f16 F16.parquet]
    sentence-transformers on the same weights and texts: fp32 and fp16 at batch 32 and 128
    (model load and a warm-up batch apart from the timed pass), segments/s and tokens/s; the
    cosine of epimine's embeddings (row i = line i) to sentence-transformers fp32. Writes
    OUT/st.json.
gpu_check.py summary --out DIR
    prints (and writes OUT/summary.md) the table of every figure: st.json, the encode-*.txt
    timing lines of `epimine encode`, run-w*.txt (wall and 5-F1) and each run.json's stages.
"""
import argparse, glob, json, os, re, sys, time


def encode(args):
    os.environ["HF_HUB_OFFLINE"] = "1"
    import numpy as np
    import pyarrow.parquet as pq
    import torch
    from sentence_transformers import SentenceTransformer

    texts = [l.rstrip("\n") for l in open(args.texts, encoding="utf-8")]
    out = {"texts": len(texts), "gpu": torch.cuda.get_device_name(0)}
    t = time.time()
    model = SentenceTransformer(args.model, device="cuda")
    out["load_s"] = time.time() - t
    out["tokens"] = int(sum(len(x) for x in model.tokenizer(texts, truncation=True,
                                                               max_length=model.max_seq_length)["input_ids"]))
    ref = None
    for dtype in ("fp32", "fp16"):
        m = model if dtype == "fp32" else model.half()
        for batch in (32, 128):
            m.encode(texts[:batch], batch_size=batch)  # warm-up
            torch.cuda.synchronize()
            t = time.time()
            e = m.encode(texts, batch_size=batch, convert_to_numpy=True, normalize_embeddings=False)
            torch.cuda.synchronize()
            s = time.time() - t
            out[f"{dtype}_b{batch}_s"] = s
            out[f"{dtype}_b{batch}_seg_per_s"] = len(texts) / s
            out[f"{dtype}_b{batch}_tok_per_s"] = out["tokens"] / s
            if dtype == "fp32" and batch == 32:
                ref = e.astype(np.float64)
            if dtype == "fp16" and batch == 32:
                out["st_fp16_cos_min"] = float(cosines(ref, e).min())

    def read(path):
        table = pq.read_table(path).to_pydict()
        return np.array(table["embedding"], dtype=np.float64)

    ours = {}
    for name, path in (("epimine_f32", args.epimine), ("epimine_f16", args.epimine_f16),
                       ("epimine_bf16", args.epimine_bf16)):
        if path and os.path.exists(path):
            ours[name] = read(path)
            c = cosines(ref, ours[name])
            out[f"{name}_cos_min"] = float(c.min())
            out[f"{name}_cos_mean"] = float(c.mean())
    for name in ("epimine_f16", "epimine_bf16"):
        if name in ours and "epimine_f32" in ours:
            c = cosines(ours["epimine_f32"], ours[name])
            out[f"{name}_to_f32_cos_min"] = float(c.min())
    json.dump(out, open(os.path.join(args.out, "st.json"), "w"), indent=1)
    print(json.dumps(out, indent=1))


def cosines(a, b):
    import numpy as np
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def summary(args):
    d = args.out
    lines = []
    st = json.load(open(os.path.join(d, "st.json"))) if os.path.exists(os.path.join(d, "st.json")) else {}
    if st:
        lines.append(f"GPU: {st['gpu']}; {st['texts']} development segments, {st['tokens']} tokens")
        lines.append("| encoder | seconds | segments/s | tokens/s |")
        lines.append("|---|---|---|---|")
        for dtype in ("fp32", "fp16"):
            for b in (32, 128):
                k = f"{dtype}_b{b}"
                if k + "_s" in st:
                    lines.append(f"| sentence-transformers {dtype}, batch {b} | {st[k + '_s']:.2f} | "
                                 f"{st[k + '_seg_per_s']:.0f} | {st[k + '_tok_per_s']:.0f} |")
    for f in sorted(glob.glob(os.path.join(d, "encode-*.txt"))):
        text = open(f).read()
        m = re.search(r"model load ([\d.]+) s, warm-up ([\d.]+) s \((\d+) shapes\), encoding ([\d.]+) s: "
                      r"(\d+) texts/s, (\d+) tokens/s", text)
        if m:
            name = os.path.basename(f)[len("encode-"):-len(".txt")]
            lines.append(f"| epimine encode {name} (load {m[1]} s, warm-up {m[2]} s, {m[3]} shapes) | "
                         f"{m[4]} | {m[5]} | {m[6]} |")
    for k in ("epimine_f32_cos_min", "epimine_f32_cos_mean", "epimine_f16_cos_min",
              "epimine_bf16_cos_min", "epimine_f16_to_f32_cos_min", "epimine_bf16_to_f32_cos_min",
              "st_fp16_cos_min"):
        if k in st:
            lines.append(f"- {k}: {st[k]:.6f}")
    for f in sorted(glob.glob(os.path.join(d, "run-w*.txt"))):
        text = [l.strip() for l in open(f) if l.strip()]
        wall = [l for l in text if " s wall" in l]
        # eval's per-theme means: the lines after its "theme (mean)" header.
        means = text[next((i for i, l in enumerate(text) if l.startswith("theme (mean)")), len(text)):]
        lines.append(f"- {os.path.basename(f)[:-4]}: " + " / ".join(wall + means[:5] or text[-3:]))
        rj = os.path.join(f[:-4], "run.json")
        if os.path.exists(rj):
            stages = json.load(open(rj)).get("stages", [])
            lines.append("  stages: " + ", ".join(f"{s.get('stage')} {s.get('seconds', 0):.1f} s" for s in stages))
    synth = os.path.join(d, "run-synth", "run.json")
    if os.path.exists(synth):
        r = json.load(open(synth))
        segs = sum(e.get("segments", 0) for e in r.get("events", []))
        wall = re.search(r"wall ([\d.]+) s, peak (\d+) KiB", open(os.path.join(d, "synth-100k.txt")).read())
        lines.append(f"- 100,000-article synthetic event, -w 2: {segs} segments"
                     + (f", {wall[1]} s wall, peak {int(wall[2]) / 1e6:.1f} GB" if wall else "")
                     + "; stages: " + ", ".join(f"{s.get('stage')} {s.get('seconds', 0):.1f} s"
                                               for s in r.get("stages", [])))
    steps = os.path.join(d, "steps.tsv")
    if os.path.exists(steps):
        lines.append("")
        lines.append("| step | box s | seconds | exit (124: out of time) |")
        lines.append("|---|---|---|---|")
        for row in list(open(steps))[1:]:
            lines.append("| " + " | ".join(row.rstrip("\n").split("\t")) + " |")
    text = "\n".join(lines)
    open(os.path.join(d, "summary.md"), "w").write(text + "\n")
    print(text)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("encode")
    e.add_argument("--model", required=True)
    e.add_argument("--texts", required=True)
    e.add_argument("--out", required=True)
    e.add_argument("--epimine", required=True)
    e.add_argument("--epimine-f16")
    e.add_argument("--epimine-bf16")
    s = sub.add_parser("summary")
    s.add_argument("--out", required=True)
    args = p.parse_args()
    {"encode": encode, "summary": summary}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
