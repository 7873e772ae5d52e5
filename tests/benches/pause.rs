//! A 5-s pause in a real 2-player session on loopback: the lead and the stall frames on
//! every peer before, during and after it, on a clean link and on 100 ms ±20 ms with 5 %
//! loss (`--netsim delay=50ms,jitter=10ms,loss=5%` on both peers: 50 ms and ±10 ms each
//! way). The joiner pauses with `--pause-at`; the numbers come from the peers' logs
//! (`framelock::lockstep` at debug level): the lead as the server set it, and every wait
//! at a keyframe with its frame and length, as frames of 1/60 s; and the runner's count of
//! display slots in which a frame was due and did not come (`stall_frames`, the session).
//!
//! `cargo bench --bench pause`; `FRAMELOCK_BENCH_SMOKE=1` pauses 1 s in 8-s sessions.

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod smoke;

use std::fs::File;
use std::path::Path;
use std::process::{Child, Stdio};

fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn(dir: &Path, label: &str, args: &[String]) -> Child {
    fixtures::framelock(dir)
        .args(args)
        .arg("--stats-json")
        .arg(dir.join(format!("{label}.json")))
        .env("RUST_LOG", "info,framelock::lockstep=debug")
        .env("USER", label)
        .stdout(Stdio::null())
        .stderr(File::create(dir.join(format!("{label}.log"))).unwrap())
        .spawn()
        .expect("spawn framelock")
}

fn log(dir: &Path, label: &str) -> String {
    std::fs::read_to_string(dir.join(format!("{label}.log"))).unwrap_or_default()
}

/// The number after `key` in `line`.
fn field(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// Frames waited at keyframes (frame, ms) from a peer's log.
fn waits(text: &str) -> Vec<(u64, f64)> {
    text.lines()
        .filter(|l| l.contains("waited at a keyframe"))
        .filter_map(|l| Some((field(l, "frame=")?, field(l, "ms=")? as f64)))
        .collect()
}

/// The lead the host's server had at `frame`: its last change before it, else `first`.
fn lead_at(host_log: &str, frame: u64, first: u64) -> u64 {
    let mut lead = first;
    for l in host_log.lines().filter(|l| l.contains("lockstep: lead ")) {
        let (Some(to), Some(at)) = (field(l, "-> "), field(l, "frames at frame ")) else {
            continue;
        };
        if at <= frame {
            lead = to;
        }
    }
    lead
}

fn run(dir: &Path, netsim: Option<&str>, frames: u32, at: u32, hold: u32) -> Vec<String> {
    let port = free_port();
    let f = frames.to_string();
    let mut common = vec!["--frames".to_string(), f];
    if let Some(n) = netsim {
        common.extend(["--netsim".into(), n.into()]);
    }
    let mut h = vec![
        "host",
        "--headless",
        "--port",
        &port.to_string(),
        "--bot",
        "1",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    h.extend(common.clone());
    let mut host = spawn(dir, "host", &h);
    let mut j = vec![
        "join".to_string(),
        format!("127.0.0.1:{port}"),
        "--headless".into(),
        "--bot".into(),
        "2".into(),
        "--pause-at".into(),
        at.to_string(),
        "--pause-for".into(),
        hold.to_string(),
    ];
    j.extend(common);
    let mut bob = spawn(dir, "bob", &j);
    for (c, label) in [(&mut bob, "bob"), (&mut host, "host")] {
        let status = c.wait().unwrap();
        if !status.success() {
            smoke::fail(format!("{label} ended with {status}:\n{}", log(dir, label)));
        }
    }
    let host_log = log(dir, "host");
    let paused = host_log
        .lines()
        .find(|l| l.contains("paused at frame"))
        .and_then(|l| field(l, "paused at frame "))
        .unwrap_or_else(|| smoke::fail(format!("the host never paused:\n{host_log}")));
    let first = host_log
        .lines()
        .find(|l| l.contains("lockstep: lead "))
        .and_then(|l| field(l, "lead "))
        .unwrap_or(2);
    let period = 1000.0 / 60.0;
    let mut rows = Vec::new();
    for label in ["host", "bob"] {
        let w = waits(&log(dir, label));
        let sum = |pick: &dyn Fn(u64) -> bool| {
            w.iter()
                .filter(|(f, _)| pick(*f))
                .map(|(_, ms)| ms)
                .sum::<f64>()
                / period
                + 0.0
        };
        let before = sum(&|f| f < paused);
        let during = sum(&|f| f == paused);
        let after = sum(&|f| f > paused);
        let stats: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{label}.json"))).unwrap_or_default(),
        )
        .unwrap_or_default();
        let end_lead = stats["feed"]["lead"].as_u64().unwrap_or(0);
        let total = stats["stall_frames"].as_u64().unwrap_or(0);
        rows.push(format!(
            "| {} | {label} | {} | {} | {} / {end_lead} | {before:.0} | {during:.0} | {after:.0} | {total} |",
            netsim.map_or("clean".to_string(), |_| "100 ms ±20, 5% loss".into()),
            lead_at(&host_log, paused - 1, first),
            lead_at(&host_log, paused, first),
            lead_at(&host_log, paused + 60, first),
        ));
        smoke::number(&format!("{label}'s stall frames after"), after);
    }
    rows
}

fn main() {
    let short = smoke::smoke();
    let (frames, at, hold) = if short { (480, 240, 1) } else { (1800, 600, 5) };
    let mut rows = Vec::new();
    for netsim in [None, Some("delay=50ms,jitter=10ms,loss=5%")] {
        let dir = tempfile::tempdir().unwrap();
        rows.extend(run(dir.path(), netsim, frames, at, hold));
    }
    println!("{hold}-s pause by the joiner at frame {at} of {frames}");
    println!(
        "| link | peer | lead before | lead during | lead 1 s after / at the end | stall frames before | during | after | display slots stalled |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
}
