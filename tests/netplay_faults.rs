//! Real processes on 127.0.0.1 when things go wrong: garbage datagrams at the host's port,
//! a joiner killed with SIGKILL, a joiner whose frame loop hangs, the host killed with SIGKILL, nobody listening, and Ctrl-C
//! (SIGINT) on the host, on a joiner and in the lobby, and a second Ctrl-C; who left is said
//! so that two players with one name are told apart; peers slow to start after the start
//! state (`--start-delay-ms`), and a joiner killed while it loads.

mod netplay_common;

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
fn ctrl_c_on_the_host_ends_the_session_cleanly_for_everyone() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let host_log = dir.path().join("host.flr");
    let record = host_log.display().to_string();
    let (mut host, mut joiner) = start_session(
        dir.path(),
        port,
        &["--bot", "1", "--record", &record],
        &["--frames", "3600", "--bot", "2"],
    );
    std::thread::sleep(Duration::from_secs(3));
    let pressed = Instant::now();
    host.interrupt();
    // The host stops at once (no lingering for joiners that are not finishing) and exits 0
    // with its numbers written.
    host.wait_ok(Duration::from_secs(5));
    let host_took = pressed.elapsed();
    let h = host.read_stats();
    assert_eq!(h["end"], "quit", "{h:#}");
    assert!(h["frames"].as_u64().unwrap() >= 120, "{h:#}");
    // The joiner hears a goodbye: it ends well before the 2 s silence timeout, with an
    // error that says the host quit.
    let status = joiner.wait(Duration::from_secs(10));
    let joiner_took = pressed.elapsed();
    let log = joiner.log_text();
    assert!(!status.success(), "{log}");
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error:") && last.contains("host quit"),
        "{last:?}\n{log}"
    );
    assert!(
        joiner_took < Duration::from_millis(1500),
        "the joiner took {joiner_took:?}: a timeout, not a goodbye\n{log}"
    );
    eprintln!("host exited {host_took:?} after Ctrl-C, the joiner {joiner_took:?}: {last}");
    // The recording is complete up to the last frame and replays.
    assert_log_verifies(dir.path(), &host_log);
}

/// A session (on a free port) whose joiner records to `dir/join.flr`, once it is in.
fn joiner_records(
    dir: &std::path::Path,
    host_args: &[&str],
    join_args: &[&str],
) -> (
    netplay_common::Peer,
    netplay_common::Peer,
    std::path::PathBuf,
) {
    let log = dir.join("join.flr");
    let record = log.display().to_string();
    let mut join_args = join_args.to_vec();
    join_args.extend(["--record", &record]);
    let (host, joiner) = start_session(dir, free_port(), host_args, &join_args);
    (host, joiner, log)
}

#[test]
fn ctrl_c_on_a_joiner_is_a_goodbye_not_a_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (mut host, mut joiner, join_log) = joiner_records(
        dir.path(),
        &["--frames", "900", "--bot", "1"],
        &["--bot", "2"],
    );
    std::thread::sleep(Duration::from_secs(3));
    let pressed = Instant::now();
    joiner.interrupt();
    joiner.wait_ok(Duration::from_secs(5));
    let j = joiner.read_stats();
    assert_eq!(j["end"], "quit", "{j:#}");
    let out = host
        .wait_for_log("(player 2) left (", Duration::from_secs(5))
        .unwrap_or_else(|| panic!("the host never heard player 2 leave\n{}", host.log_text()));
    let after = out.duration_since(pressed);
    assert!(
        after < Duration::from_millis(1500),
        "{after:?}: a timeout, not a goodbye\n{}",
        host.log_text()
    );
    assert!(
        !host.log_text().contains("timed out"),
        "{}",
        host.log_text()
    );
    eprintln!("the host heard the joiner leave {after:?} after its Ctrl-C");
    // The host plays on to its frame limit.
    host.wait_ok(Duration::from_secs(30));
    let h = host.read_stats();
    assert_eq!(h["frames"], 900, "{h:#}");
    assert_eq!(h["end"], "framelimit", "{h:#}");
    assert_log_verifies(dir.path(), &join_log);
}

