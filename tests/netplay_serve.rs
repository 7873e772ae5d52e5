//! `framelock serve` with real processes on 127.0.0.1: rooms opened with `host --server` and
//! joined with `join --room` play in sync, record logs that verify, refuse what a direct host
//! refuses (and a wrong room), drop a killed player and close when the server stops.

mod netplay_common;

use std::path::Path;
use std::time::Duration;

use netplay_common::{
    args, assert_log_verifies, checksum, genesis, join_room, open_room, start_server, Peer,
};
use serde_json::Value;

/// `framelock rooms SERVER --json`.
fn rooms(dir: &Path, server: &str) -> Vec<Value> {
    let out = netplay_common::framelock(dir)
        .args(["rooms", server, "--json"])
        .output()
        .expect("run framelock rooms");
    assert!(out.status.success(), "{}", netplay_common::text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("rooms --json is JSON");
    v.as_array().expect("an array").clone()
}

#[test]
fn a_room_on_a_server_plays_in_sync_and_every_log_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut server, addr) = start_server(d, &[]);
    let host_log = d.join("host.flr").display().to_string();
    let join_log = d.join("join.flr").display().to_string();
    let frames = ["--frames", "1200"];
    let mut host = open_room(
        d,
        &addr,
        "friday",
        &[&frames[..], &["--bot", "1", "--record", &host_log]].concat(),
    );
    let listed = rooms(d, &addr);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["room"], "friday");
    assert_eq!(
        (listed[0]["players"].as_u64(), listed[0]["seats"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(listed[0]["playing"], false);
    let mut joiner = join_room(
        d,
        "join",
        &addr,
        "friday",
        &[&frames[..], &["--bot", "2", "--record", &join_log]].concat(),
    );
    joiner.wait_ok(Duration::from_secs(50));
    host.wait_ok(Duration::from_secs(50));
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_eq!(h["frames"].as_u64(), Some(1200));
    assert_eq!(checksum(&h), checksum(&j), "host and joiner differ");
    assert_eq!(h["desyncs_detected"].as_u64(), Some(0));
    assert_eq!(
        h["slot"].as_u64(),
        Some(0),
        "the room's creator is player 1"
    );
    assert_eq!(j["slot"].as_u64(), Some(1));
    assert_eq!(
        (h["room"].as_str(), j["room"].as_str()),
        (Some("friday"), Some("friday"))
    );
    assert_log_verifies(d, Path::new(&host_log));
    assert_log_verifies(d, Path::new(&join_log));
    let log = server.log_text();
    for said in [
        "room friday: opened by 127.0.0.1:",
        "room friday: the game starts with 2 players",
        "room friday: closed",
    ] {
        assert!(
            server.wait_for_log(said, Duration::from_secs(5)).is_some(),
            "{said}\n{log}"
        );
    }
    server.interrupt();
    server.wait_ok(Duration::from_secs(5));
    assert!(rooms_after_stop(d, &addr));
}

/// A stopped server answers nothing: `rooms` says so.
fn rooms_after_stop(dir: &Path, server: &str) -> bool {
    let out = netplay_common::framelock(dir)
        .args(["rooms", server])
        .output()
        .expect("run framelock rooms");
    let err = String::from_utf8_lossy(&out.stderr);
    !out.status.success() && err.contains(&format!("no answer from {server}"))
}

#[test]
fn genesis_plus_gx_through_a_server_on_a_lossy_link() {
    let g = genesis();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_server, addr) = start_server(d, &["--netsim", "delay=20ms,jitter=5ms,loss=5%"]);
    let rom = g.rom.display().to_string();
    let core = g.core.display().to_string();
    let common = [
        rom.as_str(),
        "--core",
        &core,
        "--frames",
        "900",
        "--netsim",
        "delay=20ms,jitter=5ms,loss=5%",
    ];
    let mut host = open_room(
        d,
        &addr,
        "gx",
        &[&common[..], &["--bot", "1", "--no-record"]].concat(),
    );
    let mut joiner = join_room(
        d,
        "join",
        &addr,
        "gx",
        &[&common[..], &["--bot", "2", "--no-record"]].concat(),
    );
    joiner.wait_ok(Duration::from_secs(50));
    host.wait_ok(Duration::from_secs(50));
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_eq!(h["frames"].as_u64(), Some(900));
    assert_eq!(checksum(&h), checksum(&j));
    assert_eq!(j["desyncs_detected"].as_u64(), Some(0));
}

#[test]
fn a_server_refuses_what_a_host_refuses_and_a_wrong_room() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_server, addr) = start_server(d, &[]);
    let mut host = open_room(
        d,
        &addr,
        "den",
        &["--password", "sesame", "--lobby-timeout", "40"],
    );
    let run = |label: &str, a: &[&str]| -> String {
        let mut p = Peer::spawn(d, label, &args(a));
        let status = p.wait(Duration::from_secs(20));
        assert!(!status.success(), "{label} should fail\n{}", p.log_text());
        p.log_text()
    };
    let cases = [
        (
            "wrong-room",
            vec!["join", &addr, "--room", "cellar", "--headless"],
            format!("no room cellar on {addr} (open rooms: den)"),
        ),
        (
            "no-room",
            vec!["join", &addr, "--headless"],
            "this is a framelock server: join a room on it with --room NAME".to_string(),
        ),
        (
            "wrong-password",
            vec![
                "join",
                &addr,
                "--room",
                "den",
                "--password",
                "sesam",
                "--headless",
            ],
            "refused by the host: wrong password".to_string(),
        ),
        (
            "no-password",
            vec!["join", &addr, "--room", "den", "--headless"],
            "this session needs one and you gave none".to_string(),
        ),
        (
            "room-taken",
            vec!["host", "--server", &addr, "--room", "den", "--headless"],
            "refused by the server: room den exists already".to_string(),
        ),
    ];
    for (label, a, want) in &cases {
        let log = run(label, a);
        assert!(
            log.contains(want.as_str()),
            "{label}: wanted {want:?}\n{log}"
        );
    }
    let gx = genesis();
    let core = gx.core.display().to_string();
    let rom = gx.rom.display().to_string();
    let log = run(
        "other-core",
        &[
            "join",
            &addr,
            "--room",
            "den",
            "--password",
            "sesame",
            &rom,
            "--core",
            &core,
            "--headless",
        ],
    );
    assert!(log.contains("core differs: host runs lightcycles"), "{log}");
    host.interrupt();
    host.wait(Duration::from_secs(10));
}

