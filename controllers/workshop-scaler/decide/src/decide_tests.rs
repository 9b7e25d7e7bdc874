#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use proptest::prelude::*;

fn t0() -> Timestamp {
    ebb_testkit::utc("2026-03-10T09:00:00Z")
}

fn config() -> Config {
    resolve(
        Some(&AutoScaling {
            enabled: Some(true),
            ..AutoScaling::default()
        }),
        None,
    )
    .unwrap()
}

fn enabled_settings() -> Settings {
    Settings::Enabled(config())
}

fn seats(assigned: u32, total: u32) -> Seats {
    Seats { assigned, total }
}

fn observed(count: i32, assigned: u32, total: u32) -> Counts {
    Counts {
        count,
        seats: seats(assigned, total),
        ..Counts::default()
    }
}

fn claim(name: &str, settled: bool) -> Claim {
    Claim {
        name: name.into(),
        settled,
        deleting: false,
    }
}

fn claims(n: usize, settled: bool) -> Vec<Claim> {
    (0..n)
        .map(|i| claim(&format!("c{i:02}"), settled))
        .collect()
}

fn in_flight(from: i32, to: i32) -> InFlight {
    InFlight {
        started_at: Some(t0()),
        from: Some(from),
        target: Some(to),
        claims: Vec::new(),
    }
}

// --- configuration ---

#[test]
fn defaults_apply_when_nothing_is_set() {
    let c = resolve(None, None).unwrap();
    assert_eq!(
        c,
        Config {
            enabled: false,
            threshold: 0.8,
            scale_factor: 1.5,
            max_provisions: 100,
            active_timeout: SignedDuration::from_mins(60),
        }
    );
}

#[test]
fn provision_overrides_workshop_field_by_field() {
    let workshop = AutoScaling {
        enabled: Some(true),
        threshold: Some(0.5),
        scale_factor: Some(2.0),
        max_provisions: Some(60),
        active_timeout: Some("10m".into()),
    };
    let provision = AutoScaling {
        max_provisions: Some(40),
        active_timeout: Some("1h30m".into()),
        ..AutoScaling::default()
    };
    let c = resolve(Some(&workshop), Some(&provision)).unwrap();
    assert_eq!(
        c,
        Config {
            enabled: true,
            threshold: 0.5,
            scale_factor: 2.0,
            max_provisions: 40,
            active_timeout: SignedDuration::from_mins(90),
        }
    );
}

#[test]
fn provision_can_disable_what_its_workshop_enables_and_vice_versa() {
    let on = AutoScaling {
        enabled: Some(true),
        ..AutoScaling::default()
    };
    let off = AutoScaling {
        enabled: Some(false),
        ..AutoScaling::default()
    };
    assert!(!enabled(Some(&on), Some(&off)));
    assert!(enabled(Some(&off), Some(&on)));
    assert!(enabled(None, Some(&on)));
    assert!(!enabled(None, None));
    assert!(!enabled(
        Some(&AutoScaling::default()),
        Some(&AutoScaling::default())
    ));
}

#[test]
fn validation_names_the_field_and_the_value() {
    let cases: Vec<(AutoScaling, &str)> = vec![
        (
            AutoScaling {
                threshold: Some(1.5),
                ..AutoScaling::default()
            },
            "spec.autoScaling.threshold: must be > 0 and <= 1, got 1.5",
        ),
        (
            AutoScaling {
                threshold: Some(0.0),
                ..AutoScaling::default()
            },
            "spec.autoScaling.threshold: must be > 0 and <= 1, got 0",
        ),
        (
            AutoScaling {
                threshold: Some(f64::NAN),
                ..AutoScaling::default()
            },
            "spec.autoScaling.threshold: must be > 0 and <= 1, got NaN",
        ),
        (
            AutoScaling {
                scale_factor: Some(1.0),
                ..AutoScaling::default()
            },
            "spec.autoScaling.scaleFactor: must be a finite number > 1, got 1",
        ),
        (
            AutoScaling {
                scale_factor: Some(f64::INFINITY),
                ..AutoScaling::default()
            },
            "spec.autoScaling.scaleFactor: must be a finite number > 1, got inf",
        ),
        (
            AutoScaling {
                max_provisions: Some(0),
                ..AutoScaling::default()
            },
            "spec.autoScaling.maxProvisions: must be >= 1, got 0",
        ),
        (
            AutoScaling {
                active_timeout: Some("soon".into()),
                ..AutoScaling::default()
            },
            "spec.autoScaling.activeTimeout: must be a positive duration like 60m or 1h30m (h, m, s), got \"soon\"",
        ),
        (
            AutoScaling {
                active_timeout: Some("0m".into()),
                ..AutoScaling::default()
            },
            "spec.autoScaling.activeTimeout: must be a positive duration like 60m or 1h30m (h, m, s), got \"0m\"",
        ),
    ];
    for (block, message) in cases {
        let error = resolve(None, Some(&block)).unwrap_err();
        assert_eq!(error.to_string(), message);
        assert_eq!(error.origin, Origin::Provision);
    }
}

#[test]
fn an_inherited_invalid_field_says_so() {
    let workshop = AutoScaling {
        enabled: Some(true),
        threshold: Some(2.0),
        ..AutoScaling::default()
    };
    let error = resolve(Some(&workshop), None).unwrap_err();
    assert_eq!(
        error.to_string(),
        "spec.autoScaling.threshold: must be > 0 and <= 1, got 2 (inherited from the Workshop)"
    );
    // A valid override hides the Workshop's invalid value.
    let provision = AutoScaling {
        threshold: Some(0.9),
        ..AutoScaling::default()
    };
    assert_eq!(
        resolve(Some(&workshop), Some(&provision))
            .unwrap()
            .threshold,
        0.9
    );
}

#[test]
fn disabled_wins_over_an_invalid_block() {
    let broken = AutoScaling {
        threshold: Some(7.0),
        ..AutoScaling::default()
    };
    assert_eq!(settings(None, Some(&broken)), Settings::Disabled);
    let broken_on = AutoScaling {
        enabled: Some(true),
        ..broken
    };
    assert!(matches!(
        settings(None, Some(&broken_on)),
        Settings::Invalid(_)
    ));
    assert!(
        resolve(
            None,
            Some(&AutoScaling {
                enabled: Some(false),
                threshold: Some(7.0),
                ..AutoScaling::default()
            })
        )
        .is_err()
    );
}

// --- the count formula and its rounding ---

