//! Speculation (`--speculate`) against plain lockstep (numbers, not pass/fail):
//! `cargo bench --bench speculate`.
//!
//! Two real processes on loopback, each impairing what it sends (100 ms round trip, ±20 ms
//! jitter, 5% loss: `--netsim delay=50ms,jitter=20ms,loss=5%`), for `FRAMELOCK_BENCH_SECS`
//! seconds (default 30), on the built-in game and on Genesis Plus GX + Airstriker, with
//! speculation off, 4 and auto, and bots of two kinds: the default one (its pad changes on
//! about a quarter of all frames) and `--bot SEED:human` (about 10 changes a second).
//! Reported for the joiner (the host's numbers are in the logs and close): perceived
//! latency (sample to the first picture that used it, frames: median / p95), rollbacks a
//! second and their depth (median / max frames), pictures shown that were corrected later,
//! and the joiner's CPU (user + system from the kernel at exit) against solo play of the
//! same game for as long. Then at 250 ms round trip, ±20 ms and 5% loss with the human
//! bot: how far the lead grows, how deep rollbacks go, and what auto leaves unhidden.
//! `FRAMELOCK_BENCH_SMOKE=1` (CI's short form): 3 s each, the human bot, off and auto.
//!
//! # Results
//!
//! `FRAMELOCK_BENCH_SECS=30 cargo bench --bench speculate` on a quiet 2-core machine (solo
//! play measured once per game, so the CPU ratios carry its noise):
//!
//! | game, bot, --speculate | perceived (median / p95) | lead | rollbacks/s | depth (median / max) | corrected pictures | CPU x solo |
//! |---|---|---|---|---|---|---|
//! | built-in, default bot, off | 9 / 11 | 9 | - | - | - | 2.05x |
//! | built-in, default bot, 4 | 5 / 7 | 9 | 13.0 | 2 / 4 | 691 | 2.83x |
//! | built-in, default bot, auto | 1 / 3 | 9 | 16.1 | 5 / 8 | 1479 | 3.31x |
//! | built-in, human bot, off | 9 / 11 | 9 | - | - | - | 2.67x |
//! | built-in, human bot, 4 | 5 / 7 | 9 | 7.0 | 2 / 4 | 373 | 3.04x |
//! | built-in, human bot, auto | 1 / 3 | 9 | 9.6 | 5 / 8 | 1288 | 3.41x |
//! | Genesis Plus GX, default bot, off | 9 / 10 | 9 | - | - | - | 1.34x |
//! | Genesis Plus GX, default bot, 4 | 5 / 6 | 9 | 12.3 | 2 / 4 | 622 | 3.32x |
//! | Genesis Plus GX, default bot, auto | 1 / 2 | 9 | 15.3 | 6 / 8 | 1503 | 3.86x |
//! | Genesis Plus GX, human bot, off | 10 / 10 | 9 | - | - | - | 1.35x |
//! | Genesis Plus GX, human bot, 4 | 5 / 6 | 10 | 7.2 | 2 / 4 | 387 | 3.42x |
//! | Genesis Plus GX, human bot, auto | 1 / 2 | 9 | 9.5 | 5 / 8 | 1305 | 3.70x |
//!
//! 250 ms round trip, ±20 ms, 5% loss, human bot, built-in game:
//!
//! | --speculate | perceived (median / p95) | lead | rollbacks/s | depth (median / max) | corrected pictures | CPU x solo |
//! |---|---|---|---|---|---|---|
//! | off | 19 / 30 | 19 | - | - | - | 2.02x |
//! | auto | 11 / 24 | 19 | 9.2 | 5 / 8 | 1203 | 2.57x |
//! | 16 | 3 / 19 | 19 | 9.4 | 13 / 16 | 1677 | 3.11x |
//!
//! On a machine busy with other builds (load average 4-9) the leads grow from 9 to 10-35
//! frames with its wake-up delays, and the perceived latency and CPU with them: these
//! numbers need a quiet machine.
//!
//! Auto stops at 8 frames ahead: past a lead of 8 (a round trip over about 130 ms) the
//! rest of the delay stays. The built-in game costs so little that its ratios are mostly
//! netplay's own overhead. The same run with every frame ahead run again on each tick (no
//! states kept) measured Genesis Plus GX at 6.8x with auto.

use std::path::Path;

use serde_json::Value;

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod procs;
mod smoke;

use procs::{cpu_of, spawn, stats, strings, wait_for};

