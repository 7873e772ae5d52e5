//! A simulated world for netplay: real session participants (`session::Participant`) and a
//! real dedicated server (`serve::Rooms`), each at an address, over the network
//! conditioner (`net::conditioner`), with the real frame runner (`app::Runner`) on a manual
//! clock driving a toy machine. Time jumps from one deadline to the next, so a 10-minute
//! lobby or a minute-long outage takes milliseconds. On top of the conditioner's delay, loss
//! and jitter, a node's link can go down for a while (both ways), its address can change
//! (its NAT mapping was re-created, it moved to another network), and its whole process can
//! stop (SIGSTOP, a laptop asleep): then it neither runs nor reads, and its socket queues
//! what arrives.
//!
//! It is one [`Simulation`] (the one loop every simulation here runs on, over the one
//! network model, [`SimNet`]): `run_until` delivers what is due, steps every machine,
//! sends, and jumps to the next deadline.
//!
//! This file holds the world, its nodes and its network; `feed` a node's frame loop (the
//! observer that works the toy machine, and the runner over the feed that ships,
//! `netplay::feed::ParticipantFeed`), `hosted` the rooms their creators host (neither imports
//! the other); `toy` the toy machine, `node_log` what a node saw, `scenario` what the
//! scenarios share, and the `*tests` files the scenarios. Everything here is test-only.

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::app::{Clock, Status};
use crate::input::{Pad, MAX_PLAYERS};
use crate::lockstep;
use crate::net::sim::{SimNet, Simulation};
use crate::replay::Status as ReplayStatus;
use crate::serve::{OpenJob, Rooms, ServeConfig, ServeEvent};
use crate::session::msg::OpenRoom;
use crate::session::{
    Endpoint, EndpointConfig, HostConfig, JoinConfig, OpenEvent, Participant, ParticipantConfig,
    ParticipantEvent, RoomOpener, SessionError, SessionInfo, StartPayload,
};
use crate::wire::Transmit;

use crate::netplay::feed::{FeedEvent, ParticipantFeed};
use node_log::{NodeLog, CHECKSUM_INTERVAL};
pub use toy::Toy;

/// A clock the world moves.
#[derive(Clone)]
pub struct WorldClock(Rc<Cell<Instant>>);

impl Clock for WorldClock {
    fn now(&mut self) -> Instant {
        self.0.get()
    }
}

/// A player: a participant, a runner and a toy machine at an address.
pub struct Node {
    pub name: String,
    /// Where its datagrams come from now.
    pub addr: SocketAddr,
    pub runner: feed::NodeRunner,
    pub toy: Toy,
    /// The frame loop started (a joiner's once it had the start state).
    running: bool,
    next_tick: Instant,
    /// Stopped (SIGSTOP) until then: nothing runs, arrivals queue.
    asleep_until: Option<Instant>,
    /// Its frame loop stands still until then (a window dragged, a slow disk); its network
    /// thread answers as usual.
    frozen_until: Option<Instant>,
    inbox: Vec<(Instant, SocketAddr, Vec<u8>)>,
    pub finished: bool,
    /// Its recording, from the frame its machine started at.
    pub log: NodeLog,
    /// The room it opened (its name, which the server may have made up).
    pub room: Option<String>,
    /// Every event its participant raised, with when.
    pub raised: Vec<(Instant, ParticipantEvent)>,
}

impl Node {
    pub fn feed(&self) -> &ParticipantFeed {
        self.runner.feed()
    }

    pub fn events(&self) -> impl Iterator<Item = &ParticipantEvent> {
        self.raised.iter().map(|(_, e)| e)
    }

    /// Keeps what its participant raised (the machine's work went to its observer).
    fn take_events(&mut self, now: Instant) {
        let feed = self.runner.feed_mut();
        feed.handle_events();
        while let Some(ev) = feed.poll_event() {
            if let FeedEvent::Participant(ev) = ev {
                self.raised.push((now, ev));
            }
        }
    }
}