#[test]
fn next_count_table() {
    let cases = [
        // (count, factor, max, expected)
        (10, 1.5, 100, 15), // 10 * 1.5 = 15 exactly
        (20, 1.5, 40, 30),
        (30, 1.5, 40, 40), // 45 capped
        (1, 1.5, 100, 2),  // floor(1.5) = 1 -> at least +1
        (0, 1.5, 100, 1),  // an empty provision grows by one
        (3, 1.1, 100, 4),  // floor(3.3) = 3 -> +1
        (10, 1.1, 100, 11),
        (30, 1.1, 100, 33),
        (20, 1.15, 100, 23),
        (100, 1.15, 200, 115), // f64: 114.99999999999999, a naive floor says 114
        (180, 1.15, 300, 207), // f64: 206.99999999999997
        (45, 1.4, 100, 63),    // f64: 62.99999999999999
        (50, 2.3, 200, 115),   // f64: 114.99999999999999
        (7, 1.3, 100, 9),      // 9.1
        (99, 2.0, 100, 100),
        (5, 1e300, 100, 100), // saturating, then capped
        (i32::MAX - 1, 1.5, i32::MAX, i32::MAX),
    ];
    for (count, factor, max, expected) in cases {
        assert_eq!(
            next_count(count, factor, max),
            expected,
            "{count} * {factor} (max {max})"
        );
    }
}

#[test]
fn a_naive_float_floor_would_misround_these() {
    // The reason `next_count` works in integer micro-units: documents the trap.
    assert_eq!((100.0_f64 * 1.15).floor(), 114.0);
    assert_eq!((45.0_f64 * 1.4).floor(), 62.0);
    assert_eq!(next_count(100, 1.15, 1000), 115);
    assert_eq!(next_count(45, 1.4, 1000), 63);
}

// --- demand ---

#[test]
fn utilization_is_assigned_over_total() {
    assert_eq!(seats(0, 0).utilization(), None);
    assert_eq!(seats(8, 10).utilization(), Some(0.8));
    assert_eq!(seats(10, 10).utilization(), Some(1.0));
}

#[test]
fn demand_table() {
    let s = enabled_settings();
    let now = t0();
    assert_eq!(
        decide_scaling(&s, &observed(10, 0, 0), now),
        Decision::Hold(Hold::NoSeats)
    );
    assert_eq!(
        decide_scaling(&s, &observed(10, 7, 10), now),
        Decision::Hold(Hold::BelowThreshold { utilization: 0.7 })
    );
    // Exactly at the threshold scales.
    assert_eq!(
        decide_scaling(&s, &observed(10, 8, 10), now),
        Decision::Start {
            from: 10,
            to: 15,
            utilization: 0.8
        }
    );
    assert_eq!(
        decide_scaling(&s, &observed(100, 10, 10), now),
        Decision::Hold(Hold::AtMaxProvisions { utilization: 1.0 })
    );
    // Above the cap (maxProvisions lowered below count): never scale, never scale down.
    assert_eq!(
        decide_scaling(&s, &observed(150, 10, 10), now),
        Decision::Hold(Hold::AtMaxProvisions { utilization: 1.0 })
    );
}

#[test]
fn thresholds_that_are_awkward_decimals_compare_exactly() {
    for (threshold, assigned, total) in [
        (0.7, 7, 10),
        (0.3, 3, 10),
        (0.6, 3, 5),
        (0.9, 9, 10),
        (0.1, 1, 10),
    ] {
        let mut c = config();
        c.threshold = threshold;
        let d = decide_scaling(&Settings::Enabled(c), &observed(10, assigned, total), t0());
        assert!(
            d.scales(),
            "{assigned}/{total} at threshold {threshold}: {d:?}"
        );
    }
}

#[test]
fn disabled_decides_nothing_whatever_the_demand() {
    for in_flight_state in [None, Some(in_flight(10, 15))] {
        let o = Counts {
            in_flight: in_flight_state,
            ..observed(10, 10, 10)
        };
        assert_eq!(
            decide_scaling(&Settings::Disabled, &o, t0()),
            Decision::Disabled
        );
    }
    assert!(conditions(&Decision::Disabled, None, 10, None).is_empty());
}

#[test]
fn invalid_settings_and_negative_counts_are_reported() {
    let error = resolve(
        None,
        Some(&AutoScaling {
            max_provisions: Some(0),
            ..AutoScaling::default()
        }),
    )
    .unwrap_err();
    let d = decide_scaling(
        &Settings::Invalid(error.clone()),
        &observed(10, 10, 10),
        t0(),
    );
    assert_eq!(d, Decision::Invalid(error));
    let d = decide_scaling(&enabled_settings(), &observed(-1, 10, 10), t0());
    let Decision::Invalid(e) = d else {
        panic!("{d:?}")
    };
    assert_eq!(e.to_string(), "spec.count: must be >= 0, got -1");
}

// --- in flight ---

#[test]
fn never_scales_while_a_scale_up_is_in_flight() {
    let o = Counts {
        in_flight: Some(in_flight(10, 15)),
        claims: claims(10, true),
        ..observed(15, 10, 10)
    };
    let d = decide_scaling(&enabled_settings(), &o, t0());
    assert_eq!(
        d,
        Decision::Wait {
            unsettled: Unsettled {
                pending: vec![],
                missing: 5
            },
            deadline: Some(t0() + SignedDuration::from_mins(60)),
        }
    );
}

#[test]
fn an_interrupted_scale_up_is_finished_once() {
    // Flag written (10 -> 15), count still 10: finish it.
    let o = Counts {
        in_flight: Some(in_flight(10, 15)),
        claims: claims(10, true),
        ..observed(10, 10, 10)
    };
    assert_eq!(
        decide_scaling(&enabled_settings(), &o, t0()),
        Decision::Finish { from: 10, to: 15 }
    );
    // Count already raised: never again.
    let applied = Counts {
        count: 15,
        ..o.clone()
    };
    assert!(!decide_scaling(&enabled_settings(), &applied, t0()).scales());
    // Count changed by someone else since: leave it alone.
    let other = Counts { count: 12, ..o };
    assert!(!decide_scaling(&enabled_settings(), &other, t0()).scales());
}

