//! §5 without an LLM and §6 for one key event: episodes from the kept candidate clusters
//! ([`cluster_episodes`]), every segment classified against a set of episodes and the rules that
//! keep an episode ([`assign`]).

use super::event::{EpisodeSpec, EventInput};
use super::floor::{apply_floor, split_cores, top_core};
use super::params::{Candidates, EpisodeParams};
use super::preparation::{by_salience, Prepared};
use super::{classify, select, termspace};
use crate::progress::steps::Steps;
use crate::tables::{Assignment, Episode};

/// §5 without an LLM (the paper's ablation): each kept candidate cluster is an episode whose
/// vector is the harmonic-weighted mean of its segments' embeddings by descending salience
/// (§6). With `params.merge`, candidates whose vectors are close are first merged.
pub fn cluster_episodes(
    input: &EventInput,
    prepared: &Prepared,
    params: &EpisodeParams,
) -> Vec<EpisodeSpec> {
    let vector_of = |members: &[usize]| {
        let vectors: Vec<&[f32]> = members
            .iter()
            .map(|&s| input.embeddings[s].as_slice())
            .collect();
        classify::harmonic_mean_vector(&vectors)
    };
    let mut groups = prepared.groups.clone();
    if params.merge && params.candidates != Candidates::Density && groups.len() > 2 {
        // Candidates that tell the same episode: complete linkage of their episode vectors
        // (cosine distance) cut at μ − σ, the method's own significance rule.
        let vectors: Vec<Vec<f32>> = groups.iter().map(|g| vector_of(g)).collect();
        let mut condensed = Vec::new();
        for i in 0..vectors.len() {
            for j in i + 1..vectors.len() {
                condensed.push(1.0 - termspace::cosine(&vectors[i], &vectors[j]));
            }
        }
        let merged = crate::grouping::linkage::linkage_cut_floor(
            &condensed,
            vectors.len(),
            kodama::Method::Complete,
            params.merge_cut.bound(&condensed),
            params.min_episodes,
        );
        let n = merged.iter().copied().max().map_or(0, |m| m + 1);
        let mut joined: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (g, label) in groups.into_iter().zip(merged) {
            joined[label].extend(g);
        }
        groups = joined
            .into_iter()
            .map(|g| by_salience(g, &prepared.scores))
            .collect();
        if params.split {
            let bound = params.merge_cut.bound(&condensed);
            groups = groups
                .into_iter()
                .flat_map(|g| match split_cores(input.embeddings, &g, bound) {
                    Some((a, b)) => vec![a, b],
                    None => vec![g],
                })
                .collect();
        }
    }
    let keywords = prepared.keywords(&groups, params.keywords);
    groups
        .iter()
        .zip(keywords)
        .map(|(g, keywords)| EpisodeSpec {
            vector: vector_of(g),
            title: keywords
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(" "),
            title_fields: Vec::new(),
            keywords,
            example_sentences: Vec::new(),
            source: "clusters",
        })
        .collect()
}