/// The world: nodes, maybe a server, and the network between them.
pub struct World {
    /// The time the runners read (they hold this clock), kept equal to `now`.
    clock: Rc<Cell<Instant>>,
    /// The world's time (`Simulation` moves it), and when the current run began.
    now: Instant,
    run_start: Instant,
    pub nodes: Vec<Node>,
    pub server: Option<(SocketAddr, Rooms)>,
    pub server_events: Vec<ServeEvent>,
    /// The network between them.
    pub net: SimNet,
    /// Frames every player stops before.
    pub frames: u32,
    /// Frames a player's picture may run ahead (speculation; 0: none), for nodes made
    /// from now on.
    pub speculate: u32,
    /// Players' bots press buttons (else every pad rests), for nodes made from now on.
    pub bots: bool,
    next_port: u16,
    /// Rooms being opened.
    openers: Vec<Opening>,
    /// Rooms that could not open: (creator's name, why).
    pub open_failures: Vec<(String, SessionError)>,
    /// Every datagram that reached the server (kept when `keep_to_server`).
    pub to_server: Vec<Vec<u8>>,
    pub keep_to_server: bool,
    /// Hosts handed out so far (each node gets an address of its own).
    next_host: u32,
    /// How long the server's opening worker takes to check an upload and build its room
    /// (one at a time; zero by default).
    pub job_time: Duration,
    /// Its jobs, with when each is done.
    jobs: Vec<(Instant, OpenJob)>,
}

/// A room being opened by its creator, who joins it once the upload is done.
struct Opening {
    name: String,
    at: SocketAddr,
    opener: RoomOpener,
    password: Option<String>,
    cfg: ParticipantConfig,
    /// It hosts the room itself (`hosted`), with this many seats, starting with this
    /// many players.
    hosted: Option<(u8, u8)>,
}

/// What a room's creator asks for.
#[derive(Clone, Debug, Default)]
pub struct RoomSpec {
    /// Its name (empty: the server makes one up).
    pub room: String,
    pub seats: u8,
    pub password: Option<String>,
    pub mode: Option<lockstep::Mode>,
    /// 0: the mode's default.
    pub keyframe_interval: u8,
    /// Core option values the joiners are given.
    pub options: Vec<(String, String)>,
    /// Players the game starts with (0: every seat).
    pub start_with: u8,
}

/// What `name` asks a server for to open the room `spec` describes.
fn room_request(name: &str, spec: &RoomSpec) -> OpenRoom {
    OpenRoom {
        room: spec.room.clone(),
        players: spec.seats,
        start_with: if spec.start_with == 0 {
            spec.seats
        } else {
            spec.start_with
        },
        keyframe_interval: spec.keyframe_interval,
        mode: spec.mode,
        password: spec.password.is_some(),
        core_name: "toy".into(),
        core_version: "1".into(),
        player_name: name.into(),
        ..OpenRoom::default()
    }
}

/// Session info every simulated peer runs.
pub fn info(name: &str) -> SessionInfo {
    SessionInfo {
        core_name: "toy".into(),
        core_version: "1".into(),
        player_name: name.into(),
        ..SessionInfo::default()
    }
}

fn addr(host: u8, port: u16) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, host], port))
}

mod feed;
mod hosted;
mod node_log;
pub mod scenario;
pub mod toy;

#[cfg(test)]
mod direct_tests;
#[cfg(test)]
mod handover_tests;
#[cfg(test)]
mod pause_tests;
#[cfg(test)]
mod rollback_tests;
#[cfg(test)]
mod room_tests;
#[cfg(test)]
mod tests;

/// The longest the world's clock jumps at once, so that a scenario's `done` is looked at
/// often enough.
const MAX_STEP: Duration = Duration::from_millis(50);

