//! Episodes that keep their identity from run to run (issue 39): a run of the same `--out`
//! matches each event's new episodes to the previous run's and says what became of each
//! ([`match_event`]). A plain function over typed inputs — the previous run's
//! [`EpisodeState`] rows and this run's [`EpisodeKeys`] — giving the `lineage` rows and the
//! state handed on to the next run. Not part of the paper: it follows its episodes over time.
//!
//! The rule, per key event and trial:
//! 1. **Shared segments.** Two episodes are linked when they share segments (by their stable
//!    keys, [`keys::segment_keys`]) and the shared ones are at least [`MIN_SHARE`] of either's
//!    segments. Links are taken greedily, most shared segments first (ties: the lower previous
//!    id, then the lower new `episode_id`), each episode at most once: a new episode so linked
//!    to a previous one keeps its id: `grown` when it holds more segments than before,
//!    `shrunk` when fewer, else `continued`.
//! 2. **Split and merged.** A new episode linked only to previous episodes whose ids went to
//!    others is `split` off the one it shares most with (a new id); a previous episode linked
//!    only to new episodes that took other ids `merged` into the one it shares most with.
//! 3. **Episode vectors.** The rest are paired by the cosine of their vectors (the unit mean
//!    of their segments' sentence embeddings), highest first, when it is at least
//!    [`MIN_COSINE`]: a new episode whose segments are all new but tell what a previous one
//!    told (its articles replaced, e.g. a moving window) keeps that one's id.
//! 4. The new episodes left are `new` (the next free ids, in `episode_id` order); the previous
//!    ones left `ended`. An id is never given again: ended and merged ids stay in the state.
//! 5. **Arrivals.** With the event's articles at the previous run known (`_identity/`), each
//!    episode's `new_articles` are its articles that arrived since, and a new id fewer than half
//!    of whose articles arrived is `found` (told mostly by articles that were already there:
//!    old articles reshuffled), not `new` (issue 63).
//!
//! With no change to an event, every episode keeps its id (each is linked to itself with every
//! segment shared), so a re-run with no new articles changes no id. An event that failed in
//! this run keeps its state as it was and gets no rows.

pub mod keys;

use std::collections::{BTreeMap, BTreeSet};

pub use keys::{article_keys, cosine, episode_keys, segment_keys};

use crate::tables::{EpisodeKeys, EpisodeState, Lineage};

/// Two episodes are linked when the segments they share are at least this share of either's
/// segments.
pub const MIN_SHARE: f64 = 0.3;

/// Episodes with no link by segments are paired when their vectors' cosine is at least this.
pub const MIN_COSINE: f64 = 0.9;

/// Which run the rows belong to, and the one before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// This run's number.
    pub run: u32,
    /// Its time, ms since 1970 UTC.
    pub run_time: i64,
    /// The previous run's number and time.
    pub previous: Option<(u32, i64)>,
}

/// What [`match_event`] gives for one key event.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Matched {
    /// The `lineage` rows, by (trial, stable id).
    pub lineage: Vec<Lineage>,
    /// The state handed on, by (trial, stable id).
    pub state: Vec<EpisodeState>,
}

/// Matches one key event's episodes of this run (`found`, `None` when the event failed) to
/// its previous run's (`known`). `arrived`: the keys of the event's articles that were not in it
/// at the previous run (all of them at a first run; `None` when not known). See the module's
/// header for the rule.
pub fn match_event(
    stamp: &Stamp,
    key_event: &str,
    known: Vec<EpisodeState>,
    found: Option<Vec<EpisodeKeys>>,
    arrived: Option<&BTreeSet<u64>>,
) -> Matched {
    let Some(found) = found else {
        // A failed event: its episodes are neither ended nor changed.
        let mut state = known;
        state.sort_by_key(|s| (s.trial, s.stable_id));
        return Matched {
            lineage: Vec::new(),
            state,
        };
    };
    let mut known_by: BTreeMap<u32, Vec<EpisodeState>> = BTreeMap::new();
    for k in known {
        known_by.entry(k.trial).or_default().push(k);
    }
    let mut found_by: BTreeMap<u32, Vec<EpisodeKeys>> = BTreeMap::new();
    for f in found {
        found_by.entry(f.trial).or_default().push(f);
    }
    let trials: BTreeSet<u32> = known_by.keys().chain(found_by.keys()).copied().collect();
    let mut out = Matched::default();
    for trial in trials {
        let mut known = known_by.remove(&trial).unwrap_or_default();
        let mut found = found_by.remove(&trial).unwrap_or_default();
        known.sort_by_key(|k| k.stable_id);
        found.sort_by_key(|f| f.episode_id);
        let (mut rows, state) = match_trial(stamp, key_event, trial, known, found);
        if let Some(arrived) = arrived {
            mark_arrivals(&mut rows, &state, arrived);
        }
        out.lineage.extend(rows);
        out.state.extend(state);
    }
    out
}

