//! Instants as Kubernetes and ebb's outputs write them.
//!
//! ebb's instants are jiff `Timestamp`s, as are Kubernetes' (`metav1.Time` in k8s-openapi 0.29
//! wraps one). Kubernetes `Time` travels as RFC 3339 with whole seconds (`2025-01-01T12:00:00Z`):
//! k8s-openapi serialises it that way and the API server stores it that way. [`to_k8s_time`]
//! therefore truncates to the whole second (towards the past), so a value written and read back
//! compares equal to what was written; [`from_k8s_time`] is lossless.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// An instant as every ebb output writes it (`plan` JSON and text, messages): RFC 3339 in UTC
/// with whole seconds and `Z`, e.g. `2026-03-27T18:30:00Z` (as Kubernetes writes `Time`).
pub fn rfc3339(instant: Timestamp) -> String {
    whole_second(instant).to_string()
}

/// `instant` truncated to the whole second, towards the past.
pub fn whole_second(instant: Timestamp) -> Timestamp {
    // jiff gives pre-epoch instants a negative fraction: 1969-12-31T23:59:59.5Z is second 0 and
    // -0.5 s, which floors to -1, i.e. 23:59:59.
    let floor = instant.as_second() - i64::from(instant.subsec_nanosecond() < 0);
    Timestamp::from_second(floor).unwrap_or(instant)
}

/// Converts an instant into a Kubernetes `Time`, truncated to the whole second.
pub fn to_k8s_time(instant: Timestamp) -> Time {
    Time(whole_second(instant))
}

/// The instant of a Kubernetes `Time`, keeping any sub-second part.
pub fn from_k8s_time(time: &Time) -> Timestamp {
    time.0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::tests_support::utc;

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
    fn the_ends_of_time_stay_in_range() {
        assert_eq!(
            to_k8s_time(Timestamp::MAX).0.as_second(),
            Timestamp::MAX.as_second()
        );
        assert_eq!(to_k8s_time(Timestamp::MIN).0, Timestamp::MIN);
        assert_eq!(
            rfc3339(utc("2026-03-27T18:30:00.75Z")),
            "2026-03-27T18:30:00Z"
        );
    }
}
