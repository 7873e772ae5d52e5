//! The rooms load generator `serve_capacity` and `fleet` share: rooms of 2 synthetic
//! players, each the real sans-IO client stack (a room's creator opens the room and uploads
//! a start state, then both join and play, the lockstep client's datagrams tagged and
//! checked by a `Seat` as in framelock's own players) on a UDP socket of its own, at 60
//! frames a second, with a bot that changes its pad on about one frame in four. The two
//! players of a room tick together (rooms are spread over the frame period), so each UPDATE
//! answers a CTRL sent microseconds before.
#![allow(dead_code)] // each benchmark uses a different subset

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use framelock::input::Pad;
use framelock::lockstep::{self, Client};
use framelock::session::msg::OpenRoom;
use framelock::session::{
    Handled, JoinConfig, JoinEvent, JoinSession, OpenEvent, RoomOpener, Seat, SeatEvent,
    SessionInfo, StartPayload, Transmit,
};
use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

pub const FRAME: Duration = Duration::from_micros(16_667);
/// IPv4 and UDP headers, counted in every byte figure.
pub const HEADER: u64 = 28;

fn info(name: &str) -> SessionInfo {
    SessionInfo {
        core_name: "lightcycles".into(),
        core_version: "0.1.0".into(),
        player_name: name.into(),
        ..SessionInfo::default()
    }
}

pub struct Player {
    /// The server its room is on.
    server: SocketAddr,
    socket: UdpSocket,
    opener: Option<RoomOpener>,
    join: Option<JoinSession>,
    /// The session layer once the handshake is done: it tags the lockstep client's
    /// datagrams and checks the tags of the server's, which a room drops without them.
    seat: Option<Seat>,
    client: Option<Client>,
    room: Option<String>,
    creator: bool,
    pub frames: u64,
    /// Frame periods since it started playing: the frames it should have run.
    ticks: u64,
    next_tick: Instant,
    pad: Pad,
    rng: SmallRng,
    /// When its latest CTRL left, until the server's next datagram.
    ctrl_at: Option<Instant>,
    /// Frames run when the steady window opened.
    pub frames_at_window: u64,
    /// Why its room could not open, or it could not join, or it was sent away.
    pub failed: Option<String>,
}

#[derive(Default)]
pub struct Counters {
    pub sent: u64,
    pub received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub response_us: Vec<u32>,
}

pub struct Generator {
    /// Room names are PREFIX-N.
    prefix: String,
    poll: Poll,
    pub players: Vec<Player>,
    pub counters: Counters,
    /// Response times are collected.
    pub measuring: bool,
    buf: Vec<u8>,
    /// The first thing that went wrong: a room that could not open, a player who could not
    /// join or was sent away.
    pub failure: Option<String>,
    /// `run` returns at the first failure (one server's capacity); else failed players
    /// drop out and the others play on (a fleet's, where being over counts them).
    pub stop_on_failure: bool,
}

