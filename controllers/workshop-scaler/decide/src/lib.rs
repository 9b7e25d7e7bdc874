//! Every rule of workshop-scaler, as pure functions: plain data in, a [`Decision`] out.
//!
//! No client, no clock, no I/O: the reconciler reads what [`reads`] names, hands it to
//! [`decide`] with `now`, and executes the plan that comes back ([`pass`]). The `plan`
//! subcommand asks the same rules offline.
//!
//! The rules (controllers/workshop-scaler/README.md says them for users):
//! - configuration, field by field: the WorkshopProvision's `spec.autoScaling` (where Babylon's
//!   installed CRD keeps it) > the Workshop's `spec.autoScaling` (where kept) > the one
//!   `WorkshopScalingPolicy` selecting the Workshop > the defaults ([`resolve_sources`]). Two or
//!   more policies selecting the Workshop are ambiguous: nothing scales, a condition and an Event
//!   name them ([`Decision::Ambiguous`]), unless the provision or Workshop says `enabled: false`.
//!   Disabled means the controller does nothing at all ([`Decision::Disabled`]).
//! - `Workshop.spec.provisionDisabled: true` or an ended lifespan (`spec.lifespan.end` of the
//!   Workshop or the provision): no scaling ([`Hold::ProvisionDisabled`], [`Hold::LifespanEnded`]).
//! - demand: utilization = assigned / total seats; at or above `threshold` the provision scales to
//!   `min(maxProvisions, max(count + 1, floor(count * scaleFactor)))` ([`next_count`]).
//! - one scale-up in flight per provision: while `status.autoScalingActive` is true nothing scales;
//!   an interrupted scale-up (flag written, count not yet) is finished exactly once
//!   ([`Decision::Finish`]); the flag clears only when every ResourceClaim of the provision has
//!   settled ([`Decision::Release`]); past `activeTimeout` unsettled claims are reported, never
//!   acted on ([`Decision::Stuck`]). The flag is released early, with a reason, only when the
//!   scale-up's claims provably can no longer appear (provisioning disabled, lifespan ended, count
//!   lowered by someone, its unsettled claims deleted) or a person sets [`RELEASE_ANNOTATION`]
//!   ([`Decision::ReleaseEarly`]); never on a timer.
//! - after any release no new scale-up starts from the count the released one started from
//!   (`status.autoScalingLastFromCount`, [`Hold::AlreadyScaledFrom`]).
//!
//! [`outcome`] turns a decision into the whole plan of a pass (writes in order, conditions,
//! Events, gauges, requeue, the pause and dry-run rules); the reconciler only executes it.
//!
//! This crate (`workshop-scaler-decide`, the binary's `decide` module) depends on the pure crates
//! only (ebb-core, ebb-crds, ebb-schedule: no client, no runtime; `make crds-check` checks it).

pub mod outcome;
pub mod pass;
pub mod policy;
pub mod writes;

pub use pass::{Observed, Reads, WorkshopRead, decide, in_flight_of, lifespan_end, reads};

pub use outcome::{Gauges, Input, Outcome, outcome};
pub use policy::{policy_report, policy_selects};
pub use writes::{ProvisionGauges, plan_of, policy_status_plan};

use ebb_core::conditions::ConditionUpdate;
use ebb_crds::babylon::AutoScaling;
use jiff::{SignedDuration, Timestamp};

/// `autoScaling.enabled` when unset.
pub const DEFAULT_ENABLED: bool = false;
/// `autoScaling.threshold` when unset.
pub const DEFAULT_THRESHOLD: f64 = 0.8;
/// `autoScaling.scaleFactor` when unset.
pub const DEFAULT_SCALE_FACTOR: f64 = 1.5;
/// `autoScaling.maxProvisions` when unset.
pub const DEFAULT_MAX_PROVISIONS: i32 = 100;
/// `autoScaling.activeTimeout` when unset.
pub const DEFAULT_ACTIVE_TIMEOUT: &str = "60m";

/// Condition: a scale-up is in flight (`status.autoScalingActive`).
pub const CONDITION_AUTO_SCALING: &str = "AutoScaling";
/// Condition: `spec.count` has reached `maxProvisions`.
pub const CONDITION_AT_MAX: &str = "AtMaxProvisions";
/// Condition: the scale-up in flight has waited longer than `activeTimeout` for its claims.
pub const CONDITION_CLAIMS_STUCK: &str = "ClaimsStuck";
/// Condition: the effective `autoScaling` block is valid.
pub const CONDITION_CONFIG_VALID: &str = "AutoScalingConfigValid";
/// Annotation a person sets (`"true"`) on a WorkshopProvision to release the scale-up in flight;
/// the controller removes it once acted on.
pub const RELEASE_ANNOTATION: &str = "scaling.ebb.dev/release-scale-up";

/// Which object an effective `autoScaling` field came from, for error messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The WorkshopProvision's own `spec.autoScaling`.
    Provision,
    /// The Workshop's `spec.autoScaling`, inherited.
    Workshop,
    /// The `spec.autoScaling` of the WorkshopScalingPolicy of this name.
    Policy(String),
    /// A field outside `autoScaling` (`spec.count`).
    Spec,
}

