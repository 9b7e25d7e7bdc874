//! Lead time (udaan's gradual scaling), pure: capacity is stepped up *ahead of* a boundary that
//! raises `minReplicas` or `maxReplicas`, so the HPA never has less than the schedule says.
//!
//! # Rule
//! `spec.leadTime` (`L`, default [`DEFAULT_LEAD_TIME`], `0s` turns it off). For `minReplicas` and
//! `maxReplicas` separately, at instant `t`: let `b` be the first boundary after `t` at which that
//! field's scheduled value changes, `v0` its scheduled value at `t`, `v1` its value from `b`.
//! If `v1 > v0` and `b - L <= t < b`:
//!
//! ```text
//! k     = floor((t - (b - L)) * 6 / L) + 1            (1..=6)
//! value = v0 + ceil((v1 - v0) * k / 6)
//! ```
//!
//! six equal steps, the first at `b - L`, the last (reaching `v1`) one step before `b`.
//! Otherwise the value is the scheduled one. Then `minReplicas` is capped at `maxReplicas`.
//!
//! A hibernation's end is led the same way, in one step: from `b - L` on, where `b` is the first
//! boundary after `t` at which no hibernating range is in force, the target is awake
//! ([`crate::hibernation`]), so it runs before the schedule needs it.
//! Decreases and utilization targets change at the boundary (a decrease may be spread *after* it
//! by `spec.ramp`). The value depends on `t` and the spec only: path-independent, and the same in
//! `plan` as in the controller.
//!
//! # Search bound
//! A field's next change is looked for among the first [`MAX_SCAN`] changes of the scheduled
//! settings after `t` (the engine's own sweep, as for `status.nextTransitions`: up to a year ahead,
//! and past quiet years to one-off and cron boundaries). A field that keeps its value through all
//! of them is treated as not changing: only a schedule with more than [`MAX_SCAN`] transitions
//! within one lead time could lose a step that way. The sweep also stops at its work budget
//! ([`crate::SCAN_STEPS`]): ranges that hand over to each other every minute with unchanged
//! settings for longer than a lead time may hide a change the lead would have stepped towards
//! (the schedule still applies it at its boundary).

use ebb_crds::service_scaler::HpaSettings;
use ebb_schedule::{ScheduleError, parse_duration};
use jiff::{SignedDuration, Timestamp};

use crate::{Schedule, Transition};

/// `spec.leadTime` when it is left out.
pub const DEFAULT_LEAD_TIME: SignedDuration = SignedDuration::from_mins(30);
/// How many equal steps a lead takes.
pub const LEAD_STEPS: i64 = 6;
/// How many coming schedule transitions are searched for a field's next change.
pub const MAX_SCAN: usize = 64;

/// `spec.leadTime`, parsed: [`DEFAULT_LEAD_TIME`] when absent, zero for `0s` (or `0m`, `0h0m`):
/// the only place a zero duration is valid.
pub fn parse_lead_time(text: Option<&str>) -> Result<SignedDuration, ScheduleError> {
    let Some(text) = text else {
        return Ok(DEFAULT_LEAD_TIME);
    };
    // `parse_duration` rejects zero; a well-formed duration whose digits are all 0 is "off".
    let zero = !text.is_empty()
        && text.bytes().all(|c| matches!(c, b'0' | b'h' | b'm' | b's'))
        && text.contains('0')
        && parse_duration(&text.replace('0', "1")).is_ok();
    if zero {
        return Ok(SignedDuration::ZERO);
    }
    parse_duration(text)
}

/// The next change of one field's scheduled value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldChange {
    /// The boundary `b`.
    pub at: Timestamp,
    /// The value from `b` on (`v1`).
    pub to: i32,
}

/// The step `k` (1..=6) in force at `t` for a boundary `b`, or `None` outside `[b - L, b)`.
pub fn step_at(b: Timestamp, lead: SignedDuration, t: Timestamp) -> Option<i64> {
    let l = lead.as_millis();
    let start = b.checked_sub(lead).ok()?;
    if l <= 0 || t < start || t >= b {
        return None;
    }
    let e = t.duration_since(start).as_millis();
    let k = e * i128::from(LEAD_STEPS) / l + 1;
    Some(i64::try_from(k).unwrap_or(LEAD_STEPS).min(LEAD_STEPS))
}

/// A field's value at `t` under the lead: `v0` is its scheduled value at `t`, `next` its next
/// change.
pub fn led_value(v0: i32, next: Option<FieldChange>, lead: SignedDuration, t: Timestamp) -> i32 {
    let Some(next) = next.filter(|n| n.to > v0) else {
        return v0;
    };
    let Some(k) = step_at(next.at, lead, t) else {
        return v0;
    };
    let rise = i64::from(next.to) - i64::from(v0);
    // ceil(rise * k / 6) for a positive rise.
    let up = (rise * k + LEAD_STEPS - 1) / LEAD_STEPS;
    i32::try_from(i64::from(v0) + up).unwrap_or(next.to)
}

