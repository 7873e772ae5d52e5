//! The NAT lab: network namespaces for a public network and homes, each behind its own
//! router (nftables masquerade, a forward policy that drops unsolicited inbound traffic).
//! The public network is a core router with a link of its own to each home router and
//! `framelock serve` at [`SERVER`] on it, so that one router's datagram to another crosses
//! a hop between them, as on the internet: a punch with a TTL of 2 leaves its own router
//! and dies in the core, never reaching the other router (which, with
//! [`Router::wan_input`], would take it itself and keep a conntrack entry for it). Needs
//! root, `ip` and `nft` (`.ci/setup` installs them); every namespace is removed when the
//! [`Lab`] is dropped, also when a test fails. Traffic stays inside the namespaces it made. Used by `tests/nat_lab.rs`,
//! `tests/nat_portmap.rs` and the `direct_paths` and `portmap` benchmarks.
//!
//! A router may run Debian's own miniupnpd (UPnP IGD, NAT-PMP and PCP, the nftables build)
//! ([`Router::upnp`]). Debian 12's miniupnpd 2.3.1 maps nothing while its outside address
//! is a private one, as every lab address is, and refuses a private `ext_ip`; what it
//! accepts is an outside address learnt by STUN. So the public network runs a small STUN
//! responder ([`SERVER`]:3478, a thread of the test in that namespace), and each such
//! router asks it at start (`ext_perform_stun`): it learns its own WAN address, as a
//! router wired straight to the internet would have it.
#![allow(dead_code)] // each crate uses a different subset

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// What a home's router is.
#[derive(Clone, Debug, Default)]
pub struct Router {
    /// Maps every new flow to a random port ("hard" NAT).
    pub symmetric: bool,
    /// Runs miniupnpd with these permission rules (`allow ...`/`deny ...` lines). Not
    /// with `symmetric`: Debian's miniupnpd 2.3.1 adds no mapping at all beside a NAT rule
    /// with flags (`random`, `fully-random`), which its nftables backend cannot read
    /// (fixed upstream in a later version: "netfilter_nft: Fixes parse_rule_nat()").
    pub upnp: Option<Vec<String>>,
    /// Takes datagrams addressed to itself on its WAN side (keeping their conntrack
    /// entries), as many home routers do.
    pub wan_input: bool,
    /// Forwards every new inbound UDP flow on its WAN address to its home's first machine
    /// (10.78.h.2), same port: it filters nothing ("full cone", endpoint-independent
    /// filtering), so a datagram from a port the home never sent to gets in.
    pub full_cone: bool,
}

impl Router {
    /// A router whose miniupnpd maps ports 1024-65535 for its home.
    pub fn upnp(h: usize) -> Router {
        Router {
            upnp: Some(vec![format!("allow 1024-65535 10.78.{h}.0/24 1024-65535")]),
            ..Router::default()
        }
    }

    /// A router whose miniupnpd answers but denies every mapping.
    pub fn upnp_denying() -> Router {
        Router {
            upnp: Some(vec!["deny 0-65535 0.0.0.0/0 0-65535".into()]),
            ..Router::default()
        }
    }
}

/// The namespaces of one test (and the daemons in them); removed on drop.
pub struct Lab {
    pub tag: String,
    namespaces: Vec<String>,
    daemons: Vec<(Child, PathBuf)>,
    stun: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
}

impl Lab {
    /// The public network (a core router, the server at 10.77.0.1) and `homes` homes: home h
    /// behind router h, whose public address is 10.77.h.2 (on 10.77.h.0/24, the core at
    /// .1), with its players at 10.78.h.2, .3 and .4.
    pub fn new(homes: usize) -> Lab {
        Lab::with_symmetric(homes, &[])
    }

    /// `new`, with the routers of the homes in `symmetric` mapping every new flow to a
    /// random port ("hard" NATs: a peer never sees the port the server saw).
    pub fn with_symmetric(homes: usize, symmetric: &[usize]) -> Lab {
        let routers: Vec<Router> = (1..=homes)
            .map(|h| Router {
                symmetric: symmetric.contains(&h),
                ..Router::default()
            })
            .collect();
        Lab::with_routers(&routers)
    }

