import sys
sys.path.insert(0, "scripts/proto")
import numpy as np
from collections import defaultdict
from proto import load
from methods import normed
ev = load()
rows = []
for n, e in ev.items():
    X = normed(e["X"]); cen = X.mean(0); cen /= np.linalg.norm(cen)
    cc = X @ cen
    S = X @ X.T
    np.fill_diagonal(S, -1)
    knn = np.sort(S, 1)[:, -10:].mean(1)
    doclen = defaultdict(int)
    for s in e["segs"]: doclen[s[0]] += 1
    for i, s in enumerate(e["segs"]):
        l = e["labels"].get((s[0], s[1]))
        kind = "gold" if (l and l.isdigit()) else ("M" if l == "M" else "X")
        z = (cc[i] - cc.mean()) / cc.std()
        zk = (knn[i] - knn.mean()) / knn.std()
        rows.append((kind, s[1], s[1] / max(1, doclen[s[0]] - 1), len(s[2]), z, zk, doclen[s[0]]))
def table(name, f, bins):
    print(name)
    for lo, hi in bins:
        sel = [r for r in rows if lo <= f(r) < hi]
        if not sel: continue
        k = defaultdict(int)
        for r in sel: k[r[0]] += 1
        print(f"  [{lo},{hi}) n={len(sel):5d} gold {k['gold']/len(sel):.2f} M {k['M']/len(sel):.2f} X {k['X']/len(sel):.2f}")
table("seg_idx", lambda r: r[1], [(0,1),(1,2),(2,3),(3,5),(5,10),(10,1000)])
table("rel pos", lambda r: r[2], [(0,.2),(.2,.4),(.4,.6),(.6,.8),(.8,1.01)])
table("chars", lambda r: r[3], [(0,100),(100,200),(200,300),(300,500),(500,100000)])
table("z cos centroid", lambda r: r[4], [(-9,-1),(-1,0),(0,1),(1,9)])
table("z knn10", lambda r: r[5], [(-9,-1),(-1,0),(0,1),(1,9)])
table("doc segments", lambda r: r[6], [(0,5),(5,10),(10,20),(20,1000)])
