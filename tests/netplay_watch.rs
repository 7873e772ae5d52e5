//! Watching and joining running sessions with real processes on 127.0.0.1: spectators that
//! attach midway, die or lag; a third player taking a free seat; a killed player running
//! `join` again; many spectators; and both through `framelock serve`.

mod netplay_common;

use std::path::Path;
use std::time::Duration;

use netplay_common::{
    args, assert_log_verifies, checksum, free_port, genesis, start_host, start_join, Peer,
};
use serde_json::Value;

/// `framelock spectate 127.0.0.1:PORT --headless` as `label`.
fn spectate(dir: &Path, port: u16, label: &str, extra: &[String]) -> Peer {
    let mut a = args(&["spectate", &format!("127.0.0.1:{port}"), "--headless"]);
    a.extend_from_slice(extra);
    Peer::spawn(dir, label, &a)
}

/// Waits until `peer` has run about `frames` frames of the session: the host logs nothing
/// per frame, so this waits for the time they take, after the peer's first frame.
fn wait_frames(peer: &mut Peer, frames: u32) {
    assert!(
        peer.wait_for_log("netplay: in session", Duration::from_secs(20))
            .is_some()
            || peer.log_text().contains("hosting on udp port"),
        "{} did not start\n{}",
        peer.label,
        peer.log_text()
    );
    std::thread::sleep(Duration::from_secs_f64(f64::from(frames) / 60.0));
}

fn stall_pct(s: &Value) -> f64 {
    100.0 * s["stall_frames"].as_f64().unwrap() / s["frames"].as_f64().unwrap().max(1.0)
}

#[test]
fn a_spectator_attaching_midway_under_loss_ends_in_sync_and_its_log_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let lossy = ["--netsim", "loss=5%,delay=20ms,jitter=5ms"];
    let frames = ["--frames", "1500"];
    let mut host = start_host(
        d,
        port,
        &args(&[&frames[..], &lossy[..], &["--bot", "1"]].concat()),
    );
    let mut bob = start_join(
        d,
        port,
        "bob",
        &args(&[&frames[..], &lossy[..], &["--bot", "2"]].concat()),
    );
    wait_frames(&mut bob, 600);
    let log = d.join("eve.flr");
    let mut eve = spectate(
        d,
        port,
        "eve",
        &args(
            &[
                &frames[..],
                &lossy[..],
                &["--record", log.to_str().unwrap()],
            ]
            .concat(),
        ),
    );
    for p in [&mut bob, &mut eve, &mut host] {
        p.wait_ok(Duration::from_secs(50));
    }
    let (h, b, e) = (host.read_stats(), bob.read_stats(), eve.read_stats());
    assert_eq!(e["spectator"], true, "{e:#}");
    assert_eq!(h["spectator"], false, "{h:#}");
    let first = e["first_frame"].as_u64().unwrap();
    assert!((300..1200).contains(&first), "attached at frame {first}");
    assert_eq!(e["frames"].as_u64(), Some(1500 - first));
    assert_eq!(checksum(&e), checksum(&h), "{}", eve.log_text());
    assert_eq!(checksum(&b), checksum(&h));
    // It never sent a pad, and the host counted it.
    assert!(eve.log_text().contains("admitted as a spectator"));
    assert!(
        host.log_text().contains("watches from frame"),
        "{}",
        host.log_text()
    );
    assert!(e["delay_ms"]["median"].as_f64().is_some(), "{e:#}");
    assert_log_verifies(d, &log);
}

/// Two players with bots for 1800 frames; `watch` starts spectators beside them, which are
/// waited for at the end. Returns the players' stats.
fn players_with(d: &Path, watch: impl FnOnce(&Path, u16) -> Vec<Peer>) -> (Value, Value, String) {
    let port = free_port();
    let frames = ["--frames", "1800"];
    let mut host = start_host(d, port, &args(&[&frames[..], &["--bot", "1"]].concat()));
    let mut bob = start_join(
        d,
        port,
        "bob",
        &args(&[&frames[..], &["--bot", "2"]].concat()),
    );
    let mut watchers = watch(d, port);
    bob.wait_ok(Duration::from_secs(55));
    host.wait_ok(Duration::from_secs(55));
    for w in &mut watchers {
        w.wait_ok(Duration::from_secs(10));
    }
    let (h, b) = (host.read_stats(), bob.read_stats());
    assert_eq!(checksum(&h), checksum(&b));
    for w in &watchers {
        assert_eq!(checksum(&w.read_stats()), checksum(&h), "{}", w.log_text());
    }
    (h, b, host.log_text())
}

