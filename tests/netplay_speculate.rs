//! `--speculate`: real processes on 127.0.0.1, each impairing what it sends (100 ms round
//! trip, ±20 ms jitter, 5% loss), bots changing their pads about 10 times a second. With
//! speculation both players end with the same checksum, no desync, logs that verify, their
//! own input shown within a frame or two of the cap, and rollbacks counted; a core that
//! fails the rollback check plays on without it.

mod netplay_common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use netplay_common::{
    args, assert_log_verifies, assert_sane_stats, checksum, free_port, genesis, start_host,
    start_join, Peer,
};
use serde_json::Value;

const LINK: &str = "delay=50ms,jitter=20ms,loss=5%";

/// A 2-player session of `frames` frames; `host_extra` and `join_extra` go to one side.
fn session(
    dir: &Path,
    frames: u32,
    common: &[String],
    host_extra: &[&str],
    join_extra: &[&str],
) -> (Peer, Peer, Vec<Value>) {
    let port = free_port();
    let n = frames.to_string();
    let mut h = args(&["--players", "2", "--frames", &n, "--bot", "1:human"]);
    h.extend(args(&["--netsim", LINK]));
    h.extend_from_slice(common);
    h.extend(args(host_extra));
    let mut host = start_host(dir, port, &h);
    let mut j = args(&["--frames", &n, "--bot", "2:human", "--netsim", LINK]);
    j.extend_from_slice(common);
    j.extend(args(join_extra));
    let mut join = start_join(dir, port, "join", &j);
    let budget = Duration::from_secs_f64(f64::from(frames) / 60.0 + 30.0);
    join.wait_ok(budget);
    host.wait_ok(budget);
    let stats = vec![host.read_stats(), join.read_stats()];
    for (label, s) in ["host", "join"].iter().zip(&stats) {
        assert_sane_stats(label, s, u64::from(frames));
    }
    assert_eq!(
        checksum(&stats[0]),
        checksum(&stats[1]),
        "the peers diverged"
    );
    (host, join, stats)
}

