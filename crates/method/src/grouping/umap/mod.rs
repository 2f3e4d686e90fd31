//! UMAP (McInnes, Healy & Melville 2018) for one key event's sentence embeddings, as
//! umap-learn computes it with BERTopic's settings (cosine metric, 15 neighbours, 5 components,
//! `min_dist` 0), so that density clustering ([`super::density`]) sees the embeddings' manifold
//! in a few dimensions rather than 384, where every distance looks alike.
//!
//! Steps, each as umap-learn does it: exact k nearest neighbours by cosine distance (the point
//! itself first); `smooth_knn_dist` (ρ = nearest non-zero distance, σ by bisection so that the
//! memberships sum to log2 k); membership strengths exp(−(d − ρ)/σ); the fuzzy union
//! P + Pᵀ − P∘Pᵀ; edges below max/n_epochs dropped; the start layout (by default umap-learn's
//! spectral start: the eigenvectors 2 … d + 1 of the graph's normalized Laplacian, found by
//! Lanczos iteration, scaled to ±10 with a little Gaussian noise, each connected component
//! placed apart; or a random start), rescaled to [0, 10] per axis; then
//! `optimize_layout_euclidean`: stochastic gradient descent over the edges by their epochs per
//! sample, 5 negative samples per positive one, gradients clipped to ±4, learning rate falling
//! linearly from 1.
//!
//! Why our own and not a crate: the maintained Rust UMAP (umap-rs) runs its gradient descent
//! Hogwild-parallel with an unseeded thread-local RNG, so two runs differ; here the descent is
//! sequential with a seeded xoshiro generator, and the neighbour search parallel per row only,
//! so the same embeddings and seed always give the same layout, on any machine layout.

use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

mod spectral;
use spectral::spectral_start;

/// umap-learn's `find_ab_params(spread = 1, min_dist = 0)` (BERTopic's `min_dist`): the curve
/// 1 / (1 + a·d^(2b)) fitted to the membership curve.
const A: f64 = 1.932_808_398_005_290_1;
/// See [`A`].
const B: f64 = 0.790_494_973_695_876_5;

/// UMAP settings (BERTopic's defaults, with a fixed seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UmapParams {
    /// Neighbours of the k-nearest-neighbour graph (BERTopic: 15).
    pub n_neighbors: usize,
    /// Output dimensions (BERTopic: 5).
    pub n_components: usize,
    /// Seed of the start layout and the negative sampling.
    pub seed: u64,
    /// Start layout of the gradient descent (umap-learn and BERTopic: spectral).
    pub init: Init,
}

/// Start layout of the gradient descent.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Init {
    /// umap-learn's default: the graph's Laplacian eigenvectors (a layout that already keeps
    /// the graph's groups apart), plus noise of standard deviation 1e-4.
    Spectral,
    /// Uniform in [0, 10) per axis.
    Random,
}

impl Default for UmapParams {
    fn default() -> Self {
        Self {
            n_neighbors: 15,
            n_components: 5,
            seed: 42,
            init: Init::Spectral,
        }
    }
}

/// The layout of `points` (unit vectors, so 1 − dot is the cosine distance) in
/// `n_components` dimensions, one row a point. Fewer than 3 points are returned at the origin.
pub fn embed(points: &[Vec<f64>], params: &UmapParams) -> Vec<Vec<f64>> {
    let n = points.len();
    let dim = params.n_components.max(1);
    if n < 3 {
        return vec![vec![0.0; dim]; n];
    }
    let k = params.n_neighbors.clamp(2, n);
    let (knn, dists) = nearest(points, k);
    let graph = fuzzy_union(&knn, &dists, n);
    let n_epochs = if n <= 10_000 { 500 } else { 200 };
    layout(&graph, n, dim, n_epochs, params.seed, params.init)
}

