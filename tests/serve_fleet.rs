//! A fleet of `framelock serve` processes on one NATS JetStream directory, all on
//! 127.0.0.1 with Debian's `nats-server` (2.9) started by each test on ports of its own and
//! killed when the test ends, passed or failed: rooms opened on one server are listed,
//! joined and watched through another, names are unique across the fleet, a killed server's
//! rooms leave the directory, a 3-node NATS cluster loses a node, NATS restarts, a
//! malformed entry is skipped; members sign in to a NATS that asks who they are (password,
//! nkey, token, TLS with the test's own CA made by `openssl`), and an entry forged by
//! someone who can write the bucket but has no fleet key is neither listed nor followed.

mod netplay_common;

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

#[test]
fn a_killed_server_leaves_the_directory_within_30_s() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nats = Nats::start(d, "nats");
    let (mut a, a_addr) = member(d, "server-a", &[nats.url()], &[]);
    let (b, b_addr) = member(d, "server-b", &[nats.url()], &[]);
    let _on_a = open_room(d, "host-a", &a_addr, &a_addr, "on-a", ALONE);
    let on_b = open_room(d, "host-b", &b_addr, &b_addr, "on-b", ALONE);
    let both = within(Duration::from_secs(5), || {
        let l = listed(d, &b_addr);
        has(&l, "on-a", &a_addr) && has(&l, "on-b", &b_addr)
    });
    assert!(both.is_some(), "{:?}", listed(d, &b_addr));
    a.kill();
    let gone = within(Duration::from_secs(30), || {
        !listed(d, &b_addr).iter().any(|(r, _)| r == "on-a")
    });
    assert!(gone.is_some(), "A's room still listed after 30 s");
    eprintln!("a killed server's rooms left the directory in {gone:?}");
    assert!(
        has(&listed(d, &b_addr), "on-b", &b_addr),
        "{:?}\n{}\n{}",
        rooms(d, &b_addr),
        b.log_text(),
        on_b.log_text()
    );
}

#[test]
fn the_directory_keeps_answering_when_one_node_of_a_three_node_cluster_dies() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ports, routes): (Vec<u16>, Vec<u16>) =
        (0..3).map(|_| (free_tcp_port(), free_tcp_port())).unzip();
    let route_urls = routes
        .iter()
        .map(|p| format!("nats://127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut nodes: Vec<Nats> = (0..3)
        .map(|i| {
            let extra = args(&[
                "--server_name",
                &format!("n{i}"),
                "--cluster_name",
                "fleet",
                "--cluster",
                &format!("nats://127.0.0.1:{}", routes[i]),
                "--routes",
                &route_urls,
            ]);
            Nats::start_on(d, &format!("node{i}"), ports[i], &extra)
        })
        .collect();
    let urls: Vec<String> = nodes.iter().map(Nats::url).collect();
    let (a, a_addr) = member(d, "server-a", &urls, &[]);
    let (b, b_addr) = member(d, "server-b", &urls, &[]);
    // The cluster elects its JetStream leader first: the bucket is made once it has one.
    let _first = open_room(d, "first", &a_addr, &a_addr, "first", ALONE);
    let listed_first = within(Duration::from_secs(20), || {
        has(&listed(d, &b_addr), "first", &a_addr)
    });
    assert!(
        listed_first.is_some(),
        "{:?}\n{}\n{}",
        listed(d, &b_addr),
        a.log_text(),
        b.log_text()
    );
    nodes[0].kill();
    let _second = open_room(d, "second", &b_addr, &b_addr, "second", ALONE);
    // The cluster elects new leaders, and a watch stuck on the dead node is made again
    // (`directory::WATCH_STALLED`).
    let listed_second = within(Duration::from_secs(40), || {
        let l = listed(d, &a_addr);
        has(&l, "second", &b_addr) && has(&l, "first", &a_addr)
    });
    assert!(
        listed_second.is_some(),
        "after a node died: {:?}",
        listed(d, &a_addr)
    );
}

#[test]
fn rooms_play_on_while_nats_is_down_and_reappear_when_it_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_tcp_port();
    let mut nats = Nats::start_on(d, "nats", port, &[]);
    let (mut a, a_addr) = member(d, "server-a", &[nats.url()], &[]);
    let (_b, b_addr) = member(d, "server-b", &[nats.url()], &[]);
    let frames = ["--frames", "1800"];
    let mut host = open_room(
        d,
        "host",
        &a_addr,
        &a_addr,
        "friday",
        &[&frames[..], &["--bot", "1"]].concat(),
    );
    let mut bob = Peer::spawn(
        d,
        "bob",
        &args(
            &[
                &["join", &a_addr, "--room", "friday", "--headless"][..],
                &frames[..],
                &["--bot", "2"],
            ]
            .concat(),
        ),
    );
    assert!(within(Duration::from_secs(5), || has(
        &listed(d, &b_addr),
        "friday",
        &a_addr
    ))
    .is_some());
    nats.kill();
    assert!(
        a.wait_for_log("directory: unreachable", Duration::from_secs(15))
            .is_some(),
        "{}",
        a.log_text()
    );
    // A still lists its own room.
    assert!(has(&listed(d, &a_addr), "friday", &a_addr));
    // NATS back, empty (a new store): A writes its room back.
    std::fs::remove_dir_all(d.join("nats-store")).ok();
    let _nats = Nats::start_on(d, "nats-again", port, &[]);
    let back = within(Duration::from_secs(20), || {
        has(&listed(d, &b_addr), "friday", &a_addr)
    });
    assert!(back.is_some(), "{}", a.log_text());
    eprintln!("the room was listed again {back:?} after NATS restarted");
    bob.wait_ok(Duration::from_secs(50));
    host.wait_ok(Duration::from_secs(50));
    let (h, j) = (host.read_stats(), bob.read_stats());
    assert_eq!(h["frames"].as_u64(), Some(1800));
    assert_eq!(checksum(&h), checksum(&j));
    assert!(a.log_text().contains("directory: reachable again"));
}

