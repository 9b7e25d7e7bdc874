//! The plan a controller's decide returns: everything one pass does, as data.
//!
//! A [`Plan`] holds the writes in their order, the status, the Events, the gauges and the
//! requeue. The runtime's one executor (`ebb_runtime::execute`) carries it out the same way for
//! every controller: a conflict ends the pass so that the frame reads again and decides again, a
//! failed write is counted under its [`Category`], and under `--dry-run` only the status and the
//! Events are written. Decide code builds plans; it never calls the API.
//!
//! Every write names what it read, so that it never lands on something the decision did not see:
//!
//! | [`Verb`] | request | precondition |
//! |---|---|---|
//! | [`Verb::Create`] | POST | none: AlreadyExists means someone made it since the read |
//! | [`Verb::Apply`] | server-side apply, forced, under the controller's field manager | `metadata.uid` (and `resourceVersion` where given) in the patch |
//! | [`Verb::Merge`] | JSON merge patch | `metadata.resourceVersion` in the patch |
//! | [`Verb::MergeStatus`] | JSON merge patch of the status subresource | `metadata.resourceVersion` in the patch |
//! | [`Verb::Delete`] | DELETE | the uid read |

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube::core::ApiResource;
use serde_json::{Value, json};

use crate::events::Notice;

/// The object a write goes to.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// Its group, version, kind and plural.
    pub resource: ApiResource,
    /// Its namespace; `None` for a cluster-scoped kind.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

impl Target {
    /// The object `object` is (its kind, namespace and name).
    pub fn of<K: Resource<DynamicType = ()>>(object: &K) -> Self {
        let meta = object.meta();
        Self {
            resource: ApiResource::erase::<K>(&()),
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }

    /// The object of kind `K` named `name` (in `namespace`, for a namespaced kind).
    pub fn named<K: Resource<DynamicType = ()>>(namespace: Option<&str>, name: &str) -> Self {
        Self {
            resource: ApiResource::erase::<K>(&()),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        }
    }

    /// `Kind namespace/name` (or `Kind name`), for messages.
    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(namespace) => format!("{} {namespace}/{}", self.resource.kind, self.name),
            None => format!("{} {}", self.resource.kind, self.name),
        }
    }
}

/// What a failed write is counted under (`reconcile_errors_total{category}`): one vocabulary for
/// every controller, by whose object the write went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// An object the controller acts on: an HPA, a replica count, an autoscaler, a hook Job.
    Target,
    /// The metadata of the controller's own object: its finalizer, an annotation.
    Metadata,
    /// The status of the controller's own object.
    Status,
}

impl Category {
    /// The metric label: `write_target`, `write_metadata` or `write_status`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Target => "write_target",
            Self::Metadata => "write_metadata",
            Self::Status => "write_status",
        }
    }

    /// What a failed write of this category to `target` was doing, for its message:
    /// `writing HorizontalPodAutoscaler shop/web`.
    pub fn what(self, target: &Target) -> String {
        let target = target.describe();
        match self {
            Self::Target => format!("writing {target}"),
            Self::Metadata => format!("updating the metadata of {target}"),
            Self::Status => format!("writing the status of {target}"),
        }
    }
}

/// A write's JSON body, kept as the text it is sent as. A plan holds every write it decided
/// until the last is answered: a window edge over 10 000 Nodes is 10 000 merge patches, and
/// held as `serde_json::Value`s (three levels of a `BTreeMap` leaf of about 640 bytes each)
/// they were 12 MB of the pass's peak, which glibc keeps resident after; as text a Node's patch
/// is about 150 bytes. The executor reads each back into a value as it sends it.
#[derive(Clone, PartialEq, Eq)]
pub struct Body(Box<str>);