/// One 2-player session; the joiner's stats and CPU seconds.
fn session(
    d: &Path,
    game: &[String],
    frames: &str,
    link: &str,
    bot: &str,
    spec: &str,
) -> (Value, f64) {
    let port = fixtures::free_port().to_string();
    let common = |extra: &[&str]| -> Vec<String> {
        let mut a = strings(extra);
        a.extend(strings(&[
            "--headless",
            "--frames",
            frames,
            "--no-record",
            "--netsim",
            link,
            "--speculate",
            spec,
        ]));
        a.extend(game.iter().cloned());
        a
    };
    let host = spawn(
        d,
        "host",
        &common(&["host", "--port", &port, "--bot", &format!("1{bot}")]),
    );
    wait_for(d, "host", "hosting on udp port");
    let addr = format!("127.0.0.1:{port}");
    let join = spawn(
        d,
        "join",
        &common(&["join", &addr, "--bot", &format!("2{bot}")]),
    );
    let cpu = cpu_of(join, d, "join");
    cpu_of(host, d, "host");
    (stats(d, "join"), cpu)
}

fn fmt_pair(v: &Value) -> String {
    let n = |k: &str| v[k].as_u64().map_or("-".to_string(), |x| x.to_string());
    format!("{} / {}", n("median"), n("p95"))
}

fn row(label: &str, s: &Value, cpu: f64, solo: f64) -> String {
    let secs = s["wall_s"].as_f64().unwrap_or(1.0).max(1.0);
    let rollbacks = s["rollbacks"]
        .as_u64()
        .map_or("-".to_string(), |r| format!("{:.1}", r as f64 / secs));
    let depth = &s["rollback_frames"];
    let depth = match (depth["median"].as_u64(), depth["max"].as_u64()) {
        (Some(m), Some(x)) => format!("{m} / {x}"),
        _ => "-".into(),
    };
    let perceived = s["perceived_latency_frames"]["median"].as_f64();
    smoke::number(
        &format!("{label}: the perceived latency"),
        perceived.unwrap_or(f64::NAN),
    );
    smoke::number(&format!("{label}: the CPU against solo play"), cpu / solo);
    let corrected = s["corrected_frames_shown"]
        .as_u64()
        .map_or("-".to_string(), |c| c.to_string());
    format!(
        "| {label} | {} | {} | {rollbacks} | {depth} | {corrected} | {:.2}x |",
        fmt_pair(&s["perceived_latency_frames"]),
        s["lead"].as_u64().map_or("-".into(), |l| l.to_string()),
        cpu / solo
    )
}

fn main() {
    // The short form: 3 s each, the human bot only, speculation off and auto.
    let secs = smoke::secs(30, 3);
    let short = smoke::smoke();
    let bots: &[(&str, &str)] = if short {
        &[("human bot", ":human")]
    } else {
        &[("default bot", ""), ("human bot", ":human")]
    };
    let specs: &[&str] = if short {
        &["off", "auto"]
    } else {
        &["off", "4", "auto"]
    };
    let far_specs: &[&str] = if short {
        &["auto"]
    } else {
        &["off", "auto", "16"]
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
    let link = "delay=50ms,jitter=20ms,loss=5%";
    println!(
        "2 players, 100 ms round trip, ±20 ms jitter, 5% loss, {secs} s each; the joiner's numbers"
    );
    println!();
    println!("| game, bot, --speculate | perceived latency (frames, median / p95) | lead | rollbacks/s | rollback depth (median / max) | corrected pictures | CPU x solo |");
    println!("|---|---|---|---|---|---|---|");
    for (name, game) in [("built-in", Vec::new()), ("Genesis Plus GX", genesis)] {
        let mut solo_args = strings(&["play", "--headless", "--frames", &frames, "--bot", "1"]);
        solo_args.extend(game.iter().cloned());
        let solo = cpu_of(spawn(d, "solo", &solo_args), d, "solo");
        for (bot_name, bot) in bots {
            for spec in specs {
                let (s, cpu) = session(d, &game, &frames, link, bot, spec);
                println!(
                    "{}",
                    row(&format!("{name}, {bot_name}, {spec}"), &s, cpu, solo)
                );
            }
        }
    }
    println!();
    println!("250 ms round trip, ±20 ms jitter, 5% loss, human bot, built-in game:");
    println!();
    println!("| --speculate | perceived latency (frames, median / p95) | lead | rollbacks/s | rollback depth (median / max) | corrected pictures | CPU x solo |");
    println!("|---|---|---|---|---|---|---|");
    let mut solo_args = strings(&["play", "--headless", "--frames", &frames, "--bot", "1"]);
    solo_args.push("--no-record".into());
    let solo = cpu_of(spawn(d, "solo", &solo_args), d, "solo");
    let far = "delay=125ms,jitter=20ms,loss=5%";
    for spec in far_specs {
        let (s, cpu) = session(d, &[], &frames, far, ":human", spec);
        println!("{}", row(spec, &s, cpu, solo));
    }
}
