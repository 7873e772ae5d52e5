//! Helpers for the `netplay_*` tests: real `framelock host` / `framelock join` processes on
//! 127.0.0.1, each with its log in a file and a hard deadline (killed, and the test failed,
//! if it overruns), so that a hang fails instead of blocking CI.
#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

// A test crate may use two harnesses, each with its own copy of this module.
#[allow(clippy::duplicate_mod)]
#[path = "../fixtures/mod.rs"]
mod fixtures;
#[allow(unused_imports)] // each test crate uses a different subset
pub use fixtures::{
    checksum, core, emitted_per_sent, fixture, framelock, framelock_in, genesis, quadpong, text,
    Genesis, SETUP_HINT,
};

/// No process of a test may live longer than this (the longest game a test plays is a
/// minute: a direct path's server traffic over a minute, `nat_lab`).
pub const HARD_DEADLINE: Duration = Duration::from_secs(100);

/// The `--netsim` impairment of the "bad link" runs, applied on every peer.
pub const BAD_LINK: &str = "loss=20%,delay=40ms,jitter=10ms";

pub use fixtures::free_port;

/// One framelock process with its stderr (where the log goes) in a file.
pub struct Peer {
    pub label: String,
    child: Child,
    pub log: PathBuf,
    pub stats: PathBuf,
    started: Instant,
    status: Option<ExitStatus>,
}

impl Peer {
    /// Starts `framelock ARGS --stats-json DIR/LABEL.json` with config and data dirs in `dir`,
    /// as a user called `label`.
    pub fn spawn(dir: &Path, label: &str, args: &[String]) -> Peer {
        Peer::spawn_as(dir, label, Some(label), args)
    }

    /// `spawn` with `$USER` set to `user`, or for `None` with no login name at all
    /// (`$USER`, `$LOGNAME` and `$USERNAME` unset).
    pub fn spawn_as(dir: &Path, label: &str, user: Option<&str>, args: &[String]) -> Peer {
        Peer::spawn_in(dir, None, label, user, args)
    }

    /// `spawn_as` inside the network namespace `netns`, if one is given.
    pub fn spawn_in(
        dir: &Path,
        netns: Option<&str>,
        label: &str,
        user: Option<&str>,
        args: &[String],
    ) -> Peer {
        Peer::spawn_with_env(dir, netns, label, user, args, &[])
    }

