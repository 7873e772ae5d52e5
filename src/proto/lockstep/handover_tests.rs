//! Hand-overs of the lockstep server on the simulator (`lockstep::handover`): the host's
//! process is killed mid-game at various frames, over lossy links, and the server goes on
//! in another player's process; the players who go on run the same inputs on every frame
//! and lose no press.

use std::time::Duration;

use crate::input::Pad;

use super::sim::{PathSpec, PlayerSpec, Sim, SimConfig};
use super::tests::{collapse, config, secs};
use super::{best_place, merge_agreed, Frame, PeerId, Place};

fn lossy(rtt: u64) -> PathSpec {
    PathSpec::rtt_ms(rtt).rtt_jitter_ms(rtt / 5).loss(0.02)
}

/// The host and two players at `rtts` from it (each player's path to the new authority
/// is its own path).
fn game(rtts: &[u64], seed: u64) -> Sim {
    let mut players = vec![PlayerSpec::symmetric(PathSpec::default())];
    players.extend(rtts.iter().map(|&r| PlayerSpec::symmetric(lossy(r))));
    let n = players.len();
    Sim::new(SimConfig::new(
        config(n, super::DEFAULT_KEYFRAME_INTERVAL),
        players,
        seed,
    ))
}

/// Every player in `who` ran the same inputs on every frame they both ran, and each one's
/// input changes on the frames are its samples' changes, in order, none lost (after the
/// hand-over too).
fn assert_same_and_no_tap_lost(sim: &Sim, who: &[usize]) {
    let reference = &sim.players[who[0]].applied;
    for &i in who {
        let p = &sim.players[i];
        let n = p.applied.len().min(reference.len());
        if let Some(f) = (0..n).find(|&f| p.applied[f] != reference[f]) {
            panic!("player {i} ran other inputs on frame {f}");
        }
        let applied = collapse(p.applied.iter().map(|f| f[p.id.index()]));
        let sampled = collapse(std::iter::once(Pad::NEUTRAL).chain(p.pushed.iter().copied()));
        if let Some(k) = (0..applied.len()).find(|&k| sampled.get(k) != Some(&applied[k])) {
            panic!(
                "{}: input change {k} is {:?} on frames but {:?} in samples",
                p.id,
                applied[k],
                sampled.get(k)
            );
        }
        assert!(
            applied.len() * 10 >= sampled.len() * 9,
            "{}: only {} of {} input changes applied",
            p.id,
            applied.len(),
            sampled.len()
        );
    }
}

/// Kills the host at `crash`, hands the server to player `to` a second later, and plays
/// on until 40 s.
fn crash_and_hand_over(rtts: &[u64], seed: u64, crash: Duration, to: usize) -> (Sim, Frame) {
    let mut sim = game(rtts, seed);
    sim.run_until(crash);
    let at_crash = sim.players[to].applied.len();
    sim.kill(0);
    sim.run_until(crash + secs(1));
    let from = sim.hand_over(to).expect("the offers agree");
    assert!(
        from.0 as usize >= at_crash,
        "the new authority started behind"
    );
    sim.run_until(secs(40));
    (sim, from)
}

#[test]
fn the_game_goes_on_after_the_host_is_killed_at_any_frame() {
    for (k, crash_ms) in [7_000u64, 9_317, 12_771, 15_050].into_iter().enumerate() {
        let crash = Duration::from_millis(crash_ms);
        let (sim, from) = crash_and_hand_over(&[60, 90], 40 + k as u64, crash, 1);
        let survivors = [1, 2];
        for &i in &survivors {
            let p = &sim.players[i];
            assert!(!p.gone(), "player {i} lost the game");
            // A minute of game at 60 fps goes on for most of the 25 s after the move.
            assert!(
                p.applied.len() > from.0 as usize + 60 * 20,
                "player {i} ran {} frames, the move was at {from}",
                p.applied.len()
            );
        }
        assert_same_and_no_tap_lost(&sim, &survivors);
        // The host's seat is neutral from the frame the new server publishes on.
        let after = &sim.players[1].applied[from.0 as usize..];
        assert!(after.iter().all(|f| f[0] == Pad::NEUTRAL));
        assert!(after
            .iter()
            .any(|f| f[1] != Pad::NEUTRAL && f[2] != Pad::NEUTRAL));
    }
}

