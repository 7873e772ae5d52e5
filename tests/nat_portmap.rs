//! Homes whose routers run Debian's real miniupnpd (`nat_common`): a `host` behind one is
//! joined from the public side with the command it printed, nobody forwarding a port by
//! hand, over PCP, NAT-PMP or UPnP IGD; the forward is gone once the host ends, Ctrl-C
//! included; a router without UPnP, or one that denies the mapping, is named with what to do;
//! two hosts on one port behind one router get different outside ports; and in a room a
//! player hosts, a symmetric-NAT home with UPnP goes direct where it would be relayed.

mod nat_common;
mod netplay_common;

use std::path::Path;
use std::time::Duration;

use nat_common::{Lab, Router, SERVER};
use netplay_common::{checksum, Peer};

fn spawn(dir: &Path, ns: &str, label: &str, args: &[&str]) -> Peer {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    Peer::spawn_in(dir, Some(ns), label, Some(label), &args)
}

const SAID: &str = "over the internet, friends join with `";

/// The join command the host printed for the internet, without `framelock`.
fn printed_command(host: &mut Peer) -> Vec<String> {
    host.expect_log(SAID, Duration::from_secs(20));
    let log = host.log_text();
    let from = log.find(SAID).unwrap() + SAID.len();
    let cmd = &log[from..from + log[from..].find('`').unwrap()];
    let words: Vec<String> = cmd.split_whitespace().map(String::from).collect();
    assert_eq!(words[..2], ["framelock", "join"], "{cmd}");
    words[1..].to_vec()
}

fn join_public(dir: &Path, lab: &Lab, label: &str, command: &[String], extra: &[&str]) -> Peer {
    let mut a = command.to_vec();
    a.extend(extra.iter().map(|s| s.to_string()));
    Peer::spawn_in(dir, Some(&lab.public()), label, Some(label), &a)
}