#[test]
fn a_malformed_entry_is_skipped_and_logged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nats = Nats::start(d, "nats");
    let (mut a, a_addr) = member(d, "server-a", &[nats.url()], &[]);
    // The bucket exists once A has written its heartbeat.
    std::thread::sleep(Duration::from_secs(2));
    nats.publish("$KV.framelock-rooms.room.junk", b"not json");
    let bad_server = br#"{"server":"nowhere","region":"eu","game":"","core":"x","mode":"strict","seats":2,"players":1,"spectators":0,"password":false,"state":"lobby","opened":0}"#;
    nats.publish("$KV.framelock-rooms.room.worse", bad_server);
    for key in [
        "\"room.junk\"",
        "\"room.worse\": server \"nowhere\" is not ADDR:PORT",
    ] {
        let said = format!("directory: skipped malformed entry {key}");
        assert!(
            a.wait_for_log(&said, Duration::from_secs(10)).is_some(),
            "{said}\n{}",
            a.log_text()
        );
    }
    let _host = open_room(d, "host", &a_addr, &a_addr, "fine", &[]);
    assert_eq!(
        listed(d, &a_addr),
        vec![("fine".to_string(), a_addr.clone())]
    );
    assert!(
        a.try_status().is_none(),
        "the server stopped\n{}",
        a.log_text()
    );
}

