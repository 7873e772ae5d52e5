//! OpenGL cores (numbers, not pass/fail): `cargo bench --bench gl`.
//!
//! quadpong (framelock's GL test core, 640x480, depth and stencil) on Mesa's llvmpipe
//! through a surfaceless EGL context, no GPU:
//! (a) headless frames per second, unpaced (`--fast`), nobody looking at the picture (its
//!     copy is queued every frame and never mapped);
//! (b) the read-back per frame at 640x480, with every picture taken out (`--hash-shown`)
//!     and the GPU finished before each copy (`--test-gl-finish`), so the copy and the
//!     conversion are timed alone: queueing the copy into the pixel buffer, then mapping it
//!     and turning it into XRGB8888 (goal: under 10% of a 60 Hz frame, 1.67 ms);
//! (c) the same in a window under Xvfb, paced at 60 fps (the window maps every frame it
//!     shows), with its CPU;
//! (d) `--speculate auto` against `off`: a host and a joiner on loopback over an impaired
//!     link (`--netsim delay=50ms,jitter=20ms,loss=5%`), human-like bots, the CPU of both
//!     processes together, and the rollbacks that cost it.
//!
//! # Results
//!
//! `cargo bench --bench gl` on the shared 2-core machine (load average 4-9 from other
//! builds, so frames per second vary by half from run to run):
//!
//! | what | number |
//! |---|---|
//! | (a) headless, unpaced | 128-290 fps |
//! | (b) read-back per frame, headless | 0.10-0.13 ms copy + 0.26-0.35 ms map and convert = 0.37-0.48 ms (2.2-2.9% of a frame); drawing 5-8 ms |
//! | (c) read-back per frame, window under Xvfb | 0.53-0.72 ms (3.2-4.3% of a frame); 59-60 fps, 35-50% of a core |
//! | (d) CPU, host + joiner, speculate off / auto | 45% / 67% of a core (1.5x); 0.5 rollbacks/s |
//!
//! The read-back is small next to llvmpipe's drawing (about 5 ms a frame here, the GPU's
//! part, which `--test-gl-finish` waits for); on a real GPU both shrink.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod smoke;

/// One 60 Hz frame, in milliseconds.
const FRAME_MS: f64 = 1000.0 / 60.0;

/// CPU time (user + system) of the children waited for so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let t = |tv: libc::timeval| Duration::new(tv.tv_sec as u64, tv.tv_usec as u32 * 1000);
    t(u.ru_utime) + t(u.ru_stime)
}

fn read_stats(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| smoke::fail(format!("no stats {}: {e}", path.display())));
    serde_json::from_str(&text).unwrap_or_else(|e| smoke::fail(format!("stats: {e}")))
}

