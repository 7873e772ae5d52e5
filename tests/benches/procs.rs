//! Running framelock processes from a benchmark: each with its log and `--stats-json` in a
//! directory, named by a label.
#![allow(dead_code)] // each benchmark uses a different subset

use std::fs::File;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::fixtures;

/// `framelock ARGS --stats-json DIR/LABEL.json`, its log in `DIR/LABEL.log`.
pub fn spawn(dir: &Path, label: &str, args: &[String]) -> Child {
    fixtures::framelock(dir)
        .args(args)
        .arg("--stats-json")
        .arg(dir.join(format!("{label}.json")))
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(File::create(dir.join(format!("{label}.log"))).unwrap())
        .spawn()
        .expect("spawn framelock")
}

pub fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// Waits (up to 20 s) until `label`'s log says `needle`.
pub fn wait_for(dir: &Path, label: &str, needle: &str) {
    for _ in 0..1000 {
        let log = std::fs::read_to_string(dir.join(format!("{label}.log"))).unwrap_or_default();
        if log.contains(needle) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{label} never said {needle:?}");
}

/// Waits for `child` and returns its user + system CPU seconds (the kernel's accounting
/// of the exited process, from wait4).
pub fn cpu_of(child: Child) -> f64 {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet reaped; the pointers are to live locals.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4 failed");
    std::mem::forget(child);
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// `label`'s `--stats-json`.
pub fn stats(dir: &Path, label: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(format!("{label}.json")))
        .unwrap_or_else(|e| panic!("{label}: no stats ({e})"));
    serde_json::from_str(&text).unwrap()
}

/// Seconds of play a benchmark runs: `FRAMELOCK_BENCH_SECS`, else `default`.
pub fn bench_secs(default: u64) -> u64 {
    std::env::var("FRAMELOCK_BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
