//! Replays every file of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` through its
//! target, so the corpora and every crash once found stay checked by `cargo test`, without AFL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

/// A fuzz target.
type Target = fn(&[u8]);

/// Every target, by the name of its corpus directory.
const TARGETS: [(&str, Target); 6] = [
    ("cron", ebb_fuzz_targets::cron),
    ("duration", ebb_fuzz_targets::duration),
    ("windows", ebb_fuzz_targets::windows),
    ("replicas_config", ebb_fuzz_targets::replicas_config),
    ("crds", ebb_fuzz_targets::crds),
    ("webhook", ebb_fuzz_targets::webhook),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The files of `dir` (none when it does not exist), sorted. Dot files (`.gitkeep`) are skipped.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    files.sort();
    files
}

/// Runs `target` on every file of `dir`; a panic names the file.
fn replay(name: &str, target: Target, dir: &Path) -> usize {
    let inputs = files(dir);
    for path in &inputs {
        let data = fs::read(path).unwrap();
        let outcome = std::panic::catch_unwind(|| target(&data));
        assert!(
            outcome.is_ok(),
            "fuzz target {name} panicked on {} (reproduce: cargo test -p ebb-fuzz-targets)",
            path.display()
        );
    }
    inputs.len()
}

#[test]
fn every_corpus_replays_without_a_panic() {
    for (name, target) in TARGETS {
        let count = replay(name, target, &fuzz_dir().join("corpus").join(name));
        // A missing or empty corpus would make this test pass without checking anything.
        assert!(count > 0, "fuzz/corpus/{name} has no inputs");
    }
}

#[test]
fn every_regression_replays_without_a_panic() {
    for (name, target) in TARGETS {
        replay(name, target, &fuzz_dir().join("regressions").join(name));
    }
}

#[test]
fn every_corpus_directory_names_a_target() {
    for kind in ["corpus", "regressions"] {
        let Ok(entries) = fs::read_dir(fuzz_dir().join(kind)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let dir = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                assert!(
                    TARGETS.iter().any(|(name, _)| *name == dir),
                    "fuzz/{kind}/{dir} is not a target"
                );
            }
        }
    }
}
