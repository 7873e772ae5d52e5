//! Real processes on 127.0.0.1 when things go wrong: garbage datagrams at the host's port,
//! a joiner killed with SIGKILL, a joiner whose frame loop hangs, the host killed with SIGKILL, nobody listening, and Ctrl-C
//! (SIGINT) on the host, on a joiner and in the lobby, and a second Ctrl-C; who left is said
//! so that two players with one name are told apart; peers slow to start after the start
//! state (`--start-delay-ms`), and a joiner killed while it loads. Ctrl-C (`interrupt`) and
//! slow starts (`slow_start`) have files of their own under netplay_faults/.

#[path = "netplay_faults/interrupt.rs"]
mod interrupt;
mod netplay_common;
#[path = "netplay_faults/slow_start.rs"]
mod slow_start;

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

use netplay_common::{
    args, assert_log_verifies, assert_sane_stats, checksum, free_port, start_host, start_host_as,
    start_join, start_join_as,
};

/// Every kind of junk a port on the internet sees, from a socket that never joined: random
/// bytes of random length, truncated and junk-filled framelock headers of every kind, and
/// well-formed headers with wrong (and the right) session ids.
fn garbage(rng: &mut SmallRng, session: u32) -> Vec<u8> {
    let kinds = [
        0x01u8, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x10, 0x11, 0x1f,
    ];
    let kind = kinds[rng.gen_range(0..kinds.len())];
    let mut d = Vec::new();
    match rng.gen_range(0..5) {
        0 => {
            d.resize(rng.gen_range(0..1500), 0);
            rng.fill_bytes(&mut d);
        }
        1 => {
            // A truncated header.
            d.extend_from_slice(b"FL\x01\x10");
            d.extend_from_slice(&session.to_le_bytes());
            d.truncate(rng.gen_range(0..8));
        }
        2 => {
            // A header of any kind with the wrong session id, then junk.
            d.extend_from_slice(&[b'F', b'L', 1, kind]);
            d.extend_from_slice(&rng.gen::<u32>().to_le_bytes());
            let mut junk = vec![0; rng.gen_range(0..200)];
            rng.fill_bytes(&mut junk);
            d.extend_from_slice(&junk);
        }
        3 => {
            // The right session id, but not from a player's address.
            d.extend_from_slice(&[b'F', b'L', 1, kind]);
            d.extend_from_slice(&session.to_le_bytes());
            let mut junk = vec![0; rng.gen_range(0..64)];
            rng.fill_bytes(&mut junk);
            d.extend_from_slice(&junk);
        }
        _ => {
            d.extend_from_slice(b"FL\x01\x10");
            let mut junk = vec![0; rng.gen_range(0..40)];
            rng.fill_bytes(&mut junk);
            d.extend_from_slice(&junk);
        }
    }
    d
}

/// The session id the joiner logged ("in session 1a2b3c4d as player 2 of 2").
fn session_id(log: &str) -> u32 {
    let at = log.find("in session ").expect("joiner logged its session") + 11;
    u32::from_str_radix(&log[at..at + 8], 16).expect("hex session id")
}

/// `host` and `join` on `port` with these extra arguments, once the joiner is in the session.
fn start_session(
    dir: &std::path::Path,
    port: u16,
    host_args: &[&str],
    join_args: &[&str],
) -> (netplay_common::Peer, netplay_common::Peer) {
    let host = start_host(dir, port, &args(host_args));
    let mut joiner = start_join(dir, port, "join", &args(join_args));
    assert!(
        joiner
            .wait_for_log("in session", Duration::from_secs(10))
            .is_some(),
        "{}",
        joiner.log_text()
    );
    (host, joiner)
}

#[test]
fn garbage_datagrams_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let frames = "720";
    let (mut host, mut joiner) = start_session(
        dir.path(),
        port,
        &["--frames", frames, "--bot", "1"],
        &["--frames", frames, "--bot", "2"],
    );
    let session = session_id(&joiner.log_text());

    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            let mut rng = SmallRng::seed_from_u64(0x5eed);
            let mut sent = 0u64;
            // About 400 datagrams a second, for most of the session.
            while !stop.load(Ordering::Relaxed) && sent < 3000 {
                let d = garbage(&mut rng, session);
                if sock.send_to(&d, ("127.0.0.1", port)).is_ok() {
                    sent += 1;
                }
                std::thread::sleep(Duration::from_micros(2500));
            }
            sent
        })
    };
    joiner.wait_ok(Duration::from_secs(40));
    stop.store(true, Ordering::Relaxed);
    let sent = flood.join().unwrap();
    host.wait_ok(Duration::from_secs(20));

    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_sane_stats("host", &h, 720);
    assert_sane_stats("join", &j, 720);
    assert_eq!(checksum(&h), checksum(&j), "{}", host.log_text());
    let dropped = h["packets_dropped_invalid"].as_u64().unwrap();
    assert!(sent > 1000, "only {sent} garbage datagrams went out");
    // Every one of them is dropped and counted (a few of the players' own late datagrams
    // after their goodbye may be counted too).
    assert!(
        dropped >= sent * 95 / 100,
        "host counted {dropped} invalid datagrams of {sent} garbage ones\n{h:#}"
    );
    eprintln!("host dropped {dropped} invalid datagrams; {sent} garbage ones were sent");
    assert_eq!(j["packets_dropped_invalid"], 0, "{j:#}");
    assert_eq!(j["players_left"].as_array().unwrap().len(), 0, "{j:#}");
}