/// Exact k nearest neighbours of every point by cosine distance, nearest first (the point itself
/// at distance 0 first, as umap-learn has it); ties by index.
fn nearest(points: &[Vec<f64>], k: usize) -> (Vec<Vec<usize>>, Vec<Vec<f64>>) {
    let rows: Vec<(Vec<usize>, Vec<f64>)> = (0..points.len())
        .into_par_iter()
        .map(|i| {
            let mut d: Vec<(f64, usize)> = points
                .iter()
                .enumerate()
                .map(|(j, q)| {
                    let dot: f64 = points[i].iter().zip(q).map(|(a, b)| a * b).sum();
                    let dist = if j == i { 0.0 } else { (1.0 - dot).max(0.0) };
                    (dist, j)
                })
                .collect();
            // The point itself first, then by distance and index: a total order, so the
            // partial selection gives the same neighbours as a full sort.
            let order = |a: &(f64, usize), b: &(f64, usize)| {
                (a.1 != i)
                    .cmp(&(b.1 != i))
                    .then(a.0.total_cmp(&b.0))
                    .then(a.1.cmp(&b.1))
            };
            if k < d.len() {
                d.select_nth_unstable_by(k - 1, order);
                d.truncate(k);
            }
            d.sort_by(order);
            (
                d.iter().map(|x| x.1).collect(),
                d.iter().map(|x| x.0).collect(),
            )
        })
        .collect();
    rows.into_iter().unzip()
}

/// umap-learn's `smooth_knn_dist` with local connectivity 1: (σ, ρ) of one point's neighbour
/// distances (its own 0 first).
fn smooth(dists: &[f64], mean_all: f64) -> (f64, f64) {
    const TOLERANCE: f64 = 1e-5;
    const MIN_SCALE: f64 = 1e-3;
    let target = (dists.len() as f64).log2();
    let rho = dists.iter().copied().find(|&d| d > 0.0).unwrap_or(0.0);
    let (mut lo, mut hi, mut mid) = (0.0f64, f64::INFINITY, 1.0f64);
    for _ in 0..64 {
        let psum: f64 = dists[1..]
            .iter()
            .map(|&d| {
                let d = d - rho;
                if d > 0.0 {
                    (-(d / mid)).exp()
                } else {
                    1.0
                }
            })
            .sum();
        if (psum - target).abs() < TOLERANCE {
            break;
        }
        if psum > target {
            hi = mid;
            mid = (lo + hi) / 2.0;
        } else {
            lo = mid;
            mid = if hi.is_infinite() {
                mid * 2.0
            } else {
                (lo + hi) / 2.0
            };
        }
    }
    let floor = if rho > 0.0 {
        MIN_SCALE * dists.iter().sum::<f64>() / dists.len() as f64
    } else {
        MIN_SCALE * mean_all
    };
    (mid.max(floor), rho)
}

/// The symmetric fuzzy graph as (i, j, weight) edges with i ≠ j, both directions, sorted.
fn fuzzy_union(knn: &[Vec<usize>], dists: &[Vec<f64>], n: usize) -> Vec<(usize, usize, f64)> {
    let total: f64 = dists.iter().flatten().sum();
    let count = dists.iter().map(Vec::len).sum::<usize>().max(1);
    let mean_all = total / count as f64;
    let mut directed: std::collections::BTreeMap<(usize, usize), f64> = Default::default();
    for i in 0..n {
        let (sigma, rho) = smooth(&dists[i], mean_all);
        for (&j, &d) in knn[i].iter().zip(&dists[i]) {
            if j == i {
                continue;
            }
            let w = if d - rho <= 0.0 || sigma == 0.0 {
                1.0
            } else {
                (-((d - rho) / sigma)).exp()
            };
            directed.insert((i, j), w);
        }
    }
    let mut edges: std::collections::BTreeMap<(usize, usize), f64> = Default::default();
    for (&(i, j), &w) in &directed {
        let back = directed.get(&(j, i)).copied().unwrap_or(0.0);
        let union = w + back - w * back;
        edges.insert((i, j), union);
        edges.insert((j, i), union);
    }
    edges
        .into_iter()
        .filter(|&(_, w)| w > 0.0)
        .map(|((i, j), w)| (i, j, w))
        .collect()
}

/// Each axis moved and scaled onto [0, 10], as umap-learn does after its start layout.
fn rescale(mut emb: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
    let dim = emb.first().map_or(0, Vec::len);
    for d in 0..dim {
        let lo = emb.iter().map(|r| r[d]).fold(f64::INFINITY, f64::min);
        let hi = emb.iter().map(|r| r[d]).fold(f64::NEG_INFINITY, f64::max);
        let span = if hi > lo { hi - lo } else { 1.0 };
        for row in &mut emb {
            row[d] = 10.0 * (row[d] - lo) / span;
        }
    }
    emb
}

