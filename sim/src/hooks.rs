//! Hook Jobs (stackable-scaler's `spec.hooks`) that take time and may fail: what the Job
//! controller and the hook's pods would do.
//!
//! Each hook (`preScale`, `postScale`, `onFailure`) has a [`Behaviour`]: how long a run takes,
//! how many of its first runs fail, and the share of later runs that fail. A Job's outcome is
//! drawn when it is created, so it does not depend on how often it is looked at. Creating a Job
//! whose name exists does nothing, as the API server answers 409: every run is counted once.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Deserialize;

use crate::Dice;
use crate::draw::Spread;

/// How one hook's Jobs behave.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Behaviour {
    /// How long a run takes, to success or failure.
    pub duration: Spread,
    /// The first this many runs fail (a hook that fails once, then works on retry).
    #[serde(default)]
    pub fail_first: u32,
    /// These runs fail (1 is the first run of the hook): a hook that works, then fails once.
    #[serde(default)]
    pub fail_runs: Vec<u32>,
    /// Of the later runs, the share that fails (0 to 1).
    #[serde(default)]
    pub failure_share: f64,
}

/// A Job's phase, as its status conditions say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Its pod runs.
    Running,
    /// `Complete=True`.
    Succeeded,
    /// `Failed=True`.
    Failed,
}

/// One Job that ran (or runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The hook it ran (`preScale` ...).
    pub hook: String,
    /// When it was created.
    pub started: Timestamp,
    /// When it ends.
    pub ends: Timestamp,
    /// Whether it ends in success.
    pub succeeds: bool,
}

/// Every hook Job of a simulation, by name.
#[derive(Debug, Clone, Default)]
pub struct HookJobs {
    behaviours: BTreeMap<String, Behaviour>,
    jobs: BTreeMap<String, Run>,
    runs: BTreeMap<String, u32>,
}

impl HookJobs {
    /// Jobs of each hook behave as `behaviours` says (by hook name).
    pub fn new(behaviours: BTreeMap<String, Behaviour>) -> Self {
        Self {
            behaviours,
            ..Self::default()
        }
    }

    /// A Job `name` running `hook` is created at `now`; `false` when the name exists already.
    /// A hook without a behaviour succeeds at once.
    pub fn create(&mut self, name: &str, hook: &str, now: Timestamp, dice: &mut Dice) -> bool {
        if self.jobs.contains_key(name) {
            return false;
        }
        let attempt = self.runs.entry(hook.to_owned()).or_default();
        *attempt += 1;
        let (ends, succeeds) = match self.behaviours.get(hook) {
            Some(b) => {
                let ends = now + dice.duration(&b.duration);
                let fails = *attempt <= b.fail_first
                    || b.fail_runs.contains(attempt)
                    || dice.chance(b.failure_share);
                (ends, !fails)
            }
            None => (now, true),
        };
        self.jobs.insert(
            name.to_owned(),
            Run {
                hook: hook.to_owned(),
                started: now,
                ends,
                succeeds,
            },
        );
        true
    }

    /// Job `name`'s phase at `now`; `None` when it was never created.
    pub fn phase(&self, name: &str, now: Timestamp) -> Option<Phase> {
        let run = self.jobs.get(name)?;
        Some(match (now >= run.ends, run.succeeds) {
            (false, _) => Phase::Running,
            (true, true) => Phase::Succeeded,
            (true, false) => Phase::Failed,
        })
    }

    /// Every Job created, by name.
    pub fn runs(&self) -> &BTreeMap<String, Run> {
        &self.jobs
    }
}

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;
