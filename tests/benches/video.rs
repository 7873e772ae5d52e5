//! Video benchmarks (numbers, not pass/fail): `cargo bench --bench video`.
//!
//! (a) Export speed, in times real time, of `replay LOG --export` for a minute (3600 frames)
//!     of bot play: the built-in game and Genesis Plus GX + Airstriker, at `--scale 1` and
//!     `--scale 3`, to `.mp4` and to lossless `.mkv` (goal: Genesis Plus GX to `.mp4` at
//!     scale 3 at least 4x real time on a 2-core machine). The whole process is timed, ffmpeg
//!     finishing the file included.
//! (b) File size of that minute for each format (Genesis Plus GX at scale 3; GIF at scale 1).
//! (c) CPU of `play --headless --video FILE` (paced at the core's rate) against plain `play`,
//!     ffmpeg included: user + system time of the process and its children over wall time.
//!
//! # Results
//!
//! `cargo bench --bench video` on the shared 2-core machine (load average 7-9 from other
//! builds: a quiet machine is faster; the first run of `.mp4` at scale 3 gave 4.3x for
//! Genesis Plus GX):
//!
//! | game | scale | .mp4 | .mkv --lossless |
//! |---|---|---|---|
//! | built-in game | 1 | 15.6x | 31.2x |
//! | built-in game | 3 | 3.5x | 3.9x |
//! | Genesis Plus GX | 1 | 14.3x | 18.7x |
//! | Genesis Plus GX | 3 | 3.6x | 3.8x |
//!
//! A minute of Genesis Plus GX: `.mp4` 2.1 MB, `.webm` 3.1 MB, `.mkv --lossless` 6.0 MB (all
//! at scale 3), `.gif` 4.8 MB (scale 1). Playing it paced for 1200 frames: plain `play` 2%
//! of a core, `play --video play.mp4` 47% (the default scale, 4: 1196x896; ffmpeg included).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod smoke;

/// Frames of each log: a minute, or 5 s in the short form (`FRAMELOCK_BENCH_SMOKE=1`).
fn frames() -> u32 {
    smoke::var("FRAMELOCK_BENCH_FRAMES", 3600, 300)
}

fn framelock(home: &Path) -> Command {
    let mut c = fixtures::framelock(home);
    c.current_dir(home);
    c
}

/// CPU time (user + system) of the children waited for so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let t = |tv: libc::timeval| Duration::new(tv.tv_sec as u64, tv.tv_usec as u32 * 1000);
    t(u.ru_utime) + t(u.ru_stime)
}

/// Runs framelock with `args`; returns wall time and CPU time (children included).
fn timed(home: &Path, args: &[&str]) -> (Duration, Duration) {
    let cpu0 = children_cpu();
    let t0 = Instant::now();
    let out = framelock(home).args(args).output().expect("run framelock");
    let wall = t0.elapsed();
    assert!(
        out.status.success(),
        "{args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (wall, children_cpu() - cpu0)
}

fn record(home: &Path, log: &str, extra: &[&str]) {
    let n = frames().to_string();
    let mut args = vec!["play", "--headless", "--fast", "--frames", &n, "--bot", "3"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--record", log]);
    timed(home, &args);
}

fn size_mb_per_minute(path: &Path, fps: f64) -> f64 {
    let bytes = std::fs::metadata(path).unwrap().len() as f64;
    bytes / 1e6 * (60.0 * fps / f64::from(frames()))
}

fn main() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let g = fixtures::genesis();
    let (core, rom) = (g.core.to_str().unwrap(), g.rom.to_str().unwrap());
    record(home, "builtin.flr", &[]);
    record(
        home,
        "genesis.flr",
        &[
            "--core",
            core,
            rom,
            "--option",
            "genesis_plus_gx_addr_error=disabled",
        ],
    );
    let games = [
        ("built-in game", "builtin.flr", 60.0),
        ("Genesis Plus GX", "genesis.flr", 59.922_743),
    ];

    let n = frames();
    println!("(a) export speed, {n} frames (x real time, process wall time)");
    println!();
    println!("| game | scale | .mp4 | .mkv --lossless |");
    println!("|---|---|---|---|");
    for (name, log, fps) in games {
        for scale in ["1", "3"] {
            let mut row = format!("| {name} | {scale} |");
            for (file, extra) in [("out.mp4", None), ("out.mkv", Some("--lossless"))] {
                let mut args = vec!["replay", log, "--export", file, "--force", "--scale", scale];
                args.extend(extra);
                let (wall, _) = timed(home, &args);
                let speed =
                    smoke::number("the export speed", f64::from(n) / fps / wall.as_secs_f64());
                row += &format!(" {speed:.1}x |");
            }
            println!("{row}");
        }
    }

    println!();
    println!("(b) file size per minute, Genesis Plus GX");
    println!();
    println!("| format | scale | MB per minute |");
    println!("|---|---|---|");
    let fps = 59.922_743;
    for (file, scale, extra) in [
        ("size.mp4", "3", None),
        ("size.webm", "3", None),
        ("size.mkv", "3", Some("--lossless")),
        ("size.gif", "1", None),
    ] {
        let mut args = vec!["replay", "genesis.flr", "--export", file, "--scale", scale];
        args.extend(extra);
        timed(home, &args);
        let mb = size_mb_per_minute(&home.join(file), fps);
        let label = format!("{file}{}", extra.map_or(String::new(), |e| format!(" {e}")));
        println!("| {label} | {scale} | {mb:.1} |");
    }

    println!();
    let paced = if smoke::smoke() { "120" } else { "1200" };
    println!("(c) CPU while playing Genesis Plus GX, {paced} frames paced (framelock + ffmpeg)");
    println!();
    println!("| run | CPU (of one core) |");
    println!("|---|---|");
    for (label, video) in [("play", None), ("play --video play.mp4", Some("play.mp4"))] {
        let mut args = vec![
            "play",
            "--headless",
            "--frames",
            paced,
            "--bot",
            "1",
            "--core",
            core,
            rom,
            "--option",
            "genesis_plus_gx_addr_error=disabled",
        ];
        if let Some(v) = video {
            args.extend(["--video", v, "--force"]);
        }
        let (wall, cpu) = timed(home, &args);
        println!(
            "| {label} | {:.0}% |",
            100.0 * cpu.as_secs_f64() / wall.as_secs_f64()
        );
    }
}