impl Origin {
    fn note(&self) -> String {
        match self {
            Origin::Workshop => " (inherited from the Workshop)".into(),
            Origin::Policy(name) => format!(" (from WorkshopScalingPolicy {name})"),
            _ => String::new(),
        }
    }
}

/// An invalid setting: the field, the rule it breaks and the value it holds.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {rule}{}", .origin.note())]
pub struct ConfigError {
    /// The field's path in the object, e.g. `spec.autoScaling.threshold`.
    pub field: &'static str,
    /// The rule broken and the value found, e.g. `must be > 0 and <= 1, got 1.5`.
    pub rule: String,
    /// Where the value came from.
    pub origin: Origin,
}

/// The effective, validated `autoScaling` of one provision.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Whether the controller acts on the provision at all.
    pub enabled: bool,
    /// Utilization at or above which the provision scales; in (0, 1].
    pub threshold: f64,
    /// Growth per scale-up; > 1.
    pub scale_factor: f64,
    /// `spec.count` never grows past this; >= 1.
    pub max_provisions: i32,
    /// How long a scale-up may wait for its claims before they are reported stuck; > 0.
    pub active_timeout: SignedDuration,
}

/// The provision's settings as the reconciler needs them: off, broken, or a valid config.
#[derive(Clone, Debug, PartialEq)]
pub enum Settings {
    /// `enabled` resolves to false: the controller writes nothing at all, whatever else is set.
    Disabled,
    /// Enabled, but a field is invalid.
    Invalid(ConfigError),
    /// Enabled and valid.
    Enabled(Config),
    /// Two or more WorkshopScalingPolicies select the Workshop (their names, sorted): none
    /// applies, nothing scales.
    Ambiguous(Vec<String>),
}

impl Settings {
    /// The configuration, when enabled and valid.
    pub fn config(&self) -> Option<&Config> {
        match self {
            Settings::Enabled(config) => Some(config),
            _ => None,
        }
    }
}

/// Every configuration source of one provision.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sources<'a> {
    /// The WorkshopProvision's `spec.autoScaling` (absent where Babylon's CRD prunes it).
    pub provision: Option<&'a AutoScaling>,
    /// The Workshop's `spec.autoScaling` (absent where Babylon's CRD prunes it).
    pub workshop: Option<&'a AutoScaling>,
    /// The `spec.autoScaling` of every WorkshopScalingPolicy selecting the Workshop, by name.
    pub policies: &'a [(String, AutoScaling)],
}

impl<'a> Sources<'a> {
    /// The one policy that applies: `None` without policies, and also when several match (the
    /// caller reports those as ambiguous).
    fn policy(&self) -> Option<(&'a str, &'a AutoScaling)> {
        match self.policies {
            [(name, auto)] => Some((name.as_str(), auto)),
            _ => None,
        }
    }

    /// The effective value of one field and the object it came from: provision > Workshop >
    /// policy.
    fn pick<T>(&self, field: impl Fn(&AutoScaling) -> Option<T>) -> Option<(T, Origin)> {
        self.provision
            .and_then(&field)
            .map(|v| (v, Origin::Provision))
            .or_else(|| {
                self.workshop
                    .and_then(&field)
                    .map(|v| (v, Origin::Workshop))
            })
            .or_else(|| {
                self.policy()
                    .and_then(|(name, p)| field(p).map(|v| (v, Origin::Policy(name.to_owned()))))
            })
    }
}

/// The effective `enabled`: the provision's, else the Workshop's, else false.
pub fn enabled(workshop: Option<&AutoScaling>, provision: Option<&AutoScaling>) -> bool {
    enabled_of(&Sources {
        provision,
        workshop,
        policies: &[],
    })
}

/// The effective `enabled` of all sources: provision > Workshop > the one policy > false.
pub fn enabled_of(sources: &Sources) -> bool {
    sources
        .pick(|a| a.enabled)
        .map_or(DEFAULT_ENABLED, |(v, _)| v)
}

/// Merges the provision's `autoScaling` over its Workshop's, field by field, fills in the
/// defaults and validates every effective field (also when disabled: `plan` reports a broken
/// block either way).
pub fn resolve(
    workshop: Option<&AutoScaling>,
    provision: Option<&AutoScaling>,
) -> Result<Config, ConfigError> {
    resolve_sources(&Sources {
        provision,
        workshop,
        policies: &[],
    })
}

