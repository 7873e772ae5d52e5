//! A server's web page and replay archive (numbers, not pass/fail): `cargo bench --bench web`.
//!
//! 1. **Page latency with 1,000 rooms**: framelock's web side (`netplay::web`, the code
//!    `serve --http` runs) serving a snapshot of 1,000 rooms (half on the server with two
//!    named players, half hosted) and 50 replays, to one keep-alive client: `GET /` timed
//!    from the request's first byte to the answer's last, p50 and p99, for a page rendered
//!    once per snapshot (the serve loop publishes one a second) and for a page rendered
//!    anew for every request (a fresh snapshot before each).
//! 2. **The UDP loop while the page is loaded 100 times a second**: a real `framelock serve
//!    --http --archive` and the rooms load generator (`room_load.rs`: R rooms of 2 synthetic
//!    players at 60 fps, default 100), run twice: without page loads, then with `GET /` 100
//!    times a second from another connection. The server's own answer time (its
//!    `--stats-json` `answer_us`: from taking datagrams off the socket to handing their
//!    answers to it) and the generator's response time (a CTRL to the first datagram
//!    back), p99.
//! 3. **Archive bytes per match**: the replays those rooms left in the archive when they
//!    ended, per match and per minute of play (each holds a 2,000-byte start state).
//!
//! `FRAMELOCK_BENCH_ROOMS` sets R, `FRAMELOCK_BENCH_SECS` the steady window (10 s);
//! `FRAMELOCK_BENCH_SMOKE=1` (CI's short form): 200 page requests, 10 rooms for 2 s.
//!
//! # Results
//!
//! `cargo bench --bench web` on the shared 2-core machine while other builds and tests ran
//! (load average about 10):
//!
//! | page, 1,000 rooms (731 KiB) | p50 | p99 |
//! |---|---|---|
//! | rendered once per snapshot | 6.15 ms | 24.18 ms |
//! | rendered for every request | 6.18 ms | 25.98 ms |
//!
//! | 100 rooms playing | page loads | server's answer p99 | generator's response p99 |
//! |---|---|---|---|
//! | | none | 0.67 ms | 27.95 ms |
//! | | 100/s | 0.26 ms | 19.63 ms |
//!
//! | archive | matches kept | bytes per match | minutes per match | bytes per minute |
//! |---|---|---|---|---|
//! | | 200 | 1243 | 0.19 | 6676 |
//!
//! The page's time is its transfer (rendering anew costs no more than a copy); the UDP
//! loop's p99 stayed under a millisecond with the page loaded 100 times a second (the two
//! runs differ by the machine's load, not the page); a replay holds about 6.7 KB a minute of
//! two players' input with checksums, beside its start state.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use framelock::lockstep::Mode;
use framelock::netplay::archive::Entry;
use framelock::netplay::web::{Snapshot, Web, WebConfig};
use framelock::serve::RoomView;
use framelock::session::msg::{RoomInfo, ServerInfo};

mod room_load;
mod smoke;

use room_load::Generator;

/// One keep-alive HTTP/1.1 client.
struct Client {
    stream: BufReader<TcpStream>,
    host: String,
}

impl Client {
    fn connect(addr: &str) -> Client {
        let s = TcpStream::connect(addr).unwrap_or_else(|e| smoke::fail(format!("{addr}: {e}")));
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client {
            stream: BufReader::new(s),
            host: addr.to_string(),
        }
    }

    /// `GET path`: status and body length.
    fn get(&mut self, path: &str) -> Result<(u16, usize), String> {
        let req = format!("GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", self.host);
        self.stream
            .get_mut()
            .write_all(req.as_bytes())
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        let n = self
            .stream
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the server closed the connection".into());
        }
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut len = 0;
        loop {
            line.clear();
            self.stream
                .read_line(&mut line)
                .map_err(|e| e.to_string())?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        self.stream
            .read_exact(&mut body)
            .map_err(|e| e.to_string())?;
        Ok((status, len))
    }
}

