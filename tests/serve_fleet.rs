//! A fleet of `framelock serve` processes on one NATS JetStream directory, all on
//! 127.0.0.1 with Debian's `nats-server` (2.9) started by each test on ports of its own and
//! killed when the test ends, passed or failed: rooms opened on one server are listed,
//! joined and watched through another, names are unique across the fleet, a killed server's
//! rooms leave the directory, a 3-node NATS cluster loses a node, NATS restarts, a
//! malformed entry is skipped; members sign in to a NATS that asks who they are (password,
//! nkey, token, TLS with the test's own CA made by `openssl`), and an entry forged by
//! someone who can write the bucket but has no fleet key is neither listed nor followed.
//! The outages (`outages`), the web pages (`pages`), the sign-in (`sign_in`) and the
//! malformed and forged entries (`bad_entries`) have files under serve_fleet/.

#[path = "serve_fleet/bad_entries.rs"]
mod bad_entries;
mod netplay_common;
#[path = "serve_fleet/outages.rs"]
mod outages;
#[path = "serve_fleet/pages.rs"]
mod pages;
#[path = "serve_fleet/sign_in.rs"]
mod sign_in;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use netplay_common::{args, checksum, free_port, Peer};
use serde_json::Value;

/// A room's creator that plays alone while the test needs its room (a creator waiting for
/// players with nobody coming would give up after a few seconds).
const ALONE: &[&str] = &["--start-with", "1", "--frames", "3000"];

/// One `nats-server -js` on 127.0.0.1, killed on drop.
struct Nats {
    child: Child,
    port: u16,
    /// The CONNECT options `publish` signs in with.
    connect: String,
}

impl Nats {
    fn start(dir: &Path, label: &str) -> Nats {
        Nats::start_on(dir, label, free_tcp_port(), &[])
    }

    fn start_on(dir: &Path, label: &str, port: u16, extra: &[String]) -> Nats {
        let store = dir.join(format!("{label}-store"));
        let mut a = args(&["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"]);
        a.push(store.display().to_string());
        a.extend(extra.iter().cloned());
        Nats::spawn(dir, label, port, &a)
    }

    /// `nats-server -c` with a config file holding `conf` (authorization, TLS), JetStream
    /// and the listen address.
    fn with_config(dir: &Path, label: &str, conf: &str) -> Nats {
        let port = free_tcp_port();
        let store = dir.join(format!("{label}-store"));
        let file = dir.join(format!("{label}.conf"));
        let text = format!(
            "listen: \"127.0.0.1:{port}\"\njetstream {{ store_dir: {:?} }}\n{conf}\n",
            store.display().to_string()
        );
        std::fs::write(&file, text).unwrap();
        Nats::spawn(
            dir,
            label,
            port,
            &args(&["-c", &file.display().to_string()]),
        )
    }

