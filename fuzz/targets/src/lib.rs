//! Fuzz targets: one function per parser of user input, each taking arbitrary bytes and never
//! panicking on any of them.
//!
//! The functions hold no fuzzer: `fuzz/afl` wraps each in `afl::fuzz!` (see `fuzz/README.md`), and
//! `tests/corpora.rs` replays every file of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/`
//! through them under `cargo test`, so the corpora and the crashes once found stay checked without a
//! fuzzer. A target returns early on input that is not UTF-8 where its parser takes text; what
//! parses is also evaluated (at a few fixed instants), since a value that parses must not make
//! the code that uses it panic either.
//!
//! | target | input |
//! | --- | --- |
//! | [`cron`] | `<expression>` or `<expression>\n<time zone>` |
//! | [`duration`] | `<text>` or `<from>\n<to>[\n<zone>[\n<days, comma-separated>]]` |
//! | [`windows`] | JSON: a list of ScaleDownSchedule windows, a ServiceScaler spec, or a HolidayCalendar |
//! | [`replicas_config`] | JSON: a stackable `replicas` value |
//! | [`crds`] | a byte picking the kind, then that object as JSON (read as the watches read it) |
//! | [`webhook`] | the body of an admission request (an `AdmissionReview`) |

use std::future::Future;

use ebb_crds::babylon::{Workshop, WorkshopProvision, WorkshopUserAssignment};
use ebb_crds::calendar::HolidayCalendar;
use ebb_crds::poolboy::ResourceClaim;
use ebb_crds::scaledown::{ScaleDownSchedule, Window as WindowSpec};
use ebb_crds::service_scaler::{ServiceScaler, ServiceScalerSpec};
use ebb_crds::stackable::{
    ScalerStage, ScalerState, StackableScaler, StackableScalerSpec, StackableScalerStatus,
};
use ebb_crds::workshop_policy::WorkshopScalingPolicy;
use ebb_runtime::watch::guard::Guarded;
use ebb_schedule::{AnyOpen, Calendars, CronSchedule, DEFAULT_HORIZON, FirstMatch, Window, Zone};
use jiff::{SignedDuration, Timestamp};
use kube::Resource;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionReview};
use scaledown_window::decide::ClusterMaintenance;
use serde::de::DeserializeOwned;
use stackable_scaler::ReplicasConfig;
use stackable_scaler::webhook::{self, LiveScalers};
use workshop_scaler::decide::{self as workshop, Counts, Seats, Sources, WorkshopRead};

/// Unix seconds of the instants every parsed value is evaluated at: Zurich's spring-forward and
/// fall-back nights of 2026, an ordinary Friday noon, a leap day and the last second of a year.
const INSTANTS: [i64; 5] = [
    1_774_744_200, // 2026-03-29T00:30:00Z
    1_792_888_200, // 2026-10-25T00:30:00Z
    1_774_609_200, // 2026-03-27T11:00:00Z
    1_709_208_000, // 2024-02-29T12:00:00Z
    1_798_761_599, // 2026-12-31T23:59:59Z
];

/// The evaluation instants, then the ends of representable time.
fn instants() -> impl Iterator<Item = Timestamp> {
    INSTANTS
        .iter()
        .filter_map(|secs| Timestamp::from_second(*secs).ok())
        .chain([Timestamp::MIN, Timestamp::MAX])
}

