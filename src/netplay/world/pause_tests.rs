//! Pauses and stops on simulated time (`world`): a player pauses the game for everyone (a
//! joiner, the host, a room player; with a spectator watching; in optimistic mode), for
//! 5 s and for 55 s, or walks away (the pause runs out after a minute); every machine
//! stops at the same frame and goes on from it, nobody stalls or catches up afterwards,
//! and the lead is where it was within a second. A frame
//! loop that stands still unannounced, or a process stopped for 1.5 s, leaves the lead
//! where the link had it too.

use std::time::Duration;

use super::scenario::{cfg, finish_in_sync, SEC};
use super::{Node, World};
use crate::lockstep::{ClientEvent, Mode, PauseRefusal, PeerId};
use crate::session::ParticipantEvent;

fn lead(w: &World, i: usize) -> Option<u32> {
    w.nodes[i]
        .feed()
        .participant
        .client()
        .and_then(|c| c.stats().lead)
}

fn stalls(w: &mut World, i: usize) -> u64 {
    w.nodes[i].runner.stats().stall_frames
}

/// The pauses (who, at) and resumes node `n` heard of, in order.
fn heard(n: &Node) -> Vec<(bool, PeerId, u32)> {
    n.events()
        .filter_map(|e| match e {
            ParticipantEvent::Game(ClientEvent::Paused { peer, at }) => Some((true, *peer, at.0)),
            ParticipantEvent::Game(ClientEvent::Resumed { peer, at }) => Some((false, *peer, at.0)),
            _ => None,
        })
        .collect()
}

fn refused(n: &Node) -> Vec<PauseRefusal> {
    n.events()
        .filter_map(|e| match e {
            ParticipantEvent::Game(ClientEvent::PauseRefused { why }) => Some(*why),
            _ => None,
        })
        .collect()
}

/// Node `pauser` pauses for `hold`, then resumes: every node stands at the same frame
/// meanwhile (no stall counted), every one goes on from it, the lead is back within a
/// second, and nobody stalls in the 5 s after. The pauser plays `seat`.
fn pause_for(w: &mut World, pauser: usize, seat: PeerId, hold: Duration) {
    let n = w.nodes.len();
    // Stall frames in 5 s of play without a pause (a lossy link's), to compare with after.
    let s0: Vec<u64> = (0..n).map(|i| stalls(w, i)).collect();
    w.run_for(5 * SEC);
    let usual: Vec<u64> = (0..n).map(|i| stalls(w, i) - s0[i]).collect();
    let leads: Vec<Option<u32>> = (0..n).map(|i| lead(w, i)).collect();
    let heard_before: Vec<usize> = w.nodes.iter().map(|n| heard(n).len()).collect();
    w.request_pause(pauser, true);
    w.run_for(SEC);
    let stalls_paused: Vec<u64> = (0..n).map(|i| stalls(w, i)).collect();
    w.run_for(hold - SEC);
    let at = w.frame(pauser);
    for i in 0..n {
        let name = w.nodes[i].name.clone();
        assert_eq!(w.frame(i), at, "{name} stands at the pause's frame");
        assert_eq!(
            &heard(&w.nodes[i])[heard_before[i]..],
            [(true, seat, at)],
            "{name}"
        );
        assert_eq!(
            stalls(w, i),
            stalls_paused[i],
            "{name}: a pause is no stall"
        );
    }
    w.request_pause(pauser, false);
    w.run_for(SEC);
    for i in 0..n {
        let name = &w.nodes[i].name;
        assert_eq!(
            &heard(&w.nodes[i])[heard_before[i]..],
            [(true, seat, at), (false, seat, at)],
            "{name}"
        );
        assert!(w.frame(i) > at + 40, "{name} goes on: {} {at}", w.frame(i));
        assert_eq!(lead(w, i), leads[i], "{name}: the lead a second after");
    }
    let stalls_after: Vec<u64> = (0..n).map(|i| stalls(w, i)).collect();
    w.run_for(5 * SEC);
    for i in 0..n {
        let stalled = stalls(w, i) - stalls_after[i];
        let name = &w.nodes[i].name;
        assert!(
            stalled <= usual[i] + 2,
            "{name}: {stalled} stall frames, {} usually",
            usual[i]
        );
        // Five seconds on, a lossy link's own ups and downs (a frame) show.
        let (now, before) = (lead(w, i).unwrap_or(0), leads[i].unwrap_or(0));
        assert!(
            now.abs_diff(before) <= 1,
            "{name}: lead {now}, {before} before"
        );
    }
    // Every machine ran as many frames as the pauser (none is catching up).
    let frames: Vec<u32> = (0..n).map(|i| w.frame(i)).collect();
    assert!(
        frames.iter().all(|f| f.abs_diff(frames[pauser]) <= 12),
        "{frames:?}"
    );
}

#[test]
fn a_joiner_pauses_for_5_s_and_for_55_s_and_everyone_stops_and_goes_on_together() {
    let mut w = World::new("delay=10ms,jitter=2ms", 6000);
    let host = w.host(2, cfg());
    let ana = w.join("ana", w.addr_of(host), None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(ana) >= 600));
    pause_for(&mut w, ana, PeerId(1), 5 * SEC);
    pause_for(&mut w, ana, PeerId(1), 55 * SEC);
    finish_in_sync(&mut w, 120 * SEC);
}

