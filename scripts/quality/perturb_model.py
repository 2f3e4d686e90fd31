#!/usr/bin/env python3
"""A copy of a model folder whose weights went through an int8 round trip (issue 45 item 4).

    scripts/quality/perturb_model.py SRC_MODEL_DIR OUT_DIR

Every 2-D f32 tensor of model.safetensors (embeddings, attention and feed-forward weights) is
scaled row by row to int8 (each row by its largest magnitude / 127), rounded and scaled back —
the small change a quantised copy of the same model carries; 1-D tensors (biases, layer norms)
are kept. The other files are copied as they are. numpy only (the safetensors layout is read and
written by hand: an 8-byte header length, a JSON header, the raw tensors).
"""
import json
import os
import shutil
import struct
import sys

import numpy as np


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(src):
        p = os.path.join(src, name)
        if name != "model.safetensors" and os.path.isfile(p):
            shutil.copyfile(p, os.path.join(out, name))
    with open(os.path.join(src, "model.safetensors"), "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    body = bytearray(data[8 + n :])
    changed, worst = 0, 0.0
    for key, meta in header.items():
        if key == "__metadata__" or meta["dtype"] != "F32" or len(meta["shape"]) != 2:
            continue
        a, b = meta["data_offsets"]
        w = np.frombuffer(bytes(body[a:b]), dtype="<f4").reshape(meta["shape"])
        scale = np.abs(w).max(axis=1, keepdims=True) / 127.0
        scale[scale == 0] = 1.0
        back = (np.clip(np.round(w / scale), -127, 127) * scale).astype("<f4")
        worst = max(worst, float(np.abs(back - w).max()))
        body[a:b] = back.tobytes()
        changed += 1
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(data[: 8 + n])
        f.write(body)
    print(f"{changed} tensors rounded through int8 (largest change {worst:.2e}); wrote {out}")


if __name__ == "__main__":
    main()