#[test]
fn finishing_respects_a_lowered_cap() {
    let mut c = config();
    c.max_provisions = 12;
    let o = Counts {
        in_flight: Some(in_flight(10, 15)),
        ..observed(10, 10, 10)
    };
    assert_eq!(
        decide_scaling(&Settings::Enabled(c.clone()), &o, t0()),
        Decision::Finish { from: 10, to: 12 }
    );
    c.max_provisions = 10;
    assert!(matches!(
        decide_scaling(&Settings::Enabled(c), &o, t0()),
        Decision::Cancel { .. }
    ));
}

#[test]
fn release_needs_every_claim_settled_and_all_claims_created() {
    let s = enabled_settings();
    let base = Counts {
        in_flight: Some(in_flight(2, 3)),
        ..observed(3, 3, 3)
    };
    let all_settled = Counts {
        claims: claims(3, true),
        ..base.clone()
    };
    assert_eq!(
        decide_scaling(&s, &all_settled, t0()),
        Decision::Release { claims: 3 }
    );

    let one_pending = Counts {
        claims: vec![claim("b", true), claim("a", false), claim("c", true)],
        ..base.clone()
    };
    assert_eq!(
        decide_scaling(&s, &one_pending, t0()),
        Decision::Wait {
            unsettled: Unsettled {
                pending: vec!["a".into()],
                missing: 0
            },
            deadline: Some(t0() + SignedDuration::from_hours(1)),
        }
    );

    // Two of three claims exist and have settled: the new one is not created yet.
    let not_created = Counts {
        claims: claims(2, true),
        ..base
    };
    assert!(matches!(
        decide_scaling(&s, &not_created, t0()),
        Decision::Wait {
            unsettled: Unsettled { missing: 1, .. },
            ..
        }
    ));
}

/// The claims a scale-up waits for are recorded when first seen; recorded ones that
/// are gone (finalized while workshop-scaler was not running) count as created and done, so the
/// flag is released from the record, with the claims named. Claims Babylon has not created yet
/// are still waited for.
#[test]
fn the_flag_is_released_from_the_recorded_claims_however_they_went() {
    let s = enabled_settings();
    // Scale-up 2 -> 3: three claims seen, two unsettled: all three are recorded.
    let seen = Counts {
        in_flight: Some(in_flight(2, 3)),
        claims: vec![claim("a", true), claim("b", false), claim("c", false)],
        ..observed(3, 3, 3)
    };
    assert_eq!(
        claims_to_record(&seen),
        Some(vec!["a".into(), "b".into(), "c".into()])
    );
    assert!(matches!(
        decide_scaling(&s, &seen, t0()),
        Decision::Wait { .. }
    ));
    let recorded = Counts {
        in_flight: Some(InFlight {
            claims: vec!["a".into(), "b".into(), "c".into()],
            ..in_flight(2, 3)
        }),
        ..seen
    };
    assert_eq!(claims_to_record(&recorded), None, "nothing new: no write");

    // b and c were finalized and removed while the controller was down; a is still there.
    let gone = Counts {
        claims: vec![claim("a", true)],
        ..recorded.clone()
    };
    assert_eq!(
        decide_scaling(&s, &gone, t0()),
        Decision::ReleaseEarly {
            cause: EarlyRelease::ClaimsGone {
                claims: vec!["b".into(), "c".into()]
            }
        }
    );
    // Every claim gone: the same.
    let all_gone = Counts {
        claims: Vec::new(),
        ..recorded.clone()
    };
    assert!(matches!(
        decide_scaling(&s, &all_gone, t0()),
        Decision::ReleaseEarly {
            cause: EarlyRelease::ClaimsGone { .. }
        }
    ));

    // Only c recorded and gone, b settled, and the third claim never created: still waited
    // for, within activeTimeout, then reported, never released on a timer.
    let one_missing = Counts {
        in_flight: Some(InFlight {
            claims: vec!["c".into()],
            ..in_flight(2, 4)
        }),
        claims: vec![claim("a", true), claim("b", true)],
        ..observed(4, 3, 3)
    };
    assert!(matches!(
        decide_scaling(&s, &one_missing, t0()),
        Decision::Wait {
            unsettled: Unsettled { missing: 1, .. },
            ..
        }
    ));
    assert!(matches!(
        decide_scaling(&s, &one_missing, t0() + SignedDuration::from_hours(2)),
        Decision::Stuck {
            unsettled: Unsettled { missing: 1, .. },
            ..
        }
    ));
}

#[test]
fn hold_down_reports_stuck_claims_without_clearing_or_scaling() {
    let s = enabled_settings();
    let o = Counts {
        in_flight: Some(in_flight(2, 3)),
        claims: vec![
            claim("ready", true),
            claim("stuck-b", false),
            claim("stuck-a", false),
        ],
        ..observed(3, 3, 3)
    };
    let just_before = t0() + SignedDuration::from_mins(60) - SignedDuration::from_secs(1);
    assert!(matches!(
        decide_scaling(&s, &o, just_before),
        Decision::Wait { .. }
    ));
    let at_deadline = t0() + SignedDuration::from_mins(60);
    let d = decide_scaling(&s, &o, at_deadline);
    assert_eq!(
        d,
        Decision::Stuck {
            unsettled: Unsettled {
                pending: vec!["stuck-a".into(), "stuck-b".into()],
                missing: 0
            },
            since: Some(t0()),
        }
    );
    assert!(!d.scales());
    let conds = conditions(&d, Some(&config()), 3, o.in_flight.as_ref());
    let stuck = conds
        .iter()
        .find(|c| c.type_ == CONDITION_CLAIMS_STUCK)
        .unwrap();
    assert!(stuck.status);
    assert_eq!(
        stuck.message,
        "claims have not settled within activeTimeout: unsettled: stuck-a, stuck-b"
    );
    let active = conds
        .iter()
        .find(|c| c.type_ == CONDITION_AUTO_SCALING)
        .unwrap();
    assert!(active.status, "the flag stays set while stuck");
    // Once they settle, the flag clears even long after the deadline.
    let settled = Counts {
        claims: claims(3, true),
        ..o
    };
    assert_eq!(
        decide_scaling(&s, &settled, at_deadline + SignedDuration::from_hours(24)),
        Decision::Release { claims: 3 }
    );
}

#[test]
fn a_flag_set_by_someone_else_is_waited_on_not_finished() {
    // No from/target/startedAt: a legacy or foreign flag.
    let o = Counts {
        in_flight: Some(InFlight::default()),
        claims: vec![claim("x", false)],
        ..observed(1, 10, 10)
    };
    let d = decide_scaling(&enabled_settings(), &o, t0());
    assert!(matches!(d, Decision::Stuck { since: None, .. }), "{d:?}");
    let settled = Counts {
        claims: vec![claim("x", true)],
        ..o
    };
    assert_eq!(
        decide_scaling(&enabled_settings(), &settled, t0()),
        Decision::Release { claims: 1 }
    );
}

