//! Pausing with real processes on loopback: a scripted pause (`--pause-at`, `--pause-for`)
//! in a headless 2-player session, Ctrl-Z (SIGTSTP) and `fg` (SIGCONT) of the joiner, and
//! a joiner stopped for 1.5 s (SIGSTOP), which must leave the lead where the link has it.
//! Each ends in sync; the pause is in the recording, which verifies.

mod netplay_common;

use std::time::Duration;

use serde_json::Value;

use netplay_common::{
    args, assert_log_verifies, checksum, free_port, start_host, start_join, Peer,
};

fn signal(peer: &Peer, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &peer.pid().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} failed");
}

/// The process state letter from /proc (T: stopped).
fn state(peer: &Peer) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", peer.pid())).unwrap_or_default();
    stat.rsplit(')')
        .next()
        .and_then(|r| r.trim().chars().next())
        .unwrap_or('?')
}

/// A host and joiner "bob" with bots for `frames`, the host recording to `dir/host.flr`.
fn session(dir: &std::path::Path, frames: u32, bob: &[&str]) -> (Peer, Peer) {
    let port = free_port();
    let record = dir.join("host.flr").display().to_string();
    let f = frames.to_string();
    let host = start_host(
        dir,
        port,
        &args(&["--frames", &f, "--bot", "1", "--record", &record]),
    );
    let mut a = args(&["--frames", &f, "--bot", "2"]);
    a.extend(bob.iter().map(|s| s.to_string()));
    let joiner = start_join(dir, port, "bob", &a);
    (host, joiner)
}

/// Both ended well, on the same state; the host's recording verifies.
fn finish(dir: &std::path::Path, host: &mut Peer, bob: &mut Peer) -> (Value, Value) {
    bob.wait_ok(Duration::from_secs(50));
    host.wait_ok(Duration::from_secs(50));
    let (h, b) = (host.read_stats(), bob.read_stats());
    assert_eq!(checksum(&h), checksum(&b), "{}", host.log_text());
    assert_log_verifies(dir, &dir.join("host.flr"));
    (h, b)
}

fn pauses(s: &Value) -> Vec<Value> {
    s["feed"]["pauses"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_scripted_pause_stops_both_players_at_the_same_frame() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut host, mut bob) = session(d, 900, &["--pause-at", "300", "--pause-for", "3"]);
    let (h, b) = finish(d, &mut host, &mut bob);
    let (hp, bp) = (pauses(&h), pauses(&b));
    assert_eq!(hp.len(), 1, "{h:#}");
    assert_eq!(hp[0]["by"], 1);
    assert_eq!(hp[0]["at"], bp[0]["at"], "the same frame on both");
    let secs = hp[0]["secs"].as_f64().unwrap();
    assert!((2.8..4.0).contains(&secs), "paused {secs} s on the host");
    let log = host.log_text();
    assert!(log.contains("bob (player 2) paused at frame"), "{log}");
    assert!(log.contains("bob (player 2) resumed at frame"), "{log}");
    // A pause is no stall, and leaves the lead at what loopback needs.
    for (who, s) in [("host", &h), ("bob", &b)] {
        let stalls = s["stall_frames"].as_u64().unwrap();
        assert!(stalls < 30, "{who}: {stalls} stall frames\n{s:#}");
        let lead = s["feed"]["lead"].as_u64().unwrap();
        assert!(lead <= 4, "{who}: lead {lead}\n{s:#}");
    }
}

#[test]
fn ctrl_z_pauses_for_everyone_and_fg_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut host, mut bob) = session(d, 900, &[]);
    std::thread::sleep(Duration::from_secs(6));
    signal(&bob, "-TSTP");
    assert!(
        host.wait_for_log("bob (player 2) paused at frame", Duration::from_secs(5))
            .is_some(),
        "{}",
        host.log_text()
    );
    // Bob stops itself once the pause is in force, as Ctrl-Z's default would.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(state(&bob), 'T', "{}", bob.log_text());
    std::thread::sleep(Duration::from_secs(2));
    signal(&bob, "-CONT");
    let (h, b) = finish(d, &mut host, &mut bob);
    let hp = pauses(&h);
    assert_eq!(hp.len(), 1, "{h:#}");
    let secs = hp[0]["secs"].as_f64().unwrap();
    assert!(secs >= 3.5, "paused {secs} s");
    assert_eq!(h["feed"]["connections_lost"], 0);
    assert_eq!(b["feed"]["connections_lost"], 0, "{b:#}");
    for s in [&h, &b] {
        assert!(s["feed"]["lead"].as_u64().unwrap() <= 4, "{s:#}");
    }
}

#[test]
fn a_joiner_stopped_for_1_5_s_leaves_the_lead() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut host, mut bob) = session(d, 1200, &[]);
    std::thread::sleep(Duration::from_secs(7));
    signal(&bob, "-STOP");
    std::thread::sleep(Duration::from_millis(1500));
    signal(&bob, "-CONT");
    let (h, b) = finish(d, &mut host, &mut bob);
    for s in [&h, &b] {
        assert!(s["feed"]["lead"].as_u64().unwrap() <= 4, "{s:#}");
        assert_eq!(s["feed"]["connections_lost"].as_u64().unwrap_or(0), 0);
    }
    assert!(pauses(&h).is_empty());
}
