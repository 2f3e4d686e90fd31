//! Episodes and their segments (docs/method.md §5–§6): the no-LLM episodes and §6's glue
//! ([`assignment`]), segment classification ([`classify`], eq. 2), the rules that keep an episode
//! ([`selection`], [`keep_rules`], [`episode_floor`]), the optional joins and returns ([`join`],
//! [`uncovered_groups`], [`dated_candidates`], [`distinct_candidates`]) and the phases the kept
//! episodes tell ([`phases`]).

pub mod assignment;
pub mod classify;
pub mod dated_candidates;
pub mod distinct_candidates;
pub mod episode_floor;
pub mod join;
pub mod keep_rules;
pub mod phases;
pub mod selection;
pub mod uncovered_groups;
