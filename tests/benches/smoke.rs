//! The benchmarks' short form and the checks every benchmark makes before it prints: with
//! `FRAMELOCK_BENCH_SMOKE=1` each one runs its real scenario end to end for seconds (CI runs
//! them all so: `.ci/bench-smoke`), and any benchmark given a setting it cannot run, or
//! ending without a number to show, exits non-zero naming the problem instead of panicking
//! or printing an empty table. `tests/bench_checks.rs` runs the built benchmarks to check it.
#![allow(dead_code)] // each benchmark uses a different subset

use std::fmt::Display;
use std::str::FromStr;

/// `FRAMELOCK_BENCH_SMOKE` is set (and not `0`): the short form.
pub fn smoke() -> bool {
    std::env::var("FRAMELOCK_BENCH_SMOKE").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The benchmark's name (its binary's, without cargo's hash).
pub fn name() -> String {
    let exe = std::env::args().next().unwrap_or_default();
    let stem = std::path::Path::new(&exe)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
        _ => stem,
    }
}

/// Ends the benchmark with `why` and exit status 1.
pub fn fail(why: impl Display) -> ! {
    eprintln!("bench {}: {why}", name());
    std::process::exit(1)
}

/// `value` parsed as one `T`, or why not, naming `var`.
pub fn parse<T: FromStr>(var: &str, value: &str) -> Result<T, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("{var}={value:?} is not a number this benchmark can use"))
}

/// A comma-separated list of counts, each at least 1, or why not, naming `var`.
pub fn parse_counts(var: &str, value: &str) -> Result<Vec<usize>, String> {
    let counts: Vec<usize> = value
        .split(',')
        .map(|x| parse(var, x))
        .collect::<Result<_, _>>()?;
    if counts.is_empty() || counts.contains(&0) {
        return Err(format!("{var}={value:?}: every count must be 1 or more"));
    }
    Ok(counts)
}

/// Environment variable `var` as a number: `full` for the full run, `short` in the short
/// form unless `var` says otherwise; a value that does not parse ends the benchmark.
pub fn var<T: FromStr>(var: &str, full: T, short: T) -> T {
    match std::env::var(var) {
        Ok(v) => parse(var, &v).unwrap_or_else(|e| fail(e)),
        Err(_) if smoke() => short,
        Err(_) => full,
    }
}

/// Seconds of play: `FRAMELOCK_BENCH_SECS`, else `full` (`short` in the short form); at
/// least 1.
pub fn secs(full: u64, short: u64) -> u64 {
    let s = var("FRAMELOCK_BENCH_SECS", full, short);
    if s == 0 {
        fail("FRAMELOCK_BENCH_SECS=0: a run needs at least a second of play");
    }
    s
}

/// `value`, if it is a number (not NaN or infinite); otherwise why not, naming `what`.
pub fn check(what: &str, value: f64) -> Result<f64, String> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(format!(
            "no number for {what} (got {value}): the scenario did not run through"
        ))
    }
}

/// `value` if it is a number; otherwise the benchmark ends naming `what`.
pub fn number(what: &str, value: f64) -> f64 {
    check(what, value).unwrap_or_else(|e| fail(e))
}

/// The median of `v` and its spread (smallest and largest); `None` for no values.
pub fn median_spread(mut v: Vec<f64>) -> Option<(f64, f64, f64)> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return None;
    }
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some((median, v[0], v[n - 1]))
}