/// Who left is named by name and place: a joiner called ana (like the host) leaves, and both
/// the host and the other joiner say "ana (player 2) left", not just "ana". The other joiner
/// has no login name in its environment: it is "player 3", the slot the host gave it.
#[test]
fn players_with_one_name_are_told_apart_when_one_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let host_args = args(&["--players", "3", "--frames", "900", "--bot", "1"]);
    let mut host = start_host_as(d, port, Some("ana"), &host_args);
    let mut ana = start_join_as(d, port, "ana", Some("ana"), &args(&["--bot", "2"]));
    assert!(
        host.wait_for_log("ana (127.0.0.1:", Duration::from_secs(10))
            .is_some(),
        "{}",
        host.log_text()
    );
    let other_args = args(&["--frames", "900", "--bot", "3"]);
    let mut other = start_join_as(d, port, "nameless", None, &other_args);
    assert!(
        other
            .wait_for_log("in session", Duration::from_secs(10))
            .is_some(),
        "{}",
        other.log_text()
    );
    let log = host.log_text();
    assert!(
        log.contains("netplay: ana (127.0.0.1:") && log.contains("joined as player 2"),
        "{log}"
    );
    assert!(log.contains("netplay: player 3 (127.0.0.1:"), "{log}");
    // Named after its place, it is not said twice ("player 3 (...) joined as player 3").
    assert!(!log.contains("joined as player 3"), "{log}");
    std::thread::sleep(Duration::from_secs(2));
    ana.interrupt();
    ana.wait_ok(Duration::from_secs(5));
    let said = |peer: &mut netplay_common::Peer, line: &str| {
        assert!(
            peer.wait_for_log(line, Duration::from_secs(5)).is_some(),
            "{} never said {line:?}\n{}",
            peer.label,
            peer.log_text()
        );
    };
    said(&mut host, "netplay: ana (player 2) left (quit)");
    said(
        &mut other,
        "netplay: ana (player 2) left; neutral input from frame",
    );
    other.wait_ok(Duration::from_secs(30));
    host.wait_ok(Duration::from_secs(30));
    assert_eq!(checksum(&host.read_stats()), checksum(&other.read_stats()));
}

#[test]
fn a_second_ctrl_c_exits_at_once() {
    // The joiner's conditioner holds its datagrams for 700 ms, so after the first Ctrl-C its
    // clean exit waits out the goodbye drain (0.5 s): the second Ctrl-C lands in that wait.
    let dir = tempfile::tempdir().unwrap();
    let (mut host, mut joiner, join_log) = joiner_records(
        dir.path(),
        &["--frames", "3600", "--bot", "1"],
        &["--bot", "2", "--netsim", "delay=700ms"],
    );
    std::thread::sleep(Duration::from_secs(2));
    joiner.interrupt();
    assert!(
        joiner
            .wait_for_log(
                "a second Ctrl-C or SIGTERM exits at once",
                Duration::from_secs(5)
            )
            .is_some(),
        "{}",
        joiner.log_text()
    );
    let pressed = Instant::now();
    joiner.interrupt();
    let status = joiner.wait(Duration::from_secs(5));
    let took = pressed.elapsed();
    let log = joiner.log_text();
    // 130 is what a shell reports for a SIGINT death; the clean exit would have been 0.
    assert_eq!(status.code(), Some(130), "{log}");
    assert!(log.contains("interrupted again: exiting now"), "{log}");
    eprintln!("the second Ctrl-C ended the joiner in {took:?}");
    // The recording was finished before the goodbye: it still replays.
    let out = netplay_common::framelock(dir.path())
        .args(["replay", "--headless", "--fast"])
        .arg(&join_log)
        .output()
        .expect("run framelock replay");
    assert!(out.status.success(), "{}", netplay_common::text(&out));
    host.kill();
}

/// Ctrl-C to a peer that has not started playing: it exits non-zero at once, saying so.
fn interrupt_before_the_start(peer: &mut netplay_common::Peer) {
    let pressed = Instant::now();
    peer.interrupt();
    let status = peer.wait(Duration::from_secs(5));
    let log = peer.log_text();
    assert!(!status.success(), "{log}");
    assert_eq!(
        log.lines().last().unwrap_or_default(),
        "error: interrupted before the game started",
        "{log}"
    );
    let took = pressed.elapsed();
    assert!(took < Duration::from_secs(2), "{}: {took:?}", peer.label);
}

