//! Real processes on 127.0.0.1 over links that alter datagrams on the way, as a forger or a
//! broken middlebox would: each peer's `--netsim corrupt=3%,loss=5%,delay=20ms` flips bits
//! in, cuts short or pads 3% of what it sends. Every session finishes in sync, and what
//! was altered is dropped by the side it reached (for its tag, once the keys are agreed).

mod netplay_common;

use std::path::Path;
use std::thread;

use serde_json::Value;

use netplay_common::{args, genesis, run_session};

const LINK: &str = "corrupt=3%,loss=5%,delay=20ms";
const FRAMES: u32 = 1800;

fn count(s: &Value, key: &str) -> u64 {
    s[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing: {s:#}"))
}

/// One two-player session; returns host's and joiner's stats.
fn session(dir: &Path, game: &[String], host_only: &[String]) -> Vec<Value> {
    let common = [args(&["--netsim", LINK]), game.to_vec()].concat();
    run_session(dir, 2, FRAMES, &common, host_only)
}

/// What one side's conditioner altered reached the other and was dropped there: all of it
/// once the session runs, except what was still on the way when the receiver quit and what
/// the handshake took as it came (a name or padding byte, before the keys). Nothing genuine
/// failed its tag.
fn assert_altered_were_dropped(stats: &[Value]) {
    for (from, to) in [(0, 1), (1, 0)] {
        let altered = stats[from]["netsim"]["corrupted"]
            .as_u64()
            .expect("netsim stats");
        let auth = count(&stats[to], "packets_dropped_auth");
        let invalid = count(&stats[to], "packets_dropped_invalid");
        eprintln!(
            "{} -> {}: {altered} altered, {auth} dropped for their tag, {invalid} as invalid",
            ["host", "joiner"][from],
            ["host", "joiner"][to]
        );
        let ctx = format!("sender {:#}\nreceiver {:#}", stats[from], stats[to]);
        // 3% of about 3,000 datagrams.
        assert!(altered >= 40, "{ctx}");
        assert!(auth <= altered, "genuine datagrams failed their tag: {ctx}");
        assert!(
            auth + invalid + 6 >= altered,
            "{altered} altered, {auth} dropped for their tag, {invalid} as invalid: {ctx}"
        );
    }
}

#[test]
fn twenty_sessions_over_links_that_alter_datagrams_all_finish_in_sync() {
    let dir = tempfile::tempdir().unwrap();
    // Four at a time: the built-in game is light, and lockstep stretches rather than breaks
    // when the machine is busy.
    let results: Vec<Vec<Value>> = (0..5)
        .flat_map(|round| {
            let handles: Vec<_> = (0..4)
                .map(|i| {
                    let d = dir.path().join(format!("s{round}-{i}"));
                    std::fs::create_dir_all(&d).unwrap();
                    thread::spawn(move || session(&d, &[], &[]))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a session failed"))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(results.len(), 20);
    for stats in &results {
        assert_altered_were_dropped(stats);
    }
}

#[test]
fn airstriker_over_links_that_alter_datagrams_finishes_in_sync() {
    let g = genesis();
    let game = args(&["--core", g.core.to_str().unwrap(), g.rom.to_str().unwrap()]);
    let host_only = args(&["--option", "genesis_plus_gx_addr_error=disabled"]);
    let dir = tempfile::tempdir().unwrap();
    let handles: Vec<_> = (0..2)
        .map(|i| {
            let d = dir.path().join(format!("g{i}"));
            std::fs::create_dir_all(&d).unwrap();
            let (game, host_only) = (game.clone(), host_only.clone());
            thread::spawn(move || session(&d, &game, &host_only))
        })
        .collect();
    for h in handles {
        assert_altered_were_dropped(&h.join().expect("a session failed"));
    }
}
