//! Every controller decides in its decide crate and executes through the runtime: a condition or
//! an Event is part of the plan decide returns (`ebb_core::Plan`), and the executor records it.
//! No file of a controller's binary crate (its reconcilers, watches, `plan`) builds one, so what
//! a pass reports is tested where it is decided, without a cluster.
//!
//! And every reconcile has the same two-phase body: `decide::reads` says what to read, the
//! reconciler reads it, `decide::decide` returns the pass. A reconcile.rs calls no other function
//! of its decide crate but the entries of the two other paths a pass can take: `uninstall`
//! (`cleanup`, before an uninstall) and `decide_unreadable` (an object that does not deserialize:
//! there is nothing to read).

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

/// The source files of every controller's binary crate (`controllers/<name>/src`, its
/// submodules' folders included), tests aside.
fn binary_sources() -> Vec<PathBuf> {
    let controllers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../controllers");
    let mut files = Vec::new();
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&controllers)
        .unwrap()
        .map(|controller| controller.unwrap().path().join("src"))
        .collect();
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                folders.push(path);
            } else if name.ends_with(".rs") && !name.ends_with("_tests.rs") {
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
        reconcilers, 5,
        "the reconcilers (four controllers, FleetSchedule) were not found: {files:?}"
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

/// The functions of a decide crate a reconcile.rs may call.
const ENTRIES: [&str; 4] = ["reads", "decide", "uninstall", "decide_unreadable"];

/// The functions of a decide crate `code` calls or hands on (`decide::name`,
/// `decide::module::name`, or a function it imports by `use crate::decide::{...}`) that are not
/// [`ENTRIES`], with their lines.
/// Re-exports (`pub use`) call nothing.
fn decide_calls(code: &str) -> Vec<(usize, String)> {
    decide_uses(code)
        .into_iter()
        .filter(|(_, name, _)| !ENTRIES.contains(&name.as_str()))
        .map(|(line, name, _)| (line, name))
        .collect()
}

/// Every function of a decide crate `code` names (see [`decide_calls`]): line, name, and
/// whether it is called there.
fn decide_uses(code: &str) -> Vec<(usize, String, bool)> {
    let lowercase = |name: &str| name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_');
    let mut found = Vec::new();
    let mut in_use = false;
    for (i, line) in code.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("use crate::decide") {
            in_use = true;
        }
        if in_use {
            // Modules (`self`, `writes::X`) are paths, not calls; a lowercase leaf is a function.
            let names = trimmed
                .trim_start_matches("use crate::decide")
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .filter(|name| !name.is_empty() && *name != "self" && *name != "::");
            for name in names {
                let leaf = name.rsplit("::").next().unwrap_or(name);
                if !name.ends_with("::") && lowercase(leaf) {
                    found.push((i + 1, leaf.to_owned(), false));
                }
            }
            in_use = !trimmed.contains(';');
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("decide::") {
            rest = &rest[at + "decide::".len()..];
            let path: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            // A function called or handed on as a value (`.and_then(decide::kind_of)`).
            let leaf = path.rsplit("::").next().unwrap_or(&path);
            if lowercase(leaf) {
                let called = rest[path.len()..].starts_with('(');
                found.push((i + 1, leaf.to_owned(), called));
            }
        }
    }
    found
}

#[test]
fn every_reconcile_reads_then_decides_once() {
    let files: Vec<PathBuf> = binary_sources()
        .into_iter()
        .filter(|f| f.ends_with("reconcile.rs"))
        .collect();
    // The four controllers', and FleetSchedule's room in service-scaler.
    assert_eq!(files.len(), 5, "the reconcilers were not found: {files:?}");
    let mut found = Vec::new();
    for file in &files {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let called: Vec<String> = decide_uses(&code)
            .into_iter()
            .filter(|(_, _, called)| *called)
            .map(|(_, name, _)| name)
            .collect();
        for entry in ["reads", "decide"] {
            if !called.iter().any(|name| name == entry) {
                found.push(format!("{}: calls no decide::{entry}", file.display()));
            }
        }
        found.extend(
            decide_calls(&code)
                .into_iter()
                .map(|(line, name)| format!("{}:{line}: decide::{name}", file.display())),
        );
    }
    assert!(
        found.is_empty(),
        "a reconcile reads what decide::reads names and hands decide::decide's plan on; \
         everything else it decides belongs in decide:\n{}",
        found.join("\n")
    );
}

/// The check finds decide's functions (its types' too) called, handed on or imported, not its
/// types, modules, constants or entries.
#[test]
fn the_reconcile_check_sees_functions_not_types() {
    let code = "use crate::decide::{self, Observed, reads, settings_of};\n\
                use crate::decide::writes::{SCALE_UP, kind_of};\n\
                pub use crate::decide::{FINALIZER, requeue_after};\n\
                let p = decide::decide(&o, now);\n\
                let t = decide::resolve_target(&s);\n\
                let k: decide::TargetKind = decide::writes::change_write(c, m);\n\
                let x = decide::Step::describe;\n\
                let y = write.reason.and_then(decide::kind_of_reason);";
    let found: Vec<(usize, String)> = decide_calls(code);
    assert_eq!(
        found,
        [
            (1, "settings_of".to_owned()),
            (2, "kind_of".to_owned()),
            (5, "resolve_target".to_owned()),
            (6, "change_write".to_owned()),
            (7, "describe".to_owned()),
            (8, "kind_of_reason".to_owned()),
        ]
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
