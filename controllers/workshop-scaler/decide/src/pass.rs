//! One pass over a WorkshopProvision, in two calls: [`reads`] says what the decision needs read,
//! the reconciler reads it (the Workshop, the namespace's policies, then — where they can matter
//! — the seats and claims), and [`decide`] returns the whole pass as one plan: settings from
//! every source, the pause, the decision, its writes, conditions, Events, gauges and requeue.

use ebb_core::Plan;
use ebb_core::pause::{PauseReport, pause_report};
use ebb_crds::babylon::{AutoScaling, Workshop, WorkshopProvision};
use ebb_crds::workshop_policy::WorkshopScalingPolicy;
use jiff::Timestamp;
use kube::ResourceExt;
use serde_json::Value;

use crate::{
    Claim, Counts, InFlight, Input, ProvisionGauges, RELEASE_ANNOTATION, Seats, Settings, Sources,
    outcome, plan_of, policy_selects, settings_of, settings_with_unreadable_workshop,
};

/// The Workshop a provision names, as read.
#[derive(Clone, Copy, Debug)]
pub enum WorkshopRead<'a> {
    /// No Workshop of that name.
    Missing,
    /// The Workshop.
    Found(&'a Workshop),
    /// It exists but does not read as ebb's typed view: the deserializer's message.
    Unreadable(&'a str),
}

impl<'a> WorkshopRead<'a> {
    fn found(self) -> Option<&'a Workshop> {
        match self {
            Self::Found(workshop) => Some(workshop),
            Self::Missing | Self::Unreadable(_) => None,
        }
    }
}

/// What a pass over one provision must read, from the provision alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reads {
    /// The Workshop it names (`spec.workshopName`), in its namespace; once it is found, the
    /// namespace's WorkshopScalingPolicies (they select Workshops: without it none applies).
    pub workshop: String,
}

impl Reads {
    /// Once the Workshop and the policies are read: whether the seats of the Workshop count
    /// (`.0`: a valid, unpaused configuration) and the provision's claims (`.1`: also a
    /// scale-up in flight).
    pub fn counts(
        &self,
        provision: &WorkshopProvision,
        workshop: WorkshopRead<'_>,
        policies: &[WorkshopScalingPolicy],
        now: Timestamp,
    ) -> (bool, bool) {
        let selected = selected_policies(policies, workshop.found());
        let settings = settings(provision, workshop, &selected);
        let seats = pause(provision, &settings, now).is_none() && settings.config().is_some();
        (seats, seats && in_flight_of(provision).is_some())
    }
}

/// What a pass over `provision` reads: its Workshop, and with it the namespace's policies.
pub fn reads(provision: &WorkshopProvision) -> Reads {
    Reads {
        workshop: provision.spec.workshop_name.clone(),
    }
}

/// Everything one pass decides from.
#[derive(Clone, Debug)]
pub struct Observed<'a> {
    /// The provision, as read.
    pub provision: &'a WorkshopProvision,
    /// Its Workshop.
    pub workshop: WorkshopRead<'a>,
    /// The WorkshopScalingPolicies of its namespace that deserialize (none without the
    /// Workshop).
    pub policies: &'a [WorkshopScalingPolicy],
    /// The Workshop's seats, where [`Reads::counts`] asked for them.
    pub seats: Seats,
    /// The provision's ResourceClaims, by name, where [`Reads::counts`] asked for them.
    pub claims: Vec<Claim>,
    /// `--dry-run`: decide and report, write neither the flag nor the count.
    pub dry_run: bool,
}

/// The `spec.autoScaling` of every policy that selects `workshop`, by name. A policy whose
/// selector cannot be evaluated selects nothing (its own status says why).
fn selected_policies(
    policies: &[WorkshopScalingPolicy],
    workshop: Option<&Workshop>,
) -> Vec<(String, AutoScaling)> {
    let Some(workshop) = workshop else {
        return Vec::new();
    };
    let mut selected: Vec<(String, AutoScaling)> = policies
        .iter()
        .filter(|policy| policy_selects(policy, workshop) == Ok(true))
        .map(|policy| (policy.name_any(), policy.spec.auto_scaling.clone()))
        .collect();
    selected.sort_by(|a, b| a.0.cmp(&b.0));
    selected
}

