//! The timely / differential dataflow of the term statistics (ALGORITHM.md §1–§2).
//!
//! Every worker reads its own row groups of the corpus and its own share of the background,
//! tokenizes them, and feeds differential collections; each operator below names the key it
//! exchanges by (see [`super::keys`]). Counts are differential collections, so adding or retracting
//! articles in a later round updates every statistic incrementally. All results are gathered to
//! worker 0, which consolidates them into rows.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use differential_dataflow::input::{Input, InputSession};
use differential_dataflow::VecCollection;
use timely::dataflow::operators::probe::Handle;
use timely::dataflow::operators::{Exchange, Inspect, Probe};

use super::formulas::{discriminative, salience, NOT_SALIENT};
use super::keys::{self, EventId, SegKey, TermId};

/// Rounds of input are timely timestamps.
pub type Time = u64;

/// A term of an event with its statistics: (term, freq, bg_freq, salience bits, salient).
pub type TermStat = (TermId, u32, u32, u64, bool);
/// A co-occurring salient pair (a < b by id) with (freq(a,b), d bits).
pub type PairStat = ((EventId, TermId, TermId), (u32, u64));
/// A dictionary entry: (is_event, id, string).
pub type DictEntry = (bool, u64, String);

/// A distinct (event, term) occurrence in one segment.
pub type Occurrence = ((EventId, TermId), SegKey);

