//! Which events' checkpoints are reused: each owner fingerprints its events and reads their
//! checkpoints ([`decide_events`]); every worker learns the reused events.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::exchange::{router, shuffle, EventReport, ToOwner};
use super::placement::Placement;
use super::shared::Shared;
use super::worker::Ctx;
use crate::run_folder::checkpoint::{self, CheckpointError};
use crate::run_folder::manifest::{EventStatus, Outcome};
use crate::run_folder::outputs::Outputs;
use crate::storage::Location;
use crate::tables::Term;

/// What an event's owner decided about its checkpoint.
pub(in crate::run) enum Decision {
    /// Reuse it: its status as it was computed.
    Reuse(Box<EventStatus>),
    /// Compute the event; why an existing checkpoint was not reused.
    Compute(Option<String>),
}

/// Reads an event's checkpoint and decides whether it can be reused.
pub(in crate::run) fn decide(
    runtime: &tokio::runtime::Runtime,
    out: &Location,
    shared: &Shared,
    event: &str,
    fingerprint: &str,
) -> Decision {
    if shared.fresh {
        return Decision::Compute(Some("--fresh".into()));
    }
    match runtime.block_on(checkpoint::read(out, event)) {
        Ok(None) => Decision::Compute(None),
        Ok(Some(c)) if c.fingerprint != fingerprint => {
            Decision::Compute(Some("its segments, statistics or settings changed".into()))
        }
        Ok(Some(c)) if c.status.status != Outcome::Ok => Decision::Compute(Some(format!(
            "it failed: {}",
            c.status.error.as_deref().unwrap_or("?")
        ))),
        Ok(Some(c))
            if c.status
                .llm
                .as_ref()
                .is_some_and(|l| !l.fallbacks.is_empty()) =>
        {
            Decision::Compute(Some("some LLM trials fell back to no-LLM episodes".into()))
        }
        Ok(Some(c)) => Decision::Reuse(Box::new(c.status)),
        Err(e @ CheckpointError::Corrupt { .. }) => {
            tracing::warn!("{e}; computing {event} again");
            Decision::Compute(Some(e.to_string()))
        }
        // The store failed (after its retries): the run stops here, it does not try the next
        // event's checkpoint, nor write this one.
        Err(e @ CheckpointError::Storage(_)) => {
            let why = format!("reading the checkpoint of {event}: {e}");
            shared.errors.lock().expect("error list").push(why.clone());
            Decision::Compute(Some(why))
        }
    }
}

/// What the owners decided ([`decide_events`]).
pub(in crate::run) struct Decisions {
    /// The owner's terms, by event.
    pub(in crate::run) terms: BTreeMap<String, Vec<Term>>,
    /// The owner's events: fingerprint and decision.
    pub(in crate::run) decided: BTreeMap<String, (String, Decision)>,
    /// The reused events of every owner.
    pub(in crate::run) reused: HashSet<String>,
}

/// An event of this worker's: its fingerprint and what was decided about its checkpoint.
pub(in crate::run) type Decided = (String, (String, Decision));

/// This worker's share of the terms to the events' owners, which fingerprint their events and
/// decide on the checkpoints; every worker learns which events are reused. Returns the owner's
/// terms by event, its decisions, and the reused events (of every owner).
pub(in crate::run) fn decide_events(
    ctx: &Ctx,
    worker: &mut timely::worker::Worker,
    placement: &Placement,
) -> Decisions {
    let terms_out: Vec<ToOwner> = ctx
        .shared
        .terms
        .lock()
        .expect("terms")
        .remove(&ctx.index)
        .unwrap_or_default()
        .into_iter()
        .map(|(e, t)| ToOwner::Terms(e, t))
        .collect();
    let mut my_terms: BTreeMap<String, Vec<Term>> = BTreeMap::new();
    for message in shuffle(worker, terms_out, router(&placement.owners)) {
        if let ToOwner::Terms(e, t) = message {
            my_terms.insert(e, t);
        }
    }
    let my_events: BTreeSet<String> = placement
        .owners
        .iter()
        .filter(|(_, &o)| o == ctx.index)
        .map(|(e, _)| e.clone())
        .chain(my_terms.keys().cloned())
        .collect();
    let mut decisions: BTreeMap<String, (String, Decision)> = BTreeMap::new();
    for event in &my_events {
        let terms = my_terms.get(event).map_or(&[][..], Vec::as_slice);
        let digest = placement.digests.get(event).copied().unwrap_or_default();
        let fingerprint = checkpoint::fingerprint(&ctx.shared.settings, &digest, terms);
        let decision = match &ctx.shared.out {
            Some(out) if !ctx.shared.failed() => {
                decide(&ctx.runtime, out, ctx.shared, event, &fingerprint)
            }
            _ => Decision::Compute(None),
        };
        decisions.insert(event.clone(), (fingerprint, decision));
    }
    let reused_here: Vec<String> = decisions
        .iter()
        .filter(|(_, (_, d))| matches!(d, Decision::Reuse(_)))
        .map(|(e, _)| e.clone())
        .collect();
    let copies: Vec<(u64, String)> = (0..ctx.peers as u64)
        .flat_map(|to| reused_here.iter().map(move |e| (to, e.clone())))
        .collect();
    let reused: HashSet<String> = shuffle(worker, copies, |c| c.0)
        .into_iter()
        .map(|(_, e)| e)
        .collect();
    // Said before any work, not only in the last line.
    if ctx.index == 0 && !reused.is_empty() {
        if let Some(out) = &ctx.shared.out {
            tracing::info!(
                "resuming: {} of {} events reused from their checkpoints in {}; computing the \
                 other {}",
                reused.len(),
                placement.owners.len(),
                out.display(),
                placement.owners.len().saturating_sub(reused.len())
            );
        }
    }
    Decisions {
        terms: my_terms,
        decided: decisions,
        reused,
    }
}

/// Reused events first: nothing to do but report them; removes them from `decisions`.
pub(in crate::run) fn report_reused(
    decisions: &mut Vec<Decided>,
    reports: &mut Vec<EventReport>,
    bar: &crate::progress::Bar,
) {
    decisions.retain_mut(|(event, (_, decision))| {
        let Decision::Reuse(status) = decision else {
            return true;
        };
        let mut status = std::mem::replace(status, Box::new(EventStatus::new(event)));
        status.checkpoint = "reused".into();
        status.not_reused = None;
        status.encoded_units = 0;
        reports.push(EventReport {
            status: *status,
            outputs: Outputs::default(),
            prompt: None,
        });
        bar.inc();
        false
    });
}