/// The effective settings from every source.
fn settings(
    provision: &WorkshopProvision,
    workshop: WorkshopRead<'_>,
    policies: &[(String, AutoScaling)],
) -> Settings {
    let sources = Sources {
        provision: provision.spec.auto_scaling.as_ref(),
        workshop: workshop.found().and_then(|w| w.spec.auto_scaling.as_ref()),
        policies,
    };
    match workshop {
        WorkshopRead::Unreadable(error) => {
            settings_with_unreadable_workshop(&sources, &provision.spec.workshop_name, error)
        }
        WorkshopRead::Missing | WorkshopRead::Found(_) => settings_of(&sources),
    }
}

/// The provision's pause (none matters while auto-scaling is disabled).
fn pause(
    provision: &WorkshopProvision,
    settings: &Settings,
    now: Timestamp,
) -> Option<PauseReport> {
    if *settings == Settings::Disabled {
        return None;
    }
    let conditions = provision
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    pause_report(
        [("WorkshopProvision", &provision.metadata)],
        conditions,
        provision.metadata.generation,
        now,
    )
}

/// The scale-up in flight recorded in the status, if the flag is set.
pub fn in_flight_of(provision: &WorkshopProvision) -> Option<InFlight> {
    let status = provision.status.as_ref()?;
    (status.auto_scaling_active == Some(true)).then(|| InFlight {
        started_at: status
            .auto_scaling_started_at
            .as_ref()
            .map(ebb_core::from_k8s_time),
        from: status.auto_scaling_from_count,
        target: status.auto_scaling_target_count,
        claims: status.auto_scaling_claims.clone(),
    })
}

/// `spec.lifespan.end` (Babylon's free-form `{start, end}`), when it is an RFC 3339 instant.
pub fn lifespan_end(lifespan: Option<&Value>) -> Option<Timestamp> {
    let end = lifespan?.get("end")?.as_str()?;
    end.parse().ok()
}

/// The whole pass over `observed.provision` at `now`: the settings (provision > Workshop > the
/// one policy selecting the Workshop > defaults), the pause, the decision on the seats and claims
/// read, and the plan that carries it out ([`outcome`], [`plan_of`]).
pub fn decide(observed: &Observed<'_>, now: Timestamp) -> Plan<ProvisionGauges> {
    let provision = observed.provision;
    let workshop = observed.workshop.found();
    let selected = selected_policies(observed.policies, workshop);
    let settings = settings(provision, observed.workshop, &selected);
    let pause = pause(provision, &settings, now);
    let status = provision.status.clone().unwrap_or_default();
    let in_flight = in_flight_of(provision);
    let release_annotation = provision.annotations().get(RELEASE_ANNOTATION);
    let counts = Counts {
        count: provision.spec.count,
        seats: observed.seats,
        in_flight: in_flight.clone(),
        claims: observed.claims.clone(),
        provision_disabled: workshop.is_some_and(|w| w.spec.provision_disabled == Some(true)),
        lifespan_end: [
            workshop.and_then(|w| lifespan_end(w.spec.lifespan.as_ref())),
            lifespan_end(provision.spec.lifespan.as_ref()),
        ]
        .into_iter()
        .flatten()
        .min(),
        last_from: status.auto_scaling_last_from_count,
        release_requested: in_flight.is_some()
            && release_annotation.map(String::as_str) == Some("true"),
    };
    let outcome = outcome(&Input {
        settings: &settings,
        pause: pause.as_ref(),
        observed: &counts,
        conditions: &status.conditions,
        release_annotation: release_annotation.is_some(),
        dry_run: observed.dry_run,
        now,
    });
    plan_of(provision, outcome)
}

#[cfg(test)]
#[path = "pass_tests.rs"]
mod tests;
