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
    spawn_in(dir, None, label, args)
}

/// `spawn` inside the network namespace `netns`, if one is given.
pub fn spawn_in(dir: &Path, netns: Option<&str>, label: &str, args: &[String]) -> Child {
    fixtures::framelock_in(dir, netns)
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
    super::smoke::fail(format!(
        "{label} never said {needle:?} in 20 s; the end of its log:\n{}",
        log_tail(dir, label)
    ))
}

/// Waits for `child`, `label` in `dir`, and returns its `--stats-json`; a process that
/// failed, or stats without an input latency (no frame was played), end the benchmark.
pub fn finished(mut child: Child, dir: &Path, label: &str) -> Value {
    let status = child.wait().unwrap();
    if !status.success() {
        super::smoke::fail(format!(
            "{label} ended with {status}; the end of its log:\n{}",
            log_tail(dir, label)
        ));
    }
    let s = stats(dir, label);
    let median = s["input_latency_frames"]["median"].as_f64();
    super::smoke::number(
        &format!("{label}'s input latency"),
        median.unwrap_or(f64::NAN),
    );
    s
}

/// Seconds since midnight of a log line's timestamp ("2026-11-27T10:22:02.452355Z ...").
pub fn stamp(line: &str) -> Option<f64> {
    let time = line.split('T').nth(1)?.split('Z').next()?;
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

/// The last lines of `label`'s log.
pub fn log_tail(dir: &Path, label: &str) -> String {
    let log = std::fs::read_to_string(dir.join(format!("{label}.log"))).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(5).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// Waits for `child`, `label` in `dir`, and returns its user + system CPU seconds (the
/// kernel's accounting of the exited process, from wait4); a process that failed ends the
/// benchmark, since its CPU would measure the failure.
pub fn cpu_of(child: Child, dir: &Path, label: &str) -> f64 {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet reaped; the pointers are to live locals.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4 failed");
    std::mem::forget(child);
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        super::smoke::fail(format!(
            "{label} failed (wait status {status}); the end of its log:\n{}",
            log_tail(dir, label)
        ));
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// `label`'s `--stats-json`; a process that wrote none ends the benchmark with the end of
/// its log, which says why (it could not connect, the session was over, ...).
pub fn stats(dir: &Path, label: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(format!("{label}.json")))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    text.unwrap_or_else(|| {
        super::smoke::fail(format!(
            "{label} wrote no --stats-json; the end of its log:\n{}",
            log_tail(dir, label)
        ))
    })
}
