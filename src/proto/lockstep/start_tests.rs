//! The start of a lockstep session: frame zero waits for every player's first CTRL, the
//! wait is no input round trip, players still loading get longer before they are dropped,
//! and a joiner runs in phase with the host from its first frame.

use std::time::{Duration, Instant};

use crate::input::Pad;
use crate::wire::Transmit;

use super::frame::{Frame, Slot};
use super::sim::{PathSpec, Sim};
use super::tests::{assert_in_sync, config, one_player_in_memory, secs, uniform};
use super::{Client, Config, PeerId, Server, ServerEvent};

#[test]
fn a_client_learns_once_how_far_behind_the_host_it_started() {
    // 50 ms each way. Frame 0 waits for the client's first CTRL; here that one is lost. Every
    // CTRL carries a timestamp until the client has a round trip (not only every
    // `TS_EVERY`-th), so the second one's echo comes with the first frames: the answer is
    // there at once, half the round trip, said once. (Protocol 6 stamped only every 4th: the
    // first frames came without a round trip, and the answer 3 frames later.)
    let (t0, mut server, mut client) = one_player_in_memory();
    let ms = Duration::from_millis;
    let frame = Duration::from_micros(16_667);
    let mut t = t0;
    let mut pushes = 0u32;
    let behind = loop {
        assert!(pushes < 20, "no start delay after {pushes} frames");
        client.push_local_input(t, Pad(pushes as u16 & 1));
        pushes += 1;
        let ctrls: Vec<_> =
            std::iter::from_fn(|| client.poll_transmit(t).map(|t| t.bytes)).collect();
        for d in ctrls.iter().filter(|_| pushes > 1) {
            server.handle_datagram(t + ms(50), PeerId(0), d);
        }
        while let Some(Transmit { bytes: d, .. }) = server.poll_transmit(t + ms(50)) {
            client.handle_datagram(t + ms(100), &d);
        }
        while client.poll_frame().is_some() {}
        if let Some(b) = client.take_start_delay() {
            break b;
        }
        t += frame;
    };
    assert_eq!(pushes, 2, "the first frames came without a round trip");
    assert!(behind >= ms(49) && behind <= ms(51), "{behind:?}");
    assert_eq!(client.take_start_delay(), None, "said once");
}

#[test]
fn frame_zero_waits_for_every_players_first_ctrl() {
    // A joiner whose window opens 120 ms after the lobby starts that much after the host.
    // Had the host's frames started without it, they would wait for its inputs at every
    // keyframe until time sync caught it up (a headless host stalled 63-67 of 600 frames
    // behind a joiner in a window under Xvfb); so nothing is published until everyone runs.
    let cfg = config(2, 2);
    let t0 = Instant::now();
    let mut server = Server::new(t0, cfg.clone()).unwrap();
    let mut clients = [0u8, 1].map(|p| {
        server.add_peer(t0, PeerId(p)).unwrap();
        Client::new(t0, cfg.clone(), PeerId(p)).unwrap()
    });
    let ms = Duration::from_millis;
    clients[0].push_local_input(t0, Pad::NEUTRAL);
    while let Some(Transmit { bytes: d, .. }) = clients[0].poll_transmit(t0) {
        server.handle_datagram(t0, PeerId(0), &d);
    }
    // Called before its first sample (by a network thread while its window opens), player 2
    // has nothing to send: its first CTRL would tell the server it runs.
    let early = t0 + ms(1000);
    clients[1].handle_timeout(early);
    assert!(
        clients[1].poll_transmit(early).is_none(),
        "a CTRL before any sample"
    );
    assert!(clients[1].poll_timeout().is_some_and(|t| t > early));
    // The 2 s timeout stays the limit for a player that never starts.
    server.handle_timeout(t0 + ms(1500));
    assert_eq!(
        server.frontier(),
        Frame::ZERO,
        "published before player 2 ran"
    );
    assert!(clients[0].poll_frame().is_none());
    let late = t0 + ms(1500);
    clients[1].push_local_input(late, Pad::NEUTRAL);
    while let Some(Transmit { bytes: d, .. }) = clients[1].poll_transmit(late) {
        server.handle_datagram(late, PeerId(1), &d);
    }
    assert!(
        server.frontier() > Frame::ZERO,
        "nothing published once both ran"
    );
    while let Some(Transmit { to, bytes: d, .. }) = server.poll_transmit(late) {
        clients[to.number() as usize].handle_datagram(late, &d);
    }
    assert!(
        clients[0].poll_frame().is_some(),
        "frame 0 did not reach player 1"
    );
    // That wait was the session starting, not a stall.
    let s = clients[0].stats();
    assert_eq!((s.stalls, s.stalled), (0, Duration::ZERO));

    // A player that never starts (nor says it loads) is dropped once it has been silent
    // for `UNCONTACTED_SILENCE`, and the others play on.
    let mut server = Server::new(t0, cfg.clone()).unwrap();
    server.add_peer(t0, PeerId(0)).unwrap();
    server.add_peer(t0, PeerId(1)).unwrap();
    let mut host = Client::new(t0, cfg.clone(), PeerId(0)).unwrap();
    host.push_local_input(t0, Pad::NEUTRAL);
    while let Some(Transmit { bytes: d, .. }) = host.poll_transmit(t0) {
        server.handle_datagram(t0, PeerId(0), &d);
    }
    let limit = super::server::UNCONTACTED_SILENCE;
    for at in (1..=4).map(|s| t0 + ms(s * 900)) {
        host.handle_timeout(at);
        while let Some(Transmit { bytes: d, .. }) = host.poll_transmit(at) {
            server.handle_datagram(at, PeerId(0), &d);
        }
        server.handle_timeout(at);
    }
    server.handle_timeout(t0 + limit - ms(100));
    assert_eq!(server.frontier(), Frame::ZERO);
    server.handle_timeout(t0 + limit + ms(100));
    assert!(std::iter::from_fn(|| server.poll_event()).any(|e| matches!(
        e,
        ServerEvent::PeerLeft {
            peer: PeerId(1),
            ..
        }
    )));
    assert!(
        server.frontier() > Frame::ZERO,
        "nothing published after the silent player was dropped"
    );
}

