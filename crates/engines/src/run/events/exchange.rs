//! What the workers of a run send each other, and to whom.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::cache::UnitEncoding;
use crate::llm;
use crate::run_folder::manifest::{EventStatus, LlmReport, StageTime};
use crate::run_folder::outputs::Outputs;
use crate::tables::{Segment, Term};

/// One trial's LLM answer for an event (the error as text).
pub(in crate::run) type TrialAnswer = (u32, Result<Vec<llm::LlmEpisode>, String>);

/// One encoding unit, encoded on some worker: its segments in (doc_id, seg_idx) order with their
/// embeddings and word sums, or why encoding failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(in crate::run) struct EncodedUnit {
    pub(in crate::run) unit: u32,
    pub(in crate::run) segments: Vec<Segment>,
    pub(in crate::run) encoded: Result<UnitEncoding, String>,
    /// Whether the encoder ran for it (not read from the encoder cache).
    pub(in crate::run) fresh: bool,
}

/// A message to the worker that owns a key event ([`crate::sharding::event_owners`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(in crate::run) enum ToOwner {
    /// One of the event's encoding units.
    Unit(String, EncodedUnit),
    /// The event's terms from the statistics dataflow.
    Terms(String, Vec<Term>),
    /// The LLM's answers for the event, by trial.
    Answers(String, Vec<TrialAnswer>),
}

impl ToOwner {
    fn key_event(&self) -> &str {
        match self {
            ToOwner::Unit(e, _) | ToOwner::Terms(e, _) | ToOwner::Answers(e, _) => e,
        }
    }
}

/// An owner's report on one event, sent to worker 0.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(in crate::run) struct EventReport {
    pub(in crate::run) status: EventStatus,
    pub(in crate::run) outputs: Outputs,
    /// The LLM's input (each kept cluster's most salient segments), when the event waits for it.
    pub(in crate::run) prompt: Option<Vec<Vec<String>>>,
}

/// What worker 0 gathers.
pub(in crate::run) struct GatheredReports {
    pub(in crate::run) reports: BTreeMap<String, EventReport>,
    pub(in crate::run) stages: Vec<StageTime>,
    pub(in crate::run) llm: Option<LlmReport>,
    /// Waves the events to compute went in.
    pub(in crate::run) waves: usize,
}

/// Sends `items` to the workers `route` names (all workers call it with their own items) and
/// returns what this worker received: one small timely dataflow of input, exchange and capture.
pub(in crate::run) fn shuffle<D>(
    worker: &mut timely::worker::Worker,
    items: Vec<D>,
    route: impl Fn(&D) -> u64 + 'static,
) -> Vec<D>
where
    D: timely::ExchangeData + Clone,
{
    use timely::dataflow::operators::{Exchange, Input, Inspect, Probe};
    let received: Rc<RefCell<Vec<D>>> = Rc::default();
    let sink = Rc::clone(&received);
    let mut input = timely::dataflow::InputHandle::new();
    let probe = worker.dataflow::<u32, _, _>(|scope| {
        scope
            .input_from(&mut input)
            .container::<Vec<D>>()
            .exchange(move |d| route(d))
            .inspect(move |d| sink.borrow_mut().push(d.clone()))
            .probe()
            .0
    });
    for item in items {
        input.send(item);
    }
    drop(input);
    while !probe.done() {
        worker.step_or_park(None);
    }
    received.take()
}

/// Routes by the owners map (an event it lacks, e.g. terms of an event without segments, goes
/// to worker 0).
pub(in crate::run) fn router(
    owners: &Arc<BTreeMap<String, usize>>,
) -> impl Fn(&ToOwner) -> u64 + 'static {
    let owners = Arc::clone(owners);
    move |m| owners.get(m.key_event()).copied().unwrap_or(0) as u64
}
