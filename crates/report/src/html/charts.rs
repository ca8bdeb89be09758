//! The report's charts, drawn by plotters into SVG text: steps side by
//! side, the GPU-busy timeline, critical-path shares and the waiting heat
//! map. Every label drawn here is a number, a fixed word or a step number:
//! names from a trace go only into the page's escaped tables.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Measured, replayed and predicted series, in every chart.
pub(super) const COLORS: [RGBColor; 3] = [
    RGBColor(0x4c, 0x72, 0xb0),
    RGBColor(0xdd, 0x84, 0x52),
    RGBColor(0x55, 0xa8, 0x68),
];

/// Chart width, px (the page is about 1,100 px wide).
const WIDTH: u32 = 1000;
/// Left label area, px.
const Y_LABELS: u32 = 70;
/// Most points a line is drawn with.
const MAX_POINTS: usize = 500;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Draws `draw` onto a `WIDTH` x `height` SVG; an error becomes a line of
/// text in its place.
fn svg(height: u32, draw: impl FnOnce(&Area) -> DrawResult) -> String {
    let mut out = String::new();
    let result = {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present())
    };
    match result {
        Ok(()) => out,
        Err(e) => format!(
            "<p class=\"warn\">chart not drawn: {}</p>",
            super::page::esc(&e.to_string())
        ),
    }
}

/// A short label for a step: the number after `#`, else its position.
pub(super) fn step_label(name: &str, k: usize) -> String {
    match name.rsplit_once('#') {
        // Through `shown`: plotters escapes XML's markup, not a control
        // character (invalid in the SVG) or a bidirectional override.
        Some((_, n)) if !n.is_empty() && n.len() <= 8 => format!("#{}", crate::text::shown(n)),
        _ => format!("{}", k + 1),
    }
}

type Chart<'a> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Which axis category labels go along.
#[derive(Clone, Copy)]
enum Axis {
    X,
    Y,
}

/// Writes `labels[k]` at the middle of category `k` (`k .. k + 1` in chart
/// coordinates) outside the plot, beside `axis`. Drawn here rather than by
/// the mesh, whose labels fall on round numbers, not on categories.
fn category_labels(root: &Area, chart: &Chart, axis: Axis, labels: &[String]) -> DrawResult {
    let (x0, y0) = (chart.x_range().start, chart.y_range().start);
    for (k, label) in labels.iter().enumerate() {
        let mid = k as f64 + 0.5;
        let (coord, pos, offset) = match axis {
            Axis::X => ((mid, y0), Pos::new(HPos::Center, VPos::Top), (0, 8)),
            Axis::Y => ((x0, mid), Pos::new(HPos::Right, VPos::Center), (-8, 0)),
        };
        let (px, py) = chart.backend_coord(&coord);
        let style = TextStyle::from(("sans-serif", 14)).pos(pos);
        root.draw(&Text::new(
            label.clone(),
            (px + offset.0, py + offset.1),
            style,
        ))?;
    }
    Ok(())
}

/// Step labels, thinned to at most 24 so that they do not overlap.
fn step_labels(names: &[String]) -> Vec<String> {
    let every = names.len().div_ceil(24).max(1);
    names
        .iter()
        .enumerate()
        .map(|(k, n)| {
            if k % every == 0 {
                step_label(n, k)
            } else {
                String::new()
            }
        })
        .collect()
}

/// Step lengths (ms) side by side, one series per color of [`COLORS`].
pub(super) fn steps(labels: &[String], series: &[Vec<f64>]) -> String {
    let n = labels.len().max(1);
    let ymax = series
        .iter()
        .flat_map(|v| v.iter().copied())
        .fold(0.0, f64::max)
        .max(1e-3)
        * 1.25;
    let bar = (0.8 / series.len().max(1) as f64).min(0.3);
    let lead = (1.0 - bar * series.len() as f64) / 2.0;
    svg(320, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(Y_LABELS)
            .build_cartesian_2d(0.0..n as f64, 0.0..ymax)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(0)
            .y_desc("step time (ms)")
            .label_style(("sans-serif", 14))
            .draw()?;
        for (i, values) in series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let x = lead + bar * i as f64;
            chart.draw_series(values.iter().enumerate().map(|(k, &v)| {
                let k = k as f64;
                Rectangle::new([(k + x, 0.0), (k + x + bar, v)], color.filled())
            }))?;
        }
        category_labels(root, &chart, Axis::X, &step_labels(labels))
    })
}

/// The legend of `names` (series in [`COLORS`] order), as HTML above a
/// chart: outside the plot, it can never hide a bar or a line.
pub(super) fn legend(names: &[&str]) -> String {
    let mut out = String::from("<p class=\"legend\">");
    for (i, n) in names.iter().enumerate() {
        let RGBColor(r, g, b) = COLORS[i % COLORS.len()];
        out.push_str(&format!(
            "<span class=\"key\" style=\"background:#{r:02x}{g:02x}{b:02x}\"></span>{n} "
        ));
    }
    out.push_str("</p>\n");
    out
}

/// Averages `v` into at most [`MAX_POINTS`] points, each at its bin's
/// middle (x in ms, bins `bin_ms` wide).
fn downsample(v: &[f64], bin_ms: f64) -> Vec<(f64, f64)> {
    let per = v.len().div_ceil(MAX_POINTS).max(1);
    v.chunks(per)
        .enumerate()
        .map(|(i, c)| {
            let x = (i * per) as f64 * bin_ms + c.len() as f64 * bin_ms / 2.0;
            (x, c.iter().sum::<f64>() / c.len() as f64 * 100.0)
        })
        .collect()
}