#[test]
fn a_player_that_runs_but_has_not_heard_the_server_gets_longer_before_it_is_dropped() {
    // A joiner at the lobby's pace speaks once a second until the server's first UPDATE
    // reaches it; on a slow, lossy link two of those lost in a row are not a player gone.
    let cfg = config(2, 2);
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let dropped = |server: &mut Server| {
        std::iter::from_fn(|| server.poll_event()).any(|e| {
            matches!(
                e,
                ServerEvent::PeerLeft {
                    peer: PeerId(1),
                    ..
                }
            )
        })
    };
    for contact in [false, true] {
        let mut server = Server::new(t0, cfg.clone()).unwrap();
        server.add_peer(t0, PeerId(0)).unwrap();
        server.add_peer(t0, PeerId(1)).unwrap();
        let mut joiner = Client::new(t0, cfg.clone(), PeerId(1)).unwrap();
        if contact {
            // It heard the server once: its CTRLs acknowledge that from now on.
            server.handle_timeout(t0);
            while let Some(Transmit { to, bytes, .. }) = server.poll_transmit(t0) {
                if to == Slot::Player(PeerId(1)) {
                    joiner.handle_datagram(t0, &bytes);
                }
            }
        }
        joiner.push_local_input(t0, Pad::NEUTRAL);
        while let Some(Transmit { bytes: d, .. }) = joiner.poll_transmit(t0) {
            server.handle_datagram(t0, PeerId(1), &d);
        }
        server.handle_timeout(t0 + ms(2100));
        assert_eq!(dropped(&mut server), contact, "contact {contact}, 2.1 s");
        if !contact {
            server.handle_timeout(t0 + super::server::UNCONTACTED_SILENCE + ms(100));
            assert!(dropped(&mut server), "still there after 5 s of silence");
        }
    }
}

#[test]
fn a_player_that_has_not_run_yet_gets_longer_unless_it_says_it_loads() {
    // Its first CTRLs may have reached the lobby before this server was there, and the
    // next come at the lobby's pace: 2 s of silence are not a player gone. One that says
    // it is loading (the session layer's keepalive) keeps the 2-s rule.
    let cfg = config(2, 2);
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let left = |server: &mut Server| {
        std::iter::from_fn(|| server.poll_event()).any(|e| {
            matches!(
                e,
                ServerEvent::PeerLeft {
                    peer: PeerId(1),
                    ..
                }
            )
        })
    };
    for loading in [false, true] {
        let mut server = Server::new(t0, cfg.clone()).unwrap();
        server.add_peer(t0, PeerId(0)).unwrap();
        server.add_peer(t0, PeerId(1)).unwrap();
        if loading {
            assert!(server.starting(t0 + ms(100), PeerId(1)));
        }
        server.handle_timeout(t0 + ms(2200));
        assert_eq!(left(&mut server), loading, "loading {loading}, 2.2 s");
        server.handle_timeout(t0 + super::server::UNCONTACTED_SILENCE + ms(100));
        if !loading {
            assert!(left(&mut server), "still there after 5 s of silence");
        }
    }
}