#[test]
fn a_bad_directory_url_is_refused_and_an_unreachable_one_leaves_rooms_local() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port().to_string();
    let public = format!("127.0.0.1:{port}");
    let serve = |url: &str| {
        let a = args(&["serve", "--port", &port, "--bind", "127.0.0.1"]);
        let fleet = args(&["--directory", url, "--public-address", &public]);
        [a, fleet].concat()
    };
    let out = netplay_common::framelock(d)
        .args(serve("http://127.0.0.1:4222"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = netplay_common::text(&out);
    assert!(
        text.contains("--directory \"http://127.0.0.1:4222\"") && text.contains("scheme"),
        "{text}"
    );
    // Nothing listens there: the server says so, and serves its rooms alone.
    let nowhere = format!("nats://127.0.0.1:{}", free_tcp_port());
    let mut server = Peer::spawn(d, "server", &serve(&nowhere));
    assert!(
        server
            .wait_for_log("directory: unreachable", Duration::from_secs(15))
            .is_some(),
        "{}",
        server.log_text()
    );
    let _host = open_room(d, "host", &public, &public, "alone", ALONE);
    assert_eq!(
        listed(d, &public),
        vec![("alone".to_string(), public.clone())]
    );
    assert!(server.log_text().contains("room alone: opens here alone"));
}

#[test]
fn a_server_restarted_at_its_address_drops_the_rooms_of_its_earlier_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nats = Nats::start(d, "nats");
    let (mut a, a_addr) = member(d, "server-a", &[nats.url()], &[]);
    let (_b, b_addr) = member(d, "server-b", &[nats.url()], &[]);
    let mut host = open_room(d, "host", &a_addr, &a_addr, "before", ALONE);
    assert!(within(Duration::from_secs(5), || has(
        &listed(d, &b_addr),
        "before",
        &a_addr
    ))
    .is_some());
    a.kill();
    host.kill();
    // The same address again, at once: its heartbeat never stops, its old room must go.
    let port = a_addr.rsplit(':').next().unwrap();
    let mut again = args(&[
        "serve",
        "--port",
        port,
        "--bind",
        "127.0.0.1",
        "--directory",
    ]);
    again.extend(args(&[
        &nats.url(),
        "--public-address",
        &a_addr,
        "--region",
        "eu",
    ]));
    let mut a2 = Peer::spawn(d, "server-a2", &again);
    let gone = within(Duration::from_secs(8), || {
        !listed(d, &b_addr).iter().any(|(r, _)| r == "before")
    });
    assert!(gone.is_some(), "{}", a2.log_text());
    assert!(a2
        .wait_for_log("left by an earlier run here", Duration::from_secs(1))
        .is_some());
}

/// The body of `GET path` from `addr`, if it answered 200.
fn page_bytes(addr: &str, path: &str) -> Option<Vec<u8>> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    raw.starts_with(b"HTTP/1.1 200")
        .then(|| raw[split + 4..].to_vec())
}

fn page(addr: &str, path: &str) -> Option<String> {
    page_bytes(addr, path).map(|b| String::from_utf8_lossy(&b).into_owned())
}

