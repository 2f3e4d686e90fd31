//! What a followed run adds to §6 (docs/method.md §6 "Following"): the novelty view of the
//! articles that arrived since the previous run ([`novelty`]).

pub mod novelty;