#[test]
fn a_host_behind_a_upnp_router_is_joined_from_the_public_side_with_the_printed_command() {
    let lab = Lab::with_routers(&[Router::upnp(1)]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let game = ["--headless", "--frames", "600", "--no-record"];
    let mut host = spawn(
        d,
        &lab.home(1),
        "host",
        &[&["host", "--bot", "1"][..], &game].concat(),
    );
    let command = printed_command(&mut host);
    assert_eq!(command, ["join", "10.77.1.2:7845"]);
    assert!(
        host.log_text()
            .contains("port map: PCP 10.77.1.2:7845 (lease 1 h)"),
        "{}",
        host.log_text()
    );
    assert_eq!(lab.forwards(1), ["7845 -> 10.78.1.2:7845"]);
    let mut joiner = join_public(
        d,
        &lab,
        "join",
        &command,
        &[&["--bot", "2"][..], &game].concat(),
    );
    joiner.wait_ok(Duration::from_secs(60));
    host.wait_ok(Duration::from_secs(60));
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_eq!(checksum(&h), checksum(&j), "the two differ");
    let pm = &h["port_map"];
    assert_eq!(pm["state"], "removed", "{pm}");
    assert_eq!(pm["protocol"], "PCP", "{pm}");
    assert_eq!(pm["external"], "10.77.1.2:7845", "{pm}");
    assert!(pm["after_ms"].as_f64().unwrap() < 2000.0, "{pm}");
    assert!(
        host.log_text().contains("port map removed from the router"),
        "{}",
        host.log_text()
    );
    assert!(lab.forwards(1).is_empty(), "{:?}", lab.forwards(1));
}

#[test]
fn nat_pmp_and_upnp_map_too_and_the_forward_is_gone_after_ctrl_c() {
    let lab = Lab::with_routers(&[Router::upnp(1)]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // NAT-PMP, interrupted in its lobby.
    let mut host = spawn(
        d,
        &lab.home(1),
        "natpmp",
        &["host", "--headless", "--port-map", "natpmp"],
    );
    assert_eq!(printed_command(&mut host), ["join", "10.77.1.2:7845"]);
    assert!(
        host.log_text().contains("port map: NAT-PMP 10.77.1.2:7845"),
        "{}",
        host.log_text()
    );
    assert_eq!(lab.forwards(1), ["7845 -> 10.78.1.2:7845"]);
    host.interrupt();
    assert!(!host.wait(Duration::from_secs(15)).success());
    assert!(lab.forwards(1).is_empty(), "{:?}", lab.forwards(1));
    assert!(
        host.log_text().contains("port map removed from the router"),
        "{}",
        host.log_text()
    );
    // UPnP IGD, joined, then interrupted mid-game.
    let game = ["--headless", "--frames", "100000", "--no-record"];
    let a = [&["host", "--port-map", "upnp", "--bot", "1"][..], &game].concat();
    let mut host = spawn(d, &lab.home(1), "upnp", &a);
    let command = printed_command(&mut host);
    assert!(
        host.log_text()
            .contains("port map: UPnP 10.77.1.2:7845 (lease 1 h)"),
        "{}",
        host.log_text()
    );
    let mut joiner = join_public(
        d,
        &lab,
        "join",
        &command,
        &[&["--bot", "2", "--reconnect", "0"][..], &game].concat(),
    );
    joiner.expect_log("in session", Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(2));
    host.interrupt();
    host.wait(Duration::from_secs(20));
    assert!(lab.forwards(1).is_empty(), "{:?}", lab.forwards(1));
    let h = host.read_stats();
    assert_eq!(h["port_map"]["state"], "removed", "{h}");
    assert_eq!(h["port_map"]["protocol"], "UPnP", "{h}");
    joiner.wait(Duration::from_secs(20));
}

#[test]
fn a_router_without_upnp_is_named_and_the_host_says_what_to_do() {
    let lab = Lab::new(1);
    let dir = tempfile::tempdir().unwrap();
    let mut host = spawn(
        dir.path(),
        &lab.home(1),
        "host",
        &["host", "--headless", "--lobby-timeout", "6"],
    );
    let hosting = host.expect_log("hosting on udp port 7845", Duration::from_secs(15));
    let said = host.expect_log(
        "port map: no UPnP/NAT-PMP/PCP router answered in 2 s",
        Duration::from_secs(10),
    );
    assert!(said.duration_since(hosting) < Duration::from_secs(4));
    host.expect_log(
        "to be joined from the internet, forward udp port 7845 to this machine (10.78.1.2)",
        Duration::from_secs(5),
    );
    assert!(!host.wait(Duration::from_secs(20)).success());
    let log = host.log_text();
    assert!(
        log.contains("players join with `framelock join 10.78.1.2:7845`"),
        "{log}"
    );
    assert!(!log.contains(SAID), "{log}");
}

#[test]
fn a_router_that_denies_the_mapping_is_named_in_its_own_words() {
    let lab = Lab::with_routers(&[Router::upnp_denying()]);
    let dir = tempfile::tempdir().unwrap();
    for (mode, said) in [
        (
            "auto",
            "port map: the router refused: CANNOT_PROVIDE_EXTERNAL (PCP), Action not \
             authorized (UPnP)",
        ),
        (
            "upnp",
            "port map: the router refused: Action not authorized (UPnP)",
        ),
    ] {
        let a = [
            "host",
            "--headless",
            "--lobby-timeout",
            "5",
            "--port-map",
            mode,
        ];
        let mut host = spawn(dir.path(), &lab.home(1), mode, &a);
        host.expect_log(said, Duration::from_secs(15));
        assert!(!host.wait(Duration::from_secs(20)).success());
        assert!(lab.forwards(1).is_empty());
    }
    // Debian's miniupnpd answered at once: it was never sent a request it would spend
    // minutes on (a NAT-PMP or PCP MAP its rules deny, without PREFER_FAILURE).
    assert!(
        lab.miniupnpd_log(1)
            .matches("port mapping rejected")
            .count()
            < 40
    );
}

#[test]
fn two_hosts_on_one_port_behind_one_router_get_different_outside_ports() {
    let mut lab = Lab::with_routers(&[Router::upnp(1)]);
    let second = lab.second_machine(1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let game = ["--headless", "--frames", "300", "--no-record"];
    let mut first = spawn(
        d,
        &lab.home(1),
        "first",
        &[&["host", "--bot", "1"][..], &game].concat(),
    );
    let one = printed_command(&mut first);
    // The second asks UPnP only: its AddPortMapping of 7845 conflicts, and the router
    // picks another port.
    let a = [&["host", "--port-map", "upnp", "--bot", "1"][..], &game].concat();
    let mut other = spawn(d, &second, "second", &a);
    let two = printed_command(&mut other);
    assert_eq!(one, ["join", "10.77.1.2:7845"]);
    assert_ne!(one, two);
    assert!(two[1].starts_with("10.77.1.2:"), "{two:?}");
    let mut forwards = lab.forwards(1);
    forwards.sort();
    assert_eq!(forwards.len(), 2, "{forwards:?}");
    assert!(
        forwards.contains(&"7845 -> 10.78.1.2:7845".to_string()),
        "{forwards:?}"
    );
    assert!(
        forwards.iter().any(|f| f.ends_with("-> 10.78.1.5:7845")),
        "{forwards:?}"
    );
    // Each is joined on its own port.
    let mut j1 = join_public(
        d,
        &lab,
        "join1",
        &one,
        &[&["--bot", "2"][..], &game].concat(),
    );
    let mut j2 = join_public(
        d,
        &lab,
        "join2",
        &two,
        &[&["--bot", "2"][..], &game].concat(),
    );
    for p in [&mut j1, &mut j2, &mut first, &mut other] {
        p.wait_ok(Duration::from_secs(60));
    }
    assert_eq!(checksum(&first.read_stats()), checksum(&j1.read_stats()));
    assert_eq!(checksum(&other.read_stats()), checksum(&j2.read_stats()));
    assert!(lab.forwards(1).is_empty(), "{:?}", lab.forwards(1));
}

/// A hosted room with a server, the host in home 1 and the joiner in home 2; both play
/// `frames` with `--path auto`; returns their stats after checking they agree.
fn hosted_room(lab: &Lab, d: &Path, frames: &str) -> [serde_json::Value; 2] {
    let mut server = spawn(d, &lab.public(), "server", &["serve"]);
    server.expect_log("serve: listening on udp", Duration::from_secs(15));
    let game = [
        "--headless",
        "--frames",
        frames,
        "--no-record",
        "--path",
        "auto",
    ];
    let a = [
        &["host", "--server", SERVER, "--room", "den", "--bot", "1"][..],
        &game,
    ]
    .concat();
    let mut host = spawn(d, &lab.home(1), "host", &a);
    host.expect_log("your friends join with", Duration::from_secs(20));
    let j = [&["join", SERVER, "--room", "den", "--bot", "2"][..], &game].concat();
    let mut joiner = spawn(d, &lab.home(2), "join", &j);
    joiner.wait_ok(Duration::from_secs(90));
    host.wait_ok(Duration::from_secs(60));
    server.interrupt();
    server.wait(Duration::from_secs(15));
    let (h, j) = (host.read_stats(), joiner.read_stats());
    assert_eq!(checksum(&h), checksum(&j));
    [h, j]
}

/// A home behind a symmetric router (relayed against a plain home, see `nat_lab.rs`)
/// goes direct to a host whose router forwards its port: it punches the forwarded port.
#[test]
fn a_symmetric_home_goes_direct_to_a_host_whose_router_forwards_its_port() {
    let hard = Router {
        symmetric: true,
        ..Router::default()
    };
    let lab = Lab::with_routers(&[Router::upnp(1), hard]);
    let dir = tempfile::tempdir().unwrap();
    let [h, j] = hosted_room(&lab, dir.path(), "900");
    assert_eq!(j["path"], "direct", "{j}");
    assert_eq!(h["path"], "direct", "{h}");
    assert_eq!(h["port_map"]["protocol"], "PCP", "{h}");
    let log = std::fs::read_to_string(dir.path().join("join.log")).unwrap();
    assert!(log.contains("direct path to the host (10.77.1.2:"), "{log}");
    assert!(lab.forwards(1).is_empty(), "{:?}", lab.forwards(1));
}

/// The other way round: the joiner's router forwards its port, the host's is symmetric.
/// The joiner tells the host over the relay, and the host punches it.
#[test]
fn a_symmetric_host_goes_direct_to_a_joiner_whose_router_forwards_its_port() {
    let hard = Router {
        symmetric: true,
        ..Router::default()
    };
    let lab = Lab::with_routers(&[hard, Router::upnp(2)]);
    let dir = tempfile::tempdir().unwrap();
    let [h, j] = hosted_room(&lab, dir.path(), "900");
    assert_eq!(j["path"], "direct", "{j}");
    assert_eq!(h["path"], "direct", "{h}");
    assert_eq!(j["port_map"]["protocol"], "PCP", "{j}");
    assert_eq!(h["port_map"]["state"], "failed", "{h}");
    assert!(lab.forwards(2).is_empty(), "{:?}", lab.forwards(2));
}
