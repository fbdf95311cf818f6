//! What a record says, computed: statistics across rounds ([`stats`]), a run compared with a
//! baseline ([`compare`](mod@compare)), an A/B run's paired verdict ([`paired`]) and capacity
//! searches ([`capacity`]). Nothing here formats for a reader: the words, tables, charts and
//! templates are [`crate::render`](mod@crate::render)'s.

pub mod capacity;
pub mod compare;
pub mod paired;
pub mod stats;