#[test]
fn conditions_follow_the_decision() {
    let c = config();
    let find =
        |conds: &[ConditionUpdate], t: &str| conds.iter().find(|x| x.type_ == t).cloned().unwrap();
    let start = Decision::Start {
        from: 60,
        to: 90,
        utilization: 0.9,
    };
    let conds = conditions(&start, Some(&c), 60, None);
    assert_eq!(conds.len(), 4);
    assert!(find(&conds, CONDITION_AUTO_SCALING).status);
    assert!(find(&conds, CONDITION_CONFIG_VALID).status);
    assert!(!find(&conds, CONDITION_AT_MAX).status);
    assert!(!find(&conds, CONDITION_CLAIMS_STUCK).status);
    // Waiting on the same scale-up yields the same AutoScaling condition: no status churn.
    let wait = Decision::Wait {
        unsettled: Unsettled::default(),
        deadline: None,
    };
    let waiting = conditions(&wait, Some(&c), 90, Some(&in_flight(60, 90)));
    assert_eq!(
        find(&conds, CONDITION_AUTO_SCALING),
        find(&waiting, CONDITION_AUTO_SCALING)
    );
    // A scale-up that reaches the cap sets AtMaxProvisions.
    let capped = Decision::Start {
        from: 80,
        to: 100,
        utilization: 0.9,
    };
    assert!(find(&conditions(&capped, Some(&c), 80, None), CONDITION_AT_MAX).status);
    // Invalid: only the validity condition, with the field.
    let error = resolve(
        None,
        Some(&AutoScaling {
            threshold: Some(1.5),
            ..AutoScaling::default()
        }),
    )
    .unwrap_err();
    let invalid = conditions(&Decision::Invalid(error), None, 10, None);
    assert_eq!(invalid.len(), 1);
    assert_eq!(
        invalid[0].message,
        "spec.autoScaling.threshold: must be > 0 and <= 1, got 1.5"
    );
    assert!(!invalid[0].status);
}

#[test]
fn reasons_read_well() {
    let c = config();
    let r = |d: Decision, count| d.reason(count, Some(&c));
    assert_eq!(
        r(
            Decision::Start {
                from: 20,
                to: 30,
                utilization: 0.85
            },
            20
        ),
        "utilization 85% reached the threshold 80%: scale from 20 to 30"
    );
    assert_eq!(
        r(
            Decision::Hold(Hold::BelowThreshold {
                utilization: 2.0 / 3.0
            }),
            20
        ),
        "utilization 66.7% is below the threshold 80%"
    );
    assert_eq!(
        r(
            Decision::Hold(Hold::AtMaxProvisions { utilization: 0.9 }),
            100
        ),
        "utilization 90% reached the threshold 80%, but count 100 is at maxProvisions 100"
    );
}

// --- configuration sources: policies, precedence, ambiguity ---

fn policy(name: &str, auto: AutoScaling) -> (String, AutoScaling) {
    (name.to_owned(), auto)
}

#[test]
fn precedence_is_provision_then_workshop_then_the_one_policy_field_by_field() {
    let policies = [policy(
        "standard",
        AutoScaling {
            enabled: Some(true),
            threshold: Some(0.5),
            scale_factor: Some(2.0),
            max_provisions: Some(60),
            active_timeout: Some("10m".into()),
        },
    )];
    // A stock Babylon cluster: no spec.autoScaling anywhere, the policy alone configures.
    let stock = Sources {
        policies: &policies,
        ..Sources::default()
    };
    assert_eq!(
        settings_of(&stock),
        Settings::Enabled(Config {
            enabled: true,
            threshold: 0.5,
            scale_factor: 2.0,
            max_provisions: 60,
            active_timeout: SignedDuration::from_mins(10),
        })
    );
    // Where the CRDs keep spec.autoScaling: the Workshop's fields beat the policy's, the
    // provision's beat both; the rest falls through.
    let workshop = AutoScaling {
        threshold: Some(0.7),
        max_provisions: Some(50),
        ..AutoScaling::default()
    };
    let provision = AutoScaling {
        max_provisions: Some(40),
        ..AutoScaling::default()
    };
    let c = resolve_sources(&Sources {
        provision: Some(&provision),
        workshop: Some(&workshop),
        policies: &policies,
    })
    .unwrap();
    assert_eq!(
        (c.enabled, c.threshold, c.scale_factor, c.max_provisions),
        (true, 0.7, 2.0, 40)
    );
    // The Workshop opts out of what the policy enables.
    let off = AutoScaling {
        enabled: Some(false),
        ..AutoScaling::default()
    };
    assert_eq!(
        settings_of(&Sources {
            workshop: Some(&off),
            policies: &policies,
            ..Sources::default()
        }),
        Settings::Disabled
    );
    // A policy that does not enable configures nothing on its own.
    let tuning_only = [policy(
        "tuning",
        AutoScaling {
            threshold: Some(0.5),
            ..AutoScaling::default()
        },
    )];
    assert_eq!(
        settings_of(&Sources {
            policies: &tuning_only,
            ..Sources::default()
        }),
        Settings::Disabled
    );
}

#[test]
fn an_invalid_policy_field_names_the_policy() {
    let policies = [policy(
        "broken",
        AutoScaling {
            enabled: Some(true),
            active_timeout: Some("soon".into()),
            ..AutoScaling::default()
        },
    )];
    let Settings::Invalid(error) = settings_of(&Sources {
        policies: &policies,
        ..Sources::default()
    }) else {
        panic!("expected invalid")
    };
    assert_eq!(error.origin, Origin::Policy("broken".into()));
    assert!(
        error
            .to_string()
            .ends_with("got \"soon\" (from WorkshopScalingPolicy broken)"),
        "{error}"
    );
}

