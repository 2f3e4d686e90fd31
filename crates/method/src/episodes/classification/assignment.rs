//! §5 without an LLM and §6's output for one key event: episodes from the kept candidate
//! clusters ([`cluster_episodes`]), the selection of [`crate::episodes::classification::selection`] over them, and the
//! kept episodes and left-out segments as rows ([`assign`], [`emit`], [`left_out`]).

use std::collections::BTreeMap;

use crate::episodes::classification::classify;
use crate::episodes::classification::episode_floor::split_cores;
use crate::episodes::classification::join;
use crate::episodes::classification::phases;
use crate::episodes::classification::selection::{select_episodes, Selection};
use crate::episodes::classification::uncovered_groups;
use crate::episodes::clusters::preparation::{by_salience, Prepared};
use crate::episodes::event::{EpisodeSpec, EventInput};
use crate::episodes::params::{Candidates, EpisodeParams};
use crate::episodes::terms::termspace;
use crate::progress::steps::Steps;
use crate::tables::{Assignment, Episode, LeftOut};

/// §5 without an LLM (the paper's ablation): each kept candidate cluster is an episode whose
/// vector is the harmonic-weighted mean of its segments' embeddings by descending salience
/// (§6). With `params.merge`, candidates whose vectors are close are first merged.
pub fn cluster_episodes(
    input: &EventInput,
    prepared: &Prepared,
    params: &EpisodeParams,
) -> Vec<EpisodeSpec> {
    let mut groups = prepared.groups.clone();
    if params.merge && params.candidates != Candidates::Density && groups.len() > 2 {
        // Candidates that tell the same episode: complete linkage of their episode vectors
        // (cosine distance) cut at μ − σ, the method's own significance rule.
        let vectors: Vec<Vec<f32>> = groups
            .iter()
            .map(|g| classify::harmonic_vector_of(input.embeddings, g))
            .collect();
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
        tracing::debug!("merge: group g → candidate episode {merged:?}");
        groups = regroup(groups, &merged, &prepared.scores);
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
    specs_of(input, prepared, &groups, params, "clusters")
}

/// The union of the `groups` that share a label (`labels[g]`, numbered from 0), each by
/// descending salience ([`by_salience`]).
fn regroup(groups: Vec<Vec<usize>>, labels: &[usize], scores: &[f64]) -> Vec<Vec<usize>> {
    let n = labels.iter().copied().max().map_or(0, |m| m + 1);
    let mut joined: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (g, &label) in groups.into_iter().zip(labels) {
        joined[label].extend(g);
    }
    joined.into_iter().map(|g| by_salience(g, scores)).collect()
}

/// Episode specs of candidate `groups` (segments by descending salience): the harmonic-weighted
/// mean vector (§6) and the keywords that set each apart ([`Prepared::keywords`]).
fn specs_of(
    input: &EventInput,
    prepared: &Prepared,
    groups: &[Vec<usize>],
    params: &EpisodeParams,
    source: &'static str,
) -> Vec<EpisodeSpec> {
    let keywords = prepared.keywords(groups, params.keywords);
    groups
        .iter()
        .zip(keywords)
        .map(|(g, keywords)| EpisodeSpec {
            vector: classify::harmonic_vector_of(input.embeddings, g),
            title: crate::episodes::naming::names::title_of(&keywords),
            title_fields: Vec::new(),
            keywords,
            example_sentences: Vec::new(),
            source,
        })
        .collect()
}

/// §6: the kept episodes of a [`Selection`] as rows, each episode's segments ranked by
/// `params.rank` (density among its own segments by default; eq. 2 confidence as
/// docs/method.md §6 says with `rank = "confidence"`). Episode ids count from 0 within the
/// trial, in the candidates' order.
pub fn emit(
    input: &EventInput,
    key_event: &str,
    episodes_in: &[EpisodeSpec],
    selection: &Selection,
    params: &EpisodeParams,
    trial: u32,
) -> (Vec<Episode>, Vec<Assignment>) {
    let segs = input.segments;
    let mut episodes = Vec::new();
    let mut assignments = Vec::new();
    for (e, spec) in episodes_in.iter().enumerate() {
        if !selection.kept(e) {
            continue;
        }
        let mut segs_of = selection.members[e].clone();
        if let (classify::RankBy::Density, Some(density)) = (params.rank, &selection.densities[e]) {
            // The compared members by density, then the rest by similarity (their key).
            let mut keyed: Vec<(bool, f64, usize)> = segs_of
                .iter()
                .zip(density)
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
            stable_id: None,
            status: None,
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
            phase_id: episode_id,
            phase_stable_id: None,
        });
        for (rank, (_, s)) in segs_of.into_iter().enumerate() {
            assignments.push(Assignment {
                key_event: key_event.to_string(),
                trial,
                episode_id,
                stable_id: None,
                status: None,
                doc_id: segs[s].doc_id,
                seg_idx: segs[s].seg_idx,
                rank: rank as u32,
                confidence: selection.classified[s].confidence,
            });
        }
    }
    let dates: Vec<Option<i32>> = segs.iter().map(|s| s.doc_date).collect();
    let kept: Vec<Vec<usize>> = (0..episodes_in.len())
        .filter(|&e| selection.kept(e))
        .map(|e| selection.members[e].iter().map(|&(_, s)| s).collect())
        .collect();
    for (episode, phase) in episodes
        .iter_mut()
        .zip(phases::phases(input.embeddings, &dates, &kept))
    {
        episode.phase_id = phase as u32;
    }
    (episodes, assignments)
}

