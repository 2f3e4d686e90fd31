"""The number of episodes following the event's size: keep the K(n) largest episodes."""
import sys, os, math
sys.path.insert(0, "scripts/proto")
import numpy as np
from proto import load, score, report, loto
from cap import episodes_of
ev = load()
E = episodes_of(sys.argv[1])
rules = {
    "fixed15": lambda n: 15, "fixed10": lambda n: 10,
    "sqrt/2": lambda n: max(4, round(math.sqrt(n) / 2)), "sqrt/3": lambda n: max(4, round(math.sqrt(n) / 3)),
    "sqrt/4": lambda n: max(4, round(math.sqrt(n) / 4)),
    "log2": lambda n: max(4, round(math.log2(n))), "1.5log2": lambda n: max(4, round(1.5 * math.log2(n))),
}
results = {}
for name, f in rules.items():
    res = {}
    for n, e in ev.items():
        eps = sorted(E.get(n, []), key=lambda x: -len(x))[: f(len(e["segs"]))]
        res[n] = score(e, eps)[2]
    results[name] = res
    report(name, res, ev)
o, ch = loto(results, ev); report(f"LOTO {ch}", o, ev)
