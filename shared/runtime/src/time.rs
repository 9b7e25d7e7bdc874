//! The one boundary between chrono (used by ebb's time rules and cron) and jiff (used by
//! k8s-openapi 0.29 for `metav1.Time`).
//!
//! Kubernetes `Time` travels as RFC 3339 with whole seconds (`2025-01-01T12:00:00Z`): k8s-openapi
//! serialises it that way and the API server stores it that way. [`to_k8s_time`] therefore truncates
//! to the whole second (towards the past), so a value written and read back compares equal to what
//! was written; [`from_k8s_time`] is lossless.

use chrono::{DateTime, Utc};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// An instant as every ebb output writes it (`plan` JSON and text, messages): RFC 3339 in UTC
/// with whole seconds and `Z`, e.g. `2026-03-27T18:30:00Z` (as Kubernetes writes `Time`).
pub fn rfc3339(instant: DateTime<Utc>) -> String {
    instant.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Converts a chrono instant into a Kubernetes `Time`, truncated to the whole second.
///
/// Instants outside jiff's range (years -9999..=9999) saturate to its ends; no cluster object
/// carries such times, and saturating keeps the conversion total.
pub fn to_k8s_time(instant: DateTime<Utc>) -> Time {
    // `timestamp()` floors: 1969-12-31T23:59:59.5Z becomes -1, i.e. 23:59:59.
    let seconds = instant.timestamp();
    let timestamp = Timestamp::from_second(seconds).unwrap_or(if seconds < 0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    });
    Time(timestamp)
}

/// Converts a Kubernetes `Time` into a chrono instant, keeping any sub-second part.
pub fn from_k8s_time(time: &Time) -> DateTime<Utc> {
    let mut seconds = time.0.as_second();
    let mut nanos = time.0.subsec_nanosecond();
    // jiff gives pre-epoch instants a negative fraction; chrono wants a non-negative one.
    if nanos < 0 {
        seconds -= 1;
        nanos += 1_000_000_000;
    }
    let nanos = u32::try_from(nanos).unwrap_or(0);
    // jiff's range lies inside chrono's, so this never saturates in practice.
    DateTime::from_timestamp(seconds, nanos).unwrap_or(if seconds < 0 {
        DateTime::<Utc>::MIN_UTC
    } else {
        DateTime::<Utc>::MAX_UTC
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use chrono::TimeZone;
    use ebb_testkit::utc;

    #[test]
    fn whole_seconds_round_trip_exactly() {
        for s in [
            "2025-01-01T00:00:00Z",
            "2025-03-30T01:59:59Z",
            "1970-01-01T00:00:00Z",
            "1969-12-31T23:59:59Z",
            "2024-02-29T23:59:59Z",
        ] {
            let t = utc(s);
            assert_eq!(from_k8s_time(&to_k8s_time(t)), t, "{s}");
        }
    }

    #[test]
    fn sub_seconds_are_truncated_towards_the_past() {
        assert_eq!(
            from_k8s_time(&to_k8s_time(utc("2025-01-01T12:00:00.999Z"))),
            utc("2025-01-01T12:00:00Z")
        );
        assert_eq!(
            from_k8s_time(&to_k8s_time(utc("1969-12-31T23:59:59.5Z"))),
            utc("1969-12-31T23:59:59Z")
        );
    }

    #[test]
    fn converted_time_serialises_as_the_api_server_would() {
        let time = to_k8s_time(utc("2025-06-01T08:30:15.123456Z"));
        assert_eq!(
            serde_json::to_value(&time).unwrap(),
            serde_json::json!("2025-06-01T08:30:15Z")
        );
        let back: Time = serde_json::from_value(serde_json::json!("2025-06-01T08:30:15Z")).unwrap();
        assert_eq!(back, time);
    }

    #[test]
    fn from_k8s_time_keeps_nanoseconds() {
        let ts: Timestamp = "2025-01-01T00:00:00.123456789Z".parse().unwrap();
        assert_eq!(
            from_k8s_time(&Time(ts)),
            utc("2025-01-01T00:00:00.123456789Z")
        );
        let ts: Timestamp = "1969-12-31T23:59:59.25Z".parse().unwrap();
        assert_eq!(from_k8s_time(&Time(ts)), utc("1969-12-31T23:59:59.25Z"));
    }

    #[test]
    fn out_of_range_instants_saturate() {
        let far = Utc.with_ymd_and_hms(20_000, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(to_k8s_time(far).0, Timestamp::MAX);
        let past = Utc.with_ymd_and_hms(-20_000, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(to_k8s_time(past).0, Timestamp::MIN);
    }
}