/// With the articles that arrived since the previous run known: each row's `new_articles` (its
/// articles among them) and `joined_articles` (the others it took in), and a new id fewer than
/// half of whose articles are among them is `found`, not `new`.
fn mark_arrivals(rows: &mut [Lineage], state: &[EpisodeState], arrived: &BTreeSet<u64>) {
    for r in rows.iter_mut().filter(|r| r.episode_id.is_some()) {
        let Some(s) = state.iter().find(|s| s.stable_id == r.stable_id) else {
            continue;
        };
        let new = s
            .article_keys
            .iter()
            .filter(|k| arrived.contains(k))
            .count() as u32;
        // `joined_articles` counted every article none of `from_ids` held; the arrived ones
        // were held by none.
        r.joined_articles = r.joined_articles.saturating_sub(new);
        r.new_articles = Some(new);
        // `new` only for an episode most of whose articles arrived since (issue 63): one made
        // mostly of articles that were already there is found now, not news now.
        if r.status == "new" && 2 * new < s.article_keys.len() as u32 && r.previous_run.is_some() {
            r.status = "found".into();
        }
    }
}

/// The number of keys two ascending lists share.
fn shared(a: &[u64], b: &[u64]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// How many of `keys` none of `of` holds.
fn not_in(keys: &[u64], of: &[&[u64]]) -> u32 {
    let held: BTreeSet<u64> = of.iter().flat_map(|k| k.iter().copied()).collect();
    keys.iter().filter(|k| !held.contains(k)).count() as u32
}

/// What became of one new episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// It keeps a previous episode's id (index into the live ones), matched by segments (true)
    /// or by vector.
    Keeps(usize, bool),
    /// A new id, split off a previous episode.
    Split(usize),
    /// A new id.
    New,
}

/// How one trial's new episodes match the previous run's live ones ([`match_episodes`]).
struct Matching {
    /// Each new episode's fate (`None`: a new id).
    fate: Vec<Option<Fate>>,
    /// Each live previous episode's successor that kept its id.
    kept_by: Vec<Option<usize>>,
    /// Each live previous episode with no successor of its id that merged into a new one.
    merged_into: Vec<Option<usize>>,
    /// Each new episode's stable id.
    ids: Vec<u32>,
}

