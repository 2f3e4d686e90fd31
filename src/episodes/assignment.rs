//! §5 without an LLM and §6 for one key event: episodes from the kept candidate clusters
//! ([`cluster_episodes`]), every segment classified against a set of episodes and the rules that
//! keep an episode ([`assign`]).

use std::collections::BTreeMap;

use super::event::{EpisodeSpec, EventInput};
use super::floor::{apply_floor, core_mean, split_cores, top_core};
use super::params::{Candidates, EpisodeParams};
use super::preparation::{by_salience, Prepared};
use super::{classify, join, select, termspace, uncovered};
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
            title: keywords
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(" "),
            title_fields: Vec::new(),
            keywords,
            example_sentences: Vec::new(),
            source,
        })
        .collect()
}

/// Why a candidate episode is not in the output: the first rule of §6 that dropped it, in the
/// order they apply.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Dropped {
    /// Fewer than `min_segments` segments assigned (docs/method.md §6).
    MinSegments,
    /// Below the cohesion rule (`cohesion`).
    Cohesion,
    /// Below the size rule (`size`).
    Size,
    /// Below the core rule (`core`).
    Core,
    /// Past the cap (`max_episodes`): the tightest (or largest, `cap_by`) are kept.
    Cap,
}

impl Dropped {
    /// The rule's name in `run.json` and the run's last lines.
    pub fn name(self) -> &'static str {
        match self {
            Dropped::MinSegments => "min-segments",
            Dropped::Cohesion => "cohesion",
            Dropped::Size => "size",
            Dropped::Core => "core",
            Dropped::Cap => "cap",
        }
    }
}

/// What §6 made of one set of candidate episodes: each segment's classification, each
/// candidate's members (similarity or confidence key, segment) and its fate.
#[derive(Debug, Clone)]
pub struct Selection {
    /// Every segment's classification (paper eq. 2).
    pub classified: Vec<classify::Classified>,
    /// Each candidate's assigned segments, as (rank key, segment).
    pub members: Vec<Vec<(f64, usize)>>,
    /// Each candidate's fate: kept (`None`) or the rule that dropped it.
    pub dropped: Vec<Option<Dropped>>,
    /// Each candidate's cohesion: the mean cosine of its members to its vector (0 without).
    pub cohesion: Vec<f64>,
    /// The core of each kept candidate: the mean density of its 5 densest segments (`None`
    /// where not computed).
    pub core: Vec<Option<f64>>,
    /// Densities among each kept episode's members (for `rank = "density"`).
    densities: Vec<Option<Vec<Option<f64>>>>,
}

impl Selection {
    /// Whether candidate `e` is kept.
    pub fn kept(&self, e: usize) -> bool {
        self.dropped[e].is_none()
    }

    /// Whether segment `s` is in a kept episode.
    pub fn covered(&self, s: usize) -> bool {
        let c = &self.classified[s];
        c.assigned && self.kept(c.episode)
    }

    /// Adds `groups` (segment indices, none of them in a kept episode) as kept episodes with
    /// vectors `specs`, each holding exactly its group's segments, ranked as the others
    /// (`params.rank`): coverage's episodes ([`uncovered`]). The kept episodes and their
    /// segments stay as they are.
    pub fn add_kept(
        &mut self,
        input: &EventInput,
        specs: &[EpisodeSpec],
        groups: &[Vec<usize>],
        params: &EpisodeParams,
    ) {
        for (spec, group) in specs.iter().zip(groups) {
            let e = self.members.len();
            let similarity: Vec<f64> = group
                .iter()
                .map(|&s| termspace::cosine(&input.embeddings[s], &spec.vector))
                .collect();
            for (&s, &sim) in group.iter().zip(&similarity) {
                let c = &mut self.classified[s];
                c.episode = e;
                c.assigned = true;
                c.similarity = sim;
            }
            let members: Vec<(f64, usize)> = group
                .iter()
                .zip(&similarity)
                .map(|(&s, &sim)| {
                    let key = match params.rank {
                        classify::RankBy::Confidence => self.classified[s].confidence,
                        classify::RankBy::Similarity | classify::RankBy::Density => sim,
                    };
                    (key, s)
                })
                .collect();
            let density = classify::ranked_density(
                input.embeddings,
                group,
                &similarity,
                params.rank_neighbors,
                params.max_ranked,
            );
            self.core.push(core_mean(&density));
            self.cohesion
                .push(similarity.iter().sum::<f64>() / similarity.len().max(1) as f64);
            self.densities
                .push((params.rank == classify::RankBy::Density).then_some(density));
            self.members.push(members);
            self.dropped.push(None);
        }
    }
}

