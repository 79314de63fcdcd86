//! SVG charts, written as text.

use std::fmt::Write as _;

use crate::accuracy::Histograms;
use crate::scaling::Scaling;
use crate::stats::quantile;
use crate::table::{count_label, fmt_ratio, fmt_value, Row};

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Horizontal bars of `wheel / tokio` per row, on a log scale.
/// The opening of a chart: the `<svg>` element, a white background, the
/// title and the subtitle.
fn svg_start(total_w: f64, height: f64, title: &str, subtitle: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{height}" viewBox="0 0 {total_w} {height}" font-family="sans-serif" font-size="12">"##
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="10" y="22" font-size="16" font-weight="bold">{}</text>"##,
        xml_escape(title)
    );
    let _ = writeln!(
        s,
        r##"<text x="10" y="42" fill="#555">{}</text>"##,
        xml_escape(subtitle)
    );
    s
}

pub(crate) fn ratio_chart(rows: &[Row], subtitle: &str) -> String {
    let bars: Vec<&Row> = rows.iter().filter(|r| r.ratio.is_some()).collect();
    let label_chars = bars
        .iter()
        .map(|r| r.workload.chars().count() + r.metric.chars().count() + 2)
        .max()
        .unwrap_or(20);
    let left = 20.0 + 6.6 * label_chars as f64;
    let (width, row_h, top) = (420.0, 22.0, 70.0);
    let height = top + row_h * bars.len() as f64 + 60.0;
    let total_w = left + width + 90.0;
    let (lo, hi) = (0.01f64, 100.0f64);
    let x =
        |r: f64| left + width * (r.clamp(lo, hi).log10() - lo.log10()) / (hi.log10() - lo.log10());
    let mut s = svg_start(
        total_w,
        height,
        "tokio-wheel / tokio::time, per metric (log scale; under 1 = the wheel is cheaper)",
        subtitle,
    );
    let _ = writeln!(
        s,
        r##"<text x="10" y="58" fill="#555"><tspan fill="#2a9d3a">green</tspan>: target met, <tspan fill="#d62828">red</tspan>: target missed, grey: no target</text>"##
    );
    for tick in [0.01, 0.1, 1.0, 10.0, 100.0] {
        let xt = x(tick);
        let stroke = if tick == 1.0 { "#000" } else { "#ccc" };
        let _ = writeln!(
            s,
            r##"<line x1="{xt:.1}" y1="{top}" x2="{xt:.1}" y2="{:.1}" stroke="{stroke}"/>"##,
            height - 45.0
        );
        let _ = writeln!(
            s,
            r##"<text x="{xt:.1}" y="{:.1}" text-anchor="middle" fill="#555">{tick}x</text>"##,
            height - 30.0
        );
    }
    for (i, r) in bars.iter().enumerate() {
        let y = top + row_h * i as f64;
        let ratio = r.ratio.unwrap_or(1.0);
        let color = match &r.target {
            Some(t) if t.met => "#2a9d3a",
            Some(_) => "#d62828",
            None => "#999",
        };
        let (x0, x1) = (x(1.0).min(x(ratio)), x(1.0).max(x(ratio)));
        let label = format!("{}: {}", r.workload, r.metric);
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            left - 8.0,
            y + 15.0,
            xml_escape(&label)
        );
        let _ = writeln!(
            s,
            r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"##,
            y + 4.0,
            (x1 - x0).max(1.0),
            row_h - 8.0
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}">{}</text>"##,
            left + width + 8.0,
            y + 15.0,
            fmt_ratio(Some(ratio))
        );
    }
    s.push_str("</svg>\n");
    s
}

