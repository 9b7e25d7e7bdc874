//! Waiting for the cluster to reach a state.

use std::future::Future;
use std::time::Duration;

use anyhow::{Result, bail};
use tokio::time::{Instant, sleep};

/// Polls `probe` every 100 ms until it returns `Some`, or fails after `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, probe: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    eventually_every(timeout, Duration::from_millis(100), probe).await
}

/// [`eventually`] polling every `every`: for a probe that costs the process it watches, such
/// as a scrape of a controller holding 100 000 objects (millions of series lines).
pub async fn eventually_every<T, F, Fut>(
    timeout: Duration,
    every: Duration,
    mut probe: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe().await {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            bail!("condition not reached within {timeout:?}");
        }
        sleep(every).await;
    }
}

/// Polls `probe` every 200 ms for `duration` and fails on the first `Err` (a state that must
/// hold for a while, e.g. "the HPA keeps its value").
pub async fn settle<F, Fut>(duration: Duration, mut probe: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let deadline = Instant::now() + duration;
    while Instant::now() < deadline {
        probe().await?;
        sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}
