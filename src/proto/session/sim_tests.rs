//! Host and joiners over a simulated lossy network on simulated time: proves the handshake,
//! the refusals and the start-state transfer without sockets, in milliseconds of real time.
//! The lobby and the running game (`lobby`) and hostile traffic (`hostile`) have files of
//! their own beside this one, sharing its harness.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::{rngs::SmallRng, Rng, RngCore, SeedableRng};

use super::msg::{self, Msg};
use super::*;
use crate::lockstep::{Frame, PeerId, Slot, SpectatorId};
use crate::net::sim::{SimNet, Simulation};
use crate::session::host::{LOBBY_INTERVAL, READY_TIMEOUT};
use crate::wire::PROTOCOL_VERSION;

mod hostile;
mod lobby;

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
