//! framelock.exe under Wine against the Linux binary, and the size of what people install
//! (numbers, not pass/fail): `cargo bench --bench windows`.
//!
//! (a) The built-in game headless and unpaced (`play --headless --fast --bot 1`),
//!     `FRAMELOCK_BENCH_FRAMES` frames (default 6000), `FRAMELOCK_BENCH_RUNS` times (default
//!     3), the Windows build under Debian's Wine and the Linux build in turn: median frames a
//!     second (and spread), and that both end on the same checksum (a run that does not is
//!     a failure, not a number).
//! (b) The sizes of `framelock.exe`, the built-in game's `lightcycles.dll`, and the packages
//!     `.ci/package` left in target/package (the .deb and the Windows zip), when it has run.
//!
//! It builds the Windows binaries with `.ci/windows-build` and makes the Wine prefix with
//! `.ci/wine-prefix`, as tests/windows_wine.rs does; without the Rust target, MinGW or
//! Wine it says the numbers were NOT RUN and why, and exits 0 (as `.ci/test` treats those
//! checks). `FRAMELOCK_BENCH_SMOKE=1` (CI's short form): 600 frames, one run.
//!
//! # Results
//!
//! On the shared 2-core machine (other builds running, so frames a second vary by a
//! third from run to run), 6000 frames, medians of 3: see README's Benchmarks.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use serde_json::Value;

mod smoke;

use smoke::{fail, median_spread, number, smoke, var};

const TARGET: &str = "x86_64-pc-windows-gnu";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs a `.ci` script: its stdout; `Err(why)` when it exits 3 (a tool is missing).
fn ci_script(name: &str) -> Result<String, String> {
    let out = Command::new("bash")
        .arg(root().join(".ci").join(name))
        .output()
        .unwrap_or_else(|e| fail(format!("cannot run .ci/{name}: {e}")));
    match out.status.code() {
        Some(0) => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        Some(3) => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        _ => fail(format!(".ci/{name} failed:\n{}", text(&out))),
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The Linux binary cargo built beside this benchmark.
fn linux_exe() -> PathBuf {
    let me = std::env::current_exe().unwrap();
    let exe = me.parent().unwrap().parent().unwrap().join("framelock");
    if !exe.is_file() {
        fail(format!(
            "no Linux build at {}: run `cargo build --release` first",
            exe.display()
        ));
    }
    exe
}

/// One headless game's `(fps, checksum)` from its `--stats-json`.
fn play(
    mut cmd: Command,
    stats: &Path,
    stats_arg: String,
    frames: u64,
    what: &str,
) -> (f64, String) {
    let out = cmd
        .args(["play", "--headless", "--fast", "--bot", "1", "--frames"])
        .arg(frames.to_string())
        .args(["--stats-json", &stats_arg])
        .output()
        .unwrap_or_else(|e| fail(format!("cannot start {what}: {e}")));
    if !out.status.success() {
        fail(format!("{what} failed:\n{}", text(&out)));
    }
    let json: Value = std::fs::read_to_string(stats)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| fail(format!("{what} wrote no stats at {}", stats.display())));
    if json["frames"].as_u64() != Some(frames) {
        fail(format!(
            "{what} ran {} frames, not {frames}",
            json["frames"]
        ));
    }
    let fps = number(
        &format!("{what}'s fps"),
        json["fps"].as_f64().unwrap_or(f64::NAN),
    );
    (fps, json["checksum"].to_string())
}

fn size_kb(path: &Path) -> Option<f64> {
    Some(path.metadata().ok()?.len() as f64 / 1024.0)
}

fn main() {
    let frames: u64 = var("FRAMELOCK_BENCH_FRAMES", 6000, 600);
    let runs: usize = var("FRAMELOCK_BENCH_RUNS", 3, 1);
    if frames == 0 || runs == 0 {
        fail("FRAMELOCK_BENCH_FRAMES and FRAMELOCK_BENCH_RUNS must be at least 1");
    }
    let linux = linux_exe();
    let t = Instant::now();
    let built = ci_script("windows-build").and_then(|_| ci_script("wine-prefix"));
    let prefix = match built {
        Ok(lines) => lines,
        Err(why) => {
            println!("Windows numbers NOT RUN: {why}");
            return;
        }
    };
    eprintln!(
        "Windows build and Wine prefix ready in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let mut lines = prefix.lines();
    let (Some(loader), Some(prefix)) = (lines.next(), lines.next()) else {
        fail(".ci/wine-prefix printed no loader and prefix");
    };
    let release = root().join("target").join(TARGET).join("release");
    let exe = release.join("framelock.exe");

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut wine_fps, mut linux_fps) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let win_stats = d.join(format!("wine-{run}.json"));
        let mut cmd = Command::new(loader);
        cmd.arg(&exe)
            .env("WINEPREFIX", prefix)
            .env("WINEDEBUG", "-all")
            .env("WINEDLLOVERRIDES", "winemenubuilder.exe=d")
            .env_remove("DISPLAY")
            .env_remove("RUST_LOG");
        // Wine sees the Linux file system as drive Z:.
        let win_arg = format!("Z:{}", win_stats.display()).replace('/', "\\");
        let (wfps, wsum) = play(cmd, &win_stats, win_arg, frames, "framelock.exe under Wine");

        let linux_stats = d.join(format!("linux-{run}.json"));
        let mut cmd = Command::new(&linux);
        cmd.env("HOME", d).env("XDG_CONFIG_HOME", d.join("config"));
        let arg = linux_stats.display().to_string();
        let (lfps, lsum) = play(cmd, &linux_stats, arg, frames, "the Linux build");
        if wsum != lsum {
            fail(format!(
                "run {run}: the Windows build ended on checksum {wsum}, Linux on {lsum}"
            ));
        }
        eprintln!("run {run}: wine {wfps:.0} fps, linux {lfps:.0} fps, checksum {lsum}");
        wine_fps.push(wfps);
        linux_fps.push(lfps);
    }
    let (wm, wlo, whi) = median_spread(wine_fps).unwrap_or_else(|| fail("no Wine runs"));
    let (lm, llo, lhi) = median_spread(linux_fps).unwrap_or_else(|| fail("no Linux runs"));
    println!(
        "built-in game, {frames} frames headless unpaced, medians of {runs} run(s) \
         (same checksum every run)\n"
    );
    println!("| build | frames a second (median, spread) | against Linux |");
    println!("|---|---|---|");
    println!(
        "| framelock.exe under Wine | {wm:.0} ({wlo:.0}-{whi:.0}) | {:.0}% |",
        100.0 * wm / lm
    );
    println!("| Linux | {lm:.0} ({llo:.0}-{lhi:.0}) | 100% |");

    println!("\n| file | size |");
    println!("|---|---|");
    let package = root().join("target").join("package");
    let mut files = vec![exe.clone(), release.join("lightcycles.dll")];
    if let Ok(entries) = std::fs::read_dir(&package) {
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.to_string_lossy();
                name.ends_with(".deb") || name.ends_with(".zip")
            })
            .collect();
        found.sort();
        files.extend(found);
    }
    for file in &files {
        match size_kb(file) {
            Some(kb) => println!(
                "| {} | {:.0} KB |",
                file.file_name().unwrap().to_string_lossy(),
                kb
            ),
            None if smoke() => {}
            None => println!("| {} | not built |", file.display()),
        }
    }
    if !package.is_dir() {
        println!(
            "(no packages in {}: run `bash .ci/package`)",
            package.display()
        );
    }
}
