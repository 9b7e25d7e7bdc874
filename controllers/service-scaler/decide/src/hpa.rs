//! The HPA: the fields ebb owns and how they compare and are written, the HPA ebb creates, the
//! kill switch, and ownership and the HPA's fate on deletion.

use ebb_crds::service_scaler::{
    DeletionPolicy, HpaSettings, MetricTargetSpec, ServiceScaler, ServiceScalerSpec,
};
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec, MetricSpec,
    MetricTarget, ResourceMetricSource,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};
use kube_quantity::ParsedQuantity;
use serde_json::{Value, json};

use super::{
    DEFAULT_MIN_REPLICAS, FINALIZER, MANAGED_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL,
    UDAAN_FINALIZER,
};

/// The metric the API server puts into an HPA created without metrics (autoscaling/v2 defaults).
const SERVER_DEFAULT_CPU_UTILIZATION: i32 = 80;

/// The version and identity of the HPA as read, which a write of [`OwnedFields`] carries (see
/// [`OwnedFields::precondition`]). Empty: an unconditional apply.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Precondition {
    /// `metadata.resourceVersion` as read.
    pub resource_version: Option<String>,
    /// `metadata.uid` as read.
    pub uid: Option<String>,
}

/// The HPA fields ebb owns, as they should be.
#[derive(Clone, Debug, PartialEq)]
pub struct OwnedFields {
    /// `spec.minReplicas`.
    pub min_replicas: i32,
    /// `spec.maxReplicas`.
    pub max_replicas: i32,
    /// `spec.metrics`: Resource cpu/memory Utilization for every non-zero target.
    pub metrics: Vec<MetricSpec>,
    /// Targets of other metrics already on the HPA, by name ([`Self::keeping_foreign_metrics`]
    /// sets them).
    pub metric_targets: Vec<MetricTargetSpec>,
}

/// The name of an External, Pods or Object metric.
fn metric_name(m: &MetricSpec) -> Option<&str> {
    m.external
        .as_ref()
        .map(|e| e.metric.name.as_str())
        .or_else(|| m.pods.as_ref().map(|p| p.metric.name.as_str()))
        .or_else(|| m.object.as_ref().map(|o| o.metric.name.as_str()))
}

/// The metric target `t` asks for.
fn metric_target(t: &MetricTargetSpec) -> MetricTarget {
    let (type_, value, average_value, average_utilization) =
        match (&t.value, &t.average_value, t.average_utilization) {
            (Some(v), _, _) => ("Value", Some(Quantity(v.clone())), None, None),
            (None, Some(v), _) => ("AverageValue", None, Some(Quantity(v.clone())), None),
            (None, None, u) => ("Utilization", None, None, u),
        };
    MetricTarget {
        type_: type_.into(),
        value,
        average_value,
        average_utilization,
    }
}

/// The target of an External, Pods or Object metric, mutably.
fn target_mut(m: &mut MetricSpec) -> Option<&mut MetricTarget> {
    if let Some(e) = m.external.as_mut() {
        return Some(&mut e.target);
    }
    if let Some(p) = m.pods.as_mut() {
        return Some(&mut p.target);
    }
    m.object.as_mut().map(|o| &mut o.target)
}

/// Whether two quantities are the same amount: the API server stores `2000m` as `2`, so a
/// string comparison would see a change after every write. Unparseable strings compare as text.
fn same_quantity(a: Option<&Quantity>, b: Option<&Quantity>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => match (ParsedQuantity::try_from(a), ParsedQuantity::try_from(b)) {
            (Ok(pa), Ok(pb)) => pa == pb,
            _ => a == b,
        },
        (a, b) => a == b,
    }
}

/// Whether `a` and `b` are the same target, quantities compared by amount.
fn same_target(a: &MetricTarget, b: &MetricTarget) -> bool {
    a.type_ == b.type_
        && a.average_utilization == b.average_utilization
        && same_quantity(a.value.as_ref(), b.value.as_ref())
        && same_quantity(a.average_value.as_ref(), b.average_value.as_ref())
}

