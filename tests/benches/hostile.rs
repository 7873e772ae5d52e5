//! Issues 36's and 50's numbers against real processes on 127.0.0.1: the largest bytes to
//! an unproven address per byte from it, over every first datagram an unvalidated address
//! can send, on every path (an uploaded room, a hosted room, the hosted room's relay, a
//! playing room's path migration, a punch, a direct `host`), the password guesses one
//! address gets checked per minute,
//! how long a real join takes during a 3,000-Hello-a-second flood, and the server's peak
//! memory after 10 decompression bombs (60 MiB of zeros each, about 240 KiB packed).
//!
//! `cargo bench --bench hostile`; `FRAMELOCK_BENCH_SMOKE=1` for the short form (seconds
//! instead of a minute of guessing, one join instead of five).

#[path = "../hostile_common/mod.rs"]
mod hostile_common;
mod smoke;

use std::fs::File;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use framelock::session::direct::{DirectPath, PathMode};
use framelock::session::msg::{Msg, PathMsg, RoomMsg};
use hostile_common::{attacks, guess, hello_flood, peak_mib, upload};

/// The longest a padded Locate waits for its answer from `server` while a 64 MiB start state
/// is uploaded, unpacked and checked: the server loop's worst stall, as a player sees it.
fn stall_during_upload(server: SocketAddr) -> Duration {
    let stop = Arc::new(AtomicBool::new(false));
    let probe = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let locate = Msg::Room(RoomMsg::Locate { room: "den".into() }).encode(0);
            let mut worst = Duration::ZERO;
            let mut buf = [0u8; 2048];
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                s.send_to(&locate, server).unwrap();
                if s.recv_from(&mut buf).is_err() {
                    smoke::fail("the server did not answer a Locate within 2 s");
                }
                worst = worst.max(t.elapsed());
                std::thread::sleep(Duration::from_millis(2));
            }
            worst
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    if let Err(e) = upload(server, "127.0.2.1", "big", (64 << 20) - 4096) {
        smoke::fail(format!("the 64 MiB upload: {e}"));
    }
    // Its room opens once the worker is done: keep probing a little past that.
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    probe.join().unwrap()
}

fn free_port() -> u16 {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.local_addr().unwrap().port()
}

