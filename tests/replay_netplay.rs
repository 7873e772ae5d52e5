//! Netplay records on every peer: host and joiner of a 2-player session (real processes on
//! 127.0.0.1) write logs into the recordings directory with identical frame inputs and
//! checksums, and each replays with `--verify` to the session's final checksum.
//! `--record FILE` chooses the file; `--no-record` records nothing.

mod netplay_common;
mod replay_common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use framelock::replay::{Item, Replay, Status};
use netplay_common::{args, free_port, start_host, start_join, Peer};
use replay_common::{assert_ok, checksum, run, stats};

/// Frames, checksums and events of a log, and how it ended.
fn items(path: &Path) -> (Vec<Item>, Status) {
    let mut log = Replay::open(path).unwrap();
    let mut all = Vec::new();
    while let Some(item) = log.next_item().unwrap() {
        all.push(item);
    }
    (all, log.status().unwrap())
}

/// A 2-player session of the built-in game, the host's player a bot; `host_extra` and
/// `join_extra` are added.
fn session(dir: &Path, frames: u32, host_extra: &[&str], join_extra: &[&str]) -> (Peer, Peer) {
    let port = free_port();
    let n = frames.to_string();
    let mut h = args(&["--players", "2", "--frames", &n, "--bot", "1"]);
    h.extend(args(host_extra));
    let mut host = start_host(dir, port, &h);
    let mut j = args(&["--frames", &n]);
    j.extend(args(join_extra));
    let mut join = start_join(dir, port, "join", &j);
    let budget = Duration::from_secs_f64(f64::from(frames) / 60.0 + 25.0);
    join.wait_ok(budget);
    host.wait_ok(budget);
    (host, join)
}

fn recordings(dir: &Path) -> Vec<PathBuf> {
    let rec = dir.join("data/framelock/recordings");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&rec)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn host_and_joiner_logs_agree_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (host, join) = session(d, 600, &[], &["--bot", "2"]);
    let files = recordings(d);
    assert_eq!(files.len(), 2, "{files:?}");
    let host_log = files
        .iter()
        .find(|p| p.to_str().unwrap().ends_with("_host.flr"));
    let join_log = files
        .iter()
        .find(|p| p.to_str().unwrap().ends_with("_join.flr"));
    let (host_log, join_log) = (host_log.unwrap(), join_log.unwrap());
    assert!(host
        .log_text()
        .contains(&format!("recording to {}", host_log.display())));
    assert!(join.log_text().contains(&format!(
        "recording saved to {} (600 frames)",
        join_log.display()
    )));

    let (h_items, h_status) = items(host_log);
    let (j_items, j_status) = items(join_log);
    assert_eq!(h_status, Status::Complete { frames: 600 });
    assert_eq!(j_status, Status::Complete { frames: 600 });
    let frames = |v: &[Item]| -> Vec<Item> {
        v.iter()
            .filter(|i| matches!(i, Item::Frame(..)))
            .cloned()
            .collect()
    };
    let sums = |v: &[Item]| -> Vec<Item> {
        v.iter()
            .filter(|i| matches!(i, Item::Checksum { .. }))
            .cloned()
            .collect()
    };
    assert_eq!(
        frames(&h_items),
        frames(&j_items),
        "peers logged other inputs"
    );
    assert_eq!(sums(&h_items), sums(&j_items));
    assert_eq!(sums(&h_items).len(), 10);
    // Both bots played: both ports carry input.
    let used = |port: usize| {
        frames(&h_items)
            .iter()
            .any(|i| matches!(i, Item::Frame(_, inp) if inp[port].0 != 0))
    };
    assert!(used(0) && used(1));

    let want = checksum(&host.read_stats());
    assert_eq!(checksum(&join.read_stats()), want);
    for (label, log) in [("host", host_log), ("joiner", join_log)] {
        let json = format!("{label}-replay.json");
        let out = run(
            d,
            &[
                "replay",
                log.to_str().unwrap(),
                "--headless",
                "--fast",
                "--verify",
                "--stats-json",
                &json,
            ],
        );
        assert_ok(&out);
        let s = stats(&d.join(json));
        assert_eq!(checksum(&s), want, "{label} log replayed elsewhere");
        assert_eq!(s["replay"]["checksums_matched"], 10);
    }
}

