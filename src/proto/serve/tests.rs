//! A dedicated server, room creators and joiners over a simulated lossy network on simulated
//! time: rooms open, fill, play in sync and close; passwords are checked end to end through
//! the server; wrong rooms, floods, forged sources and cross-room datagrams change nothing.
//! A fleet member (`fleet`), hosted rooms (`hosted`) and their recordings (`recordings`)
//! have files of their own beside this one, sharing its harness.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::*;
use crate::lockstep::{self, Frame, Mode};
use crate::net::sim::{SimNet, Simulation};
use crate::session::msg::{Msg, OpenRoom, RoomMsg};
use crate::session::testkit::{info, Game};
use crate::session::{
    Handled, JoinConfig, JoinEvent, JoinSession, OpenEvent, RoomOpener, Seat, SeatEvent,
    StartPayload,
};
use crate::wire::keys::{Keys, Side};
use crate::wire::Transmit;

mod fleet;
mod hosted;
mod recordings;

const SERVER: SocketAddr = SocketAddr::new(
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, 7)),
    7845,
);

fn client_addr(i: usize) -> SocketAddr {
    SocketAddr::from(([198, 51, (i >> 8) as u8, i as u8], 40000))
}

fn open(players: u8, room: &str, password: bool) -> OpenRoom {
    let i = info("creator");
    OpenRoom {
        room: room.into(),
        players,
        start_with: players,
        keyframe_interval: 2,
        mode: None,
        fps: 60.0,
        password,
        core_name: i.core_name,
        core_version: i.core_version,
        content_name: i.content_name,
        content_hash: i.content_hash,
        player_name: "creator".into(),
        raw_len: 0,
        packed_len: 0,
        payload_hash: 0,
        cookie: Default::default(),
        hosted: false,
        locals: Vec::new(),
        no_share: false,
    }
}

/// A player: a room's creator (opener first, then a joiner of its own room) or a joiner.
struct Player {
    addr: SocketAddr,
    opener: Option<RoomOpener>,
    join: Option<JoinSession>,
    password: Option<String>,
    room: String,
    /// Its side of the session once it has the start state.
    seat: Option<Seat>,
    game: Option<Game>,
    /// States received for a resync, as (frame, state).
    states: Vec<(Frame, Vec<u8>)>,
    open_events: Vec<OpenEvent>,
    events: Vec<JoinEvent>,
    seed: u64,
}

struct Net {
    now: Instant,
    start: Instant,
    server: Rooms,
    players: Vec<Player>,
    net: SimNet,
    limit: usize,
    events: Vec<ServeEvent>,
    /// Every datagram that reached the server, and what it sent back, by address.
    to_server: Vec<(SocketAddr, Vec<u8>)>,
    from_server: Vec<Transmit>,
}

impl Net {
    fn new(cfg: ServeConfig, netsim: &str, limit: usize) -> Net {
        let now = Instant::now();
        Net {
            now,
            start: now,
            server: Rooms::new(cfg),
            players: Vec::new(),
            net: SimNet::new(netsim),
            limit,
            events: Vec::new(),
            to_server: Vec::new(),
            from_server: Vec::new(),
        }
    }

    fn player(&mut self, room: &str, password: Option<&str>) -> Player {
        let i = self.players.len();
        Player {
            addr: client_addr(i),
            opener: None,
            join: None,
            password: password.map(str::to_string),
            room: room.into(),
            seat: None,
            game: None,
            states: Vec::new(),
            open_events: Vec::new(),
            events: Vec::new(),
            seed: 11 + i as u64,
        }
    }

    /// A creator that opens `open` with `password`.
    fn create(&mut self, open: OpenRoom, password: Option<&str>) -> usize {
        let mut p = self.player(&open.room.clone(), password);
        let payload = StartPayload {
            options: vec![("lightcycles_speed".into(), "fast".into())],
            state: vec![7; 5000],
            sram: vec![],
        };
        p.opener = Some(RoomOpener::new(self.now, SERVER, open, &payload).unwrap());
        self.players.push(p);
        self.players.len() - 1
    }