#[test]
fn ctrl_c_before_the_game_starts() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // A host waiting for 3 players, with one joiner in, which has the start state and waits
    // for the first frame: Ctrl-C there is a goodbye the host's lobby hears.
    let mut host = start_host(dir.path(), port, &args(&["--players", "3"]));
    let mut joiner = start_join(dir.path(), port, "join", &args(&[]));
    assert!(
        host.wait_for_log("2/3 players ready", Duration::from_secs(10))
            .is_some(),
        "{}",
        host.log_text()
    );
    // It says it stopped before the game started (and exits non-zero) as it does in the
    // handshake, and still writes its stats.
    interrupt_before_the_start(&mut joiner);
    let j = joiner.read_stats();
    assert_eq!(
        (j["frames"].as_u64(), j["end"].as_str()),
        (Some(0), Some("quit")),
        "{j:#}"
    );
    assert!(
        host.wait_for_log("player 2 left (quit)", Duration::from_secs(3))
            .is_some(),
        "{}",
        host.log_text()
    );

    // A joiner still in its handshake (nobody answers at this port) stops at once.
    let mut lost = start_join(dir.path(), free_port(), "lost", &args(&[]));
    assert!(lost
        .wait_for_log("joining 127.0.0.1", Duration::from_secs(10))
        .is_some());
    interrupt_before_the_start(&mut lost);
    // So does the host in its lobby.
    interrupt_before_the_start(&mut host);
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

/// A 4-player lobby fills slowly: the first joiner waits past the 5 s a silent host gets
/// (the lobby tells it every half second that it is there), a joiner that dies while it
/// waits is dropped within the lockstep timeout and its slot goes to the next one, and the
/// game then runs in sync with the four live players.
#[test]
fn a_slow_lobby_keeps_its_waiting_joiners_and_drops_dead_ones() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let frames = ["--frames", "300"];
    let mut host_args = args(&["--players", "4", "--bot", "1"]);
    host_args.extend(args(&frames));
    let mut host = start_host(d, port, &host_args);
    let mut first = start_join(d, port, "first", &args(&["--frames", "300", "--bot", "2"]));
    assert!(first
        .wait_for_log(
            "waiting for the game to start: 2 of 4",
            Duration::from_secs(10)
        )
        .is_some());
    let mut dead = start_join(d, port, "dead", &args(&["--frames", "300", "--bot", "3"]));
    assert!(host
        .wait_for_log("player 3 has the start state", Duration::from_secs(10))
        .is_some());
    dead.kill();
    let killed = Instant::now();
    let dropped = host
        .wait_for_log(
            "player 3 was dropped (dropped from the lobby: nothing heard for 10 s)",
            Duration::from_secs(14),
        )
        .unwrap_or_else(|| panic!("the dead joiner stayed in\n{}", host.log_text()));
    // The lobby hears from its waiting joiners once a second, and gives one 10 s.
    let after = dropped.duration_since(killed);
    assert!(after < Duration::from_secs(11), "{after:?}");
    // Past the 5 s a joiner gives a silent host.
    std::thread::sleep(Duration::from_secs(4));
    assert!(first.try_status().is_none(), "{}", first.log_text());
    let mut late = [
        start_join(d, port, "third", &args(&["--frames", "300", "--bot", "4"])),
        start_join(d, port, "fourth", &args(&["--frames", "300", "--bot", "5"])),
    ];
    for p in late.iter_mut().chain([&mut first]) {
        p.wait_ok(Duration::from_secs(30));
    }
    host.wait_ok(Duration::from_secs(30));
    let want = checksum(&host.read_stats());
    let mut slots = Vec::new();
    for p in late.iter().chain([&first]) {
        let s = p.read_stats();
        assert_eq!(checksum(&s), want, "{}", p.log_text());
        slots.push(s["slot"].as_u64().unwrap());
    }
    slots.sort();
    assert_eq!(
        slots,
        [1, 2, 3],
        "the dead joiner's slot was not given again"
    );
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

/// How long a peer of these tests takes from the start state to its first frame
/// (`--start-delay-ms`): four times the 2 s a silent player gets.
const SLOW_START_MS: &str = "8000";