/// Matches `found` (a trial's new episodes) to `live` (the previous run's): by shared segments,
/// most shared first; then split off and merged into; then by vector between those with no
/// link; ids kept, else the next free ones from `next_id` in episode_id order.
fn match_episodes(live: &[EpisodeState], found: &[EpisodeKeys], mut next_id: u32) -> Matching {
    let overlap: Vec<Vec<usize>> = live
        .iter()
        .map(|p| {
            found
                .iter()
                .map(|c| shared(&p.segment_keys, &c.segment_keys))
                .collect()
        })
        .collect();
    let linked = |p: usize, c: usize| {
        let o = overlap[p][c] as f64;
        o > 0.0
            && (o >= MIN_SHARE * live[p].segment_keys.len() as f64
                || o >= MIN_SHARE * found[c].segment_keys.len() as f64)
    };
    // 1. Links by shared segments, most shared first.
    let mut links: Vec<(usize, usize)> = (0..live.len())
        .flat_map(|p| (0..found.len()).map(move |c| (p, c)))
        .filter(|&(p, c)| linked(p, c))
        .collect();
    links.sort_by_key(|&(p, c)| (std::cmp::Reverse(overlap[p][c]), p, c));
    let mut fate: Vec<Option<Fate>> = vec![None; found.len()];
    let mut kept_by: Vec<Option<usize>> = vec![None; live.len()];
    for &(p, c) in &links {
        if fate[c].is_none() && kept_by[p].is_none() {
            fate[c] = Some(Fate::Keeps(p, true));
            kept_by[p] = Some(c);
        }
    }
    // 2. Split off (a new episode whose previous ones kept their ids elsewhere) and merged into
    // (a previous episode whose new ones took other ids).
    let best_of_c = |c: usize| {
        (0..live.len())
            .filter(|&p| linked(p, c))
            .max_by_key(|&p| (overlap[p][c], std::cmp::Reverse(p)))
    };
    let best_of_p = |p: usize| {
        (0..found.len())
            .filter(|&c| linked(p, c))
            .max_by_key(|&c| (overlap[p][c], std::cmp::Reverse(c)))
    };
    for (c, f) in fate.iter_mut().enumerate() {
        if f.is_none() {
            *f = best_of_c(c).map(Fate::Split);
        }
    }
    let mut merged_into: Vec<Option<usize>> = (0..live.len())
        .map(|p| {
            if kept_by[p].is_some() {
                None
            } else {
                best_of_p(p)
            }
        })
        .collect();
    // 3. Episode vectors, between those with no link at all.
    let mut pairs: Vec<(f64, usize, usize)> = (0..live.len())
        .filter(|&p| kept_by[p].is_none() && merged_into[p].is_none())
        .flat_map(|p| {
            let fate = &fate;
            (0..found.len())
                .filter(move |&c| fate[c].is_none())
                .map(move |c| (cosine(&live[p].vector, &found[c].vector), p, c))
        })
        .filter(|&(cos, _, _)| cos >= MIN_COSINE)
        .collect();
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    for (_, p, c) in pairs {
        if fate[c].is_none() && kept_by[p].is_none() {
            fate[c] = Some(Fate::Keeps(p, false));
            kept_by[p] = Some(c);
        }
    }
    // 4. Ids: kept, else the next free ones in episode_id order.
    let ids: Vec<u32> = fate
        .iter()
        .map(|f| match f {
            Some(Fate::Keeps(p, _)) => live[*p].stable_id,
            _ => {
                next_id += 1;
                next_id - 1
            }
        })
        .collect();
    // A previous episode merged into one that took another's id (or a new one).
    for (p, m) in merged_into.iter_mut().enumerate() {
        if kept_by[p].is_some() {
            *m = None;
        }
    }
    Matching {
        fate,
        kept_by,
        merged_into,
        ids,
    }
}

/// A lineage row of `stamp`'s run for `key_event`'s `trial` with only its id, status and title
/// set (the caller fills in the rest).
fn blank_row(
    stamp: &Stamp,
    key_event: &str,
    trial: u32,
    stable_id: u32,
    status: &str,
    title: &str,
) -> Lineage {
    Lineage {
        run: stamp.run,
        run_time: stamp.run_time,
        previous_run: stamp.previous.map(|p| p.0),
        previous_run_time: stamp.previous.map(|p| p.1),
        key_event: key_event.to_string(),
        trial,
        stable_id,
        episode_id: None,
        status: status.into(),
        from_ids: Vec::new(),
        into_id: None,
        matched_by: None,
        title: title.to_string(),
        n_segments: 0,
        n_articles: 0,
        previous_segments: 0,
        new_segments: 0,
        new_articles: None,
        joined_articles: 0,
        lost_segments: 0,
    }
}

