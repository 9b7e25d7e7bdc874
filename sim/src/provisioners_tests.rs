#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_testkit::utc;

use super::*;

fn t(minutes: i64) -> Timestamp {
    utc("2026-03-10T09:00:00Z") + SignedDuration::from_mins(minutes)
}

fn job(id: u64, arrived: i64, minutes: i64) -> Job {
    Job {
        id,
        arrived: t(arrived),
        duration: SignedDuration::from_mins(minutes),
    }
}

fn waits(pool: &Pool) -> Vec<(u64, i64)> {
    pool.started()
        .iter()
        .map(|s| (s.id, s.waited.as_mins()))
        .collect()
}

#[test]
fn one_job_per_pod_and_the_rest_wait_in_order() {
    let mut pool = Pool::new(t(0), 2, SignedDuration::from_mins(1));
    for id in 0..4 {
        pool.submit(job(id, 0, 10));
    }
    assert_eq!(pool.queued(), 2);
    assert_eq!(pool.busy(), 2);
    assert_eq!(pool.utilization(), Some(100.0));
    pool.advance(t(25));
    // Jobs 2 and 3 started when 0 and 1 ended, at minute 10.
    assert_eq!(waits(&pool), [(0, 0), (1, 0), (2, 10), (3, 10)]);
    assert_eq!(pool.utilization(), Some(IDLE_UTILIZATION));
}

#[test]
fn a_job_ending_between_two_looks_frees_its_pod_at_that_instant() {
    let mut pool = Pool::new(t(0), 1, SignedDuration::from_mins(1));
    pool.submit(job(0, 0, 3));
    pool.submit(job(1, 1, 3));
    pool.submit(job(2, 2, 3));
    pool.advance(t(60));
    assert_eq!(waits(&pool), [(0, 0), (1, 2), (2, 4)]);
}

#[test]
fn new_pods_take_queued_jobs_once_ready() {
    let mut pool = Pool::new(t(0), 1, SignedDuration::from_mins(2));
    for id in 0..3 {
        pool.submit(job(id, 0, 30));
    }
    pool.scale(t(1), 3);
    assert_eq!(pool.replicas(), 3);
    assert_eq!(
        pool.utilization(),
        Some(100.0),
        "new pods are not ready yet"
    );
    pool.advance(t(5));
    assert_eq!(waits(&pool), [(0, 0), (1, 3), (2, 3)]);
}

#[test]
fn scaling_down_removes_idle_pods_first_and_lets_busy_ones_finish() {
    let mut pool = Pool::new(t(0), 3, SignedDuration::from_mins(1));
    pool.submit(job(0, 0, 10));
    pool.scale(t(1), 1);
    assert_eq!(pool.replicas(), 1);
    assert_eq!(pool.utilization(), Some(100.0), "the busy pod stayed");
    pool.scale(t(2), 0);
    assert_eq!(pool.replicas(), 0);
    // The busy pod finishes its job, then goes.
    pool.advance(t(11));
    assert_eq!(pool.utilization(), None);
    pool.submit(job(1, 12, 1));
    assert_eq!(pool.queued(), 1, "no pod left to take it");
}
