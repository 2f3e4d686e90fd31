//! Agglomerative clustering cut at a distance (kodama): the candidate clusters of §4 (complete
//! linkage) and the merging of HDBSCAN's near-duplicate clusters (average linkage).

use std::collections::BTreeMap;

/// Agglomerative clustering of `n` items (kodama, `method` monotone: complete or average)
/// cut at `threshold`: merges at or below it join. Labels are numbered by first item.
pub fn linkage_cut(
    condensed: &[f64],
    n: usize,
    method: kodama::Method,
    threshold: f64,
) -> Vec<usize> {
    linkage_cut_floor(condensed, n, method, threshold, 0)
}

/// [`linkage_cut`] that stops merging before fewer than `floor` clusters remain (0: no floor).
pub fn linkage_cut_floor(
    condensed: &[f64],
    n: usize,
    method: kodama::Method,
    threshold: f64,
    floor: usize,
) -> Vec<usize> {
    if n < 2 {
        return vec![0; n];
    }
    let max_merges = n - floor.clamp(1, n);
    let mut work = condensed.to_vec();
    let dendrogram = kodama::linkage(&mut work, n, method);
    // Union-find over the merges at or below the threshold (the method is monotone).
    let mut parent: Vec<usize> = (0..2 * n).collect();
    fn find(parent: &mut [usize], x: usize) -> usize {
        let mut r = x;
        while parent[r] != r {
            r = parent[r];
        }
        let mut y = x;
        while parent[y] != r {
            let next = parent[y];
            parent[y] = r;
            y = next;
        }
        r
    }
    for (k, step) in dendrogram.steps().iter().enumerate() {
        if step.dissimilarity > threshold || k >= max_merges {
            break;
        }
        let new = n + k;
        for c in [step.cluster1, step.cluster2] {
            let r = find(&mut parent, c);
            parent[r] = new;
        }
    }
    let mut labels = vec![usize::MAX; n];
    let mut names: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, label) in labels.iter_mut().enumerate() {
        let root = find(&mut parent, i);
        let next = names.len();
        *label = *names.entry(root).or_insert(next);
    }
    labels
}
