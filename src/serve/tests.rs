//! A dedicated server, room creators and joiners over a simulated lossy network on simulated
//! time: rooms open, fill, play in sync and close; passwords are checked end to end through
//! the server; wrong rooms, floods, forged sources and cross-room datagrams change nothing.

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

#[test]
fn a_fleet_member_claims_names_first_and_sends_players_to_the_holding_server() {
    use crate::session::msg::{RoomInfo, ServerInfo};
    let now = Instant::now();
    let cfg = ServeConfig {
        max_rooms: 2,
        ..serve_config()
    };
    let me = "203.0.113.7:7845".to_string();
    let other = "203.0.113.9:7845".to_string();
    let mut rooms = Rooms::new(cfg).with_fleet(now, me.clone(), "eu".into());
    let held = RoomInfo {
        name: "held".into(),
        content: String::new(),
        core: "lightcycles".into(),
        players: 1,
        seats: 2,
        password: false,
        playing: false,
        age_secs: 3,
        spectators: 0,
        mode: Mode::Strict,
        region: "eu".into(),
        server: other.clone(),
    };
    rooms.handle_directory(now, DirNews::Room(held.clone()));
    rooms.handle_directory(
        now,
        DirNews::Server(ServerInfo {
            server: other.clone(),
            region: "eu".into(),
            rooms: 1,
            max_rooms: 10,
            players: 1,
        }),
    );
    let (a, b, c, d) = (
        client_addr(1),
        client_addr(2),
        client_addr(3),
        client_addr(4),
    );
    for x in [a, b, c, d] {
        prove(&mut rooms, now, x);
    }
    let ask = |room: &str| Msg::Room(RoomMsg::Locate { room: room.into() }).encode(0);
    // Where is it: on the other server.
    rooms.handle_datagram(now, a, &ask("held"));
    let moved = RoomMsg::Moved {
        room: "held".into(),
        server: other.clone(),
    };
    assert_eq!(
        decoded(&sent_to(&mut rooms, now, a)),
        vec![Msg::Room(moved)]
    );
    // Its name is taken in the whole fleet.
    rooms.handle_datagram(
        now,
        a,
        &Msg::Room(RoomMsg::Open(open(2, "held", false))).encode(0),
    );
    let refused = format!("room held exists already (on {other})");
    assert_eq!(
        decoded(&sent_to(&mut rooms, now, a)),
        vec![Msg::Refuse(refused)]
    );
    // A free name is claimed before the room opens.
    rooms.handle_datagram(
        now,
        b,
        &Msg::Room(RoomMsg::Open(open(2, "mine", false))).encode(0),
    );
    assert!(sent_to(&mut rooms, now, b).is_empty());
    let claim = rooms.poll_directory();
    assert!(
        matches!(&claim, Some(DirOp::Claim(i)) if i.name == "mine" && i.server == me),
        "{claim:?}"
    );
    rooms.handle_directory(now, DirNews::Claimed("mine".into()));
    let sent = sent_to(&mut rooms, now, b);
    let opened = decoded(&sent);
    assert!(
        matches!(&opened[..], [Msg::Room(RoomMsg::Opened { room, .. })] if room == "mine"),
        "{opened:?}"
    );
    // A claim another server won meanwhile is refused.
    rooms.handle_datagram(
        now,
        c,
        &Msg::Room(RoomMsg::Open(open(2, "race", false))).encode(0),
    );
    assert!(matches!(rooms.poll_directory(), Some(DirOp::Claim(_))));
    rooms.handle_directory(
        now,
        DirNews::Taken {
            room: "race".into(),
            server: other.clone(),
        },
    );
    let refused = format!("room race exists already (on {other})");
    assert_eq!(
        decoded(&sent_to(&mut rooms, now, c)),
        vec![Msg::Refuse(refused)]
    );
    // Full (one upload and one claim): a new room goes to a member of the region.
    rooms.handle_datagram(
        now,
        c,
        &Msg::Room(RoomMsg::Open(open(2, "late", false))).encode(0),
    );
    rooms.handle_datagram(
        now,
        d,
        &Msg::Room(RoomMsg::Open(open(2, "full", false))).encode(0),
    );
    let moved = RoomMsg::Moved {
        room: "full".into(),
        server: other.clone(),
    };
    assert_eq!(
        decoded(&sent_to(&mut rooms, now, d)),
        vec![Msg::Room(moved)]
    );
    // A listing names the holding server of each room.
    rooms.handle_datagram(now, d, &Msg::Room(RoomMsg::List { first: 0 }).encode(0));
    let sent = sent_to(&mut rooms, now, d);
    let listed = decoded(&sent);
    assert!(
        matches!(&listed[..], [Msg::Room(RoomMsg::Rooms { total: 1, rooms: r, .. })] if r == &vec![held.clone()]),
        "{listed:?}"
    );
    // A server gone silent takes its rooms with it.
    rooms.handle_directory(now, DirNews::ServerGone(other));
    rooms.handle_datagram(now, a, &ask("held"));
    let sent = sent_to(&mut rooms, now, a);
    let gone = decoded(&sent);
    assert!(
        matches!(&gone[..], [Msg::Room(RoomMsg::NoRoom { .. })]),
        "{gone:?}"
    );
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

/// A recording of `frames` frames as a player of a room opened with `open` makes it.
fn recording(open: &OpenRoom, frames: u32) -> Vec<u8> {
    use crate::replay::{Header, Recorder, RecorderOptions};
    let header = Header {
        core_name: open.core_name.clone(),
        core_version: open.core_version.clone(),
        content_name: open.content_name.clone(),
        content_hash: open.content_hash,
        ..Header::default()
    };
    let mut buf = Vec::new();
    let mut rec =
        Recorder::with_sink(&mut buf, "t.flr", &header, &RecorderOptions::default()).unwrap();
    for f in 0..frames {
        let mut inputs = [crate::input::Pad::NEUTRAL; crate::input::MAX_PLAYERS];
        inputs[0] = crate::input::Pad((f % 7) as u16);
        rec.record_frame(Frame(f), &inputs).unwrap();
    }
    rec.finish().unwrap();
    buf
}

/// Uploads `bytes` as the recording of session `session` from `from`, piece by piece as
/// the server acknowledges them; returns the server's last answer.
fn upload(rooms: &mut Rooms, now: Instant, from: SocketAddr, session: u32, bytes: &[u8]) -> String {
    use crate::session::msg::REPLAY_PIECE;
    let hash = xxhash_rust::xxh3::xxh3_64(bytes);
    let mut offset = 0;
    loop {
        let end = (offset + REPLAY_PIECE).min(bytes.len());
        let msg = RoomMsg::Share {
            total: bytes.len() as u32,
            hash,
            offset: offset as u32,
            bytes: &bytes[offset..end],
        };
        rooms.handle_datagram(now, from, &Msg::Room(msg).encode(session));
        let sent = sent_to(rooms, now, from);
        match decoded(&sent).last() {
            Some(Msg::Room(RoomMsg::ShareAck { received, done })) => {
                if *done {
                    return "done".into();
                }
                offset = *received as usize;
            }
            Some(Msg::Refuse(why)) => return why.clone(),
            other => return format!("{other:?}"),
        }
    }
}

#[test]
fn a_hosted_rooms_recording_is_taken_from_its_players_only_whole_and_within_bounds() {
    let mut now = Instant::now();
    let cfg = ServeConfig {
        archive: true,
        max_replay: 8192,
        ..serve_config()
    };
    let mut rooms = Rooms::new(cfg);
    let (host, joiner, stranger) = (client_addr(1), client_addr(2), client_addr(3));
    prove(&mut rooms, now, host);
    let mut request = open(2, "friday", false);
    request.hosted = true;
    rooms.handle_datagram(
        now,
        host,
        &Msg::Room(RoomMsg::Open(request.clone())).encode(0),
    );
    let opened = sent_to(&mut rooms, now, host);
    let (session, keys) = opened
        .iter()
        .find_map(|t| match Msg::decode(&t.bytes) {
            Ok((h, Msg::Room(RoomMsg::Opened { key, .. }))) => {
                Some((h.session, Keys::for_room(&key, Side::Joiner)))
            }
            _ => None,
        })
        .expect("the room opens");
    // A joiner comes (its Hello relayed to the host), then the game ends: the host leaves.
    prove(&mut rooms, now, joiner);
    let hello = {
        let mut cfg = JoinConfig::new(SERVER, info("bo"));
        cfg.room = "friday".into();
        JoinSession::new(now, cfg).hello()
    };
    rooms.handle_datagram(now, joiner, &hello);
    let gone = RoomMsg::Present {
        players: 0,
        direct: 0,
        relayed: 0,
        playing: false,
    };
    // Issue 50: the same words forged from the host's address (untagged) change nothing.
    let forged = Msg::Room(gone.clone()).encode(session);
    rooms.handle_datagram(now, host, &forged);
    now += Duration::from_secs(2);
    rooms.handle_timeout(now);
    assert!(!rooms.is_empty(), "a forged Present closed the room");
    assert!(rooms.stats().dropped_auth > 0);
    rooms.handle_datagram(now, host, &tagged(&keys, gone));
    // Closed once its last goodbyes had time to cross.
    now += Duration::from_secs(2);
    rooms.handle_timeout(now);
    assert!(rooms.is_empty());
    now += Duration::from_secs(5);

    let good = recording(&request, 600);
    assert!(
        good.len() > 1000,
        "{} bytes: more than one piece",
        good.len()
    );
    // Nobody of the room, a room that never was, too large, bytes that do not add up to
    // their hash: refused, saying why, and counted.
    assert!(upload(&mut rooms, now, stranger, session, &good).contains("not in that room"));
    assert!(upload(&mut rooms, now, host, session ^ 1, &good).contains("no room of that session"));
    let big = recording(&request, 60_000);
    assert!(big.len() > 8192);
    assert!(upload(&mut rooms, now, host, session, &big).contains("at most 8192"));
    let mut forged = good.clone();
    let hash = xxhash_rust::xxh3::xxh3_64(&good);
    let last = forged.len() - 1;
    forged[last] ^= 1;
    // Piece by piece under the good recording's hash.
    for (i, piece) in forged.chunks(crate::session::msg::REPLAY_PIECE).enumerate() {
        let msg = RoomMsg::Share {
            total: forged.len() as u32,
            hash,
            offset: (i * crate::session::msg::REPLAY_PIECE) as u32,
            bytes: piece,
        };
        rooms.handle_datagram(now, host, &Msg::Room(msg).encode(session));
    }
    let s = rooms.stats();
    assert_eq!(
        (
            s.uploads_stranger,
            s.uploads_unknown_room,
            s.uploads_too_large,
            s.uploads_forged
        ),
        (1, 1, 1, 1),
        "{s:?}"
    );
    assert!(rooms.poll_kept().is_none(), "nothing refused is kept");

    // The joiner's upload of the real recording is taken; it is checked against the room.
    assert_eq!(upload(&mut rooms, now, joiner, session, &good), "done");
    let kept = rooms.poll_kept().expect("the recording is kept");
    assert_eq!(kept.info.room, "friday");
    assert_eq!(kept.bytes, good);
    let checked = archive::verify(&kept.bytes, kept.expect.as_ref()).unwrap();
    assert_eq!(
        (checked.frames, checked.core.as_str()),
        (600, "lightcycles")
    );
    // Another copy (the host's) is not kept twice.
    assert_eq!(upload(&mut rooms, now, host, session, &good), "done");
    assert!(rooms.poll_kept().is_none());
    assert_eq!(rooms.stats().uploads_received, 1);

    // A truncated recording, or another game's, checks out as neither.
    let cut = &good[..good.len() - 20];
    assert!(archive::verify(cut, Some(&request))
        .unwrap_err()
        .contains("truncated"));
    let mut other = request.clone();
    other.content_hash = Some(7);
    assert!(archive::verify(&good, Some(&other))
        .unwrap_err()
        .contains("the room played"));
    assert!(archive::verify(b"not a recording at all", Some(&request))
        .unwrap_err()
        .contains("not a recording"));
    // Past SHARE_WITHIN, the room is forgotten.
    now += archive::SHARE_WITHIN + Duration::from_secs(2);
    rooms.handle_timeout(now);
    assert!(upload(&mut rooms, now, host, session, &good).contains("no room of that session"));
}

#[test]
fn a_player_who_asks_for_no_replay_keeps_the_room_out_of_the_archive() {
    let now = Instant::now();
    let mut rooms = Rooms::new(ServeConfig {
        archive: true,
        ..serve_config()
    });
    let (host, joiner) = (client_addr(1), client_addr(2));
    prove(&mut rooms, now, host);
    let mut request = open(2, "quiet", false);
    request.hosted = true;
    rooms.handle_datagram(
        now,
        host,
        &Msg::Room(RoomMsg::Open(request.clone())).encode(0),
    );
    let session = sent_to(&mut rooms, now, host)
        .iter()
        .find_map(|t| Msg::decode(&t.bytes).ok().map(|(h, _)| h.session))
        .unwrap();
    prove(&mut rooms, now, joiner);
    let mut cfg = JoinConfig::new(SERVER, info("bo"));
    cfg.room = "quiet".into();
    cfg.no_share = true;
    rooms.handle_datagram(now, joiner, &JoinSession::new(now, cfg).hello());
    let why = upload(&mut rooms, now, host, session, &recording(&request, 60));
    assert!(why.contains("no replay be kept"), "{why}");
    assert_eq!(rooms.stats().uploads_not_shared, 1);
}

/// Opens hosted room `name` from `host` (its address proven first): its session id and
/// the host's keys with the server.
fn open_hosted(rooms: &mut Rooms, now: Instant, host: SocketAddr, name: &str) -> (u32, Keys) {
    prove(rooms, now, host);
    let mut request = open(2, name, false);
    request.hosted = true;
    rooms.handle_datagram(now, host, &Msg::Room(RoomMsg::Open(request)).encode(0));
    sent_to(rooms, now, host)
        .iter()
        .find_map(|t| match Msg::decode(&t.bytes) {
            Ok((h, Msg::Room(RoomMsg::Opened { key, .. }))) => {
                Some((h.session, Keys::for_room(&key, Side::Joiner)))
            }
            _ => None,
        })
        .expect("the room opens")
}

/// A room message from a hosted room's host, tagged with its keys.
fn tagged(keys: &Keys, msg: RoomMsg<'_>) -> Vec<u8> {
    let mut bytes = Msg::Room(msg).encode(0);
    keys.seal(&mut bytes);
    bytes
}

/// The host forwards `n` datagrams of `len` bytes to `peer`: the bytes the server sent it.
fn forward(
    rooms: &mut Rooms,
    now: Instant,
    (host, keys): (SocketAddr, &Keys),
    peer: SocketAddr,
    n: usize,
) -> usize {
    let game = vec![0x5a; 1000];
    for _ in 0..n {
        let fwd = RoomMsg::Forward {
            peer,
            datagram: &game,
        };
        rooms.handle_datagram(now, host, &tagged(keys, fwd));
    }
    sent_to(rooms, now, peer)
        .iter()
        .map(|t| t.bytes.len())
        .sum()
}

#[test]
fn a_hosted_rooms_session_id_is_no_proof_of_address() {
    let now = Instant::now();
    let mut rooms = Rooms::new(serve_config());
    let (host, victim, moved) = (client_addr(1), client_addr(2), client_addr(3));
    let (session, keys) = open_hosted(&mut rooms, now, host, "den");
    // Issue 50: one spoofed datagram naming the room's session from the victim's address,
    // then the room's own host forwards to it: a reflector, 61 MB in 3 s.
    let spoofed = Msg::Path(crate::session::msg::PathMsg::Probe).encode(session);
    rooms.handle_datagram(now, victim, &spoofed);
    let got = forward(&mut rooms, now, (host, &keys), victim, 200);
    assert!(
        got <= spoofed.len(),
        "the victim got {got} bytes for the {} it seemed to send",
        spoofed.len()
    );
    assert!(rooms.stats().held_unvalidated > 0);
    // A real joiner whose router moved it: its datagram names the session, it is sent a
    // cookie, echoes it, and from then on gets everything its host forwards.
    let datagram = [0u8; 64];
    let mut probe = Msg::Path(crate::session::msg::PathMsg::Probe).encode(session);
    probe.extend_from_slice(&datagram[..40]);
    rooms.handle_datagram(now, moved, &probe);
    let challenge = sent_to(&mut rooms, now, moved);
    let retry = challenge
        .iter()
        .find(|t| matches!(Msg::decode(&t.bytes), Ok((_, Msg::Retry(_)))))
        .expect("a cookie for the new address");
    assert!(
        forward(&mut rooms, now, (host, &keys), moved, 5) < 5000,
        "on probation"
    );
    rooms.handle_datagram(now, moved, &retry.bytes.clone());
    assert_eq!(
        forward(&mut rooms, now, (host, &keys), moved, 5),
        5000,
        "proven"
    );
    // The victim's address never echoed: forgotten after its probation.
    rooms.handle_timeout(now + rooms::PROBATION + Duration::from_secs(1));
    let later = now + rooms::PROBATION + Duration::from_secs(1);
    assert_eq!(forward(&mut rooms, later, (host, &keys), victim, 5), 0);
}

#[test]
fn one_address_fills_no_more_than_its_share_of_a_hosted_rooms_slots() {
    let now = Instant::now();
    let mut rooms = Rooms::new(serve_config());
    let host = client_addr(1);
    let (session, keys) = open_hosted(&mut rooms, now, host, "den");
    let probe = Msg::Path(crate::session::msg::PathMsg::Probe).encode(session);
    // 32 ports of one machine (issue 50: they filled the room for 2 minutes).
    for port in 0..32u16 {
        let from = SocketAddr::from(([198, 51, 100, 9], 20_000 + port));
        rooms.handle_datagram(now, from, &probe);
    }
    let relayed_from = |rooms: &mut Rooms| {
        sent_to(rooms, now, host)
            .iter()
            .filter_map(|t| match keys.open(&t.bytes).map(Msg::decode) {
                Some(Ok((_, Msg::Room(RoomMsg::Forward { peer, .. })))) => Some(peer),
                _ => None,
            })
            .collect::<std::collections::HashSet<_>>()
            .len()
    };
    assert_eq!(relayed_from(&mut rooms), rooms::MEMBERS_PER_PREFIX);
    // Someone else still gets in.
    let other = client_addr(7);
    rooms.handle_datagram(now, other, &probe);
    assert_eq!(relayed_from(&mut rooms), 1);
}

#[test]
fn a_hosted_rooms_joiners_punch_only_its_private_local_addresses() {
    let named: Vec<SocketAddr> = [
        "192.168.1.20:7845",
        "10.1.2.3:7845",
        "203.0.113.50:53",
        "8.8.8.8:53",
        "[fd00::5]:7845",
        "[fe80::1]:7845",
        "[2001:db8::1]:53",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    let kept = rooms::private_only(&named);
    assert_eq!(kept, [named[0], named[1], named[4], named[5]]);
}

/// Issue 50, part 5: what a hosted room's members send through the relay is limited per
/// member and per IP address (148,000 one-byte datagrams a second became as many tagged
/// Forwards to the host); a game's own traffic passes whole.
#[test]
fn a_hosted_rooms_relay_limits_each_member_and_each_address() {
    let t0 = Instant::now();
    let mut rooms = Rooms::new(serve_config());
    let host = client_addr(1);
    let (session, keys) = open_hosted(&mut rooms, t0, host, "den");
    let probe = Msg::Path(crate::session::msg::PathMsg::Probe).encode(session);
    let forwards = |rooms: &mut Rooms, now: Instant| {
        sent_to(rooms, now, host)
            .iter()
            .filter(|t| {
                matches!(
                    keys.open(&t.bytes).map(Msg::decode),
                    Some(Ok((_, Msg::Room(RoomMsg::Forward { .. }))))
                )
            })
            .count()
    };
    let at = |ms: f64| t0 + Duration::from_secs_f64(ms / 1000.0);
    let ip = [198, 51, 100, 9];
    // One member floods 2,000 datagrams in a second: a burst, then the rate.
    let flooder = SocketAddr::from((ip, 20_000));
    let mut relayed = 0;
    for i in 0..2000 {
        let now = at(i as f64 * 0.5);
        rooms.handle_datagram(now, flooder, &probe);
        relayed += forwards(&mut rooms, now);
    }
    let m = rooms::MEMBER_RATE.datagrams;
    assert!(
        relayed as f64 >= 2.0 * m && relayed as f64 <= 3.0 * m + 1.0,
        "{relayed} relayed of 2000"
    );
    // Five more ports of that machine flood too: together they get what one address gets.
    let mut from_ip = relayed;
    for i in 0..5000 {
        let now = at(1000.0 + i as f64 * 0.2);
        let port = SocketAddr::from((ip, 20_001 + (i % 5) as u16));
        rooms.handle_datagram(now, port, &probe);
        from_ip += forwards(&mut rooms, now);
    }
    let p = rooms::PREFIX_RATE.datagrams;
    assert!(
        from_ip as f64 <= 2.0 * p + 2.0 * p + 1.0,
        "{from_ip} relayed from one address in 2 s (each port alone would pass {})",
        5.0 * 3.0 * m
    );
    // A player on another address sends more than a game's traffic (its inputs, acks and
    // chat: 60 datagrams a second of 600 bytes): all of it passes.
    let player = client_addr(7);
    let (mut game, mut big) = (probe.clone(), probe.clone());
    game.resize(600, 0);
    big.resize(1200, 0);
    let mut passed = 0;
    for i in 0..300 {
        let now = at(2000.0 + i as f64 * 1000.0 / 60.0);
        let d = if i == 0 { &probe } else { &game };
        rooms.handle_datagram(now, player, d);
        passed += forwards(&mut rooms, now);
    }
    assert_eq!(passed, 300);
    // Big datagrams past the byte rate are not.
    let mut passed = 0;
    for i in 0..400 {
        let now = at(7000.0 + i as f64 * 2.5);
        rooms.handle_datagram(now, player, &big);
        passed += forwards(&mut rooms, now);
    }
    let bytes = rooms::MEMBER_RATE.bytes;
    assert!(
        (passed as f64) < (2.0 * bytes + bytes) / 1200.0 + 1.0,
        "{passed} of 400 datagrams of 1,200 B in 1 s"
    );
    assert!(rooms.stats().relay_limited > 0);
}
