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
pub use fixtures::{checksum, framelock, text, SETUP_HINT};

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

pub fn start_xvfb() -> Xvfb {
    assert!(
        Path::new("/usr/bin/Xvfb").exists(),
        "Xvfb is not installed: {SETUP_HINT}"
    );
    for n in 90..200 {
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
        if socket.exists() || Path::new(&format!("/tmp/.X{n}-lock")).exists() {
            continue;
        }
        let display = format!(":{n}");
        // -br: black root window, so every non-black pixel is ours.
        let mut child = Command::new("Xvfb")
            .args([
                &display,
                "-screen",
                "0",
                "1280x1024x24",
                "-br",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start Xvfb");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if socket.exists() {
                return Xvfb { child, display };
            }
            if child.try_wait().unwrap().is_some() {
                break; // lost a race for this display number; try the next
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("could not start Xvfb on any display :90..:199");
}