/// `m` with the target `targets` names for it, if any. A target that is already the same
/// amount is left as the server wrote it.
pub(crate) fn retargeted(m: &MetricSpec, targets: &[MetricTargetSpec]) -> MetricSpec {
    let mut m = m.clone();
    let wanted = metric_name(&m).and_then(|name| targets.iter().find(|t| t.name == name));
    if let (Some(t), Some(target)) = (wanted, target_mut(&mut m)) {
        let desired = metric_target(t);
        if !same_target(target, &desired) {
            *target = desired;
        }
    }
    m
}

fn describe_target(t: &MetricTarget) -> String {
    let value = t
        .value
        .as_ref()
        .or(t.average_value.as_ref())
        .map(|q| q.0.clone())
        .or_else(|| t.average_utilization.map(|u| format!("{u}%")))
        .unwrap_or_default();
    format!("{} {value}", t.type_)
}

fn utilization_metric(resource: &str, utilization: i32) -> MetricSpec {
    MetricSpec {
        type_: "Resource".into(),
        resource: Some(ResourceMetricSource {
            name: resource.into(),
            target: MetricTarget {
                type_: "Utilization".into(),
                average_utilization: Some(utilization),
                ..MetricTarget::default()
            },
        }),
        ..MetricSpec::default()
    }
}

/// Whether ebb decides this metric: a `Resource` metric on cpu or memory. Every other metric
/// (Pods, Object, External, ContainerResource, other resources) belongs to someone else and is
/// kept as it is.
pub(crate) fn is_owned_metric(m: &MetricSpec) -> bool {
    m.type_ == "Resource"
        && m.resource
            .as_ref()
            .is_some_and(|r| r.name == "cpu" || r.name == "memory")
}

/// `(resource, utilization)` of every cpu/memory metric, sorted, or `None` when one of them has
/// another target shape (an average value, say), which ebb's metric replaces.
fn utilization_targets(metrics: &[MetricSpec]) -> Option<Vec<(String, i32)>> {
    let mut out = Vec::new();
    for m in metrics.iter().filter(|m| is_owned_metric(m)) {
        let other = m.container_resource.is_some()
            || m.external.is_some()
            || m.object.is_some()
            || m.pods.is_some();
        let resource = m.resource.as_ref()?;
        let t = &resource.target;
        if other || t.type_ != "Utilization" || t.average_value.is_some() || t.value.is_some() {
            return None;
        }
        out.push((resource.name.clone(), t.average_utilization?));
    }
    out.sort();
    Some(out)
}

impl OwnedFields {
    /// The fields for `settings`.
    pub fn from_settings(settings: &HpaSettings) -> Self {
        let mut metrics = Vec::new();
        if let Some(cpu) = settings.target_cpu_utilization {
            metrics.push(utilization_metric("cpu", cpu));
        }
        if let Some(memory) = settings.target_memory_utilization {
            metrics.push(utilization_metric("memory", memory));
        }
        Self {
            min_replicas: settings.min_replicas,
            max_replicas: settings.max_replicas,
            metrics,
            metric_targets: settings.metric_targets.clone(),
        }
    }

    /// Whether every metric of `metrics` named in [`Self::metric_targets`] has that target.
    fn metric_targets_match(&self, metrics: &[MetricSpec]) -> bool {
        metrics
            .iter()
            .filter(|m| !is_owned_metric(m))
            .all(|m| retargeted(m, &self.metric_targets) == *m)
    }

