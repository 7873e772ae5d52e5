//! Frontend benchmarks (numbers, not pass/fail): `cargo bench --bench frontend`.
//!
//! (a) Genesis Plus GX + Airstriker, 6000 frames unthrottled: `framelock play --headless
//!     --fast` against `retroarch -L CORE ROM --max-frames=6000` with null drivers.
//! (b) The built-in game unthrottled headless: frames per second and peak RSS.
//! Each run is a fresh process; the best of 3 wall times is reported (like hyperfine's min).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 3;

#[repr(C)]
#[derive(Default)]
struct RUsage {
    utime: [i64; 2],
    stime: [i64; 2],
    maxrss_kb: i64,
    rest: [i64; 13],
}

extern "C" {
    fn wait4(pid: i32, status: *mut i32, options: i32, rusage: *mut RUsage) -> i32;
}

struct Sample {
    wall: Duration,
    max_rss_mb: f64,
}

/// Runs `cmd` to completion; wall time and the child's peak RSS (from wait4's rusage).
// The child is reaped by wait4, which std's `Child` does not know about.
#[allow(clippy::zombie_processes)]
fn measure(cmd: &mut Command) -> Sample {
    let t0 = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let mut status = 0;
    let mut usage = RUsage::default();
    // SAFETY: `child` is our direct child and has not been reaped; both out-pointers are
    // valid for writes of their types (RUsage matches struct rusage on 64-bit Linux).
    let r = unsafe { wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let wall = t0.elapsed();
    assert_eq!(r, child.id() as i32, "wait4 failed");
    assert!(
        status & 0x7f == 0 && (status >> 8) & 0xff == 0,
        "{cmd:?} failed: status {status:#x}"
    );
    Sample {
        wall,
        max_rss_mb: usage.maxrss_kb as f64 / 1024.0,
    }
}

fn best_of(mut make: impl FnMut() -> Command) -> Sample {
    let mut best: Option<Sample> = None;
    for _ in 0..RUNS {
        let s = measure(&mut make());
        if best.as_ref().is_none_or(|b| s.wall < b.wall) {
            best = Some(s);
        }
    }
    best.unwrap()
}

fn framelock(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_framelock"));
    c.env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("RUST_LOG");
    c
}

fn retroarch_config(home: &Path) -> PathBuf {
    let cfg = home.join("retroarch.cfg");
    let d = home.display();
    std::fs::write(
        &cfg,
        format!(
            "video_driver = \"null\"\naudio_driver = \"null\"\ninput_driver = \"null\"\n\
             input_joypad_driver = \"null\"\nmenu_driver = \"null\"\ncamera_driver = \"null\"\n\
             location_driver = \"null\"\nvideo_vsync = \"false\"\naudio_enable = \"false\"\n\
             audio_sync = \"false\"\ngamemode_enable = \"false\"\nconfig_save_on_exit = \"false\"\n\
             system_directory = \"{d}/ra-system\"\nsavefile_directory = \"{d}/ra-saves\"\n\
             savestate_directory = \"{d}/ra-states\"\n"
        ),
    )
    .unwrap();
    cfg
}

fn row(name: &str, frames: u64, s: &Sample) {
    let secs = s.wall.as_secs_f64();
    println!(
        "| {name:<44} | {secs:>7.3} | {:>8.0} | {:>11.1} |",
        frames as f64 / secs,
        s.max_rss_mb
    );
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fx = root.join("target/fixtures/stable-retro");
    let gpgx = fx.join("stable_retro/cores/genesis_plus_gx_libretro.so");
    let rom = fx.join("roms/airstriker.md");
    if !gpgx.exists() || !rom.exists() {
        eprintln!(
            "missing fixtures under {}: run `bash .ci/setup`",
            fx.display()
        );
        std::process::exit(1);
    }
    let home = tempfile::tempdir().unwrap();
    let home = home.path();

    println!(
        "framelock frontend benchmarks, best of {RUNS} runs (wall time includes process start)"
    );
    println!("| run                                          |  wall s |      fps | peak RSS MB |");
    println!("|----------------------------------------------|---------|----------|-------------|");

    let frames = 6000;
    let fl = best_of(|| {
        let mut c = framelock(home);
        c.args(["play", "--headless", "--fast", "--frames", "6000", "--core"])
            .arg(&gpgx)
            .arg(&rom);
        c
    });
    row("framelock play --headless --fast (GPGX)", frames, &fl);

    if Command::new("retroarch").arg("--version").output().is_ok() {
        let cfg = retroarch_config(home);
        let ra = best_of(|| {
            let mut c = Command::new("retroarch");
            // RetroArch's GameMode probe aborts in libdbus without a session bus.
            c.env("DBUS_FATAL_WARNINGS", "0")
                .arg("-c")
                .arg(&cfg)
                .arg("-L")
                .arg(&gpgx)
                .arg(&rom)
                .arg("--max-frames=6000");
            c
        });
        row("retroarch --max-frames=6000, null drivers", frames, &ra);
        println!(
            "framelock / retroarch wall time: {:.2}",
            fl.wall.as_secs_f64() / ra.wall.as_secs_f64()
        );
    } else {
        println!("(retroarch not installed: run `bash .ci/setup` for the comparison)");
    }

    let builtin_frames = 30_000;
    let bi = best_of(|| {
        let mut c = framelock(home);
        c.args([
            "play",
            "--headless",
            "--fast",
            "--frames",
            "30000",
            "--bot",
            "1",
        ]);
        c
    });
    row(
        "framelock play --headless --fast (built-in)",
        builtin_frames,
        &bi,
    );
    println!(
        "built-in game: {:.0} fps unthrottled (goal >= 2000), peak RSS {:.1} MB (goal < 50)",
        builtin_frames as f64 / bi.wall.as_secs_f64(),
        bi.max_rss_mb
    );
}
