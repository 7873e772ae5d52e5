//! What netplay costs in CPU over solo play (numbers, not pass/fail):
//! `cargo bench --bench netplay_cpu`.
//!
//! Genesis Plus GX + Airstriker at the core's own pace (60 fps), headless, with bots, for
//! `FRAMELOCK_BENCH_SECS` seconds (default 30): `framelock play` alone, then a `host` and a
//! `join` on loopback. Each process's user + system CPU comes from the kernel's accounting
//! when it exits (wait4), `FRAMELOCK_BENCH_RUNS` times each (default 3), best run shown.
//! The goal is at most 1.1x solo play's CPU for each netplay peer.
//!
//! # Results
//!
//! `cargo bench --bench netplay_cpu`: Genesis Plus GX + Airstriker at 60 fps, headless, bots,
//! 30 s; each process's user + system CPU from the kernel when it exits, best of 3.
//!
//! | process | CPU (1800 frames) | x solo play |
//! |---|---|---|
//! | `play` | 0.59 s | 1.00 |
//! | `host` | 0.64 s | 1.08 |
//! | `join` | 0.60 s | 1.02 |
//!
//! Goal: at most 1.1x solo play for each netplay peer: met.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod procs;

use procs::cpu_of;

fn spawn(dir: &Path, label: &str, args: &[String]) -> Child {
    fixtures::framelock(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(File::create(dir.join(format!("{label}.log"))).unwrap())
        .spawn()
        .expect("spawn framelock")
}

fn main() {
    let var = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let frames = (var("FRAMELOCK_BENCH_SECS", 30) * 60).to_string();
    let runs = var("FRAMELOCK_BENCH_RUNS", 3);
    let g = fixtures::genesis();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let game: Vec<String> = [
        g.rom.display().to_string(),
        "--core".into(),
        g.core.display().to_string(),
        "--option".into(),
        "genesis_plus_gx_addr_error=disabled".into(),
        "--headless".into(),
        "--frames".into(),
        frames.clone(),
        "--no-record".into(),
    ]
    .into();
    let with = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        a.extend(game.iter().cloned());
        a
    };
    let (mut solo, mut host, mut join) = (f64::MAX, f64::MAX, f64::MAX);
    for _ in 0..runs {
        let mut play = with(&["play", "--bot", "1"]);
        play.retain(|a| a != "--no-record");
        solo = solo.min(cpu_of(spawn(d, "play", &play)));
        let port = fixtures::free_port().to_string();
        let h = spawn(d, "host", &with(&["host", "--port", &port, "--bot", "1"]));
        std::thread::sleep(Duration::from_millis(300));
        let addr = format!("127.0.0.1:{port}");
        let j = spawn(d, "join", &with(&["join", &addr, "--bot", "2"]));
        join = join.min(cpu_of(j));
        host = host.min(cpu_of(h));
    }
    println!("| process | CPU s ({} frames) | x solo |", frames);
    println!("|---|---|---|");
    println!("| play (solo) | {solo:.2} | 1.00 |");
    println!("| host | {host:.2} | {:.2} |", host / solo);
    println!("| join | {join:.2} | {:.2} |", join / solo);
}
