//! What spectators cost the players, over real UDP (numbers, not pass/fail):
//! `cargo bench --bench spectators`.
//!
//! Two players with bots on the built-in game, 100 ms RTT between them (each impairs what it
//! sends with `--netsim delay=50ms,jitter=10ms,loss=2%`), played twice with the same bots:
//! alone, and with 16 spectators attached 5 s in (each 20 ms from the host,
//! `--netsim delay=10ms` on what it sends). Per player: median and 95th percentile added
//! input latency and the share of frames stalled, side by side. Per spectator: what the
//! host sent it per second, UDP/IP headers included (its bytes received after the start
//! state over its session time), the start state apart, and its delay behind the players
//! as its status bar shows it. `FRAMELOCK_BENCH_SECS` sets the play time (default 60 s);
//! spectators attach a third of the way into sessions under 15 s, and under 3 s there is no
//! time to watch: the bench says so. `FRAMELOCK_BENCH_SPECTATORS` sets their number.
//! `FRAMELOCK_BENCH_SMOKE=1` (CI's short form): 6 s, 2 spectators attached 2 s in.
//!
//! # Results
//!
//! `cargo bench --bench spectators`: two players with bots on the built-in game, 100 ms RTT
//! between them (`--netsim delay=50ms,jitter=10ms,loss=2%` on each), 60 s, played alone and
//! then with 16 spectators attached 5 s in (`--netsim delay=10ms` on each).
//!
//! | player | alone: latency median / p95, stalled | with 16 spectators |
//! |---|---|---|
//! | 1 (host) | 150 / 150 ms, 0.00% | 150 / 167 ms, 0.00% |
//! | 2 | 150 / 150 ms, 0.00% | 150 / 167 ms, 0.11% |
//!
//! Upload per spectator from the host, UDP/IP headers included: 1.30 KB/s (median; max 1.30;
//! goal 2.5 KB/s), plus 0.9 KiB once for the handshake and the built-in game's state
//! (Genesis Plus GX with Airstriker: 12 KiB compressed). Delay behind the players as the
//! status bar shows it: 47 ms median. Checksums equal across players and spectators. Two runs
//! of the same session differ by a few hundredths of a percent of stalls and a frame of p95
//! either way; spectators or not.
//!
//! The simulated run measures the delay directly (the time from the host's machine running a
//! frame to the spectator running it), with four seeds, 2% loss, ±20 ms jitter, spectators
//! from 10 s to 60 s, one of them 300 ms away and one whose link dies at 20 s:
//! `cargo bench --bench lockstep_sim -- spectators`.
//!
//! | spectators | players' worst stall | median latency | p95 |
//! |---|---|---|---|
//! | 0 | 0.182% | 150 ms | 167 ms |
//! | 16 | 0.182% | 150 ms | 150 ms |
//!
//! Upload per spectator 1.33 KB/s (max 1.36); delay behind the host 0 ms at 60 ms RTT (a
//! spectator shows a frame once its inputs are known, the host's player when its clock says
//! so) and 83 to 100 ms at 300 ms RTT over the seeds (goal: one round trip plus 100 ms).
//! The players' numbers do not depend on the spectators:
//! `spectators_change_nothing_for_the_players` runs the same seed with and without them and
//! compares.

use std::path::Path;
use std::process::Child;
use std::time::Duration;

use serde_json::Value;

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod procs;
mod smoke;

use procs::{finished, spawn, stats, strings, wait_for};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// One session of `frames` frames with `spectators` watching from `attach` on; the players'
/// stats.
fn session(
    d: &Path,
    tag: &str,
    frames: &str,
    spectators: usize,
    attach: Duration,
) -> (Value, Value, Vec<Value>) {
    let port = fixtures::free_port().to_string();
    let far = "delay=50ms,jitter=10ms,loss=2%";
    let host_label = format!("{tag}-host");
    let host = spawn(
        d,
        &host_label,
        &strings(&[
            "host",
            "--headless",
            "--port",
            &port,
            "--frames",
            frames,
            "--bot",
            "1",
            "--no-record",
            "--netsim",
            far,
        ]),
    );
    wait_for(d, &host_label, "hosting on udp port");
    let join_label = format!("{tag}-join");
    let join = spawn(
        d,
        &join_label,
        &strings(&[
            "join",
            &format!("127.0.0.1:{port}"),
            "--headless",
            "--frames",
            frames,
            "--bot",
            "2",
            "--no-record",
            "--netsim",
            far,
        ]),
    );
    wait_for(d, &join_label, "netplay: in session");
    std::thread::sleep(attach);
    let mut watchers: Vec<Child> = (0..spectators)
        .map(|i| {
            spawn(
                d,
                &format!("{tag}-s{i}"),
                &strings(&[
                    "spectate",
                    &format!("127.0.0.1:{port}"),
                    "--headless",
                    "--frames",
                    frames,
                    "--no-record",
                    "--netsim",
                    "delay=10ms",
                ]),
            )
        })
        .collect();
    // A spectator a few frames behind when the host leaves at its frame limit ends with
    // "the host left" and a non-zero status; its stats, checked below, say what it saw.
    for w in &mut watchers {
        w.wait().unwrap();
    }
    let join = finished(join, d, &join_label);
    let host = finished(host, d, &host_label);
    let specs = (0..spectators)
        .map(|i| stats(d, &format!("{tag}-s{i}")))
        .collect();
    (host, join, specs)
}