#[test]
fn samples_taken_before_the_first_frames_carry_no_age() {
    // The frame-0 sample waits for the session to start; its age would tell the server's
    // time sync that the client's frame clock started that much earlier than it did.
    let (t0, mut server, mut client) = one_player_in_memory();
    let ms = Duration::from_millis;
    let age_of = |d: &[u8]| {
        let (_, body) = crate::wire::Header::parse(d).unwrap();
        let c =
            super::msg::decode_ctrl(body, crate::wire::is_short(d), 0, 0, |_| Some(Pad::NEUTRAL))
                .unwrap();
        c.samples.expect("a run").age_ms
    };
    client.push_local_input(t0, Pad::NEUTRAL);
    let first = client.poll_transmit(t0 + ms(5)).expect("a CTRL").bytes;
    assert_eq!(
        age_of(&first),
        None,
        "the frame-0 sample's wait went out as its age"
    );
    server.handle_datagram(t0 + ms(5), PeerId(0), &first);
    while let Some(Transmit { bytes: d, .. }) = server.poll_transmit(t0 + ms(5)) {
        client.handle_datagram(t0 + ms(5), &d);
    }
    assert!(client.poll_frame().is_some(), "the first frames arrived");
    let now = t0 + ms(20);
    client.push_local_input(now, Pad(1));
    let next = client.poll_transmit(now + ms(3)).expect("a CTRL").bytes;
    assert_eq!(age_of(&next), Some(3));
}

#[test]
fn a_waiting_player_samples_its_pad_on_its_frame_clock() {
    // Player 0's CTRLs are held up for 10 frame periods, so both players wait at the same
    // keyframe (a common stall), their feeds pushing the pad every 2 ms as `netplay`'s does.
    // Each samples once per period waited: when player 0's CTRLs get through, the server
    // holds both players' input for the frames they will catch up on and publishes them at
    // once. Sampled only as those frames ran, the input would arrive in a burst after the
    // stall, late for its frames, and stall every player again.
    // The lead is pinned: the held CTRLs' round trip would otherwise raise it meanwhile.
    // No send budget: in memory nothing is on a wire, and a CTRL held back for tokens
    // would decide the count below instead of the sampling.
    let cfg = Config {
        min_lead: 2,
        max_lead: 2,
        send_budget: 0,
        ..config(2, 1)
    };
    let t0 = Instant::now();
    let mut server = Server::new(t0, cfg.clone()).unwrap();
    let mut clients = [0u8, 1].map(|p| {
        server.add_peer(t0, PeerId(p)).unwrap();
        Client::new(t0, cfg.clone(), PeerId(p)).unwrap()
    });
    let frame = cfg.frame_duration();
    let mut held: Vec<Vec<u8>> = Vec::new();
    // Moves every datagram at `now` with no delay, holding player 0's while `hold`.
    let mut exchange = |server: &mut Server, clients: &mut [Client; 2], now, hold: bool| {
        for _ in 0..4 {
            server.handle_timeout(now);
            while let Some(Transmit { to, bytes: d, .. }) = server.poll_transmit(now) {
                clients[to.number() as usize].handle_datagram(now, &d);
            }
            for (i, c) in clients.iter_mut().enumerate() {
                c.handle_timeout(now);
                while let Some(Transmit { bytes: d, .. }) = c.poll_transmit(now) {
                    if i == 0 && hold {
                        held.push(d);
                    } else {
                        server.handle_datagram(now, PeerId(i as u8), &d);
                    }
                }
            }
        }
    };
    // 60 frame periods in step: push, exchange, run, exchange.
    let mut ran = [0u32; 2];
    for tick in 0..60u32 {
        let now = t0 + frame * tick;
        for c in &mut clients {
            c.push_local_input(now, Pad(u16::from(tick % 8 < 4)));
        }
        exchange(&mut server, &mut clients, now, false);
        for (c, ran) in clients.iter_mut().zip(&mut ran) {
            *ran += u32::from(c.poll_frame().is_some());
        }
        exchange(&mut server, &mut clients, now, false);
    }
    assert!(
        ran[0] == ran[1] && ran[0] >= 50,
        "ran {ran:?} frames in step"
    );
    // From the next tick on, player 0's CTRLs are held for 10 frame periods; the feeds push
    // every 2 ms meanwhile (the pad as it is) and ask for the next frame.
    let start = t0 + frame * 60;
    let stalled_at = server.frontier();
    for ms in (0..167).step_by(2) {
        let now = start + Duration::from_millis(ms);
        for c in &mut clients {
            c.push_local_input(now, Pad(0));
        }
        exchange(&mut server, &mut clients, now, true);
        for (c, ran) in clients.iter_mut().zip(&mut ran) {
            *ran += u32::from(c.poll_frame().is_some());
        }
    }
    assert_eq!(
        server.frontier(),
        stalled_at,
        "published without player 0's input"
    );
    // Player 0's CTRLs get through. The two frames published before the hold ran at once
    // (this loop polls without pacing), so both waited from 4 ms in: 162 ms, 9 periods. The
    // server now holds both players' samples for the 3 frames sampled before the wait and
    // one per period waited: 12 frames published at once (3 if sampled only as frames ran).
    let end = start + Duration::from_millis(168);
    for d in std::mem::take(&mut held) {
        server.handle_datagram(end, PeerId(0), &d);
    }
    let gained = server.frontier().0 - stalled_at.0;
    assert_eq!(gained, 12, "frames published at once after the wait");
}

