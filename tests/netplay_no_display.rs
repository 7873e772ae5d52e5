//! Proves that `host` and `join` without a display fail at once with a hint to use
//! `--headless`, instead of failing only after the players have waited in the lobby.

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn host_and_join_without_a_display_fail_before_the_lobby() {
    for args in [
        vec!["host", "--port", "0", "--lobby-timeout", "20"],
        vec!["join", "127.0.0.1:9"],
    ] {
        let start = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_framelock"))
            .args(&args)
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded: {err}");
        assert!(err.contains("--headless"), "{args:?}: {err}");
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{args:?} took {:?}",
            start.elapsed()
        );
    }
}