    /// One home per router, router h (from 1) as `routers[h - 1]` says.
    pub fn with_routers(routers: &[Router]) -> Lab {
        let homes = routers.len();
        let id = NEXT_LAB.fetch_add(1, Ordering::Relaxed);
        let tag = format!("fl{}x{id}", std::process::id() % 100_000);
        let mut lab = Lab {
            tag: tag.clone(),
            namespaces: Vec::new(),
            daemons: Vec::new(),
            stun: None,
        };
        let public = lab.ns("pub");
        let run = |cmd: &str| sh(&cmd.split_whitespace().collect::<Vec<_>>());
        // The server's address on the core's loopback: it is one hop from every router.
        run(&format!("ip -n {public} addr add {SERVER}/32 dev lo"));
        run(&format!(
            "ip netns exec {public} sysctl -qw net.ipv4.ip_forward=1"
        ));
        for h in 1..=homes {
            let router = lab.ns(&format!("r{h}"));
            let home = lab.ns(&format!("h{h}"));
            // Router h's "wan" link to the core, 10.77.h.0/24, the router at 10.77.h.2.
            let (p, w) = (format!("{tag}p{h}"), format!("{tag}w{h}"));
            run(&format!(
                "ip link add {p} netns {public} type veth peer name {w} netns {router}"
            ));
            run(&format!("ip -n {public} addr add 10.77.{h}.1/24 dev {p}"));
            run(&format!("ip -n {public} link set {p} up"));
            // What the server sends leaves from its own address, not the link's.
            run(&format!(
                "ip -n {public} route replace 10.77.{h}.0/24 dev {p} src {SERVER}"
            ));
            run(&format!("ip -n {router} link set {w} name wan"));
            run(&format!("ip -n {router} addr add 10.77.{h}.2/24 dev wan"));
            run(&format!("ip -n {router} link set wan up"));
            run(&format!("ip -n {router} route add default via 10.77.{h}.1"));
            // Its "lan" bridge at 10.78.h.1, the home's machines behind it.
            let (l, e) = (format!("{tag}l{h}"), format!("{tag}e{h}"));
            run(&format!("ip -n {router} link add lan type bridge"));
            run(&format!(
                "ip link add {l} netns {router} type veth peer name {e} netns {home}"
            ));
            run(&format!("ip -n {router} link set {l} master lan"));
            run(&format!("ip -n {router} link set {l} up"));
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
            // A home router: masquerade outbound; inbound only as replies (and what
            // miniupnpd forwards, in its own chains).
            let spec = &routers[h - 1];
            let masquerade = if spec.symmetric {
                "masquerade random,fully-random"
            } else {
                "masquerade"
            };
            let wan_input = if spec.wan_input {
                ""
            } else {
                "iifname \"wan\" drop;"
            };
            let (cone_in, cone_pass) = if spec.full_cone {
                (
                    format!("iifname \"wan\" udp dport 1024-65535 dnat to 10.78.{h}.2;"),
                    "ct status dnat accept;",
                )
            } else {
                (String::new(), "")
            };
            let rules = "table ip nat {
                chain postrouting { type nat hook postrouting priority 100; oifname \"wan\" MASQ; }
                chain prerouting { type nat hook prerouting priority -90; CONE_IN }
            }
            table inet filter {
                chain forward { type filter hook forward priority 0; policy drop;
                    jump miniupnpd;
                    ct state established,related accept; iifname \"lan\" oifname \"wan\" accept;
                    CONE_PASS }
                chain input { type filter hook input priority 0; policy accept;
                    iifname \"wan\" ct state established,related accept; WAN_INPUT }
                chain miniupnpd { }
                chain prerouting { type nat hook prerouting priority -100; policy accept;
                    jump prerouting_miniupnpd; }
                chain postrouting { type nat hook postrouting priority 99; policy accept;
                    jump postrouting_miniupnpd; }
                chain prerouting_miniupnpd { }
                chain postrouting_miniupnpd { }
            }
            "
            .replace("MASQ", masquerade)
            .replace("WAN_INPUT", wan_input)
            .replace("CONE_IN", &cone_in)
            .replace("CONE_PASS", cone_pass);
            let file = std::env::temp_dir().join(format!("{tag}-{h}.nft"));
            std::fs::write(&file, rules).unwrap();
            run(&format!("ip netns exec {router} nft -f {}", file.display()));
            let _ = std::fs::remove_file(file);
        }
        for (i, spec) in routers.iter().enumerate() {
            assert!(!(spec.symmetric && spec.upnp.is_some()), "see Router::upnp");
            if let Some(rules) = &spec.upnp {
                lab.start_miniupnpd(i + 1, rules);
            }
        }
        lab
    }

    /// Starts miniupnpd in router h with `rules`, once the STUN responder runs, and waits
    /// until it listens.
    fn start_miniupnpd(&mut self, h: usize, rules: &[String]) {
        if self.stun.is_none() {
            self.stun = Some(stun_responder(&self.public()));
        }
        let router = format!("{}-r{h}", self.tag);
        let dir = std::env::temp_dir();
        let conf = dir.join(format!("{}-r{h}-miniupnpd.conf", self.tag));
        let log = dir.join(format!("{}-r{h}-miniupnpd.log", self.tag));
        let text = format!(
            "ext_ifname=wan\nlistening_ip=lan\nenable_natpmp=yes\nenable_upnp=yes\n\
             ext_perform_stun=yes\next_stun_host={SERVER}\next_stun_port=3478\n\
             secure_mode=yes\nsystem_uptime=yes\nmin_lifetime=120\nmax_lifetime=86400\n\
             uuid=4f170108-e908-4108-b253-64340c66be{h:02}\n{}\n",
            rules.join("\n")
        );
        std::fs::write(&conf, text).unwrap();
        let pid = dir.join(format!("{}-r{h}-miniupnpd.pid", self.tag));
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &router, "miniupnpd", "-f"])
            .arg(&conf)
            .args(["-d", "-P"])
            .arg(&pid)
            .stdout(Stdio::null())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("miniupnpd: {e} (.ci/setup installs miniupnpd)"));
        self.daemons.push((child, log.clone()));
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("Listening for NAT-PMP/PCP traffic") {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "miniupnpd in {router} did not start:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What router h's miniupnpd logged.
    pub fn miniupnpd_log(&self, h: usize) -> String {
        let log = std::env::temp_dir().join(format!("{}-r{h}-miniupnpd.log", self.tag));
        std::fs::read_to_string(log).unwrap_or_default()
    }

    /// The port forwards router h holds now (miniupnpd's DNAT rules), as "PORT -> ADDR:PORT".
    pub fn forwards(&self, h: usize) -> Vec<String> {
        let router = format!("{}-r{h}", self.tag);
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &router,
                "nft",
                "list",
                "chain",
                "inet",
                "filter",
                "prerouting_miniupnpd",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let (_, rest) = l.split_once("dport ")?;
                let (port, rest) = rest.split_once(' ')?;
                let to = rest.rsplit(' ').next()?;
                Some(format!("{port} -> {to}"))
            })
            .collect()
    }

    /// A second machine in home h, at 10.78.h.5, on the router's LAN beside the first.
    pub fn second_machine(&mut self, h: usize) -> String {
        let router = format!("{}-r{h}", self.tag);
        let ns = self.ns(&format!("h{h}b"));
        let (l, e) = (format!("{}m{h}", self.tag), format!("{}n{h}", self.tag));
        let run = |cmd: &str| sh(&cmd.split_whitespace().collect::<Vec<_>>());
        run(&format!(
            "ip link add {l} netns {router} type veth peer name {e} netns {ns}"
        ));
        run(&format!("ip -n {router} link set {l} master lan"));
        run(&format!("ip -n {router} link set {l} up"));
        run(&format!("ip -n {ns} link set {e} name eth0"));
        run(&format!("ip -n {ns} addr add 10.78.{h}.5/24 dev eth0"));
        run(&format!("ip -n {ns} link set eth0 up"));
        run(&format!("ip -n {ns} route add default via 10.78.{h}.1"));
        ns
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

/// A STUN binding responder at [`SERVER`]:3478 in namespace `public`, on a thread that
/// enters it: it answers each binding request with the address it came from (no change of
/// address or port, which miniupnpd's check does not need).
fn stun_responder(public: &str) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let path = format!("/var/run/netns/{public}");
    let flag = stop.clone();
    let thread = std::thread::spawn(move || {
        use std::os::fd::AsRawFd;
        let ns = std::fs::File::open(&path).expect("netns");
        // SAFETY: setns on this thread only, with an open namespace file.
        let r = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns into {path}");
        let socket = std::net::UdpSocket::bind((SERVER, 3478)).expect("stun socket");
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        ready_tx.send(()).unwrap();
        let mut buf = [0u8; 1500];
        while !flag.load(Ordering::Relaxed) {
            let Ok((n, from)) = socket.recv_from(&mut buf) else {
                continue;
            };
            if n < 20 || buf[..2] != [0, 1] {
                continue;
            }
            let std::net::SocketAddr::V4(v4) = from else {
                continue;
            };
            let ip = u32::from(*v4.ip());
            let mut a = vec![1, 1, 0, 12];
            a.extend_from_slice(&buf[4..20]);
            // XOR-MAPPED-ADDRESS, IPv4.
            a.extend_from_slice(&[0, 0x20, 0, 8, 0, 1]);
            a.extend_from_slice(&(v4.port() ^ 0x2112).to_be_bytes());
            a.extend_from_slice(&(ip ^ 0x2112_a442).to_be_bytes());
            let _ = socket.send_to(&a, from);
        }
    });
    ready_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("the STUN responder started");
    (stop, thread)
}

impl Drop for Lab {
    fn drop(&mut self) {
        for (child, log) in &mut self.daemons {
            // SIGTERM: miniupnpd removes its rules as it exits.
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            let until = Instant::now() + Duration::from_secs(3);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_file(log);
        }
        if let Some((stop, thread)) = self.stun.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = thread.join();
        }
        for ns in self.namespaces.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}