#[test]
fn a_killed_spectator_and_a_slow_one_leave_the_players_stalls_unchanged() {
    let alone = tempfile::tempdir().unwrap();
    let (h0, b0, _) = players_with(alone.path(), |_, _| Vec::new());
    let watched = tempfile::tempdir().unwrap();
    let (h1, b1, host_log) = players_with(watched.path(), |d, port| {
        let frames = args(&["--frames", "1800"]);
        let slow = spectate(
            d,
            port,
            "slow",
            &[frames.clone(), args(&["--netsim", "delay=300ms"])].concat(),
        );
        let mut doomed = spectate(d, port, "doomed", &frames);
        assert!(doomed
            .wait_for_log("watching session", Duration::from_secs(20))
            .is_some());
        std::thread::sleep(Duration::from_secs(3));
        doomed.kill();
        // The slow one watches to the end, behind the players but in step with them.
        vec![slow]
    });
    for (label, a, b) in [("host", &h0, &h1), ("bob", &b0, &b1)] {
        let (pa, pb) = (stall_pct(a), stall_pct(b));
        println!("{label}: stalls {pa:.2}% alone, {pb:.2}% watched by two");
        assert!(
            pb <= pa + 1.0,
            "{label} stalled {pa:.2}% alone but {pb:.2}% watched"
        );
        let (la, lb) = (
            a["input_latency_frames"]["median"].as_u64().unwrap(),
            b["input_latency_frames"]["median"].as_u64().unwrap(),
        );
        assert!(
            lb <= la + 1,
            "{label}: latency {la} frames alone, {lb} watched"
        );
    }
    // Both were watching; the killed one was dropped when it fell silent.
    assert!(host_log.contains("(2 watching)"), "{host_log}");
    assert!(host_log.contains("timed out"), "{host_log}");
}

#[test]
fn a_paused_spectator_gets_a_fresh_state_and_its_log_still_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let frames = ["--frames", "2100"];
    let mut host = start_host(d, port, &args(&[&frames[..], &["--bot", "1"]].concat()));
    let mut bob = start_join(
        d,
        port,
        "bob",
        &args(&[&frames[..], &["--bot", "2"]].concat()),
    );
    wait_frames(&mut bob, 120);
    let log = d.join("eve.flr");
    let mut eve = spectate(
        d,
        port,
        "eve",
        &args(&[&frames[..], &["--record", log.to_str().unwrap()]].concat()),
    );
    assert!(eve
        .wait_for_log("watching session", Duration::from_secs(20))
        .is_some());
    std::thread::sleep(Duration::from_secs(4));
    // Stopped for longer than the 2 s of frames the host keeps for it (a closed laptop lid).
    let pid = eve.pid().to_string();
    let signal = |sig: &str| {
        let ok = std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .expect("run kill");
        assert!(ok.success());
    };
    signal("-STOP");
    std::thread::sleep(Duration::from_millis(3500));
    signal("-CONT");
    for p in [&mut eve, &mut bob, &mut host] {
        p.wait_ok(Duration::from_secs(50));
    }
    let e = eve.read_stats();
    assert_eq!(e["jumps"], 1, "{}", eve.log_text());
    assert_eq!(
        checksum(&e),
        checksum(&host.read_stats()),
        "{}",
        eve.log_text()
    );
    let text = eve.log_text();
    assert!(text.contains("received a fresh state for frame"), "{text}");
    assert!(text.contains("watching again from frame"), "{text}");
    // Its log holds the jump as a resync and replays to the same end.
    assert_log_verifies(d, &log);
}