/// [`resolve`] over every source: provision > Workshop > the one policy > defaults, field by field.
pub fn resolve_sources(sources: &Sources) -> Result<Config, ConfigError> {
    let threshold = match sources.pick(|a| a.threshold) {
        None => DEFAULT_THRESHOLD,
        Some((t, origin)) => {
            // `!(t > 0.0)` also rejects NaN (YAML `.nan` reaches `plan`).
            if !(t > 0.0 && t <= 1.0) {
                return Err(ConfigError {
                    field: "spec.autoScaling.threshold",
                    rule: format!("must be > 0 and <= 1, got {t}"),
                    origin,
                });
            }
            t
        }
    };
    let scale_factor = match sources.pick(|a| a.scale_factor) {
        None => DEFAULT_SCALE_FACTOR,
        Some((f, origin)) => {
            if !(f > 1.0 && f.is_finite()) {
                return Err(ConfigError {
                    field: "spec.autoScaling.scaleFactor",
                    rule: format!("must be a finite number > 1, got {f}"),
                    origin,
                });
            }
            f
        }
    };
    let max_provisions = match sources.pick(|a| a.max_provisions) {
        None => DEFAULT_MAX_PROVISIONS,
        Some((m, origin)) => {
            if m < 1 {
                return Err(ConfigError {
                    field: "spec.autoScaling.maxProvisions",
                    rule: format!("must be >= 1, got {m}"),
                    origin,
                });
            }
            m
        }
    };
    let active_timeout = match sources.pick(|a| a.active_timeout.clone()) {
        None => SignedDuration::from_mins(60),
        Some((text, origin)) => match ebb_schedule::parse_duration(&text) {
            Ok(d) => d,
            Err(_) => {
                return Err(ConfigError {
                    field: "spec.autoScaling.activeTimeout",
                    rule: format!(
                        "must be a positive duration like 60m or 1h30m (h, m, s), got {text:?}"
                    ),
                    origin,
                });
            }
        },
    };
    Ok(Config {
        enabled: enabled_of(sources),
        threshold,
        scale_factor,
        max_provisions,
        active_timeout,
    })
}

/// [`resolve`] as the reconciler sees it: disabled wins over everything (an invalid block on a
/// disabled provision is none of the controller's business: it must write nothing).
pub fn settings(workshop: Option<&AutoScaling>, provision: Option<&AutoScaling>) -> Settings {
    settings_of(&Sources {
        provision,
        workshop,
        policies: &[],
    })
}

/// [`settings`] over every source. Several policies selecting the Workshop are ambiguous
/// (never a silent pick) unless the provision or the Workshop itself says `enabled: false`.
pub fn settings_of(sources: &Sources) -> Settings {
    if sources.policies.len() > 1 {
        let explicit = sources
            .provision
            .and_then(|p| p.enabled)
            .or_else(|| sources.workshop.and_then(|w| w.enabled));
        if explicit == Some(false) {
            return Settings::Disabled;
        }
        let mut names: Vec<String> = sources.policies.iter().map(|(n, _)| n.clone()).collect();
        names.sort();
        return Settings::Ambiguous(names);
    }
    if !enabled_of(sources) {
        return Settings::Disabled;
    }
    match resolve_sources(sources) {
        Ok(config) => Settings::Enabled(config),
        Err(error) => Settings::Invalid(error),
    }
}

/// [`settings_of`] when the Workshop exists but does not read as ebb's typed view (`error`, from
/// the deserializer): invalid, naming the Workshop, since what it would inherit is unknown;
/// unless the provision itself says `enabled: false`, which needs nothing from the Workshop.
pub fn settings_with_unreadable_workshop(
    sources: &Sources,
    workshop: &str,
    error: &str,
) -> Settings {
    if sources.provision.and_then(|p| p.enabled) == Some(false) {
        return Settings::Disabled;
    }
    Settings::Invalid(ConfigError {
        field: "spec.workshopName",
        rule: format!("Workshop {workshop} cannot be read: {error}"),
        origin: Origin::Spec,
    })
}

/// Seats of a workshop: WorkshopUserAssignments, and those with `spec.assignment`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Seats {
    /// Assignments with `spec.assignment` set.
    pub assigned: u32,
    /// All assignments of the workshop.
    pub total: u32,
}

impl Seats {
    /// `assigned / total`, or `None` when the workshop has no seats (then nothing scales).
    pub fn utilization(self) -> Option<f64> {
        (self.total > 0).then(|| f64::from(self.assigned) / f64::from(self.total))
    }
}

/// The count a scale-up raises `count` to:
/// `min(max_provisions, max(count + 1, floor(count * scale_factor)))`.
///
/// Rounding: `scale_factor` is taken as the decimal the user wrote, to six decimal places, and the
/// product is floored in integer arithmetic. Binary floats misround some products (`100 * 1.15`
/// is `114.99999999999999` as an f64, which a naive floor turns into 114); here it is 115, the
/// floor of the number the user meant. Factors with more than six decimals are rounded to six.
pub fn next_count(count: i32, scale_factor: f64, max_provisions: i32) -> i32 {
    // `as` saturates for huge factors; the product saturates too, and the cap applies after.
    let factor_micros = (scale_factor * 1_000_000.0).round() as i128;
    let scaled = i128::from(count).saturating_mul(factor_micros) / 1_000_000;
    let grown = scaled.max(i128::from(count) + 1);
    let capped = grown.min(i128::from(max_provisions));
    i32::try_from(capped).unwrap_or(max_provisions)
}