/// The GPU-busy timeline: % of each bin with a GPU stream busy, one line
/// per series of bins.
pub(super) fn busy(bin_ms: f64, series: &[&[f64]]) -> String {
    let bins = series.iter().map(|v| v.len()).max().unwrap_or(0);
    let xmax = (bins as f64 * bin_ms).max(1e-3);
    svg(300, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(Y_LABELS)
            .build_cartesian_2d(0.0..xmax, 0.0..105.0)?;
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_desc("time from the window's start (ms)")
            .y_desc("GPU busy (%)")
            .label_style(("sans-serif", 14))
            .draw()?;
        for (i, v) in series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            // Each line thinner than the one before, so that equal lines
            // (a replay that matches) all stay visible.
            let width = 2 * (series.len() - i) as u32;
            let style = color
                .mix(if i == 0 { 0.6 } else { 1.0 })
                .stroke_width(width);
            chart.draw_series(LineSeries::new(downsample(v, bin_ms), style))?;
        }
        Ok(())
    })
}

/// Horizontal bars: time (ms) per named row, for the critical path's
/// shares.
pub(super) fn shares(rows: &[(String, f64)]) -> String {
    let n = rows.len().max(1);
    let xmax = rows.iter().map(|r| r.1).fold(0.0, f64::max).max(1e-3) * 1.1;
    let height = 70 + 30 * n as u32;
    svg(height, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(130)
            .build_cartesian_2d(0.0..xmax, 0.0..n as f64)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(TRANSPARENT)
            .y_labels(0)
            .x_desc("time on the critical path (ms)")
            .label_style(("sans-serif", 14))
            .draw()?;
        // The largest first, at the top.
        let row = |k: usize| (n - 1 - k) as f64;
        chart.draw_series(rows.iter().enumerate().map(|(k, (_, v))| {
            Rectangle::new(
                [(0.0, row(k) + 0.2), (*v, row(k) + 0.8)],
                COLORS[0].filled(),
            )
        }))?;
        let mut labels: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
        labels.reverse();
        category_labels(root, &chart, Axis::Y, &labels)
    })
}

/// A heat map of `grid[row][column]` (µs, shown in ms): rows are ranks
/// (the first at the top), columns steps; darker is longer.
pub(super) fn heat_map(rows: &[String], columns: &[String], grid: &[Vec<f64>]) -> String {
    let (nr, nc) = (rows.len().max(1), columns.len().max(1));
    let max = grid.iter().flatten().copied().fold(0.0, f64::max);
    let height = 70 + 28 * nr as u32;
    // A binned job's labels (`ranks 4032-4095`) are wider than a rank's:
    // about 8 px a character at the labels' 14 px.
    let widest = rows.iter().map(|r| r.chars().count()).max().unwrap_or(0) as u32;
    let label_area = Y_LABELS.max(8 * widest + 12);
    svg(height, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(label_area)
            .build_cartesian_2d(0.0..nc as f64, 0.0..nr as f64)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(0)
            .y_labels(0)
            .draw()?;
        let row = |r: usize| (nr - 1 - r) as f64;
        let cells = grid.iter().enumerate().flat_map(|(r, cells)| {
            cells
                .iter()
                .enumerate()
                .map(move |(c, &v)| (row(r), c as f64, v))
        });
        chart.draw_series(cells.clone().map(|(y, x, v)| {
            let color = heat(if max > 0.0 { v / max } else { 0.0 });
            let mut rect = Rectangle::new([(x, y), (x + 1.0, y + 1.0)], color.filled());
            rect.set_margin(1, 1, 1, 1);
            rect
        }))?;
        if nc <= 16 {
            // Room for the values themselves.
            let style =
                TextStyle::from(("sans-serif", 13)).pos(Pos::new(HPos::Center, VPos::Center));
            let (dark, light) = (style.color(&BLACK), style.color(&WHITE));
            chart.draw_series(cells.map(|(y, x, v)| {
                let on_dark = max > 0.0 && v / max > 0.55;
                Text::new(
                    format!("{:.2}", v / 1e3),
                    (x + 0.5, y + 0.5),
                    if on_dark { light.clone() } else { dark.clone() },
                )
            }))?;
        }
        let mut labels = rows.to_vec();
        labels.reverse();
        category_labels(root, &chart, Axis::Y, &labels)?;
        category_labels(root, &chart, Axis::X, &step_labels(columns))
    })
}

/// White to dark red, for `x` in 0..=1.
fn heat(x: f64) -> RGBColor {
    let x = x.clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64| (a + (b - a) * x).round() as u8;
    RGBColor(lerp(255.0, 165.0), lerp(247.0, 15.0), lerp(236.0, 21.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_with_their_marks() {
        let labels = vec!["ProfilerStep#4".to_owned(), "ProfilerStep#5".to_owned()];
        let s = steps(&labels, &[vec![1.0, 2.0], vec![1.5, 2.5]]);
        assert!(
            s.starts_with("<svg") && s.contains("#5") && s.contains("<rect"),
            "{s}"
        );
        let b = busy(1.0, &[&[0.5, 1.0, 0.0]]);
        assert!(b.contains("<polyline") || b.contains("<path"), "{b}");
        let h = heat_map(&["rank 0".into()], &labels, &[vec![1000.0, 0.0]]);
        assert!(h.contains("rank 0") && h.contains("1.00"), "{h}");
        let l = legend(&["measured", "replayed"]);
        assert!(l.contains("#4c72b0") && l.contains("replayed"), "{l}");
    }

    #[test]
    fn downsampling_keeps_the_mean_and_the_span() {
        let v = vec![1.0; 2000];
        let d = downsample(&v, 1.0);
        assert!(d.len() <= MAX_POINTS);
        assert!(d.iter().all(|&(_, y)| (y - 100.0).abs() < 1e-9));
        assert!((d.last().unwrap().0 - 1998.0).abs() < 1e-9);
    }
}