    fn step_server(&mut self, out: &mut Vec<(SocketAddr, Transmit)>) {
        let now = self.now;
        self.server.handle_timeout(now);
        self.server.run_jobs(now);
        while let Some(t) = self.server.poll_transmit(now) {
            self.from_server.push(t.clone());
            out.push((SERVER, t));
        }
        while let Some(e) = self.server.poll_event() {
            self.events.push(e);
        }
    }

    fn step_player(&mut self, k: usize, out: &mut Vec<(SocketAddr, Transmit)>) {
        let now = self.now;
        let limit = self.limit;
        let p = &mut self.players[k];
        let from = p.addr;
        if let Some(o) = &mut p.opener {
            o.handle_timeout(now);
            while let Some(t) = o.poll_transmit(now) {
                out.push((from, t));
            }
            while let Some(ev) = o.poll_event() {
                if let OpenEvent::Uploaded { room, .. } = &ev {
                    p.room = room.clone();
                    let pw = p.password.as_deref();
                    p.join = Some(join_session(now, p.addr.port(), room, pw, true, p.seed));
                }
                p.open_events.push(ev);
            }
            if p.join.is_some() {
                p.opener = None;
            }
        }
        if let Some(j) = &mut p.join {
            j.handle_timeout(now);
            while let Some(ev) = j.poll_event() {
                if let JoinEvent::Ready(start) = &ev {
                    let cfg = start.lockstep(lockstep::Config::default());
                    p.game = Some(Game::new(now, cfg, start.slot.expect("a seat"), p.seed));
                }
                p.events.push(ev);
            }
            while let Some(t) = j.poll_transmit(now) {
                out.push((from, t));
            }
            if p.game.is_some() {
                p.seat = p.join.take().map(Seat::new);
            }
        }
        if let Some(seat) = &mut p.seat {
            seat.handle_timeout(now);
            while let Some(ev) = seat.poll_event() {
                match ev {
                    SeatEvent::State { frame, state } => p.states.push((frame, state)),
                    SeatEvent::StateWanted => {
                        // The machine's state: here, who it is and how far it got.
                        let frame = p.game.as_ref().map_or(0, |g| g.frames.len() as u32);
                        let state = format!("{} at {frame}", p.addr).repeat(300).into_bytes();
                        seat.handle_state(now, Frame(frame), state);
                    }
                    SeatEvent::Failed(e) => p.events.push(JoinEvent::Failed(e)),
                    SeatEvent::PasswordChecked { admitted } => {
                        p.events.push(JoinEvent::PasswordChecked { admitted })
                    }
                    SeatEvent::Waiting { ready, want } => {
                        p.events.push(JoinEvent::Waiting { ready, want })
                    }
                    SeatEvent::HostMoved { from, to } => {
                        p.events.push(JoinEvent::HostMoved { from, to })
                    }
                    SeatEvent::Chat(_) => {}
                }
            }
            if let Some(g) = &mut p.game {
                g.timers(now);
                g.tick(now, limit);
                let mut first = false;
                while let Some(Transmit { bytes, .. }) = g.client.poll_transmit(now) {
                    first = true;
                    out.push((from, seat.seal(bytes)));
                }
                if first {
                    seat.end_loading();
                }
            }
            while let Some(t) = seat.poll_transmit(now) {
                out.push((from, t));
            }
        }
    }

    /// The player opened its room, or is joining or in one.
    fn in_room(&self, k: usize) -> bool {
        self.players[k].join.is_some() || self.players[k].seat.is_some()
    }
}

impl Simulation for Net {
    fn net_and_clock(&mut self) -> (&mut SimNet, &mut Instant, Instant) {
        (&mut self.net, &mut self.now, self.start)
    }