#[test]
fn two_policies_for_one_workshop_are_ambiguous_never_a_silent_pick() {
    let on = AutoScaling {
        enabled: Some(true),
        ..AutoScaling::default()
    };
    let policies = [policy("zeta", on.clone()), policy("alpha", on.clone())];
    let sources = Sources {
        policies: &policies,
        ..Sources::default()
    };
    let settings = settings_of(&sources);
    assert_eq!(
        settings,
        Settings::Ambiguous(vec!["alpha".into(), "zeta".into()])
    );
    // Even with full demand and the Workshop's own block enabling: nothing scales.
    let with_workshop = settings_of(&Sources {
        workshop: Some(&on),
        ..sources
    });
    assert!(matches!(with_workshop, Settings::Ambiguous(_)));
    let d = decide_scaling(&settings, &observed(10, 10, 10), t0());
    assert_eq!(
        d,
        Decision::Ambiguous {
            policies: vec!["alpha".into(), "zeta".into()]
        }
    );
    assert!(!d.scales());
    let conds = conditions(&d, None, 10, None);
    assert_eq!(conds.len(), 1);
    assert_eq!(conds[0].type_, CONDITION_CONFIG_VALID);
    assert!(!conds[0].status);
    assert_eq!(conds[0].reason, "AmbiguousPolicies");
    assert!(
        conds[0].message.contains("alpha, zeta"),
        "{}",
        conds[0].message
    );
    // An explicit opt-out on the Workshop or provision still means: write nothing.
    let off = AutoScaling {
        enabled: Some(false),
        ..AutoScaling::default()
    };
    assert_eq!(
        settings_of(&Sources {
            provision: Some(&off),
            ..sources
        }),
        Settings::Disabled
    );
}

#[test]
fn a_policy_reports_the_workshops_others_also_select() {
    let unique = policy_conditions(&PolicyReport {
        workshops: vec!["a".into()],
        contested: vec![],
    });
    assert_eq!(
        (unique[0].status, unique[0].reason.as_str()),
        (false, "Unique")
    );
    let contested = policy_conditions(&PolicyReport {
        workshops: vec!["a".into(), "b".into()],
        contested: vec![("b".into(), vec!["other".into()])],
    });
    assert!(contested[0].status);
    assert!(
        contested[0].message.ends_with("b (also other)"),
        "{}",
        contested[0].message
    );
}

// --- provisionDisabled, lifespan, early releases, the from-count guard ---

fn in_flight_observed() -> Counts {
    // 10 -> 15 applied, 15 claims of which 3 still provisioning.
    let mut claims = claims(12, true);
    claims.extend((0..3).map(|i| claim(&format!("p{i}"), false)));
    Counts {
        in_flight: Some(in_flight(10, 15)),
        claims,
        ..observed(15, 10, 10)
    }
}

#[test]
fn provision_disabled_means_no_scaling() {
    let o = Counts {
        provision_disabled: true,
        ..observed(10, 10, 10)
    };
    let d = decide_scaling(&enabled_settings(), &o, t0());
    assert_eq!(d, Decision::Hold(Hold::ProvisionDisabled));
    let conds = conditions(&d, Some(&config()), 10, None);
    let active = conds
        .iter()
        .find(|c| c.type_ == CONDITION_AUTO_SCALING)
        .unwrap();
    assert_eq!(
        (active.status, active.reason.as_str()),
        (false, "ProvisionDisabled")
    );
}

#[test]
fn an_ended_lifespan_means_no_scaling() {
    let end = t0() - SignedDuration::from_mins(1);
    let o = Counts {
        lifespan_end: Some(end),
        ..observed(10, 10, 10)
    };
    assert_eq!(
        decide_scaling(&enabled_settings(), &o, t0()),
        Decision::Hold(Hold::LifespanEnded { end })
    );
    // Before the end it scales as usual.
    assert!(decide_scaling(&enabled_settings(), &o, end - SignedDuration::from_secs(1)).scales());
}

#[test]
fn each_early_release_reason_releases_with_its_reason() {
    let s = enabled_settings();
    let base = in_flight_observed();
    assert!(matches!(
        decide_scaling(&s, &base, t0()),
        Decision::Wait { .. }
    ));
    let end = t0() - SignedDuration::from_mins(5);
    let cases: Vec<(Counts, EarlyRelease, &str)> = vec![
        (
            Counts {
                provision_disabled: true,
                ..base.clone()
            },
            EarlyRelease::ProvisionDisabled,
            "ProvisionDisabled",
        ),
        (
            Counts {
                lifespan_end: Some(end),
                ..base.clone()
            },
            EarlyRelease::LifespanEnded { end },
            "LifespanEnded",
        ),
        (
            Counts {
                count: 12,
                ..base.clone()
            },
            EarlyRelease::CountLowered {
                count: 12,
                target: 15,
            },
            "CountLowered",
        ),
        (
            Counts {
                count: 8,
                ..base.clone()
            },
            EarlyRelease::CountLowered {
                count: 8,
                target: 15,
            },
            "CountLowered",
        ),
        (
            Counts {
                claims: base
                    .claims
                    .iter()
                    .map(|c| Claim {
                        deleting: !c.settled,
                        ..c.clone()
                    })
                    .collect(),
                ..base.clone()
            },
            EarlyRelease::ClaimsDeleted {
                claims: vec!["p0".into(), "p1".into(), "p2".into()],
            },
            "ClaimsDeleted",
        ),
        (
            Counts {
                release_requested: true,
                ..base.clone()
            },
            EarlyRelease::Requested,
            "ReleaseRequested",
        ),
    ];
    for (o, cause, reason) in cases {
        let d = decide_scaling(&s, &o, t0());
        assert_eq!(
            d,
            Decision::ReleaseEarly {
                cause: cause.clone()
            },
            "{reason}"
        );
        assert!(!d.scales());
        let conds = conditions(&d, Some(&config()), o.count, o.in_flight.as_ref());
        let active = conds
            .iter()
            .find(|c| c.type_ == CONDITION_AUTO_SCALING)
            .unwrap();
        assert_eq!((active.status, active.reason.as_str()), (false, reason));
        assert!(
            active.message.contains(&cause.describe()),
            "{}",
            active.message
        );
    }
}

#[test]
fn a_timer_alone_never_releases() {
    // Far past activeTimeout, nothing provably gone, nobody asked: still reported, not released.
    let d = decide_scaling(
        &enabled_settings(),
        &in_flight_observed(),
        t0() + SignedDuration::from_hours(24 * 30),
    );
    assert!(matches!(d, Decision::Stuck { .. }), "{d:?}");
    // A claim being deleted while others still provision: wait for the others.
    let mut o = in_flight_observed();
    o.claims[12].deleting = true;
    assert!(matches!(
        decide_scaling(&enabled_settings(), &o, t0()),
        Decision::Wait { .. }
    ));
    // Claims deleted and gone: Babylon may create them again, so they can still appear.
    let gone = Counts {
        claims: claims(12, true),
        ..in_flight_observed()
    };
    assert!(matches!(
        decide_scaling(&enabled_settings(), &gone, t0()),
        Decision::Wait { .. }
    ));
    // Someone raised the count above the target: more claims will come, keep waiting.
    let raised = Counts {
        count: 20,
        ..in_flight_observed()
    };
    assert!(matches!(
        decide_scaling(&enabled_settings(), &raised, t0()),
        Decision::Wait { .. }
    ));
}