#[test]
fn a_third_player_takes_a_free_seat_of_a_running_game() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let frames = ["--frames", "1500"];
    let host_args = [
        &frames[..],
        &["--bot", "1", "--players", "3", "--start-with", "2"],
    ]
    .concat();
    let mut host = start_host(d, port, &args(&host_args));
    let mut bob = start_join(
        d,
        port,
        "bob",
        &args(&[&frames[..], &["--bot", "2"]].concat()),
    );
    wait_frames(&mut bob, 600);
    let log = d.join("ana.flr");
    let ana_args = [
        &frames[..],
        &[
            "--bot",
            "3",
            "--name",
            "ana",
            "--record",
            log.to_str().unwrap(),
        ],
    ]
    .concat();
    let mut ana = start_join(d, port, "ana", &args(&ana_args));
    for p in [&mut ana, &mut bob, &mut host] {
        p.wait_ok(Duration::from_secs(50));
    }
    let stats: Vec<Value> = [&host, &bob, &ana].iter().map(|p| p.read_stats()).collect();
    let want = checksum(&stats[0]);
    for (p, s) in [&host, &bob, &ana].iter().zip(&stats) {
        assert_eq!(checksum(s), want, "{}\n{}", p.label, p.log_text());
        // Everyone tells the same story: who joined, and from which frame.
        let joined = &s["players_joined"];
        assert_eq!(
            joined.as_array().map(Vec::len),
            Some(1),
            "{}: {s:#}",
            p.label
        );
        assert_eq!(joined[0]["slot"], 2);
        let from = joined[0]["from_frame"].as_u64().unwrap();
        let line = format!("ana (player 3) joined from frame {from}");
        assert!(
            p.log_text().contains(&line),
            "{}: no {line:?}\n{}",
            p.label,
            p.log_text()
        );
    }
    let first = stats[2]["first_frame"].as_u64().unwrap();
    assert!((300..1200).contains(&first), "ana started from {first}");
    assert!(ana.log_text().contains("as player 3 of 3, from frame"));
    assert_log_verifies(d, &log);
}

#[test]
fn a_killed_player_runs_join_again_and_takes_its_seat_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let frames = ["--frames", "1800"];
    let host_log = d.join("host.flr");
    let host_args = [
        &frames[..],
        &["--bot", "1", "--record", host_log.to_str().unwrap()],
    ]
    .concat();
    let mut host = start_host(d, port, &args(&host_args));
    let bob_args = |log: &Path| {
        args(
            &[
                &frames[..],
                &[
                    "--bot",
                    "2",
                    "--name",
                    "bob",
                    "--record",
                    log.to_str().unwrap(),
                ],
            ]
            .concat(),
        )
    };
    let mut bob = start_join(d, port, "bob", &bob_args(&d.join("bob.flr")));
    wait_frames(&mut bob, 400);
    bob.kill();
    std::thread::sleep(Duration::from_millis(500));
    let back_log = d.join("bob-again.flr");
    let mut again = start_join(d, port, "bob-again", &bob_args(&back_log));
    again.wait_ok(Duration::from_secs(50));
    host.wait_ok(Duration::from_secs(50));
    let (h, b) = (host.read_stats(), again.read_stats());
    assert_eq!(checksum(&b), checksum(&h), "{}", again.log_text());
    assert_eq!(b["slot"], 1, "bob got another seat: {b:#}");
    let host_text = host.log_text();
    assert!(
        host_text.contains("bob (player 2) is back from frame"),
        "{host_text}"
    );
    // The host's log has the seat neutral from the drop and bob's input again from the
    // rejoin; the rejoiner's starts from the state it received. Both verify.
    assert_log_verifies(d, &host_log);
    assert_log_verifies(d, &back_log);
}

/// Eight players and sixteen spectators of the built-in game, all in sync.
#[test]
fn eight_players_and_sixteen_spectators_stay_in_sync() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let frames = ["--frames", "900"];
    let mut host = start_host(
        d,
        port,
        &args(&[&frames[..], &["--bot", "1", "--players", "8"]].concat()),
    );
    let mut players: Vec<Peer> = (2..=8)
        .map(|i| {
            start_join(
                d,
                port,
                &format!("p{i}"),
                &args(&[&frames[..], &["--bot", &i.to_string()]].concat()),
            )
        })
        .collect();
    // They ask in while the lobby fills: they get the start state and watch from frame 0.
    let mut watchers: Vec<Peer> = (1..=16)
        .map(|i| spectate(d, port, &format!("s{i}"), &args(&frames)))
        .collect();
    let others: Vec<&mut Peer> = players.iter_mut().chain(watchers.iter_mut()).collect();
    assert_all_end_like_the_host(&mut host, others);
}