#[test]
fn record_file_and_no_record_are_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("mine.flr");
    session(
        d,
        120,
        &["--record", file.to_str().unwrap()],
        &["--no-record"],
    );
    assert!(recordings(d).is_empty(), "{:?}", recordings(d));
    let (_, status) = items(&file);
    assert_eq!(status, Status::Complete { frames: 120 });
}

#[test]
fn a_resynced_peer_log_still_verifies() {
    // The joiner diverges at frame 300 (test hook) and loads the host's state; its log holds
    // that state, so the replay follows the session through the divergence and the resync.
    // Its player is idle so that nothing can absorb the flipped Select (see netplay_desync).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (host, join) = session(d, 1500, &["--fast"], &["--fast", "--inject-desync", "300"]);
    let want = checksum(&host.read_stats());
    assert_eq!(checksum(&join.read_stats()), want);
    let files = recordings(d);
    let join_log = files
        .iter()
        .find(|p| p.to_str().unwrap().ends_with("_join.flr"))
        .unwrap_or_else(|| panic!("no joiner log in {files:?}"));
    let (join_items, _) = items(join_log);
    assert!(
        join_items.iter().any(|i| matches!(
            i,
            Item::Event {
                event: framelock::replay::Event::Resync { state: Some(_) },
                ..
            }
        )),
        "the joiner's log has no resync state"
    );
    let out = run(
        d,
        &[
            "replay",
            join_log.to_str().unwrap(),
            "--headless",
            "--fast",
            "--verify",
            "--stats-json",
            "resynced.json",
        ],
    );
    assert_ok(&out);
    let s = stats(&d.join("resynced.json"));
    assert_eq!(checksum(&s), want);
    assert_eq!(s["replay"]["checksums_matched"], 25);
    // The host's log notes the desync it detected: its checksum and the joiner's, which
    // differ, at a frame after the injected one; its replay reports it.
    let host_log = files
        .iter()
        .find(|p| p.to_str().unwrap().ends_with("_host.flr"))
        .unwrap();
    let (host_items, _) = items(host_log);
    let desync = host_items.iter().find_map(|i| match i {
        Item::Event {
            frame,
            event: framelock::replay::Event::Desync { local, remote },
        } => Some((*frame, *local, *remote)),
        _ => None,
    });
    let (frame, local, remote) = desync.expect("the host's log has no desync event");
    assert!(
        frame.0 >= 300 && local != remote,
        "{frame} {local:x} {remote:x}"
    );
    let out = run(
        d,
        &[
            "replay",
            host_log.to_str().unwrap(),
            "--headless",
            "--fast",
            "--stats-json",
            "host.json",
        ],
    );
    assert_ok(&out);
    assert!(stats(&d.join("host.json"))["replay"]["recorded_desyncs"].as_u64() >= Some(1));
}

/// `--record FILE` that cannot be written ends `host` and `join` before the lobby, as it
/// does `play`, instead of playing the whole session unrecorded; the file that was there
/// is left alone.
#[test]
fn a_record_file_that_cannot_be_written_is_refused_before_the_lobby() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let taken = d.join("taken.flr");
    std::fs::write(&taken, b"precious").unwrap();
    let port = free_port().to_string();
    let out = run(
        d,
        &[
            "host",
            "--headless",
            "--port",
            &port,
            "--lobby-timeout",
            "30",
            "--record",
            taken.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success(), "{}", replay_common::stderr(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("taken.flr") && err.contains("already exists"),
        "{err}"
    );
    assert!(
        !err.contains("hosting on udp port"),
        "it opened a lobby: {err}"
    );
    assert_eq!(std::fs::read(&taken).unwrap(), b"precious");
    // Nobody listens on that port: a joiner that got as far as the handshake would wait
    // for an answer instead of failing at once.
    let missing = d.join("no-such-dir").join("j.flr");
    let t0 = std::time::Instant::now();
    let out = run(
        d,
        &[
            "join",
            &format!("127.0.0.1:{port}"),
            "--headless",
            "--record",
            missing.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success(), "{}", replay_common::stderr(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("j.flr"), "{err}");
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "{:?}: {err}",
        t0.elapsed()
    );
    assert!(!missing.exists());
}