/// §6: classifies every segment of the event against the episodes (paper eq. 2), drops
/// episodes with fewer than `min_segments` segments, then those below the cohesion rule
/// (`params.cohesion`), then those below the size rule (`params.size`) and the core rule
/// (`params.core`), brings tight dropped ones back up to `params.min_episodes`
/// (`floor::apply_floor`), keeps the `params.max_episodes` largest, and ranks each
/// episode's segments by `params.rank` (density among its own segments by default; eq. 2
/// confidence as docs/method.md §6 says with `rank = "confidence"`).
/// Episode ids count from 0 within the trial.
pub fn assign(
    input: &EventInput,
    key_event: &str,
    episodes_in: &[EpisodeSpec],
    params: &EpisodeParams,
    trial: u32,
    steps: &Steps,
) -> (Vec<Episode>, Vec<Assignment>) {
    let segs = input.segments;
    let vectors: Vec<Vec<f32>> = episodes_in.iter().map(|c| c.vector.clone()).collect();
    let classified = classify::classify(input.embeddings, &vectors, params.confidence, steps);
    let mut members: Vec<Vec<(f64, usize)>> = vec![Vec::new(); episodes_in.len()];
    for (s, c) in classified.iter().enumerate() {
        if c.assigned {
            let key = match params.rank {
                classify::RankBy::Confidence => c.confidence,
                classify::RankBy::Similarity | classify::RankBy::Density => c.similarity,
            };
            members[c.episode].push((key, s));
        }
    }
    let mut episodes = Vec::new();
    let mut assignments = Vec::new();
    // Episodes kept: enough segments (§6), then significantly cohesive ones among those, then
    // significantly large ones among those.
    let mut kept: Vec<bool> = members
        .iter()
        .map(|m| m.len() >= params.min_segments)
        .collect();
    select::narrow(
        &mut kept,
        |e| -> Vec<f64> {
            members[e]
                .iter()
                .map(|&(_, s)| classified[s].similarity)
                .collect()
        },
        |similarities| select::cohesive(similarities, params.cohesion),
    );
    select::narrow(
        &mut kept,
        |e| members[e].len(),
        |sizes| select::large_enough(sizes, params.size),
    );
    // Densities among each episode's members (at most `max_ranked` of them compared), once.
    steps.stage("episode cores and ranks", members.len());
    let densities: Vec<std::cell::OnceCell<Vec<Option<f64>>>> = (0..members.len())
        .map(|_| std::cell::OnceCell::new())
        .collect();
    let density_of = |e: usize| -> &Vec<Option<f64>> {
        densities[e].get_or_init(|| {
            steps.inc(1);
            let ids: Vec<usize> = members[e].iter().map(|&(_, s)| s).collect();
            let similarity: Vec<f64> = ids.iter().map(|&s| classified[s].similarity).collect();
            classify::ranked_density(
                input.embeddings,
                &ids,
                &similarity,
                params.rank_neighbors,
                params.max_ranked,
            )
        })
    };
    let core_of = |e: usize| top_core(density_of(e));
    if params.core != select::CohesionRule::All {
        select::narrow(&mut kept, core_of, |cores| {
            select::cohesive(cores, params.core)
        });
    }
    apply_floor(&mut kept, &members, core_of, params);
    if params.max_episodes > 0 {
        // The largest episodes, ties by index.
        let mut by_size: Vec<usize> = (0..kept.len()).filter(|&e| kept[e]).collect();
        by_size.sort_by(|&a, &b| members[b].len().cmp(&members[a].len()).then(a.cmp(&b)));
        for &e in by_size.iter().skip(params.max_episodes) {
            kept[e] = false;
        }
    }
    for (e, spec) in episodes_in.iter().enumerate() {
        if !kept[e] {
            continue;
        }
        let mut segs_of = members[e].clone();
        if params.rank == classify::RankBy::Density {
            // The compared members by density, then the rest by similarity (their key).
            let mut keyed: Vec<(bool, f64, usize)> = segs_of
                .iter()
                .zip(density_of(e))
                .map(|(&(similarity, s), d)| (d.is_some(), d.unwrap_or(similarity), s))
                .collect();
            keyed.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
            segs_of = keyed.into_iter().map(|(_, key, s)| (key, s)).collect();
        } else {
            segs_of.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        }
        let episode_id = episodes.len() as u32;
        let span = crate::tables::EpisodeSpan::of(
            segs_of
                .iter()
                .map(|&(_, s)| (segs[s].doc_id, segs[s].doc_date)),
        );
        episodes.push(Episode {
            key_event: key_event.to_string(),
            trial,
            episode_id,
            title: spec.title.clone(),
            title_fields: spec.title_fields.clone(),
            keywords: spec.keywords.clone(),
            example_sentences: spec.example_sentences.clone(),
            n_segments: segs_of.len() as u32,
            source: spec.source.into(),
            n_articles: span.n_articles,
            first_date: span.first_date,
            peak_date: span.peak_date,
            last_date: span.last_date,
        });
        for (rank, (_, s)) in segs_of.into_iter().enumerate() {
            let confidence = classified[s].confidence;
            assignments.push(Assignment {
                key_event: key_event.to_string(),
                trial,
                episode_id,
                doc_id: segs[s].doc_id,
                seg_idx: segs[s].seg_idx,
                rank: rank as u32,
                confidence,
            });
        }
    }
    (episodes, assignments)
}

/// §5 without an LLM, then §6: the kept candidate clusters (merged with `params.merge`) as
/// episodes ([`cluster_episodes`]), every segment classified against them ([`assign`]). Returns
/// the number of candidate episodes with the episodes and assignments kept.
pub fn episodes_without_llm(
    input: &EventInput,
    prepared: &Prepared,
    params: &EpisodeParams,
    trial: u32,
    steps: &Steps,
) -> (usize, Vec<Episode>, Vec<Assignment>) {
    steps.stage("episode vectors and merge", 0);
    let specs = cluster_episodes(input, prepared, params);
    let (episodes, assignments) = assign(input, &prepared.key_event, &specs, params, trial, steps);
    (specs.len(), episodes, assignments)
}