#[test]
fn every_members_page_shows_the_fleets_rooms_and_any_member_serves_any_replay() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nats = Nats::start(d, "nats");
    let urls = [nats.url()];
    let (http_a, http_b) = (
        format!("127.0.0.1:{}", free_tcp_port()),
        format!("127.0.0.1:{}", free_tcp_port()),
    );
    let (arch_a, arch_b) = (d.join("archive-a"), d.join("archive-b"));
    let (arch_a_s, arch_b_s) = (arch_a.display().to_string(), arch_b.display().to_string());
    let (mut a, addr_a) = member(d, "a", &urls, &["--http", &http_a, "--archive", &arch_a_s]);
    let (_b, addr_b) = member(d, "b", &urls, &["--http", &http_b, "--archive", &arch_b_s]);

    // A match played to its end on member a: a keeps its replay, in the fleet's store too.
    let mut host = open_room(
        d,
        "host",
        &addr_a,
        &addr_a,
        "match",
        &["--frames", "180", "--bot", "1"],
    );
    let mut a_args = args(&["join", &addr_a, "--room", "match", "--headless"]);
    a_args.extend(args(&["--frames", "180", "--bot", "2", "--no-record"]));
    let mut joiner = Peer::spawn(d, "joiner", &a_args);
    joiner.wait_ok(Duration::from_secs(40));
    host.wait_ok(Duration::from_secs(20));
    a.expect_log("archive: kept room match's replay", Duration::from_secs(15));
    let id = std::fs::read_dir(&arch_a)
        .unwrap()
        .filter_map(|e| e.ok())
        .find_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".flr").map(String::from)
        })
        .expect("a keeps the replay");

    // A room open on each member: both pages show both, and the replay.
    let _on_a = open_room(d, "on-a", &addr_a, &addr_a, "on-a", ALONE);
    let _on_b = open_room(d, "on-b", &addr_b, &addr_b, "on-b", ALONE);
    for http in [&http_a, &http_b] {
        let shown = within(Duration::from_secs(20), || {
            page(http, "/").is_some_and(|p| {
                p.contains("id=\"room-on-a\"")
                    && p.contains("id=\"room-on-b\"")
                    && p.contains(&format!("id=\"replay-{id}\""))
                    && p.contains(&addr_a)
                    && p.contains(&addr_b)
            })
        });
        assert!(
            shown.is_some(),
            "{http} does not show the fleet\n{}",
            page(http, "/").unwrap_or_default()
        );
    }
    // The other member's room is joined where it is held: its invite link names that member.
    let p = page(&http_b, "/").unwrap();
    assert!(
        p.contains(&format!("href=\"framelock://{addr_a}/on-a\"")),
        "{p}"
    );

    // Member b serves a's replay, from the fleet's store: it verifies.
    let out = netplay_common::framelock(d)
        .args(["replay", &format!("framelock://{addr_b}/replay/{id}")])
        .args(["--headless", "--fast", "--verify"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", netplay_common::text(&out));
    let kept_b = std::fs::read_dir(&arch_b).unwrap().count();
    assert_eq!(
        kept_b, 0,
        "b kept nothing itself: the replay came from the fleet's store"
    );
    let download = page_bytes(&http_b, &format!("/replay/{id}.flr")).unwrap_or_default();
    assert_eq!(
        download,
        std::fs::read(arch_a.join(format!("{id}.flr"))).unwrap(),
        "b's page serves it too"
    );
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

/// A join asked of `via` for `room` on `held`, both bots playing 600 frames: the joiner is
/// sent to `held` and plays there with the room's host.
fn join_through(dir: &Path, via: &str, held: &str, room: &str) {
    let frames = ["--frames", "600"];
    let mut host = open_room(
        dir,
        &format!("host-{room}"),
        held,
        held,
        room,
        &[&frames[..], &["--bot", "1"]].concat(),
    );
    let mut bob = Peer::spawn(
        dir,
        &format!("bob-{room}"),
        &args(
            &[
                &["join", via, "--room", room, "--headless"][..],
                &frames[..],
                &["--bot", "2"],
            ]
            .concat(),
        ),
    );
    bob.wait_ok(Duration::from_secs(50));
    host.wait_ok(Duration::from_secs(20));
    assert!(
        bob.log_text()
            .contains(&format!("room {room} is on {held}")),
        "{}",
        bob.log_text()
    );
    assert_eq!(checksum(&host.read_stats()), checksum(&bob.read_stats()));
}

#[test]
fn members_sign_in_with_a_password_or_an_nkey_and_refused_credentials_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nkey = nkeys::KeyPair::new_user();
    let conf = format!(
        "authorization {{ users = [ {{ user: fleet, password: \"right-horse-battery\" }}, \
         {{ nkey: {} }} ] }}",
        nkey.public_key()
    );
    let nats = Nats::with_config(d, "nats", &conf);
    let password = write_file(d, "password", "right-horse-battery\n");
    let seed = write_file(d, "seed", &nkey.seed().unwrap());
    let (mut a, a_addr) = member(
        d,
        "server-a",
        &[nats.url()],
        &[
            "--directory-user",
            "fleet",
            "--directory-password-file",
            &password,
        ],
    );
    let (b, b_addr) = member(d, "server-b", &[nats.url()], &["--directory-nkey", &seed]);
    assert!(a.log_text().contains("as user fleet"), "{}", a.log_text());
    assert!(b.log_text().contains("with an nkey"), "{}", b.log_text());
    // A room on A is listed by B, and a joiner who asks B is sent to A.
    let _listed = open_room(d, "listed", &a_addr, &a_addr, "listed", ALONE);
    assert_listed(d, &b_addr, "listed", &a_addr, &[&a, &b]);
    join_through(d, &b_addr, &a_addr, "redirected");

    // A wrong password: NATS's refusal is named as such, and the password never logged.
    let wrong = write_file(d, "wrong", "wrong-horse-staple\n");
    let (mut c, _) = member(
        d,
        "server-c",
        &[nats.url()],
        &[
            "--directory-user",
            "fleet",
            "--directory-password-file",
            &wrong,
        ],
    );
    assert!(
        c.wait_for_log(
            "directory: NATS refused our credentials",
            Duration::from_secs(10)
        )
        .is_some(),
        "{}",
        c.log_text()
    );
    let log = c.log_text();
    assert!(
        log.contains("as user fleet") && log.contains("uthorization"),
        "{log}"
    );
    assert!(!log.contains("directory: unreachable"), "{log}");
    assert!(
        !log.contains("wrong-horse-staple"),
        "the password was logged: {log}"
    );
    assert!(!a.log_text().contains("right-horse-battery"));
    // The password changed on NATS's side (its config reloaded): A, connected all along,
    // is refused when it reconnects, and says so.
    let conf_file = d.join("nats.conf");
    let conf = std::fs::read_to_string(&conf_file).unwrap();
    std::fs::write(
        &conf_file,
        conf.replace("right-horse-battery", "next-horse"),
    )
    .unwrap();
    let pid = nats.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap()
        .success());
    assert!(
        a.wait_for_log(
            "directory: NATS refused our credentials",
            Duration::from_secs(15)
        )
        .is_some(),
        "{}",
        a.log_text()
    );

    // A credentials file that is not there: serve does not start, and names it.
    let missing = d.join("no-such-seed").display().to_string();
    let port = free_port().to_string();
    let public = format!("127.0.0.1:{port}");
    for (flag, file, said) in [
        ("--directory-nkey", missing.as_str(), "cannot read it"),
        (
            "--directory-nkey",
            password.as_str(),
            "not an nkey user seed",
        ),
        ("--directory-key", missing.as_str(), "cannot read it"),
        ("--directory-key", password.as_str(), "holds 19 bytes"),
    ] {
        let out = netplay_common::framelock(d)
            .args([
                "serve",
                "--port",
                &port,
                "--bind",
                "127.0.0.1",
                "--directory",
            ])
            .args([nats.url(), "--public-address".into(), public.clone()])
            .args([flag, file])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let text = netplay_common::text(&out);
        assert!(text.contains(&format!("{flag} {file}: {said}")), "{text}");
        assert!(!text.contains("right-horse-battery"), "{text}");
    }
}