    fn deliver(&mut self, from: SocketAddr, to: SocketAddr, bytes: &[u8]) {
        let now = self.now;
        if to == SERVER {
            self.to_server.push((from, bytes.to_vec()));
            self.server.handle_datagram(now, from, bytes);
            return;
        }
        let Some(p) = self.players.iter_mut().find(|p| p.addr == to) else {
            return;
        };
        if let Some(o) = &mut p.opener {
            o.handle_datagram(now, from, bytes);
        }
        if let Some(seat) = &mut p.seat {
            if let Handled::Passed(body) = seat.handle_datagram(now, from, bytes) {
                if let Some(g) = &mut p.game {
                    g.client.handle_datagram(now, body);
                }
            }
        } else if let Some(j) = &mut p.join {
            let _ = j.handle_datagram(now, from, bytes);
        }
    }

    fn step(&mut self) -> Vec<(SocketAddr, Transmit)> {
        let mut out = Vec::new();
        self.step_server(&mut out);
        for k in 0..self.players.len() {
            self.step_player(k, &mut out);
        }
        out
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let players = self.players.iter().flat_map(|p| {
            [
                p.opener.as_ref().and_then(RoomOpener::poll_timeout),
                p.join.as_ref().and_then(JoinSession::poll_timeout),
                p.seat.as_ref().and_then(Seat::poll_timeout),
                p.game.as_ref().map(|g| g.next_tick),
                p.game.as_ref().and_then(|g| g.client.poll_timeout()),
            ]
        });
        players.chain([self.server.poll_timeout()]).flatten().min()
    }
}

fn join_session(
    now: Instant,
    port: u16,
    room: &str,
    password: Option<&str>,
    creator: bool,
    seed: u64,
) -> JoinSession {
    let mut cfg = JoinConfig::new(SERVER, info(&format!("p{port}")));
    cfg.room = room.into();
    cfg.password = password.map(str::to_string);
    cfg.creator = creator;
    cfg.entropy = [seed as u8; 32];
    JoinSession::new(now, cfg)
}

fn serve_config() -> ServeConfig {
    ServeConfig {
        entropy: [5; 32],
        ..ServeConfig::default()
    }
}

