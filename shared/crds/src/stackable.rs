//! `autoscaling.stackable.tech/v1alpha1` `StackableScaler`: a `/scale` target for an HPA that runs
//! hooks before and after the workload's replicas change.

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The HPA scales this object; the controller moves the owning workload through the hook stages.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "autoscaling.stackable.tech",
    version = "v1alpha1",
    kind = "StackableScaler",
    doc = "StackableScaler is the scale target of an HPA for a Stackable workload: ebb's stackable-scaler carries each replica change through pre-scale and post-scale hooks (Jobs) around the resize, and reports each stage in status.",
    plural = "stackablescalers",
    namespaced,
    status = "StackableScalerStatus",
    shortname = "stscaler",
    category = "ebb",
    derive = "PartialEq",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(
        name = "Stage",
        type_ = "string",
        json_path = ".status.currentState.stage.stage"
    ),
    printcolumn(name = "Desired", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".status.replicas"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Paused",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Paused\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct StackableScalerSpec {
    /// Replicas the workload should have; written by the HPA through `/scale`.
    #[schemars(range(min = 0))]
    pub replicas: i32,

    /// Jobs run around a change of replicas (standalone controller only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<HooksSpec>,

    /// How long one active stage (`PreScaling`, `Scaling`, `PostScaling`) may last, in seconds,
    /// counted from `status.currentState.lastTransitionTime`; past it the operation moves to
    /// `Failed` with a reason naming what it waited for. Default 1800 (30 minutes). A hook stage
    /// never ends before its hook's own `timeoutSeconds` (plus a minute) has passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 604800))]
    pub stage_timeout_seconds: Option<i32>,
}

/// Job templates run as hooks. Each Job gets `EBB_SCALE_DIRECTION`, `EBB_PREVIOUS_REPLICAS`,
/// `EBB_DESIRED_REPLICAS`, `EBB_REMOVED_ORDINALS` and `EBB_ADDED_ORDINALS` in its environment.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HooksSpec {
    /// Runs before the workload's replicas change (drain, offload data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_scale: Option<HookSpec>,
    /// Runs after the workload is stable at its new size (rebalance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_scale: Option<HookSpec>,
    /// Runs once when a stage fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<HookSpec>,
}

/// One hook: a Job template and how long it may take. The API server checks that the template
/// holds a pod spec with a container whose pods never restart `Always` (a Job refuses that; unset
/// means `Never`, which ebb sets).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("has(self.template.spec) && has(self.template.spec.template) && has(self.template.spec.template.spec)").message("template.spec.template.spec is required: a hook runs a Job, which needs a pod spec"),
    validation = Rule::new("!has(self.template.spec) || !has(self.template.spec.template) || !has(self.template.spec.template.spec) || (has(self.template.spec.template.spec.containers) && size(self.template.spec.template.spec.containers) > 0)").message("template.spec.template.spec.containers needs at least one container"),
    validation = Rule::new("!has(self.template.spec) || !has(self.template.spec.template) || !has(self.template.spec.template.spec) || !has(self.template.spec.template.spec.restartPolicy) || self.template.spec.template.spec.restartPolicy in ['Never', 'OnFailure']").message("template.spec.template.spec.restartPolicy must be Never or OnFailure (a Job's pods cannot restart Always); unset means Never"),
)]
pub struct HookSpec {
    /// The Job to run (a `batch/v1` JobTemplateSpec: `metadata` and `spec`).
    // Boxed: a pod spec inline took 2.5 KiB of every scaler a cache holds, hooks or not.
    #[schemars(schema_with = "crate::schema::hook_template")]
    pub template: Box<JobTemplateSpec>,
    /// Deadline of one run in seconds; past it the hook fails. Default 600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_seconds: Option<i32>,
}

/// The stages of a scaling operation.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
pub enum ScalerStage {
    /// Nothing in flight; a change of `spec.replicas` starts the next operation.
    #[default]
    Idle,
    /// The pre-scale hook runs.
    PreScaling,
    /// The workload's replicas are being changed; waits until it is stable.
    Scaling,
    /// The post-scale hook runs.
    PostScaling,
    /// A stage failed; stays here until the `autoscaling.stackable.tech/retry: "true"` annotation.
    Failed,
}

