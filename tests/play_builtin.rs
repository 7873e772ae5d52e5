//! The built-in game (no CONTENT, no --core) is deterministic across processes: the same bot
//! seed gives the same checksum twice, a different seed a different one.

mod play_common;

use play_common::{checksum, headless_stats, text};

#[test]
fn bot_seed_decides_the_checksum() {
    let home = tempfile::tempdir().unwrap();
    let run = |name: &str, seed: &str| {
        headless_stats(
            home.path(),
            name,
            &["--fast", "--frames", "1200", "--bot", seed],
        )
    };
    let a = run("a", "11");
    let b = run("b", "11");
    let c = run("c", "12");
    assert_eq!(checksum(&a), checksum(&b), "same seed, different result");
    assert_ne!(checksum(&a), checksum(&c), "the bot's seed changed nothing");
    assert_eq!(a["frames"], 1200);
    assert_eq!(a["content"], serde_json::Value::Null);
    assert_eq!(a["core_path"], "built-in core");
    assert!(
        a["core"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("lightcycles"),
        "{a}"
    );
}

#[test]
fn ctrl_c_ends_a_headless_run_like_a_quit() {
    let home = tempfile::tempdir().unwrap();
    let stats = home.path().join("stats.json");
    let log = home.path().join("run.flr");
    let child = play_common::framelock(home.path())
        .args(["play", "--headless", "--bot", "3", "--record"])
        .arg(&log)
        .arg("--stats-json")
        .arg(&stats)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run framelock");
    // It records from the first frame: wait until the log exists, then play a while.
    let t0 = std::time::Instant::now();
    while !log.exists() && t0.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_secs(2));
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats written")).unwrap();
    assert_eq!(s["end"], "quit", "{s:#}");
    let frames = s["frames"].as_u64().unwrap();
    assert!((60..2000).contains(&frames), "{s:#}");
    // The stats say where the recording went and that it is whole.
    assert_eq!(s["recording"]["path"], log.display().to_string(), "{s:#}");
    assert_eq!(s["recording"]["frames"].as_u64(), Some(frames), "{s:#}");
    assert_eq!(s["recording"]["complete"], true, "{s:#}");
    // The recording is whole: it replays to the same checksum.
    let replay = home.path().join("replay.json");
    let out = play_common::framelock(home.path())
        .args(["replay", "--headless", "--fast", "--verify", "--stats-json"])
        .arg(&replay)
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&replay).unwrap()).unwrap();
    assert_eq!(r["frames"].as_u64(), Some(frames), "{r:#}");
    assert_eq!(checksum(&r), checksum(&s));
}