#[test]
fn a_killed_player_is_dropped_and_the_room_plays_on() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut server, addr) = start_server(d, &[]);
    let mut host = open_room(
        d,
        &addr,
        "trio",
        &[
            "--players",
            "3",
            "--frames",
            "1200",
            "--bot",
            "1",
            "--no-record",
        ],
    );
    let mut ana = join_room(
        d,
        "ana",
        &addr,
        "trio",
        &["--frames", "1200", "--bot", "2", "--no-record"],
    );
    let mut bob = join_room(
        d,
        "bob",
        &addr,
        "trio",
        &["--frames", "1200", "--bot", "3", "--no-record"],
    );
    assert!(
        server
            .wait_for_log("the game starts with 3 players", Duration::from_secs(20))
            .is_some(),
        "{}",
        server.log_text()
    );
    std::thread::sleep(Duration::from_secs(5));
    bob.kill();
    ana.wait_ok(Duration::from_secs(50));
    host.wait_ok(Duration::from_secs(50));
    let (h, a) = (host.read_stats(), ana.read_stats());
    assert_eq!(checksum(&h), checksum(&a));
    // Slots go by arrival: the server's log says which one bob took.
    let out = server.log_text();
    let player: u64 = out
        .split("room trio: bob joined as player ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("bob never joined\n{out}"));
    let left = h["players_left"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{h:#}");
    assert_eq!(left[0]["slot"].as_u64(), Some(player - 1), "{h:#}");
    let timed_out = format!("room trio: player {player} is out (timed out)");
    assert!(out.contains(&timed_out), "{out}");
}

#[test]
fn ctrl_c_on_the_server_tells_every_player() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut server, addr) = start_server(d, &[]);
    let mut host = open_room(
        d,
        &addr,
        "late",
        &["--frames", "100000", "--bot", "1", "--no-record"],
    );
    let mut ana = join_room(
        d,
        "ana",
        &addr,
        "late",
        &["--frames", "100000", "--bot", "2", "--no-record"],
    );
    assert!(server
        .wait_for_log("the game starts with 2 players", Duration::from_secs(20))
        .is_some());
    std::thread::sleep(Duration::from_secs(2));
    server.interrupt();
    server.wait_ok(Duration::from_secs(5));
    assert!(server
        .log_text()
        .contains("serve: stopped; told the players of 1 room(s)"));
    for p in [&mut host, &mut ana] {
        let status = p.wait(Duration::from_secs(10));
        assert!(!status.success());
        let log = p.log_text();
        assert!(
            log.contains("the room closed: the server is shutting down"),
            "{}\n{log}",
            p.label
        );
    }
}

#[test]
fn a_desync_in_a_room_is_healed_with_another_players_state() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (server, addr) = start_server(d, &[]);
    let common = ["--frames", "1500", "--no-record"];
    let mut host = open_room(
        d,
        &addr,
        "mend",
        &[&common[..], &["--players", "3", "--bot", "1"]].concat(),
    );
    let mut ana = join_room(
        d,
        "ana",
        &addr,
        "mend",
        &[&common[..], &["--bot", "2"]].concat(),
    );
    // bob's machine goes its own way at frame 300: two against one.
    let mut bob = join_room(
        d,
        "bob",
        &addr,
        "mend",
        &[&common[..], &["--bot", "3", "--inject-desync", "300"]].concat(),
    );
    for p in [&mut bob, &mut ana, &mut host] {
        p.wait_ok(Duration::from_secs(60));
    }
    let (h, a, b) = (host.read_stats(), ana.read_stats(), bob.read_stats());
    assert_eq!(
        checksum(&h),
        checksum(&b),
        "bob was not brought back\n{}",
        bob.log_text()
    );
    assert_eq!(checksum(&h), checksum(&a));
    assert!(b["resyncs"].as_u64() >= Some(1), "{b:#}");
    // Slots go by arrival: bob is player 2 or 3.
    let player = b["slot"].as_u64().unwrap() + 1;
    let log = server.log_text();
    let judged =
        format!("player {player} differs from most players; resyncing it with player 1's state");
    assert!(log.contains(&judged), "{judged}\n{log}");
    let healed = format!("room mend: player {player} has the state for frame");
    assert!(log.contains(&healed), "{log}");
    assert!(host
        .log_text()
        .contains("the server asks for this machine's state"));
}
