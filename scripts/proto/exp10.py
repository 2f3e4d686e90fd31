"""Exclusive density: rank an episode's members by density among members minus beta x density
toward the other episodes' members (segments that also sit in another episode's core go later)."""
import sys
sys.path.insert(0, "scripts/proto")
import numpy as np
from proto import load, score, report, loto
from cap import episodes_of
from methods import normed
ev = load()
E = episodes_of(sys.argv[1])
results = {}
for beta in [0.0, 0.25, 0.5, 1.0]:
    res = {}
    for n, e in ev.items():
        X = normed(e["X"])
        eps = E.get(n, [])
        assigned = sorted({s for ep in eps for s in ep})
        out = []
        for ep in eps:
            ep = list(ep)
            if len(ep) < 6:
                out.append(ep); continue
            sub = X[ep] @ X[ep].T
            np.fill_diagonal(sub, -9)
            k = min(10, len(ep) - 1)
            din = np.sort(sub, 1)[:, -k:].mean(1)
            others = [s for s in assigned if s not in set(ep)]
            if others and beta:
                so = X[ep] @ X[others].T
                kk = min(10, len(others))
                dout = np.sort(so, 1)[:, -kk:].mean(1)
            else:
                dout = 0 * din
            key = din - beta * dout
            order = sorted(range(len(ep)), key=lambda j: (-key[j], ep[j]))
            out.append([ep[j] for j in order])
        res[n] = score(e, out)[2]
    results[f"beta{beta}"] = res
    report(f"beta {beta}", res, ev)
o, ch = loto(results, ev); report(f"LOTO {ch}", o, ev)
