//! The timely / differential dataflow of the term statistics (docs/method.md §1–§2).
//!
//! Every worker reads its own row groups of the corpus and its own share of the background,
//! tokenizes them, and feeds differential collections; each operator below names the key it
//! exchanges by (see [`crate::sharding`]). Counts are differential collections, so adding or retracting
//! articles in a later round updates every statistic incrementally. The results either go to
//! worker 0, which consolidates them into rows (`epimine stats`: [`Deliver::Gather`]), or stay
//! spread: each event's terms, with their strings, go to the worker [`sharding::stats_worker`] names
//! (`epimine run`: [`Deliver::ByEvent`]), so that no process holds more than its share.
//!
//! No segment is kept in the dataflow, so its memory grows with the vocabulary (terms and salient
//! pairs per event), not with the number of segments. Each round is read twice:
//! - pass 1 (time 2r): every segment's distinct (event, term)s, aggregated per row group, feed the
//!   segment frequencies, hence salience and the salient sets;
//! - pass 2 (time 2r + 1): the salient sets are broadcast to every worker, which reads its row
//!   groups again and feeds the salient pairs of each segment, aggregated per row group, to the
//!   pair counts. When a later round changes an event's salient set, the workers also read the
//!   earlier rounds again and feed, for that event's segments, the pairs under the new set minus
//!   those under the old one, so the pair counts stay exact.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use differential_dataflow::input::{Input, InputSession};
use differential_dataflow::VecCollection;
use timely::dataflow::operators::probe::Handle;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::{Exchange, Inspect, Probe};

use super::formulas::{discriminative, salience, NOT_SALIENT};
use crate::sharding::{self, EventId, TermId};
use crate::tables::Segment;

/// Time 2r is pass 1 of round r, time 2r + 1 its pass 2.
pub type Time = u64;

/// A term of an event with its statistics: (term, freq, bg_freq, salience bits, salient).
pub type TermStat = (TermId, u32, u32, u64, bool);
/// A co-occurring salient pair (a < b by id) with (freq(a,b), d bits).
pub type PairStat = ((EventId, TermId, TermId), (u32, u64));
/// A dictionary entry: (is_event, id, string).
pub type DictEntry = (bool, u64, String);
/// A term of one event.
pub type TermKey = (EventId, TermId);
/// A pair of terms of one event, a < b by id.
pub type PairKey = (EventId, TermId, TermId);

/// Where the results go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deliver {
    /// Terms, pairs and the dictionary to worker 0 ([`Gathered`]).
    Gather,
    /// Each event's terms with their strings to the worker [`sharding::stats_worker`] names; no
    /// pairs ([`Share`]).
    ByEvent,
}

/// One worker's share of the results with [`Deliver::ByEvent`].
#[derive(Debug, Default)]
pub struct Share {
    /// (event name, term, statistics) of the events this worker was sent.
    pub terms: Vec<NamedTerm>,
    /// Workers that reported a failure (every worker hears of every failure).
    pub failures: isize,
}

/// A term of an event with its strings: ((event id, event name), term string, statistics).
pub type NamedTerm = ((EventId, String), String, TermStat);

/// What a worker returns: worker 0's gathered results, or every worker's share.
#[derive(Debug)]
pub enum Delivered {
    /// [`Deliver::Gather`], on worker 0.
    Gathered(Gathered),
    /// [`Deliver::ByEvent`], on every worker.
    Share(Share),
}

/// Everything gathered at worker 0, consolidated.
#[derive(Debug, Default)]
pub struct Gathered {
    /// Per event, every vocabulary term.
    pub terms: Vec<(EventId, TermStat)>,
    /// Every co-occurring salient pair.
    pub pairs: Vec<PairStat>,
    /// Id → string.
    pub dictionary: Vec<DictEntry>,
    /// Workers that reported a failure.
    pub failures: isize,
}

type Sink<D> = Rc<RefCell<Vec<(D, Time, isize)>>>;

fn take<D>(sink: &Sink<D>) -> Vec<(D, Time, isize)> {
    std::mem::take(&mut *sink.borrow_mut())
}

