//! Rooms hosted by their creators on simulated time (`world`): the server relays and
//! introduces, players behind home routers go direct where a path proves itself, stay
//! relayed where none does, fall back when a direct path dies, and a room mixes both. Each
//! runs real participants, the real `serve::Rooms` and the real frame runner.

use std::net::SocketAddr;
use std::time::Duration;

use super::scenario::{cfg, finish_in_sync, SEC};
use super::World;
use crate::lockstep::PeerId;
use crate::session::direct::{PathEvent, PathKind, PathMode};
use crate::session::{ParticipantConfig, ParticipantEvent};

const HOME: &str = "delay=20ms,jitter=3ms,loss=1%";

/// A world with a server and `name`'s hosted room of `seats`, its host behind a router
/// unless `public`.
fn hosted(frames: u32, seats: u8, public: bool) -> (World, SocketAddr, usize) {
    let mut w = World::new(HOME, frames);
    let server = w.serve();
    w.host_room("ana", "den", seats, cfg());
    assert!(w.run_until(10 * SEC, |w| w.node("ana").is_some()));
    let ana = w.node("ana").unwrap();
    if !public {
        let at = w.addr_of(ana);
        w.net.behind_router(at);
    }
    (w, server, ana)
}

/// The path node `i` has to node `j` as the host sees it (the host's view of joiner `j`'s
/// slot), or a joiner's own path.
fn host_path(w: &World, host: usize, slot: u8) -> Option<PathKind> {
    w.nodes[host]
        .feed()
        .participant
        .paths()
        .into_iter()
        .find(|(s, _)| *s == Some(PeerId(slot)))
        .map(|(_, k)| k)
}

fn own_path(w: &World, i: usize) -> Option<PathKind> {
    w.nodes[i]
        .feed()
        .participant
        .paths()
        .first()
        .map(|(_, k)| *k)
}

/// When node `i` first went direct, after its introduction.
fn direct_after(w: &World, i: usize) -> Option<Duration> {
    w.nodes[i].events().find_map(|e| match e {
        ParticipantEvent::Path {
            event: PathEvent::Direct { after, .. },
            ..
        } => Some(*after),
        _ => None,
    })
}

fn server_bytes_in(w: &World) -> u64 {
    w.server.as_ref().unwrap().1.stats().bytes_in
}

#[test]
fn two_players_behind_cone_routers_go_direct_and_the_server_hears_almost_nothing() {
    // A minute of play at 60 fps.
    let (mut w, server, ana) = hosted(3600, 2, false);
    let bob = w.join("bob", server, Some("den"), cfg());
    let bob_at = w.addr_of(bob);
    w.net.behind_router(bob_at);
    let went = w.run_until(10 * SEC, |w| own_path(w, bob) == Some(PathKind::Direct));
    assert!(went);
    let took = direct_after(&w, bob).unwrap();
    // One round trip to the server is about 40 ms here; the goal is that plus 500 ms.
    assert!(took <= Duration::from_millis(540), "{took:?}");
    let before_game = server_bytes_in(&w);
    finish_in_sync(&mut w, 120 * SEC);
    assert_eq!(host_path(&w, ana, 1), Some(PathKind::Direct));
    assert_eq!(own_path(&w, bob), Some(PathKind::Direct));
    let total = server_bytes_in(&w);
    eprintln!(
        "direct after {took:?}; server bytes in {total} ({before_game} before the game), frames {}",
        w.frame(bob)
    );
    // The join (padded Hellos, the handshake through the relay) and presence only.
    assert!(
        total < 8 * 1024,
        "the server got {total} bytes ({before_game} before the game)"
    );
    let relayed = w.server.as_ref().unwrap().1.stats().bytes_relayed;
    assert!(relayed < 6 * 1024, "{relayed} bytes relayed");
    let (direct, relayed_players) = w.server.as_ref().unwrap().1.hosted_paths();
    assert_eq!((direct, relayed_players), (1, 0));
}

