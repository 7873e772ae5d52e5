//! Home routers in network namespaces (`nat_common`): a public network with `framelock
//! serve`, and homes each behind its own router. A direct join to a home fails as it does
//! for real players; through the server, players in different homes (two behind one router)
//! play in sync. In a room its creator hosts, players behind routers that map a port the same
//! way for every destination go direct, introduced by the server; routers that map per
//! destination stay relayed; a direct path a router starts dropping falls back to the relay;
//! a friend who joins late and loses Wi-Fi for 10 s comes back and goes direct again; one
//! who joins late from behind a symmetric router 1.5 s away is welcomed however long the
//! direct attempt held her state; a router that took the joiner's punch itself and mapped
//! its host to a new port leaves the joiner to adopt that port.

mod nat_common;
mod netplay_common;

use std::path::Path;
use std::time::Duration;

use nat_common::{sh, Lab, SERVER};
use netplay_common::{checksum, genesis, Peer};

/// A framelock process inside the namespace `ns`, as `label`.
fn spawn(dir: &Path, ns: &str, label: &str, args: &[&str]) -> Peer {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    Peer::spawn_in(dir, Some(ns), label, Some(label), &args)
}

fn start_server(dir: &Path, lab: &Lab) -> Peer {
    let mut server = spawn(dir, &lab.public(), "server", &["serve"]);
    server.expect_log("serve: listening on udp", Duration::from_secs(15));
    server
}

fn open_room(dir: &Path, lab: &Lab, home: usize, room: &str, extra: &[&str]) -> Peer {
    let mut a = vec!["host", "--headless", "--server", SERVER, "--room", room];
    if !extra.contains(&"--path") {
        a.extend(["--path", "relayed"]);
    }
    a.extend_from_slice(extra);
    let mut host = spawn(dir, &lab.home(home), "host", &a);
    let said = format!("your friends join with `framelock join {SERVER} --room {room}");
    host.expect_log(&said, Duration::from_secs(15));
    host
}

fn join_room(dir: &Path, lab: &Lab, home: usize, label: &str, room: &str, extra: &[&str]) -> Peer {
    let mut a = vec!["join", SERVER, "--room", room, "--headless"];
    a.extend_from_slice(extra);
    spawn(dir, &lab.home(home), label, &a)
}

#[test]
fn a_direct_join_to_a_home_behind_a_router_gets_no_answer() {
    let lab = Lab::new(2);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut host = spawn(
        d,
        &lab.home(1),
        "host",
        &["host", "--headless", "--lobby-timeout", "20"],
    );
    assert!(host
        .wait_for_log("hosting on udp port 7845", Duration::from_secs(15))
        .is_some());
    // Router 1's public address: the datagrams reach it and are dropped there.
    let mut joiner = spawn(
        d,
        &lab.home(2),
        "join",
        &["join", "10.77.1.2", "--headless"],
    );
    let status = joiner.wait(Duration::from_secs(20));
    assert!(!status.success());
    let log = joiner.log_text();
    assert!(
        log.contains("no answer from 10.77.1.2:7845 after 5 s"),
        "{log}"
    );
    // Nobody got in (the port map's hint says "to be joined", which is no join).
    assert!(!host.log_text().contains(") joined"), "{}", host.log_text());
}

fn two_homes_through_a_server(content: &[&str], frames: &str) {
    let lab = Lab::new(2);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = start_server(d, &lab);
    let common: Vec<&str> = content
        .iter()
        .copied()
        .chain(["--frames", frames, "--no-record"])
        .collect();
    let mut host = open_room(
        d,
        &lab,
        1,
        "across",
        &[&common[..], &["--bot", "1"]].concat(),
    );
    let mut joiner = join_room(
        d,
        &lab,
        2,
        "join",
        "across",
        &[&common[..], &["--bot", "2"]].concat(),
    );
    joiner.wait_ok(Duration::from_secs(60));
    host.wait_ok(Duration::from_secs(60));
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_eq!(h["frames"].as_u64(), Some(frames.parse().unwrap()));
    assert_eq!(checksum(&h), checksum(&j), "the two homes differ");
    // The server saw both players from their routers' addresses, not their own.
    let log = server.log_text();
    assert!(log.contains("opened by 10.77.1.2:"), "{log}");
    assert!(log.contains("joined as player 2 from 10.77.2.2:"), "{log}");
}