fn gather<D: timely::ExchangeData + Clone>(
    collection: VecCollection<'_, Time, D, isize>,
    probe: &Handle<Time>,
) -> Sink<D> {
    // Exchange key: every result goes to worker 0, the writer.
    route(collection, probe, |_| 0)
}

/// Sends every update of `collection` to the worker `to` names, into a sink there.
fn route<D: timely::ExchangeData + Clone>(
    collection: VecCollection<'_, Time, D, isize>,
    probe: &Handle<Time>,
    to: impl Fn(&D) -> u64 + 'static,
) -> Sink<D> {
    let sink: Sink<D> = Rc::new(RefCell::new(Vec::new()));
    let push = Rc::clone(&sink);
    collection
        .inner
        .exchange(move |(d, _, _)| to(d))
        .inspect(move |update| push.borrow_mut().push(update.clone()))
        .probe_with(probe);
    sink
}

/// Sends every update of `collection` to every worker, into a sink on each.
fn everywhere<D: timely::ExchangeData + Clone>(
    collection: VecCollection<'_, Time, D, isize>,
    probe: &Handle<Time>,
) -> Sink<D> {
    let sink: Sink<D> = Rc::new(RefCell::new(Vec::new()));
    let push = Rc::clone(&sink);
    collection
        .inner
        .broadcast()
        .inspect(move |update| push.borrow_mut().push(update.clone()))
        .probe_with(probe);
    sink
}

/// Sums the diffs of each record over all times; keeps the records present at the end.
fn snapshot<D: Ord>(mut updates: Vec<(D, Time, isize)>) -> Vec<(D, isize)> {
    updates.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<(D, isize)> = Vec::new();
    for (d, _, r) in updates {
        match out.last_mut() {
            Some((last, n)) if *last == d => *n += r,
            _ => out.push((d, r)),
        }
    }
    out.retain(|(_, n)| *n != 0);
    out
}

/// Hands the segments of round `r` on one worker to a feeder, a row group at a time; `false`
/// when reading failed. Called twice a round (and again for earlier rounds when a salient set
/// changes), so it must hand the same segments every time.
pub type ReadRound<'a> = dyn FnMut(usize, &mut dyn FnMut(&[Segment])) -> bool + 'a;

/// The salient sets of the events, as every worker sees them after pass 1 of a round.
type SalientSets = HashMap<EventId, HashSet<TermId>>;

/// Runs the statistics dataflow on one worker.
///
/// `background` is this worker's share of background document frequencies (term id → count),
/// `n_bg` the background's document count (the same on every worker). Round r adds (sign +1) or
/// retracts (−1) the segments that `read(r, feed)` hands to `feed` (a row group at a time, each
/// fed and stepped before the next is read); `read` says whether it read everything, and a worker
/// that failed still takes part, so that no worker waits forever, and worker 0 then refuses to
/// write. `deliver` says where the results go; with [`Deliver::Gather`] only worker 0 returns
/// something.
pub fn run_worker(
    worker: &mut timely::worker::Worker,
    n_bg: u64,
    background: HashMap<TermId, u32>,
    signs: &[isize],
    read: &mut ReadRound<'_>,
    deliver: Deliver,
) -> Option<Delivered> {
    let probe = Handle::new();
    let index = worker.index();
    let peers = worker.peers();
    let (mut inputs, salient_sink, sinks) = worker.dataflow::<Time, _, _>(|scope| {
        let (occ, occurrences) = scope.new_collection::<TermKey, isize>();
        let (pair, salient_pairs) = scope.new_collection::<PairKey, isize>();
        let (bg, background) = scope.new_collection::<TermId, isize>();
        let (dict, dictionary) = scope.new_collection::<DictEntry, isize>();
        let (fail, failures) = scope.new_collection::<(), isize>();
        let scored = scored_terms(occurrences, background, n_bg);
        let salient = scored
            .clone()
            .filter(|(_, stat)| stat.4)
            .map(|(e, stat)| (e, stat.0));
        // The salient sets go to every worker, which pairs the salient terms of its own
        // segments in pass 2.
        let salient_sink = everywhere(salient.clone(), &probe);
        let pairs = pair_statistics(salient_pairs, salient);
        let results = Results {
            scored,
            pairs,
            dictionary: dictionary.distinct(),
            failures: failures.map(|()| 0u8),
        };
        let sinks = results.deliver(deliver, peers, &probe);
        let inputs = Sessions {
            occ,
            pair,
            bg,
            dict,
            fail,
        };
        (inputs, salient_sink, sinks)
    });
    let mut background: Vec<(TermId, u32)> = background.into_iter().collect();
    background.sort_unstable();
    for (t, n) in background {
        inputs.bg.update(t, n as isize);
    }
    feed_rounds(worker, &mut inputs, &salient_sink, &probe, signs, read);
    drop(inputs);
    worker.step_while(|| !probe.done());
    sinks.collect(index)
}

