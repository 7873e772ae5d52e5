//! Delay through a dedicated server over real UDP (numbers, not pass/fail):
//! `cargo bench --bench serve_latency`.
//!
//! Real processes on loopback with bots on the built-in game, each impairing its own
//! outgoing datagrams with `--netsim`, ±10 ms jitter and 1% loss on every direction:
//! - direct: `host` and `join`, 50 ms each way (100 ms RTT between the players);
//! - through a server halfway: `serve`, `host --server` and `join --room`, 25 ms each way
//!   on every sender (50 ms RTT from each player to the server).
//!
//! Per run and player: the median and 95th percentile added input latency (frames from a
//! pad sample to the frame it is applied on, in ms) and the share of frames stalled.
//! `FRAMELOCK_BENCH_SECS` sets the play time (default 60 s).
//!
//! # Results
//!
//! `cargo bench --bench serve_latency`: two players with bots on the built-in game, 60 s,
//! ±10 ms jitter and 1% loss on every direction (each process impairs what it sends with
//! `--netsim`). Direct: `host` and `join` with 100 ms RTT between them. Through a server
//! halfway: `serve`, `host --server` and `join --room`, 50 ms RTT from each player to the
//! server. The simulated run of the same scenarios is
//! `cargo bench --bench lockstep_sim -- server_halfway` (8 seeds each).
//!
//! | path | player | median latency | p95 | stalled | simulated median (8 seeds) |
//! |---|---|---|---|---|---|
//! | direct, 100 ms RTT | 1 (host) | 150 ms | 150 ms | 0.00% | |
//! | direct, 100 ms RTT | 2 | 150 ms | 150 ms | 0.06% | 133-150 ms |
//! | server halfway, 2 x 50 ms RTT | 1 | 100 ms | 100 ms | 0.06% | |
//! | server halfway, 2 x 50 ms RTT | 2 | 100 ms | 117 ms | 0.00% | 100 ms |
//!
//! Goal: at most 100 ms through the server where direct mode measures 150: met, both ends
//! in sync.

use serde_json::Value;

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod procs;
mod smoke;

use procs::{finished, spawn, strings, wait_for};

fn row(name: &str, player: &str, s: &Value) {
    let ms = |f: &Value| f.as_f64().unwrap_or(f64::NAN) * 1000.0 / 60.0;
    let frames = s["frames"].as_f64().unwrap_or(1.0);
    println!(
        "| {name} | {player} | {:.0} ms | {:.0} ms | {:.2}% | {} |",
        ms(&s["input_latency_frames"]["median"]),
        ms(&s["input_latency_frames"]["p95"]),
        s["stall_frames"].as_f64().unwrap_or(0.0) / frames * 100.0,
        s["checksum"].as_str().unwrap_or("-"),
    );
}

fn main() {
    // The short form: 4 s each way.
    let secs = smoke::secs(60, 4);
    let frames = (secs * 60).to_string();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    println!("| path | player | median latency | p95 | stalled | checksum |");
    println!("|---|---|---|---|---|---|");

    let port = fixtures::free_port().to_string();
    let far = "delay=50ms,jitter=10ms,loss=1%";
    let host = spawn(
        d,
        "direct-host",
        &strings(&[
            "host",
            "--headless",
            "--port",
            &port,
            "--frames",
            &frames,
            "--bot",
            "1",
            "--no-record",
            "--netsim",
            far,
        ]),
    );
    wait_for(d, "direct-host", "hosting on udp port");
    let join = spawn(
        d,
        "direct-join",
        &strings(&[
            "join",
            &format!("127.0.0.1:{port}"),
            "--headless",
            "--frames",
            &frames,
            "--bot",
            "2",
            "--no-record",
            "--netsim",
            far,
        ]),
    );
    let join = finished(join, d, "direct-join");
    let host = finished(host, d, "direct-host");
    row("direct, 100 ms RTT", "1 (host)", &host);
    row("direct, 100 ms RTT", "2", &join);

    let port = fixtures::free_port().to_string();
    let server = format!("127.0.0.1:{port}");
    let half = "delay=25ms,jitter=10ms,loss=1%";
    let mut serve = spawn(
        d,
        "serve",
        &strings(&[
            "serve",
            "--bind",
            "127.0.0.1",
            "--port",
            &port,
            "--netsim",
            half,
        ]),
    );
    wait_for(d, "serve", "serve: listening");
    let host = spawn(
        d,
        "room-host",
        &strings(&[
            "host",
            "--headless",
            "--server",
            &server,
            "--room",
            "bench",
            "--path",
            "relayed",
            "--frames",
            &frames,
            "--bot",
            "1",
            "--no-record",
            "--netsim",
            half,
        ]),
    );
    wait_for(d, "room-host", "your friends join");
    let join = spawn(
        d,
        "room-join",
        &strings(&[
            "join",
            &server,
            "--room",
            "bench",
            "--headless",
            "--frames",
            &frames,
            "--bot",
            "2",
            "--no-record",
            "--netsim",
            half,
        ]),
    );
    let join = finished(join, d, "room-join");
    let host = finished(host, d, "room-host");
    let _ = serve.kill();
    let _ = serve.wait();
    row("server halfway, 2 x 50 ms RTT", "1 (host)", &host);
    row("server halfway, 2 x 50 ms RTT", "2", &join);
}
