//! Watching the cluster: the caches a pass reads (kept to what rules read), the triggers that run passes, the queue, contact with the API server, and the writes a process knows as its own.

pub mod cache;
pub mod calendars;
pub mod contact;
pub mod guard;
pub mod own_writes;
pub mod packed;
pub mod projected;
pub mod queue;
pub mod requests;
pub mod runner;
pub mod squeezed;
pub mod triggers;