impl Body {
    /// The body as a JSON value.
    pub fn value(&self) -> Value {
        // Written from a `Value` by `From`: it reads back.
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    /// The body as JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<Value> for Body {
    fn from(value: Value) -> Self {
        Self(value.to_string().into_boxed_str())
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a write goes to its [`Target`].
#[derive(Clone, Debug, PartialEq)]
pub enum Verb {
    /// POST the whole object (`apiVersion` and `kind` included). Already there: someone made it
    /// since the read, so decide again.
    Create(Body),
    /// Server-side apply, forced, under the controller's field manager. The patch carries
    /// `metadata.uid` of the object read (the API server refuses it on a successor of the same
    /// name) and, where the write must not pass a change, `metadata.resourceVersion`.
    Apply(Body),
    /// A JSON merge patch carrying `metadata.resourceVersion` as read ([`Write::merge`]).
    Merge(Body),
    /// The same, through the status subresource ([`Write::merge_status`]): a status that must be
    /// written before (or between) other writes, on the object exactly as read. The plan's
    /// closing status is [`Plan::status`].
    MergeStatus(Body),
    /// The same, through the `/scale` subresource ([`Write::scale`]): the replicas of a workload
    /// (a Deployment, a StatefulSet, a custom resource with a scale stanza), preconditioned on
    /// the resourceVersion of the Scale read.
    MergeScale(Body),
    /// DELETE, preconditioned on the uid read; already gone counts as done.
    Delete {
        /// The uid read.
        uid: Option<String>,
    },
}

impl Verb {
    /// The HTTP verb, for messages and logs.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Create(_) => "create",
            Self::Apply(_) => "apply",
            Self::Merge(_) => "patch",
            Self::MergeStatus(_) => "patch status",
            Self::MergeScale(_) => "patch scale",
            Self::Delete { .. } => "delete",
        }
    }
}

/// One write of a plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    /// Where it goes.
    pub target: Target,
    /// How.
    pub verb: Verb,
    /// What a failure of it is counted under.
    pub category: Category,
    /// The `reason` label the controller counts it under (its own write counter), if any.
    pub reason: Option<&'static str>,
    /// Events recorded as soon as it succeeded (before the writes after it), provided every
    /// write before it succeeded too.
    pub notices: Vec<Notice>,
    /// One of a run of writes to separate objects, each tried even when one before it in the run
    /// failed ([`Self::independent`]); the first failure ends the pass once the run is over.
    pub independent: bool,
}

impl Write {
    fn new(target: Target, verb: Verb, category: Category) -> Self {
        Self {
            target,
            verb,
            category,
            reason: None,
            notices: Vec::new(),
            independent: false,
        }
    }

    /// POST `object` (serialised with its `apiVersion` and `kind`).
    pub fn create<K: Resource<DynamicType = ()> + serde::Serialize>(
        object: &K,
        category: Category,
    ) -> Self {
        let body = serde_json::to_value(object).unwrap_or(Value::Null);
        Self::new(Target::of(object), Verb::Create(body.into()), category)
    }

    /// Server-side apply `patch` (which names the uid read: see [`Verb::Apply`]).
    pub fn apply(target: Target, patch: Value, category: Category) -> Self {
        Self::new(target, Verb::Apply(patch.into()), category)
    }

    /// A merge patch of `patch` with `metadata.resourceVersion` set to `resource_version` (the
    /// one read): the API server answers 409 when the object changed since.
    pub fn merge(
        target: Target,
        resource_version: Option<&str>,
        mut patch: Value,
        category: Category,
    ) -> Self {
        if let Some(object) = patch.as_object_mut() {
            let metadata = object.entry("metadata").or_insert_with(|| json!({}));
            if let Some(metadata) = metadata.as_object_mut() {
                metadata.insert("resourceVersion".into(), json!(resource_version));
            }
        }
        Self::new(target, Verb::Merge(patch.into()), category)
    }

    /// A merge patch of `patch` on whatever version is stored: only for fields no one else writes
    /// (one ServiceScaler's entry in its install's hibernation ledger), where a concurrent change
    /// of other fields must not fail the write.
    pub fn merge_any(target: Target, patch: Value, category: Category) -> Self {
        Self::new(target, Verb::Merge(patch.into()), category)
    }

    /// A merge patch of the status subresource, with `metadata.resourceVersion` set as by
    /// [`Self::merge`].
    pub fn merge_status(
        target: Target,
        resource_version: Option<&str>,
        patch: Value,
        category: Category,
    ) -> Self {
        let mut write = Self::merge(target, resource_version, patch, category);
        if let Verb::Merge(patch) = write.verb {
            write.verb = Verb::MergeStatus(patch);
        }
        write
    }

