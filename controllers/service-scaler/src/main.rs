//! `service-scaler`: run the controller, `plan` a decision offline, or `cleanup` before an uninstall.

ebb_runtime::main!(service_scaler::ServiceScalerController);
