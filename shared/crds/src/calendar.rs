//! `scaling.ebb.dev/v1alpha1` `HolidayCalendar`: dates an organisation maintains once (public
//! holidays, a change freeze), which any number of windows exclude by name.
//!
//! Cluster-scoped, like a StorageClass or a PriorityClass: one calendar serves every namespace.
//! It holds data only; nothing writes its status. A ServiceScaler or FleetSchedule range and a
//! ScaleDownSchedule window name calendars in `excludeCalendars`; each date is read as a local
//! date in the zone of the window that names it, exactly as its own `excludeDates` are, so one
//! calendar of public holidays serves a team in Zurich and one in Vancouver alike.

use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use crate::service_scaler::EXCLUDED_DATE_PATTERN;

/// Dates on which the windows that name this calendar stay closed.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[kube(
    group = "scaling.ebb.dev",
    version = "v1alpha1",
    kind = "HolidayCalendar",
    doc = "HolidayCalendar lists dates (holidays, a change freeze) that the ebb windows naming it in excludeCalendars skip; each date is a local date in the zone of the window that names it.",
    plural = "holidaycalendars",
    shortname = "holcal",
    category = "ebb",
    derive = "PartialEq",
    printcolumn(
        name = "Description",
        type_ = "string",
        json_path = ".spec.description"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct HolidayCalendarSpec {
    /// What the calendar is for (`Public holidays, canton of Zurich`), for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub description: Option<String>,

    /// The excluded dates: `2026-12-25`, or an inclusive range `2026-12-24/2027-01-01`. A window
    /// that names the calendar is closed for each whole local day in its own zone, exactly as for
    /// its `excludeDates`.
    #[schemars(length(max = 1024), inner(regex(pattern = EXCLUDED_DATE_PATTERN)))]
    pub dates: Vec<String>,
}

/// Pattern of a calendar's name in `excludeCalendars`: a Kubernetes object name (DNS subdomain).
pub const CALENDAR_NAME_PATTERN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
