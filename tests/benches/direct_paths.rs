//! Direct paths through home routers, in the NAT lab's network namespaces (needs root, `ip`
//! and `nft`, as CI has): `cargo bench --bench direct_paths`. Prints:
//! - per pairing of routers (cone-cone, cone-symmetric, symmetric-symmetric): rooms hosted
//!   by a player (`host --server`, `join --room`) that went direct, of those tried, and the
//!   median time from the joiner's start to a proven path (its log's timestamps: the
//!   handshake through the server, the introduction, the punches);
//! - what the server carries for a direct 2-player room: bytes in and out over a game of
//!   `FRAMELOCK_BENCH_SECS` (default 60, 5 in the short form), the join included;
//! - the joiner's input latency (frames, median) on a direct path next to a direct session
//!   (`host` on the public network, `join` from a home) over the same links (20 ms each way).
//!
//! `FRAMELOCK_BENCH_TRIES` sets the rooms tried per pairing (default 3, 1 short).

#[path = "../fixtures/mod.rs"]
mod fixtures;
#[path = "../nat_common/mod.rs"]
mod nat_common;
mod procs;
mod smoke;

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use nat_common::{Lab, SERVER};
use procs::{finished, stamp, stats, wait_for};
use serde_json::Value;

/// `framelock ARGS --stats-json DIR/LABEL.json` inside the namespace `ns`.
fn spawn_in(dir: &Path, ns: &str, label: &str, args: &[&str]) -> Child {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    procs::spawn_in(dir, Some(ns), label, &args)
}

/// Stops `serve` as Ctrl-C does and returns its `--stats-json`.
fn stop(mut server: Child, dir: &Path) -> Value {
    let _ = std::process::Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(15);
    while server.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = server.kill();
    let _ = server.wait();
    stats(dir, "server")
}

/// Milliseconds from the joiner's first log line about joining to its direct path.
fn join_to_direct(dir: &Path) -> Option<f64> {
    let log = std::fs::read_to_string(dir.join("join.log")).ok()?;
    let at = |needle: &str| log.lines().find(|l| l.contains(needle)).and_then(stamp);
    Some((at("direct path to the host")? - at("netplay: joining")?) * 1000.0)
}

/// One hosted room between home 1 and home 2 of `lab`: the joiner's and the server's
/// stats.
fn room(lab: &Lab, dir: &Path, frames: u32, netsim: Option<&str>) -> (Value, Value) {
    let server = spawn_in(dir, &lab.public(), "server", &["serve"]);
    wait_for(dir, "server", "serve: listening");
    let frames = frames.to_string();
    let mut common = vec!["--frames", &frames, "--no-record", "--path", "auto"];
    if let Some(n) = netsim {
        common.extend(["--netsim", n]);
    }
    let host_args = [
        &[
            "host",
            "--headless",
            "--server",
            SERVER,
            "--room",
            "den",
            "--bot",
            "1",
        ][..],
        &common,
    ]
    .concat();
    let host = spawn_in(dir, &lab.home(1), "host", &host_args);
    wait_for(dir, "host", "your friends join with");
    let join_args = [
        &["join", SERVER, "--room", "den", "--headless", "--bot", "2"][..],
        &common,
    ]
    .concat();
    let join = spawn_in(dir, &lab.home(2), "join", &join_args);
    let j = finished(join, dir, "join");
    finished(host, dir, "host");
    (j, stop(server, dir))
}

