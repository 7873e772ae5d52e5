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
//! all frames, and each change reruns the frames ahead; the 2-core machine shared with other
//! builds, load average 2.3-4.6):
//!
//! | core | mode | CPU per second of play | vs plain | ahead per displayed frame |
//! |---|---|---|---|---|
//! | built-in game | --run-ahead 0 | 8.5 ms | 1.07x | - |
//! | built-in game | --run-ahead 1 | 11.7 ms | 1.47x | 0.056 ms |
//! | built-in game | --run-ahead 2 | 14.3 ms | 1.81x | 0.088 ms |
//! | built-in game | --run-ahead 4 | 14.9 ms | 1.87x | 0.109 ms |
//! | built-in game | --sync-test 8 | 22.8 ms | 2.87x | - |
//! | Genesis Plus GX | --run-ahead 0 | 22.6 ms | 1.01x | - |
//! | Genesis Plus GX | --run-ahead 1 | 51.2 ms | 2.28x | 0.308 ms |
//! | Genesis Plus GX | --run-ahead 2 | 64.3 ms | 2.86x | 0.565 ms |
//! | Genesis Plus GX | --run-ahead 4 | 96.7 ms | 4.31x | 0.915 ms |
//! | Genesis Plus GX | --sync-test 8 | 218.9 ms | 9.75x | - |

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