/// Starts `framelock ARGS`, logging to `dir/label.log`; waits for `ready` in its log.
fn spawn(dir: &Path, label: &str, args: &[&str], ready: &str) -> Child {
    let log = dir.join(format!("{label}.log"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_framelock"))
        .args(args)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(File::create(&log).unwrap())
        .spawn()
        .unwrap_or_else(|e| smoke::fail(format!("cannot start framelock: {e}")));
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        if std::fs::read_to_string(&log).is_ok_and(|t| t.contains(ready)) {
            return child;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    smoke::fail(format!(
        "{label} did not say {ready:?}:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    ))
}

/// Bytes back per byte sent for each attack datagram, sent 20 times from a fresh address.
fn amplification(target: SocketAddr, room: &str) -> f64 {
    amplification_of(target, attacks(room))
}

/// `amplification` over the datagrams `attacks`.
fn amplification_of(target: SocketAddr, attacks: Vec<Vec<u8>>) -> f64 {
    let mut worst: f64 = 0.0;
    for (i, d) in attacks.into_iter().enumerate() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let mut sent = 0;
        for _ in 0..20 {
            sent += s.send_to(&d, target).unwrap();
        }
        let mut got = 0;
        let mut buf = [0u8; 2048];
        let end = Instant::now() + Duration::from_millis(700);
        while Instant::now() < end {
            if let Ok((n, _)) = s.recv_from(&mut buf) {
                got += n;
            }
        }
        let f = got as f64 / sent as f64;
        println!(
            "  attack {i:2}: {:5} B x20 -> {got:6} B back ({f:.2}x)",
            d.len()
        );
        worst = worst.max(f);
    }
    worst
}

fn main() {
    let smoke = smoke::smoke();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    let port = free_port();
    let server = format!("127.0.0.1:{port}");
    let mut serve = spawn(
        d,
        "serve",
        &["serve", "--bind", "127.0.0.1", "--port", &port.to_string()],
        "listening on udp",
    );
    let mut creator = spawn(
        d,
        "creator",
        &[
            "host",
            "--headless",
            "--server",
            &server,
            "--room",
            "den",
            "--path",
            "relayed",
            "--bot",
            "1",
        ],
        "your friends join with",
    );
    // A game plays in den through every attack on the server: its stalls are counted.
    let bot_stats = d.join("bot.json");
    let mut bot = spawn(
        d,
        "bot",
        &[
            "join",
            &server,
            "--room",
            "den",
            "--headless",
            "--bot",
            "2",
            "--frames",
            "1000000",
            "--stats-json",
            bot_stats.to_str().unwrap(),
        ],
        "netplay: in session",
    );
    println!("serve, a room open:");
    let serve_amp = amplification(server.parse().unwrap(), "den");
    let before = peak_mib(serve.id());
    let bombs = if smoke { 2 } else { 10 };
    for b in 0..bombs {
        // Each from its own address: one address holds at most 8 rooms.
        let from = format!("127.0.1.{}", b + 1);
        let len = (60 << 20) - 4096;
        if let Err(e) = upload(server.parse().unwrap(), &from, &format!("bomb{b}"), len) {
            smoke::fail(format!("bomb {b}: {e}"));
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let peak = peak_mib(serve.id());
    let stall = stall_during_upload(server.parse().unwrap());

    // Path migration: a datagram naming a playing room's session from a new address (the
    // session id is in every datagram of the room: anyone on its path reads it).
    let watcher = UdpSocket::bind("127.0.0.3:0").unwrap();
    watcher
        .set_read_timeout(Some(Duration::from_millis(2)))
        .unwrap();
    let Some(session) = hostile_common::watch_session(&watcher, server.parse().unwrap(), "den")
    else {
        smoke::fail("the spectator was not welcomed to den");
    };
    println!("serve, a playing room's session from new addresses:");
    let migration_amp = amplification_of(
        server.parse().unwrap(),
        hostile_common::session_attacks(session),
    );

    // A hosted room (its creator's own process holds the game), and its relay.
    let mut hosted = spawn(
        d,
        "hosted",
        &[
            "host",
            "--headless",
            "--server",
            &server,
            "--room",
            "hden",
            "--path",
            "auto",
            "--players",
            "4",
        ],
        "your friends join with",
    );
    println!("serve, a hosted room open:");
    let hosted_amp = amplification(server.parse().unwrap(), "hden");
    // A real join of the hosted room from 127.0.0.2 while 127.0.0.1 floods it with 3,000
    // blind Hellos a second.
    let stop = Arc::new(AtomicBool::new(false));
    let flood = hello_flood(server.parse().unwrap(), "hden", 3000, stop.clone());
    std::thread::sleep(Duration::from_millis(500));
    let mut hosted_joins = Vec::new();
    for k in 0..if smoke { 1 } else { 3 } {
        let player = UdpSocket::bind("127.0.0.2:0").unwrap();
        player
            .set_read_timeout(Some(Duration::from_millis(5)))
            .unwrap();
        let t = Instant::now();
        let r = hostile_common::handshake(&player, server.parse().unwrap(), "hden", "p", None, k);
        if r != "welcomed" {
            smoke::fail(format!(
                "a real join of the hosted room during the flood got {r:?}"
            ));
        }
        // Its seat stays taken; the next join takes another of the 3.
        hosted_joins.push(t.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    let hosted_rate = flood.join().unwrap();
    hosted_joins.sort();
    let hosted_join = hosted_joins[hosted_joins.len() / 2];
    let host_sock = UdpSocket::bind("127.0.0.4:0").unwrap();
    host_sock
        .set_read_timeout(Some(Duration::from_millis(2)))
        .unwrap();
    let victim = UdpSocket::bind("127.0.0.5:0").unwrap();
    let (sent, got) =
        hostile_common::relay_reflection(server.parse().unwrap(), &host_sock, &victim, "relay");
    let relay_amp = got as f64 / sent as f64;
    println!("serve, a hosted room's relay: {sent} B from the victim, {got} B to it");
    let _ = hosted.kill();
    let _ = hosted.wait();
    // Ctrl-C: the player leaves and writes its counters.
    unsafe { libc::kill(bot.id() as i32, libc::SIGINT) };
    let _ = bot.wait();
    let played: serde_json::Value = std::fs::read(&bot_stats)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| smoke::fail("the player in den wrote no stats"));
    let (frames, stalls, stall_ms) = (
        played["frames"].as_u64().unwrap_or(0),
        played["stalls"].as_u64().unwrap_or(0),
        played["stall_ms"].as_f64().unwrap_or(0.0),
    );
    let punch_amp = punch_amplification();
    for c in [&mut creator, &mut serve] {
        let _ = c.kill();
        let _ = c.wait();
    }

    let port = free_port();
    let target: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut host = spawn(
        d,
        "host",
        &[
            "host",
            "--headless",
            "--port",
            &port.to_string(),
            "--password",
            "hunter2",
            "--lobby-timeout",
            "600",
            "--players",
            "8",
        ],
        "hosting on udp port",
    );
    println!("direct host (password set):");
    let host_amp = amplification(target, "");

    // Guesses from one address for a minute (smoke: 3 s).
    let window = Duration::from_secs(if smoke { 3 } else { 60 });
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let start = Instant::now();
    let (mut checked, mut tries) = (0u64, 0u64);
    while start.elapsed() < window {
        tries += 1;
        match guess(&sock, target, &format!("guess{tries}"), tries as u8).as_str() {
            "wrong password" => checked += 1,
            r if r.starts_with("too many") => std::thread::sleep(Duration::from_millis(50)),
            other => smoke::fail(format!("a guess got {other:?}")),
        }
    }
    let per_minute = checked as f64 * 60.0 / start.elapsed().as_secs_f64();

    // A real join from 127.0.0.2 while 127.0.0.1 floods 3,000 blind Hellos a second from
    // 64 ports.
    let stop = Arc::new(AtomicBool::new(false));
    let flood = hello_flood(target, "", 3000, stop.clone());
    std::thread::sleep(Duration::from_millis(500));
    let mut joins = Vec::new();
    for k in 0..if smoke { 1 } else { 5 } {
        let player = UdpSocket::bind("127.0.0.2:0").unwrap();
        player
            .set_read_timeout(Some(Duration::from_millis(5)))
            .unwrap();
        let t = Instant::now();
        let r = guess(&player, target, "hunter2", 100 + k);
        if r != "welcomed" {
            smoke::fail(format!("a real join during the flood got {r:?}"));
        }
        joins.push(t.elapsed());
        // Its seat stays taken; the next join takes another of the 7.
    }
    stop.store(true, Ordering::Relaxed);
    let rate = flood.join().unwrap();
    let _ = host.kill();
    let _ = host.wait();
    joins.sort();
    let median = joins[joins.len() / 2];

    println!();
    println!("| measure | value |");
    println!("|---|---|");
    println!("| largest amplification, serve (unvalidated address) | {serve_amp:.2}x |");
    println!("| largest amplification, direct host | {host_amp:.2}x |");
    println!("| largest amplification, hosted room (unvalidated address) | {hosted_amp:.2}x |");
    println!("| largest amplification, hosted room's relay (Forwards to a session-namer) | {relay_amp:.2}x |");
    println!("| largest amplification, path migration (a room's session from a new address) | {migration_amp:.2}x |");
    println!("| largest amplification, punch (a player's forged PunchBack and Punch) | {punch_amp:.2}x |");
    println!(
        "| stalls of a game in a room under every attack above ({frames} frames) | {stalls} ({stall_ms:.0} ms) |"
    );
    println!(
        "| password guesses checked per minute, one address | {per_minute:.1} ({checked} in {:.0} s) |",
        start.elapsed().as_secs_f64()
    );
    println!(
        "| real join during a {rate:.0} Hello/s flood (median of {}) | {:.1} ms |",
        joins.len(),
        median.as_secs_f64() * 1000.0
    );
    println!(
        "| real join of a hosted room during a {hosted_rate:.0} Hello/s flood (median of {}) | {:.1} ms |",
        hosted_joins.len(),
        hosted_join.as_secs_f64() * 1000.0
    );
    println!(
        "| serve's longest answer during a 64 MiB upload (a Locate's round trip) | {:.1} ms |",
        stall.as_secs_f64() * 1000.0
    );
    println!(
        "| serve's peak memory after {bombs} bombs of 60 MiB (about 240 KiB each on the wire) | {peak:.0} MiB (before: {before:.0} MiB) |"
    );
    if serve_amp > 1.0 || host_amp > 1.0 {
        smoke::fail("an unvalidated address got more bytes than it sent");
    }
    let paths = [hosted_amp, relay_amp, migration_amp, punch_amp];
    if paths.iter().any(|a| *a > 3.0) {
        smoke::fail(format!(
            "an unproven address got more than 3x what it sent: {paths:?}"
        ));
    }
}

/// The punch path, on the sans-IO machine itself (the attacker must be a player: it holds
/// the session's keys and a token its punch brought): a host punching a player's two
/// candidates gets a Punch and a PunchBack forged "from" a victim, the PunchBack echoing the
/// token the player read from its own punch. Bytes the host's path sends the victim over the
/// whole attempt, per byte "from" it.
fn punch_amplification() -> f64 {
    let bytes = |m: &PathMsg| Msg::Path(*m).encode(1).len();
    let t0 = Instant::now();
    let mut host = DirectPath::new(PathMode::Auto);
    let player: SocketAddr = "203.0.113.9:5000".parse().unwrap();
    let lan: SocketAddr = "10.0.0.9:5000".parse().unwrap();
    let victim: SocketAddr = "192.0.2.66:53".parse().unwrap();
    host.introduce(t0, &[player, lan], Duration::ZERO, [1; 8]);
    let (mut from_victim, mut to_victim) = (0, 0);
    let mut now = t0;
    while now < t0 + Duration::from_secs(5) {
        host.handle_timeout(now, [2; 8]);
        if now == t0 + Duration::from_millis(100) {
            let back = PathMsg::PunchBack(host.token_for(player));
            from_victim += bytes(&back);
            host.handle_punch_back(now, victim, host.token_for(player));
            let punch = PathMsg::Punch([5; 8]);
            from_victim += bytes(&punch);
            host.handle_punch(now, victim, [5; 8], [6; 8]);
        }
        while let Some((to, m, _)) = host.poll_send() {
            if to == victim {
                to_victim += bytes(&m);
            }
        }
        now += Duration::from_millis(10);
    }
    println!("punch: {from_victim} B forged from the victim, {to_victim} B to it");
    to_victim as f64 / from_victim as f64
}
