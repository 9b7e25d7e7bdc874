//! A pool of provisioner pods (seed 001: Coder provisioners), each running one job at a time,
//! with a first-come first-served queue in front.
//!
//! - A new pod is ready [`Pool::start_delay`] after it was asked for; a removed pod is an idle
//!   one if there is one (the newest first), else a busy one finishes its job and then goes.
//! - A job arriving while a pod is idle starts at once; otherwise it waits in the queue, and the
//!   time it waited is recorded when a pod takes it.
//! - [`Pool::utilization`] is what the HPA sees: the share of ready pods that are busy, as a
//!   percentage (a busy pod uses its whole CPU request, an idle one [`IDLE_UTILIZATION`]).
//!
//! Events are processed in time order between two calls of [`Pool::advance`], so a job that
//! ends between two looks frees its pod at the instant it ended.

use std::collections::VecDeque;

use jiff::{SignedDuration, Timestamp};

/// The CPU an idle provisioner uses, in percent of its request.
pub const IDLE_UTILIZATION: f64 = 5.0;

/// A job handed to the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    /// Which job (a user of a workshop, say).
    pub id: u64,
    /// When it was submitted.
    pub arrived: Timestamp,
    /// How long a pod works on it.
    pub duration: SignedDuration,
}

/// A job a pod took: how long it waited for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// The job.
    pub id: u64,
    /// When a pod took it.
    pub at: Timestamp,
    /// `at - arrived`.
    pub waited: SignedDuration,
}

#[derive(Debug, Clone)]
struct Pod {
    ready_at: Timestamp,
    busy_until: Option<Timestamp>,
    leaving: bool,
}

/// The pool and its queue.
#[derive(Debug, Clone)]
pub struct Pool {
    /// How long a new pod takes to become ready.
    pub start_delay: SignedDuration,
    pods: Vec<Pod>,
    queue: VecDeque<Job>,
    started: Vec<Started>,
    now: Timestamp,
}

impl Pool {
    /// `replicas` ready pods at `now`, no jobs.
    pub fn new(now: Timestamp, replicas: usize, start_delay: SignedDuration) -> Self {
        let pods = (0..replicas)
            .map(|_| Pod {
                ready_at: now,
                busy_until: None,
                leaving: false,
            })
            .collect();
        Self {
            start_delay,
            pods,
            queue: VecDeque::new(),
            started: Vec::new(),
            now,
        }
    }

    /// Pods that count as replicas (asked for and not leaving).
    pub fn replicas(&self) -> usize {
        self.pods.iter().filter(|p| !p.leaving).count()
    }

    /// Jobs waiting for a pod.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Every job a pod took, in the order they were taken.
    pub fn started(&self) -> &[Started] {
        &self.started
    }

    /// Pods running a job now.
    pub fn busy(&self) -> usize {
        self.pods.iter().filter(|p| p.busy_until.is_some()).count()
    }

    /// Pods that are ready and idle now.
    pub fn idle(&self) -> usize {
        self.pods
            .iter()
            .filter(|p| p.ready_at <= self.now && p.busy_until.is_none())
            .count()
    }

    /// The HPA's view: the average CPU of the ready pods in percent of their request; `None`
    /// without a ready pod.
    pub fn utilization(&self) -> Option<f64> {
        let ready: Vec<&Pod> = self
            .pods
            .iter()
            .filter(|p| p.ready_at <= self.now)
            .collect();
        if ready.is_empty() {
            return None;
        }
        let total: f64 = ready
            .iter()
            .map(|p| {
                if p.busy_until.is_some() {
                    100.0
                } else {
                    IDLE_UTILIZATION
                }
            })
            .sum();
        Some(total / ready.len() as f64)
    }

    /// A job arrives at `job.arrived` (not before the last [`Self::advance`]).
    pub fn submit(&mut self, job: Job) {
        self.advance(job.arrived);
        self.queue.push_back(job);
        self.dispatch(job.arrived);
    }

    /// The Deployment now asks for `replicas` pods, at `now`.
    pub fn scale(&mut self, now: Timestamp, replicas: usize) {
        self.advance(now);
        let current = self.replicas();
        if replicas > current {
            for _ in current..replicas {
                self.pods.push(Pod {
                    ready_at: now + self.start_delay,
                    busy_until: None,
                    leaving: false,
                });
            }
            return;
        }
        for _ in replicas..current {
            // The newest idle (or not yet ready) pod goes at once; else a busy one leaves
            // after its job.
            if let Some(i) = self
                .pods
                .iter()
                .rposition(|p| !p.leaving && p.busy_until.is_none())
            {
                self.pods.remove(i);
            } else if let Some(p) = self.pods.iter_mut().rev().find(|p| !p.leaving) {
                p.leaving = true;
            }
        }
    }

    /// Moves the pool to `now`: jobs end, pods become ready, queued jobs start, in time order.
    pub fn advance(&mut self, now: Timestamp) {
        while let Some(at) = self.next_event().filter(|at| *at <= now) {
            self.now = self.now.max(at);
            for pod in &mut self.pods {
                if pod.busy_until.is_some_and(|until| until <= at) {
                    pod.busy_until = None;
                }
            }
            self.pods.retain(|p| !(p.leaving && p.busy_until.is_none()));
            self.dispatch(at);
        }
        self.now = self.now.max(now);
    }

    /// The next instant something changes by itself: a job ends or a pod becomes ready.
    fn next_event(&self) -> Option<Timestamp> {
        self.pods
            .iter()
            .filter_map(|p| match p.busy_until {
                Some(until) => Some(until),
                None if p.ready_at > self.now => Some(p.ready_at),
                None => None,
            })
            .min()
    }

    /// Idle ready pods take queued jobs, oldest first.
    fn dispatch(&mut self, at: Timestamp) {
        self.now = self.now.max(at);
        while !self.queue.is_empty() {
            let Some(pod) = self
                .pods
                .iter_mut()
                .find(|p| !p.leaving && p.ready_at <= at && p.busy_until.is_none())
            else {
                return;
            };
            let Some(job) = self.queue.pop_front() else {
                return;
            };
            pod.busy_until = Some(at + job.duration);
            self.started.push(Started {
                id: job.id,
                at,
                waited: at.duration_since(job.arrived),
            });
        }
    }
}

#[cfg(test)]
#[path = "provisioners_tests.rs"]
mod tests;