    fn spawn(dir: &Path, label: &str, port: u16, a: &[String]) -> Nats {
        let log = std::fs::File::create(dir.join(format!("{label}.log"))).unwrap();
        let child = Command::new("nats-server")
            .args(a)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("nats-server is not installed: run .ci/setup");
        let nats = Nats {
            child,
            port,
            connect: r#"{"verbose":false}"#.into(),
        };
        let end = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < end, "nats-server did not start on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        nats
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Publishes `payload` on `subject` over NATS's text protocol, and waits for the
    /// server's PONG (so it was taken).
    fn publish(&self, subject: &str, payload: &[u8]) {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut msg = format!(
            "CONNECT {}\r\nPUB {subject} {}\r\n",
            self.connect,
            payload.len()
        )
        .into_bytes();
        msg.extend_from_slice(payload);
        msg.extend_from_slice(b"\r\nPING\r\n");
        s.write_all(&msg).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains("PONG") {
            let n = s.read(&mut buf).expect("nats-server answers");
            assert!(
                n > 0,
                "nats-server hung up: {}",
                String::from_utf8_lossy(&got)
            );
            got.extend_from_slice(&buf[..n]);
        }
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The body of `GET /metrics` from `addr`.
fn http_get(addr: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).expect("metrics listener");
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    text
}

fn free_tcp_port() -> u16 {
    loop {
        let port = free_port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// `framelock serve` as a fleet member; returns once it listens, with its address.
fn member(dir: &Path, label: &str, nats: &[String], extra: &[&str]) -> (Peer, String) {
    member_env(dir, label, nats, extra, &[])
}

/// `member` with these environment variables.
fn member_env(
    dir: &Path,
    label: &str,
    nats: &[String],
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Peer, String) {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut a = args(&["serve", "--port", &port.to_string(), "--bind", "127.0.0.1"]);
    a.push("--directory".into());
    a.extend(nats.iter().cloned());
    a.extend(args(&["--public-address", &addr, "--region", "eu"]));
    a.extend(extra.iter().map(|s| s.to_string()));
    let mut server = Peer::spawn_with_env(dir, None, label, Some(label), &a, env);
    assert!(
        server
            .wait_for_log("serve: listening on udp", Duration::from_secs(15))
            .is_some(),
        "{label} did not start\n{}",
        server.log_text()
    );
    (server, addr)
}

/// `framelock host --server ASKED --room ROOM`; returns once the room is open on `held`.
fn open_room(dir: &Path, label: &str, asked: &str, held: &str, room: &str, extra: &[&str]) -> Peer {
    let mut a = args(&[
        "host",
        "--headless",
        "--server",
        asked,
        "--room",
        room,
        "--path",
        "relayed",
    ]);
    a.extend(extra.iter().map(|s| s.to_string()));
    let mut host = Peer::spawn(dir, label, &a);
    let said = format!("your friends join with `framelock join {held} --room {room}");
    assert!(
        host.wait_for_log(&said, Duration::from_secs(20)).is_some(),
        "room {room} did not open on {held}\n{}",
        host.log_text()
    );
    host
}

/// `framelock rooms SERVER --json`, or `None` if it failed.
fn rooms(dir: &Path, server: &str) -> Option<Vec<Value>> {
    let out = netplay_common::framelock(dir)
        .args(["rooms", server, "--json"])
        .output()
        .expect("run framelock rooms");
    if !out.status.success() {
        eprintln!("rooms {server}: {}", netplay_common::text(&out));
        return None;
    }
    let v: Value = serde_json::from_slice(&out.stdout).expect("rooms --json is JSON");
    Some(v.as_array().expect("an array").clone())
}

/// The rooms `server` lists, as (name, holding server).
fn listed(dir: &Path, server: &str) -> Vec<(String, String)> {
    rooms(dir, server)
        .unwrap_or_default()
        .iter()
        .map(|r| {
            (
                r["room"].as_str().unwrap_or_default().to_string(),
                r["server"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Polls `cond` every 200 ms until it holds; the time it took, or `None` after `limit`.
fn within(limit: Duration, mut cond: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    None
}

fn has(list: &[(String, String)], room: &str, server: &str) -> bool {
    list.iter().any(|(r, s)| r == room && s == server)
}

/// Asserts that `via` lists `room` on `held` within 10 s (else shows the servers' logs).
fn assert_listed(dir: &Path, via: &str, room: &str, held: &str, servers: &[&Peer]) {
    let took = within(Duration::from_secs(10), || {
        has(&listed(dir, via), room, held)
    });
    let logs: Vec<String> = servers.iter().map(|p| p.log_text()).collect();
    assert!(
        took.is_some(),
        "{:?}\n{}",
        listed(dir, via),
        logs.join("\n")
    );
}

/// Writes `text` to `DIR/name` and returns its path as a string.
fn write_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_room_opened_on_one_server_is_listed_joined_and_watched_through_another() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nats = Nats::start(d, "nats");
    let metrics = format!("127.0.0.1:{}", free_tcp_port());
    let (mut a, a_addr) = member(d, "server-a", &[nats.url()], &["--metrics", &metrics]);
    let (mut b, b_addr) = member(d, "server-b", &[nats.url()], &["--max-rooms", "1"]);
    let frames = ["--frames", "1500"];
    let mut host = open_room(
        d,
        "host",
        &a_addr,
        &a_addr,
        "friday",
        &[&frames[..], &["--bot", "1"]].concat(),
    );
    let took = within(Duration::from_secs(5), || {
        has(&listed(d, &b_addr), "friday", &a_addr)
    });
    assert!(
        took.is_some(),
        "B never listed A's room: {:?}",
        rooms(d, &b_addr)
    );
    let r = rooms(d, &b_addr).unwrap();
    assert_eq!(r[0]["region"], "eu", "{r:?}");
    // The same name on B is refused: A holds it.
    let mut twin = Peer::spawn(
        d,
        "twin",
        &args(&[
            "host",
            "--headless",
            "--server",
            &b_addr,
            "--room",
            "friday",
        ]),
    );
    assert!(!twin.wait(Duration::from_secs(20)).success());
    let said = format!("room friday exists already (on {a_addr})");
    assert!(twin.log_text().contains(&said), "{}", twin.log_text());
    // A join and a spectate asked of B play on A.
    let mut bob = Peer::spawn(
        d,
        "bob",
        &args(
            &[
                &["join", &b_addr, "--room", "friday", "--headless"][..],
                &frames[..],
                &["--bot", "2"],
            ]
            .concat(),
        ),
    );
    assert!(
        bob.wait_for_log("netplay: in session", Duration::from_secs(20))
            .is_some(),
        "{}",
        bob.log_text()
    );
    let mut eve = Peer::spawn(
        d,
        "eve",
        &args(
            &[
                &["spectate", &b_addr, "--room", "friday", "--headless"][..],
                &frames[..],
            ]
            .concat(),
        ),
    );
    // B full (its one room): a new room asked of B opens on A, and says so.
    let mut solo = open_room(d, "solo", &b_addr, &b_addr, "solo", ALONE);
    let servers_known = within(Duration::from_secs(10), || {
        let out = netplay_common::framelock(d)
            .args(["servers", &b_addr, "--json"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        v.as_array().is_some_and(|s| s.len() == 2)
            && v[0]["rtt_ms"].as_f64().is_some()
            && v[1]["rooms"].as_u64() == Some(1)
    });
    assert!(servers_known.is_some(), "servers never listed both");
    let mut sent = open_room(d, "sent", &b_addr, &a_addr, "sent", ALONE);
    for p in [&mut bob, &mut eve, &mut host] {
        p.wait_ok(Duration::from_secs(55));
    }
    let (h, j, e) = (host.read_stats(), bob.read_stats(), eve.read_stats());
    assert_eq!(h["frames"].as_u64(), Some(1500));
    assert_eq!(checksum(&h), checksum(&j), "host and joiner differ");
    assert_eq!(checksum(&e), checksum(&h), "the spectator differs");
    assert_eq!(e["spectator"], true);
    assert!(bob
        .log_text()
        .contains(&format!("room friday is on {a_addr}")));
    let a_log = a.log_text();
    assert!(
        a_log.contains("room friday: the game starts with 2 players"),
        "{a_log}"
    );
    assert!(a_log.contains("room sent: opened by"), "{a_log}");
    assert!(!b.log_text().contains("room friday: opened"));
    assert!(b.log_text().contains("room solo: opened by"));
    // A's metrics: two rooms (friday ended, sent plays), its datagrams and answer times.
    // (Updated once a second.)
    within(Duration::from_secs(3), || {
        http_get(&metrics).contains("framelock_rooms 1\n")
    });
    let text = http_get(&metrics);
    for line in [
        "framelock_rooms 1",
        "framelock_directory_errors_total 0",
        "framelock_dropped_total{reason=\"garbage\"} 0",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    let count = text
        .lines()
        .find_map(|l| l.strip_prefix("framelock_answer_seconds_count "))
        .and_then(|n| n.trim().parse::<u64>().ok());
    assert!(count.is_some_and(|n| n > 1000), "{text}");
    solo.kill();
    sent.kill();
    // A room that closes leaves the directory.
    let gone = within(Duration::from_secs(10), || {
        !listed(d, &b_addr).iter().any(|(r, _)| r == "friday")
    });
    assert!(gone.is_some(), "{:?}", listed(d, &b_addr));
    a.interrupt();
    b.interrupt();
    a.wait_ok(Duration::from_secs(10));
    b.wait_ok(Duration::from_secs(10));
}
