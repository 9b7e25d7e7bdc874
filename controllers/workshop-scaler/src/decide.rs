//! Every rule of workshop-scaler, as pure functions: plain data in, a [`Decision`] out.
//!
//! No client, no clock, no I/O: the reconciler observes the cluster into an [`Observed`], passes
//! `now`, and applies what comes back. The `plan` subcommand asks the same functions offline.
//!
//! The rules (DESIGN.md section 2.1):
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

use chrono::{DateTime, TimeDelta, Utc};
use ebb_crds::babylon::AutoScaling;
use ebb_runtime::conditions::ConditionUpdate;

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
    pub active_timeout: TimeDelta,
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
        None => TimeDelta::minutes(60),
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
    pub started_at: Option<DateTime<Utc>>,
    /// `status.autoScalingFromCount`: the count the scale-up started from.
    pub from: Option<i32>,
    /// `status.autoScalingTargetCount`: the count it raises the provision to.
    pub target: Option<i32>,
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
pub struct Observed {
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
    pub lifespan_end: Option<DateTime<Utc>>,
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
        end: DateTime<Utc>,
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
        end: DateTime<Utc>,
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
                ebb_runtime::rfc3339(*end)
            ),
            EarlyRelease::CountLowered { count, target } => format!(
                "spec.count was lowered to {count} below the scale-up's target {target} by someone else"
            ),
            EarlyRelease::ClaimsDeleted { claims } => format!(
                "the unsettled claims are being deleted and can never settle: {}",
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
        deadline: Option<DateTime<Utc>>,
    },
    /// The flag has been set longer than `activeTimeout` and claims have not settled: report
    /// them; neither clear the flag nor scale.
    Stuck {
        /// What is still unsettled.
        unsettled: Unsettled,
        /// When the scale-up started (`None`: the flag was set without a start time).
        since: Option<DateTime<Utc>>,
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
                    ebb_runtime::rfc3339(*end)
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
pub fn decide(settings: &Settings, observed: &Observed, now: DateTime<Utc>) -> Decision {
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
    observed: &Observed,
    in_flight: &InFlight,
    now: DateTime<Utc>,
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
    // Babylon creates claims gradually (concurrency, startDelay): until `count` claims exist, the
    // scale-up has not materialised, however settled the existing ones are.
    let existing = i32::try_from(observed.claims.len()).unwrap_or(i32::MAX);
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
        return Decision::Release {
            claims: observed.claims.len(),
        };
    }
    // A flag without a start time was not set by ebb (or predates it): its age is unknown, so it
    // is treated as past the hold-down and its claims are reported at once.
    let deadline = in_flight.started_at.map(|start| {
        start
            .checked_add_signed(config.active_timeout)
            .unwrap_or(start)
    });
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
    let mut out = Vec::new();
    if let Decision::Disabled = decision {
        return out;
    }
    if let Decision::Invalid(error) = decision {
        out.push(ConditionUpdate::new(
            CONDITION_CONFIG_VALID,
            false,
            "InvalidConfig",
            error.to_string(),
        ));
        return out;
    }
    if let Decision::Ambiguous { policies } = decision {
        out.push(ConditionUpdate::new(
            CONDITION_CONFIG_VALID,
            false,
            "AmbiguousPolicies",
            format!(
                "WorkshopScalingPolicies {} all select the Workshop: none applies, nothing scales",
                policies.join(", ")
            ),
        ));
        return out;
    }
    let Some(config) = config else {
        return out;
    };
    out.push(ConditionUpdate::new(
        CONDITION_CONFIG_VALID,
        true,
        "Valid",
        "the effective autoScaling configuration is valid",
    ));

    // AutoScaling: true exactly while the flag is (or, for Start, is about to be) set. Messages
    // avoid volatile numbers so that claim or seat changes do not rewrite the status.
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
    out.push(match active {
        Some((Some(from), Some(to))) => ConditionUpdate::new(
            CONDITION_AUTO_SCALING,
            true,
            "ScaleUpInFlight",
            format!("scaling count from {from} to {to}; waiting for the provision's ResourceClaims to settle"),
        ),
        Some(_) => ConditionUpdate::new(
            CONDITION_AUTO_SCALING,
            true,
            "ScaleUpInFlight",
            "a scale-up is in flight; waiting for the provision's ResourceClaims to settle",
        ),
        None => match decision {
            Decision::Hold(Hold::NoSeats) => ConditionUpdate::new(
                CONDITION_AUTO_SCALING,
                false,
                "NoSeats",
                "the workshop has no WorkshopUserAssignments",
            ),
            Decision::Hold(Hold::AtMaxProvisions { .. }) => ConditionUpdate::new(
                CONDITION_AUTO_SCALING,
                false,
                "AtMaxProvisions",
                "demand reached the threshold, but count is at maxProvisions",
            ),
            Decision::Release { .. } => ConditionUpdate::new(
                CONDITION_AUTO_SCALING,
                false,
                "ClaimsSettled",
                "the last scale-up completed: every ResourceClaim settled",
            ),
            Decision::Cancel { .. } => ConditionUpdate::new(
                CONDITION_AUTO_SCALING,
                false,
                "Cancelled",
                "the scale-up in flight could not happen and was cancelled",
            ),
            Decision::ReleaseEarly { cause } => ConditionUpdate::new(
                CONDITION_AUTO_SCALING,
                false,
                cause.reason(),
                format!("the scale-up in flight was released: {}", cause.describe()),
            ),
            Decision::Hold(Hold::ProvisionDisabled) => ConditionUpdate::new(
                CONDITION_AUTO_SCALING,
                false,
                "ProvisionDisabled",
                "the Workshop has spec.provisionDisabled: true",
            ),
            Decision::Hold(Hold::LifespanEnded { end }) => ConditionUpdate::new(
                CONDITION_AUTO_SCALING,
                false,
                "LifespanEnded",
                format!("the lifespan ended at {}", ebb_runtime::rfc3339(*end)),
            ),
            Decision::Hold(Hold::AlreadyScaledFrom { count }) => ConditionUpdate::new(
                CONDITION_AUTO_SCALING,
                false,
                "AlreadyScaledFrom",
                format!(
                    "demand reached the threshold, but a scale-up from count {count} already \
                     happened (status.autoScalingLastFromCount)"
                ),
            ),
            _ => ConditionUpdate::new(
                CONDITION_AUTO_SCALING,
                false,
                "BelowThreshold",
                format!("utilization is below the threshold {}", percent(config.threshold)),
            ),
        },
    });

    let after = decision.desired_count(count);
    out.push(if after >= config.max_provisions {
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
    });

    out.push(match decision {
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
    });
    out
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
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 10, 9, 0, 0).unwrap()
    }

    fn config() -> Config {
        resolve(
            Some(&AutoScaling {
                enabled: Some(true),
                ..AutoScaling::default()
            }),
            None,
        )
        .unwrap()
    }

    fn enabled_settings() -> Settings {
        Settings::Enabled(config())
    }

    fn seats(assigned: u32, total: u32) -> Seats {
        Seats { assigned, total }
    }

    fn observed(count: i32, assigned: u32, total: u32) -> Observed {
        Observed {
            count,
            seats: seats(assigned, total),
            ..Observed::default()
        }
    }

    fn claim(name: &str, settled: bool) -> Claim {
        Claim {
            name: name.into(),
            settled,
            deleting: false,
        }
    }

    fn claims(n: usize, settled: bool) -> Vec<Claim> {
        (0..n)
            .map(|i| claim(&format!("c{i:02}"), settled))
            .collect()
    }

    fn in_flight(from: i32, to: i32) -> InFlight {
        InFlight {
            started_at: Some(t0()),
            from: Some(from),
            target: Some(to),
        }
    }

    // --- configuration ---

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let c = resolve(None, None).unwrap();
        assert_eq!(
            c,
            Config {
                enabled: false,
                threshold: 0.8,
                scale_factor: 1.5,
                max_provisions: 100,
                active_timeout: TimeDelta::minutes(60),
            }
        );
    }

    #[test]
    fn provision_overrides_workshop_field_by_field() {
        let workshop = AutoScaling {
            enabled: Some(true),
            threshold: Some(0.5),
            scale_factor: Some(2.0),
            max_provisions: Some(60),
            active_timeout: Some("10m".into()),
        };
        let provision = AutoScaling {
            max_provisions: Some(40),
            active_timeout: Some("1h30m".into()),
            ..AutoScaling::default()
        };
        let c = resolve(Some(&workshop), Some(&provision)).unwrap();
        assert_eq!(
            c,
            Config {
                enabled: true,
                threshold: 0.5,
                scale_factor: 2.0,
                max_provisions: 40,
                active_timeout: TimeDelta::minutes(90),
            }
        );
    }

    #[test]
    fn provision_can_disable_what_its_workshop_enables_and_vice_versa() {
        let on = AutoScaling {
            enabled: Some(true),
            ..AutoScaling::default()
        };
        let off = AutoScaling {
            enabled: Some(false),
            ..AutoScaling::default()
        };
        assert!(!enabled(Some(&on), Some(&off)));
        assert!(enabled(Some(&off), Some(&on)));
        assert!(enabled(None, Some(&on)));
        assert!(!enabled(None, None));
        assert!(!enabled(
            Some(&AutoScaling::default()),
            Some(&AutoScaling::default())
        ));
    }

    #[test]
    fn validation_names_the_field_and_the_value() {
        let cases: Vec<(AutoScaling, &str)> = vec![
            (
                AutoScaling {
                    threshold: Some(1.5),
                    ..AutoScaling::default()
                },
                "spec.autoScaling.threshold: must be > 0 and <= 1, got 1.5",
            ),
            (
                AutoScaling {
                    threshold: Some(0.0),
                    ..AutoScaling::default()
                },
                "spec.autoScaling.threshold: must be > 0 and <= 1, got 0",
            ),
            (
                AutoScaling {
                    threshold: Some(f64::NAN),
                    ..AutoScaling::default()
                },
                "spec.autoScaling.threshold: must be > 0 and <= 1, got NaN",
            ),
            (
                AutoScaling {
                    scale_factor: Some(1.0),
                    ..AutoScaling::default()
                },
                "spec.autoScaling.scaleFactor: must be a finite number > 1, got 1",
            ),
            (
                AutoScaling {
                    scale_factor: Some(f64::INFINITY),
                    ..AutoScaling::default()
                },
                "spec.autoScaling.scaleFactor: must be a finite number > 1, got inf",
            ),
            (
                AutoScaling {
                    max_provisions: Some(0),
                    ..AutoScaling::default()
                },
                "spec.autoScaling.maxProvisions: must be >= 1, got 0",
            ),
            (
                AutoScaling {
                    active_timeout: Some("soon".into()),
                    ..AutoScaling::default()
                },
                "spec.autoScaling.activeTimeout: must be a positive duration like 60m or 1h30m (h, m, s), got \"soon\"",
            ),
            (
                AutoScaling {
                    active_timeout: Some("0m".into()),
                    ..AutoScaling::default()
                },
                "spec.autoScaling.activeTimeout: must be a positive duration like 60m or 1h30m (h, m, s), got \"0m\"",
            ),
        ];
        for (block, message) in cases {
            let error = resolve(None, Some(&block)).unwrap_err();
            assert_eq!(error.to_string(), message);
            assert_eq!(error.origin, Origin::Provision);
        }
    }

    #[test]
    fn an_inherited_invalid_field_says_so() {
        let workshop = AutoScaling {
            enabled: Some(true),
            threshold: Some(2.0),
            ..AutoScaling::default()
        };
        let error = resolve(Some(&workshop), None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "spec.autoScaling.threshold: must be > 0 and <= 1, got 2 (inherited from the Workshop)"
        );
        // A valid override hides the Workshop's invalid value.
        let provision = AutoScaling {
            threshold: Some(0.9),
            ..AutoScaling::default()
        };
        assert_eq!(
            resolve(Some(&workshop), Some(&provision))
                .unwrap()
                .threshold,
            0.9
        );
    }

    #[test]
    fn disabled_wins_over_an_invalid_block() {
        let broken = AutoScaling {
            threshold: Some(7.0),
            ..AutoScaling::default()
        };
        assert_eq!(settings(None, Some(&broken)), Settings::Disabled);
        let broken_on = AutoScaling {
            enabled: Some(true),
            ..broken
        };
        assert!(matches!(
            settings(None, Some(&broken_on)),
            Settings::Invalid(_)
        ));
        assert!(
            resolve(
                None,
                Some(&AutoScaling {
                    enabled: Some(false),
                    threshold: Some(7.0),
                    ..AutoScaling::default()
                })
            )
            .is_err()
        );
    }

    // --- the count formula and its rounding ---

    #[test]
    fn next_count_table() {
        let cases = [
            // (count, factor, max, expected)
            (10, 1.5, 100, 15), // 10 * 1.5 = 15 exactly
            (20, 1.5, 40, 30),
            (30, 1.5, 40, 40), // 45 capped
            (1, 1.5, 100, 2),  // floor(1.5) = 1 -> at least +1
            (0, 1.5, 100, 1),  // an empty provision grows by one
            (3, 1.1, 100, 4),  // floor(3.3) = 3 -> +1
            (10, 1.1, 100, 11),
            (30, 1.1, 100, 33),
            (20, 1.15, 100, 23),
            (100, 1.15, 200, 115), // f64: 114.99999999999999, a naive floor says 114
            (180, 1.15, 300, 207), // f64: 206.99999999999997
            (45, 1.4, 100, 63),    // f64: 62.99999999999999
            (50, 2.3, 200, 115),   // f64: 114.99999999999999
            (7, 1.3, 100, 9),      // 9.1
            (99, 2.0, 100, 100),
            (5, 1e300, 100, 100), // saturating, then capped
            (i32::MAX - 1, 1.5, i32::MAX, i32::MAX),
        ];
        for (count, factor, max, expected) in cases {
            assert_eq!(
                next_count(count, factor, max),
                expected,
                "{count} * {factor} (max {max})"
            );
        }
    }

    #[test]
    fn a_naive_float_floor_would_misround_these() {
        // The reason `next_count` works in integer micro-units: documents the trap.
        assert_eq!((100.0_f64 * 1.15).floor(), 114.0);
        assert_eq!((45.0_f64 * 1.4).floor(), 62.0);
        assert_eq!(next_count(100, 1.15, 1000), 115);
        assert_eq!(next_count(45, 1.4, 1000), 63);
    }

    // --- demand ---

    #[test]
    fn utilization_is_assigned_over_total() {
        assert_eq!(seats(0, 0).utilization(), None);
        assert_eq!(seats(8, 10).utilization(), Some(0.8));
        assert_eq!(seats(10, 10).utilization(), Some(1.0));
    }

    #[test]
    fn demand_table() {
        let s = enabled_settings();
        let now = t0();
        assert_eq!(
            decide(&s, &observed(10, 0, 0), now),
            Decision::Hold(Hold::NoSeats)
        );
        assert_eq!(
            decide(&s, &observed(10, 7, 10), now),
            Decision::Hold(Hold::BelowThreshold { utilization: 0.7 })
        );
        // Exactly at the threshold scales.
        assert_eq!(
            decide(&s, &observed(10, 8, 10), now),
            Decision::Start {
                from: 10,
                to: 15,
                utilization: 0.8
            }
        );
        assert_eq!(
            decide(&s, &observed(100, 10, 10), now),
            Decision::Hold(Hold::AtMaxProvisions { utilization: 1.0 })
        );
        // Above the cap (maxProvisions lowered below count): never scale, never scale down.
        assert_eq!(
            decide(&s, &observed(150, 10, 10), now),
            Decision::Hold(Hold::AtMaxProvisions { utilization: 1.0 })
        );
    }

    #[test]
    fn thresholds_that_are_awkward_decimals_compare_exactly() {
        for (threshold, assigned, total) in [
            (0.7, 7, 10),
            (0.3, 3, 10),
            (0.6, 3, 5),
            (0.9, 9, 10),
            (0.1, 1, 10),
        ] {
            let mut c = config();
            c.threshold = threshold;
            let d = decide(&Settings::Enabled(c), &observed(10, assigned, total), t0());
            assert!(
                d.scales(),
                "{assigned}/{total} at threshold {threshold}: {d:?}"
            );
        }
    }

    #[test]
    fn disabled_decides_nothing_whatever_the_demand() {
        for in_flight_state in [None, Some(in_flight(10, 15))] {
            let o = Observed {
                in_flight: in_flight_state,
                ..observed(10, 10, 10)
            };
            assert_eq!(decide(&Settings::Disabled, &o, t0()), Decision::Disabled);
        }
        assert!(conditions(&Decision::Disabled, None, 10, None).is_empty());
    }

    #[test]
    fn invalid_settings_and_negative_counts_are_reported() {
        let error = resolve(
            None,
            Some(&AutoScaling {
                max_provisions: Some(0),
                ..AutoScaling::default()
            }),
        )
        .unwrap_err();
        let d = decide(
            &Settings::Invalid(error.clone()),
            &observed(10, 10, 10),
            t0(),
        );
        assert_eq!(d, Decision::Invalid(error));
        let d = decide(&enabled_settings(), &observed(-1, 10, 10), t0());
        let Decision::Invalid(e) = d else {
            panic!("{d:?}")
        };
        assert_eq!(e.to_string(), "spec.count: must be >= 0, got -1");
    }

    // --- in flight ---

    #[test]
    fn never_scales_while_a_scale_up_is_in_flight() {
        let o = Observed {
            in_flight: Some(in_flight(10, 15)),
            claims: claims(10, true),
            ..observed(15, 10, 10)
        };
        let d = decide(&enabled_settings(), &o, t0());
        assert_eq!(
            d,
            Decision::Wait {
                unsettled: Unsettled {
                    pending: vec![],
                    missing: 5
                },
                deadline: Some(t0() + TimeDelta::minutes(60)),
            }
        );
    }

    #[test]
    fn an_interrupted_scale_up_is_finished_once() {
        // Flag written (10 -> 15), count still 10: finish it.
        let o = Observed {
            in_flight: Some(in_flight(10, 15)),
            claims: claims(10, true),
            ..observed(10, 10, 10)
        };
        assert_eq!(
            decide(&enabled_settings(), &o, t0()),
            Decision::Finish { from: 10, to: 15 }
        );
        // Count already raised: never again.
        let applied = Observed {
            count: 15,
            ..o.clone()
        };
        assert!(!decide(&enabled_settings(), &applied, t0()).scales());
        // Count changed by someone else since: leave it alone.
        let other = Observed { count: 12, ..o };
        assert!(!decide(&enabled_settings(), &other, t0()).scales());
    }

    #[test]
    fn finishing_respects_a_lowered_cap() {
        let mut c = config();
        c.max_provisions = 12;
        let o = Observed {
            in_flight: Some(in_flight(10, 15)),
            ..observed(10, 10, 10)
        };
        assert_eq!(
            decide(&Settings::Enabled(c.clone()), &o, t0()),
            Decision::Finish { from: 10, to: 12 }
        );
        c.max_provisions = 10;
        assert!(matches!(
            decide(&Settings::Enabled(c), &o, t0()),
            Decision::Cancel { .. }
        ));
    }

    #[test]
    fn release_needs_every_claim_settled_and_all_claims_created() {
        let s = enabled_settings();
        let base = Observed {
            in_flight: Some(in_flight(2, 3)),
            ..observed(3, 3, 3)
        };
        let all_settled = Observed {
            claims: claims(3, true),
            ..base.clone()
        };
        assert_eq!(
            decide(&s, &all_settled, t0()),
            Decision::Release { claims: 3 }
        );

        let one_pending = Observed {
            claims: vec![claim("b", true), claim("a", false), claim("c", true)],
            ..base.clone()
        };
        assert_eq!(
            decide(&s, &one_pending, t0()),
            Decision::Wait {
                unsettled: Unsettled {
                    pending: vec!["a".into()],
                    missing: 0
                },
                deadline: Some(t0() + TimeDelta::hours(1)),
            }
        );

        // Two of three claims exist and have settled: the new one is not created yet.
        let not_created = Observed {
            claims: claims(2, true),
            ..base
        };
        assert!(matches!(
            decide(&s, &not_created, t0()),
            Decision::Wait {
                unsettled: Unsettled { missing: 1, .. },
                ..
            }
        ));
    }

    #[test]
    fn hold_down_reports_stuck_claims_without_clearing_or_scaling() {
        let s = enabled_settings();
        let o = Observed {
            in_flight: Some(in_flight(2, 3)),
            claims: vec![
                claim("ready", true),
                claim("stuck-b", false),
                claim("stuck-a", false),
            ],
            ..observed(3, 3, 3)
        };
        let just_before = t0() + TimeDelta::minutes(60) - TimeDelta::seconds(1);
        assert!(matches!(decide(&s, &o, just_before), Decision::Wait { .. }));
        let at_deadline = t0() + TimeDelta::minutes(60);
        let d = decide(&s, &o, at_deadline);
        assert_eq!(
            d,
            Decision::Stuck {
                unsettled: Unsettled {
                    pending: vec!["stuck-a".into(), "stuck-b".into()],
                    missing: 0
                },
                since: Some(t0()),
            }
        );
        assert!(!d.scales());
        let conds = conditions(&d, Some(&config()), 3, o.in_flight.as_ref());
        let stuck = conds
            .iter()
            .find(|c| c.type_ == CONDITION_CLAIMS_STUCK)
            .unwrap();
        assert!(stuck.status);
        assert_eq!(
            stuck.message,
            "claims have not settled within activeTimeout: unsettled: stuck-a, stuck-b"
        );
        let active = conds
            .iter()
            .find(|c| c.type_ == CONDITION_AUTO_SCALING)
            .unwrap();
        assert!(active.status, "the flag stays set while stuck");
        // Once they settle, the flag clears even long after the deadline.
        let settled = Observed {
            claims: claims(3, true),
            ..o
        };
        assert_eq!(
            decide(&s, &settled, at_deadline + TimeDelta::days(1)),
            Decision::Release { claims: 3 }
        );
    }

    #[test]
    fn a_flag_set_by_someone_else_is_waited_on_not_finished() {
        // No from/target/startedAt: a legacy or foreign flag.
        let o = Observed {
            in_flight: Some(InFlight::default()),
            claims: vec![claim("x", false)],
            ..observed(1, 10, 10)
        };
        let d = decide(&enabled_settings(), &o, t0());
        assert!(matches!(d, Decision::Stuck { since: None, .. }), "{d:?}");
        let settled = Observed {
            claims: vec![claim("x", true)],
            ..o
        };
        assert_eq!(
            decide(&enabled_settings(), &settled, t0()),
            Decision::Release { claims: 1 }
        );
    }

    #[test]
    fn conditions_follow_the_decision() {
        let c = config();
        let find = |conds: &[ConditionUpdate], t: &str| {
            conds.iter().find(|x| x.type_ == t).cloned().unwrap()
        };
        let start = Decision::Start {
            from: 60,
            to: 90,
            utilization: 0.9,
        };
        let conds = conditions(&start, Some(&c), 60, None);
        assert_eq!(conds.len(), 4);
        assert!(find(&conds, CONDITION_AUTO_SCALING).status);
        assert!(find(&conds, CONDITION_CONFIG_VALID).status);
        assert!(!find(&conds, CONDITION_AT_MAX).status);
        assert!(!find(&conds, CONDITION_CLAIMS_STUCK).status);
        // Waiting on the same scale-up yields the same AutoScaling condition: no status churn.
        let wait = Decision::Wait {
            unsettled: Unsettled::default(),
            deadline: None,
        };
        let waiting = conditions(&wait, Some(&c), 90, Some(&in_flight(60, 90)));
        assert_eq!(
            find(&conds, CONDITION_AUTO_SCALING),
            find(&waiting, CONDITION_AUTO_SCALING)
        );
        // A scale-up that reaches the cap sets AtMaxProvisions.
        let capped = Decision::Start {
            from: 80,
            to: 100,
            utilization: 0.9,
        };
        assert!(find(&conditions(&capped, Some(&c), 80, None), CONDITION_AT_MAX).status);
        // Invalid: only the validity condition, with the field.
        let error = resolve(
            None,
            Some(&AutoScaling {
                threshold: Some(1.5),
                ..AutoScaling::default()
            }),
        )
        .unwrap_err();
        let invalid = conditions(&Decision::Invalid(error), None, 10, None);
        assert_eq!(invalid.len(), 1);
        assert_eq!(
            invalid[0].message,
            "spec.autoScaling.threshold: must be > 0 and <= 1, got 1.5"
        );
        assert!(!invalid[0].status);
    }

    #[test]
    fn reasons_read_well() {
        let c = config();
        let r = |d: Decision, count| d.reason(count, Some(&c));
        assert_eq!(
            r(
                Decision::Start {
                    from: 20,
                    to: 30,
                    utilization: 0.85
                },
                20
            ),
            "utilization 85% reached the threshold 80%: scale from 20 to 30"
        );
        assert_eq!(
            r(
                Decision::Hold(Hold::BelowThreshold {
                    utilization: 2.0 / 3.0
                }),
                20
            ),
            "utilization 66.7% is below the threshold 80%"
        );
        assert_eq!(
            r(
                Decision::Hold(Hold::AtMaxProvisions { utilization: 0.9 }),
                100
            ),
            "utilization 90% reached the threshold 80%, but count 100 is at maxProvisions 100"
        );
    }

    // --- configuration sources: policies, precedence, ambiguity ---

    fn policy(name: &str, auto: AutoScaling) -> (String, AutoScaling) {
        (name.to_owned(), auto)
    }

    #[test]
    fn precedence_is_provision_then_workshop_then_the_one_policy_field_by_field() {
        let policies = [policy(
            "standard",
            AutoScaling {
                enabled: Some(true),
                threshold: Some(0.5),
                scale_factor: Some(2.0),
                max_provisions: Some(60),
                active_timeout: Some("10m".into()),
            },
        )];
        // A stock Babylon cluster: no spec.autoScaling anywhere, the policy alone configures.
        let stock = Sources {
            policies: &policies,
            ..Sources::default()
        };
        assert_eq!(
            settings_of(&stock),
            Settings::Enabled(Config {
                enabled: true,
                threshold: 0.5,
                scale_factor: 2.0,
                max_provisions: 60,
                active_timeout: TimeDelta::minutes(10),
            })
        );
        // Where the CRDs keep spec.autoScaling: the Workshop's fields beat the policy's, the
        // provision's beat both; the rest falls through.
        let workshop = AutoScaling {
            threshold: Some(0.7),
            max_provisions: Some(50),
            ..AutoScaling::default()
        };
        let provision = AutoScaling {
            max_provisions: Some(40),
            ..AutoScaling::default()
        };
        let c = resolve_sources(&Sources {
            provision: Some(&provision),
            workshop: Some(&workshop),
            policies: &policies,
        })
        .unwrap();
        assert_eq!(
            (c.enabled, c.threshold, c.scale_factor, c.max_provisions),
            (true, 0.7, 2.0, 40)
        );
        // The Workshop opts out of what the policy enables.
        let off = AutoScaling {
            enabled: Some(false),
            ..AutoScaling::default()
        };
        assert_eq!(
            settings_of(&Sources {
                workshop: Some(&off),
                policies: &policies,
                ..Sources::default()
            }),
            Settings::Disabled
        );
        // A policy that does not enable configures nothing on its own.
        let tuning_only = [policy(
            "tuning",
            AutoScaling {
                threshold: Some(0.5),
                ..AutoScaling::default()
            },
        )];
        assert_eq!(
            settings_of(&Sources {
                policies: &tuning_only,
                ..Sources::default()
            }),
            Settings::Disabled
        );
    }

    #[test]
    fn an_invalid_policy_field_names_the_policy() {
        let policies = [policy(
            "broken",
            AutoScaling {
                enabled: Some(true),
                active_timeout: Some("soon".into()),
                ..AutoScaling::default()
            },
        )];
        let Settings::Invalid(error) = settings_of(&Sources {
            policies: &policies,
            ..Sources::default()
        }) else {
            panic!("expected invalid")
        };
        assert_eq!(error.origin, Origin::Policy("broken".into()));
        assert!(
            error
                .to_string()
                .ends_with("got \"soon\" (from WorkshopScalingPolicy broken)"),
            "{error}"
        );
    }

    #[test]
    fn two_policies_for_one_workshop_are_ambiguous_never_a_silent_pick() {
        let on = AutoScaling {
            enabled: Some(true),
            ..AutoScaling::default()
        };
        let policies = [policy("zeta", on.clone()), policy("alpha", on.clone())];
        let sources = Sources {
            policies: &policies,
            ..Sources::default()
        };
        let settings = settings_of(&sources);
        assert_eq!(
            settings,
            Settings::Ambiguous(vec!["alpha".into(), "zeta".into()])
        );
        // Even with full demand and the Workshop's own block enabling: nothing scales.
        let with_workshop = settings_of(&Sources {
            workshop: Some(&on),
            ..sources
        });
        assert!(matches!(with_workshop, Settings::Ambiguous(_)));
        let d = decide(&settings, &observed(10, 10, 10), t0());
        assert_eq!(
            d,
            Decision::Ambiguous {
                policies: vec!["alpha".into(), "zeta".into()]
            }
        );
        assert!(!d.scales());
        let conds = conditions(&d, None, 10, None);
        assert_eq!(conds.len(), 1);
        assert_eq!(conds[0].type_, CONDITION_CONFIG_VALID);
        assert!(!conds[0].status);
        assert_eq!(conds[0].reason, "AmbiguousPolicies");
        assert!(
            conds[0].message.contains("alpha, zeta"),
            "{}",
            conds[0].message
        );
        // An explicit opt-out on the Workshop or provision still means: write nothing.
        let off = AutoScaling {
            enabled: Some(false),
            ..AutoScaling::default()
        };
        assert_eq!(
            settings_of(&Sources {
                provision: Some(&off),
                ..sources
            }),
            Settings::Disabled
        );
    }

    #[test]
    fn a_policy_reports_the_workshops_others_also_select() {
        let unique = policy_conditions(&PolicyReport {
            workshops: vec!["a".into()],
            contested: vec![],
        });
        assert_eq!(
            (unique[0].status, unique[0].reason.as_str()),
            (false, "Unique")
        );
        let contested = policy_conditions(&PolicyReport {
            workshops: vec!["a".into(), "b".into()],
            contested: vec![("b".into(), vec!["other".into()])],
        });
        assert!(contested[0].status);
        assert!(
            contested[0].message.ends_with("b (also other)"),
            "{}",
            contested[0].message
        );
    }

    // --- provisionDisabled, lifespan, early releases, the from-count guard ---

    fn in_flight_observed() -> Observed {
        // 10 -> 15 applied, 15 claims of which 3 still provisioning.
        let mut claims = claims(12, true);
        claims.extend((0..3).map(|i| claim(&format!("p{i}"), false)));
        Observed {
            in_flight: Some(in_flight(10, 15)),
            claims,
            ..observed(15, 10, 10)
        }
    }

    #[test]
    fn provision_disabled_means_no_scaling() {
        let o = Observed {
            provision_disabled: true,
            ..observed(10, 10, 10)
        };
        let d = decide(&enabled_settings(), &o, t0());
        assert_eq!(d, Decision::Hold(Hold::ProvisionDisabled));
        let conds = conditions(&d, Some(&config()), 10, None);
        let active = conds
            .iter()
            .find(|c| c.type_ == CONDITION_AUTO_SCALING)
            .unwrap();
        assert_eq!(
            (active.status, active.reason.as_str()),
            (false, "ProvisionDisabled")
        );
    }

    #[test]
    fn an_ended_lifespan_means_no_scaling() {
        let end = t0() - TimeDelta::minutes(1);
        let o = Observed {
            lifespan_end: Some(end),
            ..observed(10, 10, 10)
        };
        assert_eq!(
            decide(&enabled_settings(), &o, t0()),
            Decision::Hold(Hold::LifespanEnded { end })
        );
        // Before the end it scales as usual.
        assert!(decide(&enabled_settings(), &o, end - TimeDelta::seconds(1)).scales());
    }

    #[test]
    fn each_early_release_reason_releases_with_its_reason() {
        let s = enabled_settings();
        let base = in_flight_observed();
        assert!(matches!(decide(&s, &base, t0()), Decision::Wait { .. }));
        let end = t0() - TimeDelta::minutes(5);
        let cases: Vec<(Observed, EarlyRelease, &str)> = vec![
            (
                Observed {
                    provision_disabled: true,
                    ..base.clone()
                },
                EarlyRelease::ProvisionDisabled,
                "ProvisionDisabled",
            ),
            (
                Observed {
                    lifespan_end: Some(end),
                    ..base.clone()
                },
                EarlyRelease::LifespanEnded { end },
                "LifespanEnded",
            ),
            (
                Observed {
                    count: 12,
                    ..base.clone()
                },
                EarlyRelease::CountLowered {
                    count: 12,
                    target: 15,
                },
                "CountLowered",
            ),
            (
                Observed {
                    count: 8,
                    ..base.clone()
                },
                EarlyRelease::CountLowered {
                    count: 8,
                    target: 15,
                },
                "CountLowered",
            ),
            (
                Observed {
                    claims: base
                        .claims
                        .iter()
                        .map(|c| Claim {
                            deleting: !c.settled,
                            ..c.clone()
                        })
                        .collect(),
                    ..base.clone()
                },
                EarlyRelease::ClaimsDeleted {
                    claims: vec!["p0".into(), "p1".into(), "p2".into()],
                },
                "ClaimsDeleted",
            ),
            (
                Observed {
                    release_requested: true,
                    ..base.clone()
                },
                EarlyRelease::Requested,
                "ReleaseRequested",
            ),
        ];
        for (o, cause, reason) in cases {
            let d = decide(&s, &o, t0());
            assert_eq!(
                d,
                Decision::ReleaseEarly {
                    cause: cause.clone()
                },
                "{reason}"
            );
            assert!(!d.scales());
            let conds = conditions(&d, Some(&config()), o.count, o.in_flight.as_ref());
            let active = conds
                .iter()
                .find(|c| c.type_ == CONDITION_AUTO_SCALING)
                .unwrap();
            assert_eq!((active.status, active.reason.as_str()), (false, reason));
            assert!(
                active.message.contains(&cause.describe()),
                "{}",
                active.message
            );
        }
    }

    #[test]
    fn a_timer_alone_never_releases() {
        // Far past activeTimeout, nothing provably gone, nobody asked: still reported, not released.
        let d = decide(
            &enabled_settings(),
            &in_flight_observed(),
            t0() + TimeDelta::days(30),
        );
        assert!(matches!(d, Decision::Stuck { .. }), "{d:?}");
        // A claim being deleted while others still provision: wait for the others.
        let mut o = in_flight_observed();
        o.claims[12].deleting = true;
        assert!(matches!(
            decide(&enabled_settings(), &o, t0()),
            Decision::Wait { .. }
        ));
        // Claims deleted and gone: Babylon may create them again, so they can still appear.
        let gone = Observed {
            claims: claims(12, true),
            ..in_flight_observed()
        };
        assert!(matches!(
            decide(&enabled_settings(), &gone, t0()),
            Decision::Wait { .. }
        ));
        // Someone raised the count above the target: more claims will come, keep waiting.
        let raised = Observed {
            count: 20,
            ..in_flight_observed()
        };
        assert!(matches!(
            decide(&enabled_settings(), &raised, t0()),
            Decision::Wait { .. }
        ));
    }

    #[test]
    fn a_release_never_allows_a_second_increase_from_the_same_count() {
        let s = enabled_settings();
        // Released early at 10 (e.g. the count lowered back to where it started): demand stays.
        let o = Observed {
            last_from: Some(10),
            ..observed(10, 10, 10)
        };
        let d = decide(&s, &o, t0());
        assert_eq!(d, Decision::Hold(Hold::AlreadyScaledFrom { count: 10 }));
        let conds = conditions(&d, Some(&config()), 10, None);
        assert_eq!(
            conds
                .iter()
                .find(|c| c.type_ == CONDITION_AUTO_SCALING)
                .unwrap()
                .reason,
            "AlreadyScaledFrom"
        );
        // From any other count, demand scales as usual.
        let other = Observed {
            last_from: Some(10),
            ..observed(15, 10, 10)
        };
        assert_eq!(
            decide(&s, &other, t0()),
            Decision::Start {
                from: 15,
                to: 22,
                utilization: 1.0
            }
        );
    }

    // --- properties ---

    fn any_config() -> impl Strategy<Value = Config> {
        (0.01f64..=1.0, 1.0001f64..5.0, 1i32..500, 1i64..7200).prop_map(
            |(threshold, scale_factor, max, secs)| Config {
                enabled: true,
                threshold,
                scale_factor,
                max_provisions: max,
                active_timeout: TimeDelta::seconds(secs),
            },
        )
    }

    fn any_in_flight() -> impl Strategy<Value = Option<InFlight>> {
        prop_oneof![
            Just(None),
            (
                proptest::option::of(0i64..100_000),
                proptest::option::of(0i32..600),
                proptest::option::of(0i32..600)
            )
                .prop_map(|(start, from, target)| Some(InFlight {
                    started_at: start.map(|s| t0() + TimeDelta::seconds(s)),
                    from,
                    target,
                })),
        ]
    }

    fn any_observed() -> impl Strategy<Value = Observed> {
        (
            0i32..600,
            0u32..300,
            0u32..300,
            any_in_flight(),
            proptest::collection::vec(any::<bool>(), 0..40),
        )
            .prop_map(|(count, a, b, in_flight, settled)| Observed {
                count,
                seats: Seats {
                    assigned: a.min(b),
                    total: a.max(b),
                },
                in_flight,
                claims: settled
                    .into_iter()
                    .enumerate()
                    .map(|(i, s)| claim(&format!("c{i}"), s))
                    .collect(),
                ..Observed::default()
            })
    }

    proptest! {
        #[test]
        fn prop_never_scales_above_max_provisions(c in any_config(), o in any_observed(), dt in 0i64..200_000) {
            let d = decide(&Settings::Enabled(c.clone()), &o, t0() + TimeDelta::seconds(dt));
            if d.scales() {
                prop_assert!(d.desired_count(o.count) <= c.max_provisions, "{d:?}");
            }
        }

        #[test]
        fn prop_scales_at_least_one_below_the_cap(c in any_config(), count in 0i32..600, assigned in 0u32..300, extra in 0u32..300) {
            let o = observed(count, assigned, assigned + extra);
            let d = decide(&Settings::Enabled(c.clone()), &o, t0());
            if let Decision::Start { from, to, .. } = d {
                prop_assert_eq!(from, count);
                prop_assert!(to > count);
                prop_assert!(to <= c.max_provisions);
            }
            // Demand at or above the threshold below the cap always scales.
            if let Some(u) = o.seats.utilization()
                && u >= c.threshold && count < c.max_provisions
            {
                prop_assert!(d.scales(), "{d:?}");
            }
        }

        #[test]
        fn prop_never_starts_while_in_flight(c in any_config(), o in any_observed(), dt in 0i64..200_000) {
            prop_assume!(o.in_flight.is_some());
            let d = decide(&Settings::Enabled(c), &o, t0() + TimeDelta::seconds(dt));
            prop_assert!(!matches!(d, Decision::Start { .. }), "{d:?}");
            // The only write of the count while in flight finishes the recorded scale-up from its
            // exact starting count.
            if let Decision::Finish { from, to } = d {
                let f = o.in_flight.as_ref().unwrap();
                prop_assert_eq!(Some(from), f.from);
                prop_assert_eq!(from, o.count);
                prop_assert!(to <= f.target.unwrap());
                prop_assert!(to > from);
            }
        }

        #[test]
        fn prop_never_starts_from_the_released_from_count(c in any_config(), o in any_observed(), dt in 0i64..200_000) {
            let o = Observed { last_from: Some(o.count), ..o };
            let d = decide(&Settings::Enabled(c), &o, t0() + TimeDelta::seconds(dt));
            prop_assert!(!matches!(d, Decision::Start { .. }), "{d:?}");
        }

        #[test]
        fn prop_an_early_release_never_scales(c in any_config(), o in any_observed(), disabled in any::<bool>(), asked in any::<bool>(), dt in 0i64..200_000) {
            prop_assume!(o.in_flight.is_some() && (disabled || asked));
            let o = Observed { provision_disabled: disabled, release_requested: asked, ..o };
            let d = decide(&Settings::Enabled(c), &o, t0() + TimeDelta::seconds(dt));
            prop_assert!(matches!(d, Decision::ReleaseEarly { .. }), "{d:?}");
        }

        #[test]
        fn prop_disabled_decides_nothing(o in any_observed()) {
            prop_assert_eq!(decide(&Settings::Disabled, &o, t0()), Decision::Disabled);
        }

        #[test]
        fn prop_finishing_is_idempotent(c in any_config(), o in any_observed()) {
            // Applying a Start or Finish and deciding again never raises the count a second time.
            let s = Settings::Enabled(c);
            let d = decide(&s, &o, t0());
            let (from, to) = match d {
                Decision::Start { from, to, .. } | Decision::Finish { from, to } => (from, to),
                _ => return Ok(()),
            };
            let after = Observed {
                count: to,
                in_flight: Some(InFlight { started_at: Some(t0()), from: Some(from), target: Some(to) }),
                ..o
            };
            let again = decide(&s, &after, t0());
            prop_assert!(!again.scales(), "{again:?}");
        }

        #[test]
        fn prop_release_only_when_all_claims_settled(c in any_config(), o in any_observed(), dt in 0i64..200_000) {
            let d = decide(&Settings::Enabled(c), &o, t0() + TimeDelta::seconds(dt));
            if let Decision::Release { .. } = d {
                prop_assert!(o.claims.iter().all(|c| c.settled));
                prop_assert!(o.claims.len() >= usize::try_from(o.count).unwrap());
            }
        }

        #[test]
        fn prop_next_count_is_the_exact_decimal_formula(count in 0i32..100_000, hundredths in 101u32..500, max in 1i32..200_000) {
            // For factors written with two decimals (1.15), the result is the floor of the exact
            // decimal product, computed here in integers.
            let factor = f64::from(hundredths) / 100.0;
            let exact = i64::from(count) * i64::from(hundredths) / 100;
            let expected = i64::from(max).min(exact.max(i64::from(count) + 1));
            prop_assert_eq!(i64::from(next_count(count, factor, max)), expected);
        }
    }
}
