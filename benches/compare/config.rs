//! The command line: flags, defaults and `--scale`.

use std::path::PathBuf;
use std::time::Duration;

pub(crate) const USAGE: &str = "\
compare: tokio-wheel against tokio::time (and tokio-util's DelayQueue), one table

usage: cargo run --release -p benches --example compare -- [flags]

  --scale F            multiply every default size by F (default 1; 0.1 for a quick run)
  --runs N             repetitions of each measurement; the median is shown (default 3)
  --ops N              workload 1: timeouts per measurement (default 500000)
  --timers N           workloads 2 and 3: timers (default 1000000)
  --conns N            workload 4: connections (default 100000)
  --resets N           workload 4: resets (default 1000000)
  --idle-timers N      workload 5: timers due in 10 minutes (default 100000)
  --idle-secs S        workload 5: wall time of each window, seconds (default 2)
  --accuracy-timers N  workload 6: timers (default 100000)
  --scaling-timers L   workload 7: the pending counts, e.g. 0,100000 (default 0,100000,1000000,
                       4000000, times --scale; a list given here is not scaled)
  --scaling-secs S     workload 7: wall time of each window, seconds (default 5; times --scale
                       if that is under 1, but at least 1)
  --scaling-runs N     workload 7: repetitions of each point (default 1; --runs does not apply)
  --fire-tasks N       workload 8: tasks sleeping 50 ms in a loop (default 2000, times --scale)
  --fire-secs S        workload 8: wall time of each window, seconds (default 3; times --scale
                       if that is under 1, but at least 1)
  --queue-values N     workload 9: values queued (default 100000)
  --queue-ops N        workload 9: operations of the single-task and the eight-task runs
                       (default 1000000)
  --tick-ms N          the wheel's tick for every workload but 6 (default 10, the crate's default)
  --workers N          worker threads of the multi-thread runtimes of workloads 3, 5, 6
                       (default: the core count; workloads 1, 7 and 8 always use 2)
  --only LIST          run only these workloads, e.g. --only 1,4
  --out DIR            where the table (compare.md) and the SVG charts go
                       (default: compare/ in the target directory, outside the tracked tree)
  --write-docs         write them to the repository's docs/ instead, to refresh the published
                       docs/compare.md and charts (after a full run on an idle machine)
  --no-svg             write no files: the table on standard output only
  -h, --help           this text
";

#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) runs: usize,
    pub(crate) ops: u64,
    pub(crate) timers: usize,
    pub(crate) conns: usize,
    pub(crate) resets: usize,
    pub(crate) idle_timers: usize,
    pub(crate) idle_secs: f64,
    pub(crate) accuracy_timers: usize,
    pub(crate) scaling_timers: Vec<usize>,
    pub(crate) scaling_secs: f64,
    pub(crate) scaling_runs: usize,
    pub(crate) fire_tasks: usize,
    pub(crate) fire_secs: f64,
    pub(crate) queue_values: usize,
    pub(crate) queue_ops: usize,
    pub(crate) tick: Duration,
    pub(crate) workers: usize,
    pub(crate) only: Vec<u32>,
    pub(crate) out: Option<PathBuf>,
    pub(crate) scale: f64,
}

impl Config {
    pub(crate) fn wants(&self, workload: u32) -> bool {
        self.only.is_empty() || self.only.contains(&workload)
    }
}

pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The repository's `docs/`, where the published table and charts live.
pub(crate) fn docs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs")
}

/// `compare/` in the target directory this program was built into (it runs
/// from `<target>/<profile>/examples/`), so that a run leaves the tracked
/// tree as it was; the workspace's `target/compare` if that cannot be told.
pub(crate) fn default_out() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_path_buf()))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("compare")
}

