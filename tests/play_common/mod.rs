//! Helpers shared by the `play_*` and `window_*` tests: the binary, fixtures, stats files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

// A test crate may use two harnesses, each with its own copy of this module.
#[allow(clippy::duplicate_mod)]
#[path = "../fixtures/mod.rs"]
mod fixtures;
#[allow(unused_imports)] // each test crate uses a different subset
pub use fixtures::{checksum, framelock, free_port, text, SETUP_HINT};

/// Real cores and the Airstriker ROM fetched by `.ci/setup`.
pub struct Fixtures {
    pub gpgx: PathBuf,
    pub fbneo: PathBuf,
    pub airstriker: PathBuf,
}

pub fn fixtures() -> Fixtures {
    Fixtures {
        gpgx: fixtures::core("genesis_plus_gx"),
        fbneo: fixtures::core("fbneo"),
        airstriker: fixtures::airstriker(),
    }
}

/// Runs `framelock play ARGS --headless --stats-json ...` and returns the stats.
pub fn headless_stats(home: &Path, name: &str, args: &[&str]) -> Value {
    let stats = home.join(format!("{name}.json"));
    let out = framelock(home)
        .arg("play")
        .args(args)
        .arg("--headless")
        .arg("--stats-json")
        .arg(&stats)
        .output()
        .expect("run framelock");
    assert!(out.status.success(), "{}", text(&out));
    let json = std::fs::read_to_string(&stats).expect("stats file written");
    serde_json::from_str(&json).expect("stats file is JSON")
}

/// An Xvfb server on a free display, killed on drop.
pub struct Xvfb {
    child: Child,
    pub display: String,
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts Xvfb on a display of its own choosing and returns once it accepts connections:
/// with `-displayfd 1` it prints the display number on stdout only when ready. Its socket
/// file appears earlier, and a client that connects then can be refused.
pub fn start_xvfb() -> Xvfb {
    assert!(
        Path::new("/usr/bin/Xvfb").exists(),
        "Xvfb is not installed: {SETUP_HINT}"
    );
    // -br: black root window, so every non-black pixel is ours.
    let mut child = Command::new("Xvfb")
        .args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "1280x1024x24",
            "-br",
            // An X server resets when its last client leaves and refuses connections
            // meanwhile: a test's next window, started as the last one quits, would fail.
            "-noreset",
            "-nolisten",
            "tcp",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start Xvfb");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line);
        let _ = tx.send(line);
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(line) if line.trim().parse::<u32>().is_ok() => {
            let x = Xvfb {
                child,
                display: format!(":{}", line.trim()),
            };
            // Ready by its own word; a client's connection is the proof.
            let deadline = Instant::now() + Duration::from_secs(10);
            while xdotool(&x.display, &["getdisplaygeometry"]).is_empty() {
                assert!(
                    Instant::now() < deadline,
                    "Xvfb on {} takes no connection within 10 s",
                    x.display
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            x
        }
        outcome => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("Xvfb did not become ready within 10 s: {outcome:?}");
        }
    }
}

/// `xdotool ARGS` on `display` (keys, window searches and moves): what it printed.
pub fn xdotool(display: &str, args: &[&str]) -> String {
    let out = Command::new("xdotool")
        .env("DISPLAY", display)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("xdotool is missing ({e}): {SETUP_HINT}"));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
