//! Builders a product operator uses to create a StackableScaler and the HPA that targets it
//! ([`stackable_scaler_decide::builders`], pure), and the write that seeds a new scaler's status.

use ebb_crds::stackable::StackableScaler;
use ebb_runtime::execute::Writer;
use ebb_runtime::execute::frame::Failure;
use jiff::Timestamp;
use kube::Api;

pub use crate::decide::builders::*;
use crate::decide::{self, WorkloadState, initial_status, is_initialized};

/// Seeds a fresh scaler's status with the workload's current replicas and `Idle`, so the first
/// reconcile does not see `status.replicas: 0` and "scale" from zero. Does nothing (returns
/// `Ok(false)`) when the status is already initialized. The write ([`decide::status_write`],
/// sent by the runtime's executor) carries the scaler's resourceVersion: a
/// [`Failure::Conflict`] means someone else initialized it first; re-read and check again.
pub async fn initialize_scaler_status(
    api: &Api<StackableScaler>,
    scaler: &StackableScaler,
    workload: &WorkloadState,
    now: Timestamp,
) -> Result<bool, Failure> {
    if is_initialized(scaler.status.as_ref()) {
        return Ok(false);
    }
    let Some(write) = decide::status_write(scaler, &initial_status(workload, now)) else {
        return Ok(false);
    };
    let client = api.clone().into_client();
    Writer::new(&client, crate::FIELD_MANAGER)
        .write(&write)
        .await?;
    Ok(true)
}
