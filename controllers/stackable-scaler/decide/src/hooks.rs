//! The hook interface a product operator implements: what runs before and after the workload's
//! replicas change, and when an operation fails.

use std::future::Future;
use std::hash::Hasher;
use std::ops::Range;

use ebb_crds::stackable::ScalerStage;
use serde::Serialize;

/// Which way an operation moves the workload. As in Stackable's PR, an operation whose target
/// equals its start (its hooks still run, once) counts as `Up`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ScaleDirection {
    /// As many replicas or more.
    Up,
    /// Fewer replicas.
    Down,
}

impl ScaleDirection {
    /// `Up` or `Down`: the value of `EBB_SCALE_DIRECTION`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScaleDirection::Up => "Up",
            ScaleDirection::Down => "Down",
        }
    }
}

/// The hook that runs in a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum HookKind {
    /// [`ScalingHooks::pre_scale`], in `PreScaling`.
    PreScale,
    /// [`ScalingHooks::post_scale`], in `PostScaling`.
    PostScale,
    /// [`ScalingHooks::on_failure`], once after `Failed` is recorded.
    OnFailure,
}

impl HookKind {
    /// Lower-case, DNS-safe name (`prescale`), used in Job names, Events and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            HookKind::PreScale => "prescale",
            HookKind::PostScale => "postscale",
            HookKind::OnFailure => "onfailure",
        }
    }

    /// The hook named `name` ([`Self::as_str`]), if one is.
    pub fn parse(name: &str) -> Option<Self> {
        [HookKind::PreScale, HookKind::PostScale, HookKind::OnFailure]
            .into_iter()
            .find(|hook| hook.as_str() == name)
    }

    /// The stage this hook runs in.
    pub fn stage(self) -> ScalerStage {
        match self {
            HookKind::PreScale => ScalerStage::PreScaling,
            HookKind::PostScale => ScalerStage::PostScaling,
            HookKind::OnFailure => ScalerStage::Failed,
        }
    }
}

/// What failed, for [`ScalingHooks::on_failure`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureInfo {
    /// The stage that failed.
    pub failed_in: ScalerStage,
    /// Why (as recorded in `status.currentState.reason`).
    pub reason: String,
}

/// Everything a hook knows about the operation it belongs to.
///
/// `scale_event` and `attempt` identify the operation: a hook called twice with the same values is
/// being asked about the same operation (polling, or a status write that failed after it answered)
/// and must not start its work again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScalingContext {
    /// Name of the StackableScaler.
    pub scaler_name: String,
    /// Its namespace.
    pub namespace: String,
    /// Replicas before the operation.
    pub previous_replicas: i32,
    /// Replicas the operation moves to.
    pub desired_replicas: i32,
    /// The operation's number (`status.scaleEvent`).
    pub scale_event: i64,
    /// Retries so far (`status.attempt`).
    pub attempt: i64,
    /// For `on_failure`: what failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureInfo>,
    /// Whether this is the first ask of this hook for this operation and attempt: its start was
    /// recorded in `status.startedHook` just before, and this is the one ask in which the hook
    /// may begin its work. On every later ask it looks for what it began and never begins it
    /// again: what it cannot find was lost (answer an error naming it).
    #[serde(skip)]
    pub starts: bool,
}

impl ScalingContext {
    /// `Up` when the target is at least the start (Stackable's rule: `desired >= current`),
    /// else `Down`.
    pub fn direction(&self) -> ScaleDirection {
        if self.desired_replicas >= self.previous_replicas {
            ScaleDirection::Up
        } else {
            ScaleDirection::Down
        }
    }

    /// StatefulSet ordinals that go away on a scale-down (`desired..previous`): the pods a
    /// pre-scale hook drains. Empty unless the direction is Down.
    pub fn removed_ordinals(&self) -> Range<i32> {
        let low = self.desired_replicas.max(0);
        let high = self.previous_replicas.max(low);
        low..high
    }

    /// StatefulSet ordinals that appear on a scale-up (`previous..desired`). Empty unless the
    /// direction is Up.
    pub fn added_ordinals(&self) -> Range<i32> {
        let low = self.previous_replicas.max(0);
        let high = self.desired_replicas.max(low);
        low..high
    }
}

/// A hook's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum HookOutcome {
    /// Finished: the state machine moves on.
    Done,
    /// Still working: the hook is asked again later with the same [`ScalingContext`].
    InProgress,
}

/// A hook failed; the operation moves to `Failed` with this message as its reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HookError {
    /// Why, for `status.currentState.reason` (keep it short and actionable).
    pub message: String,
}