#[test]
fn a_release_never_allows_a_second_increase_from_the_same_count() {
    let s = enabled_settings();
    // Released early at 10 (e.g. the count lowered back to where it started): demand stays.
    let o = Counts {
        last_from: Some(10),
        ..observed(10, 10, 10)
    };
    let d = decide_scaling(&s, &o, t0());
    assert_eq!(d, Decision::Hold(Hold::AlreadyScaledFrom { count: 10 }));
    let conds = conditions(&d, Some(&config()), 10, None);
    assert_eq!(
        conds
            .iter()
            .find(|c| c.type_ == CONDITION_AUTO_SCALING)
            .unwrap()
            .reason,
        "AlreadyScaledFrom"
    );
    // From any other count, demand scales as usual.
    let other = Counts {
        last_from: Some(10),
        ..observed(15, 10, 10)
    };
    assert_eq!(
        decide_scaling(&s, &other, t0()),
        Decision::Start {
            from: 15,
            to: 22,
            utilization: 1.0
        }
    );
}

// --- properties ---
//
// Each property's conditional assertions only check something when the decision reaches their
// branch (a scale-up, a finish, a release, the from-count guard, an early release). Uniform
// generators rarely reach some of them (a finish needs `from == count`, a release needs every one
// of `count` claims settled), so each property draws from a mixture: the uniform generator
// (`any_observed`), for breadth, and shapes that satisfy the branch's preconditions. The
// `*_reach_their_branch` tests run the same strategies and fail when a branch's share drops.

fn any_config() -> impl Strategy<Value = Config> {
    (0.01f64..=1.0, 1.0001f64..5.0, 1i32..500, 1i64..7200).prop_map(
        |(threshold, scale_factor, max, secs)| Config {
            enabled: true,
            threshold,
            scale_factor,
            max_provisions: max,
            active_timeout: SignedDuration::from_secs(secs),
        },
    )
}

fn any_in_flight() -> impl Strategy<Value = Option<InFlight>> {
    prop_oneof![
        Just(None),
        (
            proptest::option::of(0i64..100_000),
            proptest::option::of(0i32..600),
            proptest::option::of(0i32..600)
        )
            .prop_map(|(start, from, target)| Some(InFlight {
                started_at: start.map(|s| t0() + SignedDuration::from_secs(s)),
                from,
                target,
                claims: Vec::new(),
            })),
    ]
}

fn any_claims() -> impl Strategy<Value = Vec<Claim>> {
    proptest::collection::vec(any::<bool>(), 0..40).prop_map(|settled| {
        settled
            .into_iter()
            .enumerate()
            .map(|(i, s)| claim(&format!("c{i}"), s))
            .collect()
    })
}

fn any_seats() -> impl Strategy<Value = Seats> {
    (0u32..300, 0u32..300).prop_map(|(a, b)| Seats {
        assigned: a.min(b),
        total: a.max(b),
    })
}

/// Uniform: any count, seats, flag and claims.
fn any_observed() -> impl Strategy<Value = Counts> {
    (0i32..600, any_seats(), any_in_flight(), any_claims()).prop_map(
        |(count, seats, in_flight, claims)| Counts {
            count,
            seats,
            in_flight,
            claims,
            ..Counts::default()
        },
    )
}

/// Nothing in flight, demand at 75% or more, a count below most caps: a scale-up starts unless
/// the threshold is higher or the cap lower.
fn demand_observed() -> impl Strategy<Value = Counts> {
    (0i32..60, 1u32..300, 0u32..=25, any_claims()).prop_map(
        |(count, total, short_percent, claims)| Counts {
            count,
            seats: seats(total - total * short_percent / 100, total),
            claims,
            ..Counts::default()
        },
    )
}

/// An interrupted scale-up: the flag records `from == count` and a higher target; it is finished
/// unless the cap is at or below the count.
fn interrupted_observed() -> impl Strategy<Value = Counts> {
    (
        0i32..60,
        1i32..60,
        proptest::option::of(0i64..100_000),
        any_seats(),
        any_claims(),
    )
        .prop_map(|(count, raise, start, seats, claims)| Counts {
            count,
            seats,
            in_flight: Some(InFlight {
                started_at: start.map(|s| t0() + SignedDuration::from_secs(s)),
                from: Some(count),
                target: Some(count + raise),
                claims: Vec::new(),
            }),
            claims,
            ..Counts::default()
        })
}

/// A scale-up whose count write landed (or whose flag lacks a start count) and whose claims have
/// all been created and settled, a few more than `count` sometimes: it is released.
fn settled_observed() -> impl Strategy<Value = Counts> {
    (
        0i32..40,
        proptest::option::of(1i32..=40),
        0i32..=40,
        proptest::option::of(0i64..100_000),
        0usize..4,
        any_seats(),
    )
        .prop_map(|(count, below, target_below, start, extra, seats)| Counts {
            count,
            seats,
            in_flight: Some(InFlight {
                started_at: start.map(|s| t0() + SignedDuration::from_secs(s)),
                // Anything but the count itself (that would be an interrupted scale-up).
                from: below.map(|b| count - b),
                target: Some(count - target_below.min(count)),
                claims: Vec::new(),
            }),
            claims: claims(usize::try_from(count).unwrap() + extra, true),
            ..Counts::default()
        })
}

fn any_dt() -> impl Strategy<Value = i64> {
    0i64..200_000
}

// What each property reaches: `Ok(true)` when its conditional assertions were checked.

fn never_scales_above_max_provisions_input() -> impl Strategy<Value = (Config, Counts, i64)> {
    (
        any_config(),
        prop_oneof![1 => any_observed(), 2 => demand_observed(), 2 => interrupted_observed()],
        any_dt(),
    )
}

