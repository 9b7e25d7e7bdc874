//! Leading: the Lease that lets one replica write, the hand-over between an old and a new replica, shutdown, and the clock a pass reads.

pub mod clock;
pub mod leader;
pub mod overlap;
pub mod shutdown;