#[test]
fn a_path_through_routers_that_map_per_destination_stays_relayed_and_plays_in_sync() {
    let (mut w, server, ana) = hosted(900, 2, false);
    let bob = w.join("bob", server, Some("den"), cfg());
    let (ana_at, bob_at) = (w.addr_of(ana), w.addr_of(bob));
    w.net.behind_router(bob_at);
    // Each router shows the other a port it never sent from: nothing direct arrives.
    w.net.cut(ana_at, bob_at);
    finish_in_sync(&mut w, 120 * SEC);
    assert_eq!(host_path(&w, ana, 1), Some(PathKind::Relayed));
    assert_eq!(own_path(&w, bob), Some(PathKind::Relayed));
    let relayed = w.server.as_ref().unwrap().1.stats().bytes_relayed;
    assert!(relayed > 20_000, "the game crossed the server: {relayed}");
    let why = w.nodes[bob].events().find_map(|e| match e {
        ParticipantEvent::Path {
            event: PathEvent::Relayed { why },
            ..
        } => Some(*why),
        _ => None,
    });
    assert_eq!(why, Some("no direct path within 3 s"));
}

/// Where node `i`'s direct path first went.
fn direct_to(w: &World, i: usize) -> Option<SocketAddr> {
    w.nodes[i].events().find_map(|e| match e {
        ParticipantEvent::Path {
            event: PathEvent::Direct { addr, .. },
            ..
        } => Some(*addr),
        _ => None,
    })
}

#[test]
fn a_host_whose_router_forwards_its_port_goes_direct_through_routers_that_map_per_destination() {
    let (mut w, server, ana) = hosted(900, 2, false);
    let mapped: SocketAddr = "198.51.100.77:7845".parse().unwrap();
    w.map_port(ana, mapped);
    let bob = w.join("bob", server, Some("den"), cfg());
    let (ana_at, bob_at) = (w.addr_of(ana), w.addr_of(bob));
    w.net.behind_router(bob_at);
    w.net.cut(ana_at, bob_at);
    finish_in_sync(&mut w, 120 * SEC);
    assert_eq!(own_path(&w, bob), Some(PathKind::Direct));
    assert_eq!(host_path(&w, ana, 1), Some(PathKind::Direct));
    assert_eq!(direct_to(&w, bob), Some(mapped));
    let relayed = w.server.as_ref().unwrap().1.stats().bytes_relayed;
    assert!(relayed < 20_000, "the game crossed the server: {relayed}");
}

#[test]
fn a_joiner_whose_router_forwards_a_port_late_goes_direct_at_once_and_the_host_knows_it() {
    let (mut w, server, ana) = hosted(1800, 2, false);
    let bob = w.join("bob", server, Some("den"), cfg());
    let (ana_at, bob_at) = (w.addr_of(ana), w.addr_of(bob));
    w.net.behind_router(bob_at);
    w.net.cut(ana_at, bob_at);
    // The first attempt fails; the joiner's mapping comes 8 s in, well before the retry.
    w.run_for(8 * SEC);
    assert_eq!(own_path(&w, bob), Some(PathKind::Relayed));
    let mapped: SocketAddr = "203.0.113.40:40000".parse().unwrap();
    w.map_port(bob, mapped);
    let went = w.run_until(2 * SEC, |w| host_path(w, ana, 1) == Some(PathKind::Direct));
    assert!(went, "no direct path within 2 s of the mapping");
    assert_eq!(direct_to(&w, ana), Some(mapped));
    let known = w.nodes[ana].feed().participant.mapped_players();
    assert_eq!(known, vec![(PeerId(1), vec![mapped])]);
    finish_in_sync(&mut w, 120 * SEC);
}

