//! UMAP's start layout as umap-learn's `spectral_layout` makes it: the eigenvectors 2 … d + 1 of
//! the graph's normalized Laplacian (Lanczos iteration, with Jacobi on the small tridiagonal
//! matrix), scaled to ±10 with a little Gaussian noise, each connected component placed apart.

use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A standard normal draw (Box–Muller) from a uniform source on [0, 1).
pub(super) fn normal(uniform: &mut impl FnMut() -> f64) -> f64 {
    let u = 1.0 - uniform();
    let v = uniform();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// umap-learn's `spectral_layout` and `noisy_scale_coords`: per connected component of the
/// graph, the eigenvectors 2 … d + 1 of the normalized Laplacian I − D^-½ W D^-½ (by Lanczos
/// iteration on D^-½ W D^-½, whose largest eigenvalues they are); components placed apart as in
/// umap-learn's `multi_component_layout` (at ±eᵢ while there are at most 2d of them, else at
/// seeded random spots) with each one's layout scaled to half the distance to the nearest other;
/// then the whole scaled to ±10 with Gaussian noise of σ = 1e-4. `None` where no component is
/// big enough for an eigen-layout (the caller starts at random).
pub(super) fn spectral_start(
    edges: &[&(usize, usize, f64)],
    n: usize,
    dim: usize,
    uniform: &mut impl FnMut() -> f64,
) -> Option<Vec<Vec<f64>>> {
    // Connected components by union–find, numbered by their first point.
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for &&(i, j, _) in edges {
        let (a, b) = (root(&mut parent, i), root(&mut parent, j));
        if a != b {
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut label = vec![usize::MAX; n];
    let mut members: Vec<Vec<usize>> = Vec::new();
    for i in 0..n {
        let r = root(&mut parent, i);
        if label[r] == usize::MAX {
            label[r] = members.len();
            members.push(Vec::new());
        }
        label[i] = label[r];
        members[label[i]].push(i);
    }
    let count = members.len();
    if count == 1 {
        let vectors = laplacian_eigenvectors(edges, &members[0], dim)?;
        return Some(noisy_scale(vectors, uniform));
    }
    // Where the components go.
    let centres: Vec<Vec<f64>> = if count <= 2 * dim {
        (0..count)
            .map(|c| {
                let mut v = vec![0.0; dim];
                let half = count.div_ceil(2);
                v[c % half] = if c < half { 1.0 } else { -1.0 };
                v
            })
            .collect()
    } else {
        (0..count)
            .map(|_| (0..dim).map(|_| 2.0 * uniform() - 1.0).collect())
            .collect()
    };
    let mut out = vec![vec![0.0; dim]; n];
    let mut any = false;
    for (c, idx) in members.iter().enumerate() {
        let range = centres
            .iter()
            .enumerate()
            .filter(|&(o, _)| o != c)
            .map(|(_, o)| {
                o.iter()
                    .zip(&centres[c])
                    .map(|(a, b)| (a - b).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .filter(|&d| d > 0.0)
            .fold(f64::INFINITY, f64::min)
            / 2.0;
        let range = if range.is_finite() { range } else { 1.0 };
        let local = if idx.len() < 2 * dim || idx.len() <= dim + 1 {
            None
        } else {
            laplacian_eigenvectors(edges, idx, dim)
        };
        match local {
            Some(vectors) => {
                any = true;
                let top = vectors.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
                let scale = if top > 0.0 { range / top } else { 0.0 };
                for (row, &i) in vectors.iter().zip(idx) {
                    for d in 0..dim {
                        out[i][d] = row[d] * scale + centres[c][d];
                    }
                }
            }
            None => {
                for &i in idx {
                    for d in 0..dim {
                        out[i][d] = (2.0 * uniform() - 1.0) * range + centres[c][d];
                    }
                }
            }
        }
    }
    any.then(|| noisy_scale(out, uniform))
}

/// umap-learn's `noisy_scale_coords(max_coord = 10, noise = 1e-4)`.
pub(super) fn noisy_scale(
    mut emb: Vec<Vec<f64>>,
    uniform: &mut impl FnMut() -> f64,
) -> Vec<Vec<f64>> {
    let top = emb.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
    let scale = if top > 0.0 { 10.0 / top } else { 1.0 };
    for row in &mut emb {
        for x in row.iter_mut() {
            *x = *x * scale + 1e-4 * normal(uniform);
        }
    }
    emb
}

/// The eigenvectors 2 … `dim` + 1 (by eigenvalue, smallest first) of the normalized Laplacian of
/// the subgraph on `idx` (one connected component), one row per point of `idx`. Lanczos
/// iteration with full reorthogonalization on D^-½ W D^-½ (umap-learn uses ARPACK's `eigsh`),
/// with up to 200 Lanczos vectors, then the Ritz vectors of the largest Ritz values (exact
/// when the component has at most 200 points). `None` if the component is too small.
pub(super) fn laplacian_eigenvectors(
    edges: &[&(usize, usize, f64)],
    idx: &[usize],
    dim: usize,
) -> Option<Vec<Vec<f64>>> {
    let m = idx.len();
    if m <= dim + 1 {
        return None;
    }
    let (rows, inv_sqrt_deg) = subgraph_rows(edges, idx);
    let apply = |x: &[f64]| -> Vec<f64> {
        rows.iter()
            .enumerate()
            .map(|(a, r)| {
                inv_sqrt_deg[a]
                    * r.iter()
                        .map(|&(b, w)| w * inv_sqrt_deg[b] * x[b])
                        .sum::<f64>()
            })
            .collect()
    };
    let dot = |x: &[f64], y: &[f64]| -> f64 { x.iter().zip(y).map(|(a, b)| a * b).sum() };
    let steps = m.min(200);
    // A fixed pseudo-random start (the all-ones vector is itself the top eigenvector of a
    // graph whose degrees are all equal, which would end the iteration at once); on a
    // breakdown (an invariant subspace: a repeated eigenvalue or a closed part of the graph)
    // the iteration goes on from a fresh vector orthogonal to the basis, with β = 0.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x5eed_1a2c);
    let mut fresh = |basis: &[Vec<f64>]| -> Option<Vec<f64>> {
        for _ in 0..4 {
            let mut w: Vec<f64> = (0..m)
                .map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
                .collect();
            orthogonalize(&mut w, basis);
            let b = dot(&w, &w).sqrt();
            if b > 1e-8 {
                return Some(w.into_iter().map(|x| x / b).collect());
            }
        }
        None
    };
    let mut basis: Vec<Vec<f64>> = Vec::with_capacity(steps);
    let mut alpha = Vec::with_capacity(steps);
    let mut beta: Vec<f64> = Vec::with_capacity(steps);
    basis.push(fresh(&[])?);
    for s in 0..steps {
        let mut w = apply(&basis[s]);
        let a = dot(&w, &basis[s]);
        alpha.push(a);
        orthogonalize(&mut w, &basis);
        if s + 1 == steps {
            break;
        }
        let b = dot(&w, &w).sqrt();
        if b < 1e-10 {
            let Some(next) = fresh(&basis) else { break };
            beta.push(0.0);
            basis.push(next);
        } else {
            beta.push(b);
            basis.push(w.into_iter().map(|x| x / b).collect());
        }
    }
    let k = alpha.len();
    if k < dim + 1 {
        return None;
    }
    Some(ritz_vectors(&alpha, &beta, &basis, dim, m))
}

/// The rows of the subgraph on `idx` (local indices; `edges` sorted by (i, j), so the order is
/// fixed) and each row's 1 / √degree (0 for an isolated point): D^-½ W D^-½ is applied from
/// them.
fn subgraph_rows(
    edges: &[&(usize, usize, f64)],
    idx: &[usize],
) -> (Vec<Vec<(usize, f64)>>, Vec<f64>) {
    let m = idx.len();
    let mut local = std::collections::HashMap::with_capacity(m);
    for (p, &i) in idx.iter().enumerate() {
        local.insert(i, p);
    }
    let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); m];
    for &&(i, j, w) in edges {
        if let (Some(&a), Some(&b)) = (local.get(&i), local.get(&j)) {
            rows[a].push((b, w));
        }
    }
    let inv_sqrt_deg: Vec<f64> = rows
        .iter()
        .map(|r| {
            let d: f64 = r.iter().map(|e| e.1).sum();
            if d > 0.0 {
                1.0 / d.sqrt()
            } else {
                0.0
            }
        })
        .collect();
    (rows, inv_sqrt_deg)
}

/// Removes from `w` its components along every vector of the orthonormal `basis`, twice (full
/// reorthogonalization, for stability).
fn orthogonalize(w: &mut [f64], basis: &[Vec<f64>]) {
    for _ in 0..2 {
        for v in basis {
            let c: f64 = w.iter().zip(v).map(|(a, b)| a * b).sum();
            for (x, y) in w.iter_mut().zip(v) {
                *x -= c * y;
            }
        }
    }
}

/// The `dim` leading eigenvectors after the first (of the `m`-point Lanczos `basis` with
/// tridiagonal `alpha`, `beta`), by cyclic Jacobi rotations of the tridiagonal matrix: each
/// point's row of the spectral layout.
fn ritz_vectors(
    alpha: &[f64],
    beta: &[f64],
    basis: &[Vec<f64>],
    dim: usize,
    m: usize,
) -> Vec<Vec<f64>> {
    let k = alpha.len();
    let mut t = vec![vec![0.0; k]; k];
    for i in 0..k {
        t[i][i] = alpha[i];
        if i + 1 < k {
            t[i][i + 1] = beta[i];
            t[i + 1][i] = beta[i];
        }
    }
    let (values, vectors) = jacobi_eigen(t);
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]).then(a.cmp(&b)));
    let mut out = vec![vec![0.0; dim]; m];
    for (d, &e) in order[1..=dim].iter().enumerate() {
        for (s, v) in basis.iter().enumerate() {
            let c = vectors[s][e];
            for (row, x) in out.iter_mut().zip(v) {
                row[d] += c * x;
            }
        }
    }
    out
}

/// Eigenvalues and eigenvectors (columns of the second result) of a small symmetric matrix by
/// cyclic Jacobi rotations.
pub(super) fn jacobi_eigen(mut a: Vec<Vec<f64>>) -> (Vec<f64>, Vec<Vec<f64>>) {
    let k = a.len();
    let mut v = vec![vec![0.0; k]; k];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for _sweep in 0..100 {
        let off: f64 = (0..k)
            .flat_map(|i| (0..k).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        if off < 1e-22 {
            break;
        }
        for p in 0..k {
            for q in p + 1..k {
                if a[p][q].abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                // A ← Jᵀ A J: columns p and q, then rows p and q.
                for row in a.iter_mut() {
                    let (arp, arq) = (row[p], row[q]);
                    row[p] = c * arp - s * arq;
                    row[q] = s * arp + c * arq;
                }
                let (mut row_p, mut row_q) = (a[p].clone(), a[q].clone());
                for (x, y) in row_p.iter_mut().zip(row_q.iter_mut()) {
                    let (apr, aqr) = (*x, *y);
                    *x = c * apr - s * aqr;
                    *y = s * apr + c * aqr;
                }
                a[p] = row_p;
                a[q] = row_q;
                for row in v.iter_mut() {
                    let (vp, vq) = (row[p], row[q]);
                    row[p] = c * vp - s * vq;
                    row[q] = s * vp + c * vq;
                }
            }
        }
    }
    ((0..k).map(|i| a[i][i]).collect(), v)
}
