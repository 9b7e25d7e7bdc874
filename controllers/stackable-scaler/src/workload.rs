//! The owning StatefulSet or Deployment as the state machine's [`ScaleTarget`]: read once per
//! pass (the pause check and the first observe share that read), resized through the runtime's
//! writer naming the resourceVersion read.

use std::sync::{Mutex, PoisonError};

use ebb_runtime::execute::Writer;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::core::Selector;
use kube::{Api, Client};

use crate::decide::{self, WorkloadKind, WorkloadState};
use crate::engine::{ScaleTarget, TargetError};

fn selector_string(selector: Option<&LabelSelector>) -> Option<String> {
    let selector = Selector::try_from(selector?.clone()).ok()?;
    Some(selector.to_string())
}

/// The owning StatefulSet or Deployment as a [`ScaleTarget`].
pub struct WorkloadTarget {
    client: Client,
    namespace: String,
    kind: WorkloadKind,
    name: String,
    /// What the reconciler already read this pass (for the pause check): the first
    /// [`ScaleTarget::observe`] returns it instead of reading again.
    observed: Mutex<Option<Option<WorkloadState>>>,
    /// The workload's resourceVersion as last read: a resize names it.
    version: Mutex<Option<String>>,
}

impl WorkloadTarget {
    /// The workload `kind`/`name` in `namespace`.
    pub fn new(client: Client, namespace: &str, kind: WorkloadKind, name: &str) -> Self {
        Self {
            client,
            namespace: namespace.to_owned(),
            kind,
            name: name.to_owned(),
            observed: Mutex::new(None),
            version: Mutex::new(None),
        }
    }

    /// Hands the state just read to the next [`ScaleTarget::observe`].
    pub(crate) fn remember(&self, state: Option<WorkloadState>) {
        *self.observed.lock().unwrap_or_else(PoisonError::into_inner) = Some(state);
    }

    async fn observe_workload(&self) -> Result<Option<WorkloadState>, kube::Error> {
        Ok(self.read_workload().await?.map(|(_, state)| state))
    }

    /// The workload's metadata (its annotations: the pause) and state, when it exists.
    pub(crate) async fn read_workload(
        &self,
    ) -> Result<Option<(ObjectMeta, WorkloadState)>, kube::Error> {
        let read = self.read_kind().await?;
        *self.version.lock().unwrap_or_else(PoisonError::into_inner) = read
            .as_ref()
            .and_then(|(meta, _)| meta.resource_version.clone());
        Ok(read)
    }

    async fn read_kind(&self) -> Result<Option<(ObjectMeta, WorkloadState)>, kube::Error> {
        Ok(match self.kind {
            WorkloadKind::StatefulSet => {
                let api: Api<StatefulSet> = Api::namespaced(self.client.clone(), &self.namespace);
                api.get_opt(&self.name).await?.map(|s| {
                    let spec = s.spec.unwrap_or_default();
                    let status = s.status.unwrap_or_default();
                    let state = WorkloadState {
                        replicas: spec.replicas.unwrap_or(1),
                        status_replicas: status.replicas,
                        ready_replicas: status.ready_replicas.unwrap_or(0),
                        generation: s.metadata.generation,
                        observed_generation: status.observed_generation,
                        selector: selector_string(Some(&spec.selector)),
                        reference: Some(format!("StatefulSet/{}", self.name)),
                    };
                    (s.metadata, state)
                })
            }
            WorkloadKind::Deployment => {
                let api: Api<Deployment> = Api::namespaced(self.client.clone(), &self.namespace);
                api.get_opt(&self.name).await?.map(|d| {
                    let spec = d.spec.unwrap_or_default();
                    let status = d.status.unwrap_or_default();
                    let state = WorkloadState {
                        replicas: spec.replicas.unwrap_or(1),
                        status_replicas: status.replicas.unwrap_or(0),
                        ready_replicas: status.ready_replicas.unwrap_or(0),
                        generation: d.metadata.generation,
                        observed_generation: status.observed_generation,
                        selector: selector_string(Some(&spec.selector)),
                        reference: Some(format!("Deployment/{}", self.name)),
                    };
                    (d.metadata, state)
                })
            }
        })
    }
}

impl ScaleTarget for WorkloadTarget {
    async fn observe(&self) -> Result<Option<WorkloadState>, TargetError> {
        let remembered = self
            .observed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match remembered {
            Some(state) => Ok(state),
            None => Ok(self.observe_workload().await?),
        }
    }

    async fn set_replicas(&self, replicas: i32) -> Result<(), TargetError> {
        let version = self
            .version
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let write = decide::resize_write(
            self.kind,
            &self.namespace,
            &self.name,
            version.as_deref(),
            replicas,
        );
        let answer = Writer::new(&self.client, crate::FIELD_MANAGER)
            .write(&write)
            .await?;
        *self.version.lock().unwrap_or_else(PoisonError::into_inner) =
            answer.and_then(|object| object.metadata.resource_version);
        tracing::info!(workload = %self.name, replicas, "set workload replicas");
        Ok(())
    }
}