/// A host of `frames` frames (bot 1) on a free port, and a joiner "join" (bot 2) with
/// `joiner` more: a slow start's `--start-delay-ms`, its own `--frames`.
fn host_and_slow_joiner(
    dir: &std::path::Path,
    frames: &str,
    joiner: &[&str],
) -> (netplay_common::Peer, netplay_common::Peer) {
    let port = free_port();
    let host = start_host(dir, port, &args(&["--frames", frames, "--bot", "1"]));
    let joiner = start_join(
        dir,
        port,
        "join",
        &args(&[&["--bot", "2"], joiner].concat()),
    );
    (host, joiner)
}

/// When the host had player 2's last ack of the start state (player 2 starts loading then).
fn start_state_sent(host: &mut netplay_common::Peer) -> Instant {
    host.wait_for_log("player 2 has the start state", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("player 2 never got the start state\n{}", host.log_text()))
}

/// A joiner that takes 8 s from the start state to its first frame (a large romset, a slow
/// window: `--start-delay-ms`) is waited for: it tells the host that it is still loading,
/// the host says so, and both then play the whole session in sync.
#[test]
fn a_joiner_slow_to_start_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let (mut host, mut joiner) = host_and_slow_joiner(
        dir.path(),
        "300",
        &["--frames", "300", "--start-delay-ms", SLOW_START_MS],
    );
    let ready = start_state_sent(&mut host);
    joiner.wait(Duration::from_secs(40));
    host.wait(Duration::from_secs(40));
    let (hlog, jlog) = (host.log_text(), joiner.log_text());
    // A joiner that reaches its frame limit first leaves (`player 2 left (finished)`).
    if let Some(at) = hlog.find("(player 2) is out (timed out") {
        panic!(
            "the host dropped the slow joiner ({:.1} s after it had the start state): {}\n{hlog}\n{jlog}",
            ready.elapsed().as_secs_f64(),
            hlog[at..].lines().next().unwrap_or_default()
        );
    }
    assert!(
        hlog.contains("join (player 2) is still loading"),
        "the host did not say what it waits for\n{hlog}"
    );
    assert!(
        hlog.contains("join (player 2) is running"),
        "the host did not say when the wait ended\n{hlog}"
    );
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_sane_stats("host", &h, 300);
    assert_sane_stats("join", &j, 300);
    assert_eq!(checksum(&h), checksum(&j), "{hlog}\n{jlog}");
    assert_eq!(h["players_left"].as_array().unwrap().len(), 0, "{h:#}");
}

/// A joiner killed while it loads (after the start state, before its first frame) is still
/// dropped within the 2 s a silent player gets, and the host plays on.
#[test]
fn a_joiner_killed_while_loading_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (mut host, mut joiner) =
        host_and_slow_joiner(dir.path(), "300", &["--start-delay-ms", "20000"]);
    start_state_sent(&mut host);
    // Past the 2 s a silent player gets, so that it is the keepalive that kept it in.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !host.log_text().contains("player 2 is out"),
        "{}",
        host.log_text()
    );
    let killed = Instant::now();
    joiner.kill();
    let out = host
        .wait_for_log(
            "(player 2) is out (timed out while loading)",
            Duration::from_secs(10),
        )
        .unwrap_or_else(|| panic!("the host never dropped player 2\n{}", host.log_text()));
    let after = out.duration_since(killed);
    assert!(
        after <= Duration::from_millis(2700),
        "the host took {after:?} to drop the killed player\n{}",
        host.log_text()
    );
    eprintln!("host dropped the joiner killed while loading after {after:?}");
    host.wait_ok(Duration::from_secs(30));
    let h = host.read_stats();
    assert_eq!(h["frames"], 300, "{h:#}");
    assert_eq!(h["players_left"].as_array().unwrap().len(), 1, "{h:#}");
}

