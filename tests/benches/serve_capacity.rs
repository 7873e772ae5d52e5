//! Server capacity (numbers, not pass/fail): `cargo bench --bench serve_capacity`.
//!
//! One `framelock serve` process on 127.0.0.1, and a load generator in this process
//! (`room_load.rs`): M rooms of 2 synthetic players, each the real sans-IO client stack on
//! a UDP socket of its own, at 60 frames a second.
//!
//! Per M, over a steady window after every room started (`FRAMELOCK_BENCH_SECS`, default
//! 10 s): the slowest player's frame rate; the server's response time as the generator sees
//! it (a CTRL sent to the first datagram back, p50 and p99: loopback, the server's queue
//! and work, and the generator's own scheduling, so an upper bound on what the server adds);
//! datagrams lost (sent by one side, never counted by the other; the generator drops
//! none); the server's CPU (user + system, share of one core); and bytes per room and
//! second through the server, both directions, UDP/IP headers included.
//! `FRAMELOCK_BENCH_ROOMS=100,500` picks the room counts (default 100, 250, 500, 750, 1000).
//! A room count passes when every player keeps 59.5 fps or more, the p99 is at most 2 ms,
//! and nothing was lost. `FRAMELOCK_BENCH_SMOKE=1` (CI's short form): 10 rooms for 2 s. A
//! room that cannot open, a player refused or sent away, a datagram the server dropped for
//! its tag, or a count the machine has no sockets for ends the run with exit status 1.
//!
//! # Results
//!
//! `cargo bench --bench serve_capacity`: one `framelock serve` on loopback and a load
//! generator in one process: M rooms of 2 synthetic players (the real client stack, each on
//! its own UDP socket, 60 fps, a bot changing its pad on a quarter of the frames). Over a
//! 10 s steady window: the slowest player's frame rate; the response time to a CTRL as the
//! generator sees it (loopback, the server, and the generator's own scheduling on the same 2
//! cores); the server's own answer time (its `--stats-json` `answer_us`, which tops out at
//! 100 ms: from taking datagrams off the socket to handing their answers to it); datagrams
//! lost between the two; CPU; bytes per room and second through the server, both ways,
//! UDP/IP headers included. `FRAMELOCK_BENCH_ROOMS=500,1000` picks the room counts.
//!
//! The 2-core machine was shared with other builds (load average 1.3-1.5 during this run):
//!
//! | rooms | players | slowest fps | response p50 / p99 | server's own p99 | lost | server CPU | generator CPU | bytes/s per room |
//! |---|---|---|---|---|---|---|---|---|
//! | 100 | 200 | 60.0 | 0.20 / 0.49 ms | 0.22 ms | 0 | 5% | 8% | 4879 |
//! | 250 | 500 | 60.0 | 0.38 / 0.83 ms | 0.31 ms | 0 | 12% | 15% | 4887 |
//! | 500 | 1000 | 60.0 | 0.38 / 4.55 ms | 0.47 ms | 0 | 26% | 31% | 4907 |
//! | 750 | 1500 | 59.9 | 0.09 / 6.14 ms | 0.19 ms | 0 | 36% | 47% | 4913 |
//! | 1000 | 2000 | 59.2 | 105.54 / 136.00 ms | 79.88 ms | 23099 | 50% | 52% | 5946 |
//!
//! Goal: 500 rooms (1,000 players) on one core, every room at 60 fps, at most 2 ms added at
//! p99, nothing lost: met up to 750 rooms by the server's own numbers (the generator's p99
//! includes its own wake-ups on a busy machine), not at 1000, where the server fell behind
//! and its socket overflowed. The numbers follow the machine's load: five later runs at load
//! average 2.9-5.5 (others compiling, encoding video and running their own servers) kept 60
//! fps and lost nothing up to 500 rooms, with p99s at 500 of 11-124 ms at the generator and
//! 1.5-90 ms in the server; at 750 rooms the server's own p99 was 6-100 ms. One of them
//! stopped at 750 rooms because the server was told to stop (its log: "stopping", a SIGINT,
//! SIGTERM or SIGHUP this bench had not sent); the bench names such an end and exits 1.

