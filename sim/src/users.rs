//! When users arrive: the demand side of a scenario.

use jiff::{SignedDuration, Timestamp};
use serde::Deserialize;

use crate::Dice;
use crate::draw::Spread;

/// How a group of users arrives, relative to the scenario's start: `{burst: {...}}`,
/// `{ramp: {...}}` or `{at: [...]}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum Arrivals {
    /// Users at random instants within a span (a rush at the start of a workshop).
    Burst {
        /// The burst.
        burst: Burst,
    },
    /// Users evenly spread over a span (a steady ramp).
    Ramp {
        /// The ramp.
        ramp: Ramp,
    },
    /// One user at each of these offsets after the scenario's start.
    At {
        /// The offsets.
        at: Vec<Spread>,
    },
}

/// `count` users at random instants within `within` after `after`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Burst {
    /// How many.
    pub count: u32,
    /// When the burst starts, after the scenario's start (default: at the start).
    #[serde(default)]
    pub after: Spread,
    /// How long it lasts.
    pub within: Spread,
}

/// `count` users evenly spread over `over` after `after`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ramp {
    /// How many.
    pub count: u32,
    /// When the ramp starts, after the scenario's start (default: at the start).
    #[serde(default)]
    pub after: Spread,
    /// How long it lasts.
    pub over: Spread,
}

impl Arrivals {
    /// The arrival instants, sorted, for a scenario starting at `start`. Draws (in a fixed
    /// order) only for a burst's instants and for spreads that are ranges.
    pub fn instants(&self, start: Timestamp, dice: &mut Dice) -> Vec<Timestamp> {
        let mut out: Vec<Timestamp> = match self {
            Self::Burst {
                burst:
                    Burst {
                        count,
                        after,
                        within,
                    },
            } => {
                let begin = start + dice.duration(after);
                let span = dice.duration(within);
                let spread = Spread::between(SignedDuration::ZERO, span);
                (0..*count)
                    .map(|_| begin + dice.duration(&spread))
                    .collect()
            }
            Self::Ramp {
                ramp: Ramp { count, after, over },
            } => {
                let begin = start + dice.duration(after);
                let span = dice.duration(over);
                let n = i64::from(*count);
                (0..n)
                    .map(|i| {
                        begin
                            + SignedDuration::from_millis(
                                i64::try_from(
                                    span.as_millis() * i128::from(i) / i128::from(n.max(1)),
                                )
                                .unwrap_or(i64::MAX),
                            )
                    })
                    .collect()
            }
            Self::At { at: offsets } => offsets.iter().map(|o| start + dice.duration(o)).collect(),
        };
        out.sort();
        out
    }
}

#[cfg(test)]
#[path = "users_tests.rs"]
mod tests;