    /// Whether `spec` already has these values. Metrics other than cpu/memory are not compared.
    /// An HPA left without metrics gets the API server's default (CPU at 80%), which matches
    /// an empty list.
    pub fn matches(&self, spec: &HorizontalPodAutoscalerSpec) -> bool {
        let metrics = spec.metrics.as_deref().unwrap_or_default();
        let foreign = metrics.iter().any(|m| !is_owned_metric(m));
        let metrics_match = match (
            utilization_targets(metrics),
            utilization_targets(&self.metrics),
        ) {
            (Some(actual), Some(desired)) if desired.is_empty() && !foreign => {
                actual.is_empty() || actual == [("cpu".to_owned(), SERVER_DEFAULT_CPU_UTILIZATION)]
            }
            (Some(actual), Some(desired)) => actual == desired,
            _ => false,
        };
        spec.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS) == self.min_replicas
            && spec.max_replicas == self.max_replicas
            && metrics_match
            && self.metric_targets_match(metrics)
    }

    /// These fields plus the metrics of `current` that are not cpu/memory: `spec.metrics` is one
    /// list to server-side apply (the API treats it as atomic), so metrics someone else added
    /// (queue depth, requests per second) are sent back as they are instead of being dropped.
    pub fn keeping_foreign_metrics(mut self, current: &HorizontalPodAutoscalerSpec) -> Self {
        self.metrics.extend(
            current
                .metrics
                .iter()
                .flatten()
                .filter(|m| !is_owned_metric(m))
                .map(|m| retargeted(m, &self.metric_targets)),
        );
        self
    }

    /// What a write of these fields to `current` is preconditioned on.
    /// - Its `resourceVersion`: every write carries `spec.metrics`, an atomic list under
    ///   server-side apply, so without it a metric another actor added after the read would be
    ///   dropped. With it the write fails with a 409 instead, and ebb reads again and decides
    ///   again.
    /// - Its `uid`: apply is an upsert, even with a resourceVersion; an HPA deleted after the
    ///   read would be made again from the owned fields alone (no `scaleTargetRef`). With it
    ///   kube-apiserver answers 409 (gone) or 422 on `metadata.uid` (made again).
    pub fn precondition(&self, current: &HorizontalPodAutoscaler) -> Precondition {
        Precondition {
            resource_version: current.resource_version(),
            uid: current.uid(),
        }
    }

    /// [`Self::apply_patch`] with the [`Precondition`] in its metadata.
    pub fn apply_patch_at(&self, name: &str, precondition: &Precondition) -> Value {
        let mut patch = self.apply_patch(name);
        if let Some(rv) = &precondition.resource_version {
            patch["metadata"]["resourceVersion"] = json!(rv);
        }
        if let Some(uid) = &precondition.uid {
            patch["metadata"]["uid"] = json!(uid);
        }
        patch
    }

    /// The server-side apply body: only the owned fields.
    pub fn apply_patch(&self, name: &str) -> Value {
        json!({
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": { "name": name },
            "spec": {
                "minReplicas": self.min_replicas,
                "maxReplicas": self.max_replicas,
                "metrics": self.metrics,
            },
        })
    }

    /// `minReplicas 3, maxReplicas 8, cpu 50%, memory 75%`.
    pub fn describe(&self) -> String {
        format!(
            "minReplicas {}, maxReplicas {}, metrics {}",
            self.min_replicas,
            self.max_replicas,
            describe_metrics(&self.metrics)
        )
    }

    /// What changes from `spec` to these fields, e.g. `minReplicas 4 -> 3; metrics cpu 50%,
    /// memory 75% -> cpu 50%`.
    pub fn diff(&self, spec: &HorizontalPodAutoscalerSpec) -> String {
        let mut parts = Vec::new();
        let min = spec.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS);
        if min != self.min_replicas {
            parts.push(format!("minReplicas {min} -> {}", self.min_replicas));
        }
        if spec.max_replicas != self.max_replicas {
            parts.push(format!(
                "maxReplicas {} -> {}",
                spec.max_replicas, self.max_replicas
            ));
        }
        let before = describe_metrics(spec.metrics.as_deref().unwrap_or_default());
        let after = describe_metrics(&self.metrics);
        if before != after {
            parts.push(format!("metrics {before} -> {after}"));
        }
        for m in spec
            .metrics
            .iter()
            .flatten()
            .filter(|m| !is_owned_metric(m))
        {
            let new = retargeted(m, &self.metric_targets);
            if let (Some(name), Some(old_t), Some(new_t)) = (
                metric_name(m),
                target_mut(&mut m.clone()).map(|t| describe_target(t)),
                target_mut(&mut new.clone()).map(|t| describe_target(t)),
            ) && old_t != new_t
            {
                parts.push(format!("{name} {old_t} -> {new_t}"));
            }
        }
        if parts.is_empty() {
            "no change".into()
        } else {
            parts.join("; ")
        }
    }
}

