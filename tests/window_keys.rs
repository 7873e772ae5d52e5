//! Real key presses (XTEST via xdotool, under Xvfb) drive the window: F12 saves a screenshot,
//! P pauses and resumes, Right Shift (P1 Select = coin) reaches the game, Escape quits; a
//! window run without keys matches a headless run frame for frame.

mod play_common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use play_common::{checksum, framelock, headless_stats, start_xvfb, xdotool};

/// Waits for framelock's window and gives it the keyboard focus (there is no window manager).
/// `log` is the process's stderr so far, for the failure message.
fn focus_window(display: &str, child: &mut Child, log: impl Fn() -> String) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = xdotool(display, &["search", "--name", "^framelock"]);
        if let Some(id) = found.lines().next() {
            xdotool(display, &["windowfocus", "--sync", id]);
            return id.to_string();
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "framelock exited ({status}) before its window appeared\n{}",
                log()
            );
        }
        assert!(
            Instant::now() < deadline,
            "framelock's window never appeared\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stats(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("stats written")).unwrap()
}

#[test]
fn keys_drive_the_window() {
    let x = start_xvfb();
    let d = x.display.as_str();
    let home = tempfile::tempdir().unwrap();
    let run_window = |name: &str, frames: &str| {
        let s = home.path().join(format!("{name}.json"));
        let log = std::fs::File::create(home.path().join(format!("{name}.log"))).unwrap();
        let child = framelock(home.path())
            .env("DISPLAY", d)
            .args(["play", "--frames", frames, "--stats-json"])
            .arg(&s)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        (child, s)
    };
    let log_of =
        |name: &str| std::fs::read_to_string(home.path().join(format!("{name}.log"))).unwrap();

    // No keys: the window run emulates exactly what a headless run does.
    let (mut child, s) = run_window("idle", "180");
    assert!(child.wait().unwrap().success(), "{}", log_of("idle"));
    let idle = stats(&s);
    let reference = headless_stats(home.path(), "ref180", &["--fast", "--frames", "180"]);
    assert_eq!(
        checksum(&idle),
        checksum(&reference),
        "window and headless runs differ"
    );

    // With keys; a generous frame limit only guards against a hang.
    let (mut child, s) = run_window("keys", "3600");
    let id = focus_window(d, &mut child, || log_of("keys"));
    std::thread::sleep(Duration::from_millis(300));
    xdotool(d, &["key", "F12"]);
    xdotool(d, &["key", "p"]);
    std::thread::sleep(Duration::from_millis(300));
    let paused_title = xdotool(d, &["getwindowname", &id]);
    xdotool(d, &["key", "p"]);
    std::thread::sleep(Duration::from_millis(300));
    let resumed_title = xdotool(d, &["getwindowname", &id]);
    xdotool(d, &["keydown", "Shift_R"]);
    std::thread::sleep(Duration::from_millis(150));
    xdotool(d, &["keyup", "Shift_R"]);
    std::thread::sleep(Duration::from_millis(300));
    xdotool(d, &["key", "Escape"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "Escape did not quit");
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = log_of("keys");
    assert!(child.wait().unwrap().success(), "{log}");
    let keys = stats(&s);

    assert!(
        paused_title.ends_with("(paused)"),
        "title while paused: {paused_title:?}"
    );
    assert!(
        !resumed_title.contains("paused"),
        "title after resume: {resumed_title:?}"
    );
    assert!(log.contains("paused") && log.contains("resumed"), "{log}");
    assert_eq!(keys["end"], "quit");

    let shots = home.path().join("data/framelock/screenshots");
    let pngs: Vec<_> = std::fs::read_dir(&shots)
        .unwrap_or_else(|e| panic!("no screenshots dir {}: {e}\n{log}", shots.display()))
        .collect();
    assert_eq!(pngs.len(), 1, "F12 should save exactly one PNG");
    assert!(log.contains("screenshot saved"), "{log}");

    // The coin changed the game: the same number of frames without keys ends elsewhere.
    let frames = keys["frames"].as_u64().unwrap().to_string();
    let reference = headless_stats(home.path(), "ref", &["--fast", "--frames", &frames]);
    assert_ne!(
        checksum(&keys),
        checksum(&reference),
        "Right Shift (P1 Select) did not reach the game"
    );
}