/// A scale-up in flight, as recorded in the provision's status.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct InFlight {
    /// `status.autoScalingStartedAt`.
    pub started_at: Option<Timestamp>,
    /// `status.autoScalingFromCount`: the count the scale-up started from.
    pub from: Option<i32>,
    /// `status.autoScalingTargetCount`: the count it raises the provision to.
    pub target: Option<i32>,
    /// `status.autoScalingClaims`: the provision's claims seen while the scale-up is in flight,
    /// recorded (sorted) when each was first seen, so one that goes while nobody looks still
    /// counts as created and done.
    pub claims: Vec<String>,
}

/// At most this many claim names are recorded in `status.autoScalingClaims` (a provision's
/// count is at most `maxProvisions`; the cap keeps the status small whatever it says).
pub const MAX_RECORDED_CLAIMS: usize = 1000;

/// The claims a scale-up in flight waits for, as they should be recorded after this pass: the
/// recorded ones and every claim seen now (sorted, at most [`MAX_RECORDED_CLAIMS`]).
/// `None` when nothing is in flight or the record is already complete (no write).
pub fn claims_to_record(observed: &Counts) -> Option<Vec<String>> {
    let in_flight = observed.in_flight.as_ref()?;
    let mut record = in_flight.claims.clone();
    for claim in &observed.claims {
        if record.len() < MAX_RECORDED_CLAIMS && !record.contains(&claim.name) {
            record.push(claim.name.clone());
        }
    }
    record.sort();
    (record != in_flight.claims).then_some(record)
}

/// One ResourceClaim of the provision.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Claim {
    /// `metadata.name`.
    pub name: String,
    /// Ready, complete or failed by Babylon's predicates.
    pub settled: bool,
    /// Being deleted (`metadata.deletionTimestamp`): it can never settle.
    pub deleting: bool,
}

/// What the reconciler observed about one provision.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Counts {
    /// `spec.count`.
    pub count: i32,
    /// Seats of the provision's workshop.
    pub seats: Seats,
    /// `Some` while `status.autoScalingActive` is true.
    pub in_flight: Option<InFlight>,
    /// The provision's ResourceClaims.
    pub claims: Vec<Claim>,
    /// `Workshop.spec.provisionDisabled` is true.
    pub provision_disabled: bool,
    /// The earliest `spec.lifespan.end` of the Workshop and the provision.
    pub lifespan_end: Option<Timestamp>,
    /// `status.autoScalingLastFromCount`: the count the last released scale-up started from.
    pub last_from: Option<i32>,
    /// [`RELEASE_ANNOTATION`] is `"true"` on the provision.
    pub release_requested: bool,
}

/// Why a provision does not scale although nothing is in flight.
#[derive(Clone, Debug, PartialEq)]
pub enum Hold {
    /// The workshop has no WorkshopUserAssignments: utilization is undefined.
    NoSeats,
    /// Utilization is below the threshold.
    BelowThreshold {
        /// assigned / total.
        utilization: f64,
    },
    /// Demand is there, but `count` has reached `maxProvisions`.
    AtMaxProvisions {
        /// assigned / total.
        utilization: f64,
    },
    /// `Workshop.spec.provisionDisabled` is true.
    ProvisionDisabled,
    /// The lifespan of the Workshop or the provision ended at this instant.
    LifespanEnded {
        /// `spec.lifespan.end`.
        end: Timestamp,
    },
    /// Demand is there, but a scale-up from this very count already happened and was released
    /// (`status.autoScalingLastFromCount`): another would repeat it.
    AlreadyScaledFrom {
        /// The count.
        count: i32,
    },
}

/// Why a scale-up in flight is released before its claims settled: its claims can provably no
/// longer appear, or a person asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EarlyRelease {
    /// `Workshop.spec.provisionDisabled` turned true.
    ProvisionDisabled,
    /// The lifespan ended.
    LifespanEnded {
        /// `spec.lifespan.end`.
        end: Timestamp,
    },
    /// Someone set `spec.count` below the scale-up's target (and not back to its start).
    CountLowered {
        /// The count now.
        count: i32,
        /// The scale-up's target.
        target: i32,
    },
    /// Every claim still unsettled is being deleted.
    ClaimsDeleted {
        /// Their names, sorted.
        claims: Vec<String>,
    },
    /// Claims the scale-up waited for (recorded when seen) are gone, finalized or deleted while
    /// nobody looked; every other claim settled.
    ClaimsGone {
        /// Their names, sorted.
        claims: Vec<String>,
    },
    /// [`RELEASE_ANNOTATION`] was set.
    Requested,
}