/// `episodes.carry`: a dropped candidate that continues a previous run's episode (the segments
/// they share are at least [`crate::lineage::MIN_SHARE`] of the previous episode's segments
/// still in the event, or of the candidate's) and has `min_segments` is kept again.
fn carry(
    kept: &mut [bool],
    dropped: &mut [Option<Dropped>],
    members: &[Vec<(f64, usize)>],
    carried: &[Vec<usize>],
    params: &EpisodeParams,
) {
    if carried.is_empty() {
        return;
    }
    let previous: Vec<std::collections::HashSet<usize>> = carried
        .iter()
        .map(|p| p.iter().copied().collect())
        .collect();
    for (e, m) in members.iter().enumerate() {
        if kept[e] || m.len() < params.min_segments || dropped[e] == Some(Dropped::MinSegments) {
            continue;
        }
        let continues = previous.iter().any(|p| {
            let shared = m.iter().filter(|(_, s)| p.contains(s)).count() as f64;
            shared > 0.0
                && (shared >= crate::lineage::MIN_SHARE * p.len() as f64
                    || shared >= crate::lineage::MIN_SHARE * m.len() as f64)
        });
        if continues {
            tracing::debug!(
                "candidate {e} ({} segments) continues a previous episode: kept (was dropped by {})",
                m.len(),
                dropped[e].map_or("-", Dropped::name)
            );
            kept[e] = true;
            dropped[e] = None;
        }
    }
}

/// Marks as dropped by `why` the entries that `kept` no longer holds.
fn mark(dropped: &mut [Option<Dropped>], kept: &[bool], why: Dropped) {
    for (d, &k) in dropped.iter_mut().zip(kept) {
        if !k && d.is_none() {
            *d = Some(why);
        }
    }
}

/// §6's decisions for one event: classifies every segment against `episodes_in` (paper eq. 2),
/// drops episodes with fewer than `min_segments` segments, then those below the cohesion rule
/// (`params.cohesion`), then those below the size rule (`params.size`) and the core rule
/// (`params.core`), brings tight dropped ones back up to `params.min_episodes`
/// (`floor::apply_floor`) and keeps `params.max_episodes` of them, the tightest or largest
/// (`params.cap_by`). Each dropped candidate keeps the rule that dropped it
/// ([`Selection::dropped`]).
pub fn select_episodes(
    input: &EventInput,
    episodes_in: &[EpisodeSpec],
    params: &EpisodeParams,
    steps: &Steps,
) -> Selection {
    let vectors: Vec<Vec<f32>> = episodes_in.iter().map(|c| c.vector.clone()).collect();
    let classified = classify::classify(input.embeddings, &vectors, params.confidence, steps);
    let members = members_of(&classified, episodes_in.len(), params.rank);
    let similarities = |e: usize| -> Vec<f64> {
        members[e]
            .iter()
            .map(|&(_, s)| classified[s].similarity)
            .collect()
    };
    let cohesion: Vec<f64> = (0..members.len())
        .map(|e| {
            let s = similarities(e);
            if s.is_empty() {
                0.0
            } else {
                termspace::mean_std(&s).0
            }
        })
        .collect();
    let mut dropped = vec![None; members.len()];
    // Episodes kept: enough segments (§6), then significantly cohesive ones among those, then
    // significantly large ones among those.
    let mut kept: Vec<bool> = members
        .iter()
        .map(|m| m.len() >= params.min_segments)
        .collect();
    mark(&mut dropped, &kept, Dropped::MinSegments);
    cohesion_rule(&mut kept, input, &vectors, &cohesion, similarities, params);
    mark(&mut dropped, &kept, Dropped::Cohesion);
    select::narrow(
        &mut kept,
        |e| members[e].len(),
        |sizes| select::large_enough(sizes, params.size),
    );
    mark(&mut dropped, &kept, Dropped::Size);
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
        mark(&mut dropped, &kept, Dropped::Core);
    }
    apply_floor(&mut kept, &members, core_of, params);
    for (d, &k) in dropped.iter_mut().zip(&kept) {
        if k {
            *d = None;
        }
    }
    if params.max_episodes > 0 {
        cap(&mut kept, &members, |e| core_mean(density_of(e)), params);
        mark(&mut dropped, &kept, Dropped::Cap);
    }
    if params.carry {
        carry(&mut kept, &mut dropped, &members, input.carried, params);
    }
    log_selection(input, &members, &cohesion, &dropped);
    let needs_density = params.rank == classify::RankBy::Density;
    // Cores: those the rules computed, and the kept episodes' where ranking or coverage reads
    // them (no density is computed for nothing).
    let core: Vec<Option<f64>> = (0..members.len())
        .map(|e| {
            let wanted = kept[e] && (needs_density || params.cover);
            (wanted || densities[e].get().is_some()).then(|| core_mean(density_of(e)))?
        })
        .collect();
    let densities = densities
        .into_iter()
        .enumerate()
        .map(|(e, d)| {
            if kept[e] && needs_density {
                d.into_inner()
            } else {
                None
            }
        })
        .collect();
    Selection {
        classified,
        members,
        dropped,
        cohesion,
        core,
        densities,
    }
}

