//! Lockstep membership and robustness: dropped and removed players get neutral input from an
//! announced frame on every client, timeouts warn then drop, desyncs are reported, and
//! garbage datagrams are dropped and counted without disturbing the session.

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::input::Pad;
use crate::wire::{Header, Kind, Transmit, LOCKSTEP_HEADER_LEN, LOCKSTEP_VERSION};

use super::msg::{self, Ctrl, LinkHeader};
use super::sim::{PathSpec, PlayerSpec, Sim, SimConfig};
use super::tests::{assert_in_sync, assert_no_tap_lost, config, secs, uniform};
use super::{
    Client, ClientEvent, Config, Frame, LockstepError, PeerId, PeerLeftReason, Server, ServerEvent,
};

/// The frame from which `peer` was announced gone to every remaining client, checked equal.
fn announced_leave(sim: &Sim, peer: PeerId) -> Frame {
    let mut froms = sim.players.iter().filter(|p| p.id != peer).map(|p| {
        p.events
            .iter()
            .find_map(|(_, e)| match e {
                ClientEvent::PlayerLeft {
                    peer: q,
                    from_frame,
                } if *q == peer => Some(*from_frame),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{} was not told that {peer} left", p.id))
    });
    let first = froms.next().expect("someone remained");
    assert!(
        froms.all(|f| f == first),
        "clients were told different frames"
    );
    first
}

/// From `from` on, `peer` has neutral input on every frame every remaining client ran.
fn assert_neutral_from(sim: &Sim, peer: PeerId, from: Frame) {
    for p in sim.players.iter().filter(|p| p.id != peer) {
        assert!(p.applied.len() > from.0 as usize + 600, "{} stopped", p.id);
        let bad = p.applied[from.0 as usize..]
            .iter()
            .position(|f| f[peer.index()] != Pad::NEUTRAL);
        assert_eq!(bad, None, "{}: {peer} not neutral after {from}", p.id);
    }
}

#[test]
fn a_silent_player_is_warned_about_then_dropped_with_neutral_input() {
    let dead = PathSpec::rtt_ms(80).dead_after(secs(20));
    let specs = vec![
        PlayerSpec::symmetric(PathSpec::default()),
        PlayerSpec::symmetric(PathSpec::rtt_ms(80)),
        PlayerSpec::symmetric(dead),
    ];
    let mut sim = Sim::new(SimConfig::new(config(3, 2), specs, 21));
    sim.run_until(secs(45));
    let gone = PeerId(2);
    let warned = sim.server_events.iter().find_map(|(t, e)| match e {
        ServerEvent::PeerSilent { peer, .. } if *peer == gone => Some(*t),
        _ => None,
    });
    let dropped = sim.server_events.iter().find_map(|(t, e)| match e {
        ServerEvent::PeerLeft {
            peer,
            from_frame,
            reason: PeerLeftReason::TimedOut,
        } if *peer == gone => Some((*t, *from_frame)),
        _ => None,
    });
    let warned = warned.expect("no silence warning");
    let (dropped_at, from) = dropped.expect("not dropped");
    println!("warned at {warned:?}, dropped at {dropped_at:?} from {from}");
    // Its last datagram left just before 20 s and took 40 ms.
    assert!(warned > secs(20) && warned < Duration::from_millis(20_600));
    assert!(dropped_at > secs(21) && dropped_at < Duration::from_millis(22_100));
    assert_eq!(announced_leave(&sim, gone), from);
    assert_neutral_from(&sim, gone, from);
    assert_in_sync(&sim);
    assert_no_tap_lost(&sim, |p| (p == gone).then_some(from.0 as usize));
    // The dropped player's client noticed too: first a warning, then the loss.
    let events: Vec<_> = sim.players[2]
        .events
        .iter()
        .map(|(_, e)| e.clone())
        .collect();
    assert!(
        matches!(events[0], ClientEvent::ServerSilent { .. }),
        "{events:?}"
    );
    assert_eq!(events.last(), Some(&ClientEvent::ServerLost));
    assert_eq!(
        sim.server.peers().collect::<Vec<_>>(),
        [PeerId(0), PeerId(1)]
    );
}

#[test]
fn a_removed_player_gets_neutral_input_from_the_announced_frame() {
    let mut sim = Sim::new(uniform(4, PathSpec::rtt_ms(120).loss(0.1), 22));
    sim.run_until(secs(15));
    let gone = PeerId(1);
    sim.remove_peer(gone);
    assert_eq!(
        sim.server.remove_peer(sim.server_instant(), gone),
        Err(LockstepError::NotPresent(gone))
    );
    sim.run_until(secs(40));
    let from = sim
        .server_events
        .iter()
        .find_map(|(_, e)| match e {
            ServerEvent::PeerLeft {
                peer,
                from_frame,
                reason: PeerLeftReason::Removed,
            } if *peer == gone => Some(*from_frame),
            _ => None,
        })
        .expect("no PeerLeft event");
    assert_eq!(announced_leave(&sim, gone), from);
    assert_neutral_from(&sim, gone, from);
    assert_in_sync(&sim);
    assert_no_tap_lost(&sim, |p| (p == gone).then_some(from.0 as usize));
    assert!(
        sim.players[1].gone(),
        "the removed client should lose the server"
    );
}

#[test]
fn a_desync_is_reported_by_the_server_and_to_every_client() {
    let mut cfg = uniform(3, PathSpec::rtt_ms(80).loss(0.1), 23);
    cfg.checksum_every = Some(60);
    cfg.corrupt_checksum = Some((PeerId(2), 600));
    let mut sim = Sim::new(cfg);
    sim.run_frames(2400, secs(120));
    let desyncs: Vec<_> = sim
        .server_events
        .iter()
        .filter_map(|(_, e)| match e {
            ServerEvent::Desync {
                frame,
                peer,
                expected,
                got,
            } => Some((*frame, *peer, *expected ^ *got)),
            _ => None,
        })
        .collect();
    assert_eq!(desyncs, [(Frame(600), PeerId(2), 1)]);
    for p in &sim.players {
        let told: Vec<_> = p
            .events
            .iter()
            .filter(|(_, e)| matches!(e, ClientEvent::Desync { .. }))
            .map(|(_, e)| e.clone())
            .collect();
        assert_eq!(
            told,
            [ClientEvent::Desync {
                frame: Frame(600),
                peer: PeerId(2)
            }],
            "{}",
            p.id
        );
    }
}

#[test]
fn garbage_truncated_and_foreign_datagrams_are_dropped_and_counted() {
    let mut sim = Sim::new(uniform(2, PathSpec::rtt_ms(60).loss(0.05), 24));
    sim.run_until(secs(10));
    let mut rng = SmallRng::seed_from_u64(24);
    let server_before = sim.server.stats().traffic.packets_dropped_invalid;
    let client_before = sim.players[1]
        .client
        .stats()
        .traffic
        .packets_dropped_invalid;
    // A well-formed CTRL and UPDATE of another session, to cut and to relabel.
    let ctrl = msg::encode_ctrl(
        0x5eed_0001,
        &Ctrl {
            head: LinkHeader {
                seq: 1,
                ack: None,
                ts: Some(0),
                echo: None,
            },
            input_rtt_ms: None,
            samples: None,
            checksums: vec![(Frame(1), 2)],
            pause: None,
            stopped: false,
        },
        0..=0,
        None,
    );
    let mut bad: Vec<Vec<u8>> = Vec::new();
    for _ in 0..2000 {
        let len = rng.gen_range(0..200);
        let mut junk: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        // Junk that begins as this version's CTRL does can decode as one: on a real link
        // its tag fails first (see `session`'s forged-datagram tests).
        if junk.first().is_some_and(|b| b >> 4 == LOCKSTEP_VERSION) {
            junk[0] ^= 0x80;
        }
        bad.push(junk);
    }
    for len in 0..ctrl.len() {
        bad.push(ctrl[..len].to_vec());
    }
    let mut wrong_kind = ctrl.clone();
    wrong_kind[0] = LOCKSTEP_VERSION << 4 | 0x1; // an UPDATE, to the server
    bad.push(wrong_kind.clone());
    let mut hello = Vec::new();
    Header {
        kind: Kind::Hello,
        session: 0x5eed_0001,
    }
    .write(&mut hello);
    hello.extend_from_slice(&ctrl[LOCKSTEP_HEADER_LEN..]);
    bad.push(hello);
    for b in &bad {
        sim.inject_to_server(PeerId(1), b);
    }
    // From a slot nobody plays.
    sim.inject_to_server(PeerId(5), &ctrl);
    // The client: the same garbage, plus a CTRL (wrong direction).
    let mut to_client = bad.clone();
    to_client.pop();
    to_client.pop();
    to_client.push(ctrl.clone());
    for b in &to_client {
        sim.inject_to_player(1, b);
    }
    let server_dropped = sim.server.stats().traffic.packets_dropped_invalid - server_before;
    let client_dropped = sim.players[1]
        .client
        .stats()
        .traffic
        .packets_dropped_invalid
        - client_before;
    assert_eq!(server_dropped, bad.len() as u64 + 1);
    assert_eq!(client_dropped, to_client.len() as u64);
    // The session goes on unharmed.
    sim.run_until(secs(30));
    assert_in_sync(&sim);
    assert_no_tap_lost(&sim, |_| None);
    assert!(sim.players.iter().all(|p| p.applied.len() > 1500));
    assert_eq!(Header::parse(&ctrl).unwrap().0.kind, Kind::Ctrl);
}

#[test]
fn the_host_alone_plays_at_the_minimum_lead_without_stalls() {
    let mut sim = Sim::new(uniform(1, PathSpec::default(), 25));
    sim.run_frames(3000, secs(100));
    let s = sim.players[0].client.stats();
    assert_eq!(sim.players[0].stalled_slots, 0);
    assert_eq!(s.latency.median(), Some(2));
    assert_eq!(sim.server.lead(), 2);
    assert_no_tap_lost(&sim, |_| None);
}

#[test]
fn joining_and_config_errors_are_reported() {
    let t0 = Instant::now();
    let bad = Config {
        players: 9,
        ..Config::default()
    };
    assert!(matches!(
        Server::new(t0, bad),
        Err(LockstepError::Config(_))
    ));
    let bad = Config {
        min_lead: 10,
        max_lead: 5,
        ..Config::default()
    };
    assert!(matches!(
        Client::new(t0, bad, PeerId(0)),
        Err(LockstepError::Config(_))
    ));
    assert_eq!(
        Client::new(t0, Config::default(), PeerId(2)).err(),
        Some(LockstepError::NoSuchSlot(PeerId(2)))
    );
    let cfg = Config::default();
    let mut server = Server::new(t0, cfg.clone()).unwrap();
    assert_eq!(server.add_peer(t0, PeerId(0)), Ok(()));
    assert_eq!(
        server.add_peer(t0, PeerId(0)),
        Err(LockstepError::AlreadyPresent(PeerId(0)))
    );
    assert_eq!(
        server.add_peer(t0, PeerId(3)),
        Err(LockstepError::NoSuchSlot(PeerId(3)))
    );
    // Once a sample is on a frame, nobody joins.
    let mut host = Client::new(t0, cfg, PeerId(0)).unwrap();
    for f in 0..10u64 {
        let now = t0 + Duration::from_millis(f * 16);
        host.push_local_input(now, Pad(1));
        let _ = host.poll_frame();
        while let Some(Transmit { bytes: b, .. }) = host.poll_transmit(now) {
            server.handle_datagram(now, PeerId(0), &b);
        }
        while let Some(Transmit { bytes: b, .. }) = server.poll_transmit(now) {
            host.handle_datagram(now, &b);
        }
    }
    assert!(host.frame().0 >= 8, "host only reached {}", host.frame());
    assert_eq!(server.add_peer(t0, PeerId(1)), Err(LockstepError::Started));
}

/// One 16 ms tick without latency: each running client pushes a sample, takes a frame and
/// sends; the server runs its timers and its datagrams reach the running clients. Returns
/// the server's events.
fn tick(
    server: &mut Server,
    clients: &mut [(&mut Client, bool)],
    now: Instant,
) -> Vec<ServerEvent> {
    for (c, running) in clients.iter_mut() {
        if *running {
            c.push_local_input(now, Pad::NEUTRAL);
            let _ = c.poll_frame();
            while let Some(Transmit { bytes: b, .. }) = c.poll_transmit(now) {
                server.handle_datagram(now, c.me(), &b);
            }
        }
    }
    server.handle_timeout(now);
    while let Some(Transmit {
        to: peer, bytes: b, ..
    }) = server.poll_transmit(now)
    {
        for (c, running) in clients.iter_mut() {
            if *running && super::Slot::Player(c.me()) == peer {
                c.handle_datagram(now, &b);
            }
        }
    }
    std::iter::from_fn(|| server.poll_event()).collect()
}

#[test]
fn a_player_that_says_it_is_starting_is_held_in_until_it_runs() {
    // Player 1 loads its content for 10 s after the session began: no CTRL comes from it,
    // but every 250 ms the session layer passes on that it is starting. The server keeps it
    // past the 2 s timeout and publishes no frame (frame 0 waits for every player). Once it
    // runs, frames flow; from then on only its CTRLs keep it in: killed, it is dropped
    // after the timeout however often "starting" is said.
    let t0 = Instant::now();
    let cfg = Config::default();
    let mut server = Server::new(t0, cfg.clone()).unwrap();
    server.add_peer(t0, PeerId(0)).unwrap();
    server.add_peer(t0, PeerId(1)).unwrap();
    let mut c0 = Client::new(t0, cfg.clone(), PeerId(0)).unwrap();
    let mut c1 = Client::new(t0, cfg.clone(), PeerId(1)).unwrap();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let mut events = Vec::new();
    for ms in (0..10_000).step_by(16) {
        if ms % 250 < 16 {
            assert!(server.starting(at(ms), PeerId(1)), "at {ms} ms");
        }
        events.extend(tick(
            &mut server,
            &mut [(&mut c0, true), (&mut c1, false)],
            at(ms),
        ));
    }
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ServerEvent::PeerLeft { .. })),
        "{events:?}"
    );
    assert_eq!(
        server.frontier(),
        Frame::ZERO,
        "a frame ran without player 1"
    );
    assert!(server.has_sent_ctrl(PeerId(0)) && !server.has_sent_ctrl(PeerId(1)));
    for ms in (10_000..12_000).step_by(16) {
        events.extend(tick(
            &mut server,
            &mut [(&mut c0, true), (&mut c1, true)],
            at(ms),
        ));
    }
    assert!(server.has_sent_ctrl(PeerId(1)));
    assert!(c1.frame().0 > 60, "player 1 at {}", c1.frame());
    assert!(!server.starting(at(12_000), PeerId(1)));
    let mut dropped = None;
    for ms in (12_000..16_000).step_by(16) {
        server.starting(at(ms), PeerId(1));
        for e in tick(
            &mut server,
            &mut [(&mut c0, true), (&mut c1, false)],
            at(ms),
        ) {
            if let ServerEvent::PeerLeft {
                peer: PeerId(1),
                reason: PeerLeftReason::TimedOut,
                ..
            } = e
            {
                dropped.get_or_insert(ms);
            }
        }
    }
    let dropped = dropped.expect("player 1 was never dropped");
    // Its last CTRL left just before 12 s.
    assert!(
        (13_900..14_100).contains(&dropped),
        "dropped at {dropped} ms"
    );
    assert!(!server.starting(at(16_000), PeerId(1)), "gone");
}