fn never_scales_above_max_provisions(
    (c, o, dt): (Config, Counts, i64),
) -> Result<bool, TestCaseError> {
    let d = decide_scaling(
        &Settings::Enabled(c.clone()),
        &o,
        t0() + SignedDuration::from_secs(dt),
    );
    if d.scales() {
        prop_assert!(d.desired_count(o.count) <= c.max_provisions, "{d:?}");
        return Ok(true);
    }
    Ok(false)
}

fn scales_at_least_one_below_the_cap_input() -> impl Strategy<Value = (Config, i32, u32, u32)> {
    (
        any_config(),
        prop_oneof![1 => 0i32..600, 3 => 0i32..60],
        0u32..300,
        // Few free seats: demand at or near full.
        prop_oneof![1 => 0u32..300, 3 => 0u32..10],
    )
}

fn scales_at_least_one_below_the_cap(
    (c, count, assigned, extra): (Config, i32, u32, u32),
) -> Result<bool, TestCaseError> {
    let o = observed(count, assigned, assigned + extra);
    let d = decide_scaling(&Settings::Enabled(c.clone()), &o, t0());
    let mut reached = false;
    if let Decision::Start { from, to, .. } = d {
        prop_assert_eq!(from, count);
        prop_assert!(to > count);
        prop_assert!(to <= c.max_provisions);
        reached = true;
    }
    // Demand at or above the threshold below the cap always scales.
    if let Some(u) = o.seats.utilization()
        && u >= c.threshold
        && count < c.max_provisions
    {
        prop_assert!(d.scales(), "{d:?}");
        reached = true;
    }
    Ok(reached)
}

fn never_starts_while_in_flight_input() -> impl Strategy<Value = (Config, Counts, i64)> {
    (
        any_config(),
        prop_oneof![1 => any_observed(), 4 => interrupted_observed(), 1 => settled_observed()],
        any_dt(),
    )
}

/// Reached: a Finish, the one write of the count while in flight.
fn never_starts_while_in_flight((c, o, dt): (Config, Counts, i64)) -> Result<bool, TestCaseError> {
    prop_assume!(o.in_flight.is_some());
    let d = decide_scaling(
        &Settings::Enabled(c),
        &o,
        t0() + SignedDuration::from_secs(dt),
    );
    prop_assert!(!matches!(d, Decision::Start { .. }), "{d:?}");
    // The only write of the count while in flight finishes the recorded scale-up from its
    // exact starting count.
    if let Decision::Finish { from, to } = d {
        let f = o.in_flight.as_ref().unwrap();
        prop_assert_eq!(Some(from), f.from);
        prop_assert_eq!(from, o.count);
        prop_assert!(to <= f.target.unwrap());
        prop_assert!(to > from);
        return Ok(true);
    }
    Ok(false)
}

fn never_starts_from_the_released_from_count_input() -> impl Strategy<Value = (Config, Counts, i64)>
{
    (
        any_config(),
        prop_oneof![1 => any_observed(), 4 => demand_observed()],
        any_dt(),
    )
}

/// Reached: demand would have started a scale-up from the released count, and the guard held it.
fn never_starts_from_the_released_from_count(
    (c, o, dt): (Config, Counts, i64),
) -> Result<bool, TestCaseError> {
    let o = Counts {
        last_from: Some(o.count),
        ..o
    };
    let d = decide_scaling(
        &Settings::Enabled(c),
        &o,
        t0() + SignedDuration::from_secs(dt),
    );
    prop_assert!(!matches!(d, Decision::Start { .. }), "{d:?}");
    Ok(matches!(d, Decision::Hold(Hold::AlreadyScaledFrom { .. })))
}

fn an_early_release_never_scales_input() -> impl Strategy<Value = (Config, Counts, bool, bool, i64)>
{
    (
        any_config(),
        prop_oneof![
            1 => any_observed(),
            2 => interrupted_observed(),
            2 => settled_observed(),
        ],
        proptest::bool::weighted(0.6),
        proptest::bool::weighted(0.6),
        any_dt(),
    )
}

/// Reached: something in flight with a reason to release it (not rejected).
fn an_early_release_never_scales(
    (c, o, disabled, asked, dt): (Config, Counts, bool, bool, i64),
) -> Result<bool, TestCaseError> {
    prop_assume!(o.in_flight.is_some() && (disabled || asked));
    let o = Counts {
        provision_disabled: disabled,
        release_requested: asked,
        ..o
    };
    let d = decide_scaling(
        &Settings::Enabled(c),
        &o,
        t0() + SignedDuration::from_secs(dt),
    );
    prop_assert!(matches!(d, Decision::ReleaseEarly { .. }), "{d:?}");
    Ok(true)
}

fn finishing_is_idempotent_input() -> impl Strategy<Value = (Config, Counts)> {
    (
        any_config(),
        prop_oneof![1 => any_observed(), 2 => demand_observed(), 2 => interrupted_observed()],
    )
}

/// Reached: a Start or a Finish was applied and decided again.
fn finishing_is_idempotent((c, o): (Config, Counts)) -> Result<bool, TestCaseError> {
    // Applying a Start or Finish and deciding again never raises the count a second time.
    let s = Settings::Enabled(c);
    let d = decide_scaling(&s, &o, t0());
    let (from, to) = match d {
        Decision::Start { from, to, .. } | Decision::Finish { from, to } => (from, to),
        _ => return Ok(false),
    };
    let after = Counts {
        count: to,
        in_flight: Some(InFlight {
            started_at: Some(t0()),
            from: Some(from),
            target: Some(to),
            claims: Vec::new(),
        }),
        ..o
    };
    let again = decide_scaling(&s, &after, t0());
    prop_assert!(!again.scales(), "{again:?}");
    Ok(true)
}

fn release_only_when_all_claims_settled_input() -> impl Strategy<Value = (Config, Counts, i64)> {
    (
        any_config(),
        prop_oneof![1 => any_observed(), 4 => settled_observed()],
        any_dt(),
    )
}

/// Reached: a Release.
fn release_only_when_all_claims_settled(
    (c, o, dt): (Config, Counts, i64),
) -> Result<bool, TestCaseError> {
    let d = decide_scaling(
        &Settings::Enabled(c),
        &o,
        t0() + SignedDuration::from_secs(dt),
    );
    if let Decision::Release { .. } = d {
        prop_assert!(o.claims.iter().all(|c| c.settled));
        prop_assert!(o.claims.len() >= usize::try_from(o.count).unwrap());
        return Ok(true);
    }
    Ok(false)
}

