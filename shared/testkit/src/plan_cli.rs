//! A controller's `plan` subcommand run as a user runs it, for its `tests/plan.rs`: the built
//! binary, the repository's examples, and files in a temp dir that remove themselves.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// `examples/<name>` of the repository.
pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// The `plan` subcommand of one binary (`env!("CARGO_BIN_EXE_<name>")` in the test).
#[derive(Clone, Copy, Debug)]
pub struct PlanCli(pub &'static str);

impl PlanCli {
    /// `<binary> plan <args>`, waited for. The machine's own zoneinfo is hidden (`TZDIR` names no
    /// directory), so answers come from the data ebb bundles on every machine.
    pub fn run(self, args: &[&str]) -> Output {
        let command = Command::new(self.0)
            .arg("plan")
            .args(args)
            .env("TZDIR", "/nonexistent/ebb-tests")
            .output();
        match command {
            Ok(out) => out,
            Err(e) => panic!("cannot run {}: {e}", self.0),
        }
    }

    /// `<binary> plan <args>` (`--output json` among them), which must succeed and print one JSON
    /// line: that line.
    pub fn json(self, args: &[&str]) -> Value {
        json_of(&self.run(args))
    }
}

/// The one JSON line a successful `plan` printed.
pub fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "plan failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 1, "one line: {text}");
    match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(e) => panic!("not JSON ({e}): {text}"),
    }
}

/// A file in a temp dir of this test process, removed when dropped.
#[derive(Debug)]
pub struct TempFile(PathBuf);

impl TempFile {
    /// Writes `text` to `name` in this process's temp dir.
    pub fn new(name: &str, text: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("ebb-plan-{}", std::process::id()));
        let path = dir.join(name);
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, text)) {
            panic!("cannot write {}: {e}", path.display());
        }
        Self(path)
    }

    /// Its path as text, for an argument.
    pub fn arg(&self) -> &str {
        self.0.to_str().unwrap_or_default()
    }
}

impl std::ops::Deref for TempFile {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
