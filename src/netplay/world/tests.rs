//! Sessions at the speed of people, on simulated time (`world`): a lobby that waits ten
//! minutes, links that drop for half a minute and come back, addresses that change mid-game,
//! a process stopped and resumed, a link that flaps. Each runs the real participants and the
//! real frame runner, and ends with every machine on the same state.

use std::time::{Duration, Instant};

use super::scenario::{cfg, count, finish_in_sync, SEC};
use super::{Node, World};
use crate::lockstep::{ClientEvent, PeerId};
use crate::serve::ServeEvent;
use crate::session::{EndpointEvent, ParticipantEvent};

fn lost(n: &Node) -> usize {
    count(n, |e| matches!(e, ParticipantEvent::ConnectionLost { .. }))
}

fn back(n: &Node) -> usize {
    count(n, |e| matches!(e, ParticipantEvent::Back { .. }))
}

fn ended(n: &Node) -> bool {
    n.events().any(|e| matches!(e, ParticipantEvent::Ended(_)))
}

/// The host's client heard that `seat` plays again, after it had left.
fn host_saw_back(w: &World, seat: PeerId) -> bool {
    let mut left = false;
    for e in w.nodes[0].events() {
        match e {
            ParticipantEvent::Game(ClientEvent::PlayerLeft { peer, .. }) if *peer == seat => {
                left = true
            }
            ParticipantEvent::Game(ClientEvent::PlayerJoined { peer, .. })
                if *peer == seat && left =>
            {
                return true
            }
            _ => {}
        }
    }
    false
}

#[test]
fn a_lobby_waits_ten_minutes_for_little_traffic_then_the_game_plays_in_sync() {
    let mut w = World::new("delay=20ms,jitter=5ms", 1200);
    let host = w.host(3, cfg());
    let to = w.addr_of(host);
    let ana = w.join("ana", to, None, cfg());
    // Ana has the start state within seconds; then both wait for a third player.
    w.run_for(10 * SEC);
    let (ana_at, host_at) = (w.addr_of(ana), w.addr_of(host));
    let before = (w.net.sent(ana_at), w.net.sent(host_at));
    w.run_for(Duration::from_secs(600));
    let waited = 600.0;
    let ana_rate = (w.net.sent(ana_at) - before.0) as f64 / waited;
    let host_rate = (w.net.sent(host_at) - before.1) as f64 / waited;
    assert!(
        ana_rate <= 100.0 && host_rate <= 100.0,
        "{ana_rate} {host_rate} B/s"
    );
    assert!(
        ana_rate > 10.0 && host_rate > 10.0,
        "keepalives: {ana_rate} {host_rate} B/s"
    );
    assert_eq!(lost(&w.nodes[ana]), 0);
    assert!(!ended(&w.nodes[ana]));
    assert_eq!(w.frame(ana), 0, "nothing ran before the game started");
    // The third player comes after ten minutes; the game runs.
    w.join("bob", to, None, cfg());
    finish_in_sync(&mut w, 60 * SEC);
}

#[test]
fn a_joiner_whose_link_drops_for_30_s_comes_back_and_plays_in_sync() {
    let mut w = World::new("delay=20ms,jitter=5ms,loss=1%", 5400);
    let host = w.host(2, cfg());
    let ana = w.join("ana", w.addr_of(host), None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(ana) >= 600));
    w.outage(ana, 30 * SEC);
    w.run_for(10 * SEC);
    // The host plays on; ana's game does not run on alone.
    let stuck = w.frame(ana);
    assert!(w.frame(host) > stuck + 400, "{} {stuck}", w.frame(host));
    assert_eq!(lost(&w.nodes[ana]), 1);
    w.run_for(19 * SEC);
    assert!(w.frame(ana) <= stuck + 1);
    // The link is back at 30 s: ana reconnects and plays again within seconds.
    assert!(w.run_until(5 * SEC, |w| back(&w.nodes[ana]) == 1));
    assert!(w.run_until(5 * SEC, |w| host_saw_back(w, PeerId(1))));
    assert!(!ended(&w.nodes[ana]));
    finish_in_sync(&mut w, 120 * SEC);
}

