//! Netplay benchmark (numbers, not pass/fail): `cargo bench --bench netplay`.
//!
//! Real `framelock host` + `framelock join` processes with bots on the built-in game, over
//! loopback through the real UDP code, each peer impairing its own outgoing datagrams with
//! `--netsim delay=RTT/2,jitter=J,loss=L` (so the round trip is RTT, ±2J). The matrix is RTT
//! 20/100/250 ms x jitter 0/20 ms x loss 0/5/25 %, plus one run at 2 s RTT and 25 % loss.
//! Each run lasts `FRAMELOCK_BENCH_SECS` seconds of play (default 60); runs go
//! `FRAMELOCK_BENCH_JOBS` at a time (default 1: two sessions at once on a 2-core machine
//! delayed up to 4% of the datagrams by 4 ms or more, the last column, which cost the
//! latency goal's row a frame; one session, 0-0.3%);
//! `FRAMELOCK_BENCH_ONLY=100/20/5,100/10/5` runs only these RTT/jitter/loss scenarios (one
//! listed N times runs N times; the goal lines count the runs that met each goal);
//! `FRAMELOCK_BENCH_BUDGET=0` passes `--send-budget 0` (no bandwidth cap) to both peers.
//! `FRAMELOCK_BENCH_SMOKE=1` (CI's short form) runs 100/20/5 for 4 s. A run that failed or
//! desynchronised makes the benchmark exit non-zero after the table.
//!
//! Per run: stalled frames (display slots in which a frame was due but the lockstep client
//! had none) as a share of frames, the added input latency (frames from sampling a pad to
//! emulating it, median and 95th percentile, in ms), bytes per second per peer and direction
//! during play with the 28 bytes of UDP/IPv4 headers (the handshake and start state before
//! the first frame are left out: a one-time cost; up as sent, before the simulated loss,
//! down as received), whether both peers ended with the same
//! checksum, and how punctual each peer's conditioner was: the share of its datagrams
//! released 4 ms or more after their due time (the machine's timer latency, on top of the
//! configured link) and the latest release.
//!
//! # Results
//!
//! All 19 scenarios (1169 s on a 2-core Debian 12 machine, send budget 2450 B/s, one session at a
//! time; the 100 ms / ±20 ms / 5% row measures the same with the datagram tags, see `tags.rs`).
//! The four rows README shows were run again on today's code
//! (`FRAMELOCK_BENCH_ONLY=20/0/0,100/20/5,250/20/25,2000/0/25`, the machine shared with other
//! builds, load average 1.1-2.6) and replace their older runs below; at 20 ms the joiner's
//! conditioner released 99% of its datagrams 4 ms or more late (15 ms at worst), which put
//! the measured round trip at 27 ms and the lead at 4 frames, 17 ms above the earlier run:
//!
//! | RTT ms | ± jitter ms | loss % | stalled % host / join | latency median ms h / j | p95 ms h / j | measured RTT ms / lead | host B/s up / down | join B/s up / down | in sync | released late % h / j (latest ms) |
//! |---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|---:|
//! | 20 | 0 | 0 | 0.00 / 0.00 | 67 / 67 | 67 / 67 | 27 / 4 | 1223 / 1180 | 1181 / 1222 | yes | 0.1 / 99.2 (15) |
//! | 20 | 0 | 5 | 0.06 / 0.25 | 67 / 67 | 83 / 83 | 21 / 4 | 2415 / 2223 | 2339 / 2299 | yes | 0.0 / 0.0 (9) |
//! | 20 | 0 | 25 | 0.06 / 0.67 | 100 / 100 | 117 / 117 | 21 / 6 | 2238 / 1772 | 2375 / 1700 | yes | 0.0 / 0.0 (15) |
//! | 20 | 20 | 0 | 0.00 / 0.00 | 67 / 67 | 83 / 83 | 18 / 4 | 2236 / 2346 | 2348 / 2235 | yes | 0.0 / 0.0 (10) |
//! | 20 | 20 | 5 | 0.00 / 0.31 | 67 / 67 | 83 / 83 | 21 / 5 | 2212 / 2220 | 2352 / 2104 | yes | 0.0 / 0.0 (2) |
//! | 20 | 20 | 25 | 0.06 / 0.75 | 117 / 117 | 150 / 150 | 22 / 6 | 2029 / 1770 | 2380 / 1529 | yes | 0.0 / 0.0 (2) |
//! | 100 | 0 | 0 | 0.00 / 0.00 | 133 / 133 | 133 / 133 | 101 / 8 | 1378 / 1279 | 1280 / 1376 | yes | 0.0 / 0.0 (1) |
//! | 100 | 0 | 5 | 0.00 / 0.17 | 150 / 150 | 167 / 167 | 101 / 9 | 2438 / 2318 | 2441 / 2319 | yes | 0.0 / 0.0 (1) |
//! | 100 | 0 | 25 | 0.00 / 0.58 | 200 / 200 | 233 / 233 | 101 / 12 | 2172 / 1833 | 2453 / 1656 | yes | 0.0 / 0.0 (1) |
//! | 100 | 20 | 0 | 0.00 / 0.00 | 150 / 150 | 167 / 167 | 97 / 9 | 2314 / 2447 | 2448 / 2310 | yes | 0.0 / 0.0 (2) |
//! | 100 | 20 | 5 | 0.00 / 0.39 | 150 / 150 | 167 / 167 | 95 / 9 | 2274 / 2314 | 2451 / 2165 | yes | 0.3 / 0.1 (7) |
//! | 100 | 20 | 25 | 0.00 / 0.72 | 200 / 200 | 250 / 250 | 99 / 12 | 2050 / 1828 | 2453 / 1538 | yes | 0.0 / 0.0 (1) |
//! | 250 | 0 | 0 | 0.00 / 0.00 | 283 / 283 | 283 / 283 | 251 / 17 | 1592 / 1414 | 1417 / 1584 | yes | 0.0 / 0.0 (1) |
//! | 250 | 0 | 5 | 0.00 / 0.33 | 317 / 317 | 317 / 317 | 251 / 18 | 2434 / 2323 | 2442 / 2305 | yes | 0.1 / 0.1 (18) |
//! | 250 | 0 | 25 | 0.00 / 0.64 | 350 / 350 | 383 / 383 | 251 / 21 | 2342 / 1828 | 2446 / 1778 | yes | 0.0 / 0.0 (2) |
//! | 250 | 20 | 0 | 0.00 / 0.00 | 300 / 300 | 317 / 317 | 248 / 17 | 2425 / 2442 | 2444 / 2416 | yes | 0.0 / 0.0 (3) |
//! | 250 | 20 | 5 | 0.00 / 0.17 | 317 / 317 | 317 / 317 | 248 / 18 | 2420 / 2310 | 2441 / 2295 | yes | 0.0 / 0.0 (1) |
//! | 250 | 20 | 25 | 0.00 / 0.78 | 367 / 367 | 417 / 417 | 246 / 21 | 2275 / 1818 | 2445 / 1702 | yes | 0.0 / 0.0 (4) |
//! | 2000 | 0 | 25 | 0.00 / 1.25 | 2267 / 2267 | 3933 / 3933 | 2001 / 122 | 2456 / 1718 | 2399 / 1829 | yes | 0.0 / 0.0 (2) |
//!
//! Against the goals:
//!
//! - Bandwidth: at most 2.45 KB/s per peer and direction, headers and tags included (the
//!   worst row, counting what a lossy sender emitted before its simulated loss): met, by
//!   construction (the send budget of 2450 B/s, plus a first burst of 0.05 s of it and one
//!   datagram of overdraft, once per session), over IPv6 too (`tests/netplay_sync.rs`).
//! - At 100 ms RTT, ±20 ms jitter on each direction and 5% loss: 150 ms median, 0.14-0.42%
//!   of the joiner's frames stalled over several runs (0.39% today).
//! - At 250 ms RTT and 25% loss: 0.64% stalled without jitter, 0.78% with ±20 ms (goal 2%).
//! - At 2 s RTT and 25% loss the session stays up with no desync, 1.25% stalled.
//!
//! The p95 latencies above the medians are mostly the first seconds: the first lead comes from
//! the handshake's single round-trip sample (`SRTT + 4 * RTTVAR`, about 3 x RTT) and holds
//! until every player has measured 60 of its own input round trips. The joiner's stalls come
//! from losses during play (`RUST_LOG=framelock=debug` logs each wait with its frame, lead
//! and length, and each lead change with the round trip behind it).
//!
//! The last column is this machine's timer latency: on a 2-core VM a thread asleep for 2-16 ms
//! wakes more than 4 ms late 5-6% of the time, and the conditioner sends a datagram when the
//! peer's network thread wakes for it. With two sessions at once (four peers on two cores), up
//! to 4% of a peer's datagrams leave 4 ms or more late, which costs the goal row a frame;
//! hence one session at a time by default.
//!
//! Why the default budget is 2450 B/s: the lead covers the 99th percentile of the input round
//! trip, which at ±20 ms on each direction sits a few milliseconds under the 9-frame line, so
//! anything that delays one sample in a hundred costs a frame of lead. On a lossy link a joiner
//! wants a CTRL every frame; 2450 B/s fits about 59 of the 60 a second. Pinning the lead shows
//! the trade (`cargo bench --bench lockstep_sim -- fixed_lead`, 6 seeds of 65 s):
//!
//! | send budget | lead 9 (150 ms): stalled, mean (range) | lead 10 (167 ms) | up / down |
//! |---|---|---|---|
//! | 2400 B/s | 0.44% (0.31-0.53%) | 0.05% | 2.40 / 2.26 KB/s |
//! | 2450 B/s (default) | 0.32% (0.17-0.53%) | 0.04% | 2.45 / 2.28 KB/s |
//! | 2800 B/s | 0.22% (0.14-0.39%) | 0.02% | 2.48 / 2.30 KB/s |
//! | none | 0.23% (0.14-0.39%) | 0.02% | 2.49 / 2.30 KB/s |
//!
//! A budget of 2500 B/s, the goal itself, gains nothing over 2450 and leaves no room for the
//! bucket's first burst; a wider window for the lead's percentile (8 or 16 s) keeps the lead
//! up longer after a noisy reading.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod smoke;

