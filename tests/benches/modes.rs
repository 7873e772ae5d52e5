//! Strict and optimistic keyframe lockstep side by side over real UDP (numbers, not
//! pass/fail): `cargo bench --bench modes`.
//!
//! Two scenarios on the built-in game with bots, each played in both modes with the same
//! bots and impairments (`--netsim` on what each process sends; the host sends clean unless
//! said):
//! - **one slow player**: 3 players; the host, a joiner 20 ms away (`delay=20ms`) and a joiner
//!   about 300 ms away on a lossy link (`delay=300ms,jitter=20ms,loss=10%`);
//! - **two equal players**: 100 ms round trip, ±20 ms, 5% loss (`delay=50ms,jitter=10ms,
//!   loss=5%` on both).
//!
//! Per player: the share of frames stalled, median and 95th percentile added input latency
//! (frames from a sample to the frame it is applied on), and bytes per second sent and
//! received, UDP/IP headers included (the host's over all its links, divided by the
//! joiners). `FRAMELOCK_BENCH_SECS` sets the play time (default 60 s).
//!
//! # Results
//!
//! `cargo bench --bench modes` plays two scenarios in both modes over real UDP (built-in game,
//! bots, 60 s each, `--netsim` on what each process sends): three players, a joiner 20 ms away
//! (`delay=20ms`) and one about 300 ms away on a lossy link (`delay=300ms,jitter=20ms,
//! loss=10%`); and two equal players at 100 ms, ±20 ms, 5% loss (`delay=50ms,jitter=10ms,
//! loss=5%` on both). Latency is a sample's frames until its frame, in ms; bytes per second
//! include UDP/IP headers (the host's over its links, divided by the joiners).
//!
//! | mode | player | stalled | latency median / p95 | sent / received B/s |
//! |---|---|---|---|---|
//! | strict | host | 0.00% | 350 / 433 ms | 2433 / 1746 |
//! | strict | 20 ms | 0.00% | 350 / 450 ms | 1224 / 1927 |
//! | strict | 300 ms, 10% loss | 0.39% | 350 / 433 ms | 2244 / 2881 |
//! | optimistic | host | 0.00% | 33 / 33 ms | 3086 / 2323 |
//! | optimistic | 20 ms | 0.00% | 50 / 50 ms | 2365 / 2461 |
//! | optimistic | 300 ms, 10% loss | 0.06% | 383 / 383 ms | 2248 / 3650 |
//!
//! | mode | player | stalled | latency median / p95 | sent / received B/s |
//! |---|---|---|---|---|
//! | strict | host | 0.00% | 150 / 167 ms | 2329 / 2352 |
//! | strict | joiner | 0.11% | 150 / 167 ms | 2352 / 2325 |
//! | optimistic | host | 0.00% | 17 / 17 ms | 2340 / 2354 |
//! | optimistic | joiner | 0.22% | 183 / 200 ms | 2356 / 2335 |
//!
//! Optimistic mode sends a CTRL with every sample and an UPDATE every frame (K 1), about
//! 2.4 KB/s each way; the host's side of a three-player session sends about 3 KB/s to each
//! joiner. The simulated version (`cargo test --release --lib optimistic_tests -- --nocapture`,
//! 20 ms round trips, the slow player at 300 ms with 10% loss each way, 10,000 frames): the
//! fast players stall 0% at 3 frames median in optimistic mode against 22 frames for everyone
//! in strict mode, with 3 and with 8 players.

use std::path::Path;
use std::process::Child;

use serde_json::Value;

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod procs;
mod smoke;

use procs::{finished, spawn, strings, wait_for};

