//! Density clusters of one key event's sentence embeddings: HDBSCAN (Campello et al. 2013, the
//! clustering BERTopic uses) over the UMAP layout of the L2-normalised embeddings (BERTopic's
//! pipeline; [`super::umap`]), or over the normalised embeddings themselves, where euclidean
//! distance orders pairs as cosine does. Points in no cluster are noise. Each cluster's members are ranked by
//! membership: 1 − the GLOSH outlier score (how early a point joins its cluster's dense core,
//! relative to the cluster's densest point), ties by cosine to the cluster's mean embedding.
//!
//! The clustering is petal-clustering's (excess-of-mass selection, GLOSH scores) with Prim's
//! minimum spanning tree, which depends on no thread schedule; clusters are numbered by their
//! first member, so the same embeddings always give the same clusters.

use ndarray17::Array2;
use petal_clustering::{Fit, HDbscan};
use petal_neighbors::distance::{Euclidean, Metric};

use super::umap::{self, UmapParams};

/// Euclidean distance with a floor: identical texts have identical embeddings, and a distance of
/// 0 would make a density (1 / distance) infinite.
#[derive(Debug, Clone, Default)]
struct Floored(Euclidean);

/// Smallest distance between two points (unit vectors: distances lie in [0, 2]).
const FLOOR: f64 = 1e-6;

impl Metric<f64> for Floored {
    fn distance(&self, a: &ndarray17::ArrayView1<f64>, b: &ndarray17::ArrayView1<f64>) -> f64 {
        self.0.distance(a, b).max(FLOOR)
    }
    fn rdistance(&self, a: &ndarray17::ArrayView1<f64>, b: &ndarray17::ArrayView1<f64>) -> f64 {
        self.0.rdistance(a, b).max(FLOOR * FLOOR)
    }
    fn rdistance_to_distance(&self, d: f64) -> f64 {
        self.0.rdistance_to_distance(d)
    }
    fn distance_to_rdistance(&self, d: f64) -> f64 {
        self.0.distance_to_rdistance(d)
    }
}

/// What the clustering runs on.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Reduce {
    /// The normalised embeddings themselves.
    None,
    /// Their UMAP layout ([`super::umap`], BERTopic's settings: 5 dimensions, 15 neighbours,
    /// cosine, min_dist 0).
    Umap,
}

/// HDBSCAN settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DensityParams {
    /// Dimension reduction before clustering (default UMAP: in 384 dimensions every distance
    /// looks alike and HDBSCAN finds few clusters; see docs/quality.md).
    pub reduce: Reduce,
    /// UMAP settings.
    pub umap: UmapParams,
    /// UMAP + HDBSCAN passes (seeds `umap.seed`, `umap.seed + 1`, …) whose consensus gives
    /// the clusters; 1: a single pass.
    pub runs: usize,
    /// Smallest cluster (BERTopic's `min_topic_size`, default 10).
    pub min_cluster_size: usize,
    /// Neighbours that define a point's core distance (0: the same as `min_cluster_size`, as
    /// the Python `hdbscan` package does).
    pub min_samples: usize,
}

impl Default for DensityParams {
    fn default() -> Self {
        Self {
            reduce: Reduce::Umap,
            umap: UmapParams::default(),
            runs: 1,
            min_cluster_size: 10,
            min_samples: 0,
        }
    }
}

/// Why the clustering failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize)]
pub enum DensityError {
    /// `min_cluster_size` below 2.
    #[error("min_cluster_size must be at least 2, got {0}")]
    MinClusterSize(usize),
    /// An embedding holds NaN or infinity.
    #[error("embedding {0} is not finite")]
    NotFinite(usize),
    /// Embeddings of different widths.
    #[error("embedding {index} has {got} dimensions, the first has {want}")]
    Width {
        /// The embedding.
        index: usize,
        /// Its width.
        got: usize,
        /// The first one's.
        want: usize,
    },
    /// The clustering library gave up on this input.
    #[error("HDBSCAN failed on {points} points: {message}")]
    Library {
        /// Points clustered.
        points: usize,
        /// Its message.
        message: String,
    },
}

/// One density cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct DensityCluster {
    /// Indices into the embeddings, most central first.
    pub members: Vec<usize>,
    /// Membership of each member (same order), in [0, 1].
    pub membership: Vec<f64>,
}

impl DensityParams {
    /// Checks the settings before any work.
    pub fn validate(&self) -> Result<(), DensityError> {
        if self.min_cluster_size < 2 {
            return Err(DensityError::MinClusterSize(self.min_cluster_size));
        }
        Ok(())
    }
}

