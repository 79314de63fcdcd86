//! Summaries of samples and unit conversions.

use std::time::Duration;

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty(), "median of nothing");
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if !n.is_multiple_of(2) {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `q` quantile of a sorted sample (nearest rank).
pub(crate) fn quantile(sorted: &[i64], q: f64) -> i64 {
    let last = sorted.len() - 1;
    sorted[((last as f64) * q).round() as usize]
}

pub(crate) fn ns(d: Duration) -> f64 {
    d.as_nanos() as f64
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
