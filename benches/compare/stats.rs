//! Summaries of samples and unit conversions.

use std::time::Duration;

/// [`support::median`] of a sample that cannot be empty.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    support::median(&mut v).expect("median of nothing")
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
