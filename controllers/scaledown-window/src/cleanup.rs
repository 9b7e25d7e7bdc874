//! `scaledown-window cleanup`, before an uninstall: every ScaleDownSchedule releases what it set
//! on its target ([`decide::uninstall`]) and loses its finalizer.

use ebb_crds::scaledown::ScaleDownSchedule;
use ebb_runtime::process::cleanup::Leave;
use ebb_runtime::watch::guard::Guarded;
use kube::api::ListParams;
use kube::core::{ApiResource, DynamicObject};
use kube::{Api, ResourceExt};

use crate::decide::{self, FINALIZER, Pass};
use crate::reconcile::{Context, Error, execute, read, settings};

/// For every ScaleDownSchedule `label_selector` selects (`--label-selector`: this install's),
/// releases what it set on its target, as its deletion would but with no other schedule taking
/// over (all of them go), and removes its finalizer. With `--keep-settings` (`leave`) only the
/// finalizer goes. Dry run: reports, writes nothing. One line per schedule.
///
/// # Errors
/// The first read or write that failed.
pub async fn release_all(
    ctx: &Context,
    label_selector: Option<&str>,
    leave: Leave,
) -> Result<Vec<String>, Error> {
    let now = ctx.clock.now();
    let settings = settings(
        ctx,
        Pass::Uninstall {
            keep_settings: leave == Leave::Settings,
        },
    );
    let guarded: Api<Guarded<ScaleDownSchedule>> = Api::all(ctx.client.clone());
    let selected = match label_selector {
        Some(selector) => ListParams::default().labels(selector),
        None => ListParams::default(),
    };
    let schedules = guarded.list(&selected).await.map_err(Error::Schedules)?;
    let dynamic: Api<DynamicObject> = Api::all_with(
        ctx.client.clone(),
        &ApiResource::erase::<ScaleDownSchedule>(&()),
    );
    let mut lines = Vec::new();
    for guard in schedules.items {
        let (name, released) = match guard.0 {
            Ok(schedule) => {
                let reads = decide::reads(&schedule, &settings, now);
                let observed = read(ctx, &schedule, settings, &reads).await?;
                let uninstall = decide::uninstall(&observed, now);
                execute(ctx, uninstall.plan).await?;
                (schedule.name_any(), uninstall.released)
            }
            // Nothing of it can be read, so nothing it set can be found; its finalizer still goes.
            Err(invalid) => (
                invalid.metadata.name.unwrap_or_default(),
                "nothing to release".to_owned(),
            ),
        };
        if ctx.dry_run {
            lines.push(format!(
                "ScaleDownSchedule {name}: dry run: would have {released}, and removed finalizer \
                 {FINALIZER}"
            ));
            continue;
        }
        let finalizer = ebb_runtime::process::cleanup::remove_finalizer(&dynamic, &name, FINALIZER)
            .await
            .map_err(Error::Finalizer)?;
        let finalizer = if finalizer {
            format!("removed finalizer {FINALIZER}")
        } else {
            "no finalizer".to_owned()
        };
        lines.push(format!("ScaleDownSchedule {name}: {released}; {finalizer}"));
    }
    Ok(lines)
}
