//! The ramp: a decrease of `minReplicas` at a schedule boundary spread over `spec.ramp` in
//! one-replica steps, kept in `status.ramp`.

use ebb_core::{from_k8s_time, to_k8s_time};
use ebb_crds::service_scaler::RampStatus;
use jiff::{SignedDuration, Timestamp};

/// A `minReplicas` ramp: from `from` to `to` in one-replica steps spread evenly over `duration`,
/// the first step at `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ramp {
    /// `minReplicas` before the ramp.
    pub from: i32,
    /// `minReplicas` at the end of the ramp.
    pub to: i32,
    /// When the ramp started (the boundary), whole seconds.
    pub start: Timestamp,
    /// How long the ramp lasts (`spec.ramp`).
    pub duration: SignedDuration,
}

impl Ramp {
    fn steps(&self) -> i64 {
        (i64::from(self.to) - i64::from(self.from)).abs()
    }

    /// How many steps are taken at `t`: the first at `start`, step `k + 1` at
    /// `start + k * duration / steps`, all of them from `start + duration` on.
    pub fn steps_done(&self, t: Timestamp) -> i64 {
        let n = self.steps();
        if n == 0 {
            return 0;
        }
        if t < self.start {
            return 0;
        }
        let d = self.duration.as_millis();
        let e = t.duration_since(self.start).as_millis();
        if d <= 0 || e >= d {
            return n;
        }
        let k = i128::from(n) * e / d + 1;
        i64::try_from(k).unwrap_or(n).min(n)
    }

    /// `minReplicas` at `t`.
    pub fn value_at(&self, t: Timestamp) -> i32 {
        let k = self.steps_done(t);
        let step = i64::from(self.from) + if self.to >= self.from { k } else { -k };
        i32::try_from(step).unwrap_or(self.to)
    }

    /// Whether every step is taken at `t`.
    pub fn is_complete(&self, t: Timestamp) -> bool {
        self.steps_done(t) >= self.steps()
    }

    /// The instant of the next step after `t`, or `None` when the ramp is complete at `t`.
    pub fn next_step_after(&self, t: Timestamp) -> Option<Timestamp> {
        let n = self.steps();
        let k = self.steps_done(t);
        if k >= n {
            return None;
        }
        let d = self.duration.as_millis();
        // ceil(k * d / n): the first whole millisecond at which step k + 1 is due.
        let offset = (i128::from(k) * d + i128::from(n) - 1) / i128::from(n);
        let offset = SignedDuration::from_millis(i64::try_from(offset).ok()?);
        self.start.checked_add(offset).ok()
    }

    /// The ramp as stored in `status.ramp`.
    pub fn to_status(&self) -> RampStatus {
        RampStatus {
            from_min_replicas: self.from,
            to_min_replicas: self.to,
            started_at: to_k8s_time(self.start),
        }
    }

    /// The ramp stored in `status.ramp`, with the current `spec.ramp` duration.
    pub fn from_status(status: &RampStatus, duration: SignedDuration) -> Self {
        Self {
            from: status.from_min_replicas,
            to: status.to_min_replicas,
            start: from_k8s_time(&status.started_at),
            duration,
        }
    }
}

/// `t` truncated to the whole second, as `status` stores it: a ramp computed before and after
/// its start is persisted gives the same steps.
fn whole_second(t: Timestamp) -> Timestamp {
    from_k8s_time(&to_k8s_time(t))
}

/// The ramp in force at `now`, if any.
///
/// - `previous`: the ramp in `status.ramp`;
/// - `current_min`: the HPA's `minReplicas` now (`None` when there is no HPA yet);
/// - `boundary`: the last schedule change of `minReplicas` within the ramp duration before `now`.
pub fn resolve_ramp(
    duration: SignedDuration,
    previous: Option<Ramp>,
    current_min: Option<i32>,
    target_min: i32,
    boundary: Option<Timestamp>,
    now: Timestamp,
) -> Option<Ramp> {
    let ramp = match previous {
        Some(ramp) if ramp.to == target_min => Some(ramp),
        Some(ramp) => {
            // The target moved mid-ramp: a new ramp from wherever the old one had got to.
            let start = whole_second(boundary.filter(|b| *b >= ramp.start).unwrap_or(now));
            Some(Ramp {
                from: ramp.value_at(start),
                to: target_min,
                start,
                duration,
            })
        }
        None => match (current_min, boundary) {
            (Some(from), Some(boundary)) if from > target_min => Some(Ramp {
                from,
                to: target_min,
                start: whole_second(boundary),
                duration,
            }),
            _ => None,
        },
    };
    // Decreases only: an increase spread after its boundary would leave capacity below the
    // schedule (increases are stepped up *ahead* of the boundary by the lead time instead).
    ramp.filter(|r| r.from > r.to && !r.is_complete(now))
}

#[cfg(test)]
#[path = "ramp_tests.rs"]
mod tests;