#[test]
fn the_hosts_link_dropping_for_30_s_brings_every_joiner_back() {
    let mut w = World::new("delay=20ms", 5400);
    let host = w.host(3, cfg());
    let to = w.addr_of(host);
    let ana = w.join("ana", to, None, cfg());
    let bob = w.join("bob", to, None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(bob) >= 600));
    w.outage(host, 30 * SEC);
    w.run_for(31 * SEC);
    assert!(w.run_until(10 * SEC, |w| back(&w.nodes[ana]) == 1
        && back(&w.nodes[bob]) == 1));
    finish_in_sync(&mut w, 120 * SEC);
    assert!(host_saw_back(&w, PeerId(1)) && host_saw_back(&w, PeerId(2)));
}

#[test]
fn a_joiner_stopped_for_30_s_comes_back() {
    let mut w = World::new("delay=10ms", 5400);
    let host = w.host(2, cfg());
    let ana = w.join("ana", w.addr_of(host), None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(ana) >= 600));
    w.sleep(ana, 30 * SEC);
    w.run_for(30 * SEC);
    assert!(w.run_until(10 * SEC, |w| back(&w.nodes[ana]) == 1));
    finish_in_sync(&mut w, 120 * SEC);
}

#[test]
fn a_joiner_that_changes_address_mid_game_is_not_dropped() {
    let mut w = World::new("delay=30ms", 3000);
    let host = w.host(2, cfg());
    let ana = w.join("ana", w.addr_of(host), None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(ana) >= 600));
    let stalls_before = w.nodes[ana].runner.stats().stall_frames;
    // A new port from its router (the mapping expired and was made again).
    w.move_node(ana, false);
    w.run_for(5 * SEC);
    // Then another network altogether.
    w.move_node(ana, true);
    finish_in_sync(&mut w, 120 * SEC);
    assert_eq!(lost(&w.nodes[ana]), 0);
    assert!(!host_saw_back(&w, PeerId(1)), "ana was never dropped");
    let moved = w.nodes[host]
        .events()
        .filter(|e| {
            matches!(
                e,
                ParticipantEvent::Session(EndpointEvent::PathChanged { .. })
            )
        })
        .count();
    assert_eq!(moved, 2);
    let stalls = w.nodes[ana].runner.stats().stall_frames - stalls_before;
    // About a round trip's worth each (60 ms is 4 frames), plus the probe's wait.
    assert!(stalls <= 30, "{stalls} stall frames");
}

#[test]
fn a_host_that_changes_address_keeps_its_joiners() {
    let mut w = World::new("delay=30ms", 3000);
    let host = w.host(3, cfg());
    let to = w.addr_of(host);
    let ana = w.join("ana", to, None, cfg());
    let bob = w.join("bob", to, None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(bob) >= 600));
    w.move_node(host, false);
    finish_in_sync(&mut w, 120 * SEC);
    for j in [ana, bob] {
        assert_eq!(lost(&w.nodes[j]), 0);
        assert!(w.nodes[j]
            .events()
            .any(|e| matches!(e, ParticipantEvent::HostMoved { .. })));
    }
}

#[test]
fn a_link_flapping_every_3_s_for_30_s_ends_in_sync() {
    let mut w = World::new("delay=20ms,jitter=5ms", 6000);
    let host = w.host(2, cfg());
    let ana = w.join("ana", w.addr_of(host), None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(ana) >= 300));
    for _ in 0..5 {
        w.outage(ana, 3 * SEC);
        w.run_for(6 * SEC);
    }
    finish_in_sync(&mut w, 180 * SEC);
    assert!(!ended(&w.nodes[ana]));
}

#[test]
fn eight_players_through_three_overlapping_outages_end_in_sync() {
    let mut w = World::new("delay=25ms,jitter=5ms,loss=1%", 4800);
    let host = w.host(8, cfg());
    let to = w.addr_of(host);
    let names = ["ana", "bob", "cy", "dee", "eve", "fay", "gus"];
    let joiners: Vec<usize> = names.iter().map(|n| w.join(n, to, None, cfg())).collect();
    assert!(w.run_until(30 * SEC, |w| joiners.iter().all(|&j| w.frame(j) >= 300)));
    w.outage(joiners[1], 20 * SEC);
    w.run_for(5 * SEC);
    w.outage(joiners[3], 20 * SEC);
    w.run_for(5 * SEC);
    w.outage(joiners[5], 8 * SEC);
    finish_in_sync(&mut w, 180 * SEC);
    for j in [1, 3, 5] {
        assert_eq!(back(&w.nodes[joiners[j]]), 1, "{}", names[j]);
    }
}