#[test]
fn openings_are_limited_per_address_and_in_all() {
    let cfg = ServeConfig {
        max_rooms: 3,
        opens_per_minute: 2,
        ..serve_config()
    };
    let mut net = Net::new(cfg, "delay=5ms", 10);
    // Four creators share one IP (one home router): the third is refused for the rate.
    let creators: Vec<usize> = (0..3)
        .map(|i| net.create(open(2, &format!("r{i}"), false), None))
        .collect();
    for &k in &creators {
        let addr = SocketAddr::new(client_addr(0).ip(), 41000 + k as u16);
        net.players[k].addr = addr;
    }
    let opened = |n: &Net, k: usize| n.in_room(k);
    let failed = |n: &Net, k: usize| {
        n.players[k]
            .open_events
            .iter()
            .any(|e| matches!(e, OpenEvent::Failed(_)))
    };
    assert!(net.run_until(Duration::from_secs(30), |n| creators
        .iter()
        .all(|&k| opened(n, k) || failed(n, k))));
    let refused: Vec<String> = creators
        .iter()
        .flat_map(|&k| net.players[k].open_events.iter())
        .filter_map(|e| match e {
            OpenEvent::Failed(e) => Some(e.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].contains("too many rooms opened from your address"),
        "{refused:?}"
    );
    // Another address may still open one, then the server is full (3 rooms).
    let other = net.create(open(2, "r9", false), None);
    assert!(
        net.run_until(Duration::from_secs(30), |n| opened(n, other)),
        "{:?} {:?}",
        net.players[other].open_events,
        net.events
    );
    let last = net.create(open(2, "r10", false), None);
    assert!(net.run_until(Duration::from_secs(30), |n| failed(n, last)));
    let full = net.players[last].open_events.iter().find_map(|e| match e {
        OpenEvent::Failed(e) => Some(e.to_string()),
        _ => None,
    });
    assert_eq!(
        full.unwrap(),
        "refused by the server: the server is full (3 rooms)"
    );
    assert_eq!(net.server.stats().rate_limited, 1);
    assert_eq!(net.server.stats().full, 1);
}

#[test]
fn a_forged_source_gets_no_more_bytes_than_it_sent() {
    let mut net = Net::new(serve_config(), "delay=5ms", 10);
    let creator = net.create(open(2, "den", true), Some("pw"));
    assert!(
        net.run_until(Duration::from_secs(30), |n| n.players[creator]
            .join
            .is_some())
    );
    let victim = SocketAddr::from(([192, 0, 2, 99], 9999));
    let now = net.now;
    let hello = |room: &str| {
        let mut cfg = JoinConfig::new(SERVER, info("x"));
        cfg.room = room.into();
        let j = JoinSession::new(now, cfg);
        j.hello()
    };
    let mut sent = 0;
    let mut forged = vec![
        hello("den"),
        hello("nope"),
        hello(""),
        Msg::Room(RoomMsg::List { first: 0 }).encode(0),
        Msg::Room(RoomMsg::Open(open(2, "flood", false))).encode(0),
    ];
    // Unpadded versions of the same requests are not even read.
    forged.push(hello("den")[..120].to_vec());
    forged.push(b"FL\x08\x0b\x00\x00\x00\x00\x04\x00\x00".to_vec());
    for _ in 0..20 {
        for d in &forged {
            sent += d.len();
            net.server.handle_datagram(now, victim, d);
        }
    }
    net.run_until(Duration::from_secs(10), |_| false);
    let back: usize = net
        .from_server
        .iter()
        .filter(|t| t.to == victim)
        .map(|t| t.bytes.len())
        .sum();
    assert!(
        back > 0,
        "it still answers (a real joiner gets its answers)"
    );
    assert!(
        back <= sent,
        "sent {back} bytes to a forged source that sent {sent}"
    );
    // What it could not read it counted; the Hellos and Opens got a Retry and nothing else
    // (a listing is public, and no larger than the padded List asking for it).
    let s = net.server.stats();
    assert!(s.garbage >= 40 && s.retries >= 80, "{s:?}");
    let answers = net.from_server.iter().filter(|t| t.to == victim);
    for t in answers {
        let m = Msg::decode(&t.bytes).map(|(_, m)| m);
        assert!(
            matches!(m, Ok(Msg::Retry(_) | Msg::Room(RoomMsg::Rooms { .. }))),
            "{m:?}"
        );
    }
}

/// What the server sent `to`.
fn sent_to(rooms: &mut Rooms, now: Instant, to: SocketAddr) -> Vec<Transmit> {
    std::iter::from_fn(|| rooms.poll_transmit(now))
        .filter(|t| t.to == to)
        .collect()
}

/// Has `addr` echo the server's cookie (a Hello naming no room), so its Opens are read.
fn prove(rooms: &mut Rooms, now: Instant, addr: SocketAddr) {
    let hello = |cookie| {
        let mut cfg = JoinConfig::new(SERVER, info("x"));
        cfg.room = String::new();
        let Ok((_, Msg::Hello(mut h))) = Msg::decode(&JoinSession::new(now, cfg).hello()) else {
            panic!("a Hello")
        };
        h.cookie = cookie;
        Msg::Hello(h).encode(0)
    };
    rooms.handle_datagram(now, addr, &hello([0; 16]));
    let cookie = decoded(&sent_to(rooms, now, addr))
        .into_iter()
        .find_map(|m| match m {
            Msg::Retry(c) => Some(c),
            _ => None,
        })
        .expect("a Retry");
    rooms.handle_datagram(now, addr, &hello(cookie));
    let sent = sent_to(rooms, now, addr);
    let answer = decoded(&sent);
    assert!(matches!(&answer[..], [Msg::Refuse(_)]), "{answer:?}");
}

fn decoded(sent: &[Transmit]) -> Vec<Msg<'_>> {
    sent.iter()
        .filter_map(|t| Msg::decode(&t.bytes).ok().map(|(_, m)| m))
        .collect()
}

