import numpy as np
import hdbscan


def normed(X):
    return X / (np.linalg.norm(X, axis=1, keepdims=True) + 1e-12)


def mstd(v):
    v = np.asarray(v, dtype=np.float64)
    return v.mean(), v.std()


def density_clusters(X, mcs=10, ms=None, reduce=None, seed=42, selection="eom"):
    Xn = normed(X)
    Z = Xn
    if reduce == "umap":
        import umap
        Z = umap.UMAP(n_neighbors=15, n_components=5, min_dist=0.0, metric="cosine", random_state=seed).fit_transform(Xn)
    elif reduce and reduce.startswith("pca"):
        d = int(reduce[3:])
        C = Xn - Xn.mean(0)
        U, S, Vt = np.linalg.svd(C, full_matrices=False)
        Z = C @ Vt[:d].T
    cl = hdbscan.HDBSCAN(min_cluster_size=mcs, min_samples=ms, cluster_selection_method=selection).fit(Z)
    labels = cl.labels_
    probs = cl.probabilities_
    groups = []
    for c in sorted(set(labels.tolist()) - {-1}):
        idx = np.flatnonzero(labels == c)
        groups.append((idx, probs[idx]))
    return groups


def rank_membership(X, groups):
    Xn = normed(X)
    eps = []
    for idx, pr in groups:
        cen = Xn[idx].mean(0)
        cos = Xn[idx] @ cen / (np.linalg.norm(cen) + 1e-12)
        order = sorted(range(len(idx)), key=lambda j: (-pr[j], -cos[j], idx[j]))
        eps.append([int(idx[j]) for j in order])
    return eps


def harmonic(vs):
    w = 1.0 / np.arange(1, len(vs) + 1)
    return (vs * w[:, None]).sum(0) / w.sum()


def classify(X, vectors, rule="mms"):
    Xn = normed(X)
    V = normed(np.array(vectors))
    C = Xn @ V.T
    top = C.argmax(1)
    s = np.sort(C, 1)
    if C.shape[1] > 1:
        gap = s[:, -1] - s[:, -2]
    else:
        gap = s[:, -1]
    conf = gap / gap.sum() if gap.sum() > 0 else gap * 0
    m, sd = mstd(conf)
    bound = {"mms": m - sd, "m": m, "mps": m + sd, "all": -np.inf}[rule]
    assigned = conf >= bound
    return top, conf, C, assigned


def episodes_from_groups(X, groups_idx, rank="sim", conf_rule="mms", cohesion=True, size=True, min_seg=2, vec="harmonic"):
    """§6 classification against group vectors, with ranking variants."""
    Xn = normed(X)
    vectors = []
    for g in groups_idx:
        if vec == "harmonic":
            vectors.append(harmonic(Xn[g]))
        else:
            vectors.append(Xn[g].mean(0))
    if not vectors:
        return []
    top, conf, C, assigned = classify(X, vectors, conf_rule)
    members = [[] for _ in vectors]
    for s in range(len(X)):
        if assigned[s]:
            members[top[s]].append(s)
    kept = [len(m) >= min_seg for m in members]
    if cohesion:
        coh = {e: np.mean([C[s, e] for s in members[e]]) for e in range(len(members)) if kept[e]}
        if len(coh) > 1:
            m, sd = mstd(list(coh.values()))
            for e, c in coh.items():
                if c < m - sd:
                    kept[e] = False
    if size:
        sz = {e: np.log(len(members[e])) for e in range(len(members)) if kept[e]}
        if len(sz) > 1:
            m, sd = mstd(list(sz.values()))
            big = max(sz, key=lambda e: (sz[e], -e))
            for e, v in sz.items():
                if v < m - sd and e != big:
                    kept[e] = False
    out = []
    for e in range(len(members)):
        if not kept[e]:
            continue
        ms = members[e]
        if rank == "sim":
            key = {s: C[s, e] for s in ms}
        elif rank == "conf":
            key = {s: conf[s] for s in ms}
        elif rank == "excl":
            other = np.delete(C, e, axis=1)
            key = {s: C[s, e] - (other[s].max() if other.shape[1] else 0) for s in ms}
        elif rank == "simxexcl":
            other = np.delete(C, e, axis=1)
            key = {s: C[s, e] * (C[s, e] - (other[s].max() if other.shape[1] else 0)) for s in ms}
        elif rank == "dens":
            sub = Xn[ms] @ Xn[ms].T
            kk = min(5, len(ms) - 1) if len(ms) > 1 else 0
            key = {}
            for j, s in enumerate(ms):
                row = np.sort(sub[j])[::-1]
                key[s] = row[1:kk + 1].mean() if kk else 0
        ordered = sorted(ms, key=lambda s: (-key[s], s))
        out.append(ordered)
    return out