/// Runs `framelock ARGS --stats-json`; its stats, and its CPU over its wall time.
fn run(home: &Path, name: &str, args: &[&str], env: &[(&str, &str)]) -> (Value, f64) {
    let stats = home.join(format!("{name}.json"));
    let cpu0 = children_cpu();
    let t0 = Instant::now();
    let out = fixtures::framelock(home)
        .args(args)
        .arg("--stats-json")
        .arg(&stats)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| smoke::fail(format!("cannot run framelock: {e}")));
    let wall = t0.elapsed();
    if !out.status.success() {
        smoke::fail(format!(
            "{name}: framelock {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let cpu = (children_cpu() - cpu0).as_secs_f64() / wall.as_secs_f64();
    (read_stats(&stats), cpu)
}

/// Milliseconds per frame of a `gl` stats field over `count`.
fn per_frame(gl: &Value, field: &str, count: &str) -> f64 {
    let n = gl[count].as_f64().unwrap_or(0.0);
    smoke::number(field, gl[field].as_f64().unwrap_or(f64::NAN) / n)
}

/// An Xvfb server on a display of its own, killed on drop.
struct Xvfb {
    child: Child,
    display: String,
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_xvfb() -> Xvfb {
    let mut child = Command::new("Xvfb")
        .args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "1280x1024x24",
            "-noreset",
            "-nolisten",
            "tcp",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            smoke::fail(format!("cannot start Xvfb ({e}): {}", fixtures::SETUP_HINT))
        });
    let mut line = String::new();
    let stdout = child.stdout.take().expect("piped");
    let _ = std::io::BufReader::new(stdout).read_line(&mut line);
    match line.trim().parse::<u32>() {
        Ok(n) => Xvfb {
            child,
            display: format!(":{n}"),
        },
        Err(_) => smoke::fail(format!("Xvfb did not start ({line:?})")),
    }
}

fn main() {
    let short = smoke::smoke();
    let frames = smoke::var("FRAMELOCK_BENCH_FRAMES", 1800u32, 120).to_string();
    let secs = smoke::secs(20, 3);
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let core = fixtures::quadpong().display().to_string();

    // (a) headless, unpaced, nobody looking.
    let (a, _) = run(
        home,
        "headless",
        &[
            "play",
            "--core",
            &core,
            "--headless",
            "--fast",
            "--frames",
            &frames,
            "--bot",
            "3:human",
        ],
        &[],
    );
    let fps = smoke::number("headless fps", a["fps"].as_f64().unwrap_or(f64::NAN));
    let renderer = a["gl"]["renderer"].as_str().unwrap_or("?").to_string();

    // (b) every picture read back, the GPU finished first.
    let span = format!("0:{frames}");
    let (b, _) = run(
        home,
        "readback",
        &[
            "play",
            "--core",
            &core,
            "--headless",
            "--fast",
            "--frames",
            &frames,
            "--bot",
            "3:human",
            "--hash-shown",
            &span,
            "--test-gl-finish",
        ],
        &[],
    );
    let gl = &b["gl"];
    let copy = per_frame(gl, "capture_ms", "frames_captured");
    let read = per_frame(gl, "read_ms", "frames_read");
    let draw = per_frame(gl, "finish_ms", "frames_captured");

    // (c) in a window under Xvfb, paced.
    let x = start_xvfb();
    let (c, window_cpu) = run(
        home,
        "window",
        &[
            "play",
            "--core",
            &core,
            "--frames",
            &frames,
            "--bot",
            "3:human",
            "--scale",
            "1",
            "--no-audio",
            "--test-gl-finish",
        ],
        &[("DISPLAY", &x.display)],
    );
    drop(x);
    let wgl = &c["gl"];
    let wcopy = per_frame(wgl, "capture_ms", "frames_captured");
    let wread = per_frame(wgl, "read_ms", "frames_read");
    let wfps = smoke::number("window fps", c["fps"].as_f64().unwrap_or(f64::NAN));

    // (d) netplay, speculation off and auto.
    let mut netplay = Vec::new();
    for spec in ["off", "auto"] {
        let port = fixtures::free_port().to_string();
        let n = (secs * 60).to_string();
        let link = "delay=50ms,jitter=20ms,loss=5%";
        let common = [
            "--core",
            &core,
            "--headless",
            "--frames",
            &n,
            "--speculate",
            spec,
            "--netsim",
            link,
            "--no-record",
        ];
        let spawn = |label: &str, a: &[&str]| {
            fixtures::framelock(&home.join(label))
                .args(a)
                .args(common)
                .arg("--stats-json")
                .arg(home.join(format!("{label}-{spec}.json")))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| smoke::fail(format!("cannot run framelock: {e}")))
        };
        let cpu0 = children_cpu();
        let t0 = Instant::now();
        let mut host = spawn(
            "host",
            &[
                "host",
                "--port",
                &port,
                "--players",
                "2",
                "--bot",
                "1:human",
            ],
        );
        std::thread::sleep(Duration::from_millis(500));
        let addr = format!("127.0.0.1:{port}");
        let mut join = spawn("join", &["join", &addr, "--bot", "2:human"]);
        let (hs, js) = (host.wait().unwrap(), join.wait().unwrap());
        let wall = t0.elapsed().as_secs_f64();
        if !hs.success() || !js.success() {
            smoke::fail(format!(
                "netplay with --speculate {spec}: host {hs}, joiner {js}"
            ));
        }
        let cpu = (children_cpu() - cpu0).as_secs_f64() / wall;
        let stats = [
            read_stats(&home.join(format!("host-{spec}.json"))),
            read_stats(&home.join(format!("join-{spec}.json"))),
        ];
        if stats[0]["checksum"] != stats[1]["checksum"] {
            smoke::fail(format!("--speculate {spec}: the peers diverged"));
        }
        let rollbacks: f64 = stats.iter().filter_map(|s| s["rollbacks"].as_f64()).sum();
        let played: f64 = stats[0]["wall_s"].as_f64().unwrap_or(wall);
        let depth = stats[1]["speculate_depth"].as_u64().unwrap_or(0);
        netplay.push((spec, cpu, rollbacks / played, depth));
    }

    println!(
        "quadpong 640x480 on {renderer}{}",
        if short { " (short form)" } else { "" }
    );
    println!();
    println!("| what | number |");
    println!("|---|---|");
    println!("| (a) headless, unpaced | {fps:.0} fps |");
    println!(
        "| (b) read-back per frame, headless | {copy:.2} ms copy + {read:.2} ms map and convert = {:.2} ms ({:.1}% of a frame; drawing {draw:.2} ms) |",
        copy + read,
        (copy + read) / FRAME_MS * 100.0
    );
    println!(
        "| (c) read-back per frame, window under Xvfb | {:.2} ms ({:.1}% of a frame); {wfps:.0} fps, {:.0}% of a core |",
        wcopy + wread,
        (wcopy + wread) / FRAME_MS * 100.0,
        window_cpu * 100.0
    );
    let (off, auto) = (&netplay[0], &netplay[1]);
    println!(
        "| (d) CPU, host + joiner, speculate off / auto | {:.0}% / {:.0}% of a core ({:.1}x); {:.1} rollbacks/s, depth {} |",
        off.1 * 100.0,
        auto.1 * 100.0,
        auto.1 / off.1,
        auto.2,
        auto.3
    );
}
