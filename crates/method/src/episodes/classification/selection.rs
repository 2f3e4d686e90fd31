//! §6 for one key event: every segment classified against a set of candidate episodes (paper
//! eq. 2) and the rules that keep an episode — `min_segments`, cohesion, size, core, the floor,
//! the cap and carry — each dropped candidate with the rule that dropped it ([`Selection`]).

use crate::episodes::classification::classify;
use crate::episodes::classification::dated_candidates;
use crate::episodes::classification::distinct_candidates;
use crate::episodes::classification::episode_floor::{apply_floor, core_mean, top_core};
use crate::episodes::classification::keep_rules;
use crate::episodes::event::{EpisodeSpec, EventInput};
use crate::episodes::params::EpisodeParams;
use crate::episodes::terms::termspace;
use crate::progress::steps::Steps;

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
    pub(in crate::episodes) densities: Vec<Option<Vec<Option<f64>>>>,
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
    /// (`params.rank`): coverage's episodes ([`crate::episodes::classification::uncovered_groups`]). The kept episodes and their
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
/// (`episode_floor::apply_floor`) and keeps `params.max_episodes` of them, the tightest or largest
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
    // Each candidate's cohesion: the mean cosine of its members to its vector (0 without).
    let cohesion: Vec<f64> = (0..members.len())
        .map(|e| mean_or_zero(&similarities(e)))
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
    size_rule(&mut kept, &members, params);
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
    if params.core != keep_rules::CohesionRule::All {
        keep_rules::narrow(&mut kept, core_of, |cores| {
            keep_rules::cohesive(cores, params.core)
        });
        mark(&mut dropped, &kept, Dropped::Core);
    }
    bring_back(
        &mut kept,
        &mut dropped,
        input,
        &vectors,
        &members,
        core_of,
        params,
    );
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
    // The kept episodes' densities, where ranking reads them.
    let densities = densities
        .into_iter()
        .zip(&kept)
        .map(|(d, &k)| d.into_inner().filter(|_| k && needs_density))
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

/// What comes back after the relative rules: with `params.distinct`, the candidates those rules
/// dropped that are as distinct from the kept episodes as the least distinct kept one
/// ([`distinct_candidates::restore_distinct`]); with `params.dated`, those told on their own days
/// ([`dated_candidates::restore_dated`]); then the floor ([`apply_floor`]). What comes back is no
/// longer marked dropped.
fn bring_back(
    kept: &mut [bool],
    dropped: &mut [Option<Dropped>],
    input: &EventInput,
    vectors: &[Vec<f32>],
    members: &[Vec<(f64, usize)>],
    core_of: impl Fn(usize) -> Vec<f64>,
    params: &EpisodeParams,
) {
    if params.distinct {
        let relative: Vec<bool> = dropped
            .iter()
            .map(|d| matches!(d, Some(Dropped::Cohesion | Dropped::Size | Dropped::Core)))
            .collect();
        let back = distinct_candidates::restore_distinct(
            kept,
            &relative,
            input.embeddings,
            vectors,
            members,
        );
        tracing::debug!("distinct candidates back: {back:?}");
    }
    if params.dated {
        let relative: Vec<bool> = dropped
            .iter()
            .zip(kept.iter())
            .map(|(d, &k)| {
                !k && matches!(d, Some(Dropped::Cohesion | Dropped::Size | Dropped::Core))
            })
            .collect();
        let articles = dated_candidates::segment_articles(input.segments);
        let back = dated_candidates::restore_dated(kept, &relative, &articles, members);
        tracing::debug!("candidates on their own days back (candidate, shared, p): {back:?}");
    }
    apply_floor(kept, members, core_of, params);
    for (d, &k) in dropped.iter_mut().zip(kept.iter()) {
        if k {
            *d = None;
        }
    }
}

/// The mean of `values`, 0 when there are none.
fn mean_or_zero(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        termspace::mean_std(values).0
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
        keep_rules::CohesionRule::Significant | keep_rules::CohesionRule::Either
    ) {
        keep_rules::narrow(kept, similarities, |similarities| {
            keep_rules::cohesive(similarities, params.cohesion)
        });
        return;
    }
    let spread = classify::similarity_spread(input.embeddings, vectors);
    // `either` also keeps what μ − σ keeps; `significant` only what the event test keeps.
    let mut relative = vec![false; kept.len()];
    if params.cohesion == keep_rules::CohesionRule::Either {
        relative.copy_from_slice(kept);
        keep_rules::narrow(&mut relative, similarities, |similarities| {
            keep_rules::cohesive(similarities, keep_rules::CohesionRule::MeanMinusStd)
        });
    }
    let significant = keep_rules::significant(cohesion, &spread);
    for ((k, r), s) in kept.iter_mut().zip(relative).zip(significant) {
        *k &= r || s;
    }
}

/// §6's size rule (`params.size`) over the `kept` candidates.
fn size_rule(kept: &mut [bool], members: &[Vec<(f64, usize)>], params: &EpisodeParams) {
    keep_rules::narrow(
        kept,
        |e| members[e].len(),
        |sizes| keep_rules::large_enough(sizes, params.size),
    );
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
        crate::episodes::params::CapBy::Size => {
            ranked.sort_by(|&a, &b| members[b].len().cmp(&members[a].len()).then(a.cmp(&b)))
        }
        crate::episodes::params::CapBy::Core => {
            let mut by_core: Vec<(usize, f64)> = ranked
                .iter()
                .map(|&e| (e, core_of(e).unwrap_or(f64::NEG_INFINITY)))
                .collect();
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
                classify::mean_pairwise_cosine(
                    input.embeddings,
                    &members[e].iter().map(|&(_, s)| s).collect::<Vec<_>>()
                ),
                dropped[e].map_or("kept", Dropped::name)
            ))
            .collect::<Vec<_>>()
            .join("; ")
    );
}
