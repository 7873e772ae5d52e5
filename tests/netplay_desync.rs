//! Proves that netplay catches a divergence within one check interval and heals it within a
//! second, and that long clean sessions raise no false desync, on the built-in game and on
//! Genesis Plus GX (whose savestates differ between processes).

mod netplay_common;

use std::time::Duration;

use netplay_common::{args, checksum, free_port, genesis, start_host, start_join};
use serde_json::Value;

const INTERVAL: u64 = 60;

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .filter_map(Value::as_u64)
        .collect()
}

/// Runs a fast 2-player session of `frames` frames with `extra` flags on both peers and
/// `join_extra` on the joiner; the host's player is a bot. Returns (host stats, joiner stats).
/// Without a send budget: at 2.4 KB/s a fast session is held to about 200 frames a second
/// (a CTRL every 20 ms, a lead's worth of frames each), and these tests are about checksums.
fn session(frames: u64, extra: &[String], join_extra: &[String]) -> (Value, Value) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut common = args(&[
        "--fast",
        "--frames",
        &frames.to_string(),
        "--send-budget",
        "0",
    ]);
    common.extend_from_slice(extra);
    let mut host_args = common.clone();
    host_args.extend(args(&["--bot", "11"]));
    let mut host = start_host(dir.path(), port, &host_args);
    let mut join_args = common;
    join_args.extend_from_slice(join_extra);
    let mut join = start_join(dir.path(), port, "ana", &join_args);
    join.wait_ok(Duration::from_secs(50));
    host.wait_ok(Duration::from_secs(50));
    (host.read_stats(), join.read_stats())
}

#[test]
fn an_injected_divergence_is_detected_and_resynced() {
    let inject = 300;
    // The joiner's player stays idle, so the flipped Select is a lone tap: one coin more
    // on that machine only. A bot's own tap on a neighbouring frame could absorb the flip
    // (a held button counts one coin), which is not the divergence this test is after.
    let (h, j) = session(1500, &[], &args(&["--inject-desync", &inject.to_string()]));
    let ctx = format!("host: {h:#}\njoiner: {j:#}");
    // Detected at the first checksum frame after the flip: within one interval.
    let frames = u64s(&h["desync_frames"]);
    let first = *frames
        .first()
        .unwrap_or_else(|| panic!("no desync seen\n{ctx}"));
    assert!(
        first >= inject && first < inject + INTERVAL,
        "desync at {first}, injected at {inject}\n{ctx}"
    );
    assert_eq!(u64s(&j["desync_frames"]).first(), Some(&first), "{ctx}");
    // Healed: the joiner loaded the host's state within a second of hearing of it.
    assert!(j["resyncs"].as_u64() >= Some(1), "{ctx}");
    assert!(h["resyncs"].as_u64() >= Some(1), "{ctx}");
    let ms = j["resync_ms"][0].as_f64().unwrap_or(f64::MAX);
    assert!(ms < 1000.0, "recovery took {ms} ms\n{ctx}");
    // And in sync again: the same machine at the end.
    assert_eq!(checksum(&h), checksum(&j), "{ctx}");
}

#[test]
fn without_injection_the_checksums_diverge_and_nothing_heals_them() {
    // The control for the test above: with recovery impossible (a check interval longer
    // than the session), the flipped input leaves the peers apart (idle joiner, as above).
    let (h, j) = session(
        600,
        &args(&["--checksum-interval", "3600"]),
        &args(&["--inject-desync", "100"]),
    );
    assert_ne!(checksum(&h), checksum(&j), "host: {h:#}\njoiner: {j:#}");
    assert_eq!(h["resyncs"].as_u64(), Some(0));
}

fn assert_no_false_desyncs(h: &Value, j: &Value) {
    let ctx = format!("host: {h:#}\njoiner: {j:#}");
    assert_eq!(h["frames"].as_u64(), Some(10_000), "{ctx}");
    assert_eq!(h["desyncs_detected"].as_u64(), Some(0), "{ctx}");
    assert_eq!(j["desyncs_detected"].as_u64(), Some(0), "{ctx}");
    assert_eq!(checksum(h), checksum(j), "{ctx}");
}

#[test]
fn ten_thousand_clean_frames_raise_no_desync_on_the_builtin_game() {
    let (h, j) = session(10_000, &[], &args(&["--bot", "12"]));
    assert_no_false_desyncs(&h, &j);
}

#[test]
fn ten_thousand_clean_frames_raise_no_desync_on_genesis_plus_gx() {
    let g = genesis();
    let shared = vec![
        g.rom.display().to_string(),
        "--core".into(),
        g.core.display().to_string(),
        "--option".into(),
        "genesis_plus_gx_addr_error=disabled".into(),
    ];
    let (h, j) = session(10_000, &shared, &args(&["--bot", "12"]));
    assert_no_false_desyncs(&h, &j);
}
