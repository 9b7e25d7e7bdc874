//! The cluster around scaledown-window: the cluster-version operator's upgrades, and a cluster
//! autoscaler that removes idle nodes only while scale-down is enabled.

use jiff::{SignedDuration, Timestamp};

/// The cluster-version operator: `Progressing=True` on ClusterVersion `version` during each
/// upgrade.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Upgrades {
    /// Each upgrade's start and how long it runs.
    pub runs: Vec<(Timestamp, SignedDuration)>,
}

impl Upgrades {
    /// Whether an upgrade is in progress at `now` (start included, end excluded).
    pub fn progressing(&self, now: Timestamp) -> bool {
        self.runs
            .iter()
            .any(|(start, length)| *start <= now && now < *start + *length)
    }
}

/// The cluster autoscaler's part that ebb steers: nodes are added as soon as they are needed,
/// and a node unneeded for [`Autoscaler::unneeded_time`] is removed, but only while scale-down
/// is enabled (the default `scale-down-unneeded-time` is 10 minutes).
#[derive(Debug, Clone)]
pub struct Autoscaler {
    /// How long a node must be unneeded before it may go.
    pub unneeded_time: SignedDuration,
    /// When each node became unneeded (`None`: needed), oldest node first.
    nodes: Vec<Option<Timestamp>>,
    node_seconds: i64,
    removed: u32,
    last: Timestamp,
}

impl Autoscaler {
    /// `nodes` needed nodes at `now`.
    pub fn new(now: Timestamp, nodes: usize, unneeded_time: SignedDuration) -> Self {
        Self {
            unneeded_time,
            nodes: vec![None; nodes],
            node_seconds: 0,
            removed: 0,
            last: now,
        }
    }

    /// Nodes in the cluster now.
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Nodes removed so far.
    pub fn removed(&self) -> u32 {
        self.removed
    }

    /// Node-hours paid for so far.
    pub fn node_hours(&self) -> f64 {
        self.node_seconds as f64 / 3600.0
    }

    /// At `now` the workloads need `needed` nodes, and scale-down is `enabled` or not.
    pub fn step(&mut self, now: Timestamp, needed: usize, enabled: bool) {
        let elapsed = now.duration_since(self.last).as_secs().max(0);
        self.node_seconds += elapsed * self.nodes.len() as i64;
        self.last = self.last.max(now);
        while self.nodes.len() < needed {
            self.nodes.push(None);
        }
        // The newest nodes are the unneeded ones (workloads pack onto the oldest).
        for (i, idle_since) in self.nodes.iter_mut().enumerate() {
            if i < needed {
                *idle_since = None;
            } else if idle_since.is_none() {
                *idle_since = Some(now);
            }
        }
        if enabled {
            let before = self.nodes.len();
            let unneeded = self.unneeded_time;
            self.nodes
                .retain(|idle| idle.is_none_or(|since| now.duration_since(since) < unneeded));
            self.removed += u32::try_from(before - self.nodes.len()).unwrap_or(u32::MAX);
        }
    }
}

#[cfg(test)]
#[path = "cluster_tests.rs"]
mod tests;
