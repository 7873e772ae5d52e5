//! `--video` on a joiner of a 2-player netplay session: the video has one frame per frame of
//! the session (the agreed frames, each once) and recording it costs the joiner no stalls.

mod netplay_common;

use std::path::Path;
use std::process::Command;

use netplay_common::{args, free_port, start_host, start_join, text};

/// One 2-player session of `frames` frames, the joiner with `joiner_extra`; the joiner's stats.
fn session(dir: &Path, frames: u32, joiner_extra: &[String]) -> serde_json::Value {
    let port = free_port();
    let n = frames.to_string();
    let mut host = start_host(
        dir,
        port,
        &args(&[
            "--players",
            "2",
            "--frames",
            &n,
            "--bot",
            "1",
            "--no-record",
        ]),
    );
    let mut a = args(&["--frames", &n, "--bot", "2", "--no-record"]);
    a.extend_from_slice(joiner_extra);
    let mut join = start_join(dir, port, "join", &a);
    let budget = std::time::Duration::from_secs_f64(f64::from(frames) / 60.0 + 25.0);
    join.wait_ok(budget);
    host.wait_ok(budget);
    join.read_stats()
}

#[test]
fn a_joiner_records_every_agreed_frame_without_stalling() {
    let dir = tempfile::tempdir().unwrap();
    let frames = 600;
    let plain = session(dir.path(), frames, &[]);
    let video = dir.path().join("joiner.mp4");
    let with = session(
        dir.path(),
        frames,
        &args(&["--video", video.to_str().unwrap()]),
    );
    assert_eq!(with["frames"].as_u64(), Some(u64::from(frames)), "{with:#}");
    assert_eq!(
        with["video"]["frames"].as_u64(),
        Some(u64::from(frames)),
        "{with:#}"
    );
    assert_eq!(with["video"]["error"], serde_json::Value::Null, "{with:#}");
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-count_packets", "-select_streams", "v:0"])
        .args(["-show_entries", "stream=nb_read_packets", "-of", "csv=p=0"])
        .arg(&video)
        .output()
        .expect("ffprobe runs (bash .ci/setup installs ffmpeg)");
    assert!(out.status.success(), "{}", text(&out));
    let packets: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_eq!(packets, u64::from(frames));
    // Recording in the background leaves play as it was: stalls within a few of a session
    // without it (both are normally 0 on 127.0.0.1).
    let stalls = |s: &serde_json::Value| s["stall_frames"].as_u64().unwrap();
    assert!(
        stalls(&with) <= stalls(&plain) + 3,
        "stalls with video {} vs {} without",
        stalls(&with),
        stalls(&plain)
    );
}
