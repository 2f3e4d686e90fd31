//! Episode names without an LLM: keywords that set an episode apart ([`names`]) and titles that
//! read as headlines ([`headlines`]).

pub mod headlines;
pub mod names;
