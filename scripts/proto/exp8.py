"""Publication dates as evidence: re-rank each episode of a run (members fixed) by a density that
counts same-period neighbours more, or by closeness to the episode's peak date."""
import sys, os, datetime
sys.path.insert(0, "scripts/proto")
import numpy as np
from proto import load, score, report, loto
from cap import episodes_of
from methods import normed
ev = load()
E = episodes_of(sys.argv[1])
def day(s):
    return s.toordinal()
results = {}
rules = ["dens"] + [f"same{l}" for l in (0.02, 0.05, 0.1)] + [f"exp{t}" for t in (1, 3)] + ["peak", "peakdens"]
for rule in rules:
    res = {}
    for n, e in ev.items():
        X = normed(e["X"])
        D = np.array([day(s[3]) if s[3] else 0 for s in e["segs"]], dtype=float)
        out = []
        for ep in E.get(n, []):
            ep = list(ep)
            if len(ep) < 6:
                out.append(ep); continue
            sub = X[ep] @ X[ep].T
            dd = np.abs(D[ep][:, None] - D[ep][None, :])
            if rule.startswith("same"):
                sub = sub + float(rule[4:]) * (dd == 0)
            elif rule.startswith("exp"):
                sub = sub + 0.05 * np.exp(-dd / float(rule[3:]))
            np.fill_diagonal(sub, -9)
            k = min(10, len(ep) - 1)
            dens = np.sort(sub, 1)[:, -k:].mean(1)
            if rule.startswith("peak"):
                vals, cnt = np.unique(D[ep], return_counts=True)
                peak = vals[np.argmax(cnt)]
                near = -np.abs(D[ep] - peak)
                key = near * 10 + (dens if rule == "peakdens" else 0) if rule == "peakdens" else near + 1e-3 * dens
            else:
                key = dens
            order = sorted(range(len(ep)), key=lambda j: (-key[j], ep[j]))
            out.append([ep[j] for j in order])
        res[n] = score(e, out)[2]
    results[rule] = res
    report(f"{rule}", res, ev)
o, ch = loto(results, ev); report(f"LOTO {ch}", o, ev)