/// A home router forgets its mappings mid-game (they expired, it rebooted): its player's
/// datagrams reach the server from a new port, and the server moves the player there once
/// the new port answers a check. Nobody is dropped; both end in sync.
#[test]
fn a_router_that_forgets_its_mappings_mid_game_loses_nobody() {
    let lab = Lab::new(2);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut server = start_server(d, &lab);
    let common = ["--frames", "1500", "--no-record"];
    let mut host = open_room(
        d,
        &lab,
        1,
        "forgetful",
        &[&common[..], &["--bot", "1"]].concat(),
    );
    let mut joiner = join_room(
        d,
        &lab,
        2,
        "join",
        "forgetful",
        &[&common[..], &["--bot", "2"]].concat(),
    );
    assert!(joiner
        .wait_for_log("in session", Duration::from_secs(20))
        .is_some());
    std::thread::sleep(Duration::from_secs(5));
    // New mappings get random ports from now on, and the old ones are gone.
    let router = format!("{}-r2", lab.tag);
    let nat = "add rule ip nat postrouting oifname wan masquerade fully-random";
    sh(&[
        "ip",
        "netns",
        "exec",
        &router,
        "nft",
        "flush",
        "chain",
        "ip",
        "nat",
        "postrouting",
    ]);
    let mut cmd = vec!["ip", "netns", "exec", &router, "nft"];
    cmd.extend(nat.split(' '));
    sh(&cmd);
    sh(&["ip", "netns", "exec", &router, "conntrack", "-F"]);
    server.expect_log("moved from 10.77.2.2:", Duration::from_secs(10));
    joiner.wait_ok(Duration::from_secs(60));
    host.wait_ok(Duration::from_secs(60));
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_eq!(checksum(&h), checksum(&j), "the two homes differ");
    let jlog = joiner.log_text();
    assert!(!jlog.contains("connection lost"), "{jlog}");
    assert!(
        !server.log_text().contains("is out (timed out"),
        "{}",
        server.log_text()
    );
}

#[test]
fn two_homes_play_the_builtin_game_through_a_server() {
    two_homes_through_a_server(&[], "1200");
}

#[test]
fn two_homes_play_genesis_plus_gx_through_a_server() {
    let g = genesis();
    let (rom, core) = (g.rom.display().to_string(), g.core.display().to_string());
    two_homes_through_a_server(&[&rom, "--core", &core], "1200");
}

#[test]
fn four_players_in_three_homes_stay_in_sync_over_loss_and_lose_a_killed_one() {
    let lab = Lab::new(3);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut server = start_server(d, &lab);
    let netsim = ["--netsim", "delay=15ms,jitter=5ms,loss=5%"];
    let common: Vec<&str> = ["--frames", "1200", "--no-record"]
        .into_iter()
        .chain(netsim)
        .collect();
    let mut host = open_room(
        d,
        &lab,
        1,
        "quad",
        &[
            &common[..],
            &["--players", "4", "--password", "pw", "--bot", "1"],
        ]
        .concat(),
    );
    // Refusals through the routers, with their messages.
    let mut lost = join_room(d, &lab, 3, "lost", "quads", &[]);
    let mut guess = join_room(d, &lab, 3, "guess", "quad", &["--password", "pv"]);
    assert!(!lost.wait(Duration::from_secs(15)).success());
    assert!(!guess.wait(Duration::from_secs(15)).success());
    assert!(
        lost.log_text().contains(&format!(
            "no room quads on {SERVER}:7845 (open rooms: quad)"
        )),
        "{}",
        lost.log_text()
    );
    assert!(
        guess.log_text().contains("wrong password"),
        "{}",
        guess.log_text()
    );
    // Two players behind router 2, one behind router 3.
    let mut ana = join_room(
        d,
        &lab,
        2,
        "ana",
        "quad",
        &[&common[..], &["--password", "pw", "--bot", "2"]].concat(),
    );
    let mut bob = join_room(
        d,
        &lab,
        2,
        "bob",
        "quad",
        &[&common[..], &["--password", "pw", "--bot", "3"]].concat(),
    );
    let mut cy = join_room(
        d,
        &lab,
        3,
        "cy",
        "quad",
        &[&common[..], &["--password", "pw", "--bot", "4"]].concat(),
    );
    assert!(
        server
            .wait_for_log("the game starts with 4 players", Duration::from_secs(30))
            .is_some(),
        "{}\n{}",
        server.log_text(),
        cy.log_text()
    );
    std::thread::sleep(Duration::from_secs(6));
    cy.kill();
    for p in [&mut ana, &mut bob, &mut host] {
        p.wait_ok(Duration::from_secs(60));
    }
    let sums: Vec<String> = [&host, &ana, &bob]
        .iter()
        .map(|p| checksum(&p.read_stats()))
        .collect();
    assert!(sums.iter().all(|s| *s == sums[0]), "{sums:?}");
    let left = host.read_stats()["players_left"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        server.log_text().contains("is out (timed out)"),
        "{}",
        server.log_text()
    );
}