/// One session: the host with `host_netsim`, then one joiner per entry of `joiners`;
/// returns every player's stats, host first.
fn session(
    d: &Path,
    tag: &str,
    mode: &str,
    frames: &str,
    host_netsim: Option<&str>,
    joiners: &[Option<&str>],
) -> Vec<Value> {
    let port = fixtures::free_port().to_string();
    let players = (joiners.len() + 1).to_string();
    let host_label = format!("{tag}-{mode}-host");
    let mut args = strings(&[
        "host",
        "--headless",
        "--port",
        &port,
        "--players",
        &players,
        "--mode",
        mode,
        "--frames",
        frames,
        "--bot",
        "1",
        "--no-record",
    ]);
    if let Some(n) = host_netsim {
        args.extend(strings(&["--netsim", n]));
    }
    let host = spawn(d, &host_label, &args);
    wait_for(d, &host_label, "hosting on udp port");
    let labels: Vec<String> = (0..joiners.len())
        .map(|i| format!("{tag}-{mode}-join{}", i + 1))
        .collect();
    let procs: Vec<Child> = joiners
        .iter()
        .zip(&labels)
        .enumerate()
        .map(|(i, (netsim, label))| {
            let mut a = strings(&[
                "join",
                &format!("127.0.0.1:{port}"),
                "--headless",
                "--frames",
                frames,
                "--bot",
                &(i + 2).to_string(),
                "--no-record",
            ]);
            if let Some(n) = netsim {
                a.extend(strings(&["--netsim", n]));
            }
            spawn(d, label, &a)
        })
        .collect();
    let joined: Vec<Value> = procs
        .into_iter()
        .zip(&labels)
        .map(|(p, l)| finished(p, d, l))
        .collect();
    let mut all = vec![finished(host, d, &host_label)];
    all.extend(joined);
    all
}

fn row(mode: &str, player: &str, s: &Value, links: f64) {
    let ms = |f: &Value| f.as_f64().unwrap_or(f64::NAN) * 1000.0 / 60.0;
    let frames = s["frames"].as_f64().unwrap_or(1.0);
    let secs = s["session_s"].as_f64().unwrap_or(1.0);
    let rate = |k: &str| s[k].as_f64().unwrap_or(f64::NAN) / secs / links;
    println!(
        "| {mode} | {player} | {:.2}% | {:.0} / {:.0} ms | {:.0} / {:.0} |",
        s["stall_frames"].as_f64().unwrap_or(0.0) / frames * 100.0,
        ms(&s["input_latency_frames"]["median"]),
        ms(&s["input_latency_frames"]["p95"]),
        rate("bytes_sent"),
        rate("bytes_received"),
    );
}

fn in_sync(all: &[Value]) -> bool {
    all.iter()
        .map(|s| s["checksum"].as_str().unwrap_or("-"))
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        == 1
}

fn main() {
    // The short form: 4 s each.
    let secs = smoke::secs(60, 4);
    let frames = (secs * 60).to_string();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut synced = true;
    println!("One slow player: host, a joiner at 20 ms, a joiner at ~300 ms with 10% loss");
    println!();
    println!("| mode | player | stalled | latency median / p95 | sent / received B/s |");
    println!("|---|---|---|---|---|");
    for mode in ["strict", "optimistic"] {
        let all = session(
            d,
            "slow",
            mode,
            &frames,
            None,
            &[Some("delay=20ms"), Some("delay=300ms,jitter=20ms,loss=10%")],
        );
        synced &= in_sync(&all);
        row(mode, "host", &all[0], 2.0);
        row(mode, "20 ms", &all[1], 1.0);
        row(mode, "300 ms, 10% loss", &all[2], 1.0);
    }
    println!();
    println!("Two equal players: 100 ms round trip, ±20 ms, 5% loss");
    println!();
    println!("| mode | player | stalled | latency median / p95 | sent / received B/s |");
    println!("|---|---|---|---|---|");
    let far = "delay=50ms,jitter=10ms,loss=5%";
    for mode in ["strict", "optimistic"] {
        let all = session(d, "equal", mode, &frames, Some(far), &[Some(far)]);
        synced &= in_sync(&all);
        row(mode, "host", &all[0], 1.0);
        row(mode, "joiner", &all[1], 1.0);
    }
    println!();
    println!(
        "checksums: {}",
        if synced {
            "equal within each run"
        } else {
            "DIFFER"
        }
    );
    if !synced {
        smoke::fail("the checksums differ: a session desynchronised");
    }
}