fn main() {
    let tries = smoke::var("FRAMELOCK_BENCH_TRIES", 3usize, 1);
    let secs = smoke::secs(60, 5) as u32;
    // A proven path takes about 0.2 s; the rest of a room is its lobby and its end.
    let pairing_frames = if smoke::smoke() { 180 } else { 300 };
    if tries == 0 {
        smoke::fail("FRAMELOCK_BENCH_TRIES=0: nothing to measure");
    }
    let base = tempfile::tempdir().unwrap();
    println!("direct paths in the NAT lab ({tries} room(s) per pairing)");
    println!("| routers | direct | join to direct path, median (min-max) |");
    println!("|---|---|---|");
    let pairings: [(&str, &[usize]); 3] = [
        ("cone - cone", &[]),
        ("cone - symmetric", &[2]),
        ("symmetric - symmetric", &[1, 2]),
    ];
    for (i, (name, symmetric)) in pairings.iter().enumerate() {
        let mut direct = 0;
        let mut took = Vec::new();
        for t in 0..tries {
            let dir = base.path().join(format!("p{i}-{t}"));
            std::fs::create_dir_all(&dir).unwrap();
            let lab = Lab::with_symmetric(2, symmetric);
            let (j, _) = room(&lab, &dir, pairing_frames, None);
            if j["path"] == "direct" {
                direct += 1;
                took.push(join_to_direct(&dir).unwrap_or(f64::NAN));
            }
        }
        let took = match smoke::median_spread(took) {
            Some((m, lo, hi)) => format!("{m:.0} ms ({lo:.0}-{hi:.0})"),
            None => "-".into(),
        };
        println!("| {name} | {direct} of {tries} | {took} |");
    }

    let dir = base.path().join("minute");
    std::fs::create_dir_all(&dir).unwrap();
    let lab = Lab::new(2);
    let (j, served) = room(&lab, &dir, secs * 60, None);
    if j["path"] != "direct" {
        smoke::fail(format!("the cone-cone room did not go direct: {j}"));
    }
    let bytes = |k: &str| smoke::number(k, served[k].as_f64().unwrap_or(f64::NAN));
    println!();
    println!("the server's traffic for a direct 2-player room, the join included");
    println!("| game | bytes in | bytes out | relayed |");
    println!("|---|---|---|---|");
    println!(
        "| {secs} s | {:.0} | {:.0} | {:.0} |",
        bytes("bytes_in"),
        bytes("bytes_out"),
        bytes("bytes_relayed")
    );

    // The same links (20 ms each way), the host on the public network.
    let netsim = "delay=20ms";
    let frames = (secs * 60).min(1800).to_string();
    let dir = base.path().join("latency");
    std::fs::create_dir_all(&dir).unwrap();
    let lab = Lab::new(1);
    let common = ["--frames", &frames, "--no-record", "--netsim", netsim];
    let host = spawn_in(
        &dir,
        &lab.public(),
        "host",
        &[&["host", "--headless", "--bot", "1"][..], &common].concat(),
    );
    wait_for(&dir, "host", "hosting on udp port");
    let join = spawn_in(
        &dir,
        &lab.home(1),
        "join",
        &[&["join", SERVER, "--headless", "--bot", "2"][..], &common].concat(),
    );
    let direct_session = finished(join, &dir, "join");
    finished(host, &dir, "host");
    let server = spawn_in(&dir, &lab.public(), "server", &["serve", "--port", "7846"]);
    wait_for(&dir, "server", "serve: listening");
    let at = format!("{SERVER}:7846");
    let host = spawn_in(
        &dir,
        &lab.public(),
        "rhost",
        &[
            &[
                "host",
                "--headless",
                "--server",
                &at,
                "--room",
                "den",
                "--bot",
                "1",
            ][..],
            &common,
        ]
        .concat(),
    );
    wait_for(&dir, "rhost", "your friends join with");
    let join = spawn_in(
        &dir,
        &lab.home(1),
        "rjoin",
        &[
            &["join", &at, "--room", "den", "--headless", "--bot", "2"][..],
            &common,
        ]
        .concat(),
    );
    let hosted = finished(join, &dir, "rjoin");
    finished(host, &dir, "rhost");
    stop(server, &dir);
    let latency = |s: &Value| {
        s["input_latency_frames"]["median"]
            .as_f64()
            .unwrap_or(f64::NAN)
    };
    let rtt = |s: &Value| s["rtt_ms"].as_f64().unwrap_or(f64::NAN);
    println!();
    println!("the joiner's input latency over the same links (20 ms each way)");
    println!("| session | path | input latency, frames (median) | rtt ms (median) |");
    println!("|---|---|---|---|");
    println!(
        "| direct `host` / `join` | - | {:.1} | {:.0} |",
        latency(&direct_session),
        rtt(&direct_session)
    );
    println!(
        "| room hosted by a player | {} | {:.1} | {:.0} |",
        hosted["path"].as_str().unwrap_or("-"),
        latency(&hosted),
        rtt(&hosted)
    );
}
