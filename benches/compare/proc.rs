//! What the kernel says about this process (`/proc/self`).

use std::time::Duration;

/// Minor page faults of the process so far (`/proc/self/stat`, field 10).
pub(crate) fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    after_name
        .split_whitespace()
        .nth(7)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// CPU time of the whole process so far: the sum over its live threads of
/// the time they ran (`/proc/self/task/*/schedstat`, nanoseconds), or, if
/// the kernel has no schedstat, user + system time from `/proc/self/stat`
/// (clock ticks, taken as 1/100 s).
pub(crate) fn process_cpu() -> Duration {
    let mut total = 0u64;
    let mut found = false;
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for task in dir.flatten() {
            let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else {
                continue;
            };
            if let Some(run_ns) = text
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
            {
                total += run_ns;
                found = true;
            }
        }
    }
    if found {
        return Duration::from_nanos(total);
    }
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    // Fields after the name: state is the 1st, utime the 12th, stime the 13th.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}