/// Issue 36, finding 3: a room whose creator uploads its state and vanishes (never plays in
/// it) does not hold its name and its memory for long: it closes within a minute of the
/// creator's last datagram (its Hello was on the way: it joined, then fell silent), while a
/// room whose creator is there waits for players as long as it likes.
#[test]
fn a_room_whose_creator_vanishes_closes_within_a_minute() {
    let mut net = Net::new(serve_config(), "delay=5ms", 10);
    let creator = net.create(open(2, "hoard", false), None);
    let waiting = net.create(open(2, "waits", false), None);
    let uploaded = |n: &Net, k: usize| {
        n.players[k]
            .open_events
            .iter()
            .any(|e| matches!(e, OpenEvent::Uploaded { .. }))
    };
    assert!(
        net.run_until(Duration::from_secs(30), |n| uploaded(n, creator)
            && uploaded(n, waiting))
    );
    net.players[creator].join = None;
    let gone = net.now;
    assert!(net.run_until(Duration::from_secs(120), |n| !n
        .server
        .list(n.now)
        .iter()
        .any(|r| r.name == "hoard")));
    let lived = net.now - gone;
    assert!(
        lived <= ABANDONED_WITHIN,
        "the room lived {lived:?} after its creator went"
    );
    assert!(
        lived >= EMPTY_GRACE,
        "the room closed {lived:?} after its creator went: no grace to come back"
    );
    assert!(net
        .events
        .iter()
        .any(|e| matches!(e, ServeEvent::Closed { room, .. } if room == "hoard")));
    // Its creator still there, the other room waits on.
    let t = net.now;
    net.run_until(Duration::from_secs(240), |n| {
        n.now >= t + 2 * ABANDONED_WITHIN
    });
    let open: Vec<String> = net
        .server
        .list(net.now)
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(open, vec!["waits".to_string()]);
}

/// Issue 36, finding 3: one address (an IPv4 address, or an IPv6 /64) cannot hoard rooms,
/// whatever its rate.
#[test]
fn one_address_holds_a_bounded_number_of_rooms() {
    let cfg = ServeConfig {
        rooms_per_address: 2,
        opens_per_minute: 100,
        ..serve_config()
    };
    let mut net = Net::new(cfg, "delay=5ms", 10);
    let creators: Vec<usize> = (0..3)
        .map(|i| net.create(open(2, &format!("h{i}"), false), None))
        .collect();
    for &k in &creators {
        net.players[k].addr = SocketAddr::new(client_addr(0).ip(), 42000 + k as u16);
    }
    let settled = |n: &Net, k: usize| {
        n.in_room(k)
            || n.players[k]
                .open_events
                .iter()
                .any(|e| matches!(e, OpenEvent::Failed(_)))
    };
    assert!(net.run_until(Duration::from_secs(30), |n| creators
        .iter()
        .all(|&k| settled(n, k))));
    let refused: Vec<String> = creators
        .iter()
        .flat_map(|&k| net.players[k].open_events.iter())
        .filter_map(|e| match e {
            OpenEvent::Failed(e) => Some(e.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].contains("your address has 2 rooms open"),
        "{refused:?}"
    );
    assert_eq!(net.server.len(), 2);
}

/// A room message from a hosted room's host, tagged with its keys.
fn tagged(keys: &Keys, msg: RoomMsg<'_>) -> Vec<u8> {
    let mut bytes = Msg::Room(msg).encode(0);
    keys.seal(&mut bytes);
    bytes
}
