//! Sessions at the speed of people, with real processes and real gaps: a room that waits
//! 40 s for its friend, a joiner whose link drops for 8 s and whose address changes (through
//! an impairment relay in front of it), a joiner stopped for 20 s (SIGSTOP), and a room whose
//! creator is killed while the others play on. Each ends in sync.

mod netplay_common;
mod relay;

use std::net::SocketAddr;
use std::time::Duration;

use relay::Relay;

use netplay_common::{
    args, assert_log_verifies, checksum, free_port, join_room, open_room, start_host, start_join,
    start_server, Peer,
};

fn signal(peer: &Peer, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &peer.pid().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} failed");
}

#[test]
fn a_room_waits_40_s_for_its_friend() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut server, addr) = start_server(d, &[]);
    let frames = ["--frames", "600"];
    let mut host = open_room(
        d,
        &addr,
        "patient",
        &[&frames[..], &["--bot", "1"]].concat(),
    );
    // A friend takes 40 s to type the command.
    std::thread::sleep(Duration::from_secs(40));
    assert!(host.try_status().is_none(), "{}", host.log_text());
    let mut bob = join_room(
        d,
        "bob",
        &addr,
        "patient",
        &[&frames[..], &["--bot", "2"]].concat(),
    );
    bob.wait_ok(Duration::from_secs(40));
    host.wait_ok(Duration::from_secs(40));
    assert_eq!(
        checksum(&host.read_stats()),
        checksum(&bob.read_stats()),
        "{}",
        bob.log_text()
    );
    let slog = server.log_text();
    assert!(
        !slog.contains("dropped") && !slog.contains("silent"),
        "{slog}"
    );
    let hlog = host.log_text();
    assert!(!hlog.contains("connection lost"), "{hlog}");
    server.interrupt();
}

#[test]
fn a_joiner_survives_an_8_s_outage_and_an_address_change() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let frames = ["--frames", "2700"];
    let host_log = d.join("host.flr");
    let h = [
        &frames[..],
        &["--bot", "1", "--record", host_log.to_str().unwrap()],
    ]
    .concat();
    let mut host = start_host(d, port, &args(&h));
    let relay = Relay::new(SocketAddr::from(([127, 0, 0, 1], port)));
    let ana_log = d.join("ana.flr");
    let j = [
        &frames[..],
        &["--bot", "2", "--record", ana_log.to_str().unwrap()],
    ]
    .concat();
    let mut ana = start_join(d, relay.port, "ana", &args(&j));
    assert!(ana
        .wait_for_log("in session", Duration::from_secs(20))
        .is_some());
    std::thread::sleep(Duration::from_secs(5));
    // Wi-Fi gone for 8 s.
    relay.drop_for(Duration::from_secs(8));
    let lost = ana.wait_for_log("connection lost", Duration::from_secs(5));
    assert!(lost.is_some(), "{}", ana.log_text());
    let back = ana.wait_for_log("back in the game", Duration::from_secs(20));
    assert!(back.is_some(), "{}", ana.log_text());
    assert!(
        host.wait_for_log("ana (player 2) is back from frame", Duration::from_secs(10))
            .is_some(),
        "{}",
        host.log_text()
    );
    // Then a new address (a router's new mapping, another network).
    std::thread::sleep(Duration::from_secs(3));
    relay.change_address();
    assert!(
        host.wait_for_log("ana (player 2) moved from", Duration::from_secs(5))
            .is_some(),
        "{}",
        host.log_text()
    );
    ana.wait_ok(Duration::from_secs(60));
    host.wait_ok(Duration::from_secs(60));
    let (hs, js) = (host.read_stats(), ana.read_stats());
    assert_eq!(checksum(&hs), checksum(&js), "{}", ana.log_text());
    assert_eq!(js["connections_lost"], 1, "{js:#}");
    assert_eq!(js["reconnects"], 1, "{js:#}");
    // Moving cost no reconnect: one loss only, the outage's.
    assert_eq!(ana.log_text().matches("connection lost").count(), 1);
    assert_log_verifies(d, &host_log);
    assert_log_verifies(d, &ana_log);
}

#[test]
fn a_joiner_stopped_for_20_s_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let frames = ["--frames", "2700"];
    let mut host = start_host(d, port, &args(&[&frames[..], &["--bot", "1"]].concat()));
    let mut ana = start_join(
        d,
        port,
        "ana",
        &args(&[&frames[..], &["--bot", "2"]].concat()),
    );
    assert!(ana
        .wait_for_log("in session", Duration::from_secs(20))
        .is_some());
    std::thread::sleep(Duration::from_secs(5));
    // A laptop lid closed for 20 s.
    signal(&ana, "-STOP");
    std::thread::sleep(Duration::from_secs(20));
    signal(&ana, "-CONT");
    let back = ana.wait_for_log("back in the game", Duration::from_secs(20));
    assert!(back.is_some(), "{}", ana.log_text());
    ana.wait_ok(Duration::from_secs(60));
    host.wait_ok(Duration::from_secs(60));
    assert_eq!(
        checksum(&host.read_stats()),
        checksum(&ana.read_stats()),
        "{}",
        ana.log_text()
    );
    assert!(host
        .log_text()
        .contains("ana (player 2) is back from frame"));
}

#[test]
fn a_room_plays_on_after_its_creator_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut server, addr) = start_server(d, &[]);
    let mut host = open_room(
        d,
        &addr,
        "lasting",
        &["--frames", "3600", "--bot", "1", "--players", "3"],
    );
    let frames = ["--frames", "1500"];
    let mut bob = join_room(
        d,
        "bob",
        &addr,
        "lasting",
        &[&frames[..], &["--bot", "2"]].concat(),
    );
    let mut cy = join_room(
        d,
        "cy",
        &addr,
        "lasting",
        &[&frames[..], &["--bot", "3"]].concat(),
    );
    assert!(cy
        .wait_for_log("in session", Duration::from_secs(20))
        .is_some());
    std::thread::sleep(Duration::from_secs(8));
    host.kill();
    bob.wait_ok(Duration::from_secs(60));
    cy.wait_ok(Duration::from_secs(60));
    let (b, c) = (bob.read_stats(), cy.read_stats());
    assert_eq!(checksum(&b), checksum(&c), "{}", cy.log_text());
    assert_eq!(b["frames"], 1500);
    let slog = server.log_text();
    assert!(slog.contains("is out (timed out)"), "{slog}");
    server.interrupt();
}