fn describe_metrics(metrics: &[MetricSpec]) -> String {
    if metrics.is_empty() {
        return "none".into();
    }
    let parts: Vec<String> = metrics
        .iter()
        .map(|m| match &m.resource {
            Some(r) if m.type_ == "Resource" => match r.target.average_utilization {
                Some(u) => format!("{} {u}%", r.name),
                None => format!("{} ({})", r.name, r.target.type_),
            },
            _ => m.type_.clone(),
        })
        .collect();
    parts.join(", ")
}

/// `minReplicas 3, maxReplicas 8, targetCPUUtilization 50, targetMemoryUtilization none`, then
/// the metric targets by name when there are any (`, queue_depth AverageValue 100`).
pub fn describe_settings(settings: &HpaSettings) -> String {
    let target = |t: Option<i32>| t.map_or_else(|| "none".to_owned(), |t| t.to_string());
    let mut out = format!(
        "minReplicas {}, maxReplicas {}, targetCPUUtilization {}, targetMemoryUtilization {}",
        settings.min_replicas,
        settings.max_replicas,
        target(settings.target_cpu_utilization),
        target(settings.target_memory_utilization)
    );
    for t in &settings.metric_targets {
        out.push_str(&format!(
            ", {} {}",
            t.name,
            describe_target(&metric_target(t))
        ));
    }
    if settings.hibernate {
        out.push_str(", hibernating (0 replicas)");
    }
    out
}

/// `timeRangeSpec[1]` or `defaults`.
pub fn describe_range(index: Option<usize>) -> String {
    index.map_or_else(|| "defaults".to_owned(), |i| format!("timeRangeSpec[{i}]"))
}

/// What the HPA targets when ebb creates it: `spec.scaleTargetRef`, else the `apps/v1`
/// Deployment of the ServiceScaler's name.
pub fn scale_target(spec: &ServiceScalerSpec, name: &str) -> CrossVersionObjectReference {
    spec.scale_target_ref
        .clone()
        .unwrap_or_else(|| CrossVersionObjectReference {
            api_version: Some("apps/v1".into()),
            kind: "Deployment".into(),
            name: name.into(),
        })
}

/// The HPA ebb creates: owned by the ServiceScaler (garbage collected with it), targeting
/// [`scale_target`], with `fields`.
pub fn new_hpa(scaler: &ServiceScaler, fields: &OwnedFields) -> HorizontalPodAutoscaler {
    let name = scaler.name_any();
    HorizontalPodAutoscaler {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: scaler.namespace(),
            labels: Some([(MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned())].into()),
            // blockOwnerDeletion: a foreground deletion of the ServiceScaler waits for the HPA.
            owner_references: scaler.controller_owner_ref(&()).map(|r| {
                vec![OwnerReference {
                    block_owner_deletion: Some(true),
                    ..r
                }]
            }),
            ..ObjectMeta::default()
        },
        spec: Some(HorizontalPodAutoscalerSpec {
            min_replicas: Some(fields.min_replicas),
            max_replicas: fields.max_replicas,
            metrics: Some(fields.metrics.clone()),
            scale_target_ref: scale_target(&scaler.spec, &name),
            behavior: None,
        }),
        status: None,
    }
}

/// Whether the HPA carries the kill switch (`service-scaler.kubernetes.io/managed: "false"`).
pub fn kill_switch(hpa: &HorizontalPodAutoscaler) -> bool {
    hpa.annotations()
        .get(MANAGED_ANNOTATION)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
}