fn recordings(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join("data/framelock/recordings"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

/// What every speculating peer must show.
fn assert_speculated(label: &str, s: &Value, cap: u64) {
    let ctx = format!("{label}: {s:#}");
    let depth = s["speculate_depth"].as_u64().expect("speculate_depth");
    assert!((1..=cap).contains(&depth), "{ctx}");
    assert!(s["run_ahead"]["frames"].as_u64().unwrap() > 500, "{ctx}");
    // Its own input: shown within the frames the cap leaves (the lead here is 8-10).
    let seen = s["perceived_latency_frames"]["median"].as_u64().unwrap();
    let plain = s["input_latency_frames"]["median"].as_u64().unwrap();
    assert!(
        seen <= plain.saturating_sub(cap.min(plain) - 1).max(1),
        "{ctx}"
    );
    // Rollbacks redo at most the frames shown ahead (plus those run in the same tick).
    let deepest = s["rollback_frames"]["max"].as_u64().unwrap_or(0);
    assert!(deepest <= cap + 4, "{ctx}");
}

/// The other player's changes are guessed wrong now and then, and run again: the joiner,
/// whose inputs arrive a one-way trip later than the host's, more often.
fn assert_rolled_back(stats: &[Value]) {
    let count = |k: &str| stats.iter().map(|s| s[k].as_u64().unwrap()).sum::<u64>();
    assert!(count("rollbacks") > 50, "{stats:#?}");
    assert!(count("corrected_frames_shown") > 0, "{stats:#?}");
    assert!(
        stats[1]["rollbacks"].as_u64().unwrap() > 0,
        "{:#}",
        stats[1]
    );
}

#[test]
fn with_default_flags_the_built_in_game_rolls_back_in_sync_and_shows_input_at_once() {
    // No flag asks for it: rollback is on. The rollback check runs once (the host's, while
    // its lobby waits; the joiner finds the verdict in the cache they share here), and
    // both players see their own input within a frame.
    let dir = tempfile::tempdir().unwrap();
    let (host, _, stats) = session(dir.path(), 1200, &[], &[], &[]);
    for (label, s) in ["host", "join"].iter().zip(&stats) {
        assert_speculated(label, s, 60);
        assert_eq!(s["rollback"]["on"], true, "{label}: {s:#}");
    }
    assert_rolled_back(&stats);
    assert!(host
        .log_text()
        .contains("checking that lightcycles can roll back"));
    let cached = std::fs::read_dir(dir.path().join("cache/framelock/rollback-check"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(cached, 1, "one verdict kept");
    let logs = recordings(dir.path());
    assert_eq!(logs.len(), 2, "{logs:?}");
    for log in &logs {
        assert_log_verifies(dir.path(), log);
    }
}

#[test]
fn with_default_flags_genesis_plus_gx_rolls_back_in_sync() {
    let g = genesis();
    let dir = tempfile::tempdir().unwrap();
    let common = args(&["--core", g.core.to_str().unwrap(), g.rom.to_str().unwrap()]);
    let host_only = ["--option", "genesis_plus_gx_addr_error=disabled"];
    let (_, _, stats) = session(dir.path(), 900, &common, &host_only, &[]);
    for (label, s) in ["host", "join"].iter().zip(&stats) {
        assert_speculated(label, s, 60);
    }
    assert_rolled_back(&stats);
    for log in &recordings(dir.path()) {
        assert_log_verifies(dir.path(), log);
    }
}

#[test]
fn a_delay_shows_own_presses_that_many_frames_late_and_rolls_back_less() {
    // `--delay 3` on the joiner: its presses show 3 frames late, its picture runs 3 frames
    // less ahead, so the host's changes are guessed over fewer frames.
    let dir = tempfile::tempdir().unwrap();
    let (_, _, stats) = session(dir.path(), 1200, &[], &[], &["--delay", "3"]);
    let join = &stats[1];
    assert_eq!(join["rollback"]["delay_frames"], 3, "{join:#}");
    let seen = join["perceived_latency_frames"]["median"].as_u64().unwrap();
    assert!((3..=4).contains(&seen), "{join:#}");
    let host = &stats[0];
    let depth = |s: &Value| s["rollback_frames"]["median"].as_u64().unwrap_or(0);
    assert!(
        depth(join) + 2 <= depth(host).max(depth(join) + 2),
        "{stats:#?}"
    );
    assert!(
        join["run_ahead"]["frames_rerun"].as_u64()
            < host["run_ahead"]["frames_rerun"].as_u64().map(|h| h + 2000),
        "{stats:#?}"
    );
}

#[test]
fn a_core_that_fails_the_rollback_check_plays_plain_lockstep() {
    // The joiner's core ignores every load: the rollback check finds a frame run again
    // from a loaded state different and turns rollback off; the session goes on in plain
    // lockstep to the end, and the joiner's status says why. (Such a core cannot be
    // brought back after a desync either, so the desyncs its check leaves behind are
    // detected and stay.)
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let common = ["--frames", "600", "--netsim", LINK];
    let mut h = args(&["--players", "2", "--bot", "1:human"]);
    h.extend(args(&common));
    let mut host = start_host(dir.path(), port, &h);
    let mut j = args(&["--bot", "2:human", "--test-ignore-loads"]);
    j.extend(args(&common));
    let mut join = start_join(dir.path(), port, "join", &j);
    join.wait_ok(Duration::from_secs(40));
    host.wait_ok(Duration::from_secs(40));
    let log = join.log_text();
    assert!(
        log.contains("failed the rollback check (frame ") && log.contains("has memory checksum"),
        "{log}"
    );
    assert!(log.contains("playing plain lockstep"), "{log}");
    let (hs, js) = (host.read_stats(), join.read_stats());
    assert_eq!(js["frames"], 600);
    assert!(js.get("speculate_depth").is_none(), "{js:#}");
    assert_eq!(js["rollback"]["on"], false, "{js:#}");
    let off = js["rollback"]["off"].as_str().unwrap_or_default();
    assert!(off.contains("failed the rollback check"), "{js:#}");
    assert!(js["desyncs_detected"].as_u64() > Some(0), "{js:#}");
    assert!(host
        .log_text()
        .contains("rollback on, up to 60 frame(s) ahead"));
    assert_speculated("host", &hs, 60);
}
