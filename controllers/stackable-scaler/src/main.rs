//! `stackable-scaler`: run the controller, `plan` a decision offline, or `cleanup` before an uninstall.

ebb_runtime::main!(stackable_scaler::StackableScalerController);