/// Whether the HPA is controlled by this ServiceScaler (ebb created it).
pub fn owned_by(hpa: &HorizontalPodAutoscaler, scaler: &ServiceScaler) -> bool {
    let Some(uid) = scaler.uid() else {
        return false;
    };
    hpa.owner_references()
        .iter()
        .any(|r| r.uid == uid && r.controller == Some(true))
}

/// Whether the ServiceScaler carries ebb's [`FINALIZER`].
pub fn has_finalizer(scaler: &ServiceScaler) -> bool {
    scaler.finalizers().iter().any(|f| f == FINALIZER)
}

/// Whether the ServiceScaler still carries udaan's finalizer ([`UDAAN_FINALIZER`]).
pub fn has_udaan_finalizer(scaler: &ServiceScaler) -> bool {
    scaler.finalizers().iter().any(|f| f == UDAAN_FINALIZER)
}

/// Whether the HPA has any owner reference to this ServiceScaler (controller or not).
pub(super) fn references(hpa: &HorizontalPodAutoscaler, scaler: &ServiceScaler) -> bool {
    scaler
        .uid()
        .is_some_and(|uid| hpa.owner_references().iter().any(|r| r.uid == uid))
}

/// Who created the HPA, as far as its fate on deletion goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HpaOrigin {
    /// ebb: it carries ebb's controller owner reference.
    Ebb,
    /// udaan: it carries [`MANAGED_ANNOTATION`] (udaan set it on every HPA it created or took
    /// over, and deleted those with the ServiceScaler).
    Udaan,
    /// Someone else; ebb adopted it.
    Adopted,
}

/// Who created `hpa` (see [`HpaOrigin`]).
pub fn hpa_origin(hpa: &HorizontalPodAutoscaler, scaler: &ServiceScaler) -> HpaOrigin {
    if owned_by(hpa, scaler) {
        HpaOrigin::Ebb
    } else if hpa.annotations().contains_key(MANAGED_ANNOTATION) {
        HpaOrigin::Udaan
    } else {
        HpaOrigin::Adopted
    }
}

/// What the deletion of the ServiceScaler does to an HPA of `origin`: `spec.deletionPolicy`, or
/// when unset what udaan did to the HPAs it created (delete them, and ebb's with them) and a
/// restore of any other.
pub fn deletion_action(policy: Option<DeletionPolicy>, origin: HpaOrigin) -> DeletionPolicy {
    policy.unwrap_or(match origin {
        HpaOrigin::Ebb | HpaOrigin::Udaan => DeletionPolicy::Delete,
        HpaOrigin::Adopted => DeletionPolicy::Restore,
    })
}

/// Whether the ServiceScaler must hold [`FINALIZER`] while it manages `hpa`: whenever its
/// deletion must do something the garbage collector would not do (or would do wrongly).
pub fn needs_finalizer(
    policy: Option<DeletionPolicy>,
    hpa: &HorizontalPodAutoscaler,
    scaler: &ServiceScaler,
) -> bool {
    let origin = hpa_origin(hpa, scaler);
    match deletion_action(policy, origin) {
        // The garbage collector deletes what ebb owns.
        DeletionPolicy::Delete => origin != HpaOrigin::Ebb,
        DeletionPolicy::Restore => true,
        // Only an owner reference has to go, so that the garbage collector keeps the HPA.
        DeletionPolicy::Orphan => references(hpa, scaler),
    }
}

/// The merge patch that drops every owner reference to `scaler` from `hpa`, preconditioned on
/// the HPA's `resourceVersion` (the list is replaced as a whole).
pub fn disown_patch(hpa: &HorizontalPodAutoscaler, scaler: &ServiceScaler) -> Value {
    let uid = scaler.uid().unwrap_or_default();
    let kept: Vec<&OwnerReference> = hpa
        .owner_references()
        .iter()
        .filter(|r| r.uid != uid)
        .collect();
    let kept = if kept.is_empty() {
        Value::Null
    } else {
        json!(kept)
    };
    json!({
        "metadata": {
            "resourceVersion": hpa.resource_version(),
            "ownerReferences": kept,
        }
    })
}
