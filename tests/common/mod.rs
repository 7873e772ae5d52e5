//! Shared helpers for the host integration tests: fixture paths, and running one test of
//! the current test binary in a fresh process (one libretro core per process).
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use framelock::host::CoreConfig;

/// Set in a re-executed child; its value tells the child what to do.
pub const CHILD_ENV: &str = "FRAMELOCK_TEST_CHILD";

// A test crate may use two harnesses, each with its own copy of this module.
#[allow(clippy::duplicate_mod)]
#[path = "../fixtures/mod.rs"]
mod fixtures;
#[allow(unused_imports)] // each test crate uses a different subset
pub use fixtures::{airstriker, core, fixture, framelock, text};

/// System and save directories inside `dir`.
pub fn config(dir: &Path) -> CoreConfig {
    CoreConfig {
        system_dir: dir.join("system"),
        save_dir: dir.join("saves"),
        ..CoreConfig::default()
    }
}

/// The role this process was re-executed with, if it is a child.
pub fn child_role() -> Option<String> {
    std::env::var(CHILD_ENV).ok()
}

/// Runs test `name` of this binary in a new process with `CHILD_ENV=role` and returns
/// its stdout. Panics with the child's output if it fails.
pub fn run_child(name: &str, role: &str) -> String {
    let exe = std::env::current_exe().expect("test binary path");
    let out = Command::new(exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, role)
        .output()
        .expect("re-exec the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "child {name} ({role}) failed: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("1 passed"),
        "child {name} ran no test:\n{stdout}"
    );
    stdout
}

/// Prints a `RESULT key=value` line for the parent to read (libtest may put its own
/// text before it on the same line).
pub fn report(key: &str, value: impl std::fmt::Display) {
    println!("RESULT {key}={value}");
}

/// Reads a value reported by a child.
pub fn result(stdout: &str, key: &str) -> String {
    let prefix = format!("RESULT {key}=");
    stdout
        .lines()
        .find_map(|l| l.find(&prefix).map(|i| &l[i + prefix.len()..]))
        .unwrap_or_else(|| panic!("child reported no {key}:\n{stdout}"))
        .to_owned()
}

/// Serialises the tests of one binary that hold a core (one core per process).
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