impl EarlyRelease {
    /// The condition reason (and the Event's wording).
    pub fn reason(&self) -> &'static str {
        match self {
            EarlyRelease::ProvisionDisabled => "ProvisionDisabled",
            EarlyRelease::LifespanEnded { .. } => "LifespanEnded",
            EarlyRelease::CountLowered { .. } => "CountLowered",
            EarlyRelease::ClaimsDeleted { .. } => "ClaimsDeleted",
            EarlyRelease::ClaimsGone { .. } => "ClaimsGone",
            EarlyRelease::Requested => "ReleaseRequested",
        }
    }

    /// One sentence on why.
    pub fn describe(&self) -> String {
        match self {
            EarlyRelease::ProvisionDisabled => {
                "the Workshop has spec.provisionDisabled: true, so the scale-up's claims will not appear".into()
            }
            EarlyRelease::LifespanEnded { end } => format!(
                "the lifespan ended at {}, so the scale-up's claims will not appear",
                ebb_core::rfc3339(*end)
            ),
            EarlyRelease::CountLowered { count, target } => format!(
                "spec.count was lowered to {count} below the scale-up's target {target} by someone else"
            ),
            EarlyRelease::ClaimsDeleted { claims } => format!(
                "the unsettled claims are being deleted and can never settle: {}",
                claims.join(", ")
            ),
            EarlyRelease::ClaimsGone { claims } => format!(
                "claims the scale-up waited for are gone (finalized or deleted) and every other claim settled: {}",
                claims.join(", ")
            ),
            EarlyRelease::Requested => format!("{RELEASE_ANNOTATION} was set"),
        }
    }
}

/// The provision's claims that hold a scale-up in flight.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Unsettled {
    /// Names of existing claims that have not settled, sorted.
    pub pending: Vec<String>,
    /// Claims `spec.count` asks for that do not exist yet.
    pub missing: i32,
}

impl Unsettled {
    fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.missing <= 0
    }

    /// `claims a, b and 3 not yet created`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.pending.is_empty() {
            parts.push(format!("unsettled: {}", self.pending.join(", ")));
        }
        if self.missing > 0 {
            parts.push(format!("{} not yet created", self.missing));
        }
        parts.join("; ")
    }
}

/// What to do with one provision.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Auto-scaling is off for this provision: write nothing at all.
    Disabled,
    /// The effective configuration (or `spec.count`) is invalid: report it, do nothing else.
    Invalid(ConfigError),
    /// Nothing in flight and no scale-up due.
    Hold(Hold),
    /// Start a scale-up: write the flag with `from`/`to` through the status subresource, then
    /// raise `spec.count` from `from` to `to`.
    Start {
        /// The current count.
        from: i32,
        /// The new count.
        to: i32,
        /// assigned / total that triggered it.
        utilization: f64,
    },
    /// The flag is set but `spec.count` is still `from`: the scale-up was interrupted between its
    /// two writes (restart, conflict, error). Raise the count to `to`, once.
    Finish {
        /// The count the scale-up started from (the current count).
        from: i32,
        /// The count to raise it to.
        to: i32,
    },
    /// The flag is set and nothing needs raising: wait for the claims to settle.
    Wait {
        /// What is still unsettled.
        unsettled: Unsettled,
        /// When the claims will be reported stuck, if the start time is known.
        deadline: Option<Timestamp>,
    },
    /// The flag has been set longer than `activeTimeout` and claims have not settled: report
    /// them; neither clear the flag nor scale.
    Stuck {
        /// What is still unsettled.
        unsettled: Unsettled,
        /// When the scale-up started (`None`: the flag was set without a start time).
        since: Option<Timestamp>,
    },
    /// Every claim has settled: clear the flag.
    Release {
        /// How many claims settled.
        claims: usize,
    },
    /// The flag is set but the scale-up it records can no longer happen (its target is at or
    /// below the count, e.g. `maxProvisions` was lowered meanwhile): clear the flag, no scale.
    Cancel {
        /// Why.
        reason: String,
    },
    /// The flag is set, the claims have not all settled, but they provably can no longer
    /// appear, or a person asked: clear the flag, with the reason, no scale.
    ReleaseEarly {
        /// Why.
        cause: EarlyRelease,
    },
    /// Several WorkshopScalingPolicies select the Workshop: report it, do nothing else.
    Ambiguous {
        /// Their names, sorted.
        policies: Vec<String>,
    },
}

impl Decision {
    /// Whether this decision raises `spec.count`.
    pub fn scales(&self) -> bool {
        matches!(self, Decision::Start { .. } | Decision::Finish { .. })
    }

    /// The count the provision should have after this decision.
    pub fn desired_count(&self, count: i32) -> i32 {
        match self {
            Decision::Start { to, .. } | Decision::Finish { to, .. } => *to,
            _ => count,
        }
    }

