//! Run-ahead's cost (numbers, not pass/fail): `cargo bench --bench run_ahead`.
//!
//! `play --headless --run-ahead N` at the core's own pace (60 fps) for 600 frames with a
//! bot, on the built-in game and on Genesis Plus GX + Airstriker, for N = 0, 1, 2 and 4.
//! Each run's CPU time (user + system, from the kernel's accounting of the finished child)
//! per second of play, relative to N = 0, and the time one displayed frame spends running
//! ahead (saves and loads included, the runner's own `run_ahead.ms_per_displayed_frame`).
//! `play --sync-test 8` is timed the same way: it re-runs 8 frames after every frame.
//! `FRAMELOCK_BENCH_SMOKE=1` (CI's short form): 120 frames, N = 0 and 2 and the sync test.
//!
//! # Results
//!
//! `cargo bench --bench run_ahead` (default bot; its pad changes on about a quarter of
//! all frames, and each change reruns the frames ahead; measured before the agreed frame's
//! state was taken from the kept ones, which saves one save per displayed frame):
//!
//! | core | mode | CPU per second of play | vs plain | ahead per displayed frame |
//! |---|---|---|---|---|
//! | built-in game | --run-ahead 1 | 9.0 ms | 1.20x | 0.045 ms |
//! | built-in game | --run-ahead 2 | 8.8 ms | 1.17x | 0.054 ms |
//! | built-in game | --run-ahead 4 | 11.2 ms | 1.49x | 0.078 ms |
//! | built-in game | --sync-test 8 | 23.4 ms | 3.12x | - |
//! | Genesis Plus GX | --run-ahead 0 | 24.1 ms | 1.05x | - |
//! | Genesis Plus GX | --run-ahead 1 | 50.7 ms | 2.20x | 0.297 ms |
//! | Genesis Plus GX | --run-ahead 2 | 59.3 ms | 2.57x | 0.485 ms |
//! | Genesis Plus GX | --run-ahead 4 | 66.6 ms | 2.89x | 0.609 ms |
//! | Genesis Plus GX | --sync-test 8 | 148.4 ms | 6.44x | - |

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod smoke;

/// CPU time the finished children of this process used so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage writes one `rusage`.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Runs `play --headless ARGS` and returns its CPU time per second of play, and its stats.
fn cpu_per_second(home: &Path, args: &[&str]) -> (f64, Value) {
    let json = home.join("stats.json");
    let frames = smoke::var("FRAMELOCK_BENCH_FRAMES", 600, 120).to_string();
    let before = children_cpu();
    let out = fixtures::framelock(home)
        .args(["play", "--headless", "--frames", &frames, "--bot", "3"])
        .args(args)
        .arg("--stats-json")
        .arg(&json)
        .output()
        .expect("run framelock");
    let cpu = children_cpu() - before;
    if !out.status.success() {
        smoke::fail(format!(
            "play {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let stats: Value = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| smoke::fail(format!("play {args:?} wrote no --stats-json")));
    let wall = smoke::number(
        "play's wall time",
        stats["wall_s"].as_f64().unwrap_or(f64::NAN),
    );
    (cpu.as_secs_f64() / wall, stats)
}

fn main() {
    let home = tempfile::tempdir().unwrap();
    let gpgx = fixtures::core("genesis_plus_gx");
    let rom = fixtures::airstriker();
    let genesis = [
        "--core",
        gpgx.to_str().unwrap(),
        rom.to_str().unwrap(),
        "--option",
        "genesis_plus_gx_addr_error=disabled",
    ];
    println!("| core | mode | CPU per second of play | vs plain | ahead per displayed frame |");
    println!("|---|---|---|---|---|");
    for (name, base) in [
        ("built-in game", &[][..]),
        ("Genesis Plus GX", &genesis[..]),
    ] {
        let (plain, _) = cpu_per_second(home.path(), base);
        // The short form: depths 0 and 2 only, 120 frames each.
        let depths: &[&str] = if smoke::smoke() {
            &["0", "2"]
        } else {
            &["0", "1", "2", "4"]
        };
        let mut modes: Vec<(String, Vec<&str>)> = depths
            .iter()
            .map(|n| (format!("--run-ahead {n}"), vec!["--run-ahead", *n]))
            .collect();
        modes.push(("--sync-test 8".into(), vec!["--sync-test", "8"]));
        for (label, extra) in modes {
            let args: Vec<&str> = base.iter().copied().chain(extra).collect();
            let (cpu, stats) = cpu_per_second(home.path(), &args);
            let ahead = stats["run_ahead"]["ms_per_displayed_frame"]
                .as_f64()
                .map_or("-".to_string(), |ms| format!("{ms:.3} ms"));
            smoke::number(&format!("{name}, {label}: the CPU"), cpu / plain);
            println!(
                "| {name} | {label} | {:.1} ms | {:.2}x | {ahead} |",
                cpu * 1e3,
                cpu / plain
            );
        }
    }
}