/// The dataflow's inputs.
struct Sessions {
    /// (event, term) once per segment that holds it.
    occ: InputSession<Time, TermKey, isize>,
    /// (event, a, b) once per segment that holds both, a and b salient.
    pair: InputSession<Time, PairKey, isize>,
    /// Background document counts per term.
    bg: InputSession<Time, TermId, isize>,
    /// Id → string of events and terms.
    dict: InputSession<Time, DictEntry, isize>,
    /// One record per worker whose reading failed.
    fail: InputSession<Time, (), isize>,
}

impl Sessions {
    /// Moves every input to `time` and flushes it.
    fn advance_to(&mut self, time: Time) {
        self.occ.advance_to(time);
        self.occ.flush();
        self.pair.advance_to(time);
        self.pair.flush();
        self.bg.advance_to(time);
        self.bg.flush();
        self.dict.advance_to(time);
        self.dict.flush();
        self.fail.advance_to(time);
        self.fail.flush();
    }
}

/// Salience (paper eq. 3) and the salient flag of every term of every event, from the
/// segment occurrences and the background's document counts.
///
/// Exchange keys: (EventId, TermId) for freq(w), TermId for bgf(w) and the background join,
/// EventId for the salient set.
fn scored_terms<'a>(
    occurrences: VecCollection<'a, Time, TermKey, isize>,
    background: VecCollection<'a, Time, TermId, isize>,
    n_bg: u64,
) -> VecCollection<'a, Time, (EventId, TermStat), isize> {
    // freq(w): distinct segments per (event, term). Key: (EventId, TermId).
    let freq = occurrences.count();
    // bgf(w): background documents per term. Key: TermId.
    let bg_freq = background.count();
    // The background join, by term; terms absent from the background get bgf = 0.
    let by_term = freq.map(|((e, t), n)| (t, (e, n as u32)));
    let with_bg = by_term
        .clone()
        .join_map(bg_freq.clone(), |&t, &(e, n), &bgf| (e, (t, n, bgf as u32)));
    let without_bg = by_term
        .antijoin(bg_freq.map(|(t, _)| t))
        .map(|(t, (e, n))| (e, (t, n, 0u32)));
    // Salience (eq. 3) and the salient set, per event. Key: EventId.
    with_bg
        .concat(without_bg)
        .reduce(move |_e, input, output| score_event(input, output, n_bg))
}

/// One event's terms (term, freq, bgf) scored: salient when their salience is above the mean
/// of the event's valid saliences.
fn score_event(
    input: &[(&(TermId, u32, u32), isize)],
    output: &mut Vec<(TermStat, isize)>,
    n_bg: u64,
) {
    let saliences: Vec<f64> = input
        .iter()
        .map(|((_, n, bgf), _)| salience(*n, *bgf, n_bg))
        .collect();
    let valid: Vec<f64> = saliences
        .iter()
        .copied()
        .filter(|s| *s != NOT_SALIENT)
        .collect();
    let mean = if valid.is_empty() {
        f64::INFINITY
    } else {
        valid.iter().sum::<f64>() / valid.len() as f64
    };
    for (((t, n, bgf), _), s) in input.iter().zip(saliences) {
        let salient = s != NOT_SALIENT && s > mean;
        output.push(((*t, *n, *bgf, s.to_bits(), salient), 1));
    }
}

