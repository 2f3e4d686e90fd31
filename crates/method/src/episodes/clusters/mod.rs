//! Fragments and candidate clusters of one key event (docs/method.md §3–§4): segment salience and
//! the partitioning into fragments ([`partition`]), the top articles and the complete-linkage
//! candidate clusters ([`candidates`]), and the glue that runs §3–§4 stage by stage
//! ([`preparation`]).

pub mod candidates;
pub mod partition;
pub mod preparation;
