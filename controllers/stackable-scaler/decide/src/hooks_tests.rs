use super::*;

fn ctx(previous: i32, desired: i32) -> ScalingContext {
    ScalingContext {
        scaler_name: "s".into(),
        namespace: "ns".into(),
        previous_replicas: previous,
        desired_replicas: desired,
        scale_event: 1,
        attempt: 0,
        failure: None,
        starts: true,
    }
}

#[test]
fn scaling_down_removes_the_highest_ordinals() {
    let c = ctx(5, 2);
    assert_eq!(c.direction(), ScaleDirection::Down);
    assert_eq!(c.removed_ordinals().collect::<Vec<_>>(), vec![2, 3, 4]);
    assert!(c.added_ordinals().is_empty());
}

#[test]
fn scaling_up_adds_ordinals_after_the_existing_ones() {
    let c = ctx(3, 5);
    assert_eq!(c.direction(), ScaleDirection::Up);
    assert_eq!(c.added_ordinals().collect::<Vec<_>>(), vec![3, 4]);
    assert!(c.removed_ordinals().is_empty());
}

#[test]
fn scaling_to_and_from_zero() {
    assert_eq!(ctx(0, 2).added_ordinals().collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(ctx(2, 0).removed_ordinals().collect::<Vec<_>>(), vec![0, 1]);
}

#[test]
fn no_change_is_up_as_in_stackable_s_rule_and_has_no_ordinals() {
    let c = ctx(3, 3);
    assert_eq!(c.direction(), ScaleDirection::Up);
    assert!(c.added_ordinals().is_empty() && c.removed_ordinals().is_empty());
}

#[test]
fn negative_values_never_produce_negative_ordinals() {
    let c = ctx(-4, 2);
    assert_eq!(c.added_ordinals().collect::<Vec<_>>(), vec![0, 1]);
    let c = ctx(2, -4);
    assert_eq!(c.removed_ordinals().collect::<Vec<_>>(), vec![0, 1]);
}

#[tokio::test]
async fn no_hooks_answer_done() {
    let c = ctx(1, 2);
    for kind in [HookKind::PreScale, HookKind::PostScale, HookKind::OnFailure] {
        assert_eq!(call_hook(&NoHooks, kind, &c).await, Ok(HookOutcome::Done));
    }
}
