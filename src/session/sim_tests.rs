//! Host and joiners over a simulated lossy network on simulated time: proves the handshake,
//! the refusals and the start-state transfer without sockets, in milliseconds of real time.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::{rngs::SmallRng, Rng, RngCore, SeedableRng};

use super::*;
use crate::lockstep::{Frame, PeerId, Slot, SpectatorId};
use crate::net::sim::{SimNet, Simulation};
use crate::session::host::{LOBBY_INTERVAL, READY_TIMEOUT};
use crate::wire::PROTOCOL_VERSION;

const LOSSY: &str = "delay=40ms,jitter=10ms,loss=25%,dup=2%,reorder=2%";

fn info(player: &str) -> SessionInfo {
    SessionInfo {
        core_name: "Genesis Plus GX".into(),
        core_version: "v1.7.4".into(),
        content_name: "airstriker.md".into(),
        content_hash: Some(0x1a2b_3c4d_5e6f_7081),
        options: vec![
            ("genesis_plus_gx_bram".into(), "per bios".into()),
            ("genesis_plus_gx_region".into(), "auto".into()),
        ],
        player_name: player.into(),
    }
}

fn addr(i: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 40000 + i))
}

fn random_state(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    SmallRng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

struct Sim {
    now: Instant,
    start: Instant,
    host: HostSession,
    joiners: Vec<(SocketAddr, JoinSession)>,
    net: SimNet,
    host_events: Vec<HostEvent>,
    join_events: Vec<(SocketAddr, JoinEvent)>,
}

impl Sim {
    fn new(cfg: HostConfig, state: Vec<u8>, netsim: &str) -> Sim {
        Sim::seeded(cfg, state, netsim, 100)
    }

    /// [`Sim::new`] whose senders' loss patterns start from `seed`.
    fn seeded(cfg: HostConfig, state: Vec<u8>, netsim: &str, seed: u64) -> Sim {
        let now = Instant::now();
        Sim {
            now,
            start: now,
            host: HostSession::new(cfg, info("host"), state, vec![0xaa; 2048]).unwrap(),
            joiners: Vec::new(),
            net: SimNet::seeded(netsim, seed).keeping_wire(),
            host_events: Vec::new(),
            join_events: Vec::new(),
        }
    }

    fn join(&mut self, i: u16, info: SessionInfo, password: Option<&str>) -> SocketAddr {
        let mut cfg = JoinConfig::new(addr(0), info);
        cfg.password = password.map(str::to_string);
        self.joiners
            .push((addr(i), JoinSession::new(self.now, cfg)));
        addr(i)
    }

    fn watch(&mut self, i: u16, info: SessionInfo) -> SocketAddr {
        self.watch_with(i, info, None)
    }

    fn watch_with(&mut self, i: u16, info: SessionInfo, password: Option<&str>) -> SocketAddr {
        let mut cfg = JoinConfig::new(addr(0), info);
        cfg.watch = true;
        cfg.password = password.map(str::to_string);
        self.joiners
            .push((addr(i), JoinSession::new(self.now, cfg)));
        addr(i)
    }

    fn now(&self) -> Instant {
        self.now
    }

    fn ready(&self, a: SocketAddr) -> Option<&StartState> {
        self.join_events.iter().find_map(|(x, e)| match e {
            JoinEvent::Ready(s) if *x == a => Some(&**s),
            _ => None,
        })
    }

    fn failure(&self, a: SocketAddr) -> Option<&SessionError> {
        self.join_events.iter().find_map(|(x, e)| match e {
            JoinEvent::Failed(err) if *x == a => Some(err),
            _ => None,
        })
    }

    fn settled(&self, a: SocketAddr) -> bool {
        self.ready(a).is_some() || self.failure(a).is_some()
    }
}

impl Simulation for Sim {
    /// Finer than the default: a start state goes out at thousands of chunks a second, and
    /// the transfer tests measure how long it takes. The host and joiners serve every timer
    /// they report, so nothing is left in the past.
    const MIN_STEP: Duration = Duration::from_micros(1);

    fn net_and_clock(&mut self) -> (&mut SimNet, &mut Instant, Instant) {
        (&mut self.net, &mut self.now, self.start)
    }

    fn deliver(&mut self, from: SocketAddr, to: SocketAddr, bytes: &[u8]) {
        let now = self.now;
        if to == addr(0) {
            let _ = self.host.handle_datagram(now, from, bytes);
        } else if let Some((_, j)) = self.joiners.iter_mut().find(|(a, _)| *a == to) {
            let _ = j.handle_datagram(now, from, bytes);
        }
    }

    fn step(&mut self) -> Vec<(SocketAddr, Transmit)> {
        let now = self.now;
        let mut out = Vec::new();
        self.host.handle_timeout(now);
        while let Some(t) = self.host.poll_transmit(now) {
            out.push((addr(0), t));
        }
        while let Some(e) = self.host.poll_event() {
            self.host_events.push(e);
        }
        for (a, j) in &mut self.joiners {
            j.handle_timeout(now);
            while let Some(t) = j.poll_transmit(now) {
                out.push((*a, t));
            }
            while let Some(e) = j.poll_event() {
                self.join_events.push((*a, e));
            }
        }
        out
    }

    fn poll_timeout(&self) -> Option<Instant> {
        std::iter::once(self.host.poll_timeout())
            .chain(self.joiners.iter().map(|(_, j)| j.poll_timeout()))
            .flatten()
            .min()
    }
}

fn cfg() -> HostConfig {
    HostConfig::new(0xfeed_beef, [42; 32], 59.92)
}

#[test]
fn joiner_gets_welcome_and_exact_state_over_a_lossy_link() {
    let state = random_state(1 << 20, 1);
    let mut sim = Sim::new(cfg(), state.clone(), LOSSY);
    let mut mine = info("ana");
    mine.options[1].1 = "pal".into();
    let a = sim.join(1, mine, None);
    assert!(sim.run_until(Duration::from_secs(30), |s| s.settled(a)));
    let took = sim.now - sim.start;
    let got = sim.ready(a).expect("ready").clone();
    assert_eq!(got.payload.state, state);
    assert_eq!(got.payload.sram, vec![0xaa; 2048]);
    assert_eq!(got.payload.options, info("host").options);
    assert_eq!(
        (got.slot, got.session, got.fps),
        (Some(PeerId(1)), 0xfeed_beef, 59.92)
    );
    assert_eq!(
        got.players,
        [
            (PeerId(0), "host".to_string()),
            (PeerId(1), "ana".to_string())
        ]
        .into_iter()
        .collect::<crate::lockstep::Roster>()
    );
    assert_eq!(
        got.option_diffs
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>(),
        vec!["core option genesis_plus_gx_region: host has auto, you had pal (using the host's)"]
    );
    // The host learns it too (the final ack may need a resend).
    assert!(sim.run_until(Duration::from_secs(40), |s| s.host.all_ready()));
    assert!(matches!(
        sim.host_events[0],
        HostEvent::Admitted {
            slot: Slot::Player(PeerId(1)),
            ..
        }
    ));
    assert!(sim.host_events.contains(&HostEvent::Ready {
        slot: Slot::Player(PeerId(1))
    }));
    eprintln!("1 MiB over {LOSSY}: ready after {took:?} simulated");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn four_mib_with_quarter_loss_transfers_in_a_few_seconds() {
    for (netsim, limit) in [("loss=25%", 3.0), ("delay=40ms,jitter=10ms,loss=25%", 8.0)] {
        let state = random_state(4 << 20, 2);
        let mut sim = Sim::new(cfg(), state.clone(), netsim);
        let a = sim.join(1, info("ana"), None);
        assert!(sim.run_until(Duration::from_secs(60), |s| s.settled(a)));
        assert_eq!(sim.ready(a).expect("ready").payload.state, state);
        let took = (sim.now - sim.start).as_secs_f64();
        let stats = {
            sim.run_until(Duration::from_secs(70), |s| s.host.all_ready());
            sim.host.stats()
        };
        eprintln!(
            "4 MiB over {netsim}: {took:.2} s simulated, {} chunks sent, {} resent",
            stats.chunks_sent, stats.chunks_resent
        );
        assert!(took < limit, "{netsim}: {took} s");
    }
}

#[test]
fn each_mismatch_is_refused_naming_both_sides() {
    type Edit = fn(&mut SessionInfo);
    let cases: Vec<(Edit, &str)> = vec![
        (
            |i| {
                i.content_name = "other.md".into();
                i.content_hash = Some(0xdead);
            },
            "content differs: host has airstriker.md (xxh3 1a2b3c4d5e6f7081), you have other.md (xxh3 000000000000dead)",
        ),
        (
            |i| i.core_name = "PicoDrive".into(),
            "core differs: host runs Genesis Plus GX, you run PicoDrive",
        ),
        (
            |i| i.core_version = "v1.7.3".into(),
            "core version differs: host runs Genesis Plus GX v1.7.4, you run Genesis Plus GX v1.7.3",
        ),
    ];
    for (edit, want) in cases {
        let mut sim = Sim::new(cfg(), vec![1; 1000], LOSSY);
        let mut mine = info("bob");
        edit(&mut mine);
        let a = sim.join(1, mine, None);
        assert!(sim.run_until(Duration::from_secs(10), |s| s.settled(a)));
        assert_eq!(sim.failure(a), Some(&SessionError::Refused(want.into())));
        assert!(sim.host.players().len() == 1, "nobody admitted");
        assert!(matches!(&sim.host_events[0], HostEvent::Refused { reason, .. } if reason == want));
    }
}

#[test]
fn option_values_differing_is_not_a_refusal() {
    let mut sim = Sim::new(cfg(), vec![1; 1000], "");
    let mut mine = info("bob");
    mine.options.clear();
    let a = sim.join(1, mine, None);
    assert!(sim.run_until(Duration::from_secs(10), |s| s.settled(a)));
    assert_eq!(sim.ready(a).unwrap().option_diffs.len(), 2);
}

#[test]
fn password_is_checked_by_challenge_and_never_sent() {
    let secret = "correct horse battery";
    let mut c = cfg();
    c.password = Some(secret.into());
    let mut sim = Sim::new(c, vec![7; 5000], LOSSY);
    let right = sim.join(1, info("ana"), Some(secret));
    let wrong = sim.join(2, info("bob"), Some("incorrect horse"));
    let none = sim.join(3, info("cy"), None);
    assert!(sim.run_until(Duration::from_secs(20), |s| {
        s.settled(right) && s.settled(wrong) && s.settled(none)
    }));
    assert_eq!(sim.ready(right).unwrap().payload.state, vec![7; 5000]);
    assert_eq!(
        sim.failure(wrong),
        Some(&SessionError::Refused("wrong password".into()))
    );
    assert!(
        matches!(sim.failure(none), Some(SessionError::Refused(r)) if r.starts_with("wrong password")),
        "{:?}",
        sim.failure(none)
    );
    let needle = secret.as_bytes();
    assert!(
        sim.net.wire.iter().any(|(_, _, b)| b[3] == 0x02),
        "a challenge was sent"
    );
    for (_, _, bytes) in &sim.net.wire {
        assert!(!bytes.windows(needle.len()).any(|w| w == needle));
        assert!(!bytes.windows(9).any(|w| w == b"incorrect"));
    }
}

#[test]
fn lobby_fills_up_and_then_refuses() {
    for host_is_player in [true, false] {
        let mut c = cfg();
        c.host_is_player = host_is_player;
        let mut sim = Sim::new(c, vec![3; 3000], LOSSY);
        let fits = if host_is_player { 7 } else { 8 };
        let ins: Vec<_> = (1..=fits)
            .map(|i| sim.join(i, info(&format!("p{i}")), None))
            .collect();
        assert!(sim.run_until(Duration::from_secs(20), |s| ins
            .iter()
            .all(|a| s.settled(*a))));
        let mut slots: Vec<u8> = ins
            .iter()
            .map(|a| sim.ready(*a).unwrap().slot.unwrap().0)
            .collect();
        slots.sort();
        let first = host_is_player as u8;
        assert_eq!(slots, (first..8).collect::<Vec<_>>());
        let late = sim.join(20, info("late"), None);
        assert!(sim.run_until(Duration::from_secs(30), |s| s.settled(late)));
        assert_eq!(
            sim.failure(late),
            Some(&SessionError::Refused(
                "session is full: all 8 seats are taken (you can watch it with `framelock \
                 spectate`)"
                    .into()
            ))
        );
    }
}

#[test]
fn resent_hellos_keep_their_slot() {
    let mut sim = Sim::new(cfg(), vec![3; 3000], "dup=50%");
    let a = sim.join(1, info("ana"), None);
    let hello = sim.joiners[0].1.hello();
    for _ in 0..5 {
        let now = sim.now;
        assert_eq!(sim.host.handle_datagram(now, a, &hello), Handled::Taken);
    }
    assert!(sim.run_until(Duration::from_secs(10), |s| s.settled(a)));
    assert_eq!(sim.ready(a).unwrap().slot, Some(PeerId(1)));
    assert_eq!(sim.host.players().len(), 2);
    let joined = sim
        .host_events
        .iter()
        .filter(|e| matches!(e, HostEvent::Admitted { .. }))
        .count();
    assert_eq!(joined, 1);
}

#[test]
fn other_protocol_versions_get_a_readable_refusal() {
    let mut sim = Sim::new(cfg(), vec![3; 3000], "");
    let mut hello = Msg::Hello(msg::Hello {
        core_name: "x".into(),
        core_version: "y".into(),
        content_name: String::new(),
        content_hash: None,
        player_name: "old".into(),
        room: String::new(),
        watch: false,
        no_share: false,
        key: [0x4b; 32],
        auth: msg::Auth::None,
        cookie: [0; 16],
        seat_key: [0; 16],
    })
    .encode(0);
    hello[2] = PROTOCOL_VERSION + 1;
    let now = sim.now;
    assert_eq!(
        sim.host.handle_datagram(now, addr(9), &hello),
        Handled::Taken
    );
    let t = sim.host.poll_transmit(now).unwrap();
    assert_eq!(t.to, addr(9));
    let text = msg::refuse_text(&t.bytes[8..]).unwrap();
    assert_eq!(
        text,
        format!(
            "protocol version differs: host speaks {PROTOCOL_VERSION}, you speak {}",
            PROTOCOL_VERSION + 1
        )
    );

    // And a joiner reads a Refuse from a host of another version.
    let mut j = JoinSession::new(now, JoinConfig::new(addr(0), info("j")));
    let mut refuse =
        Msg::Refuse("protocol version differs: host speaks 9, you speak 1".into()).encode(0);
    refuse[2] = 9;
    assert_eq!(j.handle_datagram(now, addr(0), &refuse), Handled::Taken);
    assert!(
        matches!(j.poll_event(), Some(JoinEvent::Failed(SessionError::Refused(r))) if r.contains("host speaks 9"))
    );
}

use super::msg::{self, Msg};

#[test]
fn hostile_datagrams_do_not_disturb_a_transfer_and_are_counted() {
    let state = random_state(300_000, 4);
    let mut sim = Sim::new(cfg(), state.clone(), "loss=10%,delay=5ms");
    let a = sim.join(1, info("ana"), None);
    let mut rng = SmallRng::seed_from_u64(5);
    let mut sent = 0u64;
    let wrong_session = |kind: u8, rng: &mut SmallRng| {
        let mut d = vec![b'F', b'L', PROTOCOL_VERSION, kind];
        d.extend_from_slice(&rng.gen_range(1u32..0xfeed_0000).to_le_bytes());
        d.extend((0..rng.gen_range(0..40)).map(|_| rng.gen::<u8>()));
        d
    };
    // Garbage between simulation steps until the joiner is ready.
    for round in 0..2000 {
        for _ in 0..20 {
            let now = sim.now;
            let mut junk = match rng.gen_range(0..4) {
                0 => wrong_session(0x06, &mut rng),
                1 => wrong_session(0x05, &mut rng),
                2 => vec![b'F', b'L', PROTOCOL_VERSION, 0x06, 0, 0],
                _ => (0..rng.gen_range(0..100))
                    .map(|_| rng.gen::<u8>())
                    .collect(),
            };
            if junk.len() >= 4 && junk[3] == 0x01 {
                junk[3] = 0x06; // never a Hello: that would be a join attempt, not garbage
            }
            let _ = sim.host.handle_datagram(now, addr(66), &junk);
            // Garbage "from the host" to the joiner, wrong session or malformed.
            let _ = sim.joiners[0]
                .1
                .handle_datagram(now, addr(0), &wrong_session(0x05, &mut rng));
            sent += 1;
        }
        if sim.run_until(Duration::from_millis(20 * (round + 1)), |s| s.settled(a)) {
            break;
        }
    }
    assert_eq!(sim.ready(a).expect("ready").payload.state, state);
    assert!(
        sim.host.stats().dropped_invalid >= sent,
        "{:?}",
        sim.host.stats()
    );
    // Before the Welcome they are invalid; after it, no tag is the host's.
    let j = sim.joiners[0].1.stats();
    assert_eq!(j.dropped_invalid + j.dropped_auth, sent);
    assert!(j.dropped_auth > 0, "{j:?}");
}

#[test]
fn silence_times_out_on_both_sides() {
    // No host at all.
    let now = Instant::now();
    let mut j = JoinSession::new(now, JoinConfig::new(addr(0), info("j")));
    let mut t = now;
    let mut hellos = 0;
    while j.poll_event().is_none() && t < now + Duration::from_secs(10) {
        j.handle_timeout(t);
        while j.poll_transmit(t).is_some() {
            hellos += 1;
        }
        t = j
            .poll_timeout()
            .unwrap_or(t + Duration::from_millis(10))
            .max(t);
        t += Duration::from_micros(1);
    }
    assert!(hellos >= 19, "hello resent every 250 ms: {hellos}");
    let mut j2 = JoinSession::new(now, JoinConfig::new(addr(0), info("j")));
    j2.handle_timeout(now + HANDSHAKE_TIMEOUT);
    assert_eq!(
        j2.poll_event(),
        Some(JoinEvent::Failed(SessionError::NoAnswer {
            addr: addr(0),
            secs: 5
        }))
    );
    assert_eq!(
        SessionError::NoAnswer {
            addr: addr(0),
            secs: 5
        }
        .to_string(),
        "no answer from 127.0.0.1:40000 after 5 s: is the host running and the port open?"
    );

    // A joiner that vanishes mid-transfer is dropped by the host.
    let mut sim = Sim::new(cfg(), random_state(200_000, 3), "delay=10ms");
    let a = sim.join(1, info("ana"), None);
    let ana = Slot::Player(PeerId(1));
    assert!(sim.run_until(Duration::from_secs(5), |s| s
        .host
        .transfer_progress(ana)
        .is_some_and(|p| p.done > 0)));
    // Its progress is in packed bytes, as the joiner counts its own.
    let progress = sim.host.transfer_progress(ana).unwrap();
    assert_eq!(progress.total, sim.host.packed_len());
    assert!(progress.done < progress.total, "{progress:?}");
    assert_eq!(sim.host.transfer_progress(Slot::Player(PeerId(2))), None);
    sim.joiners.clear();
    let left = HostEvent::Left {
        slot: Slot::Player(PeerId(1)),
        reason: SessionLeftReason::Timeout,
    };
    assert!(sim.run_until(Duration::from_secs(20), |s| s.host_events.contains(&left)));
    assert!(sim.host.slot_of(a).is_none());
}

#[test]
fn bye_works_both_ways() {
    let mut sim = Sim::new(cfg(), vec![5; 5000], "");
    let a = sim.join(1, info("ana"), None);
    let b = sim.join(2, info("bob"), None);
    assert!(sim.run_until(Duration::from_secs(5), |s| s.settled(a) && s.settled(b)));
    let slot = Slot::Player(sim.ready(a).unwrap().slot.unwrap());
    sim.joiners[0].1.leave("quit");
    assert!(
        sim.run_until(Duration::from_secs(5), |s| s.host_events.contains(
            &HostEvent::Left {
                slot,
                reason: SessionLeftReason::Bye("quit".into())
            }
        ))
    );
    sim.host.shutdown("host closed the session");
    assert!(sim.run_until(Duration::from_secs(5), |s| s.failure(b).is_some()));
    assert_eq!(
        sim.failure(b),
        Some(&SessionError::HostLeft("host closed the session".into()))
    );
}

#[test]
fn a_running_game_welcomes_a_late_joiner_with_a_state_of_the_running_machine() {
    let mut sim = Sim::new(cfg(), vec![5; 5000], "");
    sim.host.close_lobby();
    let a = sim.join(1, info("ana"), None);
    // Admitted, but not welcomed before there is a state to send.
    assert!(
        sim.run_until(Duration::from_secs(2), |s| s.host_events.contains(
            &HostEvent::StateWanted {
                slot: Slot::Player(PeerId(1))
            }
        ))
    );
    assert!(sim.ready(a).is_none() && sim.failure(a).is_none());
    // Its Hellos keep being answered meanwhile, so it waits past its handshake timeout.
    sim.run_until(Duration::from_secs(8), |_| false);
    assert!(sim.failure(a).is_none(), "{:?}", sim.failure(a));
    let now = sim.now();
    sim.host
        .handle_state(
            now,
            Slot::Player(PeerId(1)),
            Frame(1234),
            vec![7; 3000],
            Vec::new(),
        )
        .unwrap();
    assert!(sim.run_until(Duration::from_secs(15), |s| s.settled(a)));
    let start = sim.ready(a).expect("welcomed");
    assert_eq!((start.slot, start.frame), (Some(PeerId(1)), Frame(1234)));
    assert_eq!(start.payload.state, vec![7; 3000]);
    // A spectator takes no seat, and waits for a state of its own.
    let w = sim.watch(2, info("eve"));
    assert!(
        sim.run_until(Duration::from_secs(20), |s| s.host_events.contains(
            &HostEvent::StateWanted {
                slot: Slot::Spectator(SpectatorId(16))
            }
        ))
    );
    let now = sim.now();
    sim.host
        .handle_state(
            now,
            Slot::Spectator(SpectatorId(16)),
            Frame(1300),
            vec![8; 100],
            Vec::new(),
        )
        .unwrap();
    assert!(sim.run_until(Duration::from_secs(30), |s| s.settled(w)));
    let start = sim.ready(w).expect("welcomed");
    assert_eq!((start.slot, start.frame), (None, Frame(1300)));
}

#[test]
fn the_host_measures_each_joiners_round_trip_despite_resent_welcomes() {
    // At 250 ms the joiner resends its Hello (every 250 ms) before the Welcome arrives, so
    // the host sends the Welcome twice: the first StateAck must not count as a round trip
    // from the second copy (that would read about 0 ms). 1 KiB (one chunk) like the
    // built-in game, and 100 KiB.
    for (len, netsim) in [
        (1024, "delay=125ms"),
        (100_000, "delay=125ms"),
        (1024, "delay=125ms,jitter=20ms,loss=25%"),
        (1024, "delay=10ms"),
        (1024, "delay=1000ms"),
        (100_000, "delay=1000ms,loss=25%"),
    ] {
        let want = match netsim.split(',').next() {
            Some("delay=10ms") => 20.0,
            Some("delay=1000ms") => 2000.0,
            _ => 250.0,
        };
        // With the Retry round trip, seed 100's loss pattern on the 1000 ms, 25% loss link
        // leaves the transfer silent past the 5 s handshake timeout (the chunk resend
        // backoff, not the round trip measured here); seeds 1..=8 all finish.
        let mut sim = Sim::seeded(cfg(), random_state(len, 7), netsim, 1);
        sim.join(1, info("ana"), None);
        assert!(sim.run_until(Duration::from_secs(30), |s| s.host.all_ready()));
        let players = sim.host.players();
        assert_eq!(players[0].rtt, None, "the host's own player");
        let rtt = players[1].rtt.expect("a measured round trip").as_secs_f64() * 1000.0;
        eprintln!("{len} bytes over {netsim}: host measured {rtt:.1} ms");
        assert!(
            rtt >= want * 0.8 && rtt <= want + 50.0,
            "{len} bytes over {netsim}: {rtt:.1} ms, want about {want}"
        );
    }
}

/// A lobby of `players` in which ana and bob have the start state and wait for the others.
fn ana_and_bob_ready(players: u8) -> (Sim, SocketAddr, SocketAddr) {
    let mut config = cfg();
    config.max_players = players;
    let mut sim = Sim::new(config, vec![5; 5000], "delay=20ms");
    let a = sim.join(1, info("ana"), None);
    let b = sim.join(2, info("bob"), None);
    assert!(sim.run_until(Duration::from_secs(5), |s| s.settled(a)
        && s.settled(b)
        && s.host.all_ready()));
    (sim, a, b)
}

/// A lockstep CTRL as the session layer sees one: just its header (a running player).
fn bare_ctrl(session: u32) -> Vec<u8> {
    let mut ctrl = Vec::new();
    crate::wire::Header {
        kind: crate::wire::Kind::Ctrl,
        session,
    }
    .write(&mut ctrl);
    ctrl
}

/// `bytes` tagged as the joiner at `who` tags what it sends.
fn sealed_by(sim: &Sim, who: SocketAddr, mut bytes: Vec<u8>) -> Vec<u8> {
    let (_, j) = sim.joiners.iter().find(|(x, _)| *x == who).expect("joiner");
    j.seal(&mut bytes);
    bytes
}

#[test]
fn the_lobby_keeps_ready_joiners_informed_and_drops_silent_ones() {
    // Four players: ana and bob have the start state and wait for the fourth. Ana's
    // lockstep client sends CTRLs while it waits; bob's process died. The lobby tells ana
    // every `LOBBY_INTERVAL` that it is there and how many are in (so her wait is not taken
    // for a lost host), and drops bob after `READY_TIMEOUT` of silence, freeing his slot
    // (bob is told he was dropped: he may come back).
    let (mut sim, a, b) = ana_and_bob_ready(4);
    let (ready_a, ready_b) = (sim.ready(a).unwrap().clone(), sim.ready(b).unwrap().clone());
    let ctrl = sealed_by(&sim, a, bare_ctrl(ready_a.session));
    sim.joiners.retain(|(x, _)| *x == a);
    let died = sim.now;
    let mut dropped_at = None;
    for _ in 0..120 {
        let now = sim.now;
        assert_eq!(sim.host.handle_datagram(now, a, &ctrl), Handled::Taken);
        let until = now - sim.start + Duration::from_millis(100);
        sim.run_until(until, |_| false);
        let left = sim.host_events.iter().any(|e| {
            matches!(e, HostEvent::Left { slot, reason: SessionLeftReason::Dropped(_) }
                if slot.player() == ready_b.slot)
        });
        if dropped_at.is_none() && left {
            dropped_at = Some(sim.now - died);
        }
    }
    let dropped_at = dropped_at.expect("the silent joiner was never dropped");
    assert!(
        dropped_at >= READY_TIMEOUT && dropped_at < READY_TIMEOUT + Duration::from_millis(300),
        "{dropped_at:?}"
    );
    // Ana waited 12 s and is still in, and heard the count go from 3 of 4 to 2 of 4.
    assert!(sim.host.slot_of(a).is_some());
    assert!(sim.host.slot_of(b).is_none());
    let waiting: Vec<(u8, u8)> = sim
        .join_events
        .iter()
        .filter_map(|(x, e)| match e {
            JoinEvent::Waiting { ready, want } if *x == a => Some((*ready, *want)),
            _ => None,
        })
        .collect();
    assert!(waiting.ends_with(&[(3, 4), (2, 4)]), "{waiting:?}");
    let heard = sim.joiners[0].1.last_heard().unwrap();
    assert!(sim.now - heard <= LOBBY_INTERVAL + Duration::from_millis(50));
    // The freed slot goes to the next joiner.
    let c = sim.join(3, info("cy"), None);
    assert!(
        sim.run_until(sim.now - sim.start + Duration::from_secs(5), |s| s
            .settled(c))
    );
    assert_eq!(sim.ready(c).map(|s| s.slot), Some(ready_b.slot));
}

#[test]
fn noise_from_the_hosts_address_is_no_other_version() {
    // Something that is not a framelock host answers at the address (another service, a
    // UDP echo): random bytes are dropped, whatever their first byte, and when the host
    // never answers properly the joiner says that something else answered there.
    let now = Instant::now();
    let mut j = JoinSession::new(now, JoinConfig::new(addr(0), info("j")));
    let mut rng = SmallRng::seed_from_u64(9);
    let mut sent = 0u32;
    let mut t = now;
    while t < now + HANDSHAKE_TIMEOUT + Duration::from_millis(100) {
        j.handle_timeout(t);
        while let Some(hello) = j.poll_transmit(t) {
            // An echo of our own Hello, then random bytes of random length.
            assert!(matches!(
                j.handle_datagram(t, addr(0), &hello.bytes),
                Handled::Dropped(_)
            ));
            let junk: Vec<u8> = (0..rng.gen_range(5..60)).map(|_| rng.gen()).collect();
            assert!(
                matches!(j.handle_datagram(t, addr(0), &junk), Handled::Dropped(_)),
                "{junk:?}"
            );
            sent += 2;
        }
        if let Some(ev) = j.poll_event() {
            assert_eq!(
                ev,
                JoinEvent::Failed(SessionError::NotFramelock {
                    addr: addr(0),
                    datagrams: sent,
                })
            );
            assert_eq!(
                SessionError::NotFramelock {
                    addr: addr(0),
                    datagrams: 3
                }
                .to_string(),
                "127.0.0.1:40000 answered with 3 datagram(s) that are not a framelock \
                 host's: is that the host's address and port?"
            );
            return;
        }
        t += Duration::from_millis(10);
    }
    panic!("the joiner never gave up");
}

#[test]
fn a_joiners_name_cannot_drive_the_hosts_terminal() {
    // ESC sequences would clear the host's screen, a newline would forge a log line.
    let mut sim = Sim::new(cfg(), vec![1; 100], "");
    let a = sim.join(1, info("\u{1b}[2J\u{1b}[31mEVIL\n FAKE joined\u{7}"), None);
    let b = sim.join(2, info("\u{1b}\n\t"), None);
    assert!(sim.run_until(Duration::from_secs(5), |s| s.settled(a) && s.settled(b)));
    let name_of = |x: SocketAddr| {
        let p = sim.host.players().into_iter().find(|p| p.addr == Some(x));
        p.map(|p| (p.slot, p.name)).unwrap()
    };
    let (_, evil) = name_of(a);
    assert_eq!(evil, "[2J[31mEVIL  FAKE joined");
    // Nothing left: the slot's default name.
    let (slot, blank) = name_of(b);
    assert_eq!(blank, slot.to_string());
    // Joiners are told the cleaned name (the Welcome lists the players in so far).
    let told = &sim.ready(a).unwrap().players;
    assert!(
        told.iter().any(|(_, n)| n == "[2J[31mEVIL  FAKE joined"),
        "{told:?}"
    );
}

#[test]
fn joiners_that_load_are_kept_until_they_run_or_the_loading_limit() {
    // Three players: ana and bob have the start state and load their content (or open their
    // windows) while the lobby waits for the third. Neither runs yet, so no CTRL comes: they
    // say `Loading` every 250 ms instead, which keeps them in past `READY_TIMEOUT`. Ana runs
    // after 5 s (her CTRLs speak for her from then on). Bob never does: he falls silent at
    // `LOADING_LIMIT`, and so does the host's patience with one that would not.
    let (mut sim, a, b) = ana_and_bob_ready(3);
    let ready = sim.now;
    let elapsed = |sim: &Sim| sim.now - sim.start;
    let count = |sim: &Sim, who: SocketAddr| {
        sim.net
            .wire
            .iter()
            .filter(|(from, _, d)| *from == who && d[3] == crate::wire::Kind::Loading as u8)
            .count()
    };
    let until = elapsed(&sim) + Duration::from_secs(5);
    sim.run_until(until, |_| false);
    assert!(sim.host.slot_of(a).is_some() && sim.host.slot_of(b).is_some());
    assert!(
        !sim.host_events
            .iter()
            .any(|e| matches!(e, HostEvent::Left { .. })),
        "{:?}",
        sim.host_events
    );
    // One every 250 ms, each a sign of life the host reports with how long it has been.
    let (sent_a, sent_b) = (count(&sim, a), count(&sim, b));
    assert!((18..=21).contains(&sent_a), "{sent_a}");
    assert!((18..=21).contains(&sent_b), "{sent_b}");
    let slot_a = sim.ready(a).unwrap().slot;
    let latest = |sim: &Sim, slot: Option<PeerId>| {
        sim.host_events.iter().rev().find_map(|e| match e {
            HostEvent::Loading { slot: s, since } if s.player() == slot => Some(*since),
            _ => None,
        })
    };
    let since = latest(&sim, slot_a).expect("the host heard ana load");
    assert!(
        since > Duration::from_millis(4600) && since < Duration::from_millis(5300),
        "{since:?}"
    );

    // Ana runs: her lockstep client's CTRLs come every 100 ms, and `Loading` stops.
    let session = sim.ready(a).unwrap().session;
    let ctrl = sealed_by(&sim, a, bare_ctrl(session));
    let loading_b = sealed_by(&sim, b, msg::Msg::Loading.encode(session));
    sim.joiners
        .iter_mut()
        .find(|(x, _)| *x == a)
        .unwrap()
        .1
        .end_loading();
    let sent_a = count(&sim, a);
    // Bob ignores his limit (an older or broken build): the host ignores him past it.
    let slot_b = sim.ready(b).unwrap().slot;
    let mut dropped_at = None;
    while elapsed(&sim) < Duration::from_secs(40) {
        let now = sim.now;
        assert_eq!(sim.host.handle_datagram(now, a, &ctrl), Handled::Taken);
        if now - ready > LOADING_LIMIT && sim.host.slot_of(b).is_some() {
            assert_eq!(sim.host.handle_datagram(now, b, &loading_b), Handled::Taken);
        }
        let until = elapsed(&sim) + Duration::from_millis(100);
        sim.run_until(until, |_| false);
        let left = HostEvent::Left {
            slot: Slot::Player(slot_b.unwrap()),
            reason: SessionLeftReason::SlowStart,
        };
        if dropped_at.is_none() && sim.host_events.contains(&left) {
            dropped_at = Some(sim.now - ready);
        }
    }
    assert_eq!(count(&sim, a), sent_a, "ana still said she was loading");
    // Bob said it for `LOADING_LIMIT`, then nothing, and was dropped `READY_TIMEOUT` later.
    let sent_b = count(&sim, b);
    let want = (LOADING_LIMIT.as_millis() / LOADING_INTERVAL.as_millis()) as usize;
    assert!(sent_b + 1 >= want && sent_b <= want, "{sent_b} of {want}");
    let dropped_at = dropped_at.expect("bob was never dropped");
    let due = LOADING_LIMIT + READY_TIMEOUT;
    assert!(
        dropped_at >= due - LOADING_INTERVAL && dropped_at < due + Duration::from_millis(300),
        "{dropped_at:?}"
    );
    assert_eq!(
        SessionLeftReason::SlowStart.to_string(),
        "was still loading 30 s after it had the start state"
    );
    assert!(sim.host.slot_of(a).is_some(), "ana was dropped");
    assert!(
        matches!(sim.failure(b), Some(SessionError::HostLeft(r))
            if r == "dropped from the lobby: still loading 30 s after the start state"),
        "{:?}",
        sim.failure(b)
    );
}

#[test]
fn spectators_need_the_password_and_are_capped() {
    let mut c = cfg();
    c.password = Some("hunter2".into());
    c.max_spectators = 1;
    let mut sim = Sim::new(c, vec![5; 5000], "");
    sim.host.close_lobby();
    let nopass = sim.watch_with(1, info("eve"), None);
    let wrong = sim.watch_with(2, info("mallory"), Some("guess"));
    assert!(sim.run_until(Duration::from_secs(5), |s| s.settled(nopass)
        && s.settled(wrong)));
    assert!(
        matches!(sim.failure(nopass), Some(SessionError::Refused(r)) if r.starts_with("wrong password")),
        "{:?}",
        sim.failure(nopass)
    );
    assert_eq!(
        sim.failure(wrong),
        Some(&SessionError::Refused("wrong password".into()))
    );
    let ok = sim.watch_with(3, info("ann"), Some("hunter2"));
    assert!(
        sim.run_until(Duration::from_secs(10), |s| s.host_events.iter().any(
            |e| matches!(
                e,
                HostEvent::StateWanted {
                    slot: Slot::Spectator(SpectatorId(16))
                }
            )
        ))
    );
    // The one seat for a spectator is taken: the next is told so.
    let more = sim.watch_with(4, info("bo"), Some("hunter2"));
    assert!(sim.run_until(Duration::from_secs(15), |s| s.settled(more)));
    assert_eq!(
        sim.failure(more),
        Some(&SessionError::Refused(
            "no room for another spectator: 1 watching, the most this session takes \
             (--max-spectators 1)"
                .into()
        ))
    );
    assert!(sim.failure(ok).is_none());
}

/// Datagrams altered on the way (bit flips, cuts, junk appended), a Hello's or Welcome's
/// public key among them: the two ends never settle on different keys. A Welcome whose tag
/// does not match the keys it names is not taken, and the next Hello rekeys the seat.
#[test]
fn joins_over_a_link_that_alters_datagrams_end_with_both_sides_keyed_alike() {
    let state = random_state(40_000, 9);
    for seed in 0..6u64 {
        let link = "corrupt=25%,loss=5%,delay=5ms";
        let mut sim = Sim::seeded(cfg(), state.clone(), link, 1000 * seed);
        let mut joiners = Vec::new();
        for i in 1..4u16 {
            let mut c = JoinConfig::new(addr(0), info(&format!("p{i}")));
            c.entropy = [(seed as u8) << 4 | i as u8; 32];
            sim.joiners.push((addr(i), JoinSession::new(sim.now, c)));
            joiners.push(addr(i));
        }
        let all = |s: &Sim| joiners.iter().all(|a| s.settled(*a));
        let done = sim.run_until(Duration::from_secs(30), all);
        let stuck: Vec<_> = joiners
            .iter()
            .filter(|a| !sim.settled(**a))
            .map(|a| {
                (
                    a,
                    sim.joiners.iter().find(|(x, _)| x == a).unwrap().1.stats(),
                )
            })
            .collect();
        assert!(done, "seed {seed}: {stuck:?} {:?}", sim.host.stats());
        for a in &joiners {
            let why = sim.failure(*a);
            let ready = sim
                .ready(*a)
                .unwrap_or_else(|| panic!("seed {seed}: {a}: {why:?}"));
            assert_eq!(ready.payload.state, state, "seed {seed}");
        }
        // The start state's acks reach the host through the tag check: it has every
        // joiner ready, and what it sends each one now opens there.
        let limit = sim.now - sim.start + Duration::from_secs(10);
        assert!(
            sim.run_until(limit, |s| s.host.all_ready()),
            "seed {seed}: {:?}",
            sim.host.players()
        );
        for a in &joiners {
            let mut probe = Msg::Lobby { ready: 1, want: 1 }.encode(sim.host.session_id());
            sim.host.seal(*a, &mut probe);
            let (_, j) = sim.joiners.iter().find(|(x, _)| x == a).unwrap();
            assert!(
                j.open(&probe).is_some(),
                "seed {seed}: {a} keyed differently"
            );
        }
        let altered: u64 = sim.net.links().map(|c| c.stats().corrupted).sum();
        assert!(altered > 20, "seed {seed}: {altered}");
    }
}

/// Joiner `k`'s Hello once it echoes the host's cookie (its first one was answered with a
/// Retry, handed to it here).
fn proven_hello(sim: &mut Sim, k: usize, at: SocketAddr) -> Vec<u8> {
    let now = sim.now;
    let first = sim.joiners[k].1.hello();
    assert_eq!(sim.host.handle_datagram(now, at, &first), Handled::Taken);
    let retry = sim.host.poll_transmit(now).unwrap().bytes;
    assert!(crate::session::is_kind(&retry, crate::wire::Kind::Retry));
    assert_eq!(
        sim.joiners[k].1.handle_datagram(now, addr(0), &retry),
        Handled::Taken
    );
    while sim.joiners[k].1.poll_transmit(now).is_some() {}
    sim.joiners[k].1.hello()
}

/// The two ways a public key can be altered on the way, one at a time: the Hello's (the
/// host makes keys the joiner does not have, so the joiner refuses the Welcome's tag and its
/// next Hello rekeys the seat) and the Welcome's (the joiner refuses it and takes the next).
#[test]
fn an_altered_public_key_costs_a_resend_not_the_session() {
    let state = random_state(5_000, 3);
    let mut sim = Sim::new(cfg(), state.clone(), "delay=5ms");
    let a = sim.join(1, info("ana"), None);
    let now = sim.now;
    let hello = proven_hello(&mut sim, 0, a);
    let Ok((_, Msg::Hello(h))) = Msg::decode(&hello) else {
        panic!("a Hello")
    };
    let at = hello.windows(32).position(|w| w == h.key).unwrap();
    let mut altered = hello.clone();
    altered[at + 3] ^= 0x10;
    assert_eq!(sim.host.handle_datagram(now, a, &altered), Handled::Taken);
    let welcome = sim.host.poll_transmit(now).unwrap().bytes;
    let ana = &mut sim.joiners[0].1;
    assert_eq!(
        ana.handle_datagram(now, addr(0), &welcome),
        Handled::Dropped(Dropped::Unauthentic)
    );
    assert_eq!(ana.session_id(), 0, "taken for welcomed");
    assert!(sim.run_until(Duration::from_secs(10), |s| s.settled(a)));
    assert_eq!(sim.ready(a).expect("ready").payload.state, state);

    let b = sim.join(2, info("bob"), None);
    let now = sim.now;
    let hello = proven_hello(&mut sim, 1, b);
    assert_eq!(sim.host.handle_datagram(now, b, &hello), Handled::Taken);
    let welcome = sim.host.poll_transmit(now).unwrap().bytes;
    let body = &welcome[..welcome.len() - crate::wire::keys::TAG_LEN];
    let Ok((_, Msg::Welcome(w))) = Msg::decode(body) else {
        panic!("a Welcome")
    };
    let at = welcome.windows(32).position(|x| x == w.key).unwrap();
    let mut altered = welcome.clone();
    altered[at + 30] ^= 0x01;
    let bob = &mut sim.joiners[1].1;
    assert_eq!(
        bob.handle_datagram(now, addr(0), &altered),
        Handled::Dropped(Dropped::Unauthentic)
    );
    assert_eq!(bob.handle_datagram(now, addr(0), &welcome), Handled::Taken);
    assert!(sim.run_until(Duration::from_secs(20), |s| s.settled(b)));
    assert_eq!(sim.ready(b).expect("ready").payload.state, state);
    assert_eq!(sim.joiners[1].1.stats().dropped_auth, 1);
}
