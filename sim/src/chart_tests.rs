#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn chart() -> Chart {
    Chart {
        title: "Provisioners".into(),
        y_label: "pods".into(),
        hours: 24.0,
        series: vec![
            Series::new("demand", vec![(0.0, 1.0), (9.0, 12.0), (11.0, 2.0)]),
            Series::new("replicas", vec![(0.0, 2.0), (8.5, 14.0)]),
        ],
    }
}

#[test]
fn values_hold_until_the_next_point_and_the_last_until_the_end() {
    let s = Series::new("x", vec![(0.0, 1.0), (2.0, 3.0)]);
    assert_eq!(
        s.steps(5.0),
        [(0.0, 1.0), (2.0, 1.0), (2.0, 3.0), (5.0, 3.0)]
    );
    assert!(Series::new("empty", vec![]).steps(5.0).is_empty());
}

#[test]
fn the_svg_has_the_title_and_a_legend_entry_per_series_and_is_the_same_every_time() {
    let svg = chart().svg().unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
    for text in ["Provisioners", "demand", "replicas", "hours", "pods"] {
        assert!(svg.contains(text), "{text} missing");
    }
    assert_eq!(svg, chart().svg().unwrap(), "byte for byte");
}