proptest! {
    #[test]
    fn prop_never_scales_above_max_provisions(input in never_scales_above_max_provisions_input()) {
        never_scales_above_max_provisions(input)?;
    }

    #[test]
    fn prop_scales_at_least_one_below_the_cap(input in scales_at_least_one_below_the_cap_input()) {
        scales_at_least_one_below_the_cap(input)?;
    }

    #[test]
    fn prop_never_starts_while_in_flight(input in never_starts_while_in_flight_input()) {
        never_starts_while_in_flight(input)?;
    }

    #[test]
    fn prop_never_starts_from_the_released_from_count(
        input in never_starts_from_the_released_from_count_input()
    ) {
        never_starts_from_the_released_from_count(input)?;
    }

    #[test]
    fn prop_an_early_release_never_scales(input in an_early_release_never_scales_input()) {
        an_early_release_never_scales(input)?;
    }

    #[test]
    fn prop_disabled_decides_nothing(o in any_observed()) {
        prop_assert_eq!(decide_scaling(&Settings::Disabled, &o, t0()), Decision::Disabled);
    }

    #[test]
    fn prop_finishing_is_idempotent(input in finishing_is_idempotent_input()) {
        finishing_is_idempotent(input)?;
    }

    #[test]
    fn prop_release_only_when_all_claims_settled(input in release_only_when_all_claims_settled_input()) {
        release_only_when_all_claims_settled(input)?;
    }

    #[test]
    fn prop_next_count_is_the_exact_decimal_formula(count in 0i32..100_000, hundredths in 101u32..500, max in 1i32..200_000) {
        // For factors written with two decimals (1.15), the result is the floor of the exact
        // decimal product, computed here in integers.
        let factor = f64::from(hundredths) / 100.0;
        let exact = i64::from(count) * i64::from(hundredths) / 100;
        let expected = i64::from(max).min(exact.max(i64::from(count) + 1));
        prop_assert_eq!(i64::from(next_count(count, factor, max)), expected);
    }
}

// --- how often the properties reach their branches ---

/// Cases drawn to measure a share.
const SHARE_CASES: u32 = 2_000;
/// A property whose branch is reached less often than this fails its share test (the generators
/// aim at well over half).
const MIN_SHARE: f64 = 0.4;

/// Runs `property` on `SHARE_CASES` cases of `strategy` (a fixed seed, so the figure is stable)
/// and returns the share of drawn cases, rejected ones included, that reached its branch.
fn reach_share<S: Strategy>(
    name: &str,
    strategy: S,
    property: impl Fn(S::Value) -> Result<bool, TestCaseError>,
) -> f64 {
    use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
    use std::sync::atomic::{AtomicUsize, Ordering};

    let drawn = AtomicUsize::new(0);
    let reached = AtomicUsize::new(0);
    let mut runner = TestRunner::new_with_rng(
        RunnerConfig {
            cases: SHARE_CASES,
            // Rejected cases count as not reaching the branch, never as a failed run.
            max_global_rejects: SHARE_CASES * 4,
            failure_persistence: None,
            ..RunnerConfig::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    runner
        .run(&strategy, |input| {
            drawn.fetch_add(1, Ordering::Relaxed);
            let hit = property(input)?;
            if hit {
                reached.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })
        .unwrap();
    let (drawn, reached) = (drawn.into_inner(), reached.into_inner());
    let share = reached as f64 / drawn as f64;
    eprintln!(
        "{name}: {reached} of {drawn} drawn cases reached the branch ({:.0}%)",
        share * 100.0
    );
    share
}

fn assert_share(name: &str, share: f64) {
    assert!(
        share >= MIN_SHARE,
        "{name} reaches its branch in {:.0}% of cases only (at least {:.0}% expected): bias its generator",
        share * 100.0,
        MIN_SHARE * 100.0
    );
}

#[test]
fn never_scales_above_max_provisions_reaches_a_scale_up() {
    let name = "prop_never_scales_above_max_provisions (Start or Finish)";
    let share = reach_share(
        name,
        never_scales_above_max_provisions_input(),
        never_scales_above_max_provisions,
    );
    assert_share(name, share);
}

#[test]
fn scales_at_least_one_below_the_cap_reaches_a_start() {
    let name = "prop_scales_at_least_one_below_the_cap (Start, or demand below the cap)";
    let share = reach_share(
        name,
        scales_at_least_one_below_the_cap_input(),
        scales_at_least_one_below_the_cap,
    );
    assert_share(name, share);
}

#[test]
fn never_starts_while_in_flight_reaches_a_finish() {
    let name = "prop_never_starts_while_in_flight (Finish)";
    let share = reach_share(
        name,
        never_starts_while_in_flight_input(),
        never_starts_while_in_flight,
    );
    assert_share(name, share);
}

#[test]
fn never_starts_from_the_released_from_count_reaches_the_guard() {
    let name = "prop_never_starts_from_the_released_from_count (Hold::AlreadyScaledFrom)";
    let share = reach_share(
        name,
        never_starts_from_the_released_from_count_input(),
        never_starts_from_the_released_from_count,
    );
    assert_share(name, share);
}

#[test]
fn an_early_release_never_scales_reaches_a_release() {
    let name = "prop_an_early_release_never_scales (in flight with a reason, not rejected)";
    let share = reach_share(
        name,
        an_early_release_never_scales_input(),
        an_early_release_never_scales,
    );
    assert_share(name, share);
}

#[test]
fn finishing_is_idempotent_reaches_a_start_or_finish() {
    let name = "prop_finishing_is_idempotent (Start or Finish applied)";
    let share = reach_share(
        name,
        finishing_is_idempotent_input(),
        finishing_is_idempotent,
    );
    assert_share(name, share);
    // Finishing itself, not only starting, is reached often.
    let finish = reach_share(
        "prop_finishing_is_idempotent (Finish applied)",
        finishing_is_idempotent_input(),
        |(c, o)| {
            let finishes = matches!(
                decide_scaling(&Settings::Enabled(c.clone()), &o, t0()),
                Decision::Finish { .. }
            );
            Ok(finishing_is_idempotent((c, o))? && finishes)
        },
    );
    assert!(
        finish >= 0.2,
        "Finish reached in {:.0}% only",
        finish * 100.0
    );
}

#[test]
fn release_only_when_all_claims_settled_reaches_a_release() {
    let name = "prop_release_only_when_all_claims_settled (Release)";
    let share = reach_share(
        name,
        release_only_when_all_claims_settled_input(),
        release_only_when_all_claims_settled,
    );
    assert_share(name, share);
}