/// The `--stats-json` of `serve`, once it stopped (Ctrl-C).
fn stop_server(server: &mut Peer) -> serde_json::Value {
    server.interrupt();
    server.wait_ok(Duration::from_secs(15));
    server.read_stats()
}

/// A hosted room (`--path auto`) in home `host_home`, and a joiner in `join_home`: both play
/// `frames` frames with recordings; returns (host, joiner, the server's stats) after both
/// logs verified and the two ended in sync.
fn hosted_pair(lab: &Lab, d: &Path, homes: (usize, usize), frames: &str) -> [serde_json::Value; 3] {
    let mut server = start_server(d, lab);
    let (hlog, jlog) = (d.join("host.flr"), d.join("join.flr"));
    let (hlog_s, jlog_s) = (hlog.display().to_string(), jlog.display().to_string());
    let common = ["--frames", frames, "--path", "auto"];
    let mut host = open_room(
        d,
        lab,
        homes.0,
        "den",
        &[&common[..], &["--bot", "1", "--record", &hlog_s]].concat(),
    );
    let mut joiner = join_room(
        d,
        lab,
        homes.1,
        "join",
        "den",
        &[&common[..], &["--bot", "2", "--record", &jlog_s]].concat(),
    );
    joiner.wait_ok(Duration::from_secs(120));
    host.wait_ok(Duration::from_secs(60));
    let stats = stop_server(&mut server);
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_eq!(checksum(&h), checksum(&j), "the two homes differ");
    netplay_common::assert_log_verifies(d, &hlog);
    netplay_common::assert_log_verifies(d, &jlog);
    let logs = format!("{}\n{}", host.log_text(), joiner.log_text());
    assert!(!logs.contains("connection lost"), "{logs}");
    [h, j, stats]
}

#[test]
fn two_homes_behind_cone_routers_play_a_minute_direct_and_the_server_hears_under_8_kb() {
    let lab = Lab::new(2);
    let dir = tempfile::tempdir().unwrap();
    let [h, j, served] = hosted_pair(&lab, dir.path(), (1, 2), "3600");
    assert_eq!(h["path"], "direct", "{h}");
    assert_eq!(j["path"], "direct", "{j}");
    let bytes_in = served["bytes_in"].as_u64().unwrap();
    assert!(
        bytes_in < 8 * 1024,
        "the server got {bytes_in} bytes: {served}"
    );
    // Proven within a round trip to the server and half a second.
    let after = j["direct_after_ms"].as_f64().unwrap();
    assert!(after < 600.0, "{after} ms");
}

#[test]
fn a_home_behind_a_symmetric_router_plays_relayed_in_sync() {
    let lab = Lab::with_symmetric(2, &[2]);
    let dir = tempfile::tempdir().unwrap();
    let [h, j, served] = hosted_pair(&lab, dir.path(), (1, 2), "900");
    assert_eq!(h["path"], "relayed", "{h}");
    assert_eq!(j["path"], "relayed", "{j}");
    let relayed = served["bytes_relayed"].as_u64().unwrap();
    assert!(relayed > 10_000, "{served}");
}

#[test]
fn two_symmetric_routers_play_relayed_in_sync() {
    let lab = Lab::with_symmetric(2, &[1, 2]);
    let dir = tempfile::tempdir().unwrap();
    let [h, j, _] = hosted_pair(&lab, dir.path(), (1, 2), "600");
    assert_eq!(h["path"], "relayed", "{h}");
    assert_eq!(j["path"], "relayed", "{j}");
}

