//! `scaledown-window`: run the controller, `plan` a decision offline, or `cleanup` before an uninstall.

ebb_runtime::main!(scaledown_window::ScaledownWindowController);