/// Each candidate's assigned segments, as (rank key, segment), in segment order.
fn members_of(
    classified: &[classify::Classified],
    candidates: usize,
    rank: classify::RankBy,
) -> Vec<Vec<(f64, usize)>> {
    let mut members: Vec<Vec<(f64, usize)>> = vec![Vec::new(); candidates];
    for (s, c) in classified.iter().enumerate() {
        if c.assigned {
            let key = match rank {
                classify::RankBy::Confidence => c.confidence,
                classify::RankBy::Similarity | classify::RankBy::Density => c.similarity,
            };
            members[c.episode].push((key, s));
        }
    }
    members
}

/// §6's cohesion rule (`params.cohesion`) over the `kept` candidates: relative to the event's
/// episodes (μ − σ, μ), against the event's segments (`significant`), or either.
fn cohesion_rule(
    kept: &mut [bool],
    input: &EventInput,
    vectors: &[Vec<f32>],
    cohesion: &[f64],
    similarities: impl Fn(usize) -> Vec<f64> + Copy,
    params: &EpisodeParams,
) {
    if !matches!(
        params.cohesion,
        select::CohesionRule::Significant | select::CohesionRule::Either
    ) {
        select::narrow(kept, similarities, |similarities| {
            select::cohesive(similarities, params.cohesion)
        });
        return;
    }
    let spread = classify::similarity_spread(input.embeddings, vectors);
    // `either` also keeps what μ − σ keeps; `significant` only what the event test keeps.
    let mut relative = vec![false; kept.len()];
    if params.cohesion == select::CohesionRule::Either {
        relative.copy_from_slice(kept);
        select::narrow(&mut relative, similarities, |similarities| {
            select::cohesive(similarities, select::CohesionRule::MeanMinusStd)
        });
    }
    let significant = select::significant(cohesion, &spread);
    for ((k, r), s) in kept.iter_mut().zip(relative).zip(significant) {
        *k &= r || s;
    }
}

/// The cap: at most `params.max_episodes` of the `kept` candidates stay, the tightest
/// (`cap_by = "core"`: the highest `core_of`, none last) or the largest, ties by index.
fn cap(
    kept: &mut [bool],
    members: &[Vec<(f64, usize)>],
    core_of: impl Fn(usize) -> Option<f64>,
    params: &EpisodeParams,
) {
    let mut ranked: Vec<usize> = (0..kept.len()).filter(|&e| kept[e]).collect();
    if ranked.len() <= params.max_episodes {
        return;
    }
    match params.cap_by {
        super::params::CapBy::Size => {
            ranked.sort_by(|&a, &b| members[b].len().cmp(&members[a].len()).then(a.cmp(&b)))
        }
        super::params::CapBy::Core => {
            let core: Vec<(usize, f64)> = ranked
                .iter()
                .map(|&e| (e, core_of(e).unwrap_or(f64::NEG_INFINITY)))
                .collect();
            let mut by_core = core;
            by_core.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            ranked = by_core.into_iter().map(|(e, _)| e).collect();
        }
    }
    for &e in ranked.iter().skip(params.max_episodes) {
        kept[e] = false;
    }
}

/// Logs every candidate's segments, cohesion, mean pairwise cosine and fate (at debug level).
fn log_selection(
    input: &EventInput,
    members: &[Vec<(f64, usize)>],
    cohesion: &[f64],
    dropped: &[Option<Dropped>],
) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    tracing::debug!(
        "selection (candidate: segments, cohesion, within, fate): {}",
        (0..members.len())
            .map(|e| format!(
                "{e}: {}, {:.3}, {:.3}, {}",
                members[e].len(),
                cohesion[e],
                uncovered::mean_pairwise_cosine(
                    input.embeddings,
                    &members[e].iter().map(|&(_, s)| s).collect::<Vec<_>>()
                ),
                dropped[e].map_or("kept", Dropped::name)
            ))
            .collect::<Vec<_>>()
            .join("; ")
    );
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
    (episodes, assignments)
}

/// Why each segment of a [`Selection`] is in no episode, one [`LeftOut`] row each, by article
/// and segment: `below-confidence` (its confidence is under the significance bound of eq. 2, so
/// it was assigned nowhere) or `episode-dropped-by-<rule>` (it was assigned to a candidate
/// episode that rule dropped, [`Dropped::name`]). Every segment not in a kept episode has
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
/// ([`uncovered`]) become episodes of their own, beside the kept ones, which they leave as they
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
        let groups = uncovered::dense_uncovered_groups(input, &prepared.scores, &selection, params);
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