#[test]
fn the_host_pauses_for_5_s_and_for_55_s_with_a_spectator_watching() {
    let mut w = World::new("delay=25ms,jitter=5ms", 4800);
    let host = w.host(3, cfg());
    let to = w.addr_of(host);
    let ana = w.join("ana", to, None, cfg());
    w.join("bob", to, None, cfg());
    let eve = w.watch("eve", to, cfg());
    assert!(w.run_until(30 * SEC, |w| w.frame(eve) >= 600 && w.frame(ana) >= 600));
    // Only the host may resume its own pause for a minute; ana is told so.
    w.request_pause(host, true);
    w.run_for(2 * SEC);
    w.request_pause(ana, false);
    w.run_for(SEC);
    assert!(matches!(
        refused(&w.nodes[ana])[..],
        [PauseRefusal::NotYours { wait_secs: 57 | 58 }]
    ));
    w.request_pause(host, false);
    w.run_for(5 * SEC);
    pause_for(&mut w, host, PeerId(0), 5 * SEC);
    pause_for(&mut w, host, PeerId(0), 55 * SEC);
    finish_in_sync(&mut w, 120 * SEC);
}

#[test]
fn a_room_player_who_pauses_and_walks_away_holds_the_game_a_minute_at_most() {
    let mut w = World::new("delay=20ms,jitter=5ms", 7200);
    let server = w.serve();
    w.open_room("ana", "friday", 2, cfg());
    w.run_for(5 * SEC);
    let ana = w.node("ana").unwrap();
    let bob = w.join("bob", server, Some("friday"), cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(bob) >= 600));
    pause_for(&mut w, bob, PeerId(1), 5 * SEC);
    // Bob pauses and walks away: ana may not resume it, and after a minute it ends by
    // itself; bob may not pause again at once.
    let leads = (lead(&w, ana), lead(&w, bob));
    let heard_before = heard(&w.nodes[ana]).len();
    w.request_pause(bob, true);
    w.run_for(30 * SEC);
    w.request_pause(ana, false);
    w.run_for(29 * SEC);
    let at = w.frame(ana);
    assert_eq!(w.frame(bob), at);
    assert!(matches!(
        refused(&w.nodes[ana])[..],
        [PauseRefusal::NotYours { wait_secs: 29..=30 }]
    ));
    w.run_for(2 * SEC);
    assert!(w.frame(bob) > at + 40 && w.frame(ana) > at + 40);
    assert_eq!(
        &heard(&w.nodes[ana])[heard_before..],
        [(true, PeerId(1), at), (false, PeerId(1), at)]
    );
    assert_eq!((lead(&w, ana), lead(&w, bob)), leads);
    w.request_pause(bob, true);
    w.run_for(SEC);
    assert!(matches!(
        refused(&w.nodes[bob])[..],
        [PauseRefusal::TooSoon { wait_secs: 57..=59 }]
    ));
    finish_in_sync(&mut w, 120 * SEC);
}

#[test]
fn optimistic_mode_pauses_too() {
    let mut w = World::new("delay=20ms", 4200);
    let host = w.host_in(2, cfg(), Mode::Optimistic);
    let ana = w.join("ana", w.addr_of(host), None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(ana) >= 600));
    pause_for(&mut w, ana, PeerId(1), 5 * SEC);
    finish_in_sync(&mut w, 120 * SEC);
}

#[test]
fn pausing_more_than_three_times_a_minute_is_refused() {
    let mut w = World::new("delay=10ms", 4200);
    let host = w.host(2, cfg());
    let ana = w.join("ana", w.addr_of(host), None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(ana) >= 600));
    for _ in 0..4 {
        w.request_pause(ana, true);
        w.run_for(SEC);
        w.request_pause(ana, false);
        w.run_for(SEC);
    }
    let pauses = heard(&w.nodes[host]).iter().filter(|h| h.0).count();
    assert_eq!(pauses, 3);
    assert!(matches!(
        refused(&w.nodes[ana])[..],
        [PauseRefusal::TooMany { wait_secs: 54..=55 }]
    ));
    // The host may still pause.
    w.request_pause(host, true);
    w.run_for(SEC);
    assert_eq!(heard(&w.nodes[ana]).iter().filter(|h| h.0).count(), 4);
    w.request_pause(host, false);
    finish_in_sync(&mut w, 120 * SEC);
}

/// The lead on every node `wait` after node `i` stood still for `d` in the way `stop` makes
/// it, next to the lead before.
fn lead_after_stop(stop: fn(&mut World, usize, Duration), d: Duration) {
    let mut w = World::new("delay=10ms", 3600);
    let host = w.host(2, cfg());
    let ana = w.join("ana", w.addr_of(host), None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(ana) >= 900));
    let before = (lead(&w, host), lead(&w, ana));
    stop(&mut w, ana, d);
    w.run_for(d + SEC);
    assert_eq!((lead(&w, host), lead(&w, ana)), before, "a second after");
    w.run_for(10 * SEC);
    assert_eq!((lead(&w, host), lead(&w, ana)), before, "ten seconds after");
    finish_in_sync(&mut w, 120 * SEC);
}

#[test]
fn a_frame_loop_standing_still_for_1_5_s_leaves_the_lead() {
    lead_after_stop(World::freeze, Duration::from_millis(1500));
}

#[test]
fn a_process_stopped_for_1_5_s_leaves_the_lead() {
    lead_after_stop(World::sleep, Duration::from_millis(1500));
}