/// Gradient clip of umap-learn.
fn clip(x: f64) -> f64 {
    x.clamp(-4.0, 4.0)
}

/// umap-learn's `optimize_layout_euclidean`, sequential and seeded.
fn layout(
    graph: &[(usize, usize, f64)],
    n: usize,
    dim: usize,
    n_epochs: usize,
    seed: u64,
    init: Init,
) -> Vec<Vec<f64>> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut uniform = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let max_w = graph.iter().map(|e| e.2).fold(0.0f64, f64::max);
    let edges: Vec<&(usize, usize, f64)> = graph
        .iter()
        .filter(|e| max_w > 0.0 && e.2 >= max_w / n_epochs as f64)
        .collect();
    let start = match init {
        Init::Spectral if !edges.is_empty() => spectral_start(&edges, n, dim, &mut uniform),
        _ => None,
    };
    let mut emb: Vec<Vec<f64>> = match start {
        Some(start) => rescale(start),
        None => (0..n)
            .map(|_| (0..dim).map(|_| 10.0 * uniform()).collect())
            .collect(),
    };
    if edges.is_empty() {
        return emb;
    }
    let epochs_per_sample: Vec<f64> = edges
        .iter()
        .map(|e| n_epochs as f64 / (n_epochs as f64 * e.2 / max_w))
        .collect();
    const NEGATIVE_RATE: f64 = 5.0;
    let per_negative: Vec<f64> = epochs_per_sample
        .iter()
        .map(|e| e / NEGATIVE_RATE)
        .collect();
    let mut next_sample = epochs_per_sample.clone();
    let mut next_negative = per_negative.clone();
    let mut pick = {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed.wrapping_add(1));
        move || (rng.next_u64() % n as u64) as usize
    };
    let mut grad = vec![0.0f64; dim];
    for epoch in 0..n_epochs {
        let alpha = 1.0 - epoch as f64 / n_epochs as f64;
        let now = epoch as f64;
        for (e, &&(j, k, _)) in edges.iter().enumerate() {
            if next_sample[e] > now {
                continue;
            }
            let d2: f64 = (0..dim).map(|d| (emb[j][d] - emb[k][d]).powi(2)).sum();
            let coeff = if d2 > 0.0 {
                -2.0 * A * B * d2.powf(B - 1.0) / (A * d2.powf(B) + 1.0)
            } else {
                0.0
            };
            for (g, (x, y)) in grad.iter_mut().zip(emb[j].iter().zip(&emb[k])) {
                *g = clip(coeff * (x - y));
            }
            for (d, g) in grad.iter().enumerate() {
                emb[j][d] += g * alpha;
                emb[k][d] -= g * alpha;
            }
            next_sample[e] += epochs_per_sample[e];
            let negatives = ((now - next_negative[e]) / per_negative[e]).max(0.0) as usize;
            for _ in 0..negatives {
                let other = pick();
                if other == j {
                    continue;
                }
                let d2: f64 = (0..dim).map(|d| (emb[j][d] - emb[other][d]).powi(2)).sum();
                if d2 <= 0.0 {
                    continue;
                }
                let coeff = 2.0 * B / ((0.001 + d2) * (A * d2.powf(B) + 1.0));
                for (g, (x, y)) in grad.iter_mut().zip(emb[j].iter().zip(&emb[other])) {
                    *g = clip(coeff * (x - y));
                }
                for (x, g) in emb[j].iter_mut().zip(&grad) {
                    *x += g * alpha;
                }
            }
            next_negative[e] += negatives as f64 * per_negative[e];
        }
    }
    emb
}

#[cfg(test)]
mod tests {
    use super::spectral::laplacian_eigenvectors;
    use super::*;

