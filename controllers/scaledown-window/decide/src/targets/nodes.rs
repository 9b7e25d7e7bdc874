//! The `nodes` target: the cluster-autoscaler's `scale-down-disabled` annotation on Nodes, with
//! ebb's mark saying which schedule set it. Its view, plan and patch.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value, json};

use super::{annotation, labels, metadata, name, pause_marks};
use crate::{
    Change, Claim, DISABLED_BY_ANNOTATION, ObjectId, PauseMarks, SCALE_DOWN_DISABLED_ANNOTATION,
    TargetDecider, TargetKind,
};

/// What scaledown-window sees of a Node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeView {
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// `metadata.resourceVersion`, the precondition of a write.
    pub resource_version: Option<String>,
    /// The value of [`SCALE_DOWN_DISABLED_ANNOTATION`].
    pub scale_down_disabled: Option<String>,
    /// The value of [`DISABLED_BY_ANNOTATION`].
    pub disabled_by: Option<String>,
    /// Its pause annotations.
    pub pause: PauseMarks,
}

impl NodeView {
    /// The Node as a target's selection sees it ([`crate::ResolvedTarget::selects`]).
    pub fn id(&self) -> ObjectId<'_> {
        ObjectId {
            kind: TargetKind::NodeAnnotation,
            namespace: None,
            name: &self.name,
            labels: &self.labels,
        }
    }

    /// Whether `self` and `other` hold the same for the rules: everything but the
    /// resourceVersion, which changes with every write (a heartbeat's too).
    pub fn same_marks(&self, other: &Self) -> bool {
        let Self {
            name,
            labels,
            resource_version: _,
            scale_down_disabled,
            disabled_by,
            pause,
        } = self;
        (name, labels, scale_down_disabled, disabled_by, pause)
            == (
                &other.name,
                &other.labels,
                &other.scale_down_disabled,
                &other.disabled_by,
                &other.pause,
            )
    }
}

/// A change of one Node's annotations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeChange {
    /// Set [`SCALE_DOWN_DISABLED_ANNOTATION`] `"true"` and mark it as ours.
    Disable,
    /// The annotation is ebb's already, set for another schedule: mark it as ours.
    TakeOver,
    /// Remove the annotation and the mark.
    Release,
}

/// The change a Node needs.
///
/// Outside windows the managing schedule sets the annotation, unless it is already `"true"`
/// without ebb's mark (set by someone else: left alone, and kept when windows open). Inside windows
/// it removes the annotation only where ebb's mark says ebb set it. A node that no live schedule
/// selects any more loses the annotation when this schedule set it.
pub fn decide_node(
    me: &str,
    claim: &Claim,
    desired_enabled: bool,
    node: &NodeView,
) -> Option<NodeChange> {
    let ours = node.disabled_by.as_deref() == Some(me);
    match claim {
        Claim::Ours if !desired_enabled => match (
            node.scale_down_disabled.as_deref(),
            node.disabled_by.as_deref(),
        ) {
            (Some("true"), None) => None,
            (Some("true"), Some(_)) if ours => None,
            (Some("true"), Some(_)) => Some(NodeChange::TakeOver),
            _ => Some(NodeChange::Disable),
        },
        Claim::Ours => node.disabled_by.is_some().then_some(NodeChange::Release),
        Claim::Unclaimed => ours.then_some(NodeChange::Release),
        Claim::LostTo(_) | Claim::Other => None,
    }
}

/// A node as [`decide_node`] sees it.
pub fn node_view(meta: &ObjectMeta) -> NodeView {
    NodeView {
        name: name(meta),
        labels: labels(meta),
        resource_version: meta.resource_version.clone(),
        scale_down_disabled: annotation(meta, SCALE_DOWN_DISABLED_ANNOTATION),
        disabled_by: annotation(meta, DISABLED_BY_ANNOTATION),
        pause: pause_marks(meta),
    }
}

/// Plans every node.
pub(crate) fn decide(decider: &mut TargetDecider<'_>, nodes: &[Arc<NodeView>]) {
    for node in nodes {
        let label = format!("Node {}", node.name);
        let claim = decider.claim(node.id(), &label);
        if decider.paused(&claim, &label, &node.pause) {
            continue;
        }
        if let Some(change) = decide_node(decider.me, &claim, decider.desired, node) {
            decider.decision.changes.push(Change::Node {
                name: node.name.clone(),
                resource_version: node.resource_version.clone(),
                change,
            });
        }
    }
}

/// A merge patch of the node's annotations, guarded by its resourceVersion.
pub fn patch(resource_version: &Option<String>, change: &NodeChange, me: &str) -> Value {
    let mut annotations = Map::new();
    let me = Value::String(me.to_owned());
    match change {
        NodeChange::Disable => {
            annotations.insert(SCALE_DOWN_DISABLED_ANNOTATION.into(), json!("true"));
            annotations.insert(DISABLED_BY_ANNOTATION.into(), me);
        }
        NodeChange::TakeOver => {
            annotations.insert(DISABLED_BY_ANNOTATION.into(), me);
        }
        NodeChange::Release => {
            annotations.insert(SCALE_DOWN_DISABLED_ANNOTATION.into(), Value::Null);
            annotations.insert(DISABLED_BY_ANNOTATION.into(), Value::Null);
        }
    }
    json!({ "metadata": metadata(resource_version, annotations) })
}
