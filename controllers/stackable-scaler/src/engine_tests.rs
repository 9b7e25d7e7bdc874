#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

#[test]
fn the_ledger_keeps_only_the_current_operation() {
    let ledger = HookLedger::new();
    let op1 = Operation {
        scale_event: 1,
        attempt: 0,
    };
    let op2 = Operation {
        scale_event: 2,
        attempt: 0,
    };
    ledger.put("u", op1.clone(), HookKind::PreScale, Ok(HookOutcome::Done));
    assert_eq!(
        ledger.get("u", &op1, HookKind::PreScale),
        Some(Ok(HookOutcome::Done))
    );
    assert_eq!(ledger.get("u", &op2, HookKind::PreScale), None);
    ledger.put("u", op2.clone(), HookKind::PostScale, Ok(HookOutcome::Done));
    assert_eq!(
        ledger.get("u", &op1, HookKind::PreScale),
        None,
        "the old operation is gone"
    );
    ledger.forget("u");
    assert_eq!(ledger.get("u", &op2, HookKind::PostScale), None);
}
