//! What netplay costs in CPU over solo play (numbers, not pass/fail):
//! `cargo bench --bench netplay_cpu`.
//!
//! Genesis Plus GX + Airstriker at the core's own pace (60 fps), headless, with bots, for
//! `FRAMELOCK_BENCH_SECS` seconds (default 30), as pairs: `framelock play` alone and a
//! `host` and a `join` on loopback, one right after the other (which goes first alternates),
//! `FRAMELOCK_BENCH_RUNS` pairs (default 5). Each process's user + system CPU comes from the
//! kernel's accounting when it exits (wait4). Each pair gives a ratio per peer (its CPU over
//! the pair's solo play); shown: every pair, and the median of the pairs' ratios with their
//! spread (lowest-highest). The best of each side taken apart would pair a quiet moment's
//! solo run with another moment's netplay run. The goal is at most 1.1x solo play's CPU for
//! each netplay peer, judged on the median. `FRAMELOCK_BENCH_SMOKE=1` (CI's short form): 2
//! pairs of 3 s.
//!
//! # Results
//!
//! `cargo bench --bench netplay_cpu`: Genesis Plus GX + Airstriker at 60 fps, headless, bots,
//! 30 s, 5 pairs; each process's user + system CPU from the kernel when it exits, on a quiet
//! 2-core machine.
//!
//! | pair | `play` CPU (1800 frames) | `host` | `join` | host x solo | join x solo |
//! |---|---|---|---|---|---|
//! | 1 | 0.96 s | 1.24 s | 1.19 s | 1.29 | 1.24 |
//! | 2 | 1.01 s | 1.20 s | 1.06 s | 1.18 | 1.05 |
//! | 3 | 1.04 s | 1.20 s | 1.18 s | 1.15 | 1.14 |
//! | 4 | 1.00 s | 1.15 s | 1.13 s | 1.15 | 1.13 |
//! | 5 | 0.99 s | 1.16 s | 1.00 s | 1.18 | 1.01 |
//!
//! Median of the pairs: host 1.18x (1.15-1.29x), joiner 1.13x (1.01-1.24x). Goal: at most
//! 1.1x solo play for each netplay peer, on the median: not met.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod procs;
mod smoke;

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
    // The short form: 2 pairs of 3 s.
    let frames = (smoke::secs(30, 3) * 60).to_string();
    let pairs = smoke::var("FRAMELOCK_BENCH_RUNS", 5, 2);
    if pairs == 0 {
        smoke::fail("FRAMELOCK_BENCH_RUNS=0: a ratio needs at least one pair of runs");
    }
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
    let solo_run = || {
        let mut play = with(&["play", "--bot", "1"]);
        play.retain(|a| a != "--no-record");
        cpu_of(spawn(d, "play", &play), d, "play")
    };
    let netplay_run = || {
        let port = fixtures::free_port().to_string();
        let h = spawn(d, "host", &with(&["host", "--port", &port, "--bot", "1"]));
        std::thread::sleep(Duration::from_millis(300));
        let addr = format!("127.0.0.1:{port}");
        let j = spawn(d, "join", &with(&["join", &addr, "--bot", "2"]));
        let join = cpu_of(j, d, "join");
        (cpu_of(h, d, "host"), join)
    };
    // Each pair runs solo play and a session one right after the other, so both see the
    // same machine; the order alternates so neither always gets the quieter moment.
    let mut solos = Vec::new();
    let mut host_ratios = Vec::new();
    let mut join_ratios = Vec::new();
    println!("| pair | play (solo) CPU s | host CPU s | join CPU s | host x solo | join x solo |");
    println!("|---|---|---|---|---|---|");
    for pair in 1..=pairs {
        let (solo, (host, join)) = if pair % 2 == 1 {
            let solo = solo_run();
            (solo, netplay_run())
        } else {
            let net = netplay_run();
            (solo_run(), net)
        };
        let solo = smoke::number("solo play's CPU", solo);
        if solo <= 0.0 {
            smoke::fail("solo play used no CPU: it did not run");
        }
        println!(
            "| {pair} | {solo:.2} | {host:.2} | {join:.2} | {:.2} | {:.2} |",
            host / solo,
            join / solo
        );
        solos.push(solo);
        host_ratios.push(host / solo);
        join_ratios.push(join / solo);
    }
    let summary = |v: Vec<f64>, what: &str| {
        let Some((median, lo, hi)) = smoke::median_spread(v) else {
            smoke::fail(format!("no number for {what}"));
        };
        format!("{median:.2}x (pairs {lo:.2}-{hi:.2}x)")
    };
    println!("{frames} frames, {pairs} pairs; median and spread of the pairs' ratios:");
    let (solo_median, _, _) = smoke::median_spread(solos).unwrap();
    println!("play (solo): median {solo_median:.2} s CPU");
    println!("host: {}", summary(host_ratios, "the host's ratio"));
    println!("join: {}", summary(join_ratios, "the joiner's ratio"));
}