impl ScalerStage {
    /// Whether an operation is in flight, during which `spec.replicas` must not change.
    /// The one place that knows this: the reconciler and the admission webhook both ask it.
    pub fn is_active(self) -> bool {
        match self {
            ScalerStage::PreScaling | ScalerStage::Scaling | ScalerStage::PostScaling => true,
            ScalerStage::Idle | ScalerStage::Failed => false,
        }
    }

    /// The stage's name as serialized (`PreScaling`), for condition reasons, Events and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            ScalerStage::Idle => "Idle",
            ScalerStage::PreScaling => "PreScaling",
            ScalerStage::Scaling => "Scaling",
            ScalerStage::PostScaling => "PostScaling",
            ScalerStage::Failed => "Failed",
        }
    }
}

/// Where the state machine is.
///
/// On the wire `stage` is Stackable's PR's tagged form, `{stage: idle}` ... `{stage: failed,
/// details: {failedAt: preScaling, reason: ...}}`, so the PR's types read what ebb writes. The
/// form earlier ebb releases wrote (`stage: Failed` with `failedIn` and `reason` beside it) is
/// read too, so a scaler continues where it stood after an upgrade.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(try_from = "StateWire", into = "StateWire")]
pub struct ScalerState {
    /// The current stage.
    pub stage: ScalerStage,
    /// When the stage was entered.
    pub last_transition_time: Option<Time>,
    /// For `Failed`: the stage that failed.
    pub failed_in: Option<ScalerStage>,
    /// For `Failed`: why.
    pub reason: Option<String>,
    /// For `Failed`: where the `onFailure` hook is. It runs after `Failed` is recorded and is
    /// never started twice; a retry waits while it is `Pending`.
    pub failure_hook: Option<FailureHookState>,
}

impl JsonSchema for ScalerState {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ScalerState".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        StateWire::json_schema(generator)
    }
}

/// [`ScalerState`] as written and read.
#[derive(Serialize, Deserialize, Clone, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ScalerState")]
struct StateWire {
    /// The current stage, as Stackable's PR writes it: `{stage: idle}` (`preScaling`, `scaling`,
    /// `postScaling`), or `{stage: failed, details: {failedAt: <stage>, reason: <why>}}`. The
    /// name alone (`Idle`), as earlier ebb releases wrote it, is read too.
    #[schemars(schema_with = "crate::schema::tagged_stage")]
    stage: StageWire,
    /// When the stage was entered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_transition_time: Option<Time>,
    /// Earlier ebb releases: for `Failed`, the stage that failed (now `stage.details.failedAt`).
    /// Read, never written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failed_in: Option<ScalerStage>,
    /// Earlier ebb releases: for `Failed`, why (now `stage.details.reason`). Read, never written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    reason: Option<String>,
    /// For `Failed`: where the `onFailure` hook is (`Pending`, `Done`, `Failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failure_hook: Option<FailureHookState>,
}

impl From<ScalerState> for StateWire {
    fn from(state: ScalerState) -> Self {
        let failed = state.stage == ScalerStage::Failed;
        StateWire {
            stage: StageWire {
                stage: state.stage,
                failed_at: state.failed_in.filter(|_| failed),
                reason: state.reason.filter(|_| failed),
            },
            last_transition_time: state.last_transition_time,
            failed_in: None,
            reason: None,
            failure_hook: state.failure_hook,
        }
    }
}

impl From<StateWire> for ScalerState {
    fn from(wire: StateWire) -> Self {
        ScalerState {
            stage: wire.stage.stage,
            last_transition_time: wire.last_transition_time,
            failed_in: wire.stage.failed_at.or(wire.failed_in),
            reason: wire.stage.reason.or(wire.reason),
            failure_hook: wire.failure_hook,
        }
    }
}

/// `status.currentState.stage`: the PR's tagged object, or earlier ebb's name.
#[derive(Clone, Debug, PartialEq)]
struct StageWire {
    stage: ScalerStage,
    failed_at: Option<ScalerStage>,
    reason: Option<String>,
}

