import sys, json, os
sys.path.insert(0, "scripts/proto")
import numpy as np, pyarrow.parquet as pq
from proto import load, score, report, loto
ev = load()
def episodes_of(dirn):
    a = pq.read_table(os.path.join(dirn, "assignments.parquet")).to_pylist()
    idx = {n: {(s[0], s[1]): i for i, s in enumerate(e["segs"])} for n, e in ev.items()}
    out = {}
    for r in a:
        if r.get("trial", 0) != 0: continue
        out.setdefault(r["key_event"], {}).setdefault(r["episode_id"], []).append((r["rank"], idx[r["key_event"]][(r["doc_id"], r["seg_idx"])], r["confidence"]))
    res = {}
    for n, eps in out.items():
        res[n] = [[s for _, s, _ in sorted(v)] for _, v in sorted(eps.items())]
    return res
if __name__ == "__main__":
  for dirn in sys.argv[1:]:
      E = episodes_of(dirn)
      results = {}
      for K in [0, 4, 6, 8, 10, 12, 15, 20]:
          res = {}
          for n in ev:
              eps = E.get(n, [])
              if K:
                  eps = sorted(eps, key=lambda e: -len(e))[:K]
              res[n] = score(ev[n], eps)[2]
          results[K] = res
          report(f"{os.path.basename(dirn)} cap {K}", res, ev)
      o, ch = loto({f"cap{k:02d}": v for k, v in results.items()}, ev)
      report(f"{os.path.basename(dirn)} LOTO {ch}", o, ev)
