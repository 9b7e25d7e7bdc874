//! A scenario file (`examples/scenarios/*.yaml`): the objects exactly as a user writes them, the
//! actors' settings, and the span to simulate.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use serde::Deserialize;
use serde_json::Value;

use crate::draw::Spread;
use crate::users::Arrivals;
use crate::world::SimError;
use crate::{babylon, hooks};

/// One scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    /// A short name (the chart's file name).
    pub name: String,
    /// What the scenario shows.
    #[serde(default)]
    pub description: String,
    /// When the simulation starts.
    pub start: Timestamp,
    /// How long it runs (`24h`, `168h`).
    pub span: Spread,
    /// The seed of every random draw.
    #[serde(default)]
    pub seed: u64,
    /// The objects in the cluster at the start: ebb's and the ones they act on.
    pub objects: Vec<Value>,
    /// The rest of the cluster.
    #[serde(default)]
    pub actors: Actors,
}

/// The actors' settings; each scenario uses the ones its controller needs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Actors {
    /// Nodes, their autoscaler, and upgrades (scaledown-window).
    pub cluster: Option<ClusterActors>,
    /// Seats of a WorkshopProvision (workshop-scaler).
    pub babylon: Option<babylon::Settings>,
    /// Who arrives when.
    #[serde(default)]
    pub users: Vec<Arrivals>,
    /// Hook Jobs by hook name (stackable-scaler).
    #[serde(default)]
    pub hooks: BTreeMap<String, hooks::Behaviour>,
    /// Provisioner pods and the workshops whose users start jobs on them (seed 001).
    pub provisioners: Option<ProvisionerActors>,
    /// The HPA's requests, the StatefulSet's pace and the operator (stackable-scaler).
    pub stackable: Option<StackableActors>,
}

/// Around a StackableScaler: what the HPA asks for and when, how fast pods come and go, and when
/// an operator retries a failed operation.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StackableActors {
    /// Each request: after how long (from the start), and the replicas asked for.
    pub requests: Vec<ReplicaRequest>,
    /// How long the StatefulSet takes per pod added or removed.
    #[serde(default = "one_minute")]
    pub pod_pace: Spread,
    /// How long after a failure the operator sets the retry annotation.
    #[serde(default = "ten_minutes")]
    pub retry_after: Spread,
}

/// The HPA asking for replicas through `/scale`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaRequest {
    /// When, after the start.
    pub after: Spread,
    /// The replicas asked for.
    pub replicas: i64,
}

fn one_minute() -> Spread {
    Spread::fixed(SignedDuration::from_mins(1))
}

/// Provisioners (one job per pod) and the workshops that use them.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProvisionerActors {
    /// Each workshop's users: each starts one job when it arrives.
    pub workshops: Vec<Arrivals>,
    /// How long a job (a workspace build) takes.
    pub job_duration: Spread,
    /// How long a new provisioner pod takes to be ready.
    #[serde(default = "thirty_seconds")]
    pub pod_start: Spread,
}

fn thirty_seconds() -> Spread {
    Spread::fixed(SignedDuration::from_secs(30))
}

/// The cluster around a ScaleDownSchedule.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterActors {
    /// Nodes the workloads need outside the busy hours.
    pub base_nodes: usize,
    /// Busy hours (UTC, every day): from, to (`HH:MM`) and the nodes needed then.
    #[serde(default)]
    pub busy: Vec<Busy>,
    /// How long a node must be unneeded before the autoscaler removes it.
    #[serde(default = "ten_minutes")]
    pub unneeded_time: Spread,
    /// Cluster upgrades: when each starts and how long it runs.
    #[serde(default)]
    pub upgrades: Vec<Upgrade>,
}

fn ten_minutes() -> Spread {
    Spread::fixed(SignedDuration::from_mins(10))
}

/// Busy hours of every day.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Busy {
    /// `HH:MM` UTC.
    pub from: String,
    /// `HH:MM` UTC, after `from`.
    pub to: String,
    /// Nodes needed meanwhile.
    pub nodes: usize,
}

/// One cluster upgrade.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Upgrade {
    /// When it starts.
    pub at: Timestamp,
    /// How long it runs.
    pub lasting: Spread,
}

impl Scenario {
    /// Reads a scenario from `text` (the file `path`).
    ///
    /// # Errors
    /// YAML that is not a scenario, with the field at fault.
    pub fn parse(path: &str, text: &str) -> Result<Self, SimError> {
        serde_saphyr::from_str_with_options(text, ebb_runtime::cli::manifest::yaml_options())
            .map_err(|e| SimError::Scenario {
                path: path.to_owned(),
                message: e.to_string(),
            })
    }

    /// The span as a duration (a range is read as its longest).
    pub fn length(&self) -> SignedDuration {
        match self.span {
            Spread::Fixed(d) => d,
            Spread::Between { max, .. } => max,
        }
    }

    /// When the simulation ends.
    pub fn end(&self) -> Timestamp {
        self.start + self.length()
    }

    /// The objects of `kind`.
    pub fn objects_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.objects
            .iter()
            .filter(move |o| o.get("kind").and_then(Value::as_str) == Some(kind))
    }

    /// What a scenario read from `path` lacks, as the error a simulation ends with.
    pub fn unfit(path: &str) -> impl Fn(String) -> SimError + '_ {
        move |message| SimError::Scenario {
            path: path.to_owned(),
            message,
        }
    }

    /// The actor `name` (`actors.<name>`, given as `actor`) that simulating a `kind` needs.
    ///
    /// # Errors
    /// The scenario (read from `path`) has none.
    pub fn actor<T: Clone>(
        path: &str,
        actor: Option<&T>,
        name: &str,
        kind: &str,
    ) -> Result<T, SimError> {
        actor
            .cloned()
            .ok_or_else(|| Self::unfit(path)(format!("actors.{name} is required for a {kind}")))
    }

    /// The first object of kind `K` among the objects (read from `path`).
    ///
    /// # Errors
    /// None of kind `K`, or one that does not fit `K`.
    pub fn first<K>(&self, path: &str) -> Result<K, SimError>
    where
        K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
    {
        let kind = K::kind(&());
        let fail = Self::unfit(path);
        self.objects_of(&kind)
            .next()
            .map(|o| serde_json::from_value(o.clone()))
            .transpose()
            .map_err(|e| fail(format!("the {kind}: {e}")))?
            .ok_or_else(|| fail(format!("no {kind} among the objects")))
    }
}

#[cfg(test)]
#[path = "scenario_tests.rs"]
mod tests;