#[test]
fn a_new_authority_that_is_behind_takes_the_frames_of_a_player_ahead_first() {
    // The far player (250 ms) holds fewer frames than the near one when the host dies.
    let mut sim = game(&[40, 250], 7);
    sim.run_until(Duration::from_millis(10_500));
    sim.kill(0);
    sim.run_until(Duration::from_millis(10_560));
    let (near, far) = (
        sim.players[1].client.received_end(),
        sim.players[2].client.received_end(),
    );
    assert!(
        far < near,
        "the far player holds {far}, the near one {near}"
    );
    let from = sim.hand_over(2).expect("the offers agree");
    assert_eq!(
        from, near,
        "the new authority starts from the newest agreed frame"
    );
    sim.run_until(secs(40));
    assert_same_and_no_tap_lost(&sim, &[2, 1]);
    assert!(!sim.players[1].gone() && !sim.players[2].gone());
    assert!(sim.players[2].applied.len() > from.0 as usize + 60 * 20);
}

#[test]
fn two_departures_one_after_the_other_with_a_spectator_watching_throughout() {
    let mut sim = game(&[50, 80, 120], 11);
    let eve = sim.add_spectator(0, PlayerSpec::symmetric(lossy(70)));
    sim.run_until(secs(8));
    sim.kill(0);
    sim.run_until(secs(9));
    let first = sim.hand_over(1).expect("the offers agree");
    sim.run_until(Duration::from_millis(17_400));
    sim.kill(1);
    sim.run_until(Duration::from_millis(18_400));
    let second = sim.hand_over(3).expect("the offers agree");
    assert!(second > first);
    sim.run_until(secs(40));
    assert_same_and_no_tap_lost(&sim, &[3, 2]);
    for i in [2, 3, eve] {
        assert!(!sim.players[i].gone(), "{i} left the game");
        assert!(sim.players[i].applied.len() > second.0 as usize + 60 * 15);
    }
    // The spectator ran what the players ran, from its start state on.
    let (watched, first_seen) = (&sim.players[eve].applied, sim.players[eve].first as usize);
    let played = &sim.players[3].applied[first_seen..];
    let n = watched.len().min(played.len());
    assert_eq!(watched[..n], played[..n]);
}

#[test]
fn a_planned_move_keeps_every_player_including_the_old_host() {
    // No one leaves: the authority moves from the host's process to player 2's (as a
    // placement move does), and the host plays on as a remote player.
    let mut sim = game(&[60, 60], 5);
    sim.run_until(Duration::from_millis(9_250));
    let from = sim.hand_over(2).expect("the offers agree");
    sim.run_until(secs(40));
    assert_same_and_no_tap_lost(&sim, &[2, 0, 1]);
    for i in 0..3 {
        assert!(
            sim.players[i].applied.len() > from.0 as usize + 60 * 25,
            "{i}"
        );
    }
}

#[test]
fn a_game_paused_when_its_host_dies_stays_paused_until_a_player_resumes() {
    let mut sim = game(&[60, 80], 9);
    sim.run_until(secs(8));
    sim.players[1].client.request_pause(true);
    sim.run_until(secs(9));
    let at = sim.players[1].client.paused().expect("paused").1;
    sim.kill(0);
    sim.run_until(secs(10));
    let from = sim.hand_over(2).expect("the offers agree");
    assert_eq!(from, at, "the newest agreed frame is the paused one");
    sim.run_until(secs(14));
    for i in [1, 2] {
        assert_eq!(sim.players[i].applied.len(), at.0 as usize, "{i} ran on");
        assert!(sim.players[i].client.paused().is_some());
    }
    sim.players[1].client.request_pause(false);
    sim.run_until(secs(40));
    // The same inputs on every frame. (Not the taps: the simulator's bot records presses
    // made while paused that a paused client ignores, with or without a hand-over.)
    let (a, b) = (&sim.players[1].applied, &sim.players[2].applied);
    let n = a.len().min(b.len());
    assert_eq!(a[..n], b[..n]);
    assert!(b.len() > at.0 as usize + 60 * 20);
}