/// A fixed ordinary instant (2026-03-27T11:00:00Z), for checks that need one.
fn noon() -> Timestamp {
    Timestamp::from_second(INSTANTS[2])
        .ok()
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// `ebb_schedule::CronSchedule::parse` (the five-field dialect, macros, names) with a zone from
/// `parse_time_zone` (UTC when the zone line is absent or unknown), then every evaluation method
/// of a schedule that parsed, at fixed instants.
pub fn cron(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (expression, zone) = text.split_once('\n').unwrap_or((text, "UTC"));
    let tz = ebb_schedule::parse_time_zone(zone).unwrap_or_else(|_| Zone::utc());
    let Ok(schedule) = CronSchedule::parse(expression, tz) else {
        return;
    };
    let _ = schedule.to_string();
    let _ = (schedule.expression(), schedule.time_zone());
    for t in instants() {
        let _ = schedule.fire_times_after(t).take(3).count();
        let _ = schedule.last_fire_at_or_before(t);
        let _ = schedule.first_fire_at_or_after(t);
    }
}

/// `ebb_schedule::parse_duration`, service-scaler's `parse_lead_time` and
/// `ebb_schedule::parse_time_zone` on the whole text; and, split into lines, the time-of-day and
/// instant parsers of time ranges: `Window::zoned_time` (`16:00+05:30`), `Window::zoned_date_time`
/// (RFC 3339) and `Window::local_time` (`HH:MM`, a zone, weekdays).
pub fn duration(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = ebb_schedule::parse_duration(text);
    let _ = service_scaler::lead::parse_lead_time(Some(text));
    let _ = ebb_schedule::parse_time_zone(text);

    let mut lines = text.split('\n');
    let (Some(from), Some(to)) = (lines.next(), lines.next()) else {
        return;
    };
    let zone = lines.next();
    let days: Option<Vec<&str>> = lines.next().map(|days| days.split(',').collect());
    let windows = [
        Window::zoned_time(from, to),
        Window::zoned_date_time(from, to),
        Window::local_time(from, to, zone, days.as_ref()),
    ];
    for window in windows.into_iter().flatten() {
        evaluate_window(&window);
    }
}

/// Every question a window answers, at the fixed instants.
fn evaluate_window(window: &Window) {
    for t in instants() {
        let _ = window.contains(t);
        let _ = window.interval_containing(t);
        let _ = window.next_start_after(t);
        let _ = window.next_boundary_after(t);
    }
}

/// The time-range parsers over JSON: a list of ScaleDownSchedule windows through scaledown-window's
/// `parse_windows`, and a ServiceScaler spec through service-scaler's `Schedule::from_spec` (both
/// with the calendars of [`fixed_calendars`] to name); what parses is evaluated as the
/// controllers do (matched range, next transition, a few transitions). A HolidayCalendar is read
/// as the calendars' watch reads it, parsed as a window naming it parses it, and excluded from
/// windows of every kind.
pub fn windows(data: &[u8]) {
    let calendars = fixed_calendars();
    if let Ok(specs) = serde_json::from_slice::<Vec<WindowSpec>>(data)
        && let Ok(parsed) = scaledown_window::decide::parse_windows(&specs, &calendars)
    {
        evaluate_windows(parsed);
    }
    if let Ok(spec) = serde_json::from_slice::<ServiceScalerSpec>(data) {
        evaluate_service_scaler_spec(&spec, &calendars);
    }
    if let Ok(calendar) = serde_json::from_slice::<HolidayCalendar>(data) {
        evaluate_calendar(&calendar);
    }
}

/// The calendars a fuzzed window may name: `holidays` (days and a range across a DST change),
/// `freeze` (a range across the new year) and `broken` (a date that does not exist).
fn fixed_calendars() -> Calendars {
    let mut calendars = Calendars::new();
    calendars.insert(
        "holidays",
        &["2026-03-29", "2026-10-24/2026-10-26", "2024-02-29"],
    );
    calendars.insert("freeze", &["2026-12-20/2027-01-03"]);
    calendars.insert("broken", &["2026-02-30"]);
    calendars
}

/// `calendar` parsed as the calendars' cache parses it, then excluded from a window of each kind
/// (a night crossing midnight in a DST zone, a cron window, a fixed offset, a one-off range) by
/// both controllers' parsers.
fn evaluate_calendar(calendar: &HolidayCalendar) {
    let name = calendar.metadata.name.clone().unwrap_or_default();
    let mut calendars = Calendars::new();
    calendars.insert(&name, &calendar.spec.dates);
    let Ok(dates) = calendars.dates(&name) else {
        return;
    };
    let windows = [
        Window::local_time("22:00", "06:00", Some("Europe/Zurich"), None::<&[&str]>),
        Window::cron("0 20 * * 1-5", "11h", Some("America/Vancouver")),
        Window::zoned_time("08:00+05:30", "20:00+05:30"),
        Window::zoned_date_time("2026-03-28T12:00:00Z", "2026-10-26T12:00:00Z"),
    ];
    for window in windows.into_iter().flatten() {
        evaluate_window(&window.excluding(dates.to_vec()));
    }
    let named = serde_json::json!([{
        "schedule": "0 20 * * *", "duration": "11h", "timeZone": "Europe/Zurich",
        "excludeCalendars": [name],
    }]);
    if let Ok(specs) = serde_json::from_value::<Vec<WindowSpec>>(named)
        && let Ok(parsed) = scaledown_window::decide::parse_windows(&specs, &calendars)
    {
        evaluate_windows(parsed);
    }
}

/// `FirstMatch` and `AnyOpen` over parsed windows, as scaledown-window decides.
fn evaluate_windows(windows: Vec<Window>) {
    if let Some(first) = windows.first() {
        evaluate_window(first);
    }
    let first_match = FirstMatch::new(windows.clone());
    let any_open = AnyOpen::new(windows);
    let _ = first_match.overlaps();
    for t in instants() {
        let _ = first_match.matched_at(t);
        let _ = first_match.next_transition(t);
        let _ = first_match.transitions(t, 3, DEFAULT_HORIZON);
        let _ = any_open.open_at(t);
        let _ = any_open.next_transition(t);
        let _ = any_open.transitions(t, 3, DEFAULT_HORIZON);
    }
}

/// service-scaler's validation of a spec and, when valid, its schedule and lead at fixed instants.
fn evaluate_service_scaler_spec(spec: &ServiceScalerSpec, calendars: &Calendars) {
    let Ok(schedule) = service_scaler::decide::Schedule::from_spec(spec, calendars) else {
        return;
    };
    let _ = schedule.overlap_message(&schedule.overlaps());
    for t in instants() {
        let _ = schedule.matched_at(t);
        let _ = schedule.effective_at(t);
        let _ = schedule.next_transition(t);
        let _ = schedule.transitions(t, 3);
        let _ = service_scaler::lead::lead_at(&schedule, t);
        // As a pass asks it: over the spec's ramp, of any length (a day without one).
        let ramp = schedule.ramp().unwrap_or(SignedDuration::from_hours(24));
        if let Ok(since) = t.checked_sub(ramp) {
            let _ = schedule.last_min_change(since, t);
        }
    }
}

/// stackable-scaler's `ReplicasConfig` (a number, `externallyScaled`, `{hpa: ...}` or
/// `{auto: ...}`) deserialized from JSON (which validates), then validated and read again.
pub fn replicas_config(data: &[u8]) {
    let Ok(config) = serde_json::from_slice::<ReplicasConfig>(data) else {
        return;
    };
    let _ = config.validate();
    let _ = config.initial_replicas();
    let _ = config.needs_scaler();
    // What serializes must read back.
    if let Ok(json) = serde_json::to_vec(&config) {
        let _ = serde_json::from_slice::<ReplicasConfig>(&json);
    }
}

/// Every custom resource ebb reads: the first byte picks the kind, the rest is the object as JSON.
/// Where a controller has a pure function over the object that validates or decides, it runs too.
pub fn crds(data: &[u8]) {
    let Some((kind, json)) = data.split_first() else {
        return;
    };
    match kind % 8 {
        0 => service_scaler_object(json),
        1 => scale_down_schedule(json),
        2 => stackable_scaler(json),
        3 => workshop_scaling_policy(json),
        4 => workshop_object(json),
        5 => workshop_provision(json),
        6 => {
            let _ = watched::<WorkshopUserAssignment>(json);
        }
        _ => {
            if let Some(claim) = watched::<ResourceClaim>(json) {
                let _ = claim.settlement().is_settled();
            }
        }
    }
}

fn service_scaler_object(json: &[u8]) {
    let Some(scaler) = watched::<ServiceScaler>(json) else {
        return;
    };
    let calendars = fixed_calendars();
    evaluate_service_scaler_spec(&scaler.spec, &calendars);
    let _ = service_scaler::plan::offline(&scaler, &calendars, noon());
}

fn scale_down_schedule(json: &[u8]) {
    let Some(schedule) = watched::<ScaleDownSchedule>(json) else {
        return;
    };
    let _ = scaledown_window::decide::resolve_target(&schedule.spec.target);
    for progressing in [false, true] {
        let maintenance = ClusterMaintenance::cluster_version(progressing);
        let _ =
            scaledown_window::plan::offline(&schedule, &fixed_calendars(), noon(), &maintenance);
    }
}

fn stackable_scaler(json: &[u8]) {
    let Some(scaler) = watched::<StackableScaler>(json) else {
        return;
    };
    // The `plan` subcommand's checks of what the schema cannot say, on the same object.
    if let Ok(text) = std::str::from_utf8(json) {
        let _ = stackable_scaler::plan::parse("fuzz.json", text);
    }
    let timeouts = stackable_scaler::StageTimeouts::of(&scaler.spec);
    if let Some(status) = &scaler.status {
        let _ = stackable_scaler::decide::stage_deadline(status, &timeouts);
    }
    // The walk too: with no answers, and with every hook's Job done (the whole operation).
    use stackable_scaler::HookKind;
    use stackable_scaler::steps::Answer;
    let done = [
        (HookKind::PreScale, Answer::Done),
        (HookKind::PostScale, Answer::Done),
        (HookKind::OnFailure, Answer::Failed),
    ];
    for workload in [None, Some(0), Some(scaler.spec.replicas)] {
        for answers in [&[][..], &done[..]] {
            let _ = stackable_scaler::plan::offline(&scaler, workload, answers, noon());
        }
    }
}

fn workshop_scaling_policy(json: &[u8]) {
    let Some(policy) = watched::<WorkshopScalingPolicy>(json) else {
        return;
    };
    let name = policy.metadata.name.clone().unwrap_or_default();
    let policies = [(name, policy.spec.auto_scaling.clone())];
    let sources = Sources {
        policies: &policies,
        ..Sources::default()
    };
    decide_workshop(&sources, &Counts::default());
    let workshop = Workshop::new("fuzz", Default::default());
    let _ = workshop_scaler::decide::policy_selects(&policy, &workshop);
}

fn workshop_object(json: &[u8]) {
    let Some(workshop) = watched::<Workshop>(json) else {
        return;
    };
    let _ = workshop::lifespan_end(workshop.spec.lifespan.as_ref());
    let observed = Counts {
        provision_disabled: workshop.spec.provision_disabled == Some(true),
        ..Counts::default()
    };
    let sources = Sources {
        workshop: workshop.spec.auto_scaling.as_ref(),
        ..Sources::default()
    };
    decide_workshop(&sources, &observed);
}

fn workshop_provision(json: &[u8]) {
    let Some(provision) = watched::<WorkshopProvision>(json) else {
        return;
    };
    let observed = Counts {
        count: provision.spec.count,
        in_flight: workshop::in_flight_of(&provision),
        lifespan_end: workshop::lifespan_end(provision.spec.lifespan.as_ref()),
        last_from: provision
            .status
            .as_ref()
            .and_then(|s| s.auto_scaling_last_from_count),
        ..Counts::default()
    };
    let sources = Sources {
        provision: provision.spec.auto_scaling.as_ref(),
        ..Sources::default()
    };
    decide_workshop(&sources, &observed);
    // The whole pass, as the reconciler runs it, with and without a Workshop.
    let workshop = Workshop::new("fuzz", Default::default());
    for read in [WorkshopRead::Missing, WorkshopRead::Found(&workshop)] {
        let _ = workshop::reads(&provision).counts(&provision, read, &[], noon());
        let _ = workshop::decide(
            &workshop::Observed {
                provision: &provision,
                workshop: read,
                policies: &[],
                seats: Seats {
                    assigned: 9,
                    total: 10,
                },
                claims: Vec::new(),
                dry_run: false,
            },
            noon(),
        );
    }
}

/// `json` as the controllers' watches read it ([`Guarded`]): the object, or `None` when it does
/// not fit the type (its message, naming the field, is built while reading, as a controller's is).
fn watched<K: DeserializeOwned + Resource>(json: &[u8]) -> Option<K> {
    serde_json::from_slice::<Guarded<K>>(json).ok()?.0.ok()
}

/// workshop-scaler's resolution of `autoScaling` and its decision, with the seats full and empty.
fn decide_workshop(sources: &Sources<'_>, observed: &Counts) {
    let _ = workshop::resolve_sources(sources).map(|c| c.active_timeout);
    let settings = workshop::settings_of(sources);
    for seats in [
        Seats::default(),
        Seats {
            assigned: 9,
            total: 10,
        },
    ] {
        let observed = Counts {
            seats,
            ..observed.clone()
        };
        let decision = workshop::decide_scaling(&settings, &observed, noon());
        let _ = decision.reason(observed.count, settings.config());
        let _ = decision.desired_count(observed.count);
    }
    let _ = workshop::enabled_of(sources);
}

/// A live StackableScaler lookup with a fixed answer.
struct Live(Result<Option<StackableScaler>, String>);

impl LiveScalers for Live {
    fn get(
        &self,
        _namespace: &str,
        _name: &str,
    ) -> impl Future<Output = Result<Option<StackableScaler>, String>> + Send {
        std::future::ready(self.0.clone())
    }
}

/// A live scaler in `stage`.
fn scaler_in(stage: ScalerStage) -> StackableScaler {
    let mut scaler = StackableScaler::new(
        "fuzz",
        StackableScalerSpec {
            replicas: 3,
            hooks: None,
            stage_timeout_seconds: None,
        },
    );
    scaler.status = Some(StackableScalerStatus {
        replicas: 3,
        current_state: Some(ScalerState {
            stage,
            ..ScalerState::default()
        }),
        ..StackableScalerStatus::default()
    });
    scaler
}

/// stackable-scaler's admission webhook on a request body: deserialized as its HTTP handler does
/// (`AdmissionReview<DynamicObject>` with serde_json), answered by `webhook::review` against each
/// kind of live lookup (error, missing, idle, busy), and the answer serialized; `examine` and
/// `verdict` also run on the request directly.
pub fn webhook(data: &[u8]) {
    let Ok(parsed) = serde_json::from_slice::<AdmissionReview<DynamicObject>>(data) else {
        return;
    };
    let lives = [
        Live(Err("fuzz: lookup failed".into())),
        Live(Ok(None)),
        Live(Ok(Some(scaler_in(ScalerStage::Idle)))),
        Live(Ok(Some(scaler_in(ScalerStage::Scaling)))),
    ];
    let request: Result<AdmissionRequest<DynamicObject>, _> = parsed.clone().try_into();
    if let Ok(request) = request {
        let check = webhook::examine(&request);
        for live in &lives {
            let _ = webhook::verdict(&request, &check, live.0.clone());
        }
    }
    for live in &lives {
        let answer = futures::executor::block_on(webhook::review(live, parsed.clone()));
        let _ = serde_json::to_vec(&answer);
    }
}