    fn unit(v: Vec<f64>) -> Vec<f64> {
        let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    /// Two tight groups of 25 points around orthogonal directions.
    fn two_groups() -> Vec<Vec<f64>> {
        (0..50)
            .map(|i| {
                let mut v = vec![0.0; 8];
                v[if i < 25 { 0 } else { 4 }] = 1.0;
                v[1 + (i % 3)] = 0.05 * (i % 7) as f64;
                v[5 + (i % 3)] += 0.05 * (i % 5) as f64;
                unit(v)
            })
            .collect()
    }

    #[test]
    fn the_same_seed_gives_the_same_layout_and_groups_stay_apart() {
        let points = two_groups();
        let params = UmapParams::default();
        let a = embed(&points, &params);
        assert_eq!(a, embed(&points, &params));
        assert_eq!(a.len(), 50);
        assert!(a
            .iter()
            .all(|r| r.len() == 5 && r.iter().all(|x| x.is_finite())));
        let centre = |rows: &[Vec<f64>]| -> Vec<f64> {
            (0..5)
                .map(|d| rows.iter().map(|r| r[d]).sum::<f64>() / rows.len() as f64)
                .collect()
        };
        let dist = |x: &[f64], y: &[f64]| -> f64 {
            x.iter()
                .zip(y)
                .map(|(a, b)| (a - b).powi(2))
                .sum::<f64>()
                .sqrt()
        };
        let (c0, c1) = (centre(&a[..25]), centre(&a[25..]));
        let spread0 = a[..25].iter().map(|r| dist(r, &c0)).fold(0.0, f64::max);
        let spread1 = a[25..].iter().map(|r| dist(r, &c1)).fold(0.0, f64::max);
        // The groups end up farther apart than either is wide.
        assert!(
            dist(&c0, &c1) > spread0.max(spread1),
            "{c0:?} {c1:?} {spread0} {spread1}"
        );
        let other = embed(&points, &UmapParams { seed: 7, ..params });
        assert_ne!(a, other, "the seed moves the layout");
    }

    #[test]
    fn laplacian_eigenvectors_of_a_ring_are_its_first_harmonics() {
        // A ring of 30 points, equal weights: D^-½ W D^-½ has eigenvalues cos(2πj/30); the
        // second largest is a repeated pair (cosine and sine), which a single-start Lanczos
        // iteration would miss half of.
        let n = 30;
        let edges: Vec<(usize, usize, f64)> = (0..n)
            .flat_map(|i| [(i, (i + 1) % n, 1.0), ((i + 1) % n, i, 1.0)])
            .collect();
        let refs: Vec<&(usize, usize, f64)> = edges.iter().collect();
        let idx: Vec<usize> = (0..n).collect();
        let vectors = laplacian_eigenvectors(&refs, &idx, 2).expect("30 points");
        let lambda = (std::f64::consts::TAU / n as f64).cos();
        let column = |d: usize| -> Vec<f64> { vectors.iter().map(|r| r[d]).collect() };
        let (u, v) = (column(0), column(1));
        for x in [&u, &v] {
            // M x = ½ (x[i−1] + x[i+1]) on a ring of degree 2.
            let norm = x.iter().map(|a| a * a).sum::<f64>().sqrt();
            assert!((norm - 1.0).abs() < 1e-8, "{norm}");
            for i in 0..n {
                let mx = 0.5 * (x[(i + n - 1) % n] + x[(i + 1) % n]);
                assert!(
                    (mx - lambda * x[i]).abs() < 1e-8,
                    "{i}: {mx} vs {}",
                    lambda * x[i]
                );
            }
        }
        let cross: f64 = u.iter().zip(&v).map(|(a, b)| a * b).sum();
        assert!(cross.abs() < 1e-8, "{cross}");
    }

    #[test]
    fn smooth_knn_dist_matches_the_target_sum() {
        let dists = [0.0, 0.1, 0.2, 0.25, 0.4, 0.5];
        let (sigma, rho) = smooth(&dists, 0.3);
        assert_eq!(rho, 0.1);
        let psum: f64 = dists[1..]
            .iter()
            .map(|&d| (-((d - rho).max(0.0)) / sigma).exp())
            .sum();
        assert!((psum - (6f64).log2()).abs() < 1e-4, "{psum}");
    }

    #[test]
    fn tiny_inputs_do_not_fail() {
        assert_eq!(embed(&[], &UmapParams::default()).len(), 0);
        assert_eq!(
            embed(&[vec![1.0, 0.0]], &UmapParams::default()),
            vec![vec![0.0; 5]]
        );
        let same = vec![vec![1.0, 0.0]; 4];
        let out = embed(&same, &UmapParams::default());
        assert!(out.iter().flatten().all(|x| x.is_finite()));
    }
}