/// In a 3-player lobby the first joiner is slow to start (8 s): the lobby keeps it while it
/// loads, the third player comes 3 s later, and the game waits for the slow one to run;
/// the joiner that was quick says what it waits for. All three play in sync.
#[test]
fn a_lobby_keeps_a_joiner_that_is_slow_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let mut host = start_host(
        d,
        port,
        &args(&["--players", "3", "--frames", "300", "--bot", "1"]),
    );
    let mut slow = start_join(
        d,
        port,
        "slow",
        &args(&[
            "--frames",
            "300",
            "--bot",
            "2",
            "--start-delay-ms",
            SLOW_START_MS,
        ]),
    );
    start_state_sent(&mut host);
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !host.log_text().contains("player 2 went silent"),
        "the lobby dropped the joiner that was loading\n{}",
        host.log_text()
    );
    let mut quick = start_join(d, port, "quick", &args(&["--frames", "300", "--bot", "3"]));
    quick.wait_ok(Duration::from_secs(40));
    slow.wait_ok(Duration::from_secs(40));
    host.wait_ok(Duration::from_secs(40));
    let hlog = host.log_text();
    // Each leaves at its frame limit (`left (finished)`), none earlier.
    assert!(
        !hlog.contains("timed out") && !hlog.contains("went silent"),
        "{hlog}"
    );
    assert!(hlog.contains("slow (player 2) is still loading"), "{hlog}");
    assert!(hlog.contains("slow (player 2) is running"), "{hlog}");
    let qlog = quick.log_text();
    assert!(
        qlog.contains("waiting for every player to start"),
        "the quick joiner did not say what it waits for\n{qlog}"
    );
    let want = checksum(&host.read_stats());
    for p in [&slow, &quick] {
        let s = p.read_stats();
        assert_sane_stats(&p.label, &s, 300);
        assert_eq!(checksum(&s), want, "{}", p.log_text());
    }
}

/// A host that takes 8 s from its lobby to its first frame (a slow window) keeps its
/// joiner: its network thread answers while it opens, so the joiner hears it and waits,
/// saying what for, instead of giving the host up after 5 s.
#[test]
fn a_host_slow_to_start_keeps_its_joiner() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut host = start_host(
        dir.path(),
        port,
        &args(&[
            "--frames",
            "300",
            "--bot",
            "1",
            "--start-delay-ms",
            SLOW_START_MS,
        ]),
    );
    let mut joiner = start_join(
        dir.path(),
        port,
        "join",
        &args(&["--frames", "300", "--bot", "2"]),
    );
    joiner.wait(Duration::from_secs(40));
    host.wait(Duration::from_secs(40));
    let (hlog, jlog) = (host.log_text(), joiner.log_text());
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_eq!(
        j["frames"], 300,
        "the joiner gave up on the host\n{jlog}\n{hlog}"
    );
    assert!(
        jlog.contains("waiting for every player to start"),
        "the joiner did not say what it waits for\n{jlog}"
    );
    assert_sane_stats("host", &h, 300);
    assert_sane_stats("join", &j, 300);
    assert_eq!(checksum(&h), checksum(&j), "{hlog}\n{jlog}");
}

/// A joiner still loading 30 s after the start state (`--start-delay-ms 40000`: a start that
/// hangs) is not waited for longer: it stops saying it loads, the host drops it about 2 s
/// later saying why and plays on, and the joiner, once it gets going, ends with the reason.
#[test]
fn a_joiner_still_loading_after_the_limit_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (mut host, mut joiner) =
        host_and_slow_joiner(dir.path(), "120", &["--start-delay-ms", "40000"]);
    let ready = start_state_sent(&mut host);
    let why = "still loading 30 s after it had the start state";
    let out = host
        .wait_for_log(
            &format!("(player 2) is out ({why})"),
            Duration::from_secs(40),
        )
        .unwrap_or_else(|| panic!("the host did not drop player 2\n{}", host.log_text()));
    let after = out.duration_since(ready);
    assert!(
        after >= Duration::from_secs(30) && after <= Duration::from_millis(32_700),
        "dropped {after:?} after the start state\n{}",
        host.log_text()
    );
    eprintln!("the host dropped the joiner {after:?} after it had the start state");
    host.wait_ok(Duration::from_secs(20));
    assert_eq!(host.read_stats()["frames"], 120);
    let status = joiner.wait(Duration::from_secs(25));
    let log = joiner.log_text();
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("still not running 30 s after the start state; going silent"),
        "{log}"
    );
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error:") && last.contains(&format!("the host left: {why}")),
        "{last:?}\n{log}"
    );
}