#[test]
fn killed_joiner_is_dropped_and_the_host_plays_on() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (mut host, mut joiner) = start_session(
        dir.path(),
        port,
        &["--frames", "900", "--bot", "1"],
        &["--bot", "2"],
    );
    std::thread::sleep(Duration::from_secs(4));
    assert!(host.try_status().is_none(), "{}", host.log_text());
    let killed = Instant::now();
    joiner.kill();
    let out = host
        .wait_for_log("(player 2) is out", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("the host never dropped player 2\n{}", host.log_text()));
    let after = out.duration_since(killed);
    assert!(
        after <= Duration::from_millis(2700),
        "the host took {after:?} to drop the killed player"
    );
    eprintln!("host dropped the killed joiner after {after:?}");
    host.wait_ok(Duration::from_secs(30));
    let h = host.read_stats();
    assert_eq!(h["frames"], 900, "{h:#}");
    assert_eq!(h["end"], "framelimit", "{h:#}");
    let left = h["players_left"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{h:#}");
    assert_eq!(left[0]["slot"], 1, "{h:#}");
    // The host's recording says so too: port 2 left at the frame the session announced.
    let log = h["recording"]["path"].as_str().expect("the host records");
    let mut replay = framelock::replay::Replay::open(log).unwrap();
    let mut events = Vec::new();
    while let Some(item) = replay.next_item().unwrap() {
        if let framelock::replay::Item::Event { frame, event } = item {
            events.push((u64::from(frame.0), event));
        }
    }
    let from = left[0]["from_frame"].as_u64().unwrap();
    assert_eq!(
        events,
        [(from, framelock::replay::Event::Left { slot: 1 })],
        "{log}"
    );
    assert_eq!(h["recording"]["complete"], true, "{h:#}");
}

/// A joiner whose frame loop hangs (`--busy-frame-ms 5000`: 5 s after its first frame)
/// while its network thread lives on is dropped like a dead process: the network thread
/// falls silent with it, instead of keeping a player alive that sends no inputs.
#[test]
fn a_joiner_whose_frame_loop_hangs_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (mut host, _joiner) = start_session(
        dir.path(),
        port,
        &["--frames", "300", "--bot", "1"],
        &["--bot", "2", "--busy-frame-ms", "5000"],
    );
    host.wait_for_log("(player 2) is out (timed out)", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("the host never dropped player 2\n{}", host.log_text()));
    host.wait_ok(Duration::from_secs(30));
    let h = host.read_stats();
    assert_eq!(h["frames"], 300, "{h:#}");
    let left = h["players_left"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{h:#}");
}

#[test]
fn killed_host_ends_the_joiner_after_its_reconnect_time_with_the_way_back() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (mut host, mut joiner) = start_session(
        dir.path(),
        port,
        &["--bot", "1"],
        &["--frames", "1800", "--bot", "2", "--reconnect", "3"],
    );
    std::thread::sleep(Duration::from_secs(3));
    let killed = Instant::now();
    host.kill();
    let status = joiner.wait(Duration::from_secs(12));
    let after = killed.elapsed();
    let log = joiner.log_text();
    assert!(
        !status.success(),
        "the joiner exited 0 without its host\n{log}"
    );
    let last = log.lines().last().unwrap_or_default();
    // It noticed after 2 s, tried to come back for 3 s, and says how to come back later.
    assert!(
        log.contains("connection lost (the host stopped answering (nothing for 2 s))"),
        "{log}"
    );
    assert!(
        last.starts_with("error:")
            && last.contains("could not reconnect within 3 s")
            && last.contains(&format!("framelock join 127.0.0.1:{port}")),
        "the last line says what happened and how to come back: {last:?}\n{log}"
    );
    assert!(
        after <= Duration::from_secs(7),
        "the joiner took {after:?} to give up"
    );
    eprintln!("joiner gave up {after:?} after the host was killed: {last}");
    let j = joiner.read_stats();
    assert!(j["frames"].as_u64().unwrap() < 1800, "{j:#}");
}

#[test]
fn join_without_a_host_says_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let t0 = Instant::now();
    let mut joiner = start_join(dir.path(), port, "join", &args(&["--frames", "60"]));
    let status = joiner.wait(Duration::from_secs(15));
    let took = t0.elapsed();
    let log = joiner.log_text();
    assert!(!status.success(), "{log}");
    assert!(
        log.contains(&format!("no answer from 127.0.0.1:{port}")),
        "{log}"
    );
    assert!(took <= Duration::from_secs(6), "gave up after {took:?}");
}

/// A host that reaches its frame limit first leaves once its joiner holds every frame it
/// published: a joiner that wanted more plays those, then ends saying the host finished,
/// instead of standing still for the host's 3 s of grace. A joiner with the same limit
/// still ends cleanly however the goodbye and its last frames cross.
#[test]
fn a_host_that_finishes_first_lets_its_joiners_go_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (mut host, mut joiner) = start_session(
        dir.path(),
        free_port(),
        &["--frames", "120", "--bot", "1"],
        &["--frames", "600", "--bot", "2"],
    );
    host.wait_ok(Duration::from_secs(20));
    let status = joiner.wait(Duration::from_secs(20));
    let log = joiner.log_text();
    assert!(!status.success(), "{log}");
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.contains("the host left: host finished"),
        "{last}\n{log}"
    );
    let j = joiner.read_stats();
    // It played at least the host's frames, and did not stand at the last one for seconds.
    assert!(j["frames"].as_u64().unwrap() >= 120, "{j:#}");
    assert!(j["wall_s"].as_f64().unwrap() < 3.5, "{j:#}");

    let (mut host, mut joiner) = start_session(
        dir.path(),
        free_port(),
        &["--frames", "300", "--bot", "1"],
        &["--frames", "300", "--bot", "2"],
    );
    host.wait_ok(Duration::from_secs(20));
    joiner.wait_ok(Duration::from_secs(20));
    assert_eq!(checksum(&host.read_stats()), checksum(&joiner.read_stats()));
}