#[test]
fn a_room_waits_ten_minutes_for_its_friend() {
    let mut w = World::new("delay=30ms,jitter=5ms", 1200);
    let server = w.serve();
    w.open_room("ana", "friday", 2, cfg());
    w.run_for(10 * SEC);
    let ana = w.node("ana").expect("ana is in her room");
    let before = w.net.sent(w.addr_of(ana));
    w.run_for(Duration::from_secs(600));
    let rate = (w.net.sent(w.addr_of(ana)) - before) as f64 / 600.0;
    assert!(rate <= 100.0, "{rate} B/s");
    assert_eq!(lost(&w.nodes[ana]), 0, "{:?}", w.server_events);
    assert!(w.server.as_ref().unwrap().1.list(w.now()).len() == 1);
    w.join("bob", server, Some("friday"), cfg());
    finish_in_sync(&mut w, 60 * SEC);
}

#[test]
fn a_room_player_whose_link_drops_comes_back_and_the_room_outlives_its_creator() {
    let mut w = World::new("delay=25ms,jitter=5ms,loss=1%", 7200);
    let server = w.serve();
    w.open_room("ana", "friday", 3, cfg());
    w.run_for(5 * SEC);
    let ana = w.node("ana").unwrap();
    let bob = w.join("bob", server, Some("friday"), cfg());
    let cy = w.join("cy", server, Some("friday"), cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(cy) >= 600));
    // Bob's link to the server drops for 30 s; he comes back with a state from a player.
    w.outage(bob, 30 * SEC);
    w.run_for(31 * SEC);
    assert!(
        w.run_until(10 * SEC, |w| back(&w.nodes[bob]) == 1),
        "{:?}",
        w.server_events
    );
    // The creator is killed: bob and cy play on to the end, in sync.
    w.run_for(5 * SEC);
    w.kill(ana);
    let done = w.run_until(120 * SEC, |w| w.nodes[bob].finished && w.nodes[cy].finished);
    assert!(done, "{} {}", w.frame(bob), w.frame(cy));
    assert_eq!(
        w.nodes[bob].toy.hash_after(7199),
        w.nodes[cy].toy.hash_after(7199)
    );
    assert!(!ended(&w.nodes[cy]));
    w.assert_logs_verify();
    assert!(!w
        .server_events
        .iter()
        .any(|e| matches!(e, ServeEvent::Closed { .. })));
}

#[test]
fn a_spectator_whose_link_drops_comes_back_as_a_spectator() {
    let mut w = World::new("delay=20ms", 4200);
    let host = w.host(2, cfg());
    let to = w.addr_of(host);
    let ana = w.join("ana", to, None, cfg());
    let eve = w.watch("eve", to, cfg());
    assert!(w.run_until(30 * SEC, |w| w.frame(eve) >= 600 && w.frame(ana) >= 600));
    // Longer than the 10 s a host keeps a silent spectator.
    w.outage(eve, 15 * SEC);
    w.run_for(16 * SEC);
    assert_eq!(lost(&w.nodes[eve]), 1);
    assert!(w.run_until(10 * SEC, |w| back(&w.nodes[eve]) == 1));
    assert!(w.nodes[eve]
        .events()
        .any(|e| matches!(e, ParticipantEvent::Back { slot: None, .. })));
    finish_in_sync(&mut w, 120 * SEC);
}

/// Hands every node's participant `now` (`None`: an hour past its earliest timer, as after
/// a process slept), lets it act, and returns where it then asked to be woken before that
/// time: `(node, phase, deadline behind by)`.
fn woken_in_the_past(
    w: &mut World,
    now: Option<Instant>,
    phase: &str,
) -> Vec<(String, String, Duration)> {
    let mut past = Vec::new();
    for n in &mut w.nodes {
        let p = &mut n.runner.feed_mut().participant;
        let Some(due) = p.poll_timeout() else {
            continue;
        };
        let now = now.unwrap_or(due + Duration::from_secs(3600));
        p.handle_timeout(now);
        // Asked before the sends are drained (a send that is due is due now), and after.
        if let Some(t) = p.poll_timeout().filter(|t| *t < now) {
            past.push((n.name.clone(), format!("{phase}, sends queued"), now - t));
        }
        while p.poll_transmit(now).is_some() {}
        while p.poll_event().is_some() {}
        if let Some(t) = p.poll_timeout().filter(|t| *t < now) {
            past.push((n.name.clone(), phase.to_string(), now - t));
        }
    }
    past
}

