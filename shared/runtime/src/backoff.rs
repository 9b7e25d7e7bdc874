//! Per-object exponential backoff for `error_policy`: a transient failure of one object retries
//! after 1 s, 2 s, 4 s ... up to five minutes, and a success resets it. Other objects are unaffected.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use kube::{Resource, ResourceExt};

/// The longest wait between retries of one object.
pub const MAX_DELAY: Duration = Duration::from_secs(300);

/// Consecutive failures per object key.
#[derive(Debug, Default)]
pub struct ErrorBackoff {
    failures: Mutex<HashMap<String, u32>>,
}

impl ErrorBackoff {
    /// No failures recorded.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a failure of `key` and returns how long to wait before retrying it.
    pub fn failed(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let n = failures.entry(key.to_owned()).or_insert(0);
        *n = n.saturating_add(1);
        delay(*n)
    }

    /// Forgets the failures of `key` after a successful reconcile.
    pub fn succeeded(&self, key: &str) {
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

/// `2^(failures - 1)` seconds, capped at [`MAX_DELAY`].
pub fn delay(failures: u32) -> Duration {
    let exponent = failures.saturating_sub(1).min(16);
    Duration::from_secs(1u64 << exponent).min(MAX_DELAY)
}

/// `namespace/name` (or `name` for cluster-scoped objects): the key of an object in logs and backoff.
pub fn object_key<K: Resource>(object: &K) -> String {
    match object.namespace() {
        Some(ns) => format!("{ns}/{}", object.name_any()),
        None => object.name_any(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_per_failure_and_cap_at_five_minutes() {
        let b = ErrorBackoff::new();
        let delays: Vec<u64> = (0..12).map(|_| b.failed("ns/a").as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert_eq!(delay(u32::MAX), MAX_DELAY);
    }

    #[test]
    fn success_resets_only_that_object() {
        let b = ErrorBackoff::new();
        b.failed("ns/a");
        b.failed("ns/a");
        b.failed("ns/b");
        b.succeeded("ns/a");
        assert_eq!(b.failed("ns/a").as_secs(), 1);
        assert_eq!(b.failed("ns/b").as_secs(), 2);
    }
}
