//! The table: one row per metric, with its target, printed as Markdown, and
//! the notes printed under it.

use std::fmt::Write as _;

/// One row: a metric of one workload, for each timer that has it.
pub(crate) struct Row {
    pub(crate) workload: String,
    pub(crate) metric: String,
    pub(crate) tokio: Option<f64>,
    pub(crate) delay_queue: Option<f64>,
    pub(crate) wheel: Option<f64>,
    /// `wheel / tokio`, where both are there and tokio's is not zero.
    pub(crate) ratio: Option<f64>,
    pub(crate) target: Option<Target>,
}

pub(crate) struct Target {
    pub(crate) text: String,
    pub(crate) met: bool,
}

impl Row {
    pub(crate) fn new(workload: &str, metric: impl Into<String>) -> Row {
        Row {
            workload: workload.to_string(),
            metric: metric.into(),
            tokio: None,
            delay_queue: None,
            wheel: None,
            ratio: None,
            target: None,
        }
    }

    pub(crate) fn tokio(mut self, v: f64) -> Row {
        self.tokio = Some(v);
        self.update_ratio()
    }

    pub(crate) fn delay_queue(mut self, v: f64) -> Row {
        self.delay_queue = Some(v);
        self
    }

    pub(crate) fn wheel(mut self, v: f64) -> Row {
        self.wheel = Some(v);
        self.update_ratio()
    }

    fn update_ratio(mut self) -> Row {
        self.ratio = match (self.tokio, self.wheel) {
            (Some(t), Some(w)) if t > 0.0 && w >= 0.0 => Some(w / t),
            _ => None,
        };
        self
    }

    /// A target on `wheel / tokio`.
    pub(crate) fn ratio_at_most(mut self, max: f64, text: &str) -> Row {
        let met = self.ratio.is_some_and(|r| r <= max);
        self.target = Some(Target {
            text: text.to_string(),
            met,
        });
        self
    }

    /// A target on the wheel's own value.
    pub(crate) fn wheel_at_most(mut self, max: f64, text: &str) -> Row {
        let met = self.wheel.is_some_and(|w| w <= max);
        self.target = Some(Target {
            text: text.to_string(),
            met,
        });
        self
    }
}

pub(crate) fn fmt_value(v: Option<f64>) -> String {
    match v {
        None => "-".to_string(),
        Some(0.0) => "0".to_string(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) if v.abs() >= 0.01 => format!("{v:.2}"),
        Some(v) => format!("{v:.4}"),
    }
}

pub(crate) fn fmt_ratio(r: Option<f64>) -> String {
    match r {
        None => "-".to_string(),
        Some(r) if r >= 10.0 => format!("{r:.1}x"),
        Some(r) => format!("{r:.2}x"),
    }
}

/// The table as Markdown, padded so that it also reads as plain text.
pub(crate) fn render_table(rows: &[Row]) -> String {
    let header = [
        "workload",
        "metric",
        "tokio",
        "DelayQueue",
        "tokio-wheel",
        "wheel/tokio",
        "target",
        "met?",
    ];
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|r| {
            [
                r.workload.clone(),
                r.metric.clone(),
                fmt_value(r.tokio),
                fmt_value(r.delay_queue),
                fmt_value(r.wheel),
                fmt_ratio(r.ratio),
                r.target.as_ref().map_or("-".into(), |t| t.text.clone()),
                r.target
                    .as_ref()
                    .map_or("-".into(), |t| if t.met { "met" } else { "MISSED" }.into()),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let numeric = [false, false, true, true, true, true, false, false];
    let line = |cols: &[String]| {
        let mut s = String::from("|");
        for (i, c) in cols.iter().enumerate() {
            let pad = widths[i] - c.chars().count();
            if numeric[i] {
                let _ = write!(s, " {}{} |", " ".repeat(pad), c);
            } else {
                let _ = write!(s, " {}{} |", c, " ".repeat(pad));
            }
        }
        s
    };
    let mut out = String::new();
    out.push_str(&line(&header.map(String::from)));
    out.push('\n');
    let mut sep = String::from("|");
    for (i, w) in widths.iter().enumerate() {
        if numeric[i] {
            let _ = write!(sep, "{}:|", "-".repeat(w + 1));
        } else {
            let _ = write!(sep, "{}|", "-".repeat(w + 2));
        }
    }
    out.push_str(&sep);
    out.push('\n');
    for row in &cells {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

/// Extra figures printed under the table: the evidence behind the rows.
#[derive(Default)]
pub(crate) struct Notes(pub(crate) Vec<String>);

impl Notes {
    pub(crate) fn add(&mut self, line: impl Into<String>) {
        self.0.push(line.into());
    }
}

pub(crate) use support::count_label;