#[derive(Clone, Copy)]
struct Scenario {
    rtt_ms: u32,
    jitter_ms: u32,
    loss_pct: u32,
}

impl Scenario {
    fn netsim(&self, seed: u32) -> String {
        format!(
            "delay={}ms,jitter={}ms,loss={}%,seed={seed}",
            self.rtt_ms / 2,
            self.jitter_ms,
            self.loss_pct
        )
    }
}

/// One peer's numbers.
struct PeerRun {
    stall_pct: f64,
    lat_median_ms: f64,
    lat_p95_ms: f64,
    /// What the peer sent, before the simulated loss.
    up_bps: f64,
    down_bps: f64,
    lead: u64,
    rtt_ms: u64,
    desyncs: u64,
    frames: u64,
    checksum: String,
    /// Datagrams the conditioner released 4 ms or more late, % of those released.
    late_pct: f64,
    late_max_ms: f64,
}

struct Outcome {
    scenario: Scenario,
    /// Host first, then the joiner; `Err` with the reason if a process failed.
    peers: Result<[PeerRun; 2], String>,
}

impl Outcome {
    fn in_sync(&self) -> bool {
        self.peers.as_ref().is_ok_and(|[h, j]| {
            h.checksum == j.checksum && h.desyncs == 0 && j.desyncs == 0 && h.frames == j.frames
        })
    }
}

