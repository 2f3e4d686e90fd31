//! Where everything of the per-event stages is, known alike to every worker: each worker's
//! segments, every encoding unit's size and digest, each event's owner ([`read_placement`]), and the
//! waves the events to compute go in ([`plan_waves`]).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use super::units::{unit_sizes, UnitKey};
use super::worker::Ctx;
use crate::run_folder::checkpoint::SegmentDigest;
use crate::sharding;
use crate::tables::Segment;

/// Where everything is: this worker's segments, every encoding unit's size and digest, each
/// event's digest and owner.
pub(in crate::run) struct Placement {
    pub(in crate::run) segments: Vec<Segment>,
    pub(in crate::run) units: BTreeMap<UnitKey, (u64, SegmentDigest)>,
    pub(in crate::run) digests: BTreeMap<String, SegmentDigest>,
    pub(in crate::run) owners: Arc<BTreeMap<String, usize>>,
}

/// This worker's row groups of the corpus, and what every worker learns of all of them: each
/// encoding unit's size and segment digest, each event's digest and owner.
pub(in crate::run) fn read_placement(ctx: &Ctx, worker: &mut timely::worker::Worker) -> Placement {
    let segments = match ctx
        .job()
        .corpus_location()
        .map_err(|e| e.to_string())
        .and_then(|corpus| {
            ctx.runtime
                .block_on(crate::corpus::read_segment_shard(
                    &corpus, ctx.index, ctx.peers,
                ))
                .map_err(|e| e.to_string())
        }) {
        Ok(segments) => segments,
        Err(e) => {
            ctx.fail(e);
            Vec::new()
        }
    };
    let units = unit_sizes(worker, &segments);
    let mut sizes: BTreeMap<String, u64> = BTreeMap::new();
    let mut digests: BTreeMap<String, SegmentDigest> = BTreeMap::new();
    for ((event, _), (n, d)) in &units {
        *sizes.entry(event.clone()).or_default() += n;
        digests.entry(event.clone()).or_default().add(d);
    }
    let owners = Arc::new(sharding::event_owners(&sizes, ctx.peers));
    Placement {
        segments,
        units,
        digests,
        owners,
    }
}

/// Encoding units per worker in one wave: two calls of the encoder (`units::UNITS_AT_ONCE`).
pub(in crate::run) const WAVE_UNITS: usize = 2 * super::units::UNITS_AT_ONCE;

/// The events to compute, in waves.
pub(in crate::run) struct Waves {
    /// The units to encode and their segment counts.
    pub(in crate::run) to_encode: BTreeMap<UnitKey, u64>,
    /// Each event's wave ([`keys_waves`]).
    pub(in crate::run) of_event: BTreeMap<String, usize>,
    /// This worker's segments of each wave.
    pub(in crate::run) segments: Vec<Vec<Segment>>,
}

/// The wave of every event to compute: each owner's events, in key order, spread over the waves
/// by their encoding units (about [`WAVE_UNITS`] per worker and wave), so that each wave keeps
/// every worker busy and a run checkpoints its events steadily. The same for every worker.
pub(in crate::run) fn keys_waves(
    to_encode: &BTreeMap<UnitKey, u64>,
    owners: &BTreeMap<String, usize>,
    peers: usize,
) -> BTreeMap<String, usize> {
    let mut units_of: BTreeMap<&String, usize> = BTreeMap::new();
    for (event, _) in to_encode.keys() {
        *units_of.entry(event).or_default() += 1;
    }
    let total: usize = units_of.values().sum();
    let n_waves = (total / (peers.max(1) * WAVE_UNITS)).max(1);
    let mut per_owner: BTreeMap<usize, Vec<(&String, usize)>> = BTreeMap::new();
    for (event, n) in units_of {
        let owner = owners.get(event).copied().unwrap_or(0);
        per_owner.entry(owner).or_default().push((event, n));
    }
    let mut waves = BTreeMap::new();
    for events in per_owner.into_values() {
        let owner_total: usize = events.iter().map(|e| e.1).sum();
        let mut before = 0;
        for (event, n) in events {
            let wave = (before * n_waves / owner_total.max(1)).min(n_waves - 1);
            waves.insert(event.clone(), wave);
            before += n;
        }
    }
    waves
}

/// The events to compute go in waves: each owner's events in order, cut into slices of about the
/// same number of encoding units, so that every wave is encoded, run and checkpointed before the
/// next (a run killed half way has checkpointed about half its work). Every worker derives the
/// same waves from what all know (units, owners, reused events).
pub(in crate::run) fn plan_waves(
    units: &BTreeMap<UnitKey, (u64, SegmentDigest)>,
    reused: &HashSet<String>,
    owners: &BTreeMap<String, usize>,
    peers: usize,
    segments: Vec<Segment>,
) -> Waves {
    let to_encode: BTreeMap<UnitKey, u64> = units
        .iter()
        .filter(|((e, _), _)| !reused.contains(e))
        .map(|(u, (n, _))| (u.clone(), *n))
        .collect();
    let of_event = keys_waves(&to_encode, owners, peers);
    let n_waves = of_event.values().copied().max().map_or(1, |w| w + 1);
    let mut by_wave: Vec<Vec<Segment>> = vec![Vec::new(); n_waves];
    for s in segments {
        if let Some(&w) = of_event.get(&s.key_event) {
            by_wave[w].push(s);
        }
    }
    Waves {
        to_encode,
        of_event,
        segments: by_wave,
    }
}
