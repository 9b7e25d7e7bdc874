//! The one executor: carries out the [`Plan`] a controller's decide returned, the same way for
//! every controller. Reconcilers read, decide, and hand the plan to [`execute`]; none calls the
//! API's write methods itself.
//!
//! In order:
//! 1. each write of [`Plan::writes`] (see [`ebb_core::plan`] for what each verb names of what was
//!    read), then the controller's [`Hooks::written`] (its write counters), then the Events that go
//!    with it. The first failure ends the pass, except within a run of [`Write::independent`]
//!    writes (to separate objects): each is tried, the Events of those after a failure are not
//!    recorded, and the run's first failure ends the pass after it. A second write to an object the
//!    plan already wrote is preconditioned on the object as that write left it: the
//!    `metadata.resourceVersion` it carries is replaced by the one the earlier write answered with
//!    (the plan was decided on the object as read, and nobody else's change lies between the two);
//! 2. the status (a merge patch of the status subresource);
//!
//! Each write's answered resourceVersion is recorded in the context's
//! [`OwnWrites`], so that a watch that asked for it passes over
//! the event the write causes.
//!
//! 3. the plan's Events;
//! 4. the gauges ([`Hooks::gauges`]);
//! 5. the end: [`Failure::Invalid`] when the plan says the object breaks a rule, else the requeue.
//!
//! A 409, a 422 on `metadata.uid` (the object was deleted and made again since the read) or a 404
//! (it is gone since) ends the pass with [`Failure::Conflict`], and the frame reads again and
//! decides again: never act twice. Deleting what is already gone counts as done; a delete
//! propagates in the background (a Job's Pods go with it). Any other failure
//! ends the pass with [`Failure::Write`] under the write's [`Category`] (`write_target`,
//! `write_metadata`, `write_status`: one vocabulary for every controller), and the error policy
//! retries it.
//!
//! Under `--dry-run` nothing the controller acts on is written (docs/decisions.md, "Uniform
//! behaviour": the status and the Events record the intended change): a [`Category::Target`]
//! write the plan holds is logged and skipped, with its Events. Decide already plans a dry run
//! that way; this is the guarantee. The controller's own object is still written (its status,
//! and the removal of a finalizer an earlier install added, so that a deletion is not held up
//! by a dry-run install).
//!
//! [`Writer`] sends writes one at a time with the same rules, for a pass whose next decision
//! depends on what its last write answered (stackable-scaler's step loop: each step is decided on
//! the scaler as the step before saved it).

pub mod backoff;
pub mod events;
pub mod frame;

use std::collections::HashMap;

use ebb_core::plan::{Body, Category, Plan, Requeue, Target, Verb, Write};
use futures::StreamExt;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, Client};
use serde_json::Value;

use crate::execute::frame::{Failure, Shared, WriteError, is_conflict, is_recreated};
use crate::watch::own_writes::OwnWrites;

/// What a controller does as its plan is carried out: count its writes, set its gauges. Both do
/// nothing by default.
pub trait Hooks<G>: Send + Sync {
    /// `write` succeeded.
    fn written(&self, _write: &Write) {}
    /// Every write of the plan succeeded: the gauges it carries.
    fn gauges(&self, _gauges: G) {}
}

/// Hooks that do nothing.
impl<G> Hooks<G> for () {}

/// How many writes of one run of [`Write::independent`] writes are in flight at once (as many
/// as the default `--concurrent-reconciles`; `--kube-api-qps`, when set, still holds them).
pub const IN_FLIGHT: usize = 8;

/// Carries out `plan` on the API server of `shared` as `field_manager` (see the module doc).
///
/// # Errors
/// [`Failure::Conflict`] when a write met a conflict, [`Failure::Write`] when one failed
/// otherwise, [`Failure::Invalid`] when the plan says the object breaks a rule.
pub async fn execute<G>(
    plan: Plan<G>,
    shared: &Shared,
    field_manager: &str,
    hooks: &impl Hooks<G>,
) -> Result<Requeue, Failure> {
    let mut writer = Writer::new(&shared.client, field_manager).recording(&shared.own_writes);
    let mut first_failure: Option<Failure> = None;
    let skipped = |write: &Write| {
        let skip = shared.dry_run && write.category == Category::Target;
        if skip {
            tracing::info!(
                object = %write.target.describe(),
                verb = write.verb.as_str(),
                "dry run: not written"
            );
        }
        skip
    };
    let mut rest = &plan.writes[..];
    while let Some(write) = rest.first() {
        if !write.independent {
            if first_failure.is_some() {
                break;
            }
            rest = &rest[1..];
            if skipped(write) {
                continue;
            }
            writer.write(write).await?;
            hooks.written(write);
            for notice in &write.notices {
                shared.events.notify(&plan.subject, notice).await;
            }
            continue;
        }
        // A run of independent writes, to separate objects: sent IN_FLIGHT at a time, the
        // next as soon as any one is answered (a slow answer holds up no other write), and the
        // outcomes taken in the plan's order once all are in.
        let length = rest.iter().take_while(|w| w.independent).count();
        let (run, after) = rest.split_at(length);
        rest = after;
        let to_send: Vec<&Write> = run.iter().filter(|write| !skipped(write)).collect();
        let mut outcomes: Vec<_> = futures::stream::iter(sends(to_send, &writer))
            .buffer_unordered(IN_FLIGHT)
            .collect()
            .await;
        outcomes.sort_unstable_by_key(|(at, _)| *at);
        for (_, (write, result, written)) in outcomes {
            writer.written.extend(written);
            match result {
                Ok(()) => {
                    hooks.written(write);
                    if first_failure.is_none() {
                        for notice in &write.notices {
                            shared.events.notify(&plan.subject, notice).await;
                        }
                    }
                }
                Err(failure) => {
                    tracing::warn!(object = %write.target.describe(), error = %failure, "write failed");
                    first_failure.get_or_insert(failure);
                }
            }
        }
    }
    if let Some(failure) = first_failure {
        return Err(failure);
    }
    if let Some(status) = &plan.status {
        writer.write(&status.write()).await?;
    }
    for notice in &plan.notices {
        shared.events.notify(&plan.subject, notice).await;
    }
    let object = plan.describe_subject();
    hooks.gauges(plan.gauges);
    if let Some(message) = plan.invalid {
        return Err(Failure::Invalid { object, message });
    }
    Ok(plan.requeue)
}