const FRAME_MS: f64 = 1000.0 / 60.0;

fn spawn(dir: &Path, label: &str, args: &[String]) -> Child {
    fixtures::framelock(dir)
        .args(args)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(dir.join(format!("{label}.log"))).expect("log file"))
        .spawn()
        .expect("spawn framelock")
}

/// Waits for `child` until `deadline`; kills it past that.
fn wait(child: &mut Child, deadline: Instant) -> Result<(), String> {
    loop {
        match child.try_wait() {
            Ok(Some(s)) if s.success() => return Ok(()),
            Ok(Some(s)) => return Err(format!("exited with {s}")),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("overran its deadline; killed".into());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

fn peer_run(stats: &Value) -> Result<PeerRun, String> {
    let u = |k: &str| stats[k].as_u64().ok_or(format!("no {k} in stats"));
    let session_s = stats["session_s"]
        .as_f64()
        .ok_or("no session_s")?
        .max(0.001);
    let frames = u("frames")?;
    let lat = &stats["input_latency_frames"];
    let lat_ms = |q: &str| lat[q].as_u64().map_or(f64::NAN, |f| f as f64 * FRAME_MS);
    let left_socket = (u("bytes_sent")? - u("lobby_bytes_sent")?) as f64 / session_s;
    let up_bps = left_socket * fixtures::emitted_per_sent(stats).ok_or("no netsim in stats")?;
    Ok(PeerRun {
        stall_pct: u("stall_frames")? as f64 * 100.0 / frames.max(1) as f64,
        lat_median_ms: lat_ms("median"),
        lat_p95_ms: lat_ms("p95"),
        // After the lobby (the handshake and start state are a one-time cost), over the time
        // they were counted in (play plus the host's wait for its joiners to finish).
        up_bps,
        down_bps: (u("bytes_received")? - u("lobby_bytes_received")?) as f64 / session_s,
        lead: stats["lead"].as_u64().unwrap_or(0),
        rtt_ms: stats["rtt_ms"].as_u64().unwrap_or(0),
        desyncs: u("desyncs_detected")?,
        frames,
        checksum: stats["checksum"].as_str().unwrap_or("").to_string(),
        late_pct: stats["netsim"]["released_late"]
            .as_f64()
            .unwrap_or(f64::NAN)
            * 100.0
            / stats["netsim"]["released"]
                .as_f64()
                .unwrap_or(f64::NAN)
                .max(1.0),
        late_max_ms: stats["netsim"]["late_max_ms"].as_f64().unwrap_or(f64::NAN),
    })
}

fn read_stats(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

fn run(scenario: Scenario, secs: u64, dir: &Path) -> Outcome {
    let frames = (secs * 60).to_string();
    let port = fixtures::free_port();
    let host_args: Vec<String> = [
        "host",
        "--headless",
        "--port",
        &port.to_string(),
        "--lobby-timeout",
        "60",
        "--frames",
        &frames,
        "--bot",
        "1",
        "--netsim",
        &scenario.netsim(11),
        "--stats-json",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([dir.join("host.json").display().to_string()])
    .collect();
    let join_args: Vec<String> = [
        "join",
        &format!("127.0.0.1:{port}"),
        "--headless",
        "--frames",
        &frames,
        "--bot",
        "2",
        "--netsim",
        &scenario.netsim(22),
        "--stats-json",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([dir.join("join.json").display().to_string()])
    .collect();
    let budget = std::env::var("FRAMELOCK_BENCH_BUDGET").ok();
    let budget_args = budget
        .iter()
        .flat_map(|b| ["--send-budget".to_string(), b.clone()]);
    let host_args: Vec<String> = host_args.into_iter().chain(budget_args.clone()).collect();
    let join_args: Vec<String> = join_args.into_iter().chain(budget_args).collect();
    let mut host = spawn(dir, "host", &host_args);
    // The joiner retries its Hello; the host only has to be up within the handshake timeout.
    std::thread::sleep(Duration::from_millis(300));
    let mut joiner = spawn(dir, "join", &join_args);
    // Stalls at a 2 s round trip and the start-state transfer take a while; a hang does not.
    let deadline = Instant::now() + Duration::from_secs(secs * 2 + 60);
    let j = wait(&mut joiner, deadline);
    let h = wait(&mut host, deadline);
    let peers = h
        .map_err(|e| format!("host {e}"))
        .and(j.map_err(|e| format!("joiner {e}")))
        .and_then(|()| {
            Ok([
                peer_run(&read_stats(&dir.join("host.json"))?)?,
                peer_run(&read_stats(&dir.join("join.json"))?)?,
            ])
        });
    Outcome { scenario, peers }
}

fn row(o: &Outcome) -> String {
    let s = o.scenario;
    let head = format!("| {} | {} | {} |", s.rtt_ms, s.jitter_ms, s.loss_pct);
    match &o.peers {
        Err(e) => format!("{head} failed: {e} | | | | | | |"),
        Ok([h, j]) => format!(
            "{head} {:.2} / {:.2} | {:.0} / {:.0} | {:.0} / {:.0} | {} / {} | {:.0} / {:.0} | {:.0} / {:.0} | {} | {:.1} / {:.1} ({:.0}) |",
            h.stall_pct,
            j.stall_pct,
            h.lat_median_ms,
            j.lat_median_ms,
            h.lat_p95_ms,
            j.lat_p95_ms,
            h.rtt_ms,
            h.lead,
            h.up_bps,
            h.down_bps,
            j.up_bps,
            j.down_bps,
            if o.in_sync() { "yes" } else { "NO" },
            h.late_pct,
            j.late_pct,
            h.late_max_ms.max(j.late_max_ms),
        ),
    }
}

/// Every run of one scenario (`FRAMELOCK_BENCH_ONLY` may list one several times).
fn runs_of(outcomes: &[Outcome], rtt: u32, jitter: u32, loss: u32) -> Vec<&Outcome> {
    outcomes
        .iter()
        .filter(|o| {
            let s = o.scenario;
            s.rtt_ms == rtt && s.jitter_ms == jitter && s.loss_pct == loss
        })
        .collect()
}

/// The worst value of `f` over `runs`' peers (as `{:.prec$}{unit}`), and in how many runs
/// `ok` held for it.
fn worst_of(
    runs: &[&Outcome],
    f: impl Fn(&PeerRun) -> f64,
    ok: impl Fn(f64) -> bool,
    (prec, unit): (usize, &str),
) -> String {
    let values: Vec<f64> = runs.iter().map(|o| worst(o, &f)).collect();
    let met = values.iter().filter(|v| ok(**v)).count();
    let w = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let verdict = verdict(met == runs.len());
    match runs.len() {
        1 => format!("worst peer {w:.prec$}{unit}: {verdict}"),
        n => format!("worst peer {w:.prec$}{unit}: {verdict}, in {met} of {n} runs"),
    }
}

fn worst(o: &Outcome, f: impl Fn(&PeerRun) -> f64) -> f64 {
    o.peers
        .as_ref()
        .map_or(f64::INFINITY, |[h, j]| f(h).max(f(j)))
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    // The short form: the goal's scenario (100/20/5) for 4 s.
    let secs = smoke::secs(60, 4);
    let jobs: usize = smoke::var("FRAMELOCK_BENCH_JOBS", 1, 1).max(1);
    let mut queue = Vec::new();
    for rtt_ms in [20, 100, 250] {
        for jitter_ms in [0, 20] {
            for loss_pct in [0, 5, 25] {
                queue.push(Scenario {
                    rtt_ms,
                    jitter_ms,
                    loss_pct,
                });
            }
        }
    }
    queue.push(Scenario {
        rtt_ms: 2000,
        jitter_ms: 0,
        loss_pct: 25,
    });
    // `FRAMELOCK_BENCH_ONLY=100/20/5,100/10/5` (RTT/jitter/loss) runs just those scenarios,
    // in or outside the matrix.
    let only = std::env::var("FRAMELOCK_BENCH_ONLY")
        .ok()
        .or_else(|| smoke::smoke().then(|| "100/20/5".to_string()));
    if let Some(only) = only {
        queue = only
            .split(',')
            .map(|s| {
                let n: Vec<u32> = s.trim().split('/').filter_map(|n| n.parse().ok()).collect();
                match n[..] {
                    [rtt_ms, jitter_ms, loss_pct] => Scenario {
                        rtt_ms,
                        jitter_ms,
                        loss_pct,
                    },
                    _ => smoke::fail(format!(
                        "FRAMELOCK_BENCH_ONLY: {s:?} is not RTT/jitter/loss in ms, ms, %"
                    )),
                }
            })
            .collect();
    }
    let total = queue.len();
    println!(
        "netplay benchmark: {total} runs of {secs} s, {jobs} at a time (built-in game, 2 players, bots)"
    );
    queue.reverse(); // pop() from the front of the matrix
    let queue = Arc::new(Mutex::new(queue));
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let root = tempfile::tempdir().expect("temp dir");
    let t0 = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let (queue, outcomes, root) = (queue.clone(), outcomes.clone(), root.path());
            scope.spawn(move || loop {
                let Some(s) = queue.lock().unwrap().pop() else {
                    return;
                };
                let dir = root.join(format!("rtt{}-j{}-l{}", s.rtt_ms, s.jitter_ms, s.loss_pct));
                std::fs::create_dir_all(&dir).unwrap();
                let o = run(s, secs, &dir);
                eprintln!("[{:>5.0} s] {}", t0.elapsed().as_secs_f64(), row(&o));
                if o.peers.is_err() || !o.in_sync() {
                    for peer in ["host", "join"] {
                        let log = std::fs::read_to_string(dir.join(format!("{peer}.log")))
                            .unwrap_or_default();
                        let tail: Vec<&str> = log.lines().rev().take(8).collect();
                        eprintln!("  {peer} log tail:\n    {}", tail.join("\n    "));
                    }
                }
                outcomes.lock().unwrap().push(o);
            });
        }
    });
    let mut outcomes = std::mem::take(&mut *outcomes.lock().unwrap());
    outcomes.sort_by_key(|o| (o.scenario.rtt_ms, o.scenario.jitter_ms, o.scenario.loss_pct));

    println!();
    println!(
        "| RTT ms | jitter ± ms (per direction) | loss % (per direction) | stalled frames % host / join | added latency median ms host / join | p95 ms host / join | measured RTT ms / lead frames | host B/s up / down | join B/s up / down | checksums match | released late % host / join (latest ms) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|---:|");
    for o in &outcomes {
        println!("{}", row(o));
    }
    println!();
    println!(
        "Stalled frames: display slots in which a frame was due and the lockstep had none, as a share of all frames. Latency: frames from sampling a pad to emulating it x 1000/60. B/s are during play (the handshake and start state before it are left out) and include 28 bytes of UDP/IPv4 headers per datagram; \"up\" counts what the peer sent, before the simulated loss (what left the socket, scaled by the datagrams the conditioner took over those it released), \"down\" what reached it. Released late: datagrams the conditioner sent 4 ms or more after their due time (this machine's timer latency, added to the configured link), and the latest such release."
    );

    println!();
    println!("Goals:");
    let runs = runs_of(&outcomes, 100, 20, 5);
    if !runs.is_empty() {
        println!(
            "- 100 ms RTT, ±20 ms jitter, 5% loss: stalled frames <= 0.5% ({}), median added latency <= RTT + 50 = 150 ms ({})",
            worst_of(&runs, |p| p.stall_pct, |v| v <= 0.5, (2, "%")),
            worst_of(&runs, |p| p.lat_median_ms, |v| v <= 150.0, (0, " ms"))
        );
    }
    for jitter in [0, 20] {
        let runs = runs_of(&outcomes, 250, jitter, 25);
        if !runs.is_empty() {
            println!(
                "- 250 ms RTT, ±{jitter} ms jitter, 25% loss: stalled frames <= 2% ({})",
                worst_of(&runs, |p| p.stall_pct, |v| v <= 2.0, (2, "%"))
            );
        }
    }
    let runs = runs_of(&outcomes, 2000, 0, 25);
    if !runs.is_empty() {
        let up = runs.iter().all(|o| o.peers.is_ok());
        let synced = runs.iter().all(|o| o.in_sync());
        println!(
            "- 2 s RTT, 25% loss: session stays up ({}) with no desync ({})",
            verdict(up),
            verdict(synced)
        );
    }
    let bw = outcomes
        .iter()
        .map(|o| worst(o, |p| p.up_bps.max(p.down_bps)))
        .fold(0.0, f64::max);
    let within = outcomes
        .iter()
        .filter(|o| worst(o, |p| p.up_bps.max(p.down_bps)) <= 2500.0)
        .count();
    println!(
        "- bandwidth <= 2500 B/s per peer per direction (worst {bw:.0} B/s, counting up as emitted before the simulated loss: {}; within it in {within} of {total} runs)",
        verdict(bw <= 2500.0)
    );
    let synced = outcomes.iter().filter(|o| o.in_sync()).count();
    println!("- checksums matched in {synced} of {total} runs");
    println!("total wall time {:.0} s", t0.elapsed().as_secs_f64());
    // The table shows every run; a session that failed or desynchronised still fails the
    // benchmark (the logs' ends are above).
    if synced < total {
        smoke::fail(format!(
            "{} of {total} runs failed or desynchronised",
            total - synced
        ));
    }
}