    /// One human sentence on why.
    pub fn reason(&self, count: i32, config: Option<&Config>) -> String {
        let threshold = config.map_or(DEFAULT_THRESHOLD, |c| c.threshold);
        match self {
            Decision::Disabled => {
                "auto-scaling is disabled (spec.autoScaling.enabled is not true)".into()
            }
            Decision::Ambiguous { policies } => format!(
                "WorkshopScalingPolicies {} all select this provision's Workshop: none applies \
                 until exactly one does (or the Workshop sets spec.autoScaling itself)",
                policies.join(", ")
            ),
            Decision::Hold(Hold::ProvisionDisabled) => {
                "the Workshop has spec.provisionDisabled: true: no scaling".into()
            }
            Decision::Hold(Hold::LifespanEnded { end }) => {
                format!(
                    "the lifespan ended at {}: no scaling",
                    ebb_core::rfc3339(*end)
                )
            }
            Decision::Hold(Hold::AlreadyScaledFrom { count }) => format!(
                "a scale-up from count {count} already happened and was released \
                 (status.autoScalingLastFromCount): no second one from the same count"
            ),
            Decision::ReleaseEarly { cause } => {
                format!("the scale-up in flight was released: {}", cause.describe())
            }
            Decision::Invalid(error) => format!("invalid configuration: {error}"),
            Decision::Hold(Hold::NoSeats) => {
                "the workshop has no WorkshopUserAssignments: utilization is undefined".into()
            }
            Decision::Hold(Hold::BelowThreshold { utilization }) => format!(
                "utilization {} is below the threshold {}",
                percent(*utilization),
                percent(threshold)
            ),
            Decision::Hold(Hold::AtMaxProvisions { utilization }) => format!(
                "utilization {} reached the threshold {}, but count {count} is at maxProvisions {}",
                percent(*utilization),
                percent(threshold),
                config.map_or(count, |c| c.max_provisions)
            ),
            Decision::Start {
                from,
                to,
                utilization,
            } => format!(
                "utilization {} reached the threshold {}: scale from {from} to {to}",
                percent(*utilization),
                percent(threshold)
            ),
            Decision::Finish { from, to } => format!(
                "completing the scale-up in flight from {from} to {to} (the flag was written, the count not yet)"
            ),
            Decision::Wait { .. } => "a scale-up is in flight (status.autoScalingActive is true): \
                 no further scaling until the provision's ResourceClaims settle"
                .into(),
            Decision::Stuck { unsettled, .. } => format!(
                "a scale-up is in flight longer than activeTimeout: claims {}",
                unsettled.describe()
            ),
            Decision::Release { claims } => {
                format!(
                    "all {claims} ResourceClaims of the provision settled: the scale-up is complete"
                )
            }
            Decision::Cancel { reason } => reason.clone(),
        }
    }
}

fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{}%", p.round())
    } else {
        format!("{p:.1}%")
    }
}

/// Decides what to do with one provision.
pub fn decide_scaling(settings: &Settings, observed: &Counts, now: Timestamp) -> Decision {
    let config = match settings {
        Settings::Disabled => return Decision::Disabled,
        Settings::Invalid(error) => return Decision::Invalid(error.clone()),
        Settings::Ambiguous(policies) => {
            return Decision::Ambiguous {
                policies: policies.clone(),
            };
        }
        Settings::Enabled(config) => config,
    };
    if observed.count < 0 {
        return Decision::Invalid(ConfigError {
            field: "spec.count",
            rule: format!("must be >= 0, got {}", observed.count),
            origin: Origin::Spec,
        });
    }
    let lifespan_ended = observed.lifespan_end.filter(|end| *end <= now);
    match &observed.in_flight {
        Some(in_flight) => {
            // A person's word, then the reasons the scale-up's claims can no longer appear.
            let cause = if observed.release_requested {
                Some(EarlyRelease::Requested)
            } else if observed.provision_disabled {
                Some(EarlyRelease::ProvisionDisabled)
            } else {
                lifespan_ended.map(|end| EarlyRelease::LifespanEnded { end })
            };
            match cause {
                Some(cause) => Decision::ReleaseEarly { cause },
                None => decide_in_flight(config, observed, in_flight, now),
            }
        }
        None if observed.provision_disabled => Decision::Hold(Hold::ProvisionDisabled),
        None => match lifespan_ended {
            Some(end) => Decision::Hold(Hold::LifespanEnded { end }),
            None => match decide_demand(config, observed.count, observed.seats) {
                // The from-count guard: never a second scale-up from the count a released one
                // started from.
                Decision::Start { from, .. } if observed.last_from == Some(from) => {
                    Decision::Hold(Hold::AlreadyScaledFrom { count: from })
                }
                other => other,
            },
        },
    }
}

/// Nothing in flight: does demand call for a scale-up?
fn decide_demand(config: &Config, count: i32, seats: Seats) -> Decision {
    let Some(utilization) = seats.utilization() else {
        return Decision::Hold(Hold::NoSeats);
    };
    // Both sides are correctly rounded f64s: an exact ratio equal to the decimal threshold
    // (8 of 10 against 0.8) compares equal, so "at the threshold" scales as documented.
    if utilization < config.threshold {
        return Decision::Hold(Hold::BelowThreshold { utilization });
    }
    if count >= config.max_provisions {
        return Decision::Hold(Hold::AtMaxProvisions { utilization });
    }
    Decision::Start {
        from: count,
        to: next_count(count, config.scale_factor, config.max_provisions),
        utilization,
    }
}

