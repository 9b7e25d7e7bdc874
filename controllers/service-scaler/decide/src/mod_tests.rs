//! Tests of every rule in `decide`: table tests and properties named for the rule they guard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::fixtures::*;
use super::*;
use ebb_core::pause::{PAUSED_ANNOTATION, PAUSED_UNTIL_ANNOTATION};
use ebb_core::{EventKind, find_condition, from_k8s_time};
use ebb_schedule::Calendars;
use ebb_testkit::utc;
use jiff::SignedDuration;
use k8s_openapi::api::autoscaling::v2::MetricSpec;
use proptest::prelude::*;
use serde_json::{Value, json};

// ------------------------------------------------------------------------------------------------
// Decisions

fn decide_at(s: &ServiceScaler, hpa: Option<&HorizontalPodAutoscaler>, now: &str) -> Decision {
    decide_scaling(
        &Observed {
            calendars: &Calendars::new(),
            scaler: s,
            hpa,
            scale: None,
            dry_run: false,
            ledger: None,
        },
        utc(now),
    )
}

/// The scaler with the status a decision wrote.
fn with_status(s: &ServiceScaler, d: &Decision) -> ServiceScaler {
    let mut next = s.clone();
    if let Some(status) = &d.status {
        next.status = Some(status.clone());
    }
    next
}

fn condition_of<'a>(status: &'a ServiceScalerStatus, type_: &str) -> (&'a str, &'a str, &'a str) {
    let c = find_condition(&status.conditions, type_).unwrap();
    (c.status.as_str(), c.reason.as_str(), c.message.as_str())
}

#[test]
fn missing_hpa_is_created_owned_with_exactly_the_effective_settings() {
    let s = scaler(office());
    let d = decide_at(&s, None, "2026-05-04T09:00:00Z");
    let HpaChange::Create(hpa) = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    assert_eq!(
        serde_json::to_value(hpa.as_ref()).unwrap(),
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {
                "name": "web", "namespace": "shop",
                "labels": {"app.kubernetes.io/managed-by": "ebb-service-scaler"},
                "ownerReferences": [{"apiVersion": "scaler.udaan.io/v1", "kind": "ServiceScaler",
                    "name": "web", "uid": "uid-1", "controller": true, "blockOwnerDeletion": true}],
            },
            "spec": {
                "minReplicas": 5, "maxReplicas": 10,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60}}}],
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            },
        })
    );
    assert_eq!(d.finalizer, FinalizerChange::Keep);
    assert_eq!(d.state, ManagedState::Active);
    assert_eq!(d.hpa_notice.as_ref().unwrap().reason, "Created");
    // Requeue exactly at the boundary, 12:00Z.
    assert_eq!(
        d.requeue_after,
        Some(Duration::from_secs(3 * 3600).min(MAX_REQUEUE))
    );
    let status = d.status.unwrap();
    assert_eq!(
        status.last_known_config,
        Some(settings(5, 10, Some(60), None))
    );
    assert!(status.time_range_match);
    assert_eq!(status.matched_range, Some(0));
    assert_eq!(status.last_observed_generation, Some(1));
    assert_eq!(status.next_transitions.len(), PREVIEW_LEN);
    assert_eq!(
        from_k8s_time(&status.next_transitions[0].at),
        utc("2026-05-04T12:00:00Z")
    );
    assert_eq!(status.next_transitions[0].matched_range, None);
    assert_eq!(
        from_k8s_time(status.last_updated_time.as_ref().unwrap()),
        utc("2026-05-04T09:00:00Z")
    );
    assert_eq!(condition_of(&status, CONDITION_READY).0, "True");
    assert_eq!(condition_of(&status, CONDITION_SPEC_VALID).0, "True");
    assert_eq!(condition_of(&status, CONDITION_RANGES_OVERLAP).0, "False");
    assert_eq!(condition_of(&status, PAUSED).0, "False");
    assert_eq!(condition_of(&status, CONDITION_UNMANAGED).0, "False");
}

#[test]
fn scale_target_ref_from_the_spec_is_used_on_create() {
    let mut value = office();
    value["scaleTargetRef"] = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"});
    let d = decide_at(&scaler(value), None, "2026-05-04T09:00:00Z");
    let HpaChange::Create(hpa) = d.hpa else {
        panic!()
    };
    let target = hpa.spec.unwrap().scale_target_ref;
    assert_eq!(
        (target.kind.as_str(), target.name.as_str()),
        ("StatefulSet", "db")
    );
}

#[test]
fn second_decision_at_the_same_instant_changes_nothing() {
    let s = scaler(office());
    let now = "2026-05-04T09:00:00Z";
    let d = decide_at(&s, None, now);
    let s = with_status(&s, &d);
    let h = hpa(&settings(5, 10, Some(60), None), true);
    let again = decide_at(&s, Some(&h), now);
    assert_eq!(again.hpa, HpaChange::Leave);
    assert_eq!(again.status, None);
    assert_eq!(again.finalizer, FinalizerChange::Keep);
    assert!(again.notices.is_empty() && again.hpa_notice.is_none());
    // Later, inside the same range: still nothing.
    let later = decide_at(&s, Some(&h), "2026-05-04T11:59:59Z");
    assert_eq!((later.hpa, later.status), (HpaChange::Leave, None));
    assert_eq!(later.requeue_after, Some(Duration::from_secs(1)));
}