    /// `spec.replicas: replicas` through the `/scale` subresource of `target`, naming the
    /// resourceVersion of the Scale read (a 409 when the workload changed since).
    pub fn scale(
        target: Target,
        resource_version: Option<&str>,
        replicas: i32,
        category: Category,
    ) -> Self {
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": resource_version},
            "spec": {"replicas": replicas},
        });
        Self::new(target, Verb::MergeScale(patch.into()), category)
    }

    /// A merge patch of `object`'s finalizers as read, without those in `remove` and with `add`
    /// (at the end, once), naming the resourceVersion read: a 409 when they changed since.
    pub fn finalizers<K: Resource<DynamicType = ()>>(
        object: &K,
        remove: &[&str],
        add: Option<&str>,
    ) -> Self {
        let meta = object.meta();
        let mut finalizers: Vec<&str> = meta
            .finalizers
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|f| !remove.contains(f) && Some(*f) != add)
            .collect();
        finalizers.extend(add);
        let finalizers = match finalizers.is_empty() {
            true => Value::Null,
            false => json!(finalizers),
        };
        Self::merge(
            Target::of(object),
            meta.resource_version.as_deref(),
            json!({"metadata": {"finalizers": finalizers}}),
            Category::Metadata,
        )
    }

    /// Delete the object read, by its uid.
    pub fn delete(target: Target, uid: Option<&str>, category: Category) -> Self {
        Self::new(
            target,
            Verb::Delete {
                uid: uid.map(str::to_owned),
            },
            category,
        )
    }

    /// Counted under `reason` by the controller's write counter.
    #[must_use]
    pub fn reason(mut self, reason: &'static str) -> Self {
        self.reason = Some(reason);
        self
    }

    /// With `notice` recorded once it succeeded.
    #[must_use]
    pub fn notice(mut self, notice: Notice) -> Self {
        self.notices.push(notice);
        self
    }

    /// Tried even when the write before it failed, as one of a run of writes to separate objects
    /// (scaledown-window's Nodes): one object's failure does not hold the others back. A plain
    /// write after the run is not tried, and the pass ends with the run's first failure.
    #[must_use]
    pub fn independent(mut self) -> Self {
        self.independent = true;
        self
    }

    /// With `notices` recorded once it succeeded.
    #[must_use]
    pub fn notices(mut self, notices: impl IntoIterator<Item = Notice>) -> Self {
        self.notices.extend(notices);
        self
    }

    /// What a failure of it says: `writing HorizontalPodAutoscaler shop/web`.
    pub fn describe(&self) -> String {
        self.category.what(&self.target)
    }
}

/// The status of the controller's own object: a merge patch of `.status` through the status
/// subresource, written after every other write of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusPatch {
    /// The object.
    pub target: Target,
    /// `{"status": ...}`: only what changed, `null` for what is gone
    /// ([`crate::patch::merge_diff`]).
    pub patch: Value,
}

impl StatusPatch {
    /// The write that carries it out: a merge patch of the status subresource, counted under
    /// [`Category::Status`], with no precondition (the status is the controller's own).
    pub fn write(&self) -> Write {
        Write::new(
            self.target.clone(),
            Verb::MergeStatus(self.patch.clone().into()),
            Category::Status,
        )
    }
}

/// When the object is reconciled again, short of a change of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeue {
    /// Only when something it watches changes.
    AwaitChange,
    /// After this long (a boundary, a ramp step, an expiry).
    After(Duration),
}

/// Everything one pass does, in order: the [`writes`](Plan::writes) (each with the Events of
/// its success), the [`status`](Plan::status), the [`notices`](Plan::notices), then the
/// [`gauges`](Plan::gauges) handed to the controller, then [`invalid`](Plan::invalid) or the
/// [`requeue`](Plan::requeue). An empty plan writes nothing: a no-op reconcile is quiet.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan<G> {
    /// The object the plan is about: its Events are recorded on it.
    pub subject: ObjectReference,
    /// The writes, in order. The first that fails ends the pass.
    pub writes: Vec<Write>,
    /// The status write, after every other write.
    pub status: Option<StatusPatch>,
    /// Events recorded after the status.
    pub notices: Vec<Notice>,
    /// The controller's gauges, handed to it once the writes succeeded.
    pub gauges: G,
    /// When to look again.
    pub requeue: Requeue,
    /// The object breaks a rule (the status says which): the pass ends as `invalid` with this
    /// message, and waits for a change of the object instead of requeueing.
    pub invalid: Option<String>,
}

impl<G> Plan<G> {
    /// A plan about `subject` that writes nothing, records nothing and waits for a change.
    pub fn new(subject: ObjectReference, gauges: G) -> Self {
        Self {
            subject,
            writes: Vec::new(),
            status: None,
            notices: Vec::new(),
            gauges,
            requeue: Requeue::AwaitChange,
            invalid: None,
        }
    }

    /// What its Events say, in order: those of each write, then the plan's own (a summary of
    /// what carrying it out does, or in a dry run would do).
    pub fn notes(&self) -> Vec<String> {
        self.writes
            .iter()
            .flat_map(|w| &w.notices)
            .chain(&self.notices)
            .map(|n| n.note.clone())
            .collect()
    }

    /// Whether carrying it out writes nothing to the API server (Events aside).
    pub fn writes_nothing(&self) -> bool {
        self.writes.is_empty() && self.status.is_none()
    }

