//! Real processes on 127.0.0.1: `framelock host` and `framelock join` with bots stay in sync
//! for 1200 frames (20 s at 60 fps) with 2 and 8 players, on a clean loopback and with every
//! peer impairing its outgoing side (`--netsim loss=20%,delay=40ms,jitter=10ms`), on the
//! built-in game and on Genesis Plus GX + Airstriker. Every peer must exit 0 with the host's
//! checksum and sane netplay stats.

mod netplay_common;

use netplay_common::{args, genesis, run_session, BAD_LINK};

const FRAMES: u32 = 1200;

fn builtin(players: u8, netsim: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let common = netsim.map_or_else(Vec::new, |n| args(&["--netsim", n]));
    let stats = run_session(dir.path(), players, FRAMES, &common, &[]);
    assert_eq!(stats.len(), usize::from(players));
    assert_eq!(stats[0]["core"], "lightcycles");
    for s in &stats {
        let n = &s["netsim"];
        if netsim.is_none() {
            assert!(n.is_null(), "{n}");
            continue;
        }
        // What the conditioner did: 20% of the datagrams lost, the rest sent, each counted
        // late or not.
        let count = |k: &str| {
            n[k].as_u64()
                .unwrap_or_else(|| panic!("no netsim.{k}: {n}"))
        };
        let (pushed, dropped, released) = (count("pushed"), count("dropped"), count("released"));
        assert!(pushed > 500 && released + dropped >= pushed - 1, "{n}");
        let loss = dropped as f64 / pushed as f64;
        assert!((0.15..0.25).contains(&loss), "{n}");
        assert!(count("released_late") <= released, "{n}");
        assert!(n["late_max_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{n}");
    }
}

fn airstriker(players: u8, netsim: Option<&str>) {
    let g = genesis();
    let dir = tempfile::tempdir().unwrap();
    let mut common = args(&["--core", g.core.to_str().unwrap(), g.rom.to_str().unwrap()]);
    if let Some(n) = netsim {
        common.extend(args(&["--netsim", n]));
    }
    // Joiners get the host's option values in the start state.
    let host_only = args(&["--option", "genesis_plus_gx_addr_error=disabled"]);
    let stats = run_session(dir.path(), players, FRAMES, &common, &host_only);
    assert_eq!(stats.len(), usize::from(players));
    assert_eq!(stats[0]["core"], "Genesis Plus GX");
}

#[test]
fn builtin_two_players_clean_link() {
    builtin(2, None);
}

#[test]
fn builtin_two_players_bad_link() {
    builtin(2, Some(BAD_LINK));
}

#[test]
fn builtin_eight_players_clean_link() {
    builtin(8, None);
}

#[test]
fn builtin_eight_players_bad_link() {
    builtin(8, Some(BAD_LINK));
}

#[test]
fn airstriker_two_players_clean_link() {
    airstriker(2, None);
}

#[test]
fn airstriker_two_players_bad_link() {
    airstriker(2, Some(BAD_LINK));
}

#[test]
fn airstriker_eight_players_clean_link() {
    airstriker(8, None);
}

#[test]
fn airstriker_eight_players_bad_link() {
    airstriker(8, Some(BAD_LINK));
}

/// A 2 s round trip (1 s each way) with 25% loss: the host's first frames reach the joiner
/// only a round trip after it started, which must not count as the host going silent.
#[test]
fn builtin_two_players_two_second_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let stats = run_session(
        dir.path(),
        2,
        300,
        &args(&["--netsim", "delay=1000ms,loss=25%"]),
        &[],
    );
    // The lead covers the round trip: at least 2 s of frames.
    for s in &stats {
        assert!(s["lead"].as_u64().unwrap() >= 120, "{s:#}");
    }
}

/// A frame loop busy for most of each frame, as a window's is while it draws and waits for
/// vsync (`--busy-frame-ms`, 14 of every 16.7 ms on both peers): datagrams are still answered
/// as they arrive, on the network thread, so each side's round trip stays the link's
/// (loopback: under a millisecond) and does not grow the lead. Read by the frame loop
/// between its frames, every round trip came out 14-16 ms and the lead a frame longer.
#[test]
fn a_busy_frame_loop_does_not_lengthen_the_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let stats = run_session(dir.path(), 2, 600, &args(&["--busy-frame-ms", "14"]), &[]);
    for s in &stats {
        let rtt = s["rtt_ms"].as_u64().unwrap();
        assert!(rtt < 7, "median RTT {rtt} ms on loopback: {s:#}");
    }
}

/// Over IPv6 a datagram carries 48 bytes of UDP/IP header, not IPv4's 28: the send budget
/// counts them, so a lossy link (where each side sends as often as the budget allows) stays
/// under 2.5 KB/s each way. Counted as IPv4, it went to 3.2 KB/s.
#[test]
fn an_ipv6_session_keeps_to_the_bandwidth_budget() {
    if std::net::UdpSocket::bind("[::1]:0").is_err() {
        eprintln!("skipped: no IPv6 loopback on this machine");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = netplay_common::free_port();
    let link = ["--netsim", "delay=50ms,loss=5%"];
    let mut host_args = args(&["--frames", "1200", "--bot", "1"]);
    host_args.extend(args(&link));
    let mut host = netplay_common::start_host(dir.path(), port, &host_args);
    let mut join_args = args(&["join", &format!("[::1]:{port}"), "--headless"]);
    join_args.extend(args(&["--frames", "1200", "--bot", "2"]));
    join_args.extend(args(&link));
    let mut join = netplay_common::Peer::spawn(dir.path(), "join", &join_args);
    join.wait_ok(std::time::Duration::from_secs(50));
    host.wait_ok(std::time::Duration::from_secs(50));
    let stats = [host.read_stats(), join.read_stats()];
    assert_eq!(stats[0]["checksum"], stats[1]["checksum"]);
    for s in &stats {
        let count = |k: &str| s[k].as_u64().unwrap() as f64;
        // Every datagram of the session was counted with IPv6's header.
        assert!(count("bytes_sent") >= 48.0 * count("packets_sent"), "{s:#}");
        let secs = s["session_s"].as_f64().unwrap();
        // What this side sent before its simulated loss, and what reached it.
        let emitted = netplay_common::emitted_per_sent(s).expect("a netsim object");
        for (dir, scale) in [("sent", emitted), ("received", 1.0)] {
            let rate = (count(&format!("bytes_{dir}")) - count(&format!("lobby_bytes_{dir}")))
                * scale
                / secs;
            assert!(rate <= 2500.0, "{rate:.0} B/s {dir}: {s:#}");
            // Not idle: the lossy link makes each side spend most of its budget.
            assert!(rate >= 1500.0, "{rate:.0} B/s {dir}: {s:#}");
        }
    }
}
