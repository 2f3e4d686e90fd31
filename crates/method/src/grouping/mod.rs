//! Clustering on its own, with no notion of events or episodes: the UMAP layout ([`umap`]),
//! HDBSCAN density clusters over it ([`density`]) and agglomerative clustering cut at a
//! distance ([`linkage`]).

pub mod density;
pub mod linkage;
pub mod umap;