/// A CA and a certificate for 127.0.0.1 signed by it, made with `openssl` in `dir`:
/// (ca.pem, server.pem, server.key).
fn make_certs(dir: &Path) -> (String, String, String) {
    let run = |a: &[&str]| {
        let out = Command::new("openssl")
            .args(a)
            .current_dir(dir)
            .output()
            .expect("openssl is not installed: run .ci/setup");
        assert!(
            out.status.success(),
            "openssl {a:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    run(&[
        &["req", "-x509"][..],
        &ec,
        &[
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=framelock test CA",
        ],
    ]
    .concat());
    run(&[
        &["req"][..],
        &ec,
        &[
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    ]
    .concat());
    std::fs::write(
        dir.join("san.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    let p = |f: &str| dir.join(f).display().to_string();
    (p("ca.pem"), p("server.pem"), p("server.key"))
}

#[test]
fn members_sign_in_with_a_token_over_tls_trusting_the_fleets_ca() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ca, cert, key) = make_certs(d);
    let conf = format!(
        "tls {{ cert_file: {cert:?}, key_file: {key:?} }}\n\
         authorization {{ token: \"t0ken-for-the-fleet\" }}"
    );
    let nats = Nats::with_config(d, "nats", &conf);
    let url = format!("tls://127.0.0.1:{}", nats.port);
    // The token from the environment on A, from a file on B.
    let token = write_file(d, "token", "t0ken-for-the-fleet\n");
    let (a, a_addr) = member_env(
        d,
        "server-a",
        std::slice::from_ref(&url),
        &["--directory-tls-ca", &ca],
        &[("FRAMELOCK_DIRECTORY_TOKEN", "t0ken-for-the-fleet")],
    );
    let (b, b_addr) = member(
        d,
        "server-b",
        std::slice::from_ref(&url),
        &["--directory-tls-ca", &ca, "--directory-token-file", &token],
    );
    assert!(
        a.log_text().contains("with a token, over TLS"),
        "{}",
        a.log_text()
    );
    let _room = open_room(d, "host", &a_addr, &a_addr, "over-tls", ALONE);
    assert_listed(d, &b_addr, "over-tls", &a_addr, &[&a, &b]);
    // Without the CA, NATS's certificate is not trusted: nothing is sent to it.
    let (mut c, _) = member(d, "server-c", &[url], &["--directory-token-file", &token]);
    assert!(
        c.wait_for_log("directory: unreachable", Duration::from_secs(10))
            .is_some(),
        "{}",
        c.log_text()
    );
    assert!(!c.log_text().contains("t0ken-for-the-fleet"));
}

#[test]
fn an_entry_forged_without_the_fleet_key_is_neither_listed_nor_followed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut nats = Nats::with_config(
        d,
        "nats",
        "authorization { user: fleet, password: \"fleet-password\" }",
    );
    let password = write_file(d, "password", "fleet-password");
    let fleet_key = d.join("fleet.key");
    std::fs::write(
        &fleet_key,
        (0..48u8)
            .map(|i| i.wrapping_mul(37) ^ 0x5a)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let fleet_key = fleet_key.display().to_string();
    let creds = [
        "--directory-user",
        "fleet",
        "--directory-password-file",
        &password,
        "--directory-key",
        &fleet_key,
    ];
    let (a, a_addr) = member(d, "server-a", &[nats.url()], &creds);
    let (mut b, b_addr) = member(d, "server-b", &[nats.url()], &creds);
    assert!(a.log_text().contains("entries signed"), "{}", a.log_text());
    let _real = open_room(d, "real", &a_addr, &a_addr, "real", ALONE);
    assert_listed(d, &b_addr, "real", &a_addr, &[&a, &b]);

    // Someone with the NATS password but not the fleet key writes rooms that send joiners
    // to a socket of theirs: one with a made-up tag, one with none.
    let trap = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let trap_addr = trap.local_addr().unwrap().to_string();
    trap.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let entry = |tag: Option<&str>| {
        let mut v = serde_json::json!({
            "server": trap_addr, "region": "eu", "game": "airstriker.md", "core": "lightcycles",
            "mode": "strict", "seats": 2, "players": 1, "spectators": 0, "password": false,
            "state": "lobby", "opened": 0,
        });
        if let Some(t) = tag {
            v["tag"] = t.into();
        }
        serde_json::to_vec(&v).unwrap()
    };
    nats.connect = r#"{"verbose":false,"user":"fleet","pass":"fleet-password"}"#.into();
    nats.publish(
        "$KV.framelock-rooms.room.forged",
        &entry(Some(&"ab".repeat(32))),
    );
    nats.publish("$KV.framelock-rooms.room.bait", &entry(None));
    // And a heartbeat of a server with room to spare, the trap.
    let beat = serde_json::json!({
        "server": trap_addr, "region": "eu", "rooms": 0, "max_rooms": 100, "players": 0,
    });
    let beat_key = format!(
        "$KV.framelock-rooms.server.{}",
        trap_addr.replace(['.', ':'], "_")
    );
    nats.publish(&beat_key, &serde_json::to_vec(&beat).unwrap());
    let beat_skipped = format!(
        "skipped entry {:?}: it is not signed with the fleet's key",
        beat_key.trim_start_matches("$KV.framelock-rooms.")
    );
    for said in [
        "skipped entry \"room.forged\": its tag does not verify",
        "skipped entry \"room.bait\": it is not signed",
        &beat_skipped,
    ] {
        assert!(
            b.wait_for_log(said, Duration::from_secs(10)).is_some(),
            "{said}\n{}",
            b.log_text()
        );
    }
    // Neither is listed; the real room still is.
    let l = listed(d, &b_addr);
    assert!(has(&l, "real", &a_addr), "{l:?}");
    assert!(
        !l.iter().any(|(r, _)| r == "forged" || r == "bait"),
        "{l:?}"
    );
    let out = netplay_common::framelock(d)
        .args(["servers", &b_addr, "--json"])
        .output()
        .unwrap();
    let servers = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!servers.contains(&trap_addr), "{servers}");
    // A joiner who asks B for the forged room is not sent anywhere.
    let mut eve = Peer::spawn(
        d,
        "eve",
        &args(&[
            "join",
            &b_addr,
            "--room",
            "forged",
            "--headless",
            "--frames",
            "60",
        ]),
    );
    let status = eve.wait(Duration::from_secs(30));
    assert!(!status.success(), "{}", eve.log_text());
    assert!(!eve.log_text().contains(&trap_addr), "{}", eve.log_text());
    let mut buf = [0u8; 1500];
    assert!(
        trap.recv_from(&mut buf).is_err(),
        "a datagram reached the forged address"
    );
    // Skipped, not crashed; logged once per key however often it is written.
    nats.publish(
        "$KV.framelock-rooms.room.forged",
        &entry(Some(&"cd".repeat(32))),
    );
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        b.log_text().matches("\"room.forged\"").count(),
        1,
        "{}",
        b.log_text()
    );
    assert!(b.try_status().is_none(), "{}", b.log_text());
}