/// d(a, b) (paper eq. 1) of every co-occurring salient pair of every event.
///
/// Exchange keys: (EventId, a, b) for freq(a, b); (EventId, TermId) for each term's sums;
/// (EventId, a), (EventId, b) and EventId for the three joins.
fn pair_statistics<'a>(
    salient_pairs: VecCollection<'a, Time, PairKey, isize>,
    salient: VecCollection<'a, Time, TermKey, isize>,
) -> VecCollection<'a, Time, PairStat, isize> {
    // |T| per event. Key: EventId.
    let t_size = salient.map(|(e, _)| e).count();
    // freq(a,b): segments holding both. Key: (EventId, a, b).
    let pair_freq = salient_pairs.count();
    // Σ_w freq(a,w) and |F_a| = #{w : freq(a,w) > 1}. Key: (EventId, TermId).
    let per_term = pair_freq
        .clone()
        .flat_map(|((e, a, b), n)| [((e, a), n), ((e, b), n)])
        .reduce(|_k, input, output| {
            let mut sum = 0u64;
            let mut big_f = 0u32;
            for (n, mult) in input {
                sum += (**n as u64) * (*mult as u64);
                if **n > 1 {
                    big_f += *mult as u32;
                }
            }
            output.push(((sum, big_f), 1));
        });
    pair_freq
        .map(|((e, a, b), n)| ((e, a), (b, n as u32)))
        .join_map(per_term.clone(), |&(e, a), &(b, n), &(sa, fa)| {
            ((e, b), (a, n, sa, fa))
        })
        .join_map(per_term, |&(e, b), &(a, n, sa, fa), &(sb, fb)| {
            (e, (a, b, n, sa, fa, sb, fb))
        })
        .join_map(t_size, |&e, &(a, b, n, sa, fa, sb, fb), &t| {
            let d = discriminative(n, sa, sb, fa, fb, t as u32);
            ((e, a, b), (n, d.to_bits()))
        })
}

/// The dataflow's results, before they are delivered.
struct Results<'a> {
    scored: VecCollection<'a, Time, (EventId, TermStat), isize>,
    pairs: VecCollection<'a, Time, PairStat, isize>,
    dictionary: VecCollection<'a, Time, DictEntry, isize>,
    failures: VecCollection<'a, Time, u8, isize>,
}

impl Results<'_> {
    /// Sends the results where `deliver` says, into sinks.
    fn deliver(self, deliver: Deliver, peers: usize, probe: &Handle<Time>) -> Sinks {
        match deliver {
            Deliver::Gather => Sinks::Gather(
                gather(self.scored, probe),
                gather(self.pairs, probe),
                gather(self.dictionary, probe),
                gather(self.failures, probe),
            ),
            Deliver::ByEvent => {
                // The strings of each event's terms: joins with the dictionary by term id
                // (key: TermId), then by event id (key: EventId).
                let term_names = self
                    .dictionary
                    .clone()
                    .filter(|(is_event, _, _)| !is_event)
                    .map(|(_, t, text)| (t, text));
                let event_names = self
                    .dictionary
                    .filter(|(is_event, _, _)| *is_event)
                    .map(|(_, e, text)| (e, text));
                let named = self
                    .scored
                    .map(|(e, stat)| (stat.0, (e, stat)))
                    .join_map(term_names, |_, &(e, stat), term| (e, (term.clone(), stat)))
                    .join_map(event_names, |&e, (term, stat), name| {
                        ((e, name.clone()), term.clone(), *stat)
                    });
                // Exchange key: the event's statistics worker.
                Sinks::ByEvent(
                    route(named, probe, move |t: &NamedTerm| {
                        sharding::stats_worker(t.0 .0, peers) as u64
                    }),
                    everywhere(self.failures, probe),
                )
            }
        }
    }
}