#[test]
fn two_players_behind_one_router_find_each_other_by_local_address() {
    let lab = Lab::new(1);
    let dir = tempfile::tempdir().unwrap();
    let [h, j, _] = hosted_pair(&lab, dir.path(), (1, 1), "600");
    assert_eq!(h["path"], "direct", "{h}");
    assert_eq!(j["path"], "direct", "{j}");
    let log = std::fs::read_to_string(dir.path().join("join.log")).unwrap();
    assert!(log.contains("direct path to the host (10.78.1."), "{log}");
}

/// Router 2 starts dropping the direct path mid-game: the session falls back to the relay
/// and finishes in sync, with nobody dropped.
#[test]
fn a_router_that_drops_the_direct_path_mid_game_falls_back_to_the_relay() {
    let lab = Lab::new(2);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut server = start_server(d, &lab);
    let common = ["--frames", "1800", "--path", "auto"];
    let mut host = open_room(d, &lab, 1, "den", &[&common[..], &["--bot", "1"]].concat());
    let mut joiner = join_room(
        d,
        &lab,
        2,
        "join",
        "den",
        &[&common[..], &["--bot", "2"]].concat(),
    );
    joiner.expect_log("direct path to the host", Duration::from_secs(20));
    std::thread::sleep(Duration::from_secs(8));
    // Router 2 drops everything from router 1's address, in and out of its home.
    let router = format!("{}-r2", lab.tag);
    for rule in [
        "insert rule inet filter forward ip saddr 10.77.1.2 drop",
        "insert rule inet filter input ip saddr 10.77.1.2 drop",
    ] {
        let mut cmd = vec!["ip", "netns", "exec", &router, "nft"];
        cmd.extend(rule.split(' '));
        sh(&cmd);
    }
    joiner.expect_log("the host is relayed by the server", Duration::from_secs(10));
    joiner.wait_ok(Duration::from_secs(90));
    host.wait_ok(Duration::from_secs(60));
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_eq!(checksum(&h), checksum(&j), "the two homes differ");
    assert_eq!(j["path"], "relayed", "{j}");
    let logs = format!("{}\n{}", host.log_text(), joiner.log_text());
    assert!(!logs.contains("connection lost"), "{logs}");
    assert!(!logs.contains("left (timed out"), "{logs}");
    let served = stop_server(&mut server);
    assert!(
        served["bytes_relayed"].as_u64().unwrap() > 5_000,
        "{served}"
    );
}

