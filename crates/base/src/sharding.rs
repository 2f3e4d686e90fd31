//! The sharding keys of every exchange, in one place (the statistics dataflow, the per-event
//! stages of `epimine run`, and which worker reads which row group of the corpus and the
//! background; a module of its own so that none of them reaches up into another for it): every
//! string that crosses workers is
//! first turned into a 64-bit id by one fixed-seed hash, so that every worker of every process
//! agrees on where a key event, a term or a term pair lives, and on row-group ownership.
//!
//! Differential operators route a record by (an FNV hash of) its key; the keys are built here:
//! - `(EventId, TermId)` — segment frequencies, salience inputs, per-term co-occurrence sums;
//! - `TermId` — the background join;
//! - `EventId` — salience threshold and salient set of an event, |T| (the salient sets are then
//!   broadcast to every worker, which pairs the salient terms of its own segments);
//! - `(EventId, TermId, TermId)` — term-pair co-occurrence counts;
//! - [`event_owners`] — the worker that runs an event's per-event stages in `epimine run`
//!   (balanced by segment counts), and, by the same rule, the worker that encodes each
//!   [`encoding_unit`] of an event.

use std::collections::BTreeMap;

/// Id of a key event: the fixed-seed hash of its name.
pub type EventId = u64;
/// Id of a term: the fixed-seed hash of the word.
pub type TermId = u64;
/// The seed of every hash in the dataflow. Changing it changes which worker owns what, never
/// the output.
pub const SEED: u64 = 0x00E9_1A11_E5EE_D2A5;

/// FNV-1a over the bytes, seeded, then a SplitMix64 finaliser for well-spread high bits.
pub fn hash_str(text: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ SEED;
    for &b in text.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The id of a key event.
pub fn event_id(key_event: &str) -> EventId {
    hash_str(key_event)
}

/// The id of a term.
pub fn term_id(term: &str) -> TermId {
    hash_str(term)
}

/// Articles per encoding unit: an event's segments are encoded in units of the articles
/// `doc_id / ARTICLES_PER_UNIT`, each unit on some worker in a fixed batching, so that a large
/// event is encoded by many workers and the floats do not depend on the layout.
pub const ARTICLES_PER_UNIT: u32 = 64;

/// The encoding unit of an article of an event.
pub fn encoding_unit(doc_id: u32) -> u32 {
    doc_id / ARTICLES_PER_UNIT
}

/// The workers that own the key events in the per-event stages of `epimine run` (their
/// segments, terms and LLM answers are sent there), from every event's segment count — or the
/// workers that encode the encoding units, from every unit's: largest first, each to the
/// least-loaded worker (ties: the lower index; equal sizes: by key), so that the work is
/// balanced. Every worker computes the same map from the same counts.
pub fn event_owners<K: Ord + Clone>(sizes: &BTreeMap<K, u64>, peers: usize) -> BTreeMap<K, usize> {
    let mut events: Vec<(&K, u64)> = sizes.iter().map(|(e, &n)| (e, n)).collect();
    events.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let mut load = vec![0u64; peers.max(1)];
    events
        .into_iter()
        .map(|(event, n)| {
            let (worker, _) = load
                .iter()
                .enumerate()
                .min_by_key(|&(i, &l)| (l, i))
                .expect("at least one worker");
            load[worker] += n;
            (event.clone(), worker)
        })
        .collect()
}

/// The worker that receives key event `e`'s statistics in `epimine run` (which then sends them
/// on to the event's owner, [`event_owners`]): its id's high bits, spread over the workers.
pub fn stats_worker(e: EventId, peers: usize) -> usize {
    ((u128::from(e) * peers.max(1) as u128) >> 64) as usize
}

/// The worker that reads input unit `unit` (a Parquet row group or a background line).
pub fn owner(unit: usize, peers: usize) -> usize {
    unit % peers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fixed() {
        // Pinned: every process, build and platform must agree on these.
        assert_eq!(term_id("police"), term_id("police"));
        assert_ne!(term_id("police"), term_id("polices"));
        assert_eq!(hash_str(""), hash_str(""));
        assert_eq!(owner(5, 2), 1);
        // Largest first to the least loaded: 10 → w0, 6 → w1, 5 → w1 (6 < 10), 4 → w0 (10 < 11),
        // 1 and 1 (names break the tie) → w1 (11 < 14), then w1 again (12 < 14).
        let sizes: BTreeMap<String, u64> =
            [("a", 5), ("b", 10), ("c", 4), ("d", 6), ("e", 1), ("f", 1)]
                .into_iter()
                .map(|(e, n)| (e.to_string(), n))
                .collect();
        let owners = event_owners(&sizes, 2);
        let got: Vec<usize> = ["a", "b", "c", "d", "e", "f"]
            .iter()
            .map(|e| owners[*e])
            .collect();
        assert_eq!(got, [1, 0, 0, 1, 1, 1]);
        assert!(event_owners(&sizes, 1).values().all(|&w| w == 0));
        assert_eq!(event_owners(&sizes, 8).values().copied().max(), Some(5));
    }
}