/// Feeds every round: pass 1 (time 2r) the occurrences and the dictionary, pass 2 (time 2r + 1)
/// the salient pairs under the salient sets pass 1 gave, with earlier rounds' pairs corrected
/// for the events whose salient set changed. A worker whose reading failed says so in `fail`
/// and goes on, so that no worker waits forever.
fn feed_rounds(
    worker: &mut timely::worker::Worker,
    inputs: &mut Sessions,
    salient_sink: &Sink<TermKey>,
    probe: &Handle<Time>,
    signs: &[isize],
    read: &mut ReadRound<'_>,
) {
    // The salient sets after the previous round, and the running sums behind the current ones.
    let mut previous = SalientSets::new();
    let mut membership: HashMap<TermKey, isize> = HashMap::new();
    for (round, &sign) in signs.iter().enumerate() {
        // Pass 1: segment frequencies and the dictionary.
        let mut failed = !read(round, &mut |segments| {
            let (occurrences, dictionary) = occurrences_of(segments, sign);
            for (record, diff) in occurrences {
                inputs.occ.update(record, diff);
            }
            for entry in dictionary {
                inputs.dict.insert(entry);
            }
            inputs.occ.flush();
            inputs.dict.flush();
            // Let the operators take this piece in before the next is read.
            worker.step();
        });
        let pass_2 = (2 * round + 1) as Time;
        inputs.advance_to(pass_2);
        worker.step_while(|| probe.less_than(&pass_2));

        // Pass 2: the salient pairs under the new salient sets.
        let current = salient_sets(&mut membership, salient_sink);
        let changed: HashSet<EventId> = current
            .keys()
            .chain(previous.keys())
            .filter(|e| current.get(e) != previous.get(e))
            .copied()
            .collect();
        // Earlier rounds: for the events whose salient set changed, new pairs minus old ones.
        if !changed.is_empty() {
            for (earlier, &earlier_sign) in signs[..round].iter().enumerate() {
                failed |= !read(earlier, &mut |segments| {
                    let mut pairs = HashMap::new();
                    let of_changed = segments
                        .iter()
                        .filter(|s| changed.contains(&sharding::event_id(&s.key_event)));
                    for s in of_changed {
                        let (e, terms) = term_ids(s);
                        add_pairs(&mut pairs, e, &terms, &current, earlier_sign);
                        add_pairs(&mut pairs, e, &terms, &previous, -earlier_sign);
                    }
                    feed_pairs(&mut inputs.pair, pairs);
                    worker.step();
                });
            }
        }
        // This round: its pairs under the new sets.
        failed |= !read(round, &mut |segments| {
            let mut pairs = HashMap::new();
            for s in segments {
                let (e, terms) = term_ids(s);
                add_pairs(&mut pairs, e, &terms, &current, sign);
            }
            feed_pairs(&mut inputs.pair, pairs);
            worker.step();
        });
        if failed {
            inputs.fail.update((), 1);
        }
        let next = (2 * round + 2) as Time;
        inputs.advance_to(next);
        worker.step_while(|| probe.less_than(&next));
        previous = current;
    }
}

/// The salient sets after a pass 1: the broadcast updates of `sink` added to the running sums
/// in `membership` (from which the terms no longer in any set are removed).
fn salient_sets(membership: &mut HashMap<TermKey, isize>, sink: &Sink<TermKey>) -> SalientSets {
    for ((e, t), _, diff) in take(sink) {
        *membership.entry((e, t)).or_insert(0) += diff;
    }
    let mut current = SalientSets::new();
    for (&(e, t), &n) in membership.iter() {
        if n > 0 {
            current.entry(e).or_default().insert(t);
        }
    }
    membership.retain(|_, n| *n != 0);
    current
}

/// The sinks of the results, by [`Deliver`].
enum Sinks {
    Gather(
        Sink<(EventId, TermStat)>,
        Sink<PairStat>,
        Sink<DictEntry>,
        Sink<u8>,
    ),
    ByEvent(Sink<NamedTerm>, Sink<u8>),
}

