//! Home routers in network namespaces: a public network with `framelock serve`, and homes
//! each behind its own router (nftables masquerade, a forward policy that drops unsolicited
//! inbound traffic). A direct join to a home fails as it does for real players; through the
//! server, players in different homes (two behind one router) play in sync. Needs root,
//! `ip` and `nft` (`.ci/setup` installs them); every namespace is removed afterwards, also
//! when a test fails. Traffic stays inside the namespaces the test made.

mod netplay_common;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use netplay_common::{checksum, genesis, Peer};

/// The server's address on the public network (every router reaches it).
const SERVER: &str = "10.77.0.1";

static NEXT_LAB: AtomicU32 = AtomicU32::new(0);

fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (the NAT lab needs iproute2 and nftables)", args[0]));
    assert!(
        out.status.success(),
        "{} failed: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr),
        if unsafe_is_root() {
            ""
        } else {
            " (the NAT lab needs root, as CI has)"
        }
    );
}

fn unsafe_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The namespaces of one test; removed on drop.
struct Lab {
    tag: String,
    namespaces: Vec<String>,
}

impl Lab {
    /// The public network (10.77.0.0/16, a bridge, the server at 10.77.0.1) and `homes`
    /// homes: home h behind router h, whose public address is 10.77.h.2, with its players at
    /// 10.78.h.2, .3 and .4.
    fn new(homes: usize) -> Lab {
        let id = NEXT_LAB.fetch_add(1, Ordering::Relaxed);
        let tag = format!("fl{}x{id}", std::process::id() % 100_000);
        let mut lab = Lab {
            tag: tag.clone(),
            namespaces: Vec::new(),
        };
        let public = lab.ns("pub");
        let run = |cmd: &str| sh(&cmd.split_whitespace().collect::<Vec<_>>());
        run(&format!("ip -n {public} link add br0 type bridge"));
        run(&format!("ip -n {public} addr add 10.77.0.1/16 dev br0"));
        run(&format!("ip -n {public} link set br0 up"));
        for h in 1..=homes {
            let router = lab.ns(&format!("r{h}"));
            let home = lab.ns(&format!("h{h}"));
            // Router h's "wan" port on the public bridge, at 10.77.h.2.
            let (p, w) = (format!("{tag}p{h}"), format!("{tag}w{h}"));
            run(&format!(
                "ip link add {p} netns {public} type veth peer name {w} netns {router}"
            ));
            run(&format!("ip -n {public} link set {p} master br0"));
            run(&format!("ip -n {public} link set {p} up"));
            run(&format!("ip -n {router} link set {w} name wan"));
            run(&format!("ip -n {router} addr add 10.77.{h}.2/16 dev wan"));
            run(&format!("ip -n {router} link set wan up"));
            run(&format!("ip -n {router} route add default via 10.77.0.1"));
            // Its "lan" port at 10.78.h.1, the home's players behind it.
            let (l, e) = (format!("{tag}l{h}"), format!("{tag}e{h}"));
            run(&format!(
                "ip link add {l} netns {router} type veth peer name {e} netns {home}"
            ));
            run(&format!("ip -n {router} link set {l} name lan"));
            run(&format!("ip -n {router} addr add 10.78.{h}.1/24 dev lan"));
            run(&format!("ip -n {router} link set lan up"));
            run(&format!("ip -n {home} link set {e} name eth0"));
            for host in 2..=4 {
                run(&format!(
                    "ip -n {home} addr add 10.78.{h}.{host}/24 dev eth0"
                ));
            }
            run(&format!("ip -n {home} link set eth0 up"));
            run(&format!("ip -n {home} route add default via 10.78.{h}.1"));
            run(&format!(
                "ip netns exec {router} sysctl -qw net.ipv4.ip_forward=1"
            ));
            // A home router: masquerade outbound; inbound only as replies.
            let rules = "table ip nat {
                chain postrouting { type nat hook postrouting priority 100; oifname \"wan\" masquerade; }
            }
            table inet filter {
                chain forward { type filter hook forward priority 0; policy drop;
                    ct state established,related accept; iifname \"lan\" oifname \"wan\" accept; }
                chain input { type filter hook input priority 0; policy accept;
                    iifname \"wan\" ct state established,related accept; iifname \"wan\" drop; }
            }
            ";
            let file = std::env::temp_dir().join(format!("{tag}-{h}.nft"));
            std::fs::write(&file, rules).unwrap();
            run(&format!("ip netns exec {router} nft -f {}", file.display()));
            let _ = std::fs::remove_file(file);
        }
        lab
    }

    fn ns(&mut self, name: &str) -> String {
        let ns = format!("{}-{name}", self.tag);
        sh(&["ip", "netns", "add", &ns]);
        self.namespaces.push(ns.clone());
        sh(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
        ns
    }

    fn public(&self) -> String {
        format!("{}-pub", self.tag)
    }

    fn home(&self, h: usize) -> String {
        format!("{}-h{h}", self.tag)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in self.namespaces.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// A framelock process inside the namespace `ns`, as `label`.
fn spawn(dir: &Path, ns: &str, label: &str, args: &[&str]) -> Peer {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    Peer::spawn_in(dir, Some(ns), label, Some(label), &args)
}

fn start_server(dir: &Path, lab: &Lab) -> Peer {
    let mut server = spawn(dir, &lab.public(), "server", &["serve"]);
    assert!(
        server
            .wait_for_log("serve: listening on udp", Duration::from_secs(15))
            .is_some(),
        "{}",
        server.log_text()
    );
    server
}

fn open_room(dir: &Path, lab: &Lab, home: usize, room: &str, extra: &[&str]) -> Peer {
    let mut a = vec!["host", "--headless", "--server", SERVER, "--room", room];
    a.extend_from_slice(extra);
    let mut host = spawn(dir, &lab.home(home), "host", &a);
    let said = format!("your friends join with `framelock join {SERVER} --room {room}");
    assert!(
        host.wait_for_log(&said, Duration::from_secs(15)).is_some(),
        "{}",
        host.log_text()
    );
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
    assert!(!host.log_text().contains("joined"), "{}", host.log_text());
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
    assert!(
        server
            .wait_for_log("moved from 10.77.2.2:", Duration::from_secs(10))
            .is_some(),
        "{}",
        server.log_text()
    );
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