#[test]
fn a_direct_path_that_dies_mid_game_falls_back_to_the_relay_and_the_game_goes_on() {
    let (mut w, server, ana) = hosted(2400, 2, false);
    let bob = w.join("bob", server, Some("den"), cfg());
    let bob_at = w.addr_of(bob);
    w.net.behind_router(bob_at);
    assert!(w.run_until(20 * SEC, |w| w.frame(bob) > 600));
    assert_eq!(own_path(&w, bob), Some(PathKind::Direct));
    // The router starts dropping the direct path (an nftables rule).
    let ana_at = w.addr_of(ana);
    w.net.cut(ana_at, bob_at);
    assert!(
        w.run_until(3 * SEC, |w| own_path(w, bob) == Some(PathKind::Relayed)
            && host_path(w, ana, 1) == Some(PathKind::Relayed))
    );
    finish_in_sync(&mut w, 120 * SEC);
    // Nobody left, nobody reconnected: the fallback came before the lockstep's 2-s drop.
    for n in &w.nodes {
        assert!(
            !n.events().any(|e| matches!(
                e,
                ParticipantEvent::ConnectionLost { .. } | ParticipantEvent::Ended(_)
            )),
            "{}: {:?}",
            n.name,
            n.events().collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_room_of_four_mixes_direct_and_relayed_players_in_sync() {
    let (mut w, server, ana) = hosted(1200, 4, false);
    let ana_at = w.addr_of(ana);
    // bob behind a cone router, cat behind one that maps per destination, dan public.
    let bob = w.join("bob", server, Some("den"), cfg());
    let bob_at = w.addr_of(bob);
    w.net.behind_router(bob_at);
    let cat = w.join("cat", server, Some("den"), cfg());
    let cat_at = w.addr_of(cat);
    w.net.behind_router(cat_at);
    w.net.cut(ana_at, cat_at);
    let dan = w.join("dan", server, Some("den"), cfg());
    finish_in_sync(&mut w, 180 * SEC);
    assert_eq!(own_path(&w, bob), Some(PathKind::Direct));
    assert_eq!(own_path(&w, cat), Some(PathKind::Relayed));
    assert_eq!(own_path(&w, dan), Some(PathKind::Direct));
    let mut paths: Vec<PathKind> = (1..4).filter_map(|s| host_path(&w, ana, s)).collect();
    paths.sort_by_key(|k| *k == PathKind::Relayed);
    assert_eq!(
        paths,
        [PathKind::Direct, PathKind::Direct, PathKind::Relayed]
    );
}

#[test]
fn a_joiner_that_asks_for_the_relay_never_punches() {
    let (mut w, server, ana) = hosted(600, 2, true);
    let relayed = ParticipantConfig {
        path: PathMode::Relayed,
        ..cfg()
    };
    let bob = w.join("bob", server, Some("den"), relayed);
    w.net = std::mem::replace(&mut w.net, crate::net::sim::SimNet::new(HOME)).keeping_wire();
    let bob_at = w.addr_of(bob);
    let ana_at = w.addr_of(ana);
    finish_in_sync(&mut w, 60 * SEC);
    assert_eq!(own_path(&w, bob), Some(PathKind::Relayed));
    assert_eq!(host_path(&w, ana, 1), Some(PathKind::Relayed));
    assert!(
        !w.net
            .wire
            .iter()
            .any(|(from, to, _)| *from == bob_at && *to == ana_at),
        "bob sent straight to the host"
    );
}

#[test]
fn the_server_relays_only_between_a_hosted_rooms_host_and_its_joiners() {
    use crate::session::msg::{Msg, RoomMsg};
    let (mut w, server, ana) = hosted(600, 2, true);
    let bob = w.join("bob", server, Some("den"), cfg());
    assert!(w.run_until(10 * SEC, |w| w.frame(bob) > 60));
    w.net = std::mem::replace(&mut w.net, crate::net::sim::SimNet::new(HOME)).keeping_wire();
    let victim: SocketAddr = "10.9.9.9:53".parse().unwrap();
    let flood = Msg::Room(RoomMsg::Forward {
        peer: victim,
        datagram: &[0x55; 1000],
    })
    .encode(0);
    let forged_before = w.server.as_ref().unwrap().1.stats().dropped_auth;
    // Someone poses as the host from its address (no tag: dropped), and as a stranger.
    let ana_at = w.addr_of(ana);
    w.inject_to_server(ana_at, &flood);
    w.inject_to_server("10.9.9.10:4000".parse().unwrap(), &flood);
    w.run_for(SEC);
    assert!(
        !w.net.wire.iter().any(|(_, to, _)| *to == victim),
        "the server sent to an address nobody in the room has"
    );
    assert!(w.server.as_ref().unwrap().1.stats().dropped_auth > forged_before);
    finish_in_sync(&mut w, 60 * SEC);
}

#[test]
fn a_hosted_room_closes_a_minute_after_its_host_went_silent() {
    let (mut w, server, ana) = hosted(100_000, 2, true);
    let bob = w.join("bob", server, Some("den"), cfg());
    assert!(w.run_until(10 * SEC, |w| w.frame(bob) > 60));
    w.kill(ana);
    let killed = w.now();
    let closed = |w: &World| {
        w.server_events.iter().any(|e| {
            matches!(e, crate::serve::ServeEvent::Closed { why, .. } if why == "its host went silent")
        })
    };
    assert!(w.run_until(crate::serve::HOSTED_SILENCE + 3 * SEC, closed));
    let after = w.now() - killed;
    assert!(after >= crate::serve::HOSTED_SILENCE - SEC, "{after:?}");
    assert!(w.server.as_ref().unwrap().1.is_empty());
    // bob tried to come back for its minute, then gave up.
    assert!(w.run_until(10 * SEC, |w| w.failure(bob).is_some()));
}

#[test]
fn a_joiner_whose_wifi_drops_for_8_s_comes_back_and_goes_direct_again() {
    let (mut w, server, _) = hosted(3000, 2, false);
    let bob = w.join("bob", server, Some("den"), cfg());
    let bob_at = w.addr_of(bob);
    w.net.behind_router(bob_at);
    assert!(w.run_until(20 * SEC, |w| w.frame(bob) > 600));
    assert_eq!(own_path(&w, bob), Some(PathKind::Direct));
    w.outage(bob, 8 * SEC);
    assert!(w.run_until(30 * SEC, |w| w.nodes[bob]
        .events()
        .any(|e| matches!(e, ParticipantEvent::Back { .. }))));
    finish_in_sync(&mut w, 120 * SEC);
    assert_eq!(own_path(&w, bob), Some(PathKind::Direct));
}

#[test]
fn a_joiner_whose_address_changes_mid_game_plays_on() {
    let (mut w, server, ana) = hosted(2400, 2, true);
    let bob = w.join("bob", server, Some("den"), cfg());
    assert!(w.run_until(20 * SEC, |w| w.frame(bob) > 600));
    assert_eq!(own_path(&w, bob), Some(PathKind::Direct));
    // A new address (Wi-Fi to a phone's hotspot): its tagged datagrams move it.
    w.move_node(bob, true);
    finish_in_sync(&mut w, 120 * SEC);
    for i in [ana, bob] {
        assert!(
            !w.nodes[i]
                .events()
                .any(|e| matches!(e, ParticipantEvent::Ended(_))),
            "{}",
            w.nodes[i].name
        );
    }
}

#[test]
fn a_hosted_room_closes_when_its_host_leaves_and_its_relayed_joiner_is_told() {
    let (mut w, server, ana) = hosted(100_000, 2, true);
    let bob = w.join("bob", server, Some("den"), cfg());
    // Relayed: the goodbye crosses the server before the room closes there.
    let (ana_at, bob_at) = (w.addr_of(ana), w.addr_of(bob));
    w.net.cut(ana_at, bob_at);
    assert!(w.run_until(10 * SEC, |w| w.frame(bob) > 60));
    w.leave(ana, "quit");
    let closed = |w: &World| {
        w.server_events.iter().any(
            |e| matches!(e, crate::serve::ServeEvent::Closed { why, .. } if why == "its host left"),
        )
    };
    assert!(w.run_until(2 * SEC, closed));
    assert!(w.server.as_ref().unwrap().1.is_empty());
    assert!(w.run_until(5 * SEC, |w| matches!(
        w.failure(bob),
        Some(crate::session::SessionError::HostLeft(_))
    )));
    assert_eq!(own_path(&w, bob), Some(PathKind::Relayed));
}
