//! The simulation's one source of randomness, and durations as a scenario states them.

use jiff::SignedDuration;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

/// Seeded draws. ChaCha8 is a fixed algorithm, so a seed gives the same draws on every machine;
/// a simulation has exactly one `Dice` and draws from it in a fixed order.
#[derive(Debug, Clone)]
pub struct Dice(ChaCha8Rng);

impl Dice {
    /// Dice that always draw the same sequence for `seed`.
    pub fn seeded(seed: u64) -> Self {
        Self(ChaCha8Rng::seed_from_u64(seed))
    }

    /// A duration within `spread` (whole seconds, both ends included).
    pub fn duration(&mut self, spread: &Spread) -> SignedDuration {
        match *spread {
            Spread::Fixed(d) => d,
            Spread::Between { min, max } => {
                let (lo, hi) = (min.as_secs(), max.as_secs());
                SignedDuration::from_secs(if hi <= lo {
                    lo
                } else {
                    self.0.random_range(lo..=hi)
                })
            }
        }
    }

    /// `true` with probability `share` (0 never, 1 always).
    pub fn chance(&mut self, share: f64) -> bool {
        if share <= 0.0 {
            return false;
        }
        if share >= 1.0 {
            return true;
        }
        self.0.random_bool(share)
    }
}

/// A duration a scenario gives: fixed (`3m`, or a number of seconds such as `0`), or uniform
/// between two (`{min: 8m, max: 20m}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "SpreadSpec")]
pub enum Spread {
    /// Always this long.
    Fixed(SignedDuration),
    /// Uniformly between `min` and `max`, in whole seconds.
    Between {
        /// The shortest.
        min: SignedDuration,
        /// The longest.
        max: SignedDuration,
    },
}

impl Default for Spread {
    /// No time at all.
    fn default() -> Self {
        Self::Fixed(SignedDuration::ZERO)
    }
}

impl Spread {
    /// Always `d`.
    pub fn fixed(d: SignedDuration) -> Self {
        Self::Fixed(d)
    }

    /// Between `min` and `max`.
    pub fn between(min: SignedDuration, max: SignedDuration) -> Self {
        Self::Between { min, max }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum SpreadSpec {
    Seconds(u32),
    Fixed(String),
    Between { min: String, max: String },
}

/// Why a scenario's duration is wrong.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpreadError {
    /// Not a duration (`90s`, `8m`, `1h30m`).
    #[error("{0:?} is not a duration such as 90s, 8m or 1h30m")]
    Duration(String),
    /// `min` is longer than `max`.
    #[error("min ({min}) is longer than max ({max})")]
    Order {
        /// As written.
        min: String,
        /// As written.
        max: String,
    },
}

/// A duration as ebb's CRDs write them, or `0`.
fn duration(text: &str) -> Result<SignedDuration, SpreadError> {
    if text.trim() == "0" {
        return Ok(SignedDuration::ZERO);
    }
    ebb_schedule::parse_duration(text).map_err(|_| SpreadError::Duration(text.to_owned()))
}

impl TryFrom<SpreadSpec> for Spread {
    type Error = SpreadError;

    fn try_from(spec: SpreadSpec) -> Result<Self, SpreadError> {
        match spec {
            SpreadSpec::Seconds(s) => Ok(Self::Fixed(SignedDuration::from_secs(i64::from(s)))),
            SpreadSpec::Fixed(d) => Ok(Self::Fixed(duration(&d)?)),
            SpreadSpec::Between { min, max } => {
                let (lo, hi) = (duration(&min)?, duration(&max)?);
                if lo > hi {
                    return Err(SpreadError::Order { min, max });
                }
                Ok(Self::Between { min: lo, max: hi })
            }
        }
    }
}

#[cfg(test)]
#[path = "draw_tests.rs"]
mod tests;
