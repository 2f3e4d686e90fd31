import sys, os
sys.path.insert(0, "scripts/proto")
from collections import Counter
from proto import load
from cap import episodes_of
ev = load()
lab = Counter()
for n, e in ev.items():
    for s in e["segs"]:
        l = e["labels"].get((s[0], s[1]))
        lab["gold" if (l is not None and l.isdigit()) else str(l)] += 1
print("all segments:", lab)
for dirn in sys.argv[1:]:
    E = episodes_of(dirn)
    top = Counter(); kinds = Counter()
    for n, eps in E.items():
        e = ev[n]
        for ep in eps:
            if len(ep) < 5: continue
            ls = [e["labels"].get((e["segs"][i][0], e["segs"][i][1])) for i in ep[:5]]
            c = Counter("gold" if (l and l.isdigit()) else str(l) for l in ls)
            top.update(c)
            g = Counter(l for l in ls if l and l.isdigit())
            best = g.most_common(1)[0][1] if g else 0
            kinds["hit" if best >= 3 else ("gold-mixed" if c["gold"] >= 3 else "mostly-nongold")] += 1
    print(os.path.basename(dirn), "top5 labels:", top, "episodes:", kinds)