impl Generator {
    /// `rooms` rooms, spread over `servers` in turn, named PREFIX-N.
    pub fn new(servers: &[SocketAddr], rooms: usize, prefix: &str) -> Result<Generator, String> {
        let poll = Poll::new().expect("epoll");
        let start = Instant::now() + Duration::from_millis(50);
        let mut players = Vec::with_capacity(rooms * 2);
        for r in 0..rooms {
            // Rooms spread over the frame period; a room's two players tick together.
            let phase = FRAME.mul_f64(r as f64 / rooms as f64);
            for seat in 0..2 {
                let mut socket = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).map_err(|e| {
                    format!(
                        "{rooms} rooms need {} UDP sockets, and socket {} failed: {e} \
                             (raise ulimit -n, or ask for fewer rooms)",
                        rooms * 2,
                        players.len() + 1
                    )
                })?;
                let token = Token(players.len());
                poll.registry()
                    .register(&mut socket, token, Interest::READABLE)
                    .unwrap();
                players.push(Player {
                    server: servers[r % servers.len()],
                    socket,
                    opener: None,
                    join: None,
                    seat: None,
                    client: None,
                    room: None,
                    creator: seat == 0,
                    frames: 0,
                    ticks: 0,
                    next_tick: start + phase,
                    pad: Pad::NEUTRAL,
                    rng: SmallRng::seed_from_u64((r * 2 + seat) as u64),
                    ctrl_at: None,
                    frames_at_window: 0,
                    failed: None,
                });
            }
        }
        Ok(Generator {
            prefix: prefix.to_string(),
            poll,
            players,
            counters: Counters::default(),
            measuring: false,
            buf: vec![0; 2048],
            failure: None,
            stop_on_failure: true,
        })
    }

    pub fn open_rooms(&mut self, now: Instant) {
        for (r, pair) in self.players.chunks_mut(2).enumerate() {
            let server = pair[0].server;
            let open = OpenRoom {
                room: format!("{}-{r}", self.prefix),
                players: 2,
                start_with: 2,
                keyframe_interval: 2,
                mode: None,
                fps: 60.0,
                password: false,
                core_name: "lightcycles".into(),
                core_version: "0.1.0".into(),
                content_name: String::new(),
                content_hash: None,
                player_name: format!("c{r}"),
                raw_len: 0,
                packed_len: 0,
                payload_hash: 0,
                cookie: Default::default(),
                hosted: false,
                locals: Vec::new(),
                no_share: false,
            };
            let payload = StartPayload {
                options: vec![],
                state: vec![r as u8; 2000],
                sram: vec![],
            };
            pair[0].opener = Some(RoomOpener::new(now, server, open, &payload).unwrap());
        }
    }

    fn send(&mut self, i: usize, to: SocketAddr, bytes: &[u8]) {
        if self.players[i].socket.send_to(bytes, to).is_ok() {
            self.counters.sent += 1;
            self.counters.bytes_sent += bytes.len() as u64 + HEADER;
        }
    }

    /// Players whose room could not open, who could not join or were sent away.
    pub fn failed_players(&self) -> usize {
        self.players.iter().filter(|p| p.failed.is_some()).count()
    }

    /// Everything waiting on player `i`'s socket.
    fn receive(&mut self, i: usize, now: Instant) {
        loop {
            let (n, from) = match self.players[i].socket.recv_from(&mut self.buf) {
                Ok(x) => x,
                Err(_) => return,
            };
            self.counters.received += 1;
            self.counters.bytes_received += n as u64 + HEADER;
            let bytes = self.buf[..n].to_vec();
            let p = &mut self.players[i];
            if let Some(o) = &mut p.opener {
                o.handle_datagram(now, from, &bytes);
            }
            if let Some(j) = &mut p.join {
                let _ = j.handle_datagram(now, from, &bytes);
            }
            let Some(seat) = &mut p.seat else {
                continue;
            };
            if let (Handled::Passed(body), Some(c)) =
                (seat.handle_datagram(now, from, &bytes), &mut p.client)
            {
                c.handle_datagram(now, body);
                if let Some(at) = p.ctrl_at.take() {
                    if self.measuring {
                        let us = now.saturating_duration_since(at).as_micros();
                        self.counters
                            .response_us
                            .push(us.min(u128::from(u32::MAX)) as u32);
                    }
                }
            }
        }
    }

    /// Player `i`'s handshake timers and, at its tick, a frame; then what it sends.
    fn step_player(&mut self, i: usize, now: Instant) {
        let server = self.players[i].server;
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut ctrl = false;
        let mut failure = None;
        let who = || format!("room {}-{}, player {}", self.prefix, i / 2, i % 2 + 1);
        {
            let p = &mut self.players[i];
            if let Some(o) = &mut p.opener {
                o.handle_timeout(now);
                while let Some(t) = o.poll_transmit(now) {
                    out.push(t.bytes);
                }
                while let Some(ev) = o.poll_event() {
                    match ev {
                        OpenEvent::Uploaded { room, .. } => p.room = Some(room),
                        OpenEvent::Failed(e) => failure = Some(format!("{}: opening: {e}", who())),
                        OpenEvent::Opened { .. } => {}
                        OpenEvent::Moved { server } => {
                            failure = Some(format!("{}: sent to {server}", who()));
                        }
                    }
                }
            }
            if p.room.is_some() && p.join.is_none() && p.seat.is_none() && p.creator {
                p.opener = None;
                p.join = Some(join(now, server, p.room.as_deref().unwrap(), true));
            }
            if let Some(j) = &mut p.join {
                j.handle_timeout(now);
                while let Some(ev) = j.poll_event() {
                    match ev {
                        JoinEvent::Ready(start) => {
                            let cfg = start.lockstep(lockstep::Config::default());
                            let seat = start.slot.expect("a seat");
                            p.client = Some(Client::new(now, cfg, seat).unwrap());
                        }
                        JoinEvent::Failed(e) => failure = Some(format!("{}: joining: {e}", who())),
                        _ => {}
                    }
                }
                if p.client.is_some() {
                    p.seat = p.join.take().map(Seat::new);
                }
            }
            if let Some(seat) = &mut p.seat {
                seat.handle_timeout(now);
                while let Some(ev) = seat.poll_event() {
                    if let SeatEvent::Failed(e) = ev {
                        failure = Some(format!("{}: sent away while playing: {e}", who()));
                    }
                }
            }
            // One that failed drops out; the others play on (or the run stops).
            if failure.is_some() {
                p.opener = None;
                p.join = None;
                p.seat = None;
                p.client = None;
            }
            if now >= p.next_tick {
                p.next_tick += FRAME;
                if let Some(c) = &mut p.client {
                    if c.ready_frames() > 0 || c.frame().0 > 0 {
                        c.handle_timeout(now);
                    }
                    if p.rng.gen_ratio(1, 4) {
                        p.pad = Pad(p.rng.gen::<u16>() & 0x0fff);
                    }
                    c.push_local_input(now, p.pad);
                    p.ticks += 1;
                    // As the frame runner does: one frame a period, up to 4 to catch up.
                    for _ in 0..4 {
                        if p.frames >= p.ticks || c.poll_frame().is_none() {
                            break;
                        }
                        p.frames += 1;
                        if p.frames.is_multiple_of(60) {
                            c.report_checksum(lockstep::Frame(p.frames as u32 - 1), p.frames);
                        }
                    }
                    if let Some(seat) = &p.seat {
                        while let Some(Transmit { bytes, .. }) = c.poll_transmit(now) {
                            out.push(seat.seal(bytes).bytes);
                            ctrl = true;
                        }
                    }
                }
            }
            if let Some(j) = &mut p.join {
                while let Some(t) = j.poll_transmit(now) {
                    out.push(t.bytes);
                }
            }
            if let Some(seat) = &mut p.seat {
                if ctrl {
                    seat.end_loading();
                }
                while let Some(t) = seat.poll_transmit(now) {
                    out.push(t.bytes);
                }
            }
            if ctrl {
                p.ctrl_at = Some(now);
            }
        }
        for bytes in out {
            self.send(i, server, &bytes);
        }
        if let Some(why) = failure {
            self.failure.get_or_insert(why.clone());
            self.players[i].failed.get_or_insert(why);
        }
    }

    /// Runs until `until`: every player at its ticks (a heap of them, so a wake-up costs
    /// the players due, not a pass over all), every datagram as it arrives.
    pub fn run(&mut self, until: Instant) {
        let mut events = Events::with_capacity(4096);
        let mut due: BinaryHeap<Reverse<(Instant, usize)>> = self
            .players
            .iter()
            .enumerate()
            .map(|(i, p)| Reverse((p.next_tick, i)))
            .collect();
        while Instant::now() < until && !(self.stop_on_failure && self.failure.is_some()) {
            let now = Instant::now();
            let next = due.peek().map_or(now + FRAME, |Reverse((t, _))| *t);
            let wait = next
                .saturating_duration_since(now)
                .min(Duration::from_millis(5));
            self.poll.poll(&mut events, Some(wait)).expect("epoll wait");
            let now = Instant::now();
            let ready: Vec<usize> = events.iter().map(|e| e.token().0).collect();
            for i in ready {
                self.receive(i, now);
            }
            while let Some(Reverse((t, i))) = due.peek().copied() {
                if t > now {
                    break;
                }
                due.pop();
                // A joiner joins once its creator's room is open.
                let p = &self.players[i];
                if !p.creator && p.join.is_none() && p.seat.is_none() && p.failed.is_none() {
                    if let Some(room) = self.players[i - 1].room.clone() {
                        let server = p.server;
                        self.players[i].join = Some(join(now, server, &room, false));
                    }
                }
                self.step_player(i, now);
                due.push(Reverse((self.players[i].next_tick, i)));
            }
        }
    }

    /// Every player ran a frame, or dropped out.
    pub fn all_playing(&self) -> bool {
        self.players
            .iter()
            .all(|p| p.frames > 0 || p.failed.is_some())
    }

    pub fn leave(&mut self, now: Instant) {
        for i in 0..self.players.len() {
            if let Some(seat) = &mut self.players[i].seat {
                seat.leave("done");
                let mut out = Vec::new();
                while let Some(t) = seat.poll_transmit(now) {
                    out.push(t);
                }
                for t in out {
                    self.send(i, t.to, &t.bytes);
                }
            }
        }
    }

    /// Reads what is left on the sockets for `d`.
    pub fn drain(&mut self, d: Duration) {
        let end = Instant::now() + d;
        let mut events = Events::with_capacity(4096);
        while Instant::now() < end {
            let _ = self.poll.poll(&mut events, Some(Duration::from_millis(10)));
            let now = Instant::now();
            let ready: Vec<usize> = events.iter().map(|e| e.token().0).collect();
            for i in ready {
                self.receive(i, now);
            }
        }
    }
}

fn join(now: Instant, server: SocketAddr, room: &str, creator: bool) -> JoinSession {
    let mut cfg = JoinConfig::new(server, info(if creator { "c" } else { "j" }));
    cfg.room = room.into();
    cfg.creator = creator;
    JoinSession::new(now, cfg)
}