/// Every peer of `others`, then `host`, exits 0, and each ends with the host's checksum.
fn assert_all_end_like_the_host(host: &mut Peer, mut others: Vec<&mut Peer>) {
    for p in others.iter_mut() {
        p.wait_ok(Duration::from_secs(55));
    }
    host.wait_ok(Duration::from_secs(55));
    let want = checksum(&host.read_stats());
    for p in &others {
        assert_eq!(
            checksum(&p.read_stats()),
            want,
            "{}\n{}",
            p.label,
            p.log_text()
        );
    }
}

#[test]
fn genesis_plus_gx_with_two_players_and_four_spectators() {
    let g = genesis();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let game = [
        g.rom.to_str().unwrap(),
        "--core",
        g.core.to_str().unwrap(),
        "--frames",
        "1200",
    ];
    let mut host = start_host(d, port, &args(&[&game[..], &["--bot", "1"]].concat()));
    let mut bob = start_join(
        d,
        port,
        "bob",
        &args(&[&game[..], &["--bot", "2"]].concat()),
    );
    wait_frames(&mut bob, 300);
    let mut watchers: Vec<Peer> = (1..=4)
        .map(|i| spectate(d, port, &format!("s{i}"), &args(&game)))
        .collect();
    let others: Vec<&mut Peer> = watchers.iter_mut().chain([&mut bob]).collect();
    assert_all_end_like_the_host(&mut host, others);
}

#[test]
fn a_spectator_and_a_late_joiner_in_a_room_on_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut server = Peer::spawn(
        d,
        "server",
        &args(&["serve", "--port", &port.to_string(), "--bind", "127.0.0.1"]),
    );
    assert!(server
        .wait_for_log("serve: listening on udp", Duration::from_secs(15))
        .is_some());
    let frames = ["--frames", "1500"];
    let host_args = [
        &[
            "host",
            "--headless",
            "--server",
            &addr,
            "--room",
            "den",
            "--path",
            "relayed",
        ][..],
        &frames[..],
        &["--bot", "1", "--players", "3", "--start-with", "2"],
    ]
    .concat();
    let mut host = Peer::spawn(d, "host", &args(&host_args));
    assert!(host
        .wait_for_log("your friends join with", Duration::from_secs(15))
        .is_some());
    let room = |verb: &str, label: &str, extra: &[&str]| {
        let a = [
            &[verb, &addr, "--room", "den", "--headless"][..],
            &frames[..],
            extra,
        ]
        .concat();
        Peer::spawn(d, label, &args(&a))
    };
    let mut bob = room("join", "bob", &["--bot", "2"]);
    wait_frames(&mut bob, 500);
    let log = d.join("eve.flr");
    let mut eve = room("spectate", "eve", &["--record", log.to_str().unwrap()]);
    let mut ana = room("join", "ana", &["--bot", "3", "--name", "ana"]);
    // The server's room list counts who watches.
    assert!(eve
        .wait_for_log("watching session", Duration::from_secs(20))
        .is_some());
    let out = netplay_common::framelock(d)
        .args(["rooms", &addr, "--json"])
        .output()
        .expect("run framelock rooms");
    let listed: Value = serde_json::from_slice(&out.stdout).expect("rooms --json is JSON");
    assert_eq!(listed[0]["spectators"], 1, "{listed:#}");
    for p in [&mut eve, &mut ana, &mut bob, &mut host] {
        p.wait_ok(Duration::from_secs(50));
    }
    let want = checksum(&host.read_stats());
    for p in [&bob, &ana, &eve] {
        assert_eq!(
            checksum(&p.read_stats()),
            want,
            "{}\n{}",
            p.label,
            p.log_text()
        );
    }
    server.interrupt();
    server.wait(Duration::from_secs(10));
    let text = server.log_text();
    assert!(
        text.contains("room den: ana (player 3) joined from frame"),
        "{text}"
    );
    assert!(text.contains("room den: eve watches from frame"), "{text}");
    assert_log_verifies(d, &log);
}