/// The next instant after `t` at which [`led_value`] moves to another step: the opening of the
/// lead (`b - L`), the next step within it, or `b` itself after the last step. `None` when there
/// is no increase to lead.
pub fn next_step_after(
    v0: i32,
    next: Option<FieldChange>,
    lead: SignedDuration,
    t: Timestamp,
) -> Option<Timestamp> {
    let next = next.filter(|n| n.to > v0)?;
    let l = lead.as_millis();
    if l <= 0 || t >= next.at {
        return None;
    }
    let start = next.at.checked_sub(lead).ok()?;
    if t < start {
        return Some(start);
    }
    let k = step_at(next.at, lead, t)?;
    if k >= LEAD_STEPS {
        return Some(next.at);
    }
    // Step k + 1 starts at the first whole millisecond e with floor(e * 6 / L) >= k.
    let offset = (i128::from(k) * l + i128::from(LEAD_STEPS) - 1) / i128::from(LEAD_STEPS);
    let offset = SignedDuration::from_millis(i64::try_from(offset).ok()?);
    start.checked_add(offset).ok()
}

/// The first change of `field` in `coming` (changes of the scheduled settings, in time order)
/// away from `current`.
pub fn first_change(
    current: i32,
    coming: &[Transition],
    field: fn(&HpaSettings) -> i32,
) -> Option<FieldChange> {
    coming
        .iter()
        .find(|t| field(&t.settings) != current)
        .map(|t| FieldChange {
            at: t.at,
            to: field(&t.settings),
        })
}

/// The settings in force at `t` with the lead applied, and when the lead next moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lead {
    /// The scheduled settings at `t`, with `minReplicas` and `maxReplicas` led.
    pub settings: HpaSettings,
    /// The next lead step after `t` (a wake-up instant; not a transition).
    pub next_step: Option<Timestamp>,
}

/// [`Lead`] from the scheduled settings at `t` and the coming transitions.
pub fn lead_from(
    scheduled: &HpaSettings,
    coming: &[Transition],
    lead: SignedDuration,
    t: Timestamp,
) -> Lead {
    let mut settings = scheduled.clone();
    if lead <= SignedDuration::ZERO {
        return Lead {
            settings,
            next_step: None,
        };
    }
    // (value, next step) of one field.
    let field = |get: fn(&HpaSettings) -> i32| {
        let v0 = get(scheduled);
        let change = first_change(v0, coming, get);
        (
            led_value(v0, change, lead, t),
            next_step_after(v0, change, lead, t),
        )
    };
    let (min, min_step) = field(|s| s.min_replicas);
    let (max, max_step) = field(|s| s.max_replicas);
    let (hibernate, wake_step) = led_hibernation(scheduled.hibernate, coming, lead, t);
    settings.max_replicas = max;
    settings.min_replicas = min.min(max);
    settings.hibernate = hibernate;
    Lead {
        settings,
        next_step: [min_step, max_step, wake_step].into_iter().flatten().min(),
    }
}

/// Whether the target hibernates at `t` under the lead (`hibernate`: whether the schedule has it
/// hibernate at `t`), and when that next changes: awake from `L` before the first coming
/// boundary without hibernation.
pub fn led_hibernation(
    hibernate: bool,
    coming: &[Transition],
    lead: SignedDuration,
    t: Timestamp,
) -> (bool, Option<Timestamp>) {
    if !hibernate {
        return (false, None);
    }
    let Some(end) = coming.iter().find(|c| !c.settings.hibernate).map(|c| c.at) else {
        return (true, None);
    };
    match end.checked_sub(lead) {
        Ok(wake) if t < wake => (true, Some(wake)),
        Ok(_) => (false, None),
        Err(_) => (true, None),
    }
}

/// [`Lead`] of `schedule` at `t`, with `spec.leadTime` as parsed into the schedule.
pub fn lead_at(schedule: &Schedule, t: Timestamp) -> Lead {
    lead_with(schedule, &schedule.transitions(t, MAX_SCAN), t)
}

/// [`lead_at`] with the transitions coming after `t` already swept (`coming`: the first
/// [`MAX_SCAN`] are searched), so a pass sweeps them once.
pub fn lead_with(schedule: &Schedule, coming: &[Transition], t: Timestamp) -> Lead {
    let lead = schedule.lead_time();
    if lead <= SignedDuration::ZERO {
        return Lead {
            settings: schedule.effective_at(t).clone(),
            next_step: None,
        };
    }
    lead_from(
        schedule.effective_at(t),
        &coming[..coming.len().min(MAX_SCAN)],
        lead,
        t,
    )
}

#[cfg(test)]
#[path = "lead_tests.rs"]
mod tests;