/// [`match_event`] for one trial: `known` by stable id, `found` by episode id.
fn match_trial(
    stamp: &Stamp,
    key_event: &str,
    trial: u32,
    known: Vec<EpisodeState>,
    found: Vec<EpisodeKeys>,
) -> (Vec<Lineage>, Vec<EpisodeState>) {
    let next_id = known.iter().map(|k| k.stable_id + 1).max().unwrap_or(0);
    let (live, dormant): (Vec<EpisodeState>, Vec<EpisodeState>) =
        known.into_iter().partition(EpisodeState::live);
    let m = match_episodes(&live, &found, next_id);
    let row = |stable_id: u32, status: &str, title: &str| {
        blank_row(stamp, key_event, trial, stable_id, status, title)
    };
    let mut rows = Vec::new();
    let mut state = dormant;
    for (c, f) in found.iter().enumerate() {
        let (r, st) = found_row(&live, &m, c, f, &row);
        rows.push(r);
        state.push(EpisodeState {
            key_event: key_event.to_string(),
            trial,
            ..st
        });
    }
    for (p, k) in live.iter().enumerate() {
        if m.kept_by[p].is_some() {
            continue;
        }
        let into = m.merged_into[p].map(|c| m.ids[c]);
        rows.push(Lineage {
            into_id: into,
            previous_segments: k.segment_keys.len() as u32,
            lost_segments: k.segment_keys.len() as u32,
            ..row(
                k.stable_id,
                if into.is_some() { "merged" } else { "ended" },
                &k.title,
            )
        });
        state.push(EpisodeState {
            episode_id: None,
            segment_keys: Vec::new(),
            article_keys: Vec::new(),
            vector: Vec::new(),
            ..k.clone()
        });
    }
    rows.sort_by_key(|r| r.stable_id);
    state.sort_by_key(|s| s.stable_id);
    (rows, state)
}

/// The lineage row and the state handed on of new episode `c` (`f`) by its fate in `m`: the
/// previous episodes it comes from (the one whose id it keeps first, then those merged into it
/// by id), its status and what it gained and lost. The state's event and trial are the
/// caller's to set.
fn found_row(
    live: &[EpisodeState],
    m: &Matching,
    c: usize,
    f: &EpisodeKeys,
    row: &dyn Fn(u32, &str, &str) -> Lineage,
) -> (Lineage, EpisodeState) {
    let fate = m.fate[c].unwrap_or(Fate::New);
    let mut from: Vec<usize> = match fate {
        Fate::Keeps(p, _) => std::iter::once(p)
            .chain((0..live.len()).filter(|&q| m.merged_into[q] == Some(c)))
            .collect(),
        Fate::Split(p) => vec![p],
        Fate::New => Vec::new(),
    };
    let skip = 1.min(from.len());
    from[skip..].sort_by_key(|&q| live[q].stable_id);
    let segs: Vec<&[u64]> = from
        .iter()
        .map(|&q| live[q].segment_keys.as_slice())
        .collect();
    let arts: Vec<&[u64]> = from
        .iter()
        .map(|&q| live[q].article_keys.as_slice())
        .collect();
    let (status, matched_by, previous, lost) = match fate {
        Fate::Keeps(p, by_segments) => {
            let prev = &live[p].segment_keys;
            (
                match f.segment_keys.len().cmp(&prev.len()) {
                    std::cmp::Ordering::Greater => "grown",
                    std::cmp::Ordering::Less => "shrunk",
                    std::cmp::Ordering::Equal => "continued",
                },
                Some(if by_segments { "segments" } else { "vector" }),
                prev.len() as u32,
                not_in(prev, &[&f.segment_keys]),
            )
        }
        Fate::Split(_) => ("split", Some("segments"), 0, 0),
        Fate::New => ("new", None, 0, 0),
    };
    let lineage = Lineage {
        episode_id: Some(f.episode_id),
        from_ids: from.iter().map(|&q| live[q].stable_id).collect(),
        matched_by: matched_by.map(Into::into),
        n_segments: f.segment_keys.len() as u32,
        n_articles: f.article_keys.len() as u32,
        previous_segments: previous,
        new_segments: not_in(&f.segment_keys, &segs),
        joined_articles: not_in(&f.article_keys, &arts),
        lost_segments: lost,
        ..row(m.ids[c], status, &f.title)
    };
    let state = EpisodeState {
        key_event: String::new(),
        trial: 0,
        stable_id: m.ids[c],
        episode_id: Some(f.episode_id),
        title: f.title.clone(),
        segment_keys: f.segment_keys.clone(),
        article_keys: f.article_keys.clone(),
        vector: f.vector.clone(),
    };
    (lineage, state)
}

#[cfg(test)]
mod tests;