use std::fs::File;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod room_load;
mod smoke;

use room_load::Generator;

/// User + system CPU seconds of `pid` so far.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 of the whole line are 12 and 13 after the command name.
    (ticks(11) + ticks(12)) / 100.0
}

struct Run {
    rooms: usize,
    min_fps: f64,
    p50_ms: f64,
    p99_ms: f64,
    lost: i64,
    /// The server's own answer time (its --stats-json), p99, whole run.
    server_p99_ms: f64,
    cpu: f64,
    generator_cpu: f64,
    bytes_per_room: f64,
}

/// One room count: the server started, every room playing, the steady window measured; or
/// what went wrong, the server stopped either way.
fn run(rooms: usize, window: Duration, dir: &Path) -> Result<Run, String> {
    let port = {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap().port()
    };
    let stats = dir.join(format!("serve-{rooms}.json"));
    let log = dir.join(format!("serve-{rooms}.log"));
    let budget = window + Duration::from_secs(30);
    let mut child: Child = Command::new(env!("CARGO_BIN_EXE_framelock"))
        .args(["serve", "--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--max-rooms", "100000", "--opens-per-minute", "10000"])
        .args(["--rooms-per-address", "100000"])
        .args(["--duration", &budget.as_secs().to_string()])
        .arg("--stats-json")
        .arg(&stats)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(File::create(&log).unwrap())
        .spawn()
        .map_err(|e| format!("cannot start framelock serve: {e}"))?;
    std::thread::sleep(Duration::from_millis(300));
    let server: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let result = Generator::new(&[server], rooms, "load").and_then(|g| measure(g, &child, window));
    let mut g = match result {
        Ok(g) => g,
        Err(why) => {
            let _ = child.kill();
            let _ = child.wait();
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = said.lines().rev().take(5).collect();
            return Err(format!(
                "{rooms} rooms: {why}\nthe server's last words:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
    };
    g.generator.leave(Instant::now());
    g.generator.drain(Duration::from_millis(1500));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let end = Instant::now() + Duration::from_secs(10);
    while child.try_wait().ok().flatten().is_none() && Instant::now() < end {
        g.generator.drain(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    let s: serde_json::Value = std::fs::read_to_string(&stats)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| format!("{rooms} rooms: the server wrote no --stats-json"))?;
    // A room drops what lacks its tag: any such drop means the generator speaks the protocol
    // wrong, and the numbers would measure that.
    let unauthentic = s["packets_dropped_auth"].as_u64().unwrap_or(0);
    if unauthentic > 0 {
        return Err(format!(
            "{rooms} rooms: the server dropped {unauthentic} datagrams for their tags"
        ));
    }
    let c = &g.generator.counters;
    let server_in = s["datagrams_in"].as_u64().unwrap_or(0) as i64;
    let server_out = s["datagrams_out"].as_u64().unwrap_or(0) as i64;
    let lost = (c.sent as i64 - server_in) + (server_out - c.received as i64);
    let server_p99_ms = s["answer_us"]["p99"].as_f64().unwrap_or(f64::NAN) / 1000.0;
    let mut r = std::mem::take(&mut g.generator.counters.response_us);
    r.sort_unstable();
    let pct = |q: f64| {
        r.get(((r.len() as f64 - 1.0) * q) as usize)
            .map_or(f64::NAN, |v| *v as f64 / 1000.0)
    };
    let run = Run {
        rooms,
        min_fps: g.min_fps,
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
        lost,
        server_p99_ms,
        cpu: g.cpu,
        generator_cpu: g.generator_cpu,
        bytes_per_room: g.bytes as f64 / g.secs / rooms as f64,
    };
    for (what, v) in [
        ("the slowest player's frame rate", run.min_fps),
        ("the response time", run.p99_ms),
        ("the server's own answer time", run.server_p99_ms),
        ("bytes per room", run.bytes_per_room),
    ] {
        smoke::check(what, v).map_err(|e| format!("{rooms} rooms: {e}"))?;
    }
    Ok(run)
}

/// What the steady window measured, with the generator to wind down.
struct Measured {
    generator: Generator,
    secs: f64,
    min_fps: f64,
    cpu: f64,
    generator_cpu: f64,
    bytes: u64,
}

/// Every room opened, joined and playing, then the steady window of `window`.
fn measure(mut g: Generator, child: &Child, window: Duration) -> Result<Measured, String> {
    let t0 = Instant::now();
    g.open_rooms(t0);
    let deadline = t0 + Duration::from_secs(20);
    while !g.all_playing() && Instant::now() < deadline && g.failure.is_none() {
        g.run(Instant::now() + Duration::from_millis(100));
    }
    if let Some(why) = g.failure.take() {
        return Err(why);
    }
    let playing = g.players.iter().filter(|p| p.frames > 0).count();
    if playing < g.players.len() {
        return Err(format!(
            "{playing} of {} players were playing 20 s after the rooms opened",
            g.players.len()
        ));
    }
    g.run(Instant::now() + Duration::from_secs(1));
    // The steady window.
    let start = Instant::now();
    let cpu0 = cpu_secs(child.id());
    let gen0 = cpu_secs(std::process::id());
    let bytes0 = g.counters.bytes_sent + g.counters.bytes_received;
    for p in &mut g.players {
        p.frames_at_window = p.frames;
    }
    g.measuring = true;
    g.run(start + window);
    g.measuring = false;
    if let Some(why) = g.failure.take() {
        return Err(why);
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = (cpu_secs(child.id()) - cpu0) / secs;
    let generator_cpu = (cpu_secs(std::process::id()) - gen0) / secs;
    let bytes = g.counters.bytes_sent + g.counters.bytes_received - bytes0;
    let min_fps = g
        .players
        .iter()
        .map(|p| (p.frames - p.frames_at_window) as f64 / secs)
        .fold(f64::INFINITY, f64::min);
    Ok(Measured {
        generator: g,
        secs,
        min_fps,
        cpu,
        generator_cpu,
        bytes,
    })
}

fn main() {
    // The short form: 10 rooms for 2 s.
    let rooms = match std::env::var("FRAMELOCK_BENCH_ROOMS") {
        Ok(v) => {
            smoke::parse_counts("FRAMELOCK_BENCH_ROOMS", &v).unwrap_or_else(|e| smoke::fail(e))
        }
        Err(_) if smoke::smoke() => vec![10],
        Err(_) => vec![100, 250, 500, 750, 1000],
    };
    let window = Duration::from_secs(smoke::secs(10, 2));
    let dir = tempfile::tempdir().unwrap();
    println!("| rooms | players | slowest fps | response p50 | p99 | server's own p99 | lost | server CPU | generator CPU | bytes/s per room | verdict |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut best = 0;
    for m in rooms {
        let r = run(m, window, dir.path()).unwrap_or_else(|e| smoke::fail(e));
        let ok = r.min_fps >= 59.5 && r.p99_ms <= 2.0 && r.lost == 0;
        if ok {
            best = best.max(r.rooms);
        }
        println!(
            "| {} | {} | {:.1} | {:.2} ms | {:.2} ms | {:.2} ms | {} | {:.0}% | {:.0}% | {:.0} | {} |",
            r.rooms,
            r.rooms * 2,
            r.min_fps,
            r.p50_ms,
            r.p99_ms,
            r.server_p99_ms,
            r.lost,
            r.cpu * 100.0,
            r.generator_cpu * 100.0,
            r.bytes_per_room,
            if ok { "ok" } else { "over" }
        );
    }
    println!("largest room count that held every goal: {best} (goal: 500 rooms, 1,000 players)");
}