impl ScalerStage {
    /// The name in the PR's tagged form (`preScaling`).
    pub fn tag(self) -> &'static str {
        match self {
            ScalerStage::Idle => "idle",
            ScalerStage::PreScaling => "preScaling",
            ScalerStage::Scaling => "scaling",
            ScalerStage::PostScaling => "postScaling",
            ScalerStage::Failed => "failed",
        }
    }

    /// The stage named `name`, in the PR's form (`preScaling`) or ebb's earlier (`PreScaling`).
    pub fn from_name(name: &str) -> Option<Self> {
        [
            ScalerStage::Idle,
            ScalerStage::PreScaling,
            ScalerStage::Scaling,
            ScalerStage::PostScaling,
            ScalerStage::Failed,
        ]
        .into_iter()
        .find(|stage| stage.tag() == name || stage.as_str() == name)
    }
}

impl Serialize for StageWire {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Details<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            failed_at: Option<&'static str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            reason: Option<&'a str>,
        }
        let failed = self.stage == ScalerStage::Failed;
        let mut map = serializer.serialize_map(Some(if failed { 2 } else { 1 }))?;
        map.serialize_entry("stage", self.stage.tag())?;
        if failed {
            map.serialize_entry(
                "details",
                &Details {
                    failed_at: self.failed_at.map(ScalerStage::tag),
                    reason: self.reason.as_deref(),
                },
            )?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for StageWire {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = serde_json::Value::deserialize(deserializer)?;
        let unknown = |name: &str| {
            D::Error::custom(format!(
                "unknown stage {name:?}: expected idle, preScaling, scaling, postScaling or failed"
            ))
        };
        match &value {
            // Earlier ebb releases: the name alone.
            serde_json::Value::String(name) => Ok(StageWire {
                stage: ScalerStage::from_name(name).ok_or_else(|| unknown(name))?,
                failed_at: None,
                reason: None,
            }),
            serde_json::Value::Object(fields) => {
                let name = fields
                    .get("stage")
                    .and_then(serde_json::Value::as_str)
                    .ok_or_else(|| D::Error::custom("stage: expected a string tag"))?;
                let stage = ScalerStage::from_name(name).ok_or_else(|| unknown(name))?;
                let details = fields.get("details").filter(|d| !d.is_null());
                let failed_at = match details.and_then(|d| d.get("failedAt")) {
                    None | Some(serde_json::Value::Null) => None,
                    Some(at) => {
                        let at = at.as_str().unwrap_or_default();
                        Some(ScalerStage::from_name(at).ok_or_else(|| {
                            D::Error::custom(format!("details.failedAt: unknown stage {at:?}"))
                        })?)
                    }
                };
                let reason = details
                    .and_then(|d| d.get("reason"))
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned);
                Ok(StageWire {
                    stage,
                    failed_at,
                    reason,
                })
            }
            _ => Err(D::Error::custom(
                "expected {stage: <name>[, details: {failedAt, reason}]} or a stage name",
            )),
        }
    }
}

/// Progress of the `onFailure` hook of a failed operation.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum FailureHookState {
    /// Recorded, not yet finished (or not yet started).
    Pending,
    /// Finished successfully.
    Done,
    /// Finished with an error (reported in an Event; the original failure reason is kept).
    Failed,
}

/// A hook run as recorded before its first start ([`StackableScalerStatus::started_hook`]).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StartedHook {
    /// The hook: `prescale`, `postscale` or `onfailure`.
    #[schemars(length(max = 16))]
    pub hook: String,
    /// The operation (`status.scaleEvent`) it belongs to.
    #[schemars(range(min = 0))]
    pub scale_event: i64,
    /// The attempt (`status.attempt`) it belongs to.
    #[schemars(range(min = 0))]
    pub attempt: i64,
    /// The Job the standalone controller runs for it when the scaler has a template for the
    /// hook (named from the scaler, the hook, the operation and the attempt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub job: Option<String>,
    /// When the start was recorded. A Job missing this long after it (a grace for the replica
    /// that recorded it to create it) was lost, not still to come.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Time>,
}

