//! Chat measured with real processes on loopback: a 2-player session of the built-in game,
//! both peers impaired with `--netsim delay=50ms,loss=5%` (100 ms round trip, 5% loss each
//! way), each saying a message every 2 s (`--chat-every-ms`, a test hook; the most a sender
//! may say is 5 in 10 s), so a message a second flows.
//!
//! - **Delay:** from a player saying a message (its log line) to the other's log line for
//!   it (both processes log with the same clock): median, 90th percentile, worst.
//! - **Stalls:** the players' stall counts (`stalls` in `--stats-json`) with the messages
//!   flowing, against the same session without chat.
//!
//! `cargo bench --bench chat`; `FRAMELOCK_BENCH_SMOKE=1` runs 7-s sessions instead of 60-s.
//!
//! Measured on a 2-core machine shared with other builds (two runs of 60 s each way):
//!
//! | | run 1 | run 2 |
//! |---|---:|---:|
//! | messages | 60 | 60 |
//! | delay median / p90 / worst | 50 / 53 / 255 ms | 50 / 50 / 251 ms |
//! | stalls host / joiner, chat | 1 / 30 | 0 / 3 |
//! | stalls host / joiner, none | 0 / 10 | 2 / 16 |
//!
//! The delay is the one-way 50 ms; a lost message comes 2 round trips later (the resend
//! time). Stalls vary as much between runs as with and without chat (the second run's
//! session without chat lost its host's frame loop for 2 s to the machine's load).

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod procs;
mod smoke;

use std::path::Path;

use procs::{finished, spawn, stamp, strings, wait_for};

const NETSIM: &str = "delay=50ms,loss=5%";

fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// When each "chat: FROM: ping N" line was logged by `label`, by N.
fn pings(dir: &Path, label: &str, from: &str) -> Vec<(u32, f64)> {
    let log = std::fs::read_to_string(dir.join(format!("{label}.log"))).unwrap_or_default();
    let needle = format!("chat: {from}: ping ");
    log.lines()
        .filter_map(|l| {
            let n = l.split(&needle).nth(1)?.trim().parse().ok()?;
            Some((n, stamp(l)?))
        })
        .collect()
}

/// A session of `frames` frames; with `chat`, each player says a message every 2 s.
/// Returns the delays (ms) of the messages each got and the stall counts (host, joiner).
fn session(dir: &Path, frames: &str, chat: bool) -> (Vec<f64>, u64, u64) {
    let port = free_port();
    let common = ["--headless", "--frames", frames, "--netsim", NETSIM];
    let mut a = strings(&[
        "host",
        "--port",
        &port.to_string(),
        "--bot",
        "1",
        "--name",
        "host",
    ]);
    a.extend(strings(&common));
    if chat {
        a.extend(strings(&["--chat-every-ms", "2000"]));
    }
    let h = spawn(dir, "host", &a);
    wait_for(dir, "host", "hosting on udp port");
    let mut a = strings(&["join", &format!("127.0.0.1:{port}"), "--bot", "2"]);
    a.extend(strings(&["--name", "join"]));
    a.extend(strings(&common));
    if chat {
        a.extend(strings(&["--chat-every-ms", "2000"]));
    }
    let j = spawn(dir, "join", &a);
    let (js, hs) = (finished(j, dir, "join"), finished(h, dir, "host"));
    let mut delays = Vec::new();
    for (from, to) in [("join", "host"), ("host", "join")] {
        let said = pings(dir, from, from);
        let got = pings(dir, to, from);
        let before = delays.len();
        delays.extend(said.iter().filter_map(|(n, t)| {
            let (_, at) = got.iter().find(|(m, _)| m == n)?;
            Some((at - t) * 1000.0)
        }));
        // The last message may be said as the other player stops.
        if chat && delays.len() - before + 1 < said.len() {
            smoke::fail(format!(
                "{to} logged {} of the {} messages {from} said",
                delays.len() - before,
                said.len()
            ));
        }
    }
    let n = |v: &serde_json::Value| v["stalls"].as_u64().unwrap_or(0);
    (delays, n(&hs), n(&js))
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let frames = if smoke::smoke() { "420" } else { "3600" };
    let (mut delays, h1, j1) = session(d, frames, true);
    let (_, h0, j0) = session(d, frames, false);
    delays.sort_by(f64::total_cmp);
    if delays.is_empty() {
        smoke::fail("no message arrived");
    }
    let at = |q: f64| delays[((delays.len() - 1) as f64 * q).round() as usize];
    let median = smoke::number("the median delay", at(0.5));
    println!(
        "chat at 100 ms RTT, 5% loss: {} messages, delay median {median:.0} ms, p90 {:.0} ms, \
         worst {:.0} ms",
        delays.len(),
        at(0.9),
        at(1.0)
    );
    println!(
        "stalls with a message a second: host {h1}, joiner {j1}; without chat: host {h0}, \
         joiner {j0}"
    );
}