/// A scale-up is in flight: finish it, wait for it, report it stuck, or release it.
fn decide_in_flight(
    config: &Config,
    observed: &Counts,
    in_flight: &InFlight,
    now: Timestamp,
) -> Decision {
    let count = observed.count;
    // Finish an interrupted scale-up only when the count is exactly where it started: any other
    // value means our count write landed (count == target) or someone else changed the count
    // since; writing then would be a second scale-up or would overrule a human.
    if let (Some(from), Some(target)) = (in_flight.from, in_flight.target)
        && count == from
    {
        let to = target.min(config.max_provisions);
        if to <= count {
            return Decision::Cancel {
                reason: format!(
                    "the scale-up in flight from {from} to {target} cannot happen (maxProvisions is {}): clearing the flag",
                    config.max_provisions
                ),
            };
        }
        return Decision::Finish { from, to };
    }
    // Someone lowered the count below the target (other than back to the start, handled
    // above): the claims the scale-up asked for will not be created.
    if let Some(target) = in_flight.target
        && count < target
    {
        return Decision::ReleaseEarly {
            cause: EarlyRelease::CountLowered { count, target },
        };
    }

    let mut pending: Vec<String> = observed
        .claims
        .iter()
        .filter(|c| !c.settled && !c.deleting)
        .map(|c| c.name.clone())
        .collect();
    pending.sort();
    let mut deleting: Vec<String> = observed
        .claims
        .iter()
        .filter(|c| !c.settled && c.deleting)
        .map(|c| c.name.clone())
        .collect();
    deleting.sort();
    // Recorded and gone: finalized or deleted while nobody looked. Each still counts among the
    // claims Babylon created, as done.
    let gone: Vec<String> = in_flight
        .claims
        .iter()
        .filter(|name| !observed.claims.iter().any(|c| &c.name == *name))
        .cloned()
        .collect();
    // Babylon creates claims gradually (concurrency, startDelay): until `count` claims exist (or
    // existed), the scale-up has not materialised, however settled the existing ones are.
    let existing = observed.claims.len().saturating_add(gone.len());
    let existing = i32::try_from(existing).unwrap_or(i32::MAX);
    let unsettled = Unsettled {
        pending,
        missing: count.saturating_sub(existing).max(0),
    };
    if unsettled.is_empty() {
        if !deleting.is_empty() {
            return Decision::ReleaseEarly {
                cause: EarlyRelease::ClaimsDeleted { claims: deleting },
            };
        }
        if !gone.is_empty() {
            return Decision::ReleaseEarly {
                cause: EarlyRelease::ClaimsGone { claims: gone },
            };
        }
        return Decision::Release {
            claims: observed.claims.len(),
        };
    }
    // A flag without a start time was not set by ebb (or predates it): its age is unknown, so it
    // is treated as past the hold-down and its claims are reported at once.
    let deadline = in_flight
        .started_at
        .map(|start| start.checked_add(config.active_timeout).unwrap_or(start));
    match deadline {
        Some(deadline) if now < deadline => Decision::Wait {
            unsettled,
            deadline: Some(deadline),
        },
        _ => Decision::Stuck {
            unsettled,
            since: in_flight.started_at,
        },
    }
}

/// The conditions a provision should carry after `decision`, with `count` its current count and
/// `in_flight` the scale-up recorded in its status. Empty for `Disabled` (nothing is written);
/// only `AutoScalingConfigValid` for `Invalid`.
pub fn conditions(
    decision: &Decision,
    config: Option<&Config>,
    count: i32,
    in_flight: Option<&InFlight>,
) -> Vec<ConditionUpdate> {
    match decision {
        Decision::Disabled => Vec::new(),
        Decision::Invalid(error) => vec![ConditionUpdate::new(
            CONDITION_CONFIG_VALID,
            false,
            "InvalidConfig",
            error.to_string(),
        )],
        Decision::Ambiguous { policies } => vec![ConditionUpdate::new(
            CONDITION_CONFIG_VALID,
            false,
            "AmbiguousPolicies",
            format!(
                "WorkshopScalingPolicies {} all select the Workshop: none applies, nothing scales",
                policies.join(", ")
            ),
        )],
        _ => match config {
            None => Vec::new(),
            Some(config) => vec![
                ConditionUpdate::new(
                    CONDITION_CONFIG_VALID,
                    true,
                    "Valid",
                    "the effective autoScaling configuration is valid",
                ),
                auto_scaling_condition(decision, config, in_flight),
                at_max_condition(decision.desired_count(count), config),
                claims_stuck_condition(decision),
            ],
        },
    }
}

/// `AutoScaling`: true exactly while the flag is (or, for Start, is about to be) set. Messages
/// avoid volatile numbers so that claim or seat changes do not rewrite the status.
fn auto_scaling_condition(
    decision: &Decision,
    config: &Config,
    in_flight: Option<&InFlight>,
) -> ConditionUpdate {
    let active = match decision {
        Decision::Start { from, to, .. } | Decision::Finish { from, to } => {
            Some((Some(*from), Some(*to)))
        }
        Decision::Wait { .. } | Decision::Stuck { .. } => Some((
            in_flight.and_then(|f| f.from),
            in_flight.and_then(|f| f.target),
        )),
        _ => None,
    };
    let (reason, message): (&str, String) = match active {
        Some((Some(from), Some(to))) => (
            "ScaleUpInFlight",
            format!(
                "scaling count from {from} to {to}; waiting for the provision's ResourceClaims to settle"
            ),
        ),
        Some(_) => (
            "ScaleUpInFlight",
            "a scale-up is in flight; waiting for the provision's ResourceClaims to settle".into(),
        ),
        None => idle_reason(decision, config),
    };
    ConditionUpdate::new(CONDITION_AUTO_SCALING, active.is_some(), reason, message)
}