/// One histogram panel per timer, of lateness in ms.
pub(crate) fn lateness_chart(hist: &Histograms, subtitle: &str) -> String {
    let bin_ms = 0.25;
    let max_ms = 20.0;
    let bins = (max_ms / bin_ms) as usize;
    let (left, width, panel_h, top) = (60.0, 760.0, 110.0, 60.0);
    let height = top + (panel_h + 30.0) * hist.0.len() as f64 + 30.0;
    let total_w = left + width + 30.0;
    let mut s = svg_start(
        total_w,
        height,
        &format!("Lateness of fired timers (seen minus deadline), {bin_ms} ms bins"),
        subtitle,
    );
    for (p, (name, sample)) in hist.0.iter().enumerate() {
        let y0 = top + (panel_h + 30.0) * p as f64;
        let mut counts = vec![0usize; bins + 1];
        let mut early = 0;
        for &v in sample {
            if v < 0 {
                early += 1;
                continue;
            }
            let b = ((v as f64 / 1e6) / bin_ms) as usize;
            counts[b.min(bins)] += 1;
        }
        let peak = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
        let _ = writeln!(
            s,
            r##"<text x="{left}" y="{:.1}" font-weight="bold">{} ({} timers of the last run, {} early, {} over {max_ms} ms in the last bar)</text>"##,
            y0 + 12.0,
            xml_escape(name),
            sample.len(),
            early,
            counts[bins]
        );
        let base = y0 + panel_h;
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{base:.1}" x2="{:.1}" y2="{base:.1}" stroke="#000"/>"##,
            left + width
        );
        let bw = width / (bins + 1) as f64;
        for (b, &c) in counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let h = (panel_h - 20.0) * c as f64 / peak;
            let _ = writeln!(
                s,
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{}"/>"##,
                left + bw * b as f64,
                base - h,
                (bw - 1.0).max(0.5),
                if b == bins { "#d62828" } else { "#3a6ea5" }
            );
        }
        if !sample.is_empty() {
            let mut sorted = sample.clone();
            sorted.sort_unstable();
            let p99 = quantile(&sorted, 0.99) as f64 / 1e6;
            let xp = left + bw * (p99 / bin_ms).min(bins as f64);
            let _ = writeln!(
                s,
                r##"<line x1="{xp:.1}" y1="{:.1}" x2="{xp:.1}" y2="{base:.1}" stroke="#d62828" stroke-dasharray="4 3"/>"##,
                y0 + 18.0
            );
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" fill="#d62828">p99 {p99:.2} ms</text>"##,
                xp + 4.0,
                y0 + 30.0
            );
        }
        for t in (0..=max_ms as usize).step_by(2) {
            let xt = left + bw * (t as f64 / bin_ms);
            let _ = writeln!(
                s,
                r##"<text x="{xt:.1}" y="{:.1}" text-anchor="middle" fill="#555">{t} ms</text>"##,
                base + 14.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

/// A step for about `parts` axis divisions up to `max`: 1, 2 or 5 times a
/// power of ten.
fn nice_step(max: f64, parts: f64) -> f64 {
    let raw = (max / parts).max(f64::MIN_POSITIVE);
    let power = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * power)
}

/// Process CPU against the number of pending timers, one line per timer.
pub(crate) fn scaling_chart(scaling: &Scaling, subtitle: &str) -> String {
    let (left, top, plot_h) = (70.0, 80.0, 320.0);
    let total_w = (20.0 + 6.4 * subtitle.chars().count() as f64).max(820.0);
    let width = total_w - left - 60.0;
    let height = top + plot_h + 70.0;
    let max_n = scaling.points.iter().map(|p| p.0).max().unwrap_or(1).max(1) as f64;
    let max_cpu = scaling
        .points
        .iter()
        .map(|p| p.1.max(p.2))
        .fold(0.0, f64::max)
        .max(0.001);
    let y_step = nice_step(max_cpu * 1.1, 5.0);
    let y_max = (max_cpu * 1.1 / y_step).ceil() * y_step;
    // Square-root scale: 0, 100k, 1M and 4M fall at 0, 16%, 50% and 100%.
    let x = |n: usize| left + width * (n as f64 / max_n).sqrt();
    let decimals = (-y_step.log10().floor()).max(0.0) as usize;
    let y = |v: f64| top + plot_h * (1.0 - v / y_max);
    let mut s = svg_start(total_w, height, "Process CPU with N timers pending (due in 10-30 min) and 20 tasks sleeping 50 ms in a loop", subtitle);
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="66" fill="#555">{}</text>"##,
        left + 260.0,
        xml_escape(&scaling.how)
    );
    let series = [("tokio::time", "#3a6ea5"), ("tokio-wheel", "#e07a1f")];
    for (i, (name, color)) in series.iter().enumerate() {
        let lx = left + 10.0 + 140.0 * i as f64;
        let _ = writeln!(
            s,
            r##"<line x1="{lx:.1}" y1="62" x2="{:.1}" y2="62" stroke="{color}" stroke-width="3"/><text x="{:.1}" y="66">{name}</text>"##,
            lx + 24.0,
            lx + 30.0
        );
    }
    for k in 0..=(y_max / y_step).round() as usize {
        let v = k as f64 * y_step;
        let yt = y(v);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{yt:.1}" x2="{:.1}" y2="{yt:.1}" stroke="{}"/>"##,
            left + width,
            if v == 0.0 { "#000" } else { "#ddd" }
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555">{v:.decimals$}</text>"##,
            left - 6.0,
            yt + 4.0,
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="16" y="{:.1}" transform="rotate(-90 16 {:.1})" text-anchor="middle" fill="#555">CPU ms per s of wall time</text>"##,
        top + plot_h / 2.0,
        top + plot_h / 2.0
    );
    for &(n, _, _) in &scaling.points {
        let xt = x(n);
        let _ = writeln!(
            s,
            r##"<line x1="{xt:.1}" y1="{top}" x2="{xt:.1}" y2="{:.1}" stroke="#eee"/>"##,
            top + plot_h
        );
        let _ = writeln!(
            s,
            r##"<text x="{xt:.1}" y="{:.1}" text-anchor="middle" fill="#555">{}</text>"##,
            top + plot_h + 16.0,
            count_label(n)
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#555">timers pending, N (square-root scale)</text>"##,
        left + width / 2.0,
        top + plot_h + 40.0
    );
    for (i, (_, color)) in series.iter().enumerate() {
        let value = |p: &(usize, f64, f64)| if i == 0 { p.1 } else { p.2 };
        let line: Vec<String> = scaling
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(value(p))))
            .collect();
        let _ = writeln!(
            s,
            r##"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"##,
            line.join(" ")
        );
        for p in &scaling.points {
            let (px, py) = (x(p.0), y(value(p)));
            let last = p.0 as f64 >= max_n;
            let anchor = if last { "end" } else { "start" };
            let _ = writeln!(
                s,
                r##"<circle cx="{px:.1}" cy="{py:.1}" r="4" fill="{color}"/><text x="{:.1}" y="{:.1}" text-anchor="{anchor}" fill="{color}">{}</text>"##,
                if last { px - 6.0 } else { px + 6.0 },
                py + if i == 0 { 16.0 } else { -8.0 },
                fmt_value(Some(value(p)))
            );
        }
    }
    s.push_str("</svg>\n");
    s
}
