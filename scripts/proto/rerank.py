import sys, os
sys.path.insert(0, "scripts/proto")
import numpy as np
from proto import load, score, report, loto
from cap import episodes_of
from methods import normed, harmonic
ev = load()
E = episodes_of(sys.argv[1])
results = {}
for rule in ["orig", "dens5", "dens10", "gknn10", "simdens", "core"]:
    res = {}
    for n, e in ev.items():
        X = normed(e["X"])
        eps = E.get(n, [])
        out = []
        S = X @ X.T
        np.fill_diagonal(S, -1)
        gk = np.sort(S, 1)[:, -10:].mean(1)
        for ep in eps:
            ep = list(ep)
            if rule == "orig" or len(ep) < 6:
                out.append(ep); continue
            sub = S[np.ix_(ep, ep)]
            v = harmonic(X[ep]); v /= np.linalg.norm(v)
            sim = X[ep] @ v
            if rule.startswith("dens"):
                k = min(int(rule[4:]), len(ep) - 1)
                key = np.sort(sub, 1)[:, -k:].mean(1)
            elif rule == "gknn10":
                key = gk[ep]
            elif rule == "simdens":
                k = min(5, len(ep) - 1)
                key = sim + np.sort(sub, 1)[:, -k:].mean(1)
            elif rule == "core":
                # greedy: start from the densest member, add the member most similar to the chosen on average
                k = min(5, len(ep) - 1)
                d = np.sort(sub, 1)[:, -k:].mean(1)
                chosen = [int(np.argmax(d))]
                while len(chosen) < min(5, len(ep)):
                    m = sub[:, chosen].mean(1); m[chosen] = -9
                    chosen.append(int(np.argmax(m)))
                rest = [j for j in np.argsort(-sim, kind="stable") if j not in chosen]
                out.append([ep[j] for j in chosen + rest]); continue
            order = sorted(range(len(ep)), key=lambda j: (-key[j], ep[j]))
            out.append([ep[j] for j in order])
        res[n] = score(e, out)[2]
    results[rule] = res
    report(f"{os.path.basename(sys.argv[1])} {rule}", res, ev)
o, ch = loto(results, ev); report(f"LOTO {ch}", o, ev)