    /// `Kind namespace/name` of the subject, for messages.
    pub fn describe_subject(&self) -> String {
        let kind = self.subject.kind.as_deref().unwrap_or_default();
        let name = self.subject.name.as_deref().unwrap_or_default();
        match self.subject.namespace.as_deref() {
            Some(namespace) => format!("{kind} {namespace}/{name}"),
            None => format!("{kind} {name}"),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    use k8s_openapi::api::core::v1::Node;

    fn hpa() -> Target {
        Target::named::<HorizontalPodAutoscaler>(Some("shop"), "web")
    }

    #[test]
    fn a_merge_patch_carries_the_resource_version_read() {
        let write = Write::merge(
            hpa(),
            Some("42"),
            json!({"metadata": {"finalizers": ["f"]}}),
            Category::Metadata,
        );
        assert_eq!(
            write.verb,
            Verb::Merge(json!({"metadata": {"finalizers": ["f"], "resourceVersion": "42"}}).into())
        );
        let write = Write::merge(
            hpa(),
            Some("7"),
            json!({"spec": {"x": 1}}),
            Category::Target,
        );
        assert_eq!(
            write.verb,
            Verb::Merge(json!({"spec": {"x": 1}, "metadata": {"resourceVersion": "7"}}).into())
        );
    }

    #[test]
    fn a_status_write_in_the_sequence_names_the_version_read_too() {
        let write = Write::merge_status(
            hpa(),
            Some("9"),
            json!({"status": {"x": 1}}),
            Category::Status,
        );
        assert_eq!(
            write.verb,
            Verb::MergeStatus(
                json!({"status": {"x": 1}, "metadata": {"resourceVersion": "9"}}).into()
            )
        );
        assert_eq!(write.verb.as_str(), "patch status");
    }

    #[test]
    fn finalizers_are_written_whole_naming_the_version_read() {
        let mut object = HorizontalPodAutoscaler::default();
        object.metadata.name = Some("web".into());
        object.metadata.namespace = Some("shop".into());
        object.metadata.resource_version = Some("3".into());
        object.metadata.finalizers = Some(vec!["a".into(), "ours".into(), "b".into()]);
        let added = Write::finalizers(&object, &[], Some("ours"));
        assert_eq!(
            added.verb,
            Verb::Merge(
                json!({"metadata": {
                "finalizers": ["a", "b", "ours"], "resourceVersion": "3"}})
                .into()
            )
        );
        assert_eq!(added.category, Category::Metadata);
        let removed = Write::finalizers(&object, &["ours", "b"], None);
        assert_eq!(
            removed.verb,
            Verb::Merge(json!({"metadata": {"finalizers": ["a"], "resourceVersion": "3"}}).into())
        );
        let none = Write::finalizers(&object, &["a", "ours", "b"], None);
        assert_eq!(
            none.verb,
            Verb::Merge(json!({"metadata": {"finalizers": null, "resourceVersion": "3"}}).into()),
            "an empty list is removed"
        );
    }

    #[test]
    fn targets_and_writes_say_what_they_are() {
        assert_eq!(hpa().describe(), "HorizontalPodAutoscaler shop/web");
        assert_eq!(hpa().resource.plural, "horizontalpodautoscalers");
        assert_eq!(
            Target::named::<Node>(None, "n1").describe(),
            "Node n1",
            "a cluster-scoped kind has no namespace"
        );
        let delete = Write::delete(hpa(), Some("u1"), Category::Target);
        assert_eq!(
            delete.describe(),
            "writing HorizontalPodAutoscaler shop/web"
        );
        assert_eq!(
            delete.verb,
            Verb::Delete {
                uid: Some("u1".into())
            }
        );
        let status = Write::merge(hpa(), None, json!({}), Category::Status);
        assert_eq!(
            status.describe(),
            "writing the status of HorizontalPodAutoscaler shop/web"
        );
    }

    #[test]
    fn the_categories_are_one_vocabulary() {
        let labels: Vec<_> = [Category::Target, Category::Metadata, Category::Status]
            .iter()
            .map(|c| c.as_str())
            .collect();
        assert_eq!(labels, ["write_target", "write_metadata", "write_status"]);
    }

    #[test]
    fn a_created_object_carries_its_kind() {
        let mut object = HorizontalPodAutoscaler::default();
        object.metadata.name = Some("web".into());
        object.metadata.namespace = Some("shop".into());
        let write = Write::create(&object, Category::Target)
            .reason("create")
            .notice(Notice::normal("Created", "Create", "made"));
        let Verb::Create(body) = &write.verb else {
            panic!("{write:?}");
        };
        let body = body.value();
        assert_eq!(body["kind"], "HorizontalPodAutoscaler");
        assert_eq!(body["apiVersion"], "autoscaling/v2");
        assert_eq!(write.target, hpa());
        assert_eq!(write.reason, Some("create"));
        assert_eq!(write.notices.len(), 1);
    }

    #[test]
    fn a_new_plan_writes_nothing_and_waits() {
        let plan = Plan::new(ObjectReference::default(), ());
        assert!(plan.writes_nothing());
        assert_eq!(plan.requeue, Requeue::AwaitChange);
        assert_eq!(plan.invalid, None);
    }
}
