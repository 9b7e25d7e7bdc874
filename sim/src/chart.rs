//! SVG charts of a simulation's series (plotters' SVG backend: no fonts or bitmaps needed).

use plotters::prelude::*;

/// One series: its legend and its points `(hours since the start, value)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The legend.
    pub name: String,
    /// `(x, y)` points, x increasing; each value holds until the next point.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A series named `name` of `points`.
    pub fn new(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self {
            name: name.to_owned(),
            points,
        }
    }

    /// The points as a staircase: a value holds until the next point, then jumps (replica
    /// counts, open or closed), and the last one holds until `x_end`.
    fn steps(&self, x_end: f64) -> Vec<(f64, f64)> {
        let mut out = Vec::with_capacity(self.points.len() * 2 + 1);
        for (i, &(x, y)) in self.points.iter().enumerate() {
            if i > 0 {
                out.push((x, self.points[i - 1].1));
            }
            out.push((x, y));
        }
        if let Some(&(x, y)) = self.points.last()
            && x < x_end
        {
            out.push((x_end, y));
        }
        out
    }
}

/// A chart: a title, axis names, the x span and the series drawn on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// The caption.
    pub title: String,
    /// What y counts.
    pub y_label: String,
    /// The hours shown.
    pub hours: f64,
    /// The lines.
    pub series: Vec<Series>,
}

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("drawing the chart {title:?}: {reason}")]
pub struct ChartError {
    title: String,
    reason: String,
}

impl Chart {
    /// The chart as an SVG document. The same chart gives the same bytes.
    pub fn svg(&self) -> Result<String, ChartError> {
        let mut out = String::new();
        self.draw(&mut out).map_err(|reason| ChartError {
            title: self.title.clone(),
            reason,
        })?;
        Ok(out)
    }

    fn draw(&self, out: &mut String) -> Result<(), String> {
        let root = SVGBackend::with_string(out, (960, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let y_max = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(1.0_f64, f64::max);
        let mut chart = ChartBuilder::on(&root)
            .caption(&self.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(0.0..self.hours.max(f64::EPSILON), 0.0..y_max * 1.15)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("hours")
            .y_desc(&self.y_label)
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, series) in self.series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    series.steps(self.hours),
                    color.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?
                .label(&series.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())
    }
}

#[cfg(test)]
#[path = "chart_tests.rs"]
mod tests;