#[test]
fn the_wait_for_the_first_frames_is_not_an_input_round_trip() {
    // A joiner pushes its frame-0 sample and then waits for the host to start (a one-way
    // trip for the start-state ack, then the host's first UPDATE). That wait is the session
    // starting, not the link; counted, it is the largest of the first report's 60 samples,
    // which the server adopts at once (10 instead of 8 frames on a clean 100 ms link).
    let (t0, mut server, mut client) = one_player_in_memory();
    let start = Duration::from_millis(500);
    let one_way = Duration::from_millis(10);
    // Datagrams in flight: (arrival, to the server?, bytes).
    let mut flight: Vec<(Instant, bool, Vec<u8>)> = Vec::new();
    let mut frames = 0;
    let mut t = t0;
    let first_report = loop {
        if let Some(rtt) = server.stats().peers[0].input_rtt {
            break rtt;
        }
        assert!(frames < 600, "no input round trip reported");
        // The host's server runs from `start` on; what the client sent before waits for it.
        let host_up = t >= t0 + start;
        flight.sort_by_key(|(at, ..)| *at);
        while host_up && flight.first().is_some_and(|(at, ..)| *at <= t) {
            let (_, to_server, bytes) = flight.remove(0);
            if to_server {
                server.handle_datagram(t, PeerId(0), &bytes);
            } else {
                client.handle_datagram(t, &bytes);
            }
        }
        if host_up {
            server.handle_timeout(t);
            while let Some(Transmit { bytes, .. }) = server.poll_transmit(t) {
                flight.push((t + one_way, false, bytes));
            }
        }
        client.push_local_input(t, Pad(frames as u16 & 1));
        if client.poll_frame().is_some() {
            frames += 1;
        }
        while let Some(Transmit { bytes, .. }) = client.poll_transmit(t) {
            flight.push((t + one_way, true, bytes));
        }
        t += Duration::from_millis(1);
    };
    assert!(
        first_report < Duration::from_millis(100),
        "first input round trip {first_report:?}: the start's 500 ms wait was counted"
    );
}

#[test]
fn a_joiner_runs_in_phase_with_the_host_from_the_start() {
    // The joiner gets frame 0 a one-way trip (1 s) after the host ran it. Catching that up
    // once it knows the round trip puts it in phase within 3 s; left to time sync (2 %) it
    // would still be about 40 frames behind after 10 s. (Between, time sync still acts on
    // origins measured before the catch-up, for a round trip: about 6 frames of overshoot.)
    for seed in 0..3 {
        let mut sim = Sim::new(uniform(2, PathSpec::rtt_ms(2000).loss(0.25), 40 + seed));
        for t in [3, 10, 20] {
            sim.run_until(secs(t));
            let (host, joiner) = (sim.players[0].applied.len(), sim.players[1].applied.len());
            assert!(
                host.abs_diff(joiner) <= 3,
                "seed {seed}, {t} s: host at frame {host}, joiner at {joiner}"
            );
        }
        assert_in_sync(&sim);
    }
}