impl HookError {
    /// A hook error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// The answer of one hook call.
pub type HookResult = Result<HookOutcome, HookError>;

/// Product-specific work around a change of replicas. Every method defaults to `Done`.
///
/// A hook may be called many times for one operation: while it answers `InProgress` it is polled,
/// and after a failed status write it may be asked again (the reconciler remembers answers within a
/// process, but not across restarts). Use [`ScalingContext::scale_event`] to make work idempotent.
pub trait ScalingHooks: Send + Sync {
    /// Runs in `PreScaling`, before the workload's replicas change (drain, offload data).
    fn pre_scale(&self, ctx: &ScalingContext) -> impl Future<Output = HookResult> + Send {
        let _ = ctx;
        std::future::ready(Ok(HookOutcome::Done))
    }

    /// Runs in `PostScaling`, after the workload is stable at the new size (rebalance).
    fn post_scale(&self, ctx: &ScalingContext) -> impl Future<Output = HookResult> + Send {
        let _ = ctx;
        std::future::ready(Ok(HookOutcome::Done))
    }

    /// Runs once after `Failed` has been recorded in status; `ctx.failure` says what failed.
    fn on_failure(&self, ctx: &ScalingContext) -> impl Future<Output = HookResult> + Send {
        let _ = ctx;
        std::future::ready(Ok(HookOutcome::Done))
    }
}

/// Hooks that do nothing: plain replica changes through the state machine.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

impl ScalingHooks for NoHooks {}

/// Calls the hook of `kind`.
pub async fn call_hook<H: ScalingHooks>(
    hooks: &H,
    kind: HookKind,
    ctx: &ScalingContext,
) -> HookResult {
    match kind {
        HookKind::PreScale => hooks.pre_scale(ctx).await,
        HookKind::PostScale => hooks.post_scale(ctx).await,
        HookKind::OnFailure => hooks.on_failure(ctx).await,
    }
}

/// The ServiceAccounts hook Jobs may run as (`--hook-service-accounts`): whoever may create a
/// StackableScaler must not get a Job running as any ServiceAccount of the namespace, which only
/// a holder of `create jobs` may already do. By default the namespace's `default` one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookAccounts(Vec<String>);

impl Default for HookAccounts {
    fn default() -> Self {
        Self(vec![DEFAULT_SERVICE_ACCOUNT.to_owned()])
    }
}

/// The ServiceAccount a pod runs as when its spec names none.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

impl HookAccounts {
    /// The accounts named (empty names dropped).
    pub fn new<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Self {
        Self(
            names
                .into_iter()
                .map(|n| n.as_ref().trim().to_owned())
                .filter(|n| !n.is_empty())
                .collect(),
        )
    }

    /// Why a hook Job from `template` may not run: the ServiceAccount its pods would run as is
    /// not one of these (`serviceAccountName`, else the deprecated `serviceAccount`, else
    /// `default`). `None` when it may.
    pub fn refusal(
        &self,
        template: &k8s_openapi::api::batch::v1::JobTemplateSpec,
    ) -> Option<String> {
        let pod = template.spec.as_ref()?.template.spec.as_ref();
        let account = pod
            .and_then(|p| {
                p.service_account_name
                    .as_deref()
                    .or(p.service_account.as_deref())
            })
            .filter(|a| !a.is_empty())
            .unwrap_or(DEFAULT_SERVICE_ACCOUNT);
        if self.0.iter().any(|allowed| allowed == account) {
            return None;
        }
        Some(format!(
            "its Job would run as ServiceAccount {account:?}, which this install does not allow \
             hooks to use (--hook-service-accounts: {}); use one of those, or have the install's \
             hooks.serviceAccounts name it",
            self.0.join(", ")
        ))
    }
}

/// Longest Job name: the Job controller copies it into a pod label (63 characters at most).
pub const MAX_JOB_NAME: usize = 63;
/// The Job name of a hook run: `<scaler>-<hook>-<scaleEvent>-<attempt>`, a DNS label of at most
/// 63 characters. When the scaler's name does not fit (or is not a DNS label as it stands), it is
/// shortened and followed by a hash of the full name, so names of different scalers stay apart.
/// The hook, event and attempt are always kept whole: two operations of one scaler never share a
/// name.
pub fn job_name(scaler: &str, hook: HookKind, scale_event: i64, attempt: i64) -> String {
    let suffix = format!(
        "-{}-{}-{}",
        hook.as_str(),
        scale_event.max(0),
        attempt.max(0)
    );
    let sanitized: String = scaler
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let sanitized = sanitized.trim_matches('-');
    if sanitized == scaler
        && !sanitized.is_empty()
        && sanitized.len() + suffix.len() <= MAX_JOB_NAME
    {
        return format!("{sanitized}{suffix}");
    }
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(scaler.as_bytes());
    let hash = format!("{:08x}", hasher.finish() & 0xffff_ffff);
    let room = MAX_JOB_NAME.saturating_sub(suffix.len() + hash.len() + 1);
    let prefix = sanitized
        .get(..room.min(sanitized.len()))
        .unwrap_or_default()
        .trim_end_matches('-');
    if prefix.is_empty() {
        format!("h{hash}{suffix}")
    } else {
        format!("{prefix}-{hash}{suffix}")
    }
}

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;
