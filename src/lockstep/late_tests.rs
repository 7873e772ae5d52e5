//! Late streams on the simulated network: players who join a running game or come back
//! after a drop, and spectators, which nothing of the players' waits for.

use std::time::Duration;

use crate::input::{Inputs, Pad};

use super::sim::{PathSpec, PlayerSpec, Sim, SimConfig};
use super::tests::{collapse, config, secs, uniform};
use super::{ClientEvent, Frame, PeerId, ServerEvent, SpectatorId};

fn lossy(rtt: u64) -> PathSpec {
    PathSpec::rtt_ms(rtt).rtt_jitter_ms(20).loss(0.02)
}

/// The frame a late player's input entered the game, from the server's events.
pub(super) fn joined_from(sim: &Sim, peer: PeerId) -> Frame {
    sim.server_events
        .iter()
        .rev()
        .find_map(|(_, e)| match e {
            ServerEvent::PeerJoined {
                peer: p,
                from_frame,
            } if *p == peer => Some(*from_frame),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{peer} never joined: {:?}", sim.server_events))
}

/// Player `i` applied the same inputs as the host's machine on every frame both ran.
pub(super) fn assert_matches_host(sim: &Sim, i: usize) {
    let host = &sim.players[0];
    let p = &sim.players[i];
    assert!(p.first >= host.first);
    let offset = (p.first - host.first) as usize;
    let n = p
        .applied
        .len()
        .min(host.applied.len().saturating_sub(offset));
    assert!(n > 600, "client {i} ran only {n} frames alongside the host");
    if let Some(k) = (0..n).find(|&k| p.applied[k] != host.applied[offset + k]) {
        panic!(
            "client {i} diverged at frame {}: {:?} vs {:?}",
            p.first as usize + k,
            p.applied[k],
            host.applied[offset + k]
        );
    }
}

fn slot_inputs(frames: &[Inputs], slot: usize) -> impl Iterator<Item = Pad> + '_ {
    frames.iter().map(move |f| f[slot])
}

#[test]
fn a_late_joiner_catches_up_and_plays_from_a_frame_everyone_is_told() {
    let mut cfg = uniform(2, lossy(100), 31);
    cfg.lockstep = config(3, 2);
    let mut sim = Sim::new(cfg);
    sim.run_until(secs(10));
    let ana = sim.add_late_player(PeerId(2), PlayerSpec::symmetric(lossy(80)), "ana");
    let first = sim.players[ana].first;
    assert!(first > 500, "started from frame {first}");
    sim.run_until(secs(40));
    let from = joined_from(&sim, PeerId(2));
    // It caught up within a few seconds of its start state: at up to 4 frames a slot.
    assert!(from.0 > first && from.0 < first + 600, "{first} -> {from}");
    // Every client, the late one too, heard it and from which frame.
    for p in &sim.players {
        assert!(
            p.events.iter().any(|(_, e)| matches!(e,
                ClientEvent::PlayerJoined { peer: PeerId(2), from_frame, name }
                    if *from_frame == from && name == "ana")),
            "{}: {:?}",
            p.id,
            p.events
        );
    }
    for i in 1..sim.players.len() {
        assert_matches_host(&sim, i);
    }
    // Neutral on its seat until that frame, its own input after it.
    let host = &sim.players[0].applied;
    let before = &host[..from.0 as usize];
    assert!(slot_inputs(before, 2).all(|p| p == Pad::NEUTRAL));
    let after = &host[from.0 as usize..];
    assert!(slot_inputs(after, 2).any(|p| p != Pad::NEUTRAL));
    // From that frame on it is a player like the others: no tap lost, stalls rare.
    let late = &sim.players[ana];
    // Its changes on the frames are a run of its samples' changes (the first one or two may
    // be cut by where its input entered).
    let applied: Vec<Pad> = collapse(slot_inputs(after, 2))[2..].to_vec();
    let pushed = collapse(late.pushed.iter().copied());
    let at = pushed
        .windows(8)
        .position(|w| w == &applied[..8])
        .expect("its applied changes are a run of its samples");
    let tail = &pushed[at..];
    let n = applied.len().min(tail.len());
    assert!(n > 50, "only {n} changes");
    let lost = (0..n - 2).find(|&k| applied[k] != tail[k]);
    assert!(lost.is_none(), "change {lost:?} lost or reordered");
    let stalled = late.stalled_slots as f64 / late.slots.max(1) as f64;
    assert!(
        stalled < 0.05,
        "late player stalled {:.1}%",
        stalled * 100.0
    );
}

#[test]
fn a_player_that_dropped_takes_its_seat_back() {
    let mut cfg = uniform(2, lossy(60), 32);
    cfg.players[1] = PlayerSpec::symmetric(lossy(60).dead_after(secs(10)));
    let mut sim = Sim::new(cfg);
    sim.run_until(secs(14));
    let left = sim
        .server_events
        .iter()
        .find_map(|(_, e)| match e {
            ServerEvent::PeerLeft {
                peer, from_frame, ..
            } if *peer == PeerId(1) => Some(*from_frame),
            _ => None,
        })
        .expect("player 2 timed out");
    let back = sim.add_late_player(PeerId(1), PlayerSpec::symmetric(lossy(60)), "bob");
    sim.run_until(secs(40));
    let from = joined_from(&sim, PeerId(1));
    assert!(from > left);
    assert_matches_host(&sim, back);
    let host = &sim.players[0].applied;
    assert!(slot_inputs(&host[left.0 as usize..from.0 as usize], 1).all(|p| p == Pad::NEUTRAL));
    assert!(slot_inputs(&host[from.0 as usize..], 1).any(|p| p != Pad::NEUTRAL));
}

/// Two players on a lossy 100 ms link, with `spectators` added at 10 s: a few on clean
/// links, one 300 ms away, one whose link dies at 20 s. Returns the sim after 60 s.
fn watched(seed: u64, spectators: u8) -> Sim {
    let cfg: SimConfig = uniform(2, lossy(100), seed);
    let mut sim = Sim::new(cfg);
    sim.run_until(secs(10));
    for id in 0..spectators {
        let link = match id {
            0 => PathSpec::rtt_ms(300),
            1 => lossy(60).dead_after(secs(20)),
            _ => lossy(60),
        };
        sim.add_spectator(id, PlayerSpec::symmetric(link));
    }
    sim.run_until(secs(60));
    sim
}

#[test]
fn spectators_change_nothing_for_the_players() {
    let alone = watched(33, 0);
    let watched = watched(33, 16);
    // The players' network is the same (the spectators' links draw from a generator of
    // their own); what differs is only when the server's timers run, so the lead steps at
    // slightly other moments: noise, not waiting.
    for i in 0..2 {
        let (a, b) = (&alone.players[i], &watched.players[i]);
        let stall = |p: &super::sim::Player| 100.0 * p.stalled_slots as f64 / p.slots as f64;
        assert!(
            (stall(a) - stall(b)).abs() < 0.3,
            "player {i} stalled {:.2}% alone, {:.2}% watched",
            stall(a),
            stall(b)
        );
        let (ma, mb) = (
            a.client.stats().latency.median().unwrap(),
            b.client.stats().latency.median().unwrap(),
        );
        assert!(
            ma.abs_diff(mb) <= 1,
            "player {i}: latency {ma} vs {mb} frames"
        );
    }
    assert_matches_host(&watched, 1);
    let spectators: Vec<usize> = (2..watched.players.len()).collect();
    assert_eq!(spectators.len(), 16);
    for &i in &spectators {
        let p = &watched.players[i];
        if p.spectator == Some(1) {
            continue;
        }
        assert_matches_host(&watched, i);
        // It kept up: it shows frames close behind the host.
        // (It may even run a few frames ahead of the host's machine: it shows a frame once
        // all its inputs are known, the host's player when its clock says so.)
        let behind = i64::from(watched.host_frame()) - i64::from(p.first + p.applied.len() as u32);
        assert!(
            behind < 60,
            "spectator {:?} is {behind} frames behind",
            p.spectator
        );
    }
    // The dead one was dropped, and only it.
    let left: Vec<u8> = watched
        .server_events
        .iter()
        .filter_map(|(_, e)| match e {
            ServerEvent::SpectatorLeft { id } => Some(id.0),
            _ => None,
        })
        .collect();
    assert_eq!(left, [1]);
    assert_eq!(watched.server.spectator_count(), 15);
    // The one 300 ms away shows the game at most one round trip plus 100 ms behind.
    let far = &watched.players[2];
    let delay = median_delay(&watched, 2);
    assert!(delay < Duration::from_millis(400), "{far:?}: {delay:?}");
}

/// Median time between the host's machine running a frame and client `i` running it.
fn median_delay(sim: &Sim, i: usize) -> Duration {
    let host = &sim.players[0];
    let p = &sim.players[i];
    let offset = (p.first - host.first) as usize;
    let mut d: Vec<Duration> = p
        .ran_at
        .iter()
        .enumerate()
        .skip(300)
        .filter_map(|(k, t)| Some(t.saturating_sub(*host.ran_at.get(offset + k)?)))
        .collect();
    d.sort();
    d.get(d.len() / 2).copied().unwrap_or_default()
}

#[test]
fn a_spectator_that_falls_behind_gets_no_more_frames_until_restarted() {
    let mut sim = Sim::new(uniform(2, lossy(60), 34));
    sim.run_until(secs(5));
    // Its link grows to 2 s each way for a while (in steps short of the silence timeout):
    // it falls more than 2 s behind.
    let link = PathSpec::rtt_ms(60)
        .rtt_change(secs(8), 2000)
        .rtt_change(secs(9), 4000)
        .rtt_change(secs(14), 60);
    let i = sim.add_spectator(7, PlayerSpec::symmetric(link));
    sim.run_until(secs(16));
    assert!(
        sim.server_events.iter().any(|(_, e)| matches!(
            e,
            ServerEvent::SpectatorBehind {
                id: SpectatorId(7),
                ..
            }
        )),
        "{:?}",
        sim.server_events
    );
    // What a host does with the fresh state it sends: the stream restarts there.
    sim.restart_spectator(i);
    sim.run_until(secs(30));
    assert_matches_host(&sim, i);
    let p = &sim.players[i];
    assert!(i64::from(sim.host_frame()) - i64::from(p.first + p.applied.len() as u32) < 60);
}

/// Players' stalls and latency with 0 and with 16 spectators (same seeds), a spectator's
/// upload from the server and its delay behind the host. `cargo test --release --lib
/// bench_spectators -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_spectators() {
    println!("2 players, 100 ms RTT, +-20 ms jitter, 2% loss; spectators from 10 s to 60 s");
    println!(
        "{:<14} {:>9} {:>16} {:>16}",
        "spectators", "stall %", "median latency", "p95 latency"
    );
    let mut uploads = Vec::new();
    let mut delays = Vec::new();
    let mut far = Vec::new();
    for n in [0u8, 16] {
        let (mut stall, mut med, mut p95) = (0.0f64, 0u32, 0u32);
        for seed in 0..4 {
            let sim = watched(700 + seed, n);
            for p in &sim.players[..2] {
                stall = stall.max(100.0 * p.stalled_slots as f64 / p.slots.max(1) as f64);
                let lat = p.client.stats().latency;
                med = med.max(lat.median().unwrap_or(0));
                p95 = p95.max(lat.p95().unwrap_or(0));
            }
            for (i, p) in sim.players.iter().enumerate().skip(2) {
                if p.spectator == Some(0) {
                    far.push(median_delay(&sim, i).as_secs_f64() * 1000.0);
                }
                let Some(id) = p.spectator.filter(|id| *id >= 2) else {
                    continue;
                };
                let t = sim
                    .server
                    .spectator(SpectatorId(id))
                    .expect("watching")
                    .traffic;
                let secs = sim.now().as_secs_f64() - 10.0;
                uploads.push(t.wire_out as f64 / secs);
                delays.push(median_delay(&sim, i).as_secs_f64() * 1000.0);
            }
        }
        println!(
            "{n:<14} {stall:>9.3} {:>13.0} ms {:>13.0} ms",
            f64::from(med) * 1000.0 / 60.0,
            f64::from(p95) * 1000.0 / 60.0
        );
    }
    uploads.sort_by(f64::total_cmp);
    delays.sort_by(f64::total_cmp);
    println!(
        "upload per spectator (UDP/IP headers included): median {:.0} B/s, max {:.0} B/s",
        uploads[uploads.len() / 2],
        uploads[uploads.len() - 1]
    );
    println!(
        "spectator delay behind the host (60 ms RTT): median {:.0} ms, worst spectator's \
         median {:.0} ms",
        delays[delays.len() / 2],
        delays[delays.len() - 1]
    );
    far.sort_by(f64::total_cmp);
    println!(
        "spectator delay behind the host (300 ms RTT): median {:.0}..{:.0} ms over the seeds",
        far[0],
        far[far.len() - 1]
    );
}