impl Simulation for World {
    // The world's finest step: frames are paced to the microsecond.
    const MIN_STEP: Duration = Duration::from_micros(50);

    fn net_and_clock(&mut self) -> (&mut SimNet, &mut Instant, Instant) {
        (&mut self.net, &mut self.now, self.run_start)
    }

    fn deliver(&mut self, from: SocketAddr, to: SocketAddr, bytes: &[u8]) {
        let now = self.now;
        if let Some((at, rooms)) = &mut self.server {
            if *at == to {
                if self.keep_to_server {
                    self.to_server.push(bytes.to_vec());
                }
                rooms.handle_datagram(now, from, bytes);
                return;
            }
        }
        if let Some(n) = self.nodes.iter_mut().find(|n| n.addr == to) {
            n.inbox.push((now, from, bytes.to_vec()));
        } else if let Some(o) = self.openers.iter_mut().find(|o| o.at == to) {
            o.opener.handle_datagram(now, from, bytes);
        }
    }

    fn step(&mut self) -> Vec<(SocketAddr, Transmit)> {
        self.step_all()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Some(self.next_deadline())
    }
}

impl World {
    /// A world whose links all have `netsim` (the `--netsim` syntax without a seed).
    pub fn new(netsim: &str, frames: u32) -> World {
        let start = Instant::now();
        World {
            clock: Rc::new(Cell::new(start)),
            now: start,
            run_start: start,
            nodes: Vec::new(),
            server: None,
            server_events: Vec::new(),
            net: SimNet::new(netsim),
            frames,
            speculate: 0,
            bots: true,
            next_port: 40_000,
            openers: Vec::new(),
            open_failures: Vec::new(),
            to_server: Vec::new(),
            keep_to_server: false,
            next_host: 2,
            job_time: Duration::ZERO,
            jobs: Vec::new(),
        }
    }

    pub fn now(&self) -> Instant {
        self.now
    }

    /// An address of a machine of its own (10.2.0.0/16), and the entropy its keys come from.
    fn fresh_addr(&mut self) -> (SocketAddr, [u8; 32]) {
        let h = self.next_host;
        self.next_host += 1;
        self.next_port += 1;
        let ip = [10, 2, (h >> 8) as u8, h as u8];
        let mut entropy = [0x3c; 32];
        entropy[..4].copy_from_slice(&h.to_le_bytes());
        (SocketAddr::from((ip, self.next_port)), entropy)
    }

    fn push_node(
        &mut self,
        name: &str,
        at: SocketAddr,
        participant: Participant,
        running: bool,
    ) -> usize {
        let seed = self.nodes.len() as u64 + 7;
        let log = NodeLog::default();
        let mut runner = self.runner(participant, seed);
        if running {
            // The host's machine runs from power-on.
            feed::start(&mut runner, &log, 0, None);
        }
        self.nodes.push(Node {
            name: name.into(),
            addr: at,
            runner,
            toy: Toy::default(),
            running,
            next_tick: self.now(),
            asleep_until: None,
            frozen_until: None,
            inbox: Vec::new(),
            finished: false,
            log,
            room: None,
            raised: Vec::new(),
        });
        self.nodes.len() - 1
    }

    /// A direct host for `players` players (its own included), at 10.0.0.1:7845.
    pub fn host(&mut self, players: u8, cfg: ParticipantConfig) -> usize {
        self.host_in(players, cfg, lockstep::Mode::Strict)
    }

    /// A dedicated server at 10.0.0.100:7845.
    pub fn serve(&mut self) -> SocketAddr {
        self.serve_with(ServeConfig {
            entropy: [9; 32],
            ..ServeConfig::default()
        })
    }

    /// A dedicated server with `cfg` at 10.0.0.100:7845.
    pub fn serve_with(&mut self, cfg: ServeConfig) -> SocketAddr {
        let at = addr(100, 7845);
        self.server = Some((at, Rooms::new(cfg)));
        at
    }

