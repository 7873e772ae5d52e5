//! Ctrl-C (SIGINT) on the host, on a joiner and in the lobby, and a second Ctrl-C; who
//! left is said so that two players with one name are told apart.

use super::*;

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