/// What one worker contributes in one round.
#[derive(Debug, Default)]
pub struct RoundInput {
    /// Distinct (event, term) occurrences per segment, with +1 (add) or −1 (retract).
    pub occurrences: Vec<(Occurrence, isize)>,
    /// Ids this worker saw, with their strings.
    pub dictionary: Vec<DictEntry>,
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
    let sink: Sink<D> = Rc::new(RefCell::new(Vec::new()));
    let push = Rc::clone(&sink);
    collection
        .inner
        // Exchange key: every result goes to worker 0, the writer.
        .exchange(|_| 0)
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

/// Hands round `r`'s input of one worker to a feeder in pieces; `false` when reading failed.
pub type ReadRound<'a> = dyn FnMut(usize, &mut dyn FnMut(RoundInput)) -> bool + 'a;

/// Runs the statistics dataflow on one worker.
///
/// `background` is this worker's share of background document frequencies (term id → count),
/// `n_bg` the background's document count (the same on every worker). For round 0, 1, … up to
/// `rounds`, `read(round, feed)` hands this worker's input to `feed` in pieces (a row group at a
/// time, each fed and stepped before the next is read) and says whether it read everything; a
/// worker that failed still takes part, so that no worker waits forever, and worker 0 then
/// refuses to write.
pub fn run_worker(
    worker: &mut timely::worker::Worker,
    n_bg: u64,
    background: HashMap<TermId, u32>,
    rounds: usize,
    read: &mut ReadRound<'_>,
) -> Option<Gathered> {
    let probe = Handle::new();
    let index = worker.index();

    let (mut occ_in, mut bg_in, mut dict_in, mut fail_in, sinks) =
        worker.dataflow::<Time, _, _>(|scope| {
            let (occ_in, occurrences) = scope.new_collection::<Occurrence, isize>();
            let (bg_in, background) = scope.new_collection::<TermId, isize>();
            let (dict_in, dictionary) = scope.new_collection::<DictEntry, isize>();
            let (fail_in, failures) = scope.new_collection::<(), isize>();

            // freq(w): distinct segments per (event, term). Key: (EventId, TermId).
            let freq = occurrences.clone().map(|(et, _seg)| et).count();
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
            let scored = with_bg.concat(without_bg).reduce(move |_e, input, output| {
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
            });
            let salient = scored
                .clone()
                .filter(|(_, stat)| stat.4)
                .map(|(e, stat)| (e, stat.0));
            // |T| per event. Key: EventId.
            let t_size = salient.clone().map(|(e, _)| e).count();
            // Salient terms of each segment. Key: (EventId, TermId), then (EventId, SegKey).
            let salient_occ = occurrences
                .semijoin(salient.map(|(e, t)| (e, t)))
                .map(|((e, t), seg)| ((e, seg), t));
            // freq(a,b): segments holding both. Key: (EventId, SegKey), then (EventId, a, b).
            let pair_freq = salient_occ
                .clone()
                .join_map(salient_occ, |&(e, _seg), &a, &b| (e, a, b))
                .filter(|(_, a, b)| a < b)
                .count();
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
            // d(a,b) (eq. 1). Keys: (EventId, a), (EventId, b), EventId.
            let pairs = pair_freq
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
                });

            let sinks = (
                gather(scored, &probe),
                gather(pairs, &probe),
                gather(dictionary.distinct(), &probe),
                gather(failures.map(|()| 0u8), &probe),
            );
            (occ_in, bg_in, dict_in, fail_in, sinks)
        });

    let step = |worker: &mut timely::worker::Worker, time: Time| {
        worker.step_while(|| probe.less_than(&time));
    };
    let feed_background = |bg_in: &mut InputSession<Time, TermId, isize>| {
        let mut entries: Vec<(TermId, u32)> = background.into_iter().collect();
        entries.sort_unstable();
        for (t, n) in entries {
            bg_in.update(t, n as isize);
        }
    };
    feed_background(&mut bg_in);
    for round in 0..rounds {
        let time = round as Time;
        let mut fed = |input: RoundInput| {
            for (record, diff) in input.occurrences {
                occ_in.update(record, diff);
            }
            for entry in input.dictionary {
                dict_in.insert(entry);
            }
            occ_in.flush();
            dict_in.flush();
            // Let the operators take this piece in before the next is read.
            worker.step();
        };
        if !read(round, &mut fed) {
            fail_in.update((), 1);
        }
        for input_time in [occ_in.time(), bg_in.time(), dict_in.time(), fail_in.time()] {
            debug_assert_eq!(*input_time, time);
        }
        occ_in.advance_to(time + 1);
        bg_in.advance_to(time + 1);
        dict_in.advance_to(time + 1);
        fail_in.advance_to(time + 1);
        occ_in.flush();
        bg_in.flush();
        dict_in.flush();
        fail_in.flush();
        step(worker, time + 1);
    }
    drop((occ_in, bg_in, dict_in, fail_in));
    worker.step_while(|| !probe.done());

    if index != 0 {
        return None;
    }
    let (terms, pairs, dictionary, failures) = sinks;
    let terms = snapshot(take(&terms)).into_iter().map(|(d, _)| d).collect();
    let pairs = snapshot(take(&pairs)).into_iter().map(|(d, _)| d).collect();
    let dictionary = snapshot(take(&dictionary))
        .into_iter()
        .map(|(d, _)| d)
        .collect();
    let failures = snapshot(take(&failures)).into_iter().map(|(_, n)| n).sum();
    Some(Gathered {
        terms,
        pairs,
        dictionary,
        failures,
    })
}

/// The occurrences and dictionary entries of some segments, with sign `diff`.
pub fn tokenize_segments<'a>(
    segments: impl Iterator<Item = (&'a str, u32, u32, &'a str)>,
    diff: isize,
) -> RoundInput {
    let mut input = RoundInput::default();
    let mut seen: HashMap<(bool, u64), ()> = HashMap::new();
    for (key_event, doc_id, seg_idx, text) in segments {
        let e = keys::event_id(key_event);
        if seen.insert((true, e), ()).is_none() {
            input.dictionary.push((true, e, key_event.to_string()));
        }
        let seg = keys::seg_key(doc_id, seg_idx);
        for term in crate::text::distinct_terms(text) {
            let t = keys::term_id(&term);
            input.occurrences.push((((e, t), seg), diff));
            if seen.insert((false, t), ()).is_none() {
                input.dictionary.push((false, t, term));
            }
        }
    }
    input
}