pub(crate) fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Option<Config>, String> {
    let mut scale = 1.0f64;
    let mut explicit: Vec<(String, String)> = Vec::new();
    let mut only = Vec::new();
    let mut out = Some(default_out());
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--no-svg" => out = None,
            "--write-docs" => out = Some(docs_dir()),
            "--scale" | "--runs" | "--ops" | "--timers" | "--conns" | "--resets"
            | "--idle-timers" | "--idle-secs" | "--accuracy-timers" | "--tick-ms" | "--workers"
            | "--scaling-timers" | "--scaling-secs" | "--scaling-runs" | "--fire-tasks"
            | "--fire-secs" | "--queue-values" | "--queue-ops" | "--only" | "--out" => {
                let value = args
                    .next()
                    .ok_or_else(|| format!("`{flag}` needs a value"))?;
                match flag.as_str() {
                    "--scale" => {
                        scale = value
                            .parse()
                            .ok()
                            .filter(|s: &f64| *s > 0.0 && s.is_finite())
                            .ok_or_else(|| {
                                format!("--scale needs a positive number, not `{value}`")
                            })?;
                    }
                    "--only" => {
                        for part in value.split(',') {
                            let w: u32 = part
                                .trim()
                                .parse()
                                .ok()
                                .filter(|w| (1..=9).contains(w))
                                .ok_or_else(|| {
                                format!("--only takes workloads 1 to 9, not `{part}`")
                            })?;
                            only.push(w);
                        }
                    }
                    "--out" => out = Some(PathBuf::from(value)),
                    _ => explicit.push((flag, value)),
                }
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let scaled = |n: f64| ((n * scale).round() as usize).max(1);
    // Windows of wall time shrink for a quick run, but do not grow.
    let window = |secs: f64| (secs * scale.min(1.0)).max(1.0);
    let mut cfg = Config {
        runs: 3,
        ops: scaled(500_000.0) as u64,
        timers: scaled(1_000_000.0),
        conns: scaled(100_000.0),
        resets: scaled(1_000_000.0),
        idle_timers: scaled(100_000.0),
        idle_secs: 2.0,
        accuracy_timers: scaled(100_000.0),
        scaling_timers: vec![
            0,
            scaled(100_000.0),
            scaled(1_000_000.0),
            scaled(4_000_000.0),
        ],
        scaling_secs: window(5.0),
        scaling_runs: 1,
        fire_tasks: scaled(2000.0),
        fire_secs: window(3.0),
        queue_values: scaled(100_000.0),
        queue_ops: scaled(1_000_000.0),
        tick: Duration::from_millis(10),
        workers: cores(),
        only,
        out,
        scale,
    };
    for (flag, value) in explicit {
        let seconds = || -> Result<f64, String> {
            value
                .parse()
                .ok()
                .filter(|s: &f64| *s > 0.0 && s.is_finite())
                .ok_or_else(|| format!("`{flag}` needs a positive number, not `{value}`"))
        };
        let whole = || -> Result<usize, String> {
            value
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("`{flag}` needs a positive whole number, not `{value}`"))
        };
        match flag.as_str() {
            "--runs" => cfg.runs = whole()?,
            "--ops" => cfg.ops = whole()? as u64,
            "--timers" => cfg.timers = whole()?,
            "--conns" => cfg.conns = whole()?,
            "--resets" => cfg.resets = whole()?,
            "--idle-timers" => cfg.idle_timers = whole()?,
            "--accuracy-timers" => cfg.accuracy_timers = whole()?,
            "--tick-ms" => cfg.tick = Duration::from_millis(whole()? as u64),
            "--workers" => cfg.workers = whole()?,
            "--idle-secs" => cfg.idle_secs = seconds()?,
            "--scaling-secs" => cfg.scaling_secs = seconds()?,
            "--fire-secs" => cfg.fire_secs = seconds()?,
            "--scaling-runs" => cfg.scaling_runs = whole()?,
            "--fire-tasks" => cfg.fire_tasks = whole()?,
            "--queue-values" => cfg.queue_values = whole()?,
            "--queue-ops" => cfg.queue_ops = whole()?,
            "--scaling-timers" => {
                let mut list = Vec::new();
                for part in value.split(',') {
                    list.push(part.trim().parse::<usize>().map_err(|_| {
                        format!("--scaling-timers takes whole numbers, not `{part}`")
                    })?);
                }
                list.sort_unstable();
                list.dedup();
                cfg.scaling_timers = list;
            }
            _ => unreachable!("flag {flag} is listed above"),
        }
    }
    Ok(Some(cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Config {
        parse_args(args.iter().map(|a| a.to_string()))
            .expect("valid flags")
            .expect("not --help")
    }

    #[test]
    fn files_go_outside_the_tracked_tree_by_default() {
        let out = parse(&[]).out.expect("files are written by default");
        assert!(out.ends_with("compare"), "{}", out.display());
        assert!(!out.starts_with(docs_dir()), "{}", out.display());
    }

    #[test]
    fn write_docs_targets_docs_and_out_overrides() {
        assert_eq!(parse(&["--write-docs"]).out, Some(docs_dir()));
        assert_eq!(
            parse(&["--out", "/tmp/x"]).out,
            Some(PathBuf::from("/tmp/x"))
        );
        assert_eq!(parse(&["--no-svg"]).out, None);
    }
}