fn cells(s: &Value) -> String {
    let ms = |f: &Value| f.as_f64().unwrap_or(f64::NAN) * 1000.0 / 60.0;
    let frames = s["frames"].as_f64().unwrap_or(1.0);
    format!(
        "{:.0} / {:.0} ms, {:.2}%",
        ms(&s["input_latency_frames"]["median"]),
        ms(&s["input_latency_frames"]["p95"]),
        s["stall_frames"].as_f64().unwrap_or(0.0) / frames * 100.0
    )
}

fn main() {
    // The short form: 6 s, 2 spectators attached 2 s in.
    let secs = smoke::secs(60, 6);
    let n = smoke::var("FRAMELOCK_BENCH_SPECTATORS", 16, 2);
    // Spectators attach 5 s in, or a third of the way into a shorter session, and watch at
    // least 2 s: a session that ends before they can attach measures nothing.
    let attach = 5.min(secs / 3);
    if attach < 1 || secs - attach < 2 {
        smoke::fail(format!(
            "FRAMELOCK_BENCH_SECS={secs} is too short: spectators attach a third of the way in \
             (at most 5 s) and watch at least 2 s; use 3 s or more"
        ));
    }
    let frames = (secs * 60).to_string();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let attach = Duration::from_secs(attach);
    let (h0, j0, _) = session(d, "alone", &frames, 0, attach);
    let (h1, j1, specs) = session(d, "watched", &frames, n, attach);
    let sums = |v: &[&Value]| {
        v.iter()
            .map(|s| s["checksum"].as_str().unwrap_or("-").to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    let mut watched: Vec<&Value> = vec![&h1, &j1];
    watched.extend(specs.iter());
    let in_sync = sums(&[&h0, &j0]) == 1 && sums(&watched) == 1;
    println!("| player | alone: latency median / p95, stalled | {n} spectators |");
    println!("|---|---|---|");
    println!("| 1 (host) | {} | {} |", cells(&h0), cells(&h1));
    println!("| 2 | {} | {} |", cells(&j0), cells(&j1));
    let per_spectator: Vec<f64> = specs
        .iter()
        .map(|s| {
            let f = |k: &str| s[k].as_f64().unwrap_or(f64::NAN);
            (f("bytes_received") - f("lobby_bytes_received")) / f("session_s")
        })
        .collect();
    let start: Vec<f64> = specs
        .iter()
        .map(|s| s["lobby_bytes_received"].as_f64().unwrap_or(f64::NAN))
        .collect();
    let delay: Vec<f64> = specs
        .iter()
        .filter_map(|s| s["delay_ms"]["median"].as_f64())
        .collect();
    let worst = per_spectator.iter().copied().fold(0.0, f64::max);
    for (i, v) in per_spectator.iter().enumerate() {
        smoke::number(&format!("watched-s{i}'s bytes per second"), *v);
    }
    smoke::number("the spectators' delay", median(delay.clone()));
    println!(
        "upload per spectator from the host, UDP/IP headers included: median {:.0} B/s, \
         max {worst:.0} B/s; start state and handshake: {:.1} KiB each",
        median(per_spectator.clone()),
        median(start) / 1024.0
    );
    println!(
        "spectators' delay behind the players (status bar): median {:.0} ms",
        median(delay)
    );
    println!(
        "checksums: {}",
        if in_sync {
            "equal within each run (players and spectators)"
        } else {
            "DIFFER"
        }
    );
    if !in_sync {
        smoke::fail("the checksums differ: the players or spectators desynchronised");
    }
}
