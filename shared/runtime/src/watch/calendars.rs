//! HolidayCalendars as the controllers whose windows name them read them: one cluster-wide watch
//! per process fills a [`Cache`], and each change of a calendar is passed to every controller
//! that asked ([`CalendarCache::changes`]), which runs a pass of the objects naming it. So a
//! calendar edited (or created, or deleted) later takes effect without a restart, and nothing is
//! read from the API server per pass.
//!
//! Only an object that names calendars waits for the cache: [`CalendarCache::resolve`] of no
//! names answers at once, so a cluster without the CRD, or a cache still listing, holds back no
//! other object.
//!
//! Each calendar is decoded on its own ([`Guarded`]): one that does not fit ebb's type (an older
//! or newer CRD than this controller's, say) is logged and held as invalid, so the objects naming
//! it say why in their condition, and every other calendar is served as usual. A typed watch would
//! fail its whole list at that one object, and no calendar would ever be read.

use std::sync::{Arc, Mutex, PoisonError};

use ebb_crds::calendar::HolidayCalendar;
use ebb_schedule::Calendars;
use futures::channel::mpsc;
use futures::{Stream, StreamExt};
use kube::runtime::watcher::{self, Event};
use kube::{Api, ResourceExt};
use prometheus_client::metrics::gauge::Gauge;

use crate::watch::cache::{Cache, Cold, Feed};
use crate::watch::guard::Guarded;

/// Where the names of changed calendars go.
type Subscribers = Arc<Mutex<Vec<mpsc::UnboundedSender<String>>>>;

/// The HolidayCalendars of the cluster as the watch last saw them. Clones share them.
#[derive(Clone, Default)]
pub struct CalendarCache {
    cache: Cache<Guarded<HolidayCalendar>>,
    subscribers: Subscribers,
}

impl CalendarCache {
    /// The kind, as the undecodable-objects gauge names it.
    pub const KIND: &str = "HolidayCalendar";

    /// The cache, and the watch that fills it and tells the subscribers (to be run until the
    /// shutdown beside the controllers, which it never holds back). `undecodable` counts the
    /// calendars that do not decode (`ControllerMetrics::undecodable(CalendarCache::KIND)`).
    pub fn watch(
        client: &kube::Client,
        contact: &crate::ApiContact,
        shutdown: &crate::Shutdown,
        undecodable: Gauge,
    ) -> (
        Self,
        impl std::future::Future<Output = ()> + Send + 'static + use<>,
    ) {
        let mut cache = Cache::default();
        let feed = cache.scope();
        let this = Self {
            cache,
            subscribers: Subscribers::default(),
        };
        let subscribers = this.subscribers.clone();
        undecodable.set(0);
        let (client, contact, token) = (client.clone(), contact.clone(), shutdown.token());
        let run = async move {
            // The calendars that do not decode: they have no status to report in, so a gauge
            // (and a log line) say it.
            let mut invalid = std::collections::BTreeSet::new();
            feed.events(
                Api::all(client),
                watcher::Config::default().any_semantic(),
                &contact,
                |_| {},
            )
            .take_until(token.cancelled_owned())
            .for_each(|event| {
                match event {
                    // A (re)list: what it lists is all there is.
                    Ok(Event::Init) => invalid.clear(),
                    Ok(Event::InitApply(calendar) | Event::Apply(calendar)) => {
                        let name = calendar.name_any();
                        match &calendar.0 {
                            Err(bad) => {
                                tracing::warn!(
                                    calendar = %name,
                                    error = %bad.error,
                                    "HolidayCalendar does not decode; windows naming it are invalid until it is fixed"
                                );
                                invalid.insert(name.clone());
                            }
                            Ok(_) => {
                                invalid.remove(&name);
                            }
                        }
                        tell(&subscribers, &name);
                    }
                    Ok(Event::Delete(calendar)) => {
                        let name = calendar.name_any();
                        invalid.remove(&name);
                        tell(&subscribers, &name);
                    }
                    Ok(Event::InitDone) | Err(_) => {}
                }
                undecodable.set(i64::try_from(invalid.len()).unwrap_or(i64::MAX));
                async {}
            })
            .await;
        };
        (this, run)
    }

