//! What a pass over one ServiceScaler reads before [`decide`](crate::decide): the first of its
//! two calls. The reconciler reads what [`reads`] names (I/O only) and hands it to `decide`.

use ebb_crds::service_scaler::ServiceScaler;
use k8s_openapi::api::autoscaling::v2::{CrossVersionObjectReference, HorizontalPodAutoscaler};
use kube::ResourceExt;
use kube::core::ApiResource;

use crate::{calendar_names, hibernation_target, reads_scale, scale_resource};

/// What a pass over one ServiceScaler must read, from the ServiceScaler alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reads {
    /// The HPA of the ServiceScaler's name, in its namespace.
    pub hpa: String,
    /// The HolidayCalendars its ranges name (`excludeCalendars`): a reconcile's; the uninstall
    /// reads no window.
    pub calendars: Vec<String>,
    /// A range hibernates or a hibernation is recorded: once the HPA is read, the Scale of the
    /// workload a hibernation concerns ([`Reads::scale`]).
    pub hibernation: bool,
}

/// The Scale to read: the `/scale` subresource of one workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleRead {
    /// The workload's resource.
    pub resource: ApiResource,
    /// Its name, in the ServiceScaler's namespace.
    pub name: String,
    /// `Deployment shop/web`, for messages.
    pub describe: String,
}

impl ScaleRead {
    /// The Scale of `workload` in `namespace`, when hibernation scales its kind
    /// ([`scale_resource`]).
    pub fn of(workload: CrossVersionObjectReference, namespace: &str) -> Option<Self> {
        Some(Self {
            resource: scale_resource(&workload)?,
            describe: format!("{} {namespace}/{}", workload.kind, workload.name),
            name: workload.name,
        })
    }
}

impl Reads {
    /// The Scale to read once the HPA is (`hpa`, `None` when there is none): the recorded
    /// workload, else the HPA's target, else the one ebb's HPA would get ([`hibernation_target`]);
    /// `None` when nothing hibernates or the workload's kind is not one hibernation scales.
    pub fn scale(
        &self,
        scaler: &ServiceScaler,
        hpa: Option<&HorizontalPodAutoscaler>,
    ) -> Option<ScaleRead> {
        if !self.hibernation {
            return None;
        }
        let workload = hibernation_target(scaler, hpa);
        ScaleRead::of(workload, &scaler.namespace().unwrap_or_default())
    }
}

/// What a pass over `scaler` reads: its HPA, its calendars, and where a hibernation concerns it
/// the workload's Scale.
pub fn reads(scaler: &ServiceScaler) -> Reads {
    Reads {
        hpa: scaler.name_any(),
        calendars: calendar_names(&scaler.spec.time_range_spec)
            .into_iter()
            .map(str::to_owned)
            .collect(),
        hibernation: reads_scale(scaler),
    }
}

#[cfg(test)]
#[path = "reads_tests.rs"]
mod tests;
