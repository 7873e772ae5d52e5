//! The NAT lab: network namespaces for a public network (a bridge, `framelock serve` at
//! [`SERVER`]) and homes, each behind its own router (nftables masquerade, a forward policy
//! that drops unsolicited inbound traffic). Needs root, `ip` and `nft` (`.ci/setup`
//! installs them); every namespace is removed when the [`Lab`] is dropped, also when a test
//! fails. Traffic stays inside the namespaces it made. Used by `tests/nat_lab.rs` and the
//! `direct_paths` benchmark.
#![allow(dead_code)] // each crate uses a different subset

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The server's address on the public network (every router reaches it).
pub const SERVER: &str = "10.77.0.1";

static NEXT_LAB: AtomicU32 = AtomicU32::new(0);

pub fn sh(args: &[&str]) {
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
pub struct Lab {
    pub tag: String,
    namespaces: Vec<String>,
}

impl Lab {
    /// The public network (10.77.0.0/16, a bridge, the server at 10.77.0.1) and `homes`
    /// homes: home h behind router h, whose public address is 10.77.h.2, with its players at
    /// 10.78.h.2, .3 and .4.
    pub fn new(homes: usize) -> Lab {
        Lab::with_symmetric(homes, &[])
    }

    /// `new`, with the routers of the homes in `symmetric` mapping every new flow to a
    /// random port ("hard" NATs: a peer never sees the port the server saw).
    pub fn with_symmetric(homes: usize, symmetric: &[usize]) -> Lab {
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
            let masquerade = if symmetric.contains(&h) {
                "masquerade random,fully-random"
            } else {
                "masquerade"
            };
            let rules = "table ip nat {
                chain postrouting { type nat hook postrouting priority 100; oifname \"wan\" MASQ; }
            }
            table inet filter {
                chain forward { type filter hook forward priority 0; policy drop;
                    ct state established,related accept; iifname \"lan\" oifname \"wan\" accept; }
                chain input { type filter hook input priority 0; policy accept;
                    iifname \"wan\" ct state established,related accept; iifname \"wan\" drop; }
            }
            "
            .replace("MASQ", masquerade);
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

    pub fn public(&self) -> String {
        format!("{}-pub", self.tag)
    }

    pub fn home(&self, h: usize) -> String {
        format!("{}-h{h}", self.tag)
    }

    /// Home h's link to the world goes silent (its Wi-Fi drops): router h forwards
    /// nothing until [`wifi_back`](Self::wifi_back). Its mappings stay, as a router's do.
    pub fn wifi_off(&self, h: usize) {
        let router = format!("{}-r{h}", self.tag);
        let rules = "add table inet wifi
            add chain inet wifi forward { type filter hook forward priority 0; policy drop; }";
        for rule in rules.lines() {
            let mut cmd = vec!["ip", "netns", "exec", &router, "nft"];
            cmd.extend(rule.split_whitespace());
            sh(&cmd);
        }
    }

    pub fn wifi_back(&self, h: usize) {
        let router = format!("{}-r{h}", self.tag);
        sh(&[
            "ip", "netns", "exec", &router, "nft", "delete", "table", "inet", "wifi",
        ]);
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in self.namespaces.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}