    /// `name` opens room `room` with `seats` seats on the server, then joins it (a node
    /// named `name` appears once the upload is done).
    pub fn open_room(&mut self, name: &str, room: &str, seats: u8, cfg: ParticipantConfig) {
        let spec = RoomSpec {
            room: room.into(),
            seats,
            ..RoomSpec::default()
        };
        self.open_room_as(name, spec, cfg);
    }

    /// `name` opens the room `spec` describes, then joins it.
    pub fn open_room_as(&mut self, name: &str, spec: RoomSpec, cfg: ParticipantConfig) {
        let (server, _) = self.server.as_ref().expect("a server");
        let server = *server;
        let (at, _) = self.fresh_addr();
        let open = room_request(name, &spec);
        let payload = StartPayload {
            options: spec.options,
            state: Toy::default().state(),
            sram: Vec::new(),
        };
        let opener = RoomOpener::new(self.now(), server, open, &payload).expect("opener");
        self.openers.push(Opening {
            name: name.into(),
            at,
            opener,
            password: spec.password,
            cfg,
            hosted: None,
        });
    }

    /// The node named `name`, once it exists.
    pub fn node(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Node `i` is killed (`kill -9`): it sends nothing more, ever.
    pub fn kill(&mut self, i: usize) {
        self.nodes[i].asleep_until = Some(self.now() + Duration::from_secs(1_000_000));
        self.nodes[i].finished = true;
    }

    /// A joiner named `name` of the host (or room) at `to`, on its own machine.
    pub fn join(
        &mut self,
        name: &str,
        to: SocketAddr,
        room: Option<&str>,
        cfg: ParticipantConfig,
    ) -> usize {
        self.join_as(name, to, room, None, cfg)
    }

    /// `join`, giving `password`.
    pub fn join_as(
        &mut self,
        name: &str,
        to: SocketAddr,
        room: Option<&str>,
        password: Option<&str>,
        cfg: ParticipantConfig,
    ) -> usize {
        self.join_node(name, to, room, cfg, |j| {
            j.password = password.map(Into::into)
        })
    }

    /// A joiner named `name` of the host (or room) at `to`, at a fresh address, its join
    /// config finished by `set`.
    fn join_node(
        &mut self,
        name: &str,
        to: SocketAddr,
        room: Option<&str>,
        cfg: ParticipantConfig,
        set: impl FnOnce(&mut JoinConfig),
    ) -> usize {
        let (at, entropy) = self.fresh_addr();
        let mut j = JoinConfig::new(to, info(name));
        j.entropy = entropy;
        j.room = room.unwrap_or_default().into();
        set(&mut j);
        let p = Participant::join(self.now(), j, lockstep::Config::default(), cfg);
        self.push_node(name, at, p, false)
    }

    /// `join` by a player whose last process here was given `seat_key` (a fresh process
    /// that read it from disk, as `netplay::seat_keys` keeps it).
    pub fn join_with_key(
        &mut self,
        name: &str,
        to: SocketAddr,
        seat_key: [u8; crate::session::msg::SEAT_KEY_LEN],
        cfg: ParticipantConfig,
    ) -> usize {
        self.join_node(name, to, None, cfg, |j| j.seat_key = seat_key)
    }

    /// Node `i`'s player leaves on purpose (a goodbye, then it runs no more frames).
    pub fn leave(&mut self, i: usize, reason: &str) {
        self.nodes[i].runner.feed_mut().participant.close(reason);
        self.nodes[i].finished = true;
    }

    /// Why node `i`'s session ended, if it did.
    pub fn failure(&self, i: usize) -> Option<&SessionError> {
        self.nodes[i].events().find_map(|e| match e {
            ParticipantEvent::Ended(e) => Some(e),
            _ => None,
        })
    }

    /// Node `i`'s machine goes its own way after session frame `frame` (a desync).
    pub fn diverge(&mut self, i: usize, frame: u32) {
        self.nodes[i].toy.diverge_at = Some(frame);
    }

    /// A datagram reaches the server from `from` now, as if sent by it.
    pub fn inject_to_server(&mut self, from: SocketAddr, bytes: &[u8]) {
        let now = self.now();
        let (_, rooms) = self.server.as_mut().expect("a server");
        rooms.handle_datagram(now, from, bytes);
    }

    /// A spectator named `name` of the host at `to`.
    pub fn watch(&mut self, name: &str, to: SocketAddr, cfg: ParticipantConfig) -> usize {
        self.watch_room(name, to, None, cfg)
    }

    /// A spectator named `name` of the host (or room) at `to`.
    pub fn watch_room(
        &mut self,
        name: &str,
        to: SocketAddr,
        room: Option<&str>,
        cfg: ParticipantConfig,
    ) -> usize {
        self.join_node(name, to, room, cfg, |j| j.watch = true)
    }

    /// The address of node `i`'s host or server.
    /// Node `i`'s router forwards `outside` to it, and the node knows (as `netplay` tells
    /// its participant when the port mapping succeeds).
    pub fn map_port(&mut self, i: usize, outside: SocketAddr) {
        let inside = self.nodes[i].addr;
        self.net.forward(outside, inside);
        self.nodes[i]
            .runner
            .feed_mut()
            .participant
            .handle_mapped(Some(outside));
    }

    pub fn addr_of(&self, i: usize) -> SocketAddr {
        self.nodes[i].addr
    }

    /// Nothing gets to or from node `i` for `d` from now.
    pub fn outage(&mut self, i: usize, d: Duration) {
        let now = self.now();
        self.net.outage(self.nodes[i].addr, now, now + d);
    }

    /// Node `i`'s address changes (a new port from its router, or another network): what
    /// is sent to the old one is lost from now on.
    pub fn move_node(&mut self, i: usize, new_ip: bool) {
        let old = self.nodes[i].addr;
        self.next_port += 1;
        let new = if new_ip {
            SocketAddr::from(([10, 1, 0, old.ip().to_string().len() as u8], self.next_port))
        } else {
            SocketAddr::new(old.ip(), self.next_port)
        };
        self.net.moved(old, new);
        self.nodes[i].addr = new;
    }

    /// Node `i`'s process stops for `d` (SIGSTOP, a laptop asleep), then goes on.
    pub fn sleep(&mut self, i: usize, d: Duration) {
        self.nodes[i].asleep_until = Some(self.now() + d);
    }

    /// Node `i`'s frame loop stands still for `d` (nothing says so to the others), while its
    /// network thread goes on.
    pub fn freeze(&mut self, i: usize, d: Duration) {
        self.nodes[i].frozen_until = Some(self.now() + d);
    }

    /// Node `i`'s player asks to pause (`true`) or resume the game, as P does.
    pub fn request_pause(&mut self, i: usize, pause: bool) {
        if let Some(c) = self.nodes[i].runner.feed_mut().participant.client_mut() {
            c.request_pause(pause);
        }
    }

    /// A host like [`World::host`] whose session runs in `mode`.
    pub fn host_in(&mut self, players: u8, cfg: ParticipantConfig, mode: lockstep::Mode) -> usize {
        let now = self.now();
        let mut host = HostConfig::new(0x5eed, [1; 32], 60.0);
        host.max_players = players;
        host.keyframe_interval = mode.default_keyframe_interval() as u8;
        host.mode = mode;
        let lcfg = lockstep::Config {
            players,
            mode,
            ..lockstep::Config::default()
        }
        .with_keyframe_interval(mode.default_keyframe_interval());
        let ecfg = EndpointConfig {
            host,
            lockstep: lcfg.clone(),
            lobby_timeout: None,
        };
        let endpoint = Endpoint::new(now, ecfg, info("host"), Toy::default().state(), Vec::new())
            .expect("endpoint");
        let p = Participant::host(now, endpoint, lcfg, cfg);
        self.push_node("host", addr(1, 7845), p, true)
    }

    /// Runs the server, the rooms being opened and every node at `now`; returns what they
    /// send.
    fn step_all(&mut self) -> Vec<(SocketAddr, Transmit)> {
        let now = self.now;
        self.clock.set(now);
        let mut out = Vec::new();
        if let Some((at, rooms)) = &mut self.server {
            if rooms.poll_timeout().is_some_and(|t| t <= now) {
                rooms.handle_timeout(now);
            }
            // The server's opening worker (`serve::opening`), `job_time` per job.
            while let Some(job) = rooms.poll_job() {
                let done = self.jobs.last().map_or(now, |(t, _)| (*t).max(now));
                self.jobs.push((done + self.job_time, job));
            }
            while self.jobs.first().is_some_and(|(t, _)| *t <= now) {
                let (_, job) = self.jobs.remove(0);
                rooms.handle_opened(now, job.run());
            }
            while let Some(t) = rooms.poll_transmit(now) {
                out.push((*at, t));
            }
            while let Some(ev) = rooms.poll_event() {
                self.server_events.push(ev);
            }
        }
        let mut uploaded = Vec::new();
        let mut failed = Vec::new();
        for (i, o) in self.openers.iter_mut().enumerate() {
            if o.opener.poll_timeout().is_some_and(|t| t <= now) {
                o.opener.handle_timeout(now);
            }
            while let Some(t) = o.opener.poll_transmit(now) {
                out.push((o.at, t));
            }
            while let Some(ev) = o.opener.poll_event() {
                match ev {
                    OpenEvent::Uploaded { room, .. } => uploaded.push((i, room)),
                    OpenEvent::Failed(e) => failed.push((i, e)),
                    OpenEvent::Opened { .. } | OpenEvent::Moved { .. } => {}
                }
            }
        }
        for (i, e) in failed.into_iter().rev() {
            let o = self.openers.remove(i);
            self.open_failures.push((o.name, e));
        }
        for (i, room) in uploaded.into_iter().rev() {
            let o = self.openers.remove(i);
            if o.hosted.is_some() {
                self.start_hosted(now, o, room);
                continue;
            }
            let mut j = JoinConfig::new(o.opener.server(), info(&o.name));
            j.entropy = [o.at.port() as u8; 32];
            j.room = room.clone();
            j.creator = true;
            j.password = o.password;
            let p = Participant::join(now, j, lockstep::Config::default(), o.cfg);
            let k = self.push_node(&o.name, o.at, p, false);
            self.nodes[k].room = Some(room);
        }
        for n in &mut self.nodes {
            if let Some(until) = n.asleep_until {
                if now < until {
                    continue;
                }
                n.asleep_until = None;
                n.next_tick = now;
            }
            for (_, from, bytes) in n.inbox.drain(..) {
                // Read now: a stopped process reads its queue when it wakes.
                n.runner
                    .feed_mut()
                    .participant
                    .handle_datagram(now, from, &bytes);
            }
            let p = &mut n.runner.feed_mut().participant;
            if p.poll_timeout().is_some_and(|t| t <= now) {
                p.handle_timeout(now);
            }
            if !n.running {
                // A joiner's frame loop starts once it loaded the start state.
                n.take_events(now);
                let start = n.raised.iter().find_map(|(_, e)| match e {
                    ParticipantEvent::Ready(start) => Some(start.payload.state.clone()),
                    _ => None,
                });
                if let Some(state) = start {
                    n.toy.restore(&state);
                    feed::start(&mut n.runner, &n.log, n.toy.frame, Some(state));
                    n.running = true;
                    n.next_tick = now;
                }
            }
            let frozen = n.frozen_until.is_some_and(|t| now < t);
            if n.running && !n.finished && now >= n.next_tick && !frozen {
                let tick = n
                    .runner
                    .tick(&mut n.toy, &[Pad::NEUTRAL; MAX_PLAYERS])
                    .expect("tick");
                n.next_tick = tick.wake_at.max(now + Duration::from_micros(100));
                if matches!(tick.status, Status::Ended(_)) {
                    n.finished = true;
                }
            }
            n.take_events(now);
            let feed = n.runner.feed_mut();
            while let Some(t) = feed.participant.poll_transmit(now) {
                out.push((n.addr, t));
            }
        }
        out
    }

    /// The earliest deadline of the server, the openers and the nodes, and at most
    /// [`MAX_STEP`] ahead.
    fn next_deadline(&self) -> Instant {
        let now = self.now;
        let mut next = now + MAX_STEP;
        if let Some((_, rooms)) = &self.server {
            if let Some(t) = rooms.poll_timeout() {
                next = next.min(t);
            }
        }
        for o in &self.openers {
            if let Some(t) = o.opener.poll_timeout() {
                next = next.min(t);
            }
        }
        for n in &self.nodes {
            if let Some(until) = n.asleep_until {
                next = next.min(until);
                continue;
            }
            if !n.inbox.is_empty() {
                next = now;
            }
            if n.running && !n.finished {
                next = next.min(n.next_tick.max(n.frozen_until.unwrap_or(n.next_tick)));
            }
            if let Some(t) = n.runner.feed().participant.poll_timeout() {
                next = next.min(t);
            }
        }
        next
    }

    /// Steps (the one simulation loop, `Simulation::run_until`) until `done` holds or
    /// `limit` of world time has passed since this call; true if it held.
    pub fn run_until(&mut self, limit: Duration, done: impl FnMut(&World) -> bool) -> bool {
        self.run_start = self.now;
        <World as Simulation>::run_until(self, limit, done)
    }

    /// Runs for `d` of world time.
    pub fn run_for(&mut self, d: Duration) {
        self.run_until(d, |_| false);
    }

    /// Every node's toy machine ran the same inputs: the hash after `frame` is the same on
    /// each that ran it (and at least two did).
    pub fn assert_in_sync(&self, frame: u32) {
        let hashes: Vec<(String, u64)> = self
            .nodes
            .iter()
            .filter_map(|n| n.toy.hash_after(frame).map(|h| (n.name.clone(), h)))
            .collect();
        assert!(hashes.len() >= 2, "frame {frame} ran on {hashes:?}");
        assert!(
            hashes.windows(2).all(|w| w[0].1 == w[1].1),
            "out of sync at frame {frame}: {hashes:?}"
        );
    }

    /// Every node's recording replays on a fresh machine with every checksum matching (the
    /// recordings end here).
    pub fn assert_logs_verify(&self) {
        for n in &self.nodes {
            let Some((frames, v, status)) = n.log.verify(n.toy.diverge_at) else {
                continue;
            };
            let name = &n.name;
            assert!(
                matches!(status, Some(ReplayStatus::Complete { .. })),
                "{name}'s log ended {status:?}"
            );
            assert_eq!(v.first_desync, None, "{name}'s log does not replay");
            assert_eq!(v.matched, v.checked, "{name}: {v:?}");
            assert!(
                frames < u64::from(CHECKSUM_INTERVAL) || v.checked > 0,
                "{name}'s log of {frames} frames has no checksum: {v:?}"
            );
        }
    }

    /// Every node ran its last frame.
    pub fn all_finished(&self) -> bool {
        self.nodes.iter().all(|n| n.finished)
    }

    /// The session frame node `i` is at: the next that counts (a speculating machine may
    /// have run further).
    pub fn frame(&self, i: usize) -> u32 {
        let n = &self.nodes[i];
        n.feed()
            .participant
            .client()
            .map_or(n.toy.frame, |c| c.frame().0)
    }
}
