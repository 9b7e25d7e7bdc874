#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn scaler_id(key: &str, uid: &str) -> ScalerId {
    ScalerId {
        key: key.into(),
        uid: uid.into(),
    }
}

#[test]
fn the_ledger_keeps_only_the_current_operation() {
    let ledger = HookLedger::new();
    let u = scaler_id("ns/s", "u");
    let op1 = Operation {
        scale_event: 1,
        attempt: 0,
    };
    let op2 = Operation {
        scale_event: 2,
        attempt: 0,
    };
    ledger.put(&u, op1.clone(), HookKind::PreScale, Ok(HookOutcome::Done));
    assert_eq!(
        ledger.get(&u, &op1, HookKind::PreScale),
        Some(Ok(HookOutcome::Done))
    );
    assert_eq!(ledger.get(&u, &op2, HookKind::PreScale), None);
    ledger.put(&u, op2.clone(), HookKind::PostScale, Ok(HookOutcome::Done));
    assert_eq!(
        ledger.get(&u, &op1, HookKind::PreScale),
        None,
        "the old operation is gone"
    );
    // A scaler made again under the name is another scaler.
    assert_eq!(
        ledger.get(&scaler_id("ns/s", "v"), &op2, HookKind::PostScale),
        None
    );
    ledger.mark_starting(&scaler_id("ns/t", "w"), op1, HookKind::PreScale);
    assert_eq!(ledger.scalers(), 2);
    // Forgotten by name, as a deletion the watch reports names it.
    ledger.forget("ns/s");
    ledger.forget("ns/t");
    assert_eq!(ledger.get(&u, &op2, HookKind::PostScale), None);
    assert_eq!(ledger.scalers(), 0);
}