/// The `AutoScaling` reason and message when nothing is in flight.
fn idle_reason(decision: &Decision, config: &Config) -> (&'static str, String) {
    match decision {
        Decision::Hold(Hold::NoSeats) => (
            "NoSeats",
            "the workshop has no WorkshopUserAssignments".into(),
        ),
        Decision::Hold(Hold::AtMaxProvisions { .. }) => (
            "AtMaxProvisions",
            "demand reached the threshold, but count is at maxProvisions".into(),
        ),
        Decision::Release { .. } => (
            "ClaimsSettled",
            "the last scale-up completed: every ResourceClaim settled".into(),
        ),
        Decision::Cancel { .. } => (
            "Cancelled",
            "the scale-up in flight could not happen and was cancelled".into(),
        ),
        Decision::ReleaseEarly { cause } => (
            cause.reason(),
            format!("the scale-up in flight was released: {}", cause.describe()),
        ),
        Decision::Hold(Hold::ProvisionDisabled) => (
            "ProvisionDisabled",
            "the Workshop has spec.provisionDisabled: true".into(),
        ),
        Decision::Hold(Hold::LifespanEnded { end }) => (
            "LifespanEnded",
            format!("the lifespan ended at {}", ebb_core::rfc3339(*end)),
        ),
        Decision::Hold(Hold::AlreadyScaledFrom { count }) => (
            "AlreadyScaledFrom",
            format!(
                "demand reached the threshold, but a scale-up from count {count} already \
                 happened (status.autoScalingLastFromCount)"
            ),
        ),
        _ => (
            "BelowThreshold",
            format!(
                "utilization is below the threshold {}",
                percent(config.threshold)
            ),
        ),
    }
}

/// `AtMaxProvisions`, from the count after the decision.
fn at_max_condition(after: i32, config: &Config) -> ConditionUpdate {
    if after >= config.max_provisions {
        ConditionUpdate::new(
            CONDITION_AT_MAX,
            true,
            "AtMaxProvisions",
            format!(
                "count {after} has reached maxProvisions {}",
                config.max_provisions
            ),
        )
    } else {
        ConditionUpdate::new(
            CONDITION_AT_MAX,
            false,
            "BelowMaxProvisions",
            format!("count is below maxProvisions {}", config.max_provisions),
        )
    }
}

/// `ClaimsStuck`: true while claims are past `activeTimeout`.
fn claims_stuck_condition(decision: &Decision) -> ConditionUpdate {
    match decision {
        Decision::Stuck { unsettled, since } => ConditionUpdate::new(
            CONDITION_CLAIMS_STUCK,
            true,
            "ActiveTimeoutExceeded",
            match since {
                Some(_) => format!(
                    "claims have not settled within activeTimeout: {}",
                    unsettled.describe()
                ),
                None => format!(
                    "the flag was set without autoScalingStartedAt; claims not settled: {}",
                    unsettled.describe()
                ),
            },
        ),
        _ => ConditionUpdate::new(
            CONDITION_CLAIMS_STUCK,
            false,
            "NotStuck",
            "no claim is past activeTimeout",
        ),
    }
}

/// Condition of a WorkshopScalingPolicy: another policy also selects one of its Workshops.
pub const CONDITION_POLICY_AMBIGUOUS: &str = "Ambiguous";
/// How many selected Workshops a policy's status lists by name.
pub const POLICY_STATUS_MAX_LISTED: usize = 100;

/// What a WorkshopScalingPolicy's status reports: the Workshops it selects and, for each of them
/// that other policies also select, those policies.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PolicyReport {
    /// Every selected Workshop, sorted (the status lists the first
    /// [`POLICY_STATUS_MAX_LISTED`]).
    pub workshops: Vec<String>,
    /// `(workshop, the other policies selecting it)`, sorted: these Workshops do not scale.
    pub contested: Vec<(String, Vec<String>)>,
}

/// The conditions of a policy's status after `report`.
pub fn policy_conditions(report: &PolicyReport) -> Vec<ConditionUpdate> {
    vec![if report.contested.is_empty() {
        ConditionUpdate::new(
            CONDITION_POLICY_AMBIGUOUS,
            false,
            "Unique",
            "no other WorkshopScalingPolicy selects these Workshops",
        )
    } else {
        let list: Vec<String> = report
            .contested
            .iter()
            .map(|(w, others)| format!("{w} (also {})", others.join(", ")))
            .collect();
        ConditionUpdate::new(
            CONDITION_POLICY_AMBIGUOUS,
            true,
            "AlsoSelectedByOtherPolicies",
            format!(
                "these Workshops are selected by several policies, so none applies and they do not scale: {}",
                list.join("; ")
            ),
        )
    }]
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