/// HDBSCAN over `embeddings`; fewer points than `min_cluster_size + 1` give no cluster.
pub fn clusters(
    embeddings: &[Vec<f32>],
    params: &DensityParams,
) -> Result<Vec<DensityCluster>, DensityError> {
    params.validate()?;
    let n = embeddings.len();
    if n <= params.min_cluster_size {
        return Ok(Vec::new());
    }
    let dim = embeddings[0].len();
    let mut data = Array2::<f64>::zeros((n, dim));
    for (i, e) in embeddings.iter().enumerate() {
        if e.len() != dim {
            return Err(DensityError::Width {
                index: i,
                got: e.len(),
                want: dim,
            });
        }
        if e.iter().any(|x| !x.is_finite()) {
            return Err(DensityError::NotFinite(i));
        }
        let norm = e.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
        let norm = if norm > 0.0 { norm } else { 1.0 };
        for (j, &x) in e.iter().enumerate() {
            data[[i, j]] = f64::from(x) / norm;
        }
    }
    let runs = match params.reduce {
        Reduce::None => 1,
        Reduce::Umap => params.runs.max(1),
    };
    let (groups, membership) = if runs == 1 {
        let (groups, outlier) = hdbscan_pass(&data, params, params.umap.seed)?;
        // Membership: 1 − the GLOSH outlier score.
        let membership: Vec<f64> = (0..n)
            .map(|i| {
                let score = outlier.get(i).copied().unwrap_or(1.0);
                if score.is_finite() {
                    (1.0 - score).clamp(0.0, 1.0)
                } else {
                    0.0
                }
            })
            .collect();
        (groups, membership)
    } else {
        consensus(&data, params, runs)?
    };
    Ok(groups
        .into_iter()
        .map(|members| {
            let mut centroid = vec![0f64; dim];
            for &i in &members {
                for (c, x) in centroid.iter_mut().zip(data.row(i)) {
                    *c += x;
                }
            }
            let norm = centroid
                .iter()
                .map(|c| c * c)
                .sum::<f64>()
                .sqrt()
                .max(1e-12);
            let mut ranked: Vec<(f64, f64, usize)> = members
                .iter()
                .map(|&i| {
                    let cos = data
                        .row(i)
                        .iter()
                        .zip(&centroid)
                        .map(|(a, b)| a * b)
                        .sum::<f64>()
                        / norm;
                    (membership[i], cos, i)
                })
                .collect();
            ranked.sort_by(|a, b| {
                b.0.total_cmp(&a.0)
                    .then(b.1.total_cmp(&a.1))
                    .then(a.2.cmp(&b.2))
            });
            DensityCluster {
                members: ranked.iter().map(|r| r.2).collect(),
                membership: ranked.iter().map(|r| r.0).collect(),
            }
        })
        .collect())
}

/// One HDBSCAN pass over the normalised embeddings `data` (or their UMAP layout with `seed`):
/// the clusters (members ascending, clusters by first member) and every point's GLOSH outlier
/// score.
fn hdbscan_pass(
    data: &Array2<f64>,
    params: &DensityParams,
    seed: u64,
) -> Result<(Vec<Vec<usize>>, Vec<f64>), DensityError> {
    let n = data.nrows();
    let space = match params.reduce {
        Reduce::None => data.clone(),
        Reduce::Umap => {
            let rows: Vec<Vec<f64>> = data.rows().into_iter().map(|r| r.to_vec()).collect();
            let layout = umap::embed(
                &rows,
                &UmapParams {
                    seed,
                    ..params.umap
                },
            );
            let width = layout.first().map_or(0, Vec::len);
            Array2::from_shape_fn((n, width), |(i, j)| layout[i][j])
        }
    };
    let min_samples = if params.min_samples == 0 {
        params.min_cluster_size
    } else {
        params.min_samples
    }
    .min(n - 1);
    let mut model = HDbscan {
        alpha: 1.0,
        min_samples,
        min_cluster_size: params.min_cluster_size,
        metric: Floored::default(),
        boruvka: false,
    };
    // The library asserts its invariants with panics; a panic on some input becomes this
    // event's error instead of ending the run.
    let fitted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        model.fit(&space.view(), None)
    }));
    let (found, _noise, outlier) = fitted.map_err(|panic| DensityError::Library {
        points: n,
        message: panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panicked".into()),
    })?;
    let mut groups: Vec<Vec<usize>> = found
        .into_values()
        .map(|mut m| {
            m.sort_unstable();
            m
        })
        .filter(|m| !m.is_empty())
        .collect();
    groups.sort_unstable_by_key(|m| m[0]);
    Ok((groups, outlier))
}