/// The writes of a run, each sent by a writer of its own that starts from what `writer` wrote,
/// with its place in the run. Each write's request is made only as the run takes the next one
/// (a slot frees): made up front, a run over 10 000 Nodes held 10 000 unstarted requests of
/// about 4 KB each at once (42 MB, the process's peak, which glibc keeps resident after).
fn sends<'w, 'b>(
    writes: Vec<&'w Write>,
    writer: &'b Writer<'w>,
) -> impl Iterator<Item = impl Future<Output = (usize, Sent<'w>)> + Send + 'b> + Send + 'b
where
    'w: 'b,
{
    writes.into_iter().enumerate().map(move |(at, write)| {
        let one = send_one(write, writer.for_one(&write.target));
        // The object the server answered with goes at once: a run over 10 000 Nodes kept them
        // all until its end (40 MiB).
        async move {
            let (write, result, written) = one.await;
            (at, (write, result.map(drop), written))
        }
    })
}

/// A write of a run once answered: the write, its outcome, and the version it left.
type Sent<'a> = (&'a Write, Result<(), Failure>, Vec<(TargetKey, String)>);

/// One write of a run, by a writer of its own: the write, its outcome, and the version it left.
async fn send_one<'a>(
    write: &'a Write,
    mut writer: Writer<'a>,
) -> (
    &'a Write,
    Result<Option<DynamicObject>, Failure>,
    Vec<(TargetKey, String)>,
) {
    let result = writer.write(write).await;
    // Kept until the run is over: a vector of its one entry, not a map's table.
    (write, result, writer.written.into_iter().collect())
}

/// A 404 on a write to an object that was read: it is gone since (or its kind is no longer
/// served). Read again and decide again.
fn is_gone(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

/// An object as the executor remembers its own writes to it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct TargetKey {
    plural: String,
    group: String,
    namespace: Option<String>,
    name: String,
}

impl TargetKey {
    fn of(target: &Target) -> Self {
        Self {
            plural: target.resource.plural.clone(),
            group: target.resource.group.clone(),
            namespace: target.namespace.clone(),
            name: target.name.clone(),
        }
    }
}

/// The API of `target`'s kind, in its namespace for a namespaced kind.
fn api_of(client: &Client, target: &Target) -> Api<DynamicObject> {
    match &target.namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &target.resource),
        None => Api::all_with(client.clone(), &target.resource),
    }
}

/// The failure of a write to `target`: a conflict, or a write error under `category`.
fn failed(target: &Target, category: Category, source: kube::Error) -> Failure {
    if is_conflict(&source) || is_recreated(&source) || is_gone(&source) {
        return Failure::stale(target.describe());
    }
    WriteError::of(category.as_str(), category.what(target))(source).into()
}

/// `patch` as a value (as it is sent), with `metadata.resourceVersion` replaced by the version
/// the plan's own earlier write to the same object answered with, when there was one and the
/// patch names a version.
fn after_own_write(patch: &Body, target: &Target, written: &HashMap<TargetKey, String>) -> Value {
    let mut patch = patch.value();
    if let Some(version) = written.get(&TargetKey::of(target))
        && let Some(named) = patch.pointer_mut("/metadata/resourceVersion")
        && !named.is_null()
    {
        *named = Value::String(version.clone());
    }
    patch
}

/// Merge patches carry the field manager (only apply patches may set `force`).
fn merge_params(field_manager: &str) -> PatchParams {
    PatchParams {
        field_manager: Some(field_manager.to_owned()),
        ..PatchParams::default()
    }
}

