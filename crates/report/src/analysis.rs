//! What a record says, computed: statistics across rounds ([`stats`]), a run compared with a
//! baseline ([`compare`](mod@compare)), an A/B run's paired verdict ([`paired`]) and capacity
//! searches ([`capacity`]), what a server did past its capacity ([`overload`]), and many records night by night ([`history`], with its change points
//! from [`changepoint`]). Nothing here formats for a reader: the words, tables, charts and
//! templates are [`crate::render`](mod@crate::render)'s.

pub mod capacity;
pub mod changepoint;
pub mod compare;
pub mod history;
pub mod overload;
pub mod paired;
pub mod signed_rank;
pub mod stats;
