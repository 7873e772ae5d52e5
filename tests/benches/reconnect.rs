//! Sessions at the speed of people, measured with real processes on loopback: a 2-player
//! session of the built-in game, the joiner behind an impairment relay (`tests/relay`).
//!
//! - **Waiting lobby:** a 3-seat host and one joiner wait for the third player; the relay
//!   counts the bytes each way (UDP payloads, plus 28 bytes of IP/UDP header a datagram is
//!   not counted: the payload rate is what the protocol sends). Goal: at most 100 B/s.
//! - **Back in the game:** the relay drops everything for 8 s; from the link's return to the
//!   host's log line `is back from frame` (the player's input counts again). Goal: at most
//!   1 s plus the state transfer (the built-in game's state is a few KiB).
//! - **Address change:** the relay moves to a new port mid-game; the stall frames of both
//!   peers against the same session without the move. Goal: about a round trip's worth.
//!
//! `cargo bench --bench reconnect`; `FRAMELOCK_BENCH_SMOKE=1` runs each scenario shortly
//! (a 5-s lobby, a 3-s outage, 600-frame sessions).
//!
//! Measured on a 2-core machine shared with builds: the lobby 14 B/s each way (payloads),
//! back in the game 503 ms after the link returned (the joiner's `reconnect_ms`, from
//! losing the host to playing, 6534 ms for the 8-s outage), an address change 2 stall frames
//! on the joiner and none on the host (none without the change).

#[path = "../fixtures/mod.rs"]
mod fixtures;
mod procs;
#[path = "../relay/mod.rs"]
mod relay;
mod smoke;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use procs::{spawn, stats, strings, wait_for};
use relay::Relay;

fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits (up to `limit`) until `label`'s log says `needle`; when it first did.
fn when_said(dir: &Path, label: &str, needle: &str, limit: Duration) -> Option<Instant> {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        let log = std::fs::read_to_string(dir.join(format!("{label}.log"))).unwrap_or_default();
        if log.contains(needle) {
            return Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

fn host(dir: &Path, port: u16, extra: &[&str]) -> std::process::Child {
    let mut a = strings(&[
        "host",
        "--headless",
        "--port",
        &port.to_string(),
        "--bot",
        "1",
    ]);
    a.extend(strings(extra));
    let child = spawn(dir, "host", &a);
    wait_for(dir, "host", "hosting on udp port");
    child
}

fn join(dir: &Path, label: &str, port: u16, extra: &[&str]) -> std::process::Child {
    let mut a = strings(&[
        "join",
        &format!("127.0.0.1:{port}"),
        "--headless",
        "--bot",
        "2",
    ]);
    a.extend(strings(extra));
    a.extend(strings(&["--name", label]));
    spawn(dir, label, &a)
}

fn lobby(dir: &Path, wait: Duration) {
    let port = free_port();
    let mut h = host(dir, port, &["--players", "3", "--frames", "60"]);
    let relay = Relay::new(SocketAddr::from(([127, 0, 0, 1], port)));
    let mut j = join(dir, "ana", relay.port, &["--frames", "60"]);
    wait_for(dir, "ana", "waiting for every player to start");
    let (up0, down0) = (
        relay.up.load(Ordering::Relaxed),
        relay.down.load(Ordering::Relaxed),
    );
    std::thread::sleep(wait);
    let secs = wait.as_secs_f64();
    let up = (relay.up.load(Ordering::Relaxed) - up0) as f64 / secs;
    let down = (relay.down.load(Ordering::Relaxed) - down0) as f64 / secs;
    println!(
        "waiting lobby ({:.0} s): joiner -> host {up:.0} B/s, host -> joiner {down:.0} B/s \
         (payloads; goal <= 100)",
        secs
    );
    smoke::number("the lobby's bytes a second up", up);
    smoke::number("the lobby's bytes a second down", down);
    let _ = j.kill();
    let _ = h.kill();
    let _ = (j.wait(), h.wait());
}

fn outage(dir: &Path, frames: &str, down: Duration) {
    let port = free_port();
    let mut h = host(dir, port, &["--frames", frames]);
    let relay = Relay::new(SocketAddr::from(([127, 0, 0, 1], port)));
    let mut j = join(dir, "bob", relay.port, &["--frames", frames]);
    wait_for(dir, "bob", "in session");
    std::thread::sleep(Duration::from_secs(4));
    relay.drop_for(down);
    let returned = Instant::now() + down;
    let Some(back) = when_said(dir, "host", "is back from frame", Duration::from_secs(30)) else {
        smoke::fail("the joiner never came back after the outage");
    };
    let ms = back.saturating_duration_since(returned).as_secs_f64() * 1000.0;
    println!(
        "back in the game after a {} s outage: {ms:.0} ms from the link's return to the \
         player's input counting again",
        down.as_secs()
    );
    smoke::number("the time back in the game", ms.max(1.0));
    if !(j.wait().unwrap().success() && h.wait().unwrap().success()) {
        smoke::fail("a peer of the outage session failed");
    }
    let s = stats(dir, "bob");
    println!(
        "  the joiner's reconnect_ms (lost to playing): {}",
        s["reconnect_ms"]
    );
}

/// A session through the relay, moving it to a new port at `change_at` (if any); the
/// stall frames of the host and the joiner.
fn session(dir: &Path, label: &str, frames: &str, change_at: Option<Duration>) -> (u64, u64) {
    let port = free_port();
    let mut h = host(dir, port, &["--frames", frames]);
    let relay = Relay::new(SocketAddr::from(([127, 0, 0, 1], port)));
    let mut j = join(dir, label, relay.port, &["--frames", frames]);
    wait_for(dir, label, "in session");
    if let Some(at) = change_at {
        std::thread::sleep(at);
        relay.change_address();
        wait_for(dir, "host", "moved from");
    }
    if !(j.wait().unwrap().success() && h.wait().unwrap().success()) {
        smoke::fail(format!("a peer of session {label} failed"));
    }
    let (hs, js) = (stats(dir, "host"), stats(dir, label));
    let n = |v: &serde_json::Value| v["stall_frames"].as_u64().unwrap_or(0);
    (n(&hs), n(&js))
}

fn main() {
    let short = smoke::smoke();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    lobby(d, Duration::from_secs(smoke::secs(30, 5)));
    let down = Duration::from_secs(if short { 3 } else { 8 });
    outage(d, if short { "720" } else { "1800" }, down);
    let frames = if short { "420" } else { "1800" };
    let (h0, j0) = session(d, "still", frames, None);
    let change_at = Duration::from_secs(if short { 3 } else { 5 });
    let (h1, j1) = session(d, "moving", frames, Some(change_at));
    println!(
        "address change: stall frames host {h1}, joiner {j1}; without the change host {h0}, \
         joiner {j0}"
    );
}
