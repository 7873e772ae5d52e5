//! Real processes on 127.0.0.1 when things go wrong: garbage datagrams at the host's port,
//! a joiner killed with SIGKILL, the host killed with SIGKILL, and nobody listening.

mod netplay_common;

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

use netplay_common::{args, assert_sane_stats, checksum, free_port, start_host, start_join};

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

#[test]
fn garbage_datagrams_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let frames = "720";
    let mut host = start_host(dir.path(), port, &args(&["--frames", frames, "--bot", "1"]));
    let mut joiner = start_join(
        dir.path(),
        port,
        "join",
        &args(&["--frames", frames, "--bot", "2"]),
    );
    assert!(
        joiner
            .wait_for_log("in session", Duration::from_secs(10))
            .is_some(),
        "{}",
        joiner.log_text()
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
    let mut host = start_host(dir.path(), port, &args(&["--frames", "900", "--bot", "1"]));
    let mut joiner = start_join(dir.path(), port, "join", &args(&["--bot", "2"]));
    assert!(joiner
        .wait_for_log("in session", Duration::from_secs(10))
        .is_some());
    std::thread::sleep(Duration::from_secs(4));
    assert!(host.try_status().is_none(), "{}", host.log_text());
    let killed = Instant::now();
    joiner.kill();
    let out = host
        .wait_for_log("player 2 is out", Duration::from_secs(10))
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
}

#[test]
fn killed_host_ends_the_joiner_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut host = start_host(dir.path(), port, &args(&["--bot", "1"]));
    let mut joiner = start_join(
        dir.path(),
        port,
        "join",
        &args(&["--frames", "1800", "--bot", "2"]),
    );
    assert!(joiner
        .wait_for_log("in session", Duration::from_secs(10))
        .is_some());
    std::thread::sleep(Duration::from_secs(3));
    let killed = Instant::now();
    host.kill();
    let status = joiner.wait(Duration::from_secs(10));
    let after = killed.elapsed();
    let log = joiner.log_text();
    assert!(
        !status.success(),
        "the joiner exited 0 without its host\n{log}"
    );
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error:") && last.contains("host"),
        "the last line names the host: {last:?}\n{log}"
    );
    assert!(
        after <= Duration::from_secs(4),
        "the joiner took {after:?} to notice"
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