#[test]
fn a_participant_past_every_timer_never_asks_to_be_woken_in_the_past() {
    let mut past = Vec::new();
    // In the handshake, in a lobby that waits for a third player, in a running game, and
    // with the joiner's frame loop standing still (its sends held back): one world each,
    // as the jump ends a world's timeline.
    for (phase, seats, run, freeze) in [
        ("handshake", 2, Duration::from_millis(30), false),
        ("lobby", 3, 5 * SEC, false),
        ("game", 2, 10 * SEC, false),
        ("joiner's frame loop stopped", 2, 10 * SEC, true),
        ("host's frame loop stopped", 2, 10 * SEC, true),
    ] {
        for jump in [false, true] {
            let mut w = World::new("delay=20ms,jitter=5ms,loss=2%", 1200);
            let host = w.host(seats, cfg());
            let to = w.addr_of(host);
            let ana = w.join("ana", to, None, cfg());
            w.run_for(run);
            if freeze {
                w.freeze(if phase.starts_with("host") { host } else { ana }, 5 * SEC);
                w.run_for(SEC);
            }
            let now = (!jump).then(|| w.now());
            past.extend(woken_in_the_past(&mut w, now, phase));
        }
    }
    assert!(past.is_empty(), "deadlines in the past: {past:?}");
}

/// Issue 50, seats belong to keys: bob's process is killed. Within the minute his seat is
/// kept, a stranger called "bob" (no key) does not get it; bob's own `join` again, showing
/// the key its last one saved, takes it back at once and plays on in sync.
#[test]
fn a_killed_players_seat_goes_back_to_its_key_and_never_to_its_name_alone() {
    let mut w = World::new("delay=20ms,jitter=5ms", 3600);
    let host = w.host(3, cfg());
    let to = w.addr_of(host);
    let ana = w.join("ana", to, None, cfg());
    let bob = w.join("bob", to, None, cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(bob) >= 400));
    let key = w.nodes[bob].feed().participant.seat_key().expect("a key");
    w.kill(bob);
    let out = |w: &World| {
        w.nodes[host].events().any(|e| {
            matches!(e, ParticipantEvent::Session(EndpointEvent::Left { slot, .. })
                if *slot == PeerId(2))
        })
    };
    assert!(w.run_until(10 * SEC, out));
    let out_at = w.now();
    let welcomed_to = |w: &World, i: usize| {
        w.nodes[i].events().find_map(|e| match e {
            ParticipantEvent::Welcomed { slot, .. } => Some(*slot),
            _ => None,
        })
    };
    // A stranger takes the name: the only free seat is kept for bob's key, and it is told
    // so (whose seat, for how long).
    let stranger = w.join("bob", to, None, cfg());
    assert!(w.run_until(10 * SEC, |w| w.failure(stranger).is_some()
        || welcomed_to(w, stranger).is_some()));
    assert_eq!(
        welcomed_to(&w, stranger),
        None,
        "a name alone took a kept seat"
    );
    let why = w
        .failure(stranger)
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        why.contains("the free seat is kept for bob, who left, for"),
        "{why}"
    );
    // Bob runs `join` again 20 s after the kill: its saved key brings the seat back.
    w.run_for(10 * SEC);
    let again = w.join_with_key("bob", to, key, cfg());
    assert!(w.run_until(10 * SEC, |w| welcomed_to(w, again).is_some()));
    assert!(w.now() < out_at + crate::session::SEAT_KEPT);
    assert_eq!(welcomed_to(&w, again), Some(Some(PeerId(2))));
    assert!(w.run_until(10 * SEC, |w| host_saw_back(w, PeerId(2))));
    assert!(w.run_until(120 * SEC, |w| [host, ana, again]
        .iter()
        .all(|&i| w.nodes[i].finished)));
    w.assert_in_sync(w.frames - 1);
}
