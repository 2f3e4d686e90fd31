//! Consensus episodes (`episodes.views`, issue 66): the views after the first, each a full pass
//! of §1 and §3–§6 over a seeded jitter of the event's word vectors, and the consensus of all of
//! them ([`crate::episodes::consensus`]).

use std::collections::HashMap;

use super::compute::term_set;
use super::pending::Pending;
use crate::episodes::{self, consensus, EventInput, WithoutLlm};
use crate::job::Job;
use crate::progress::steps::Steps;
use crate::tables::Term;

/// The episodes a majority of `job.episodes.views` views agree on, classified by §6; `first`
/// is the first view's (the vectors as given). When the views agree on no episode, the first
/// view's episodes are kept, and the log says so.
pub(super) fn consensus_of(
    job: &Job,
    p: &Pending,
    rows: &[Term],
    vectors: &HashMap<String, Vec<f32>>,
    first: WithoutLlm,
    steps: &Steps,
) -> WithoutLlm {
    let params = &job.episodes;
    let key_event = &p.prepared.key_event;
    let index: HashMap<(u32, u32), usize> = p
        .segments
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.doc_id, s.seg_idx), i))
        .collect();
    let labels_of = |found: &WithoutLlm| {
        let mut labels = vec![None; p.segments.len()];
        for a in &found.assignments {
            if let Some(&s) = index.get(&(a.doc_id, a.seg_idx)) {
                labels[s] = Some(a.episode_id as usize);
            }
        }
        labels
    };
    let mut labels = vec![labels_of(&first)];
    let mut vectors_of = vec![first.vectors.clone()];
    for view in 1..params.views {
        let moved = consensus::jittered(
            vectors,
            params.view_jitter,
            consensus::view_seed(key_event, view),
        );
        let set = term_set(job, &p.segments, rows, &moved, steps);
        let input = EventInput {
            segments: &p.segments,
            terms: set.salient,
            pairs: set
                .pairs
                .iter()
                .map(|p| (p.a.clone(), p.b.clone(), p.freq, p.d))
                .collect(),
            word_vectors: &moved,
            embeddings: &p.embeddings,
            carried: &[],
        };
        match episodes::prepare(&input, params, steps) {
            Ok(prepared) => {
                let found = episodes::episodes_without_llm(&input, &prepared, params, 0, steps);
                labels.push(labels_of(&found));
                vectors_of.push(found.vectors);
            }
            // A view with no fragments or terms keeps no segment anywhere: a vote for none.
            Err(_) => {
                labels.push(vec![None; p.segments.len()]);
                vectors_of.push(Vec::new());
            }
        }
    }
    let agreed = consensus::consensus(&labels, params.min_segments);
    // Each consensus episode's vector: the mean of its views' episode vectors, as units.
    let vectors: Vec<Vec<f32>> = agreed
        .iter()
        .map(|a| consensus::mean_unit(a.episodes.iter().map(|&(v, e)| &vectors_of[v][e][..])))
        .collect();
    let groups: Vec<Vec<usize>> = agreed.into_iter().map(|a| a.members).collect();
    tracing::debug!(
        "{key_event}: {} views, episodes {:?}, consensus {} of {:?} segments",
        labels.len(),
        labels
            .iter()
            .map(|l| l.iter().flatten().max().map_or(0, |m| m + 1))
            .collect::<Vec<_>>(),
        groups.len(),
        groups.iter().map(Vec::len).collect::<Vec<_>>()
    );
    if groups.is_empty() {
        tracing::warn!(
            "{key_event}: the {} views agree on no episode; the first view's episodes are kept",
            labels.len()
        );
        return first;
    }
    episodes::consensus_episodes(
        &p.input(),
        &p.prepared,
        groups,
        Some(vectors),
        params,
        0,
        steps,
    )
}