#[test]
fn boundary_applies_only_the_owned_fields_and_moves_last_updated_time() {
    let s = scaler(office());
    let inside = decide_at(&s, None, "2026-05-04T09:00:00Z");
    let s = with_status(&s, &inside);
    let h = hpa(&settings(5, 10, Some(60), None), true);
    let d = decide_at(&s, Some(&h), "2026-05-04T12:00:00Z");
    let HpaChange::Apply { fields, reason } = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    assert_eq!(*reason, WriteReason::Transition);
    assert_eq!(
        fields.apply_patch("web"),
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": "web"},
               "spec": {"minReplicas": 2, "maxReplicas": 10, "metrics": [{"type": "Resource",
                   "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]}})
    );
    assert_eq!(
        d.hpa_notice.as_ref().unwrap().note,
        "HPA shop/web: minReplicas 5 -> 2 (defaults in force)"
    );
    let status = d.status.unwrap();
    assert_eq!(status.matched_range, None);
    assert!(!status.time_range_match);
    assert_eq!(
        from_k8s_time(status.last_updated_time.as_ref().unwrap()),
        utc("2026-05-04T12:00:00Z")
    );
    // Next boundary tomorrow 08:00Z, capped by the safety net.
    assert_eq!(d.requeue_after, Some(MAX_REQUEUE));
}

#[test]
fn drift_of_an_owned_field_is_corrected_and_other_fields_do_not_matter() {
    let s = scaler(office());
    let first = decide_at(&s, None, "2026-05-04T09:00:00Z");
    let s = with_status(&s, &first);
    let mut h = hpa(&settings(7, 10, Some(60), None), true);
    let d = decide_at(&s, Some(&h), "2026-05-04T09:30:00Z");
    assert!(
        matches!(
            d.hpa,
            HpaChange::Apply {
                reason: WriteReason::Drift,
                ..
            }
        ),
        "{:?}",
        d.hpa
    );
    // Fields ebb does not own (behavior, scaleTargetRef, labels) are not compared.
    h.spec.as_mut().unwrap().min_replicas = Some(5);
    h.spec.as_mut().unwrap().scale_target_ref.name = "other".into();
    h.spec.as_mut().unwrap().behavior = Some(Default::default());
    h.metadata.labels = Some([("team".to_owned(), "a".to_owned())].into());
    assert_eq!(
        decide_at(&s, Some(&h), "2026-05-04T09:30:00Z").hpa,
        HpaChange::Leave
    );
}

#[test]
fn no_metrics_matches_the_api_servers_default_cpu_metric() {
    let fields = OwnedFields::from_settings(&settings(2, 4, None, None));
    assert!(fields.metrics.is_empty());
    let defaulted = hpa(&settings(2, 4, Some(80), None), true);
    assert!(fields.matches(defaulted.spec.as_ref().unwrap()));
    let other = hpa(&settings(2, 4, Some(70), None), true);
    assert!(!fields.matches(other.spec.as_ref().unwrap()));
    // A metric of another shape is replaced.
    let mut custom = hpa(&settings(2, 4, Some(60), None), true);
    custom.spec.as_mut().unwrap().metrics.as_mut().unwrap()[0].type_ = "Pods".into();
    let want = OwnedFields::from_settings(&settings(2, 4, Some(60), None));
    assert!(!want.matches(custom.spec.as_ref().unwrap()));
    // Order of cpu and memory does not matter.
    let both = OwnedFields::from_settings(&settings(2, 4, Some(60), Some(70)));
    let mut reversed = hpa(&settings(2, 4, Some(60), Some(70)), true);
    reversed
        .spec
        .as_mut()
        .unwrap()
        .metrics
        .as_mut()
        .unwrap()
        .reverse();
    assert!(both.matches(reversed.spec.as_ref().unwrap()));
}

#[test]
fn kill_switch_leaves_the_hpa_and_says_so() {
    let s = scaler(office());
    let h = hpa_with(
        &OwnedFields::from_settings(&settings(9, 9, None, None)),
        None,
        json!({MANAGED_ANNOTATION: "false"}),
    );
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!(d.hpa, HpaChange::Leave);
    assert_eq!(d.state, ManagedState::Unmanaged);
    assert_eq!(d.finalizer, FinalizerChange::Keep);
    let status = d.status.unwrap();
    assert_eq!(condition_of(&status, CONDITION_UNMANAGED).0, "True");
    assert!(
        condition_of(&status, CONDITION_UNMANAGED)
            .2
            .contains("service-scaler.kubernetes.io/managed: \"false\"")
    );
    assert_eq!(condition_of(&status, CONDITION_READY).1, "Unmanaged");
    assert_eq!(status.last_known_config, None);
    // Only that annotation counts: "true" or another annotation manages as usual.
    for annotations in [
        json!({MANAGED_ANNOTATION: "true"}),
        json!({"other/managed": "false"}),
    ] {
        let h = hpa_with(
            &OwnedFields::from_settings(&settings(9, 9, None, None)),
            Some("uid-1"),
            annotations,
        );
        assert!(matches!(
            decide_at(&s, Some(&h), "2026-05-04T09:00:00Z").hpa,
            HpaChange::Apply { .. }
        ));
    }
}

#[test]
fn pause_writes_only_the_paused_condition_and_requeues_at_its_end() {
    let mut s = scaler(office());
    let first = decide_at(&s, None, "2026-05-04T09:00:00Z");
    s = with_status(&s, &first);
    let before = s.status.clone().unwrap();
    s.metadata.annotations = Some(
        [(
            PAUSED_UNTIL_ANNOTATION.to_owned(),
            "2026-05-04T12:30:00Z".to_owned(),
        )]
        .into(),
    );
    let h = hpa(&settings(5, 10, Some(60), None), true);
    let d = decide_at(&s, Some(&h), "2026-05-04T12:00:00Z");
    assert_eq!(d.hpa, HpaChange::Leave);
    assert_eq!(d.state, ManagedState::Paused);
    assert_eq!(d.requeue_after, Some(Duration::from_secs(1800)));
    let status = d.status.unwrap();
    assert_eq!(condition_of(&status, PAUSED).0, "True");
    let mut without_paused = status.clone();
    without_paused.conditions.retain(|c| c.type_ != PAUSED);
    let mut before_without = before.clone();
    before_without.conditions.retain(|c| c.type_ != PAUSED);
    without_paused.last_updated_time = before.last_updated_time.clone();
    assert_eq!(without_paused, before_without);
    // Paused indefinitely: wait for a change.
    s.metadata.annotations = Some([(PAUSED_ANNOTATION.to_owned(), "true".to_owned())].into());
    assert_eq!(
        decide_at(&s, Some(&h), "2026-05-04T12:00:00Z").requeue_after,
        None
    );
}

/// An HPA at the defaults (2..10 cpu 60, so 09:00 inside the office range wants min 5), adopted,
/// carrying `annotations`.
fn paused_hpa(annotations: Value) -> HorizontalPodAutoscaler {
    hpa_with(
        &OwnedFields::from_settings(&settings(2, 10, Some(60), None)),
        None,
        annotations,
    )
}

#[test]
fn hpa_paused_by_annotation_is_left_alone_until_the_annotation_goes() {
    let s = scaler(office());
    let h = paused_hpa(json!({PAUSED_ANNOTATION: "true"}));
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!(d.hpa, HpaChange::Leave);
    assert_eq!(d.finalizer, FinalizerChange::Keep);
    assert_eq!(d.state, ManagedState::Paused);
    assert_eq!(d.hpa_notice, None);
    // No end: only a change (the HPA watch) brings it back.
    assert_eq!(d.requeue_after, None);
    let status = d.status.clone().unwrap();
    assert_eq!(
        condition_of(&status, PAUSED),
        (
            "True",
            "Paused",
            "HorizontalPodAutoscaler shop/web: paused by annotation scaling.ebb.dev/paused"
        )
    );
    assert_eq!(status.last_known_config, None, "nothing else is written");
    assert_eq!(d.notices.len(), 1);
    assert_eq!(
        (d.notices[0].kind, d.notices[0].reason, d.notices[0].action),
        (EventKind::Normal, "Paused", "Pause")
    );
    // Reported once: the next reconcile writes nothing and records nothing.
    let again = decide_at(&with_status(&s, &d), Some(&h), "2026-05-04T09:05:00Z");
    assert_eq!(
        (again.hpa, again.status, again.notices),
        (HpaChange::Leave, None, vec![])
    );
    // `paused: "false"` is no pause.
    let h = paused_hpa(json!({PAUSED_ANNOTATION: "false"}));
    assert!(matches!(
        decide_at(&s, Some(&h), "2026-05-04T09:00:00Z").hpa,
        HpaChange::Apply { .. }
    ));
}

#[test]
fn hpa_paused_until_a_future_instant_requeues_exactly_then() {
    let s = scaler(office());
    let h = paused_hpa(json!({PAUSED_UNTIL_ANNOTATION: "2026-05-04T10:30:00Z"}));
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!(d.hpa, HpaChange::Leave);
    assert_eq!(d.state, ManagedState::Paused);
    // 90 minutes away: requeued at the safety cap, then exactly at the end.
    assert_eq!(d.requeue_after, Some(MAX_REQUEUE));
    assert_eq!(
        decide_at(&s, Some(&h), "2026-05-04T10:00:00Z").requeue_after,
        Some(Duration::from_secs(1800))
    );
    let status = d.status.unwrap();
    assert_eq!(
        condition_of(&status, PAUSED),
        (
            "True",
            "Paused",
            "HorizontalPodAutoscaler shop/web: paused until 2026-05-04T10:30:00Z by annotation \
             scaling.ebb.dev/paused-until"
        )
    );
    // One second before the end: still paused, requeued in one second.
    let d = decide_at(&s, Some(&h), "2026-05-04T10:29:59Z");
    assert_eq!(d.hpa, HpaChange::Leave);
    assert_eq!(d.requeue_after, Some(Duration::from_secs(1)));
}

#[test]
fn hpa_pause_that_has_expired_writes_again_and_clears_the_condition() {
    let s = scaler(office());
    let h = paused_hpa(json!({PAUSED_UNTIL_ANNOTATION: "2026-05-04T10:30:00Z"}));
    let paused = decide_at(&s, Some(&h), "2026-05-04T10:29:59Z");
    let s = with_status(&s, &paused);
    // At exactly `paused-until` the pause is over.
    let d = decide_at(&s, Some(&h), "2026-05-04T10:30:00Z");
    assert_eq!(d.state, ManagedState::Active);
    let HpaChange::Apply { fields, reason } = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    assert_eq!((fields.min_replicas, fields.max_replicas), (5, 10));
    assert_eq!(*reason, WriteReason::Transition);
    let status = d.status.unwrap();
    assert_eq!(condition_of(&status, PAUSED).0, "False");
    assert_eq!(condition_of(&status, CONDITION_READY).0, "True");
}

#[test]
fn hpa_with_an_invalid_paused_until_counts_as_paused() {
    let s = scaler(office());
    let h = paused_hpa(json!({PAUSED_UNTIL_ANNOTATION: "after the sale"}));
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!(d.hpa, HpaChange::Leave);
    assert_eq!(d.state, ManagedState::Paused);
    assert_eq!(d.requeue_after, None, "no end known: wait for a fix");
    let status = d.status.unwrap();
    let (st, reason, message) = condition_of(&status, PAUSED);
    assert_eq!((st, reason), ("True", "InvalidPausedUntil"));
    assert!(
        message.starts_with(
            "HorizontalPodAutoscaler shop/web: annotation scaling.ebb.dev/paused-until is not an \
             RFC 3339 instant (\"after the sale\")"
        ),
        "{message}"
    );
    assert_eq!(
        (d.notices[0].kind, d.notices[0].reason),
        (EventKind::Warning, "InvalidPausedUntil")
    );
}

#[test]
fn scaler_pause_is_reported_before_an_hpa_pause() {
    let mut s = scaler(office());
    s.metadata.annotations = Some([(PAUSED_ANNOTATION.to_owned(), "true".to_owned())].into());
    let h = paused_hpa(json!({PAUSED_UNTIL_ANNOTATION: "2026-05-04T10:30:00Z"}));
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!(d.hpa, HpaChange::Leave);
    let status = d.status.unwrap();
    assert_eq!(
        condition_of(&status, PAUSED).2,
        "ServiceScaler shop/web: paused by annotation scaling.ebb.dev/paused"
    );
}

#[test]
fn hpa_pause_beats_the_kill_switch_and_dry_run_alike_no_write() {
    let s = scaler(office());
    let h = paused_hpa(json!({PAUSED_ANNOTATION: "true", MANAGED_ANNOTATION: "false"}));
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!((d.hpa, d.state), (HpaChange::Leave, ManagedState::Paused));
    let h = paused_hpa(json!({PAUSED_ANNOTATION: "true"}));
    let d = decide_scaling(
        &Observed {
            calendars: &Calendars::new(),
            scaler: &s,
            hpa: Some(&h),
            scale: None,
            dry_run: true,
            ledger: None,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!((d.hpa, d.state), (HpaChange::Leave, ManagedState::Paused));
}

#[test]
fn deletion_leaves_a_paused_hpa_as_it_is() {
    let mut s = scaler(office());
    s.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    let adopted = hpa_with(
        &OwnedFields::from_settings(&settings(5, 10, Some(60), None)),
        None,
        json!({PAUSED_UNTIL_ANNOTATION: "2026-05-04T10:30:00Z"}),
    );
    let observed = Observed {
        calendars: &Calendars::new(),
        scaler: &s,
        hpa: Some(&adopted),
        scale: None,
        dry_run: false,
        ledger: None,
    };
    let plan = decide_deletion(&observed, utc("2026-05-04T09:00:00Z"));
    assert_eq!((plan.restore, plan.remove_finalizer), (None, true));
    assert_eq!(plan.notices[0].reason, "NotRestored");
    assert!(
        plan.notices[0]
            .note
            .contains("HorizontalPodAutoscaler shop/web: paused until 2026-05-04T10:30:00Z"),
        "{}",
        plan.notices[0].note
    );
    // Once the pause has expired, the defaults are restored.
    let plan = decide_deletion(&observed, utc("2026-05-04T10:30:00Z"));
    assert_eq!(
        plan.restore,
        Some(OwnedFields::from_settings(&settings(2, 10, Some(60), None)))
    );
}

#[test]
fn invalid_spec_leaves_the_hpa_and_reports_field_and_rule() {
    let mut value = office();
    value["timeRangeSpec"][0]["timeZone"] = json!("Europe/Nowhere");
    value["timeRangeSpec"][0]["kind"] = json!("LocalTime");
    value["timeRangeSpec"][0]["from"] = json!("08:00");
    value["timeRangeSpec"][0]["to"] = json!("12:00");
    let s = scaler(value);
    let h = hpa(&settings(3, 3, None, None), false);
    let d = decide_at(&s, Some(&h), "2026-05-04T09:00:00Z");
    assert_eq!(
        (d.hpa.clone(), d.finalizer, d.state, d.requeue_after),
        (
            HpaChange::Leave,
            FinalizerChange::Keep,
            ManagedState::Invalid,
            None
        )
    );
    let status = d.status.unwrap();
    let (st, reason, message) = condition_of(&status, CONDITION_SPEC_VALID);
    assert_eq!((st, reason), ("False", "InvalidSpec"));
    assert!(
        message.starts_with("spec.timeRangeSpec[0].timeZone: unknown time zone \"Europe/Nowhere\""),
        "{message}"
    );
    assert_eq!(condition_of(&status, CONDITION_READY).0, "False");
    assert_eq!(d.notices[0].kind, EventKind::Warning);
}

/// A range naming a HolidayCalendar: missing, the spec is invalid at that entry and the HPA is
/// left as it was (fail safe); held, its dates close the range as `excludeDates` would; holding
/// a date that is none, the calendar is named with the date.
#[test]
fn a_holiday_calendar_excludes_its_dates_and_a_missing_one_leaves_the_hpa() {
    let mut value = office();
    value["timeRangeSpec"][0]["excludeCalendars"] = json!(["ch"]);
    let s = scaler(value.clone());
    let h = hpa(&settings(2, 10, Some(60), None), false);
    let at = |calendars: &Calendars, now: &str| {
        decide_scaling(
            &Observed {
                calendars,
                scaler: &s,
                hpa: Some(&h),
                scale: None,
                dry_run: false,
                ledger: None,
            },
            utc(now),
        )
    };
    // Christmas Friday 09:00Z: inside 08:00Z-12:00Z.
    let missing = at(&Calendars::new(), "2026-12-25T09:00:00Z");
    assert_eq!(
        (missing.hpa.clone(), missing.state),
        (HpaChange::Leave, ManagedState::Invalid)
    );
    let (st, _, message) = condition_of(missing.status.as_ref().unwrap(), CONDITION_SPEC_VALID);
    assert_eq!(
        (st, message),
        (
            "False",
            "spec.timeRangeSpec[0].excludeCalendars[0]: HolidayCalendar \"ch\" not found"
        )
    );
    assert_eq!(missing.notices[0].kind, EventKind::Warning);

    let mut ch = Calendars::new();
    ch.insert("ch", &["2026-12-24/2026-12-26"]);
    let mut inline = value.clone();
    inline["timeRangeSpec"][0]["excludeCalendars"] = json!([]);
    inline["timeRangeSpec"][0]["excludeDates"] = json!(["2026-12-24/2026-12-26"]);
    let inline = scaler(inline);
    for now in [
        "2026-12-23T09:00:00Z",
        "2026-12-25T09:00:00Z",
        "2026-12-27T09:00:00Z",
    ] {
        let named = at(&ch, now);
        let own = decide_at(&inline, Some(&h), now);
        assert_eq!(named.hpa, own.hpa, "{now}");
        assert_eq!(
            named.status.as_ref().map(|s| &s.next_transitions),
            own.status.as_ref().map(|s| &s.next_transitions),
            "{now}"
        );
    }
    // On the holiday the range is not in force: the defaults hold.
    let holiday = at(&ch, "2026-12-25T09:00:00Z");
    assert_eq!(holiday.status.as_ref().unwrap().matched_range, None);
    assert_eq!(
        at(&ch, "2026-12-23T09:00:00Z")
            .status
            .unwrap()
            .matched_range,
        Some(0)
    );

    let mut broken = Calendars::new();
    broken.insert("ch", &["2026-12-32"]);
    let invalid = at(&broken, "2026-12-23T09:00:00Z");
    let (_, _, message) = condition_of(invalid.status.as_ref().unwrap(), CONDITION_SPEC_VALID);
    assert!(
        message.starts_with(
            "spec.timeRangeSpec[0].excludeCalendars[0]: HolidayCalendar \"ch\": invalid excluded date \"2026-12-32\""
        ),
        "{message}"
    );
    assert_eq!(invalid.hpa, HpaChange::Leave);
}

#[test]
fn dry_run_records_the_intended_change_and_writes_nothing_else() {
    let s = scaler(office());
    let h = hpa(&settings(2, 10, Some(60), None), false);
    let d = decide_scaling(
        &Observed {
            calendars: &Calendars::new(),
            scaler: &s,
            hpa: Some(&h),
            scale: None,
            dry_run: true,
            ledger: None,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!(
        (d.hpa.clone(), d.finalizer, d.state),
        (
            HpaChange::Leave,
            FinalizerChange::Keep,
            ManagedState::DryRun
        )
    );
    let status = d.status.clone().unwrap();
    let (st, reason, message) = condition_of(&status, CONDITION_READY);
    assert_eq!((st, reason), ("False", "DryRun"));
    assert_eq!(
        message,
        "dry run: would update HPA shop/web: minReplicas 2 -> 5 (timeRangeSpec[0] in force)"
    );
    assert_eq!(status.last_known_config, None);
    assert_eq!(
        d.notices.iter().map(|n| n.reason).collect::<Vec<_>>(),
        ["DryRun"]
    );
    // Again: no new status, no new Event.
    let s = with_status(&s, &d);
    let again = decide_scaling(
        &Observed {
            calendars: &Calendars::new(),
            scaler: &s,
            hpa: Some(&h),
            scale: None,
            dry_run: true,
            ledger: None,
        },
        utc("2026-05-04T09:10:00Z"),
    );
    assert_eq!(again.status, None);
    assert!(again.notices.is_empty());
}

#[test]
fn adopted_hpa_gets_the_finalizer_and_an_owned_one_does_not() {
    let s = scaler(office());
    let adopted = hpa(&settings(5, 10, Some(60), None), false);
    assert_eq!(
        decide_at(&s, Some(&adopted), "2026-05-04T09:00:00Z").finalizer,
        FinalizerChange::Add
    );
    let mut with_finalizer = s.clone();
    with_finalizer.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    assert_eq!(
        decide_at(&with_finalizer, Some(&adopted), "2026-05-04T09:00:00Z").finalizer,
        FinalizerChange::Keep
    );
    let owned = hpa(&settings(5, 10, Some(60), None), true);
    assert_eq!(
        decide_at(&with_finalizer, Some(&owned), "2026-05-04T09:00:00Z").finalizer,
        FinalizerChange::Remove
    );
    assert_eq!(
        decide_at(&s, Some(&owned), "2026-05-04T09:00:00Z").finalizer,
        FinalizerChange::Keep
    );
}

#[test]
fn deletion_restores_an_adopted_hpa_to_the_defaults_then_drops_the_finalizer() {
    let mut s = scaler(office());
    s.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    let adopted = hpa(&settings(5, 10, Some(60), None), false);
    let plan = decide_deletion(
        &Observed {
            calendars: &Calendars::new(),
            scaler: &s,
            hpa: Some(&adopted),
            scale: None,
            dry_run: false,
            ledger: None,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!(
        plan.restore,
        Some(OwnedFields::from_settings(&settings(2, 10, Some(60), None)))
    );
    assert!(plan.remove_finalizer);
    assert_eq!(plan.notices[0].reason, "Restored");
    // Already at the defaults: no write.
    let restored = hpa(&settings(2, 10, Some(60), None), false);
    let plan = decide_deletion(
        &Observed {
            calendars: &Calendars::new(),
            scaler: &s,
            hpa: Some(&restored),
            scale: None,
            dry_run: false,
            ledger: None,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!((plan.restore, plan.remove_finalizer), (None, true));
    // Owned: the garbage collector's job. Kill switch, dry run: left alone.
    let owned = hpa(&settings(5, 10, Some(60), None), true);
    let plan = decide_deletion(
        &Observed {
            calendars: &Calendars::new(),
            scaler: &s,
            hpa: Some(&owned),
            scale: None,
            dry_run: false,
            ledger: None,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!((plan.restore, plan.remove_finalizer), (None, true));
    let killed = hpa_with(
        &OwnedFields::from_settings(&settings(5, 10, None, None)),
        None,
        json!({MANAGED_ANNOTATION: "false"}),
    );
    let plan = decide_deletion(
        &Observed {
            calendars: &Calendars::new(),
            scaler: &s,
            hpa: Some(&killed),
            scale: None,
            dry_run: false,
            ledger: None,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!((plan.restore, plan.remove_finalizer), (None, true));
    let plan = decide_deletion(
        &Observed {
            calendars: &Calendars::new(),
            scaler: &s,
            hpa: Some(&adopted),
            scale: None,
            dry_run: true,
            ledger: None,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!((plan.restore, plan.remove_finalizer), (None, true));
    assert_eq!(plan.notices[0].reason, "DryRun");
    // Without our finalizer: nothing at all.
    s.metadata.finalizers = None;
    let plan = decide_deletion(
        &Observed {
            calendars: &Calendars::new(),
            scaler: &s,
            hpa: Some(&adopted),
            scale: None,
            dry_run: false,
            ledger: None,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!((plan.restore, plan.remove_finalizer), (None, false));
}

#[test]
fn ramp_spreads_a_min_replicas_decrease_from_the_boundary_and_requeues_at_each_step() {
    // The workshop ends at 16:00Z: 12..40 -> 2..20, ramped over 10m.
    let s = scaler(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 20, "targetCPUUtilization": 70},
        "ramp": "10m",
        "timeRangeSpec": [{"kind": "ZonedDateTime", "from": "2026-12-03T08:30:00+01:00",
            "to": "2026-12-03T17:00:00+01:00", "replicaSpec": {"hpa": {"minReplicas": 12, "maxReplicas": 40}}}]
    }));
    let before = decide_at(&s, None, "2026-12-03T15:00:00Z");
    let mut s = with_status(&s, &before);
    let mut h = hpa(&settings(12, 40, Some(70), None), true);
    let mut seen = Vec::new();
    let mut now = utc("2026-12-03T16:00:00Z");
    for _ in 0..12 {
        let d = decide_scaling(
            &Observed {
                calendars: &Calendars::new(),
                scaler: &s,
                hpa: Some(&h),
                scale: None,
                dry_run: false,
                ledger: None,
            },
            now,
        );
        if let HpaChange::Apply { fields, reason } = &d.hpa {
            assert_eq!(fields.max_replicas, 20, "max changes at once");
            seen.push((now, fields.min_replicas, *reason));
            h = hpa_with(fields, Some("uid-1"), json!({}));
        }
        s = with_status(&s, &d);
        let Some(wait) = d.requeue_after else { break };
        now += SignedDuration::try_from(wait).unwrap();
        if now >= utc("2026-12-03T16:30:00Z") {
            break;
        }
    }
    let start = utc("2026-12-03T16:00:00Z");
    let expected: Vec<_> = (0..10)
        .map(|k| {
            (
                start + SignedDuration::from_mins(k),
                11 - i32::try_from(k).unwrap(),
                if k < 9 {
                    WriteReason::Ramp
                } else {
                    WriteReason::Transition
                },
            )
        })
        .collect();
    assert_eq!(seen, expected);
    assert_eq!(s.status.as_ref().unwrap().ramp, None);
    assert_eq!(
        s.status
            .as_ref()
            .unwrap()
            .last_known_config
            .as_ref()
            .unwrap()
            .min_replicas,
        2
    );
}

#[test]
fn lead_steps_the_hpa_up_before_the_boundary_and_requeues_at_each_step() {
    // The workshop starts at 07:30Z: 2..20 -> 12..40, led over the default 30m; the ramp (10m)
    // does not spread this increase after the boundary.
    let s = scaler(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 20, "targetCPUUtilization": 70},
        "ramp": "10m",
        "timeRangeSpec": [{"kind": "ZonedDateTime", "from": "2026-12-03T08:30:00+01:00",
            "to": "2026-12-03T17:00:00+01:00", "replicaSpec": {"hpa": {"minReplicas": 12, "maxReplicas": 40}}}]
    }));
    let before = decide_at(&s, None, "2026-12-03T06:00:00Z");
    let mut s = with_status(&s, &before);
    let mut h = hpa(&settings(2, 20, Some(70), None), true);
    let mut seen = Vec::new();
    let mut wakes = Vec::new();
    let mut now = utc("2026-12-03T06:50:00Z");
    while now <= utc("2026-12-03T07:45:00Z") {
        let d = decide_scaling(
            &Observed {
                calendars: &Calendars::new(),
                scaler: &s,
                hpa: Some(&h),
                scale: None,
                dry_run: false,
                ledger: None,
            },
            now,
        );
        if let HpaChange::Apply { fields, reason } = &d.hpa {
            seen.push((now, fields.min_replicas, fields.max_replicas, *reason));
            h = hpa_with(fields, Some("uid-1"), json!({}));
        }
        s = with_status(&s, &d);
        let wait = d.requeue_after.unwrap();
        now += SignedDuration::try_from(wait).unwrap();
        wakes.push(now);
    }
    let at = |t: &str| utc(&format!("2026-12-03T{t}Z"));
    assert_eq!(
        seen,
        [
            (at("07:00:00"), 4, 24, WriteReason::Lead),
            (at("07:05:00"), 6, 27, WriteReason::Lead),
            (at("07:10:00"), 7, 30, WriteReason::Lead),
            (at("07:15:00"), 9, 34, WriteReason::Lead),
            (at("07:20:00"), 11, 37, WriteReason::Lead),
            (at("07:25:00"), 12, 40, WriteReason::Lead),
        ]
    );
    // Woken at each step, then at the boundary (no write: already there, and no ramp up).
    assert_eq!(
        wakes[..8],
        [
            at("07:00:00"),
            at("07:05:00"),
            at("07:10:00"),
            at("07:15:00"),
            at("07:20:00"),
            at("07:25:00"),
            at("07:30:00"),
            at("08:30:00"),
        ]
    );
    let status = s.status.unwrap();
    assert_eq!(status.ramp, None);
    assert_eq!(status.matched_range, Some(0));
    // The preview names schedule boundaries only: lead steps are not transitions.
    assert_eq!(
        from_k8s_time(&before.status.unwrap().next_transitions[0].at),
        at("07:30:00")
    );
}

#[test]
fn lead_is_path_independent_a_fresh_controller_writes_the_step_in_force() {
    let spec = json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 20},
        "timeRangeSpec": [{"kind": "ZonedTime", "from": "07:30Z", "to": "16:00Z",
            "replicaSpec": {"hpa": {"minReplicas": 12, "maxReplicas": 40}}}]
    });
    let h = hpa(&settings(2, 20, None, None), true);
    // No status, 07:17: step 4 (k = floor(17 * 6 / 30) + 1), whatever happened before.
    let d = decide_at(&scaler(spec.clone()), Some(&h), "2026-05-04T07:17:00Z");
    let HpaChange::Apply { fields, reason } = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    assert_eq!((fields.min_replicas, fields.max_replicas), (9, 34));
    assert_eq!(*reason, WriteReason::Lead);
    assert_eq!(d.requeue_after, Some(Duration::from_secs(180)));
    let status = d.status.unwrap();
    assert!(
        condition_of(&status, CONDITION_READY)
            .2
            .contains("stepping up ahead of a coming increase"),
        "{:?}",
        condition_of(&status, CONDITION_READY)
    );
    assert_eq!(status.last_known_config, Some(settings(9, 34, None, None)));
    // leadTime 0s: the schedule alone, woken at the boundary.
    let mut off = spec;
    off["leadTime"] = json!("0s");
    let d = decide_at(&scaler(off), Some(&h), "2026-05-04T07:17:00Z");
    assert_eq!(d.hpa, HpaChange::Leave);
    assert_eq!(d.requeue_after, Some(Duration::from_secs(13 * 60)));
}

#[test]
fn ramp_state_is_in_status_and_a_restart_continues_it() {
    let s = scaler(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 20}, "ramp": "10m",
        "timeRangeSpec": [{"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
            "replicaSpec": {"hpa": {"minReplicas": 12}}}]
    }));
    let h = hpa(&settings(12, 20, None, None), true);
    // A fresh controller 3 minutes after the 12:00 boundary (no status): ramp down from the
    // HPA's value.
    let d = decide_at(&s, Some(&h), "2026-05-04T12:03:00Z");
    let HpaChange::Apply { fields, .. } = &d.hpa else {
        panic!()
    };
    assert_eq!(fields.min_replicas, 8);
    let ramp = d.status.as_ref().unwrap().ramp.clone().unwrap();
    assert_eq!((ramp.from_min_replicas, ramp.to_min_replicas), (12, 2));
    assert_eq!(from_k8s_time(&ramp.started_at), utc("2026-05-04T12:00:00Z"));
    assert_eq!(
        condition_of(d.status.as_ref().unwrap(), CONDITION_READY).1,
        "Ramping"
    );
    // Long after the boundary: at once.
    let d = decide_at(&s, Some(&h), "2026-05-04T13:00:00Z");
    let HpaChange::Apply { fields, .. } = &d.hpa else {
        panic!()
    };
    assert_eq!(fields.min_replicas, 2);
    assert_eq!(d.status.unwrap().ramp, None);
}

#[test]
fn ramped_min_never_exceeds_the_new_max() {
    let s = scaler(json!({
        "hpa": {"minReplicas": 12, "maxReplicas": 40}, "ramp": "10m",
        "timeRangeSpec": [{"kind": "ZonedTime", "from": "20:00Z", "to": "06:00Z",
            "replicaSpec": {"hpa": {"minReplicas": 1, "maxReplicas": 4}}}]
    }));
    let h = hpa(&settings(12, 40, None, None), true);
    let d = decide_at(&s, Some(&h), "2026-05-04T20:00:00Z");
    let HpaChange::Apply { fields, .. } = &d.hpa else {
        panic!()
    };
    assert_eq!((fields.min_replicas, fields.max_replicas), (4, 4));
}

#[test]
fn requeue_rounds_up_and_is_capped() {
    let now = utc("2026-01-01T00:00:00Z");
    assert_eq!(requeue_after(now, None), MAX_REQUEUE);
    assert_eq!(
        requeue_after(now, Some(now + SignedDuration::from_nanos(1))),
        Duration::from_millis(1)
    );
    assert_eq!(
        requeue_after(now, Some(now - SignedDuration::from_secs(5))),
        Duration::from_millis(1)
    );
    assert_eq!(
        requeue_after(now, Some(now + SignedDuration::from_secs(90))),
        Duration::from_secs(90)
    );
    assert_eq!(
        requeue_after(now, Some(now + SignedDuration::from_hours(24 * 3))),
        MAX_REQUEUE
    );
}

#[test]
fn overlapping_ranges_get_a_condition_naming_them_once_per_generation() {
    let mut value = office();
    value["timeRangeSpec"].as_array_mut().unwrap().push(
        json!({"kind": "ZonedTime", "from": "11:00Z", "to": "13:00Z",
                     "replicaSpec": {"hpa": {"minReplicas": 7}}}),
    );
    let s = scaler(value);
    let d = decide_at(&s, None, "2026-05-04T11:30:00Z");
    let status = d.status.clone().unwrap();
    assert_eq!(
        condition_of(&status, CONDITION_RANGES_OVERLAP),
        (
            "True",
            "Overlap",
            "timeRangeSpec[0] and timeRangeSpec[1] overlap; the first in list order wins"
        )
    );
    assert!(
        d.notices
            .iter()
            .any(|n| n.reason == "RangesOverlap" && n.kind == EventKind::Warning)
    );
    // The first range wins inside the overlap.
    assert_eq!(status.matched_range, Some(0));
    let again = decide_at(&with_status(&s, &d), None, "2026-05-04T11:31:00Z");
    assert!(again.notices.is_empty());
}

#[test]
fn overlap_messages_stay_short() {
    let pairs: Vec<(usize, usize)> = (1..30).map(|j| (0, j)).collect();
    let message = overlap_message(&pairs, &[]).unwrap();
    assert!(message.ends_with("timeRangeSpec[0] and timeRangeSpec[10] overlap (and 19 more pairs); the first in list order wins"), "{message}");
    assert_eq!(overlap_message(&[], &[]), None);
}

#[test]
fn metrics_other_than_cpu_and_memory_are_kept_and_not_compared() {
    let s = scaler(office());
    let first = decide_at(&s, None, "2026-05-04T09:00:00Z");
    let s = with_status(&s, &first);
    let queue_depth = json!({"type": "External", "external": {
        "metric": {"name": "provisioner_queue_depth"},
        "target": {"type": "AverageValue", "averageValue": "2"}}});
    let mut h = hpa(&settings(5, 10, Some(60), None), true);
    let foreign: MetricSpec = serde_json::from_value(queue_depth.clone()).unwrap();
    h.spec
        .as_mut()
        .unwrap()
        .metrics
        .as_mut()
        .unwrap()
        .push(foreign);
    // In sync apart from the foreign metric: nothing to write.
    assert_eq!(
        decide_at(&s, Some(&h), "2026-05-04T09:30:00Z").hpa,
        HpaChange::Leave
    );
    // At the boundary the cpu/memory part changes and the foreign metric is sent back as it is.
    let d = decide_at(&s, Some(&h), "2026-05-04T12:00:00Z");
    let HpaChange::Apply { fields, .. } = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    assert_eq!(
        fields.apply_patch("web")["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
                 "target": {"type": "Utilization", "averageUtilization": 60}}}, queue_depth])
    );
    // Only a foreign metric and no cpu/memory target: no server default is implied.
    let none = OwnedFields::from_settings(&settings(2, 10, None, None));
    let mut only_foreign = hpa(&settings(2, 10, Some(80), None), true);
    assert!(none.matches(only_foreign.spec.as_ref().unwrap()));
    only_foreign
        .spec
        .as_mut()
        .unwrap()
        .metrics
        .as_mut()
        .unwrap()
        .push(
            serde_json::from_value(json!({"type": "Pods", "pods": {"metric": {"name": "rps"},
            "target": {"type": "AverageValue", "averageValue": "10"}}}))
            .unwrap(),
        );
    assert!(!none.matches(only_foreign.spec.as_ref().unwrap()));
}

#[test]
fn dst_boundaries_drive_the_hpa_writes_and_requeues() {
    // Nights in Zurich at minReplicas 1; across the spring-forward night the range closes at
    // 06:00 CEST (04:00Z), across the fall-back night at 06:00 CET (05:00Z).
    let s = scaler(
        json!({"hpa": {"minReplicas": 4, "maxReplicas": 8}, "leadTime": "0s", "timeRangeSpec": [
        {"kind": "LocalTime", "from": "22:00", "to": "06:00", "timeZone": "Europe/Zurich",
         "replicaSpec": {"hpa": {"minReplicas": 1}}}]}),
    );
    for (just_before, close) in [
        ("2026-03-29T03:59:59Z", "2026-03-29T04:00:00Z"),
        ("2026-10-25T04:59:59Z", "2026-10-25T05:00:00Z"),
    ] {
        let night = hpa(&settings(1, 8, None, None), true);
        let inside = decide_at(&s, Some(&night), just_before);
        assert_eq!(inside.hpa, HpaChange::Leave, "{just_before}");
        assert_eq!(
            inside.requeue_after,
            Some(Duration::from_secs(1)),
            "{just_before}"
        );
        let d = decide_at(&s, Some(&night), close);
        let HpaChange::Apply { fields, .. } = &d.hpa else {
            panic!("{close}: {:?}", d.hpa)
        };
        assert_eq!(fields.min_replicas, 4, "{close}");
    }
}

proptest! {
    /// DST, as a person at the wall clock expects: on a day with a gap or a fold, a `LocalTime`
    /// range `[from, to)` is open exactly from the first instant the zone's wall clock shows
    /// `from` or later until the first instant it shows `to` or later (a time in a gap means
    /// the end of the gap, a time in a fold its first occurrence). Checked minute by minute
    /// against the zone's clock, on both changes of three real zones (two hemispheres).
    #[test]
    fn dst_local_time_follows_the_wall_clock_through_gaps_and_folds(
        day in prop::sample::select(vec![
            ("Europe/Zurich", "2026-03-29"), ("Europe/Zurich", "2026-10-25"),
            ("America/New_York", "2026-03-08"), ("America/New_York", "2026-11-01"),
            ("Australia/Sydney", "2026-10-04"), ("Australia/Sydney", "2026-04-05"),
        ]),
        from in 0u32..95, span in 1u32..96,
    ) {
        let (zone, date) = day;
        let to = (from + span).min(95);
        prop_assume!(to > from);
        let hhmm = |q: u32| format!("{:02}:{:02}", q / 4, (q % 4) * 15);
        let s = local_range(&hhmm(from), &hhmm(to), zone);
        let tz: ebb_schedule::Zone = zone.parse().unwrap();
        let date: jiff::civil::Date = date.parse().unwrap();
        let quarter = |q: u32| {
            let q = i8::try_from(q).unwrap();
            jiff::civil::Time::new(q / 4, (q % 4) * 15, 0, 0).unwrap()
        };
        let (from_t, to_t) = (quarter(from), quarter(to));
        let wall = |u: Timestamp| tz.wall_clock(u);
        let start = date.to_zoned(jiff::tz::TimeZone::UTC).unwrap().timestamp()
            - SignedDuration::from_hours(16);
        let minutes: Vec<Timestamp> = (0..(56 * 60)).map(|m| start + SignedDuration::from_mins(m)).collect();
        let opening = minutes
            .iter()
            .find(|u| wall(**u).date() == date && wall(**u).time() >= from_t)
            .copied()
            .unwrap();
        let closing = minutes
            .iter()
            .filter(|u| **u >= opening)
            .find(|u| wall(**u).date() > date || (wall(**u).date() == date && wall(**u).time() >= to_t))
            .copied()
            .unwrap();
        for u in minutes.iter().filter(|u| wall(**u).date() == date) {
            let expected = opening <= *u && *u < closing;
            prop_assert_eq!(s.matched_at(*u).is_some(), expected, "{} {} at {} (wall {})", zone, date, u, wall(*u));
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Deletion policy, udaan's finalizer, range selection

/// What a deletion plan does, in short: (disown, restore, delete, remove_finalizer).
fn deletion_summary(plan: &DeletionDecision) -> (bool, bool, bool, bool) {
    (
        plan.disown,
        plan.restore.is_some(),
        plan.delete,
        plan.remove_finalizer,
    )
}

fn hpa_of(origin: HpaOrigin) -> HorizontalPodAutoscaler {
    let fields = OwnedFields::from_settings(&settings(5, 10, Some(60), None));
    match origin {
        HpaOrigin::Ebb => hpa_with(&fields, Some("uid-1"), json!({})),
        HpaOrigin::Udaan => hpa_with(&fields, None, json!({MANAGED_ANNOTATION: "true"})),
        HpaOrigin::Adopted => hpa_with(&fields, None, json!({})),
    }
}

#[test]
fn deletion_policy_decides_delete_restore_or_orphan_for_each_origin() {
    use DeletionPolicy::{Delete, Orphan, Restore};
    use HpaOrigin::{Adopted, Ebb, Udaan};
    // (policy, origin, needs the finalizer, (disown, restore, delete, remove_finalizer))
    let table = [
        // Unset: as udaan did for the HPAs it (or ebb) created, a restore for adopted ones.
        (None, Ebb, false, (false, false, false, true)),
        (None, Udaan, true, (false, false, true, true)),
        (None, Adopted, true, (false, true, false, true)),
        // Delete: the garbage collector deletes what ebb owns; ebb deletes the rest.
        (Some(Delete), Ebb, false, (false, false, false, true)),
        (Some(Delete), Udaan, true, (false, false, true, true)),
        (Some(Delete), Adopted, true, (false, false, true, true)),
        // Restore: even an HPA ebb created, disowned first so the garbage collector keeps it.
        (Some(Restore), Ebb, true, (true, true, false, true)),
        (Some(Restore), Udaan, true, (false, true, false, true)),
        (Some(Restore), Adopted, true, (false, true, false, true)),
        // Orphan: only ebb's owner reference goes.
        (Some(Orphan), Ebb, true, (true, false, false, true)),
        (Some(Orphan), Udaan, false, (false, false, false, true)),
        (Some(Orphan), Adopted, false, (false, false, false, true)),
    ];
    for (policy, origin, needs, expected) in table {
        let mut s = scaler(office());
        s.spec.deletion_policy = policy;
        let hpa = hpa_of(origin);
        assert_eq!(hpa_origin(&hpa, &s), origin);
        assert_eq!(
            needs_finalizer(policy, &hpa, &s),
            needs,
            "{policy:?} {origin:?}"
        );
        // The live reconcile adds the finalizer exactly when it is needed.
        let live = decide_at(&s, Some(&hpa), "2026-05-04T09:00:00Z");
        let want = if needs {
            FinalizerChange::Add
        } else {
            FinalizerChange::Keep
        };
        assert_eq!(live.finalizer, want, "{policy:?} {origin:?}");
        s.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
        let plan = decide_deletion(
            &Observed {
                calendars: &Calendars::new(),
                scaler: &s,
                hpa: Some(&hpa),
                scale: None,
                dry_run: false,
                ledger: None,
            },
            utc("2026-05-04T09:00:00Z"),
        );
        assert_eq!(deletion_summary(&plan), expected, "{policy:?} {origin:?}");
        if plan.restore.is_some() {
            assert_eq!(
                plan.restore,
                Some(OwnedFields::from_settings(&settings(2, 10, Some(60), None)))
            );
        }
        // A dry run only says what it would do.
        let dry = decide_deletion(
            &Observed {
                calendars: &Calendars::new(),
                scaler: &s,
                hpa: Some(&hpa),
                scale: None,
                dry_run: true,
                ledger: None,
            },
            utc("2026-05-04T09:00:00Z"),
        );
        assert_eq!(
            deletion_summary(&dry),
            (false, false, false, true),
            "{policy:?} {origin:?}"
        );
    }
}

#[test]
fn deletion_notices_name_what_was_done_and_skipped() {
    let mut s = scaler(office());
    s.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    s.spec.deletion_policy = Some(DeletionPolicy::Delete);
    let observed = |s: &ServiceScaler, hpa: &HorizontalPodAutoscaler| {
        decide_deletion(
            &Observed {
                calendars: &Calendars::new(),
                scaler: s,
                hpa: Some(hpa),
                scale: None,
                dry_run: false,
                ledger: None,
            },
            utc("2026-05-04T09:00:00Z"),
        )
    };
    let plan = observed(&s, &hpa_of(HpaOrigin::Adopted));
    assert_eq!(plan.notices[0].reason, "Deleted");
    // The kill switch wins over every policy: the HPA is left as it is.
    let killed = hpa_with(
        &OwnedFields::from_settings(&settings(5, 10, None, None)),
        None,
        json!({MANAGED_ANNOTATION: "false"}),
    );
    let plan = observed(&s, &killed);
    assert_eq!(deletion_summary(&plan), (false, false, false, true));
    assert_eq!(plan.notices[0].reason, "NotDeleted");
    s.spec.deletion_policy = Some(DeletionPolicy::Orphan);
    let plan = observed(&s, &hpa_of(HpaOrigin::Ebb));
    assert_eq!(plan.notices[0].reason, "Orphaned");
}

#[test]
fn deletion_keeps_other_owner_references_of_a_disowned_hpa() {
    let s = scaler(office());
    let mut hpa = hpa_of(HpaOrigin::Ebb);
    hpa.metadata.resource_version = Some("42".into());
    let patch = disown_patch(&hpa, &s);
    assert_eq!(
        patch,
        json!({"metadata": {"resourceVersion": "42", "ownerReferences": null}})
    );
    hpa.metadata
        .owner_references
        .get_or_insert_with(Vec::new)
        .push(
            serde_json::from_value(json!({
                "apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "uid-9",
            }))
            .unwrap(),
        );
    let patch = disown_patch(&hpa, &s);
    assert_eq!(patch["metadata"]["ownerReferences"][0]["uid"], "uid-9");
    assert_eq!(
        patch["metadata"]["ownerReferences"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn udaans_finalizer_is_honoured_then_removed_on_deletion() {
    let mut s = scaler(office());
    s.metadata.finalizers = Some(vec![UDAAN_FINALIZER.to_owned()]);
    // udaan's HPA: deleted, as udaan's finalizer stood for; then the finalizer goes.
    let udaans = hpa_of(HpaOrigin::Udaan);
    let plan = decide_deletion(
        &Observed {
            calendars: &Calendars::new(),
            scaler: &s,
            hpa: Some(&udaans),
            scale: None,
            dry_run: false,
            ledger: None,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!(deletion_summary(&plan), (false, false, true, true));
    // No HPA left: the finalizer goes all the same.
    let plan = decide_deletion(
        &Observed {
            calendars: &Calendars::new(),
            scaler: &s,
            hpa: None,
            scale: None,
            dry_run: false,
            ledger: None,
        },
        utc("2026-05-04T09:00:00Z"),
    );
    assert_eq!(deletion_summary(&plan), (false, false, false, true));
    // While the ServiceScaler lives, udaan's finalizer is no business of the live reconcile.
    let owned = hpa(&settings(5, 10, Some(60), None), true);
    assert_eq!(
        decide_at(&s, Some(&owned), "2026-05-04T09:00:00Z").finalizer,
        FinalizerChange::Keep
    );
    assert!(has_udaan_finalizer(&s));
}

fn overlapping(selection: Option<&str>) -> Schedule {
    let mut value = json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10},
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "08:00Z", "to": "18:00Z",
             "replicaSpec": {"hpa": {"minReplicas": 3}}},
            {"kind": "ZonedTime", "from": "12:00Z", "to": "14:00Z",
             "replicaSpec": {"hpa": {"minReplicas": 5}}},
        ]
    });
    if let Some(selection) = selection {
        value["rangeSelection"] = json!(selection);
    }
    schedule(value)
}

#[test]
fn range_selection_first_takes_the_first_overlapping_range_and_last_the_last() {
    let first = overlapping(None);
    assert_eq!(first.matched_at(utc("2026-05-04T13:00:00Z")), Some(0));
    assert_eq!(
        overlapping(Some("First")).matched_at(utc("2026-05-04T13:00:00Z")),
        Some(0)
    );
    let last = overlapping(Some("Last"));
    assert_eq!(last.matched_at(utc("2026-05-04T10:00:00Z")), Some(0));
    assert_eq!(last.matched_at(utc("2026-05-04T13:00:00Z")), Some(1));
    assert_eq!(
        last.effective_at(utc("2026-05-04T13:00:00Z")).min_replicas,
        5
    );
    assert_eq!(last.matched_at(utc("2026-05-04T19:00:00Z")), None);
    // Transitions name ranges by list index either way.
    let at = |s: &Schedule| {
        s.transitions(utc("2026-05-04T09:00:00Z"), 3)
            .into_iter()
            .map(|t| (t.at, t.matched_range))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        at(&last),
        vec![
            (utc("2026-05-04T12:00:00Z"), Some(1)),
            (utc("2026-05-04T14:00:00Z"), Some(0)),
            (utc("2026-05-04T18:00:00Z"), None),
        ]
    );
    assert_eq!(
        at(&first),
        vec![
            (utc("2026-05-04T18:00:00Z"), None),
            (utc("2026-05-05T08:00:00Z"), Some(0)),
            (utc("2026-05-05T18:00:00Z"), None),
        ]
    );
    // The overlap is reported either way, naming the winner.
    assert_eq!(first.overlaps().pairs, vec![(0, 1)]);
    assert_eq!(last.overlaps().pairs, vec![(0, 1)]);
    assert!(
        first
            .overlap_message(&first.overlaps())
            .unwrap()
            .ends_with("the first in list order wins")
    );
    assert!(
        last.overlap_message(&last.overlaps())
            .unwrap()
            .ends_with("the last in list order wins")
    );
}

#[test]
fn a_write_carrying_someone_elses_metrics_is_preconditioned_on_the_version_read() {
    let mut h = hpa(&settings(5, 10, Some(60), None), true);
    h.metadata.resource_version = Some("7".into());
    let fields = OwnedFields::from_settings(&settings(2, 10, Some(60), None));
    // Only cpu/memory as read: still preconditioned, since a metric someone adds after the read
    // would be dropped by the atomic list.
    let own = fields
        .clone()
        .keeping_foreign_metrics(h.spec.as_ref().unwrap());
    h.metadata.uid = Some("hpa-uid".into());
    let read = Precondition {
        resource_version: Some("7".into()),
        uid: Some("hpa-uid".into()),
    };
    assert_eq!(own.precondition(&h), read);
    assert_eq!(
        own.apply_patch_at("web", &Precondition::default()),
        own.apply_patch("web")
    );
    h.spec.as_mut().unwrap().metrics.as_mut().unwrap().push(
        serde_json::from_value(json!({"type": "External", "external": {
                "metric": {"name": "queue_depth"},
                "target": {"type": "AverageValue", "averageValue": "30"}}}))
        .unwrap(),
    );
    let carrying = fields.keeping_foreign_metrics(h.spec.as_ref().unwrap());
    assert_eq!(carrying.precondition(&h), read);
    let patch = carrying.apply_patch_at("web", &read);
    assert_eq!(
        patch["metadata"],
        json!({"name": "web", "resourceVersion": "7", "uid": "hpa-uid"})
    );
    assert_eq!(patch["spec"]["metrics"][1]["type"], "External");
}

#[test]
fn ranges_set_targets_of_metrics_already_on_the_hpa_by_name() {
    // Queue depth 30 by day, 100 off-hours (outside 08:00-12:00Z); rps only named by day.
    let s = scaler(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilization": 60,
                "metricTargets": [{"name": "queue_depth", "averageValue": "100"}]},
        "timeRangeSpec": [
            {"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
             "replicaSpec": {"hpa": {"minReplicas": 5, "metricTargets": [
                 {"name": "queue_depth", "averageValue": "30"},
                 {"name": "missing", "value": "1"}]}}}
        ]
    }));
    let schedule = Schedule::from_spec(&s.spec, &Calendars::new()).unwrap();
    let day = schedule.effective_at(utc("2026-05-04T09:00:00Z"));
    assert_eq!(
        day.metric_targets
            .iter()
            .map(|t| (
                t.name.as_str(),
                t.average_value.as_deref(),
                t.value.as_deref()
            ))
            .collect::<Vec<_>>(),
        [
            ("missing", None, Some("1")),
            ("queue_depth", Some("30"), None)
        ]
    );
    let queue = |value: &str| {
        serde_json::from_value::<MetricSpec>(json!({"type": "External", "external": {
            "metric": {"name": "queue_depth"},
            "target": {"type": "AverageValue", "averageValue": value}}}))
        .unwrap()
    };
    let rps: MetricSpec = serde_json::from_value(json!({"type": "Pods", "pods": {
        "metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}))
    .unwrap();
    let with = |min: i32, q: &str| {
        let mut h = hpa(&settings(min, 10, Some(60), None), true);
        let metrics = h.spec.as_mut().unwrap().metrics.as_mut().unwrap();
        metrics.push(queue(q));
        metrics.push(rps.clone());
        h
    };
    let first = decide_at(&s, None, "2026-05-04T09:00:00Z");
    let s = with_status(&s, &first);
    // In sync by day: nothing to write; a name not on the HPA adds nothing.
    assert_eq!(
        decide_at(&s, Some(&with(5, "30")), "2026-05-04T09:30:00Z").hpa,
        HpaChange::Leave
    );
    // Off-hours: queue depth back to 100, rps untouched, the whole list sent.
    let d = decide_at(&s, Some(&with(5, "30")), "2026-05-04T12:00:00Z");
    let HpaChange::Apply { fields, .. } = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    let metrics = &fields.apply_patch("web")["spec"]["metrics"];
    assert_eq!(metrics[1], serde_json::to_value(queue("100")).unwrap());
    assert_eq!(metrics[2], serde_json::to_value(&rps).unwrap());
    assert_eq!(metrics.as_array().map(Vec::len), Some(3));
    let note = &d.hpa_notice.as_ref().unwrap().note;
    assert!(
        note.contains("queue_depth AverageValue 30 -> AverageValue 100"),
        "{note}"
    );
    // Only the named target drifted: written back.
    assert!(matches!(
        decide_at(&s, Some(&with(5, "31")), "2026-05-04T09:30:00Z").hpa,
        HpaChange::Apply { .. }
    ));
    // A target must say exactly one thing.
    let errors = errors_of(json!({
        "hpa": {"maxReplicas": 3, "metricTargets": [{"name": "q", "value": "1", "averageValue": "2"}]}
    }));
    assert!(
        errors.iter().any(|(f, _)| f == "spec.hpa.metricTargets[0]"),
        "{errors:?}"
    );
}

/// The API server stores quantities canonically (`2000m` comes back as `2`, `0.5` as `500m`):
/// a target of the same amount is in sync, so a non-canonical spec never loops on writes.
#[test]
fn metric_targets_compare_quantities_by_amount() {
    let s = scaler(json!({
        "hpa": {"minReplicas": 2, "maxReplicas": 10, "targetCPUUtilization": 60,
                "metricTargets": [{"name": "queue_depth", "averageValue": "2000m"},
                                  {"name": "rps", "value": "0.5"}]}
    }));
    let first = decide_at(&s, None, "2026-05-04T09:00:00Z");
    let s = with_status(&s, &first);
    let with = |queue: &str, rps: &str| {
        let mut h = hpa(&settings(2, 10, Some(60), None), true);
        let metrics = h.spec.as_mut().unwrap().metrics.as_mut().unwrap();
        metrics.push(
            serde_json::from_value(json!({"type": "External", "external": {
                "metric": {"name": "queue_depth"},
                "target": {"type": "AverageValue", "averageValue": queue}}}))
            .unwrap(),
        );
        metrics.push(
            serde_json::from_value(json!({"type": "Object", "object": {
                "metric": {"name": "rps"},
                "describedObject": {"kind": "Service", "name": "web", "apiVersion": "v1"},
                "target": {"type": "Value", "value": rps}}}))
            .unwrap(),
        );
        h
    };
    // What the server stored after ebb wrote `2000m` and `0.5`.
    assert_eq!(
        decide_at(&s, Some(&with("2", "500m")), "2026-05-04T09:30:00Z").hpa,
        HpaChange::Leave
    );
    // A different amount is still a change, and the note shows only that metric.
    let d = decide_at(&s, Some(&with("3", "500m")), "2026-05-04T09:30:00Z");
    let HpaChange::Apply { fields, .. } = &d.hpa else {
        panic!("{:?}", d.hpa)
    };
    let metrics = &fields.apply_patch("web")["spec"]["metrics"];
    assert_eq!(metrics[1]["external"]["target"]["averageValue"], "2000m");
    // The rps target already has the amount: sent back exactly as the server wrote it.
    assert_eq!(metrics[2]["object"]["target"]["value"], "500m");
    let note = &d.hpa_notice.as_ref().unwrap().note;
    assert!(
        note.contains("queue_depth AverageValue 3 -> AverageValue 2000m"),
        "{note}"
    );
    assert!(!note.contains("rps"), "{note}");
}

#[test]
fn metric_target_quantities_must_parse() {
    let errors = errors_of(json!({
        "hpa": {"maxReplicas": 3, "metricTargets": [{"name": "q", "averageValue": "ten"}]},
        "timeRangeSpec": [{"kind": "ZonedTime", "from": "08:00Z", "to": "12:00Z",
            "replicaSpec": {"hpa": {"metricTargets": [{"name": "q", "value": "1.5.0"}]}}}]
    }));
    let fields: Vec<&str> = errors.iter().map(|(f, _)| f.as_str()).collect();
    assert!(
        fields.contains(&"spec.hpa.metricTargets[0].averageValue"),
        "{errors:?}"
    );
    assert!(
        fields.contains(&"spec.timeRangeSpec[0].replicaSpec.hpa.metricTargets[0].value"),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|(_, m)| m.contains("\"ten\" is not a quantity")),
        "{errors:?}"
    );
}

/// 64 minute-level Cron ranges, `expression(i)` each, 1 m long, in `zone`.
fn minute_crons(expression: impl Fn(usize) -> String, zone: &str) -> ServiceScaler {
    let ranges: Vec<Value> = (0..64)
        .map(|i| {
            json!({"kind": "Cron", "schedule": expression(i), "duration": "1m",
                   "timeZone": zone, "replicaSpec": {"hpa": {"minReplicas": 3}}})
        })
        .collect();
    scaler(json!({"hpa": {"minReplicas": 2, "maxReplicas": 10}, "timeRangeSpec": ranges}))
}

/// The scaler issue 46 found costing 5.3 s of CPU per generation (the overlap check swept a
/// year for each of 2 016 pairs) is decided, overlap check included, within the step budgets.
#[test]
fn no_admitted_scaler_stalls_a_pass() {
    // A pass asks the schedule a handful of questions, each within its own budget.
    let pass = 3 * SCAN_STEPS;
    let budget = ebb_schedule::OVERLAP_STEPS + pass;
    let s = minute_crons(|i| format!("{}/59 * * * 1-5", i % 60), "America/New_York");
    let (d, steps) = ebb_schedule::work::counted(|| decide_at(&s, None, "2026-05-04T11:30:00Z"));
    assert!(steps <= budget, "{steps} steps");
    // The overlaps are known for this generation: the next pass only asks the questions. Every
    // weekday minute is covered with the same settings: the scan for the next change stops at
    // its budget, and the pass looks again from there.
    let (again, steps) = ebb_schedule::work::counted(|| {
        decide_at(&with_status(&s, &d), None, "2026-05-04T11:31:00Z")
    });
    assert!(steps <= pass, "{steps} steps");
    assert!(again.requeue_after.is_some());
    let status = d.status.unwrap();
    let (state, reason, message) = condition_of(&status, CONDITION_RANGES_OVERLAP);
    assert_eq!((state, reason), ("True", "Overlap"), "{message}");
    assert!(
        message.starts_with("timeRangeSpec[0] and timeRangeSpec[59] overlap"),
        "{message}"
    );

    // Here only a year's sweep tells most pairs apart: the check stops at its budget and says
    // which pairs it left.
    let s = minute_crons(|i| format!("*/2 * * * {}", i % 7), "Europe/Berlin");
    let (d, steps) = ebb_schedule::work::counted(|| decide_at(&s, None, "2026-05-04T11:30:00Z"));
    assert!(steps <= budget, "{steps} steps");
    let status = d.status.unwrap();
    let (state, _, message) = condition_of(&status, CONDITION_RANGES_OVERLAP);
    assert_eq!(state, "True");
    assert!(message.contains("may overlap"), "{message}");
    assert!(
        message.contains("pairs were not compared to the end"),
        "{message}"
    );
}

/// `spec.ramp` admits any duration, and a pass asks for the last change of `minReplicas` within
/// it: walked forward from the ramp's start, a year of minute-level ranges took millions of steps
/// on every pass. Looked for back from now, it costs a pass its scan budget at most, and the
/// change seven hours ago (across 450 changes of range) is found however long the ramp.
#[test]
fn a_ramp_of_any_length_is_searched_within_the_scan_budget() {
    // Range i holds minute i of each hour on weekdays (New York), with minReplicas 3: 3 all
    // weekday, 2 at weekends. Monday began (midnight in New York) at 04:00Z.
    let now = utc("2026-05-04T11:30:30Z");
    let monday = Some(utc("2026-05-04T04:00:00Z"));
    for (ramp, last_change) in [
        ("10m", None),
        ("8h", monday),
        ("8760h", monday),
        ("100000h", monday),
    ] {
        let mut s = minute_crons(|i| format!("{}/59 * * * 1-5", i % 60), "America/New_York");
        s.spec.ramp = Some(ramp.into());
        let schedule = Schedule::from_spec(&s.spec, &ebb_schedule::Calendars::new()).unwrap();
        let since = now.checked_sub(schedule.ramp().unwrap()).unwrap();
        let (last, steps) = ebb_schedule::work::counted(|| schedule.last_min_change(since, now));
        assert!(steps <= SCAN_STEPS + 5_000, "ramp {ramp}: {steps} steps");
        assert_eq!(last, last_change, "ramp {ramp}");
    }
    // Ranges that hand over every minute with the same minReplicas: no change for a year to
    // find, and the search stops at its budget.
    let mut s = minute_crons(|i| format!("{}/59 * * * *", i % 60), "America/New_York");
    s.spec.ramp = Some("8760h".into());
    let schedule = Schedule::from_spec(&s.spec, &ebb_schedule::Calendars::new()).unwrap();
    let since = now.checked_sub(schedule.ramp().unwrap()).unwrap();
    let (last, steps) = ebb_schedule::work::counted(|| schedule.last_min_change(since, now));
    assert!(steps <= SCAN_STEPS + 5_000, "{steps} steps");
    assert_eq!(last, None);
}