/// Why each segment of a [`Selection`] is in no episode, one [`LeftOut`] row each, by article
/// and segment: `below-confidence` (its confidence is under the significance bound of eq. 2, so
/// it was assigned nowhere) or `episode-dropped-by-<rule>` (it was assigned to a candidate
/// episode that rule dropped, [`crate::episodes::classification::selection::Dropped::name`]). Every segment not in a kept episode has
/// exactly one row.
pub fn left_out(
    input: &EventInput,
    key_event: &str,
    selection: &Selection,
    trial: u32,
) -> Vec<LeftOut> {
    let mut rows: Vec<LeftOut> = selection
        .classified
        .iter()
        .enumerate()
        .filter_map(|(s, c)| {
            let reason = if !c.assigned {
                "below-confidence".to_string()
            } else {
                format!(
                    "episode-dropped-by-{}",
                    selection.dropped[c.episode]?.name()
                )
            };
            let seg = &input.segments[s];
            Some(LeftOut {
                key_event: key_event.to_string(),
                trial,
                doc_id: seg.doc_id,
                seg_idx: seg.seg_idx,
                reason,
                confidence: c.confidence,
                similarity: c.similarity,
            })
        })
        .collect();
    rows.sort_by_key(|r| (r.doc_id, r.seg_idx));
    rows
}

/// The [`left_out`] rows of one trial counted by reason (`run.json`'s `counts.left_out`).
pub fn left_out_counts(rows: &[LeftOut], trial: u32) -> BTreeMap<String, usize> {
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.trial == trial) {
        *reasons.entry(r.reason.clone()).or_default() += 1;
    }
    reasons
}

/// §6: [`select_episodes`] then [`emit`]: every segment classified against the episodes, the rules that
/// keep an episode, and the kept episodes' rows.
pub fn assign(
    input: &EventInput,
    key_event: &str,
    episodes_in: &[EpisodeSpec],
    params: &EpisodeParams,
    trial: u32,
    steps: &Steps,
) -> (Vec<Episode>, Vec<Assignment>) {
    let (episodes, assignments, _) =
        assign_explained(input, key_event, episodes_in, params, trial, steps);
    (episodes, assignments)
}

/// [`assign`], with the segments in no episode and why ([`left_out`]).
pub fn assign_explained(
    input: &EventInput,
    key_event: &str,
    episodes_in: &[EpisodeSpec],
    params: &EpisodeParams,
    trial: u32,
    steps: &Steps,
) -> (Vec<Episode>, Vec<Assignment>, Vec<LeftOut>) {
    let selection = select_episodes(input, episodes_in, params, steps);
    let (episodes, assignments) = emit(input, key_event, episodes_in, &selection, params, trial);
    let rows = left_out(input, key_event, &selection, trial);
    (episodes, assignments, rows)
}

/// One event's episodes without an LLM ([`episodes_without_llm`]).
#[derive(Debug, Clone)]
pub struct WithoutLlm {
    /// Candidate episodes classified against (after the merge, with coverage's).
    pub candidates: usize,
    /// The kept episodes.
    pub episodes: Vec<Episode>,
    /// Their segments.
    pub assignments: Vec<Assignment>,
    /// The other segments, each with why it is in no episode ([`left_out`]).
    pub left_out: Vec<LeftOut>,
}

/// §5 without an LLM, then §6: the kept candidate clusters (merged with `params.merge`) as
/// episodes ([`cluster_episodes`]), every segment classified against them ([`select_episodes`]);
/// with `params.cover`, the dense groups of salient segments that no kept episode covers
/// ([`uncovered_groups`]) become episodes of their own, beside the kept ones, which they leave as they
/// are ([`Selection::add_kept`]).
pub fn episodes_without_llm(
    input: &EventInput,
    prepared: &Prepared,
    params: &EpisodeParams,
    trial: u32,
    steps: &Steps,
) -> WithoutLlm {
    steps.stage("episode vectors and merge", 0);
    let mut specs = cluster_episodes(input, prepared, params);
    let mut selection = select_episodes(input, &specs, params, steps);
    if params.join != join::JoinRule::None {
        let kept: Vec<Vec<usize>> = (0..specs.len())
            .filter(|&e| selection.kept(e))
            .map(|e| selection.members[e].iter().map(|&(_, s)| s).collect())
            .collect();
        let labels = join::join(input.embeddings, &kept, params.join);
        // Labels are numbered by first group: some joined when the last is below the count.
        if labels.iter().max().is_some_and(|&m| m + 1 < kept.len()) {
            let groups = regroup(kept, &labels, &prepared.scores);
            specs = specs_of(input, prepared, &groups, params, "clusters");
            selection = select_episodes(input, &specs, params, steps);
        }
    }
    if params.cover {
        steps.stage("uncovered groups", 0);
        let groups =
            uncovered_groups::dense_uncovered_groups(input, &prepared.scores, &selection, params);
        if !groups.is_empty() {
            tracing::debug!(
                "{}: {} uncovered group(s) of {:?} segments become episodes",
                prepared.key_event,
                groups.len(),
                groups.iter().map(Vec::len).collect::<Vec<_>>()
            );
            let groups: Vec<Vec<usize>> = groups
                .into_iter()
                .map(|g| by_salience(g, &prepared.scores))
                .collect();
            let added = specs_of(input, prepared, &groups, params, "coverage");
            selection.add_kept(input, &added, &groups, params);
            specs.extend(added);
        }
    }
    let (episodes, assignments) = emit(
        input,
        &prepared.key_event,
        &specs,
        &selection,
        params,
        trial,
    );
    WithoutLlm {
        candidates: specs.len(),
        episodes,
        assignments,
        left_out: left_out(input, &prepared.key_event, &selection, trial),
    }
}