impl Sinks {
    /// What worker `index` returns once the dataflow is done: with [`Deliver::Gather`] worker
    /// 0's consolidated results (nothing elsewhere), with [`Deliver::ByEvent`] every worker's
    /// share.
    fn collect(self, index: usize) -> Option<Delivered> {
        match self {
            Sinks::Gather(..) if index != 0 => None,
            Sinks::Gather(terms, pairs, dictionary, failures) => {
                let terms = snapshot(take(&terms)).into_iter().map(|(d, _)| d).collect();
                let pairs = snapshot(take(&pairs)).into_iter().map(|(d, _)| d).collect();
                let dictionary = snapshot(take(&dictionary))
                    .into_iter()
                    .map(|(d, _)| d)
                    .collect();
                let failures = snapshot(take(&failures)).into_iter().map(|(_, n)| n).sum();
                Some(Delivered::Gathered(Gathered {
                    terms,
                    pairs,
                    dictionary,
                    failures,
                }))
            }
            Sinks::ByEvent(terms, failures) => {
                let terms = snapshot(take(&terms)).into_iter().map(|(d, _)| d).collect();
                let failures = snapshot(take(&failures)).into_iter().map(|(_, n)| n).sum();
                Some(Delivered::Share(Share { terms, failures }))
            }
        }
    }
}

/// The distinct (event, term)s of each segment, with `diff`, summed over the segments; and the
/// dictionary entries of the ids they use.
fn occurrences_of(segments: &[Segment], diff: isize) -> (Vec<(TermKey, isize)>, Vec<DictEntry>) {
    let mut counts: HashMap<TermKey, isize> = HashMap::new();
    let mut dictionary = Vec::new();
    let mut seen: HashSet<(bool, u64)> = HashSet::new();
    for segment in segments {
        let e = sharding::event_id(&segment.key_event);
        if seen.insert((true, e)) {
            dictionary.push((true, e, segment.key_event.clone()));
        }
        for term in crate::terms::distinct_terms(&segment.text) {
            let t = sharding::term_id(&term);
            *counts.entry((e, t)).or_insert(0) += diff;
            if seen.insert((false, t)) {
                dictionary.push((false, t, term));
            }
        }
    }
    let mut counts: Vec<_> = counts.into_iter().filter(|(_, n)| *n != 0).collect();
    // A fixed feeding order (the result does not depend on it, but the work then repeats).
    counts.sort_unstable();
    (counts, dictionary)
}

/// A segment's event and its distinct term ids, ascending.
fn term_ids(segment: &Segment) -> (EventId, Vec<TermId>) {
    let mut terms: Vec<TermId> = crate::terms::distinct_terms(&segment.text)
        .iter()
        .map(|term| sharding::term_id(term))
        .collect();
    terms.sort_unstable();
    terms.dedup();
    (sharding::event_id(&segment.key_event), terms)
}

/// Adds `diff` for every pair of event `e`'s salient terms (under `sets`) among `terms`
/// (ascending ids).
fn add_pairs(
    pairs: &mut HashMap<PairKey, isize>,
    e: EventId,
    terms: &[TermId],
    sets: &SalientSets,
    diff: isize,
) {
    let Some(set) = sets.get(&e) else {
        return;
    };
    let salient: Vec<TermId> = terms.iter().copied().filter(|t| set.contains(t)).collect();
    for (i, &a) in salient.iter().enumerate() {
        for &b in &salient[i + 1..] {
            *pairs.entry((e, a, b)).or_insert(0) += diff;
        }
    }
}

/// Feeds summed pair updates (those that did not cancel out), in a fixed order.
fn feed_pairs(input: &mut InputSession<Time, PairKey, isize>, pairs: HashMap<PairKey, isize>) {
    let mut pairs: Vec<(PairKey, isize)> = pairs.into_iter().filter(|(_, n)| *n != 0).collect();
    pairs.sort_unstable();
    for (pair, diff) in pairs {
        input.update(pair, diff);
    }
    input.flush();
}
