//! Late streams on the simulated network: players who join a running game or come back
//! after a drop, and spectators, which nothing of the players' waits for.

use std::time::Duration;

use crate::input::{Inputs, Pad};

use super::sim::measure::{assert_matches_host, lossy, median_delay, watched};
use super::sim::{PathSpec, PlayerSpec, Sim};
use super::tests::{collapse, config, secs, uniform};
use super::{ClientEvent, Frame, PeerId, ServerEvent, SpectatorId};

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
