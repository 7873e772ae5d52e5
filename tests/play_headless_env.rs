//! Headless mode needs no display and no sound card; without a display, windowed mode
//! fails with a message pointing at --headless instead of crashing.

mod play_common;

use play_common::{fixtures, framelock, text};

#[test]
fn headless_runs_without_display_or_sound() {
    let f = fixtures();
    let home = tempfile::tempdir().unwrap();
    let stats = home.path().join("stats.json");
    // Paced (not --fast), so the sleeping path of the loop runs too.
    let out = framelock(home.path())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("AUDIODEV", "/nonexistent")
        .args([
            "play",
            "--headless",
            "--frames",
            "90",
            "--bot",
            "3",
            "--core",
        ])
        .arg(&f.gpgx)
        .arg(&f.airstriker)
        .arg("--stats-json")
        .arg(&stats)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("WARN"), "headless run warned:\n{stderr}");
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(s["frames"], 90);
    assert_eq!(s["headless"], true);
}

#[test]
fn window_without_display_fails_clearly() {
    let f = fixtures();
    let home = tempfile::tempdir().unwrap();
    let out = framelock(home.path())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .args(["play", "--frames", "10", "--core"])
        .arg(&f.gpgx)
        .arg(&f.airstriker)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--headless"), "{}", text(&out));
}

#[test]
fn malformed_config_names_file_and_line() {
    let home = tempfile::tempdir().unwrap();
    let cfg = home.path().join("bad.toml");
    std::fs::write(&cfg, "[video]\nscale = 2\nfullscreen = yes please\n").unwrap();
    let out = framelock(home.path())
        .args(["play", "--headless", "--frames", "1", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(cfg.to_str().unwrap()) && stderr.contains("line 3"),
        "{}",
        text(&out)
    );
}
