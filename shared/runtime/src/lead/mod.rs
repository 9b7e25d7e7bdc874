//! Leading: the Lease that lets one replica write, and the hand-over between an old and a new replica, or between two installs whose scopes overlap.

pub mod leader;
pub mod overlap;