    /// A cache that holds `calendars` and never changes: for tests and offline use.
    pub fn of(calendars: impl IntoIterator<Item = HolidayCalendar>) -> Self {
        let (this, mut feed) = Self::fed();
        feed.fill(calendars.into_iter().map(|c| Guarded(Ok(c))));
        this
    }

    /// A cache filled by hand through the returned [`Feed`] (each `fill` replaces what it
    /// holds), for tests; cold until the first `fill`.
    pub fn fed() -> (Self, Feed<Guarded<HolidayCalendar>>) {
        let mut cache = Cache::default();
        let feed = cache.scope();
        let this = Self {
            cache,
            subscribers: Subscribers::default(),
        };
        (this, feed)
    }

    /// The name of every calendar that changes from now on (created, edited, deleted; and each
    /// one of the first list).
    pub fn changes(&self) -> impl Stream<Item = String> + Send + 'static + use<> {
        let (sender, receiver) = mpsc::unbounded();
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(sender);
        receiver
    }

    /// The calendars of `names`, parsed, as [`Calendars`] the pure rules look names up in (a name
    /// not held is missing there).
    ///
    /// # Errors
    /// [`Cold`] when a name is asked for before the watch has listed in full.
    pub fn resolve<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Result<Calendars, Cold> {
        let names: Vec<&str> = names.into_iter().collect();
        let mut calendars = Calendars::new();
        if names.is_empty() {
            return Ok(calendars);
        }
        for calendar in self.cache.all()? {
            let name = calendar.name_any();
            if !names.contains(&name.as_str()) {
                continue;
            }
            match &calendar.0 {
                Ok(calendar) => calendars.insert(&name, &calendar.spec.dates),
                Err(invalid) => calendars.insert_invalid(&name, invalid.error.clone()),
            }
        }
        Ok(calendars)
    }
}

/// Tells every subscriber still listening that `name` changed.
fn tell(subscribers: &Subscribers, name: &str) {
    subscribers
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|s| s.unbounded_send(name.to_owned()).is_ok());
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use ebb_crds::calendar::HolidayCalendarSpec;
    use ebb_schedule::ScheduleError;

    fn calendar(name: &str, dates: &[&str]) -> HolidayCalendar {
        HolidayCalendar::new(
            name,
            HolidayCalendarSpec {
                description: None,
                dates: dates.iter().map(|d| (*d).to_owned()).collect(),
            },
        )
    }

    #[test]
    fn only_the_names_asked_for_are_resolved_and_a_bad_calendar_is_named() {
        let cache = CalendarCache::of([
            calendar("ch", &["2026-12-25"]),
            calendar("bad", &["2026-02-30"]),
            calendar("other", &["2026-01-01"]),
        ]);
        let got = cache.resolve(["ch", "bad", "missing"]).unwrap();
        assert_eq!(got.dates("ch").unwrap().len(), 1);
        assert!(matches!(
            got.dates("bad"),
            Err(ScheduleError::CalendarInvalid { name, .. }) if name == "bad"
        ));
        assert_eq!(
            got.dates("missing").unwrap_err().to_string(),
            "HolidayCalendar \"missing\" not found"
        );
        // Not asked for: not there.
        assert!(got.dates("other").is_err());
    }

    #[test]
    fn no_names_need_no_listed_cache() {
        let (cold, _feed) = CalendarCache::fed();
        assert!(cold.resolve([]).unwrap().is_empty());
        assert!(cold.resolve(["ch"]).is_err());
    }

    #[test]
    fn every_subscriber_hears_of_a_change_and_a_gone_one_is_dropped() {
        let cache = CalendarCache::default();
        let mut first = cache.changes();
        let second = cache.changes();
        drop(second);
        tell(&cache.subscribers, "ch");
        assert_eq!(cache.subscribers.lock().unwrap().len(), 1);
        assert_eq!(
            futures::executor::block_on(first.next()),
            Some("ch".to_owned())
        );
    }
}