#[test]
fn offers_that_disagree_on_a_frame_are_refused_and_the_player_named() {
    let mut sim = game(&[60, 60], 3);
    sim.run_until(secs(8));
    let mut offers: Vec<_> = [1, 2]
        .iter()
        .map(|&i| {
            let (first, frames) = sim.players[i].client.agreed();
            (PeerId(i as u8), first, frames)
        })
        .collect();
    assert!(merge_agreed(&offers).is_ok());
    // Player 2 claims player 1 pressed something else 100 frames ago.
    let k = offers[1].2.len() - 100;
    offers[1].2[k][1] = Pad(offers[1].2[k][1].0 ^ 0x10);
    let e = merge_agreed(&offers).expect_err("a forged frame");
    assert_eq!(e.peer, PeerId(2));
    assert_eq!(e.frame, offers[1].1.plus(k as u32));
    assert!(e.to_string().contains("player 3"), "{e}");
}

/// Bar 23's links: every process's own uplink delays what it sends 50 ms, ±10 ms, 1% loss
/// (as `--netsim` does); the server's does not.
fn uplink() -> PathSpec {
    PathSpec {
        delay: Duration::from_millis(50),
        jitter: Duration::from_millis(10),
        loss: 0.01,
        ..PathSpec::default()
    }
}

/// The worst median input latency (frames) of two players over 60 s, the authority in the
/// host's process (the joiner's datagrams cross its uplink, the host's cross the host's)
/// or on the server (each player's cross its own uplink only).
fn median_latency(place: Place) -> u32 {
    let cfg = config(2, super::DEFAULT_KEYFRAME_INTERVAL);
    let (players, dedicated) = match place {
        Place::Player(_) => (
            vec![
                PlayerSpec::symmetric(PathSpec::default()),
                PlayerSpec::symmetric(uplink()),
            ],
            false,
        ),
        Place::Server => {
            let spec = PlayerSpec {
                up: uplink(),
                down: PathSpec::default(),
                clock_rate: 1.0,
            };
            (vec![spec; 2], true)
        }
    };
    let mut sc = SimConfig::new(cfg, players, 23);
    sc.dedicated = dedicated;
    let mut sim = Sim::new(sc);
    sim.run_until(secs(60));
    (sim.players.iter())
        .map(|p| p.client.stats().latency.median().unwrap_or(u32::MAX))
        .max()
        .unwrap_or(u32::MAX)
}

#[test]
fn the_authority_placed_where_the_longest_round_trip_is_shortest_cuts_the_latency() {
    // Each player 50 ms from the server between them: 100 ms round trips to it, 200 ms
    // from one to the other.
    let rtt = |_: PeerId, place: Place| {
        Some(Duration::from_millis(if place == Place::Server {
            100
        } else {
            200
        }))
    };
    let (place, longest) = best_place(&[PeerId(0), PeerId(1)], true, rtt).expect("a place");
    assert_eq!(
        (place, longest),
        (Place::Server, Duration::from_millis(100))
    );
    let (at_host, placed) = (
        median_latency(Place::Player(PeerId(0))),
        median_latency(place),
    );
    eprintln!("median input latency: {at_host} frames at the host, {placed} on the server");
    assert!(placed <= 6, "{placed} frames on the server");
    assert!(at_host >= placed + 2, "{at_host} frames at the host");
}