/// Two homes with cone routers, one with a symmetric router, one player on the public
/// network: a room of 4 that mixes direct and relayed players, in sync.
#[test]
fn a_room_of_four_mixes_direct_and_relayed_players() {
    let lab = Lab::with_symmetric(3, &[3]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut server = start_server(d, &lab);
    let common = ["--frames", "900", "--path", "auto"];
    let mut host = open_room(
        d,
        &lab,
        1,
        "mix",
        &[&common[..], &["--players", "4", "--bot", "1"]].concat(),
    );
    let mut cone = join_room(
        d,
        &lab,
        2,
        "cone",
        "mix",
        &[&common[..], &["--bot", "2"]].concat(),
    );
    let mut hard = join_room(
        d,
        &lab,
        3,
        "hard",
        "mix",
        &[&common[..], &["--bot", "3"]].concat(),
    );
    let a: Vec<String> = ["join", SERVER, "--room", "mix", "--headless", "--bot", "4"]
        .iter()
        .chain(&common)
        .map(|s| s.to_string())
        .collect();
    let mut public = Peer::spawn_in(d, Some(&lab.public()), "public", Some("public"), &a);
    for p in [&mut cone, &mut hard, &mut public, &mut host] {
        p.wait_ok(Duration::from_secs(120));
    }
    let stats: Vec<serde_json::Value> = [&host, &cone, &hard, &public]
        .iter()
        .map(|p| p.read_stats())
        .collect();
    let sums: Vec<String> = stats.iter().map(checksum).collect();
    assert!(sums.iter().all(|s| *s == sums[0]), "{sums:?}");
    assert_eq!(stats[1]["path"], "direct", "{}", stats[1]);
    assert_eq!(stats[2]["path"], "relayed", "{}", stats[2]);
    assert_eq!(stats[3]["path"], "direct", "{}", stats[3]);
    let mut host_paths: Vec<String> = stats[0]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect();
    host_paths.sort();
    assert_eq!(host_paths, ["direct", "direct", "relayed"], "{}", stats[0]);
    stop_server(&mut server);
}

/// At the speed of people, in a room its creator hosts: the friend types the join command
/// 40 s after the room opened, plays direct, then loses Wi-Fi for 10 s. It comes back
/// through the server, the two go direct again, and both recordings verify.
#[test]
fn a_friend_joins_a_hosted_room_after_40_s_and_survives_a_10_s_wifi_drop() {
    let lab = Lab::new(2);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut server = start_server(d, &lab);
    let (hlog, jlog) = (d.join("host.flr"), d.join("join.flr"));
    let (hlog_s, jlog_s) = (hlog.display().to_string(), jlog.display().to_string());
    let common = ["--frames", "3000", "--path", "auto"];
    let h = [&common[..], &["--bot", "1", "--record", &hlog_s]].concat();
    let mut host = open_room(d, &lab, 1, "den", &h);
    std::thread::sleep(Duration::from_secs(40));
    assert!(host.try_status().is_none(), "{}", host.log_text());
    let j = [&common[..], &["--bot", "2", "--record", &jlog_s]].concat();
    let mut joiner = join_room(d, &lab, 2, "join", "den", &j);
    joiner.expect_log("direct path to the host", Duration::from_secs(20));
    std::thread::sleep(Duration::from_secs(5));
    lab.wifi_off(2);
    let off = std::time::Instant::now();
    let lost = joiner.wait_for_log("connection lost", Duration::from_secs(6));
    std::thread::sleep(Duration::from_secs(10).saturating_sub(off.elapsed()));
    lab.wifi_back(2);
    assert!(lost.is_some(), "{}", joiner.log_text());
    joiner.expect_log("back in the game", Duration::from_secs(20));
    host.expect_log("(player 2) is back from frame", Duration::from_secs(10));
    joiner.wait_ok(Duration::from_secs(120));
    host.wait_ok(Duration::from_secs(60));
    let served = stop_server(&mut server);
    let (hs, js) = (host.read_stats(), joiner.read_stats());
    assert_eq!(checksum(&hs), checksum(&js), "{}", joiner.log_text());
    assert_eq!(js["connections_lost"], 1, "{js:#}");
    assert_eq!(js["reconnects"], 1, "{js:#}");
    assert_eq!(js["path"], "direct", "{js:#}\n{}", joiner.log_text());
    assert_eq!(hs["path"], "direct", "{hs:#}");
    // Two introductions: one at the join, one after the drop.
    let directs = joiner.log_text().matches("direct path to the host").count();
    assert!(directs >= 2, "{}", joiner.log_text());
    assert!(served["bytes_relayed"].as_u64().unwrap() > 0, "{served}");
    netplay_common::assert_log_verifies(d, &hlog);
    netplay_common::assert_log_verifies(d, &jlog);
}

/// Routers that take datagrams sent to their own WAN address (as many home routers do):
/// with a hop between them, as on the internet, a first punch with a low TTL dies before
/// the other router and poisons nothing, so two cone homes go direct.
#[test]
fn two_cone_homes_whose_routers_take_wan_input_still_go_direct() {
    let take = nat_common::Router {
        wan_input: true,
        ..nat_common::Router::default()
    };
    let lab = Lab::with_routers(&[take.clone(), take]);
    let dir = tempfile::tempdir().unwrap();
    let [h, j, served] = hosted_pair(&lab, dir.path(), (1, 2), "900");
    assert_eq!(h["path"], "direct", "{h}");
    assert_eq!(j["path"], "direct", "{j}");
    let relayed = served["bytes_relayed"].as_u64().unwrap();
    assert!(relayed < 8_000, "{served}");
    // The first punch (TTL 2) dies in the core; the second, 200 ms later, crosses.
    let after = j["direct_after_ms"].as_f64().unwrap();
    assert!(after < 600.0, "{after} ms");
}

/// Router 1 takes datagrams sent to its own WAN address, and the joiner's punches reach it
/// before the host's own punch leaves (held back here until the first attempt failed): it
/// keeps a conntrack entry for them and maps the host's flow to the joiner to a new port
/// (`conntrack -L` in it shows both). The joiner's router filters nothing (full cone), so
/// the joiner hears the host's punches from that port, which nobody named, answers and
/// adopts it (a peer-reflexive candidate), and the retry goes direct there: its punches to
/// the port the server saw only ever reach router 1 itself.
#[test]
fn a_router_that_took_the_joiners_punch_itself_remaps_the_host_and_the_joiner_adopts_the_new_port()
{
    let take = nat_common::Router {
        wan_input: true,
        ..nat_common::Router::default()
    };
    let cone = nat_common::Router {
        full_cone: true,
        ..nat_common::Router::default()
    };
    let lab = Lab::with_routers(&[take, cone]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut server = start_server(d, &lab);
    let common = ["--frames", "1800", "--path", "auto"];
    let mut host = open_room(d, &lab, 1, "den", &[&common[..], &["--bot", "1"]].concat());
    // The host's datagrams to the joiner's router do not leave yet.
    let router = format!("{}-r1", lab.tag);
    let hold = "add table inet hold
        add chain inet hold forward { type filter hook forward priority 0; }
        add rule inet hold forward iifname lan ip daddr 10.77.2.2 drop";
    for rule in hold.lines() {
        let mut cmd = vec!["ip", "netns", "exec", &router, "nft"];
        cmd.extend(rule.split_whitespace());
        sh(&cmd);
    }
    let mut joiner = join_room(
        d,
        &lab,
        2,
        "join",
        "den",
        &[&common[..], &["--bot", "2"]].concat(),
    );
    host.expect_log(
        "is relayed by the server: no direct path within 3 s",
        Duration::from_secs(30),
    );
    sh(&[
        "ip", "netns", "exec", &router, "nft", "delete", "table", "inet", "hold",
    ]);
    joiner.wait_ok(Duration::from_secs(120));
    host.wait_ok(Duration::from_secs(60));
    stop_server(&mut server);
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_eq!(checksum(&h), checksum(&j), "the two homes differ");
    assert_eq!(h["path"], "direct", "{h}");
    assert_eq!(j["path"], "direct", "{j}");
    // The server saw the host at one port; the joiner went direct to another.
    let port_after = |log: &str, needle: &str| -> String {
        let at = log
            .find(needle)
            .unwrap_or_else(|| panic!("no `{needle}`:\n{log}"));
        let rest = &log[at + needle.len()..];
        rest.chars().take_while(char::is_ascii_digit).collect()
    };
    let seen = port_after(&server.log_text(), "opened by 10.77.1.2:");
    let direct = port_after(&joiner.log_text(), "direct path to the host (10.77.1.2:");
    assert_ne!(
        seen, direct,
        "the router kept the host's port: nothing was remapped"
    );
}

#[test]
fn a_late_joiner_behind_a_symmetric_router_is_welcomed_however_long_the_path_attempt_takes() {
    // A hosted room (`--path auto`): the host in one home, bob in another; ana joins the
    // running game from behind a symmetric router (no direct path: the host holds her state
    // through the 3-s attempt) 1.5 s away, and a spectator at the same moment. Her stream
    // starts at her state's frame however long that took.
    let lab = Lab::with_symmetric(3, &[3]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut server = start_server(d, &lab);
    let frames = ["--frames", "2400", "--path", "auto"];
    let host_args = [
        &frames[..],
        &["--bot", "1", "--players", "3", "--start-with", "2"],
    ]
    .concat();
    let mut host = open_room(d, &lab, 1, "den", &host_args);
    let mut bob = join_room(
        d,
        &lab,
        2,
        "bob",
        "den",
        &[&frames[..], &["--bot", "2"]].concat(),
    );
    bob.expect_log("netplay: in session", Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(8));
    let log = d.join("ana.flr");
    let ana_args = [
        &frames[..],
        &["--bot", "3", "--name", "ana", "--netsim", "delay=1500ms"],
        &["--record", log.to_str().unwrap()],
    ]
    .concat();
    let mut ana = join_room(d, &lab, 3, "ana", "den", &ana_args);
    let eve_args = [
        "spectate",
        SERVER,
        "--room",
        "den",
        "--headless",
        "--frames",
        "2400",
    ];
    let mut eve = spawn(d, &lab.home(2), "eve", &eve_args);
    for p in [&mut ana, &mut eve, &mut bob, &mut host] {
        p.wait_ok(Duration::from_secs(120));
    }
    let want = checksum(&host.read_stats());
    for p in [&bob, &ana, &eve] {
        assert_eq!(
            checksum(&p.read_stats()),
            want,
            "{}\n{}",
            p.label,
            p.log_text()
        );
    }
    let a = ana.read_stats();
    assert_eq!(a["path"], "relayed", "{a}");
    stop_server(&mut server);
    netplay_common::assert_log_verifies(d, &log);
}