fn pct(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(((v.len() as f64 - 1.0) * q).round() as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

/// A snapshot of `rooms` rooms.
fn snapshot(rooms: usize, n: u32) -> Snapshot {
    let views = (0..rooms)
        .map(|i| {
            let here = i % 2 == 0;
            RoomView {
                info: RoomInfo {
                    name: format!("room-{i:04}"),
                    content: if i % 3 == 0 {
                        String::new()
                    } else {
                        format!("game {i}.md")
                    },
                    core: "Genesis Plus GX".into(),
                    players: 2,
                    seats: 2,
                    password: i % 5 == 0,
                    playing: i % 4 != 0,
                    age_secs: n + i as u32,
                    spectators: (i % 3) as u8,
                    mode: Mode::Strict,
                    region: String::new(),
                    server: String::new(),
                },
                names: if here {
                    vec![format!("ana{i}"), format!("bo <{i}>")]
                } else {
                    Vec::new()
                },
                direct: if here { 0 } else { 1 },
                relayed: if here { 2 } else { 0 },
            }
        })
        .collect();
    Snapshot {
        taken_unix: 1_795_000_000 + i64::from(n),
        public: None,
        udp_port: 7845,
        load: Some(ServerInfo {
            server: String::new(),
            region: String::new(),
            rooms: rooms as u16,
            max_rooms: 1000,
            players: (rooms * 2) as u16,
        }),
        spectators: rooms,
        rooms: views,
        ..Snapshot::default()
    }
}

/// Page latency for `rooms` rooms: (cached p50, p99, fresh p50, p99 in ms, page bytes).
fn page_latency(rooms: usize, requests: usize) -> (f64, f64, f64, f64, usize) {
    let web = Web::start(WebConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        metrics: None,
        shelf: None,
    })
    .unwrap_or_else(|e| smoke::fail(e));
    let addr = web.local.to_string();
    web.publish(snapshot(rooms, 0));
    let mut client = Client::connect(&addr);
    // Warm up: the first render, the connection.
    let (status, size) = client.get("/").unwrap_or_else(|e| smoke::fail(e));
    if status != 200 || size < rooms * 200 {
        smoke::fail(format!("the page answered {status} with {size} bytes"));
    }
    let mut cached = Vec::with_capacity(requests);
    let mut fresh = Vec::with_capacity(requests);
    let mut n = 0;
    for i in 0..requests * 2 {
        let render = i % 2 == 1;
        if render {
            n += 1;
            web.publish(snapshot(rooms, n));
        }
        // Below the page's rate limit per address (200 a second).
        std::thread::sleep(Duration::from_millis(6));
        let t = Instant::now();
        let (status, _) = match client.get("/") {
            Ok(r) => r,
            // A connection lives 30 s at most (`web::CONN_LIFETIME`): a new one, untimed.
            Err(_) => {
                client = Client::connect(&addr);
                continue;
            }
        };
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        if status != 200 {
            smoke::fail(format!("GET / answered {status}"));
        }
        if render {
            fresh.push(ms);
        } else {
            cached.push(ms);
        }
    }
    (
        pct(&mut cached, 0.5),
        pct(&mut cached, 0.99),
        pct(&mut fresh, 0.5),
        pct(&mut fresh, 0.99),
        size,
    )
}

struct LoopRun {
    server_p99_ms: f64,
    response_p99_ms: f64,
    pages: u64,
    replays: u64,
    replay_bytes: u64,
    /// Frames a room played, on average.
    frames: u64,
}

/// R rooms playing for `window` on a `serve --http --archive`, with the page loaded 100
/// times a second or not.
fn loop_run(rooms: usize, window: Duration, load: bool, dir: &Path) -> Result<LoopRun, String> {
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let http = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map_err(|e| e.to_string())?
        .to_string();
    let tag = if load { "load" } else { "quiet" };
    let stats = dir.join(format!("serve-{tag}.json"));
    let archive = dir.join(format!("archive-{tag}"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_framelock"))
        .args(["serve", "--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--max-rooms", "100000", "--opens-per-minute", "10000"])
        .args(["--rooms-per-address", "100000", "--http", &http])
        .arg("--archive")
        .arg(&archive)
        .args(["--duration", &(window.as_secs() + 40).to_string()])
        .arg("--stats-json")
        .arg(&stats)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(File::create(dir.join(format!("serve-{tag}.log"))).unwrap())
        .spawn()
        .map_err(|e| format!("cannot start framelock serve: {e}"))?;
    std::thread::sleep(Duration::from_millis(400));
    let server: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut g = Generator::new(&[server], rooms, tag)?;
    g.open_rooms(Instant::now());
    let deadline = Instant::now() + Duration::from_secs(20);
    while !g.all_playing() && Instant::now() < deadline && g.failure.is_none() {
        g.run(Instant::now() + Duration::from_millis(100));
    }
    if let Some(why) = g.failure.take() {
        let _ = child.kill();
        return Err(why);
    }
    g.run(Instant::now() + Duration::from_secs(1));
    let stop = Arc::new(AtomicBool::new(false));
    let pages = Arc::new(AtomicU64::new(0));
    let loader = load.then(|| {
        let (stop, pages, http) = (stop.clone(), pages.clone(), http.clone());
        std::thread::spawn(move || {
            let mut c = Client::connect(&http);
            let mut next = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                match c.get("/") {
                    Ok((200, _)) => {
                        pages.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(_) => {}
                    Err(_) => c = Client::connect(&http),
                }
                next += Duration::from_millis(10);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        })
    });
    g.measuring = true;
    g.run(Instant::now() + window);
    g.measuring = false;
    stop.store(true, Ordering::Relaxed);
    if let Some(t) = loader {
        let _ = t.join();
    }
    let frames: u64 =
        g.players.iter().map(|p| p.frames).sum::<u64>() / g.players.len().max(1) as u64;
    g.leave(Instant::now());
    g.drain(Duration::from_millis(2000));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let end = Instant::now() + Duration::from_secs(15);
    while child.try_wait().ok().flatten().is_none() && Instant::now() < end {
        g.drain(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    let s: serde_json::Value = std::fs::read_to_string(&stats)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or("the server wrote no --stats-json")?;
    let mut r: Vec<f64> = g
        .counters
        .response_us
        .iter()
        .map(|v| f64::from(*v) / 1000.0)
        .collect();
    let entries: Vec<Entry> = std::fs::read_dir(&archive)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
        .collect();
    Ok(LoopRun {
        server_p99_ms: s["answer_us"]["p99"].as_f64().unwrap_or(f64::NAN) / 1000.0,
        response_p99_ms: pct(&mut r, 0.99),
        pages: pages.load(Ordering::Relaxed),
        replays: entries.len() as u64,
        replay_bytes: entries.iter().map(|e| u64::from(e.bytes)).sum(),
        frames,
    })
}

fn main() {
    let requests = smoke::var("FRAMELOCK_BENCH_REQUESTS", 2000usize, 200);
    let (c50, c99, f50, f99, size) = page_latency(1000, requests);
    for (what, v) in [
        ("the cached page's p99", c99),
        ("the rendered page's p99", f99),
    ] {
        smoke::check(what, v).unwrap_or_else(|e| smoke::fail(e));
    }
    println!("| page, 1,000 rooms ({} KiB) | p50 | p99 |", size / 1024);
    println!("|---|---|---|");
    println!("| rendered once per snapshot | {c50:.2} ms | {c99:.2} ms |");
    println!("| rendered for every request | {f50:.2} ms | {f99:.2} ms |");
    println!();

    let rooms = smoke::var("FRAMELOCK_BENCH_ROOMS", 100usize, 10);
    if rooms == 0 {
        smoke::fail("FRAMELOCK_BENCH_ROOMS=0: the loop's run needs at least one room");
    }
    let window = Duration::from_secs(smoke::secs(10, 2));
    let dir = tempfile::tempdir().unwrap();
    println!(
        "| {rooms} rooms playing | page loads | server's answer p99 | generator's response p99 |"
    );
    println!("|---|---|---|---|");
    let mut runs = Vec::new();
    for load in [false, true] {
        let r = loop_run(rooms, window, load, dir.path()).unwrap_or_else(|e| smoke::fail(e));
        smoke::check("the server's answer time", r.server_p99_ms)
            .unwrap_or_else(|e| smoke::fail(e));
        if load && r.pages < window.as_secs() * 50 {
            smoke::fail(format!("only {} pages loaded in {window:?}", r.pages));
        }
        println!(
            "| | {} | {:.2} ms | {:.2} ms |",
            if load {
                format!("{:.0}/s", r.pages as f64 / window.as_secs_f64())
            } else {
                "none".into()
            },
            r.server_p99_ms,
            r.response_p99_ms
        );
        runs.push(r);
    }
    println!();
    let replays: u64 = runs.iter().map(|r| r.replays).sum();
    let bytes: u64 = runs.iter().map(|r| r.replay_bytes).sum();
    if replays == 0 {
        smoke::fail("no replay was kept");
    }
    let per_match = bytes as f64 / replays as f64;
    // Every room played about as many frames; a match's minutes from the runs' frames.
    let frames_per_match = runs.iter().map(|r| r.frames).sum::<u64>() as f64 / runs.len() as f64;
    let minutes = frames_per_match / 3600.0;
    println!("| archive | matches kept | bytes per match | minutes per match | bytes per minute |");
    println!("|---|---|---|---|---|");
    println!(
        "| | {replays} | {per_match:.0} | {minutes:.2} | {:.0} |",
        per_match / minutes.max(1e-9)
    );
}