/// Sends writes one at a time, as [`execute`] does: each failure classified the same way (a
/// conflict, or a write error under the write's [`Category`]), and a second write to an object
/// this writer already wrote preconditioned on the object as that write left it. For a pass
/// whose next decision depends on what the last write answered (stackable-scaler's step loop,
/// its hook Jobs), where a whole [`Plan`] cannot be decided up front; no dry-run, hooks or Events:
/// the caller does those.
pub struct Writer<'a> {
    client: &'a Client,
    field_manager: &'a str,
    /// The resourceVersion each object had after this writer's last write to it.
    written: HashMap<TargetKey, String>,
    /// Where the versions its writes answered with are recorded, for the watches.
    own: Option<&'a OwnWrites>,
}

impl<'a> Writer<'a> {
    /// A writer on `client` as `field_manager`.
    pub fn new(client: &'a Client, field_manager: &'a str) -> Self {
        Self {
            client,
            field_manager,
            written: HashMap::new(),
            own: None,
        }
    }

    /// The same writer, recording the version each write answered with in `own`, so that the
    /// watches pass over the events of this process's own writes.
    #[must_use]
    pub fn recording(mut self, own: &'a OwnWrites) -> Self {
        self.own = Some(own);
        self
    }

    /// A writer of its own for one write to `target`, in a run sent at once: it knows this
    /// writer's last version of `target`, and records as this one does.
    fn for_one(&self, target: &Target) -> Writer<'a> {
        let key = TargetKey::of(target);
        Writer {
            client: self.client,
            field_manager: self.field_manager,
            written: self
                .written
                .get(&key)
                .map(|version| HashMap::from([(key, version.clone())]))
                .unwrap_or_default(),
            own: self.own,
        }
    }

    /// Sends `write`: the object as the API server answered (`None` for a delete).
    ///
    /// # Errors
    /// [`Failure::Conflict`] on a 409, a 422 on `metadata.uid` or a 404 (a delete's 404 is done),
    /// else [`Failure::Write`] under the write's category.
    pub async fn write(&mut self, write: &Write) -> Result<Option<DynamicObject>, Failure> {
        let _in_flight = self.own.map(|own| own.begin(&write.target));
        let answer = self.perform(write).await?;
        if let Some(version) = answer
            .as_ref()
            .and_then(|object| object.metadata.resource_version.clone())
        {
            if let Some(own) = self.own {
                own.record(&write.target, &version);
            }
            self.written.insert(TargetKey::of(&write.target), version);
        }
        Ok(answer)
    }

    /// Sends `write` and reads the answer as a `K`.
    ///
    /// # Errors
    /// As [`Self::write`]; an answer that is not a `K` fails under the write's category.
    pub async fn write_as<K: serde::de::DeserializeOwned>(
        &mut self,
        write: &Write,
    ) -> Result<Option<K>, Failure> {
        let Some(answer) = self.write(write).await? else {
            return Ok(None);
        };
        serde_json::to_value(answer)
            .and_then(serde_json::from_value)
            .map(Some)
            .map_err(|e| failed(&write.target, write.category, kube::Error::SerdeError(e)))
    }

    async fn perform(&self, write: &Write) -> Result<Option<DynamicObject>, Failure> {
        let target = &write.target;
        let api = api_of(self.client, target);
        let fail = |source| failed(target, write.category, source);
        let answer = match &write.verb {
            Verb::Create(body) => {
                let object: DynamicObject = serde_json::from_str(body.as_str())
                    .map_err(|e| fail(kube::Error::SerdeError(e)))?;
                let params = PostParams {
                    dry_run: false,
                    field_manager: Some(self.field_manager.to_owned()),
                };
                api.create(&params, &object).await.map_err(fail)?
            }
            Verb::Apply(patch) => {
                let params = PatchParams::apply(self.field_manager).force();
                let patch = after_own_write(patch, target, &self.written);
                api.patch(&target.name, &params, &Patch::Apply(&patch))
                    .await
                    .map_err(fail)?
            }
            Verb::Merge(patch) => {
                let patch = after_own_write(patch, target, &self.written);
                api.patch(
                    &target.name,
                    &merge_params(self.field_manager),
                    &Patch::Merge(&patch),
                )
                .await
                .map_err(fail)?
            }
            Verb::MergeStatus(patch) => {
                let patch = after_own_write(patch, target, &self.written);
                api.patch_status(
                    &target.name,
                    &merge_params(self.field_manager),
                    &Patch::Merge(&patch),
                )
                .await
                .map_err(fail)?
            }
            Verb::MergeScale(patch) => {
                let patch = after_own_write(patch, target, &self.written);
                let scale = api
                    .patch_scale(
                        &target.name,
                        &merge_params(self.field_manager),
                        &Patch::Merge(&patch),
                    )
                    .await
                    .map_err(fail)?;
                // The Scale answered carries the workload's name and version: what the
                // watches and a second write in this plan go by.
                let mut answer = DynamicObject::new(&target.name, &target.resource);
                answer.metadata = scale.metadata;
                answer
            }
            Verb::Delete { uid } => {
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: uid.clone(),
                        resource_version: None,
                    }),
                    ..DeleteParams::background()
                };
                return match api.delete(&target.name, &params).await {
                    Ok(_) => Ok(None),
                    Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
                    Err(source) => Err(fail(source)),
                };
            }
        };
        Ok(Some(answer))
    }
}
