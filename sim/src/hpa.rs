//! The HorizontalPodAutoscaler controller, as Kubernetes runs it with the default behaviour.
//!
//! One [`Hpa::sync`] is one pass of kube-controller-manager's HPA controller (every
//! [`SYNC_PERIOD`]) over one HPA:
//! - no scaling while the target has 0 replicas (and `minReplicas` is not 0);
//! - outside `[minReplicas, maxReplicas]`: straight to the nearest bound;
//! - else the recommendation `ceil(current × utilization / target)`, unless the ratio is within
//!   the [`TOLERANCE`] of 1 (then `current`);
//! - scale-down stabilization: the highest recommendation of the last
//!   [`SCALE_DOWN_STABILIZATION`] (scale-up has none by default);
//! - the default scale-up policies, whichever allows more: 100 % or 4 pods per 15 s, counted
//!   from the replicas at the start of the period;
//! - the `[minReplicas, maxReplicas]` clamp.
//!
//! Utilization is the average over the pods of usage as a percentage of the request, as the
//! metrics pipeline reports it; `None` (no metrics yet) keeps the count.

use std::collections::VecDeque;

use jiff::{SignedDuration, Timestamp};

/// How often the HPA controller looks (`--horizontal-pod-autoscaler-sync-period`).
pub const SYNC_PERIOD: SignedDuration = SignedDuration::from_secs(15);
/// Within this share of the target, nothing changes (`--horizontal-pod-autoscaler-tolerance`).
pub const TOLERANCE: f64 = 0.1;
/// The default `behavior.scaleDown.stabilizationWindowSeconds`.
pub const SCALE_DOWN_STABILIZATION: SignedDuration = SignedDuration::from_secs(300);
/// The period of the default scale-up policies.
pub const SCALE_UP_PERIOD: SignedDuration = SignedDuration::from_secs(15);
/// The default scale-up policy by count: 4 pods per period.
pub const SCALE_UP_PODS: i32 = 4;
/// The default scale-up policy by share: 100 % per period.
pub const SCALE_UP_PERCENT: i32 = 100;

/// The fields of an HPA the controller reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// `spec.minReplicas`.
    pub min: i32,
    /// `spec.maxReplicas`.
    pub max: i32,
    /// The resource metric's `target.averageUtilization`, in percent.
    pub target_utilization: f64,
}

/// One HPA's controller state: its recent recommendations and scale-ups.
#[derive(Debug, Clone, Default)]
pub struct Hpa {
    recommendations: VecDeque<(Timestamp, i32)>,
    scale_ups: VecDeque<(Timestamp, i32)>,
}

impl Hpa {
    /// A controller that has not seen this HPA before.
    pub fn new() -> Self {
        Self::default()
    }

    /// One sync at `now`: the replicas the target should have, given `current` replicas and the
    /// measured average `utilization` (percent of request).
    pub fn sync(
        &mut self,
        now: Timestamp,
        bounds: &Bounds,
        current: i32,
        utilization: Option<f64>,
    ) -> i32 {
        if current == 0 && bounds.min != 0 {
            // Scaled to zero by someone: the HPA is inactive.
            return 0;
        }
        if current > bounds.max {
            return self.record(now, current, bounds.max);
        }
        if current < bounds.min {
            return self.record(now, current, bounds.min);
        }
        let raw = recommendation(current, utilization, bounds.target_utilization);
        self.recommendations.push_back((now, raw));
        let stable = self.stabilized(now, current, raw);
        let limited = if stable > current {
            stable.min(self.scale_up_limit(now, current))
        } else {
            stable
        };
        let desired = limited.clamp(bounds.min, bounds.max);
        self.record(now, current, desired)
    }

    /// The highest recommendation within the scale-down window (this one included): a drop
    /// takes effect only once it held for the whole window.
    fn stabilized(&mut self, now: Timestamp, current: i32, raw: i32) -> i32 {
        let cutoff = now - SCALE_DOWN_STABILIZATION;
        while self
            .recommendations
            .front()
            .is_some_and(|(at, _)| *at <= cutoff)
        {
            self.recommendations.pop_front();
        }
        let down = self
            .recommendations
            .iter()
            .map(|(_, r)| *r)
            .max()
            .unwrap_or(raw);
        // Scale-up has no window by default: the new recommendation counts at once.
        current.max(raw).min(down)
    }

    /// The most replicas a scale-up may reach now: from the replicas at the start of the
    /// period, +100 % or +4, whichever is more.
    fn scale_up_limit(&mut self, now: Timestamp, current: i32) -> i32 {
        let cutoff = now - SCALE_UP_PERIOD;
        while self.scale_ups.front().is_some_and(|(at, _)| *at <= cutoff) {
            self.scale_ups.pop_front();
        }
        let added: i32 = self.scale_ups.iter().map(|(_, n)| *n).sum();
        let start = current - added;
        let by_share = (f64::from(start) * f64::from(100 + SCALE_UP_PERCENT) / 100.0).ceil() as i32;
        by_share.max(start + SCALE_UP_PODS)
    }

    fn record(&mut self, now: Timestamp, current: i32, desired: i32) -> i32 {
        if desired > current {
            self.scale_ups.push_back((now, desired - current));
        }
        desired
    }
}

/// `ceil(current × utilization / target)`, or `current` within the tolerance or without a
/// measurement.
pub fn recommendation(current: i32, utilization: Option<f64>, target: f64) -> i32 {
    let Some(utilization) = utilization else {
        return current;
    };
    if target <= 0.0 {
        return current;
    }
    let ratio = utilization / target;
    if (ratio - 1.0).abs() <= TOLERANCE {
        return current;
    }
    (ratio * f64::from(current)).ceil() as i32
}

#[cfg(test)]
#[path = "hpa_tests.rs"]
mod tests;
