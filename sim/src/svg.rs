//! The plot (`--plot out.svg`): pending jobs, running CPUs and GPUs, and
//! utilisation over simulated time, one panel each, as a plain SVG file a
//! browser shows. Written by hand: four polylines and their axes need no
//! plotting crate (and its compile time).

use std::fmt::Write;

use crate::engine::{Outcomes, Sample};

const W: f64 = 900.0;
const PANEL_H: f64 = 150.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const GAP: f64 = 45.0;
const TOP: f64 = 30.0;

struct Series<'a> {
    label: &'a str,
    color: &'a str,
    values: Vec<(f64, f64)>,
}

/// The SVG document of a run.
pub fn plot(out: &Outcomes, title: &str) -> String {
    let s = &out.series;
    let t0 = out.t0 as f64;
    let hours = |x: &Sample| (x.t as f64 - t0) / 3600.0;
    let pick = |f: &dyn Fn(&Sample) -> f64| -> Vec<(f64, f64)> {
        s.iter().map(|x| (hours(x), f(x))).collect()
    };
    let cpu_pct = |x: &Sample| 100.0 * x.cpus as f64 / out.total_cpus.max(1) as f64;
    let gpu_pct = |x: &Sample| 100.0 * x.gpus as f64 / out.total_gpus.max(1) as f64;
    let mut panels: Vec<(String, Vec<Series>, Option<f64>)> = vec![
        (
            "pending jobs".into(),
            vec![Series {
                label: "pending",
                color: "#d62728",
                values: pick(&|x| x.pending as f64),
            }],
            None,
        ),
        (
            format!("running CPUs (of {})", out.total_cpus),
            vec![Series {
                label: "CPUs",
                color: "#1f77b4",
                values: pick(&|x| x.cpus as f64),
            }],
            Some(out.total_cpus as f64),
        ),
    ];
    let mut util = vec![Series {
        label: "CPU %",
        color: "#1f77b4",
        values: pick(&cpu_pct),
    }];
    if out.total_gpus > 0 {
        panels.push((
            format!("running GPUs (of {})", out.total_gpus),
            vec![Series {
                label: "GPUs",
                color: "#2ca02c",
                values: pick(&|x| x.gpus as f64),
            }],
            Some(out.total_gpus as f64),
        ));
        util.push(Series {
            label: "GPU %",
            color: "#2ca02c",
            values: pick(&gpu_pct),
        });
    }
    panels.push(("utilisation %".into(), util, Some(100.0)));
    let x_max = s.last().map_or(1.0, hours).max(1e-9);
    let h = TOP + panels.len() as f64 * (PANEL_H + GAP);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(svg, r#"<rect width="{W}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="18" font-size="14">{}</text>"#,
        escape(title)
    );
    for (k, (name, series, cap)) in panels.iter().enumerate() {
        let y0 = TOP + k as f64 * (PANEL_H + GAP);
        let peak = series
            .iter()
            .flat_map(|s| s.values.iter().map(|v| v.1))
            .fold(cap.unwrap_or(0.0), f64::max)
            .max(1.0);
        panel(&mut svg, name, series, y0, x_max, peak);
    }
    svg.push_str("</svg>\n");
    svg
}

fn panel(svg: &mut String, name: &str, series: &[Series], y0: f64, x_max: f64, y_max: f64) {
    let pw = W - LEFT - RIGHT;
    let x = |v: f64| LEFT + pw * v / x_max;
    let y = |v: f64| y0 + PANEL_H - PANEL_H * v / y_max;
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT}" y="{y0}" width="{pw}" height="{PANEL_H}" fill="none" stroke="#888"/>"##
    );
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="{}">{}</text>"#,
        y0 - 4.0,
        escape(name)
    );
    for k in 0..=4 {
        let v = y_max * f64::from(k) / 4.0;
        let _ = writeln!(
            svg,
            r##"<text x="{}" y="{:.1}" text-anchor="end">{}</text><line x1="{LEFT}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#eee"/>"##,
            LEFT - 4.0,
            y(v) + 4.0,
            short(v),
            LEFT + pw,
            y(v),
            y(v)
        );
    }
    for k in 0..=5 {
        let v = x_max * f64::from(k) / 5.0;
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{} h</text>"#,
            x(v),
            y0 + PANEL_H + 14.0,
            short(v)
        );
    }
    for (i, s) in series.iter().enumerate() {
        let mut pts = String::new();
        // One point per pixel column at most: the column's highest value.
        let mut last_col = f64::NAN;
        let mut best = f64::NEG_INFINITY;
        let mut col_x = 0.0;
        for &(tx, v) in &s.values {
            let px = x(tx).round();
            if px != last_col && !last_col.is_nan() {
                let _ = write!(pts, "{col_x:.1},{:.1} ", y(best));
                best = f64::NEG_INFINITY;
            }
            last_col = px;
            col_x = px;
            best = best.max(v);
        }
        if !last_col.is_nan() {
            let _ = write!(pts, "{col_x:.1},{:.1}", y(best));
        }
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{}" stroke-width="1.2" points="{}"/>"#,
            s.color,
            pts.trim_end()
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" fill="{}" text-anchor="end">{}</text>"#,
            LEFT + pw - 4.0,
            y0 + 14.0 + 13.0 * i as f64,
            s.color,
            escape(s.label)
        );
    }
}

/// 1234 -> "1234", 12345 -> "12.3k", 0.25 -> "0.25".
fn short(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1}k", v / 1000.0)
    } else if v.fract() == 0.0 || v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