/// Observed replicas and the state machine.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StackableScalerStatus {
    /// Replicas the workload has (the `/scale` status).
    #[serde(default)]
    pub replicas: i32,
    /// Label selector of the workload's pods, as a string (the `/scale` selector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// Target of the operation in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_replicas: Option<i32>,
    /// Replicas before the operation in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_replicas: Option<i32>,
    /// The state machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_state: Option<ScalerState>,
    /// Number of scaling operations started (each `Idle -> PreScaling` adds one); hook Jobs carry
    /// it in their names, so two operations never share a Job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub scale_event: Option<i64>,
    /// Number of retries (`autoscaling.stackable.tech/retry`) so far; hook Jobs carry it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub attempt: Option<i64>,
    /// The `metadata.generation` of the spec this status was written for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The last hook started: recorded before the hook is first asked, so a hook recorded here
    /// is never started again for the same operation and attempt. A hook Job found gone after
    /// it was recorded fails the operation (naming the Job) instead of running a second time;
    /// the retry annotation starts a new attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_hook: Option<StartedHook>,
    /// `Ready`, `Progressing`, `Failed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn state(value: serde_json::Value) -> ScalerState {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_stage_is_written_in_the_seed_pr_s_tagged_form() {
        let idle = ScalerState::default();
        assert_eq!(
            serde_json::to_value(&idle).unwrap(),
            json!({"stage": {"stage": "idle"}})
        );
        let scaling = ScalerState {
            stage: ScalerStage::PreScaling,
            ..ScalerState::default()
        };
        assert_eq!(
            serde_json::to_value(&scaling).unwrap(),
            json!({"stage": {"stage": "preScaling"}})
        );
        let failed = ScalerState {
            stage: ScalerStage::Failed,
            failed_in: Some(ScalerStage::PreScaling),
            reason: Some("timeout".into()),
            failure_hook: Some(FailureHookState::Pending),
            ..ScalerState::default()
        };
        assert_eq!(
            serde_json::to_value(&failed).unwrap(),
            json!({"stage": {"stage": "failed", "details": {"failedAt": "preScaling", "reason": "timeout"}},
                   "failureHook": "Pending"})
        );
        // And read back.
        assert_eq!(state(serde_json::to_value(&failed).unwrap()), failed);
    }

    #[test]
    fn the_seed_pr_s_form_and_earlier_ebb_s_are_both_read() {
        for stage in [
            ScalerStage::Idle,
            ScalerStage::PreScaling,
            ScalerStage::Scaling,
            ScalerStage::PostScaling,
        ] {
            let want = ScalerState {
                stage,
                ..ScalerState::default()
            };
            assert_eq!(state(json!({"stage": {"stage": stage.tag()}})), want);
            assert_eq!(
                state(json!({"stage": {"stage": stage.tag(), "details": null}})),
                want
            );
            assert_eq!(state(json!({"stage": stage.as_str()})), want);
        }
        let want = ScalerState {
            stage: ScalerStage::Failed,
            failed_in: Some(ScalerStage::Scaling),
            reason: Some("boom".into()),
            failure_hook: Some(FailureHookState::Done),
            ..ScalerState::default()
        };
        assert_eq!(
            state(
                json!({"stage": {"stage": "failed", "details": {"failedAt": "scaling", "reason": "boom"}},
                         "failureHook": "Done"})
            ),
            want
        );
        assert_eq!(
            state(
                json!({"stage": "Failed", "failedIn": "Scaling", "reason": "boom", "failureHook": "Done"})
            ),
            want
        );
        let err = serde_json::from_value::<ScalerState>(json!({"stage": {"stage": "resting"}}))
            .unwrap_err();
        assert!(
            err.to_string().contains("unknown stage \"resting\""),
            "{err}"
        );
    }

    /// Every scaler a controller caches is this size at least: a hook's pod spec held inline
    /// made each 7.7 KiB, hooks or not (77 MiB for 10 000 scalers).
    #[test]
    fn a_scaler_holds_no_job_template_inline() {
        let size = std::mem::size_of::<StackableScaler>();
        assert!(size < 1024, "StackableScaler takes {size} bytes");
    }
}
