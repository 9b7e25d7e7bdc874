//! Every controller decides in its decide crate and executes through the runtime: a condition or
//! an Event is part of the plan decide returns (`ebb_core::Plan`), and the executor records it.
//! No file of a controller's binary crate (its reconcilers, watches, `plan`) builds one, so what
//! a pass reports is tested where it is decided, without a cluster.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// What building a condition or an Event looks like in code.
const BUILDS: [&str; 7] = [
    "ConditionUpdate",
    "set_condition",
    "Notice::",
    "Notice {",
    "EventKind",
    ".record(",
    ".notify(",
];

/// `text` without its tests and comments.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where `code` builds a condition or an Event: each line and what it uses.
fn builds(code: &str) -> Vec<(usize, &'static str)> {
    code.lines()
        .enumerate()
        .flat_map(|(i, line)| {
            BUILDS
                .iter()
                .filter(move |token| line.contains(*token))
                .map(move |token| (i + 1, *token))
        })
        .collect()
}

/// The source files of every controller's binary crate (`controllers/<name>/src`), tests aside.
fn binary_sources() -> Vec<PathBuf> {
    let controllers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../controllers");
    let mut files = Vec::new();
    for controller in std::fs::read_dir(&controllers).unwrap() {
        let src = controller.unwrap().path().join("src");
        let Ok(entries) = std::fs::read_dir(&src) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".rs") && !name.ends_with("_tests.rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn no_controller_binary_builds_a_condition_or_an_event() {
    let files = binary_sources();
    let reconcilers = files.iter().filter(|f| f.ends_with("reconcile.rs")).count();
    assert_eq!(
        reconcilers, 4,
        "the four reconcilers were not found: {files:?}"
    );
    let found: Vec<String> = files
        .iter()
        .flat_map(|file| {
            let code = code_of(&std::fs::read_to_string(file).unwrap());
            builds(&code)
                .into_iter()
                .map(|(line, token)| format!("{}:{line}: {token}", file.display()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        found.is_empty(),
        "conditions and Events belong in the decide crates' plans:\n{}",
        found.join("\n")
    );
}

/// The check finds a condition or an Event built in code, and not one named in a comment.
#[test]
fn the_check_sees_code_not_comments() {
    let code = code_of(
        "// set_condition in a comment\nlet n = Notice::warning(\"A\", \"B\", m);\nctx.events.record(&r, k, a, b, c);\n#[cfg(test)]\nset_condition(x);",
    );
    assert_eq!(builds(&code), [(2, "Notice::"), (3, ".record(")]);
}