#[test]
fn a_player_still_loading_is_not_lost_to_the_servers_silence_until_it_runs() {
    // A joiner loading its game (and running the rollback check: seconds on a slow core)
    // has sent no CTRL, so the server sends it nothing: that silence is no lost link. Once
    // it runs, two seconds of silence are.
    let t0 = Instant::now();
    let cfg = config(2, 2);
    let timeout = cfg.timeout;
    let mut c = Client::new(t0, cfg, PeerId(1)).unwrap();
    let mut now = t0;
    while now < t0 + Duration::from_secs(10) {
        now += Duration::from_millis(100);
        c.handle_timeout(now);
        while c.poll_transmit(now).is_some() {}
    }
    assert!(!c.is_lost(), "lost while loading");
    let mut events = Vec::new();
    while let Some(e) = c.poll_event() {
        events.push(e);
    }
    assert!(events.is_empty(), "warned while loading: {events:?}");
    // It runs: its first sample sends the first CTRL, and the server stays silent.
    c.push_local_input(now, Pad::default());
    assert!(c.poll_transmit(now).is_some(), "no first CTRL");
    let ran = now;
    while now < ran + timeout + Duration::from_millis(200) {
        now += Duration::from_millis(100);
        c.handle_timeout(now);
        while c.poll_transmit(now).is_some() {}
    }
    assert!(
        c.is_lost(),
        "not lost after {timeout:?} of silence while running"
    );
}
