//! The term stages of one key event (docs/method.md §1–§3): the expansion of the salient set and
//! its synonym groups with the discriminative co-occurrence ([`expand`]), the words told on days
//! of their own ([`dated_words`]), and the salient term space the partitioning reads
//! ([`termspace`]).

pub mod dated_words;
pub mod expand;
pub mod termspace;