/// Consensus of `runs` UMAP + HDBSCAN passes (seeds `seed`, `seed + 1`, …): two points'
/// co-association is the share of passes that put them in one cluster; average linkage over
/// 1 − co-association, cut at ½ (together in at least half the passes, on average), and
/// clusters below `min_cluster_size` are noise. A point's membership is its mean
/// co-association with the rest of its cluster. One UMAP layout is one draw of a stochastic
/// optimisation; on the development set one draw moved 5-F1 by ±7 points.
fn consensus(
    data: &Array2<f64>,
    params: &DensityParams,
    runs: usize,
) -> Result<(Vec<Vec<usize>>, Vec<f64>), DensityError> {
    let n = data.nrows();
    let mut label: Vec<Vec<Option<u32>>> = Vec::with_capacity(runs);
    for r in 0..runs {
        let (groups, _) = hdbscan_pass(data, params, params.umap.seed.wrapping_add(r as u64))?;
        let mut of = vec![None; n];
        for (c, members) in groups.iter().enumerate() {
            for &i in members {
                of[i] = Some(c as u32);
            }
        }
        label.push(of);
    }
    let together = |i: usize, j: usize| -> f64 {
        label
            .iter()
            .filter(|of| of[i].is_some() && of[i] == of[j])
            .count() as f64
            / runs as f64
    };
    let mut condensed = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            condensed.push(1.0 - together(i, j));
        }
    }
    let labels = super::linkage::linkage_cut(&condensed, n, kodama::Method::Average, 0.5);
    let k = labels.iter().copied().max().map_or(0, |m| m + 1);
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); k];
    for (i, &l) in labels.iter().enumerate() {
        groups[l].push(i);
    }
    groups.retain(|g| g.len() >= params.min_cluster_size);
    let mut membership = vec![0.0; n];
    for g in &groups {
        for &i in g {
            membership[i] = g
                .iter()
                .filter(|&&j| j != i)
                .map(|&j| together(i, j))
                .sum::<f64>()
                / (g.len() - 1) as f64;
        }
    }
    Ok((groups, membership))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points on a ring of radius `r` around `axis` (unit vectors after normalisation).
    fn blob(axis: usize, n: usize, spread: f32) -> Vec<Vec<f32>> {
        (0..n)
            .map(|i| {
                let mut v = vec![0f32; 4];
                v[axis] = 1.0;
                v[(axis + 1) % 4] = spread * ((i % 7) as f32 - 3.0) / 3.0;
                v[(axis + 2) % 4] = spread * ((i % 5) as f32 - 2.0) / 2.0;
                v
            })
            .collect()
    }

    #[test]
    fn two_separated_blobs_are_two_clusters_and_a_stray_point_is_noise() {
        let mut points = blob(0, 20, 0.05);
        points.extend(blob(2, 15, 0.05));
        points.push(vec![0.0, 1.0, 0.0, 1.0]); // far from both
        let found = clusters(
            &points,
            &DensityParams {
                reduce: Reduce::None,
                min_cluster_size: 5,
                ..DensityParams::default()
            },
        )
        .unwrap();
        assert_eq!(found.len(), 2);
        let mut first = found[0].members.clone();
        first.sort_unstable();
        assert_eq!(first, (0..20).collect::<Vec<_>>());
        let mut second = found[1].members.clone();
        second.sort_unstable();
        assert_eq!(second, (20..35).collect::<Vec<_>>());
        assert!(found.iter().all(|c| !c.members.contains(&35)));
        for c in &found {
            assert!(c.membership.windows(2).all(|w| w[0] >= w[1]));
            assert!(c.membership.iter().all(|m| (0.0..=1.0).contains(m)));
        }
    }

    #[test]
    fn the_umap_layout_keeps_separated_blobs_apart_and_repeats() {
        let mut points = blob(0, 30, 0.05);
        points.extend(blob(2, 25, 0.05));
        let params = DensityParams {
            min_cluster_size: 5,
            ..DensityParams::default()
        };
        assert_eq!(params.reduce, Reduce::Umap);
        let found = clusters(&points, &params).unwrap();
        assert_eq!(found, clusters(&points, &params).unwrap());
        assert!(found.len() >= 2, "{found:?}");
        // No cluster mixes the two blobs.
        for c in &found {
            assert!(
                c.members.iter().all(|&i| i < 30) || c.members.iter().all(|&i| i >= 30),
                "{c:?}"
            );
        }
    }

    #[test]
    fn duplicates_small_inputs_and_bad_values_never_panic() {
        // Thirty identical points: distances 0 everywhere.
        let same = vec![vec![0.5f32, 0.5, 0.0, 0.0]; 30];
        let found = clusters(&same, &DensityParams::default()).unwrap();
        assert!(found.iter().map(|c| c.members.len()).sum::<usize>() <= 30);
        assert!(clusters(&same[..5], &DensityParams::default())
            .unwrap()
            .is_empty());
        let mut bad = same.clone();
        bad[3][1] = f32::NAN;
        assert_eq!(
            clusters(&bad, &DensityParams::default()),
            Err(DensityError::NotFinite(3))
        );
        assert_eq!(
            clusters(
                &same,
                &DensityParams {
                    min_cluster_size: 1,
                    ..DensityParams::default()
                }
            ),
            Err(DensityError::MinClusterSize(1))
        );
    }
}