    /// `spawn_in` with these environment variables set too.
    pub fn spawn_with_env(
        dir: &Path,
        netns: Option<&str>,
        label: &str,
        user: Option<&str>,
        args: &[String],
        env: &[(&str, &str)],
    ) -> Peer {
        let log = dir.join(format!("{label}.log"));
        let stats = dir.join(format!("{label}.json"));
        let mut cmd = fixtures::framelock_in(dir, netns);
        cmd.envs(env.iter().copied());
        cmd.env_remove("LOGNAME").env_remove("USERNAME");
        match user {
            Some(user) => cmd.env("USER", user),
            None => cmd.env_remove("USER"),
        };
        let child = cmd
            .args(args)
            .arg("--stats-json")
            .arg(&stats)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log).expect("create log file"))
            .spawn()
            .expect("spawn framelock");
        Peer {
            label: label.into(),
            child,
            log,
            stats,
            started: Instant::now(),
            status: None,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `wait_for_log`, failing the test with the log when `needle` does not come.
    pub fn expect_log(&mut self, needle: &str, timeout: Duration) -> Instant {
        match self.wait_for_log(needle, timeout) {
            Some(at) => at,
            None => panic!("no `{needle}` within {timeout:?}:\n{}", self.log_text()),
        }
    }

    /// Polls the log until it contains `needle`; `None` on timeout or if the process ended.
    pub fn wait_for_log(&mut self, needle: &str, timeout: Duration) -> Option<Instant> {
        let end = Instant::now() + timeout;
        loop {
            if self.log_text().contains(needle) {
                return Some(Instant::now());
            }
            if Instant::now() >= end || self.try_status().is_some() {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().expect("poll child");
        }
        self.status
    }

    /// Waits for the exit, at most `timeout` and never past the hard deadline; on overrun
    /// the process is killed and the test fails with its log.
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let end = (Instant::now() + timeout).min(self.started + HARD_DEADLINE);
        loop {
            if let Some(s) = self.try_status() {
                return s;
            }
            if Instant::now() >= end {
                self.kill();
                panic!(
                    "{} did not exit in time ({:.1} s after start); killed\n{}",
                    self.label,
                    self.started.elapsed().as_secs_f64(),
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the exit and fails the test unless it was a success.
    pub fn wait_ok(&mut self, timeout: Duration) {
        let s = self.wait(timeout);
        assert!(
            s.success(),
            "{} exited with {s}\n{}",
            self.label,
            self.log_text()
        );
    }

    /// SIGINT, what Ctrl-C in a terminal sends.
    pub fn interrupt(&mut self) {
        let sent = std::process::Command::new("kill")
            .args(["-INT", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -INT {} failed", self.pid());
    }

    /// SIGKILL (what `kill -9` sends) and reap.
    pub fn kill(&mut self) {
        if self.try_status().is_none() {
            let _ = self.child.kill();
            self.status = self.child.wait().ok();
        }
    }

    /// The `--stats-json` file, which must exist.
    pub fn read_stats(&self) -> Value {
        let text = std::fs::read_to_string(&self.stats).unwrap_or_else(|e| {
            panic!(
                "{}: no stats file {}: {e}\n{}",
                self.label,
                self.stats.display(),
                self.log_text()
            )
        });
        serde_json::from_str(&text).expect("stats file is JSON")
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `framelock host` on `port`; returns once it listens (its log says so).
pub fn start_host(dir: &Path, port: u16, extra: &[String]) -> Peer {
    start_host_as(dir, port, Some("host"), extra)
}

/// `start_host` as `user` (see `Peer::spawn_as`).
pub fn start_host_as(dir: &Path, port: u16, user: Option<&str>, extra: &[String]) -> Peer {
    let mut args: Vec<String> = ["host", "--headless", "--port", &port.to_string()]
        .map(String::from)
        .to_vec();
    args.extend_from_slice(&["--lobby-timeout".into(), "30".into()]);
    args.extend_from_slice(extra);
    let mut host = Peer::spawn_as(dir, "host", user, &args);
    assert!(
        host.wait_for_log("hosting on udp port", Duration::from_secs(15))
            .is_some(),
        "host did not start listening\n{}",
        host.log_text()
    );
    // It tells its players what to run: its address on this network (THIS-MACHINE when it
    // has no route) and the port, then the core and content if any.
    let needle = "players join with `";
    host.wait_for_log(needle, Duration::from_secs(5));
    let log = host.log_text();
    let command = log
        .split(needle)
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_default()
        .to_string();
    let addr = command.split(' ').nth(2).unwrap_or_default();
    assert!(
        addr.ends_with(&format!(":{port}")),
        "host did not say how to join on port {port} ({command:?})\n{}",
        host.log_text()
    );
    host
}

/// `framelock join 127.0.0.1:PORT` as `label`.
pub fn start_join(dir: &Path, port: u16, label: &str, extra: &[String]) -> Peer {
    start_join_as(dir, port, label, Some(label), extra)
}

/// `start_join` as `user` (see `Peer::spawn_as`); `label` names its log and stats files.
pub fn start_join_as(
    dir: &Path,
    port: u16,
    label: &str,
    user: Option<&str>,
    extra: &[String],
) -> Peer {
    let mut args = vec![
        "join".to_string(),
        format!("127.0.0.1:{port}"),
        "--headless".into(),
    ];
    args.extend_from_slice(extra);
    Peer::spawn_as(dir, label, user, &args)
}

/// `framelock serve` on a free port; returns once it listens.
pub fn start_server(dir: &Path, extra: &[&str]) -> (Peer, String) {
    let port = free_port();
    let mut a = args(&["serve", "--port", &port.to_string(), "--bind", "127.0.0.1"]);
    a.extend(extra.iter().map(|s| s.to_string()));
    let mut server = Peer::spawn(dir, "server", &a);
    assert!(
        server
            .wait_for_log("serve: listening on udp", Duration::from_secs(15))
            .is_some(),
        "server did not start\n{}",
        server.log_text()
    );
    (server, format!("127.0.0.1:{port}"))
}

/// `framelock host --server ADDR --room ROOM` (`--path relayed` unless `extra` names a
/// path); returns once the room is open.
pub fn open_room(dir: &Path, server: &str, room: &str, extra: &[&str]) -> Peer {
    let mut a = args(&["host", "--headless", "--server", server, "--room", room]);
    // An uploaded room unless the caller picks the path (`--path auto`: a hosted room).
    if !extra.contains(&"--path") {
        a.extend(args(&["--path", "relayed"]));
    }
    a.extend(extra.iter().map(|s| s.to_string()));
    let mut host = Peer::spawn(dir, "host", &a);
    let said = format!("your friends join with `framelock join {server} --room {room}");
    assert!(
        host.wait_for_log(&said, Duration::from_secs(15)).is_some(),
        "the room did not open\n{}",
        host.log_text()
    );
    host
}

pub fn join_room(dir: &Path, label: &str, server: &str, room: &str, extra: &[&str]) -> Peer {
    let mut a = args(&["join", server, "--room", room, "--headless"]);
    a.extend(extra.iter().map(|s| s.to_string()));
    Peer::spawn(dir, label, &a)
}

/// `framelock replay LOG --headless --fast --verify` passes.
pub fn assert_log_verifies(dir: &Path, log: &Path) {
    let out = fixtures::framelock(dir)
        .args(["replay", "--headless", "--fast", "--verify"])
        .arg(log)
        .output()
        .expect("run framelock replay");
    assert!(
        out.status.success(),
        "{} does not verify:\n{}",
        log.display(),
        text(&out)
    );
}

/// Owned argument lists from string slices.
pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// The netplay fields every peer's stats must have, with sane values for a run of `frames`.
pub fn assert_sane_stats(label: &str, s: &Value, frames: u64) {
    let ctx = format!("{label}: {s:#}");
    assert_eq!(s["frames"].as_u64(), Some(frames), "{ctx}");
    assert_eq!(s["netplay"], Value::Bool(true), "{ctx}");
    for key in [
        "stall_frames",
        "bytes_sent",
        "bytes_received",
        "packets_sent",
        "packets_received",
        "packets_dropped_invalid",
        "desyncs_detected",
        "keyframe_interval",
    ] {
        assert!(s[key].is_u64(), "{key} missing or not a count in {ctx}");
    }
    assert!(
        s["stall_ms"].as_f64().is_some_and(|v| v >= 0.0),
        "stall_ms: {ctx}"
    );
    assert!(s["input_latency_frames"]["median"].is_u64(), "{ctx}");
    assert!(s["input_latency_frames"]["p95"].is_u64(), "{ctx}");
    assert!(s["players_left"].is_array(), "{ctx}");
    assert!(s["rtt_ms"].is_u64(), "rtt_ms: {ctx}");
    assert!(s["lead"].is_u64(), "lead: {ctx}");
    let sent = s["packets_sent"].as_u64().unwrap();
    let recv = s["packets_received"].as_u64().unwrap();
    assert!(sent > 0 && recv > 0, "no traffic: {ctx}");
    // Every datagram costs at least the 28 bytes of UDP/IPv4 headers.
    assert!(s["bytes_sent"].as_u64().unwrap() >= 28 * sent, "{ctx}");
    assert!(s["bytes_received"].as_u64().unwrap() >= 28 * recv, "{ctx}");
    // The handshake and start state (before the first frame) are part of the totals; a
    // joiner receives at least the start state's chunks, the host sends them.
    let lobby_sent = s["lobby_bytes_sent"].as_u64().expect("lobby_bytes_sent");
    let lobby_recv = s["lobby_bytes_received"]
        .as_u64()
        .expect("lobby_bytes_received");
    assert!(lobby_sent > 0 && lobby_recv > 0, "{ctx}");
    assert!(lobby_sent < s["bytes_sent"].as_u64().unwrap(), "{ctx}");
    assert!(lobby_recv < s["bytes_received"].as_u64().unwrap(), "{ctx}");
    // Stalls are counted per display slot (one per 1/60 s), so bounded by the wall time.
    let wall = s["wall_s"].as_f64().expect("wall_s");
    assert!(
        s["stall_frames"].as_f64().unwrap() <= wall * 61.0 + 1.0,
        "{ctx}"
    );
    assert_eq!(s["desyncs_detected"].as_u64(), Some(0), "{ctx}");
    let median = s["input_latency_frames"]["median"].as_u64().unwrap();
    let p95 = s["input_latency_frames"]["p95"].as_u64().unwrap();
    // The histogram tops out at 255 frames.
    assert!(median <= p95 && p95 <= 255, "{ctx}");
}

/// Runs a host and `players - 1` joiners with bots for `frames` frames; every process must
/// exit 0 with the same checksum. Returns the stats, host first.
pub fn run_session(
    dir: &Path,
    players: u8,
    frames: u32,
    common: &[String],
    host_only: &[String],
) -> Vec<Value> {
    let port = free_port();
    let frames_s = frames.to_string();
    let mut host_args = args(&[
        "--players",
        &players.to_string(),
        "--frames",
        &frames_s,
        "--bot",
        "1",
    ]);
    host_args.extend_from_slice(common);
    host_args.extend_from_slice(host_only);
    let mut host = start_host(dir, port, &host_args);
    let mut joiners: Vec<Peer> = (1..players)
        .map(|i| {
            let mut a = args(&["--frames", &frames_s, "--bot", &(i + 1).to_string()]);
            a.extend_from_slice(common);
            start_join(dir, port, &format!("join{i}"), &a)
        })
        .collect();
    // 1200 frames are 20 s at 60 fps; the rest is start-up and the bad link's stalls.
    let budget = Duration::from_secs_f64(f64::from(frames) / 60.0 + 25.0);
    for j in &mut joiners {
        j.wait_ok(budget);
    }
    host.wait_ok(budget);
    let mut all = vec![host.read_stats()];
    all.extend(joiners.iter().map(Peer::read_stats));
    let want = checksum(&all[0]);
    for (i, s) in all.iter().enumerate() {
        let label = if i == 0 {
            "host".to_string()
        } else {
            format!("join{i}")
        };
        assert_sane_stats(&label, s, u64::from(frames));
        assert_eq!(
            checksum(s),
            want,
            "{label} ended with another checksum than the host\n{}",
            if i == 0 {
                host.log_text()
            } else {
                joiners[i - 1].log_text()
            }
        );
    }
    all
}
