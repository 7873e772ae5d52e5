//! Rollback (speculation, on by default) against plain lockstep, numbers not pass/fail:
//! `cargo bench --bench speculate`.
//!
//! Two real processes on loopback, each impairing what it sends, both players with the
//! human-rate bot (`--bot SEED:human`: the pad changes about 10 times a second), for
//! `FRAMELOCK_BENCH_SECS` seconds (default 30) each, `FRAMELOCK_BENCH_RUNS` times (default
//! 3), on the built-in game and on Genesis Plus GX + Airstriker. Each run plays a session
//! with default flags and one with `--speculate off` back to back, and solo play of the same
//! game for as long: the table gives the medians over the runs of the joiner's numbers
//! (the host's are in the logs and close). Perceived latency: frames from a sample to the
//! first picture that used it (median / p95); rollbacks a second and their depth (frames run
//! again, median / p95); the most frames the picture ran ahead; desyncs; the joiner's CPU
//! (user + system at exit) against solo play's.
//!
//! Links: 100 ms round trip ±20 ms with 5% loss (`delay=50ms,jitter=20ms,loss=5%` on each
//! side), 250 ms ±20 ms with 25% loss, and 2 s with 25% loss (where the lead is about 130
//! frames: the picture must stay within the depth limit, 60).
//! `FRAMELOCK_BENCH_SMOKE=1` (CI's short form): 4 s, one run, the first link only.
//!
//! # Results
//!
//! See the README's table (the rows there come from a full run on a quiet machine).

use std::path::Path;

use serde_json::Value;

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod procs;
mod smoke;

use procs::{cpu_of, spawn, stats, strings, wait_for};

/// One 2-player session; the joiner's stats and CPU seconds.
fn session(d: &Path, game: &[String], frames: &str, link: &str, extra: &[&str]) -> (Value, f64) {
    let port = fixtures::free_port().to_string();
    let common = |a: &[&str]| -> Vec<String> {
        let mut v = strings(a);
        v.extend(strings(&[
            "--headless",
            "--frames",
            frames,
            "--no-record",
            "--netsim",
            link,
        ]));
        v.extend(strings(extra));
        v.extend(game.iter().cloned());
        v
    };
    let host = spawn(
        d,
        "host",
        &common(&["host", "--port", &port, "--bot", "1:human"]),
    );
    wait_for(d, "host", "hosting on udp port");
    let addr = format!("127.0.0.1:{port}");
    let join = spawn(d, "join", &common(&["join", &addr, "--bot", "2:human"]));
    let cpu = cpu_of(join, d, "join");
    cpu_of(host, d, "host");
    (stats(d, "join"), cpu)
}

/// What one row shows of one session.
#[derive(Default, Clone, Copy)]
struct Numbers {
    perceived: (f64, f64),
    rollbacks_per_s: f64,
    depth: (f64, f64),
    ahead_max: f64,
    desyncs: f64,
    cpu: f64,
}

fn numbers(s: &Value, cpu: f64, solo: f64) -> Numbers {
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let secs = f(&s["wall_s"]).max(1.0);
    Numbers {
        perceived: (
            f(&s["perceived_latency_frames"]["median"]),
            f(&s["perceived_latency_frames"]["p95"]),
        ),
        rollbacks_per_s: s["rollbacks"].as_f64().unwrap_or(0.0) / secs,
        depth: (
            f(&s["rollback_frames"]["median"]),
            f(&s["rollback_frames"]["p95"]),
        ),
        ahead_max: s["run_ahead"]["ahead_max"].as_f64().unwrap_or(0.0),
        desyncs: f(&s["desyncs_detected"]),
        cpu: cpu / solo,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n => v[n / 2],
    }
}

/// The medians of each number over the runs.
fn medians(runs: &[Numbers]) -> Numbers {
    let m = |pick: fn(&Numbers) -> f64| median(runs.iter().map(pick).collect());
    Numbers {
        perceived: (m(|n| n.perceived.0), m(|n| n.perceived.1)),
        rollbacks_per_s: m(|n| n.rollbacks_per_s),
        depth: (m(|n| n.depth.0), m(|n| n.depth.1)),
        ahead_max: m(|n| n.ahead_max),
        desyncs: runs.iter().map(|n| n.desyncs).fold(0.0, f64::max),
        cpu: m(|n| n.cpu),
    }
}

fn row(label: &str, n: &Numbers) -> String {
    smoke::number(&format!("{label}: the perceived latency"), n.perceived.0);
    smoke::number(&format!("{label}: the CPU against solo play"), n.cpu);
    let pair = |p: (f64, f64)| {
        if p.0.is_nan() {
            "-".to_string()
        } else {
            format!("{} / {}", p.0, p.1)
        }
    };
    format!(
        "| {label} | {} | {:.1} | {} | {} | {} | {:.2}x |",
        pair(n.perceived),
        n.rollbacks_per_s,
        pair(n.depth),
        n.ahead_max,
        n.desyncs,
        n.cpu
    )
}

fn main() {
    let secs = smoke::secs(30, 4);
    let short = smoke::smoke();
    let runs: usize = if short {
        1
    } else {
        std::env::var("FRAMELOCK_BENCH_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3)
    };
    let links: &[(&str, &str)] = if short {
        &[("100 ms ±20 ms, 5% loss", "delay=50ms,jitter=20ms,loss=5%")]
    } else {
        &[
            ("100 ms ±20 ms, 5% loss", "delay=50ms,jitter=20ms,loss=5%"),
            (
                "250 ms ±20 ms, 25% loss",
                "delay=125ms,jitter=20ms,loss=25%",
            ),
            ("2 s, 25% loss", "delay=1000ms,loss=25%"),
        ]
    };
    let frames = (secs * 60).to_string();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let g = fixtures::genesis();
    let genesis = strings(&[
        g.rom.to_str().unwrap(),
        "--core",
        g.core.to_str().unwrap(),
        "--option",
        "genesis_plus_gx_addr_error=disabled",
    ]);
    println!("2 players with the human-rate bot, {secs} s a session, medians of {runs} run(s); the joiner's numbers");
    println!();
    println!("| game, link, flags | perceived latency (frames, median / p95) | rollbacks/s | rollback depth (median / p95) | most ahead | desyncs | CPU x solo |");
    println!("|---|---|---|---|---|---|---|");
    for (name, game) in [("built-in", Vec::new()), ("Genesis Plus GX", genesis)] {
        for (link_name, link) in links {
            let (mut on, mut off) = (Vec::new(), Vec::new());
            for _ in 0..runs {
                // Solo play for as long, each run, so the ratio carries the machine's mood.
                let mut solo_args = strings(&[
                    "play",
                    "--headless",
                    "--frames",
                    &frames,
                    "--bot",
                    "1:human",
                ]);
                solo_args.push("--no-record".into());
                solo_args.extend(game.iter().cloned());
                let solo = cpu_of(spawn(d, "solo", &solo_args), d, "solo");
                let (s, cpu) = session(d, &game, &frames, link, &[]);
                on.push(numbers(&s, cpu, solo));
                let (s, cpu) = session(d, &game, &frames, link, &["--speculate", "off"]);
                off.push(numbers(&s, cpu, solo));
            }
            println!(
                "{}",
                row(&format!("{name}, {link_name}, default"), &medians(&on))
            );
            println!(
                "{}",
                row(
                    &format!("{name}, {link_name}, --speculate off"),
                    &medians(&off)
                )
            );
        }
    }
}
