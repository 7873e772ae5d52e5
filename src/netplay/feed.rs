//! [`NetFeed`]: the frame runner's input feed for netplay. Each call moves datagrams between
//! the UDP endpoint and the sans-IO state machines (session handshake, lockstep server and
//! client), hands the local pad to the lockstep client, and returns the next frame the client
//! may run. The host's own player goes through the same lockstep client, with its datagrams
//! passed to the in-process server in memory.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::app::{Feed, FeedPoll};
use crate::input::{Bot, Inputs, Pad};
use crate::lockstep::{Client, ClientEvent, Frame, PeerId, Server, ServerEvent};
use crate::net::Endpoint;
use crate::session::{is_session_datagram, HostEvent, HostSession, JoinEvent, JoinSession};

/// How often a stalled feed wants to be asked again (the network is polled on each call).
const STALL_POLL: Duration = Duration::from_millis(1);

/// Checksums the frame observer computed, waiting to be handed to the lockstep client.
pub type ChecksumQueue = Rc<RefCell<VecDeque<(u32, u64)>>>;

/// Which end of the session this process is.
pub enum Role {
    Host {
        session: Box<HostSession>,
        server: Box<Server>,
    },
    Join {
        session: Box<JoinSession>,
        host: SocketAddr,
    },
}

/// Why a netplay session ended before the frame limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetEnd {
    /// The host said goodbye or vanished.
    HostLeft(String),
}

/// Netplay numbers gathered while running.
#[derive(Default)]
struct Counters {
    desyncs: u64,
    players_left: Vec<(u8, u32)>,
    /// RTT samples (ms, one per frame run), as a 1 ms histogram capped at 5 s.
    rtt_ms: Vec<u64>,
    rtt_count: u64,
}

impl Counters {
    fn record_rtt(&mut self, rtt: Duration) {
        if self.rtt_ms.is_empty() {
            self.rtt_ms = vec![0; 5001];
        }
        let ms = (rtt.as_secs_f64() * 1000.0).round().min(5000.0) as usize;
        self.rtt_ms[ms] += 1;
        self.rtt_count += 1;
    }

    fn rtt_median(&self) -> Option<u64> {
        let half = self.rtt_count.div_ceil(2);
        let mut seen = 0;
        for (ms, n) in self.rtt_ms.iter().enumerate() {
            seen += n;
            if seen >= half && *n > 0 {
                return Some(ms as u64);
            }
        }
        None
    }
}

pub struct NetFeed {
    endpoint: Endpoint,
    role: Role,
    client: Client,
    bot: Option<Bot>,
    local: Pad,
    checksums: ChecksumQueue,
    end: Option<NetEnd>,
    counters: Counters,
    names: Vec<(u8, String)>,
    /// For the status line's average bandwidth only (the runner owns the frame clock).
    started: Instant,
}

impl NetFeed {
    pub fn new(endpoint: Endpoint, role: Role, client: Client, bot: Option<Bot>) -> NetFeed {
        NetFeed {
            endpoint,
            role,
            client,
            bot,
            local: Pad::NEUTRAL,
            checksums: Rc::default(),
            end: None,
            counters: Counters::default(),
            names: Vec::new(),
            started: Instant::now(),
        }
    }

    /// Player names by slot, for log lines.
    pub fn with_names(mut self, names: Vec<(u8, String)>) -> NetFeed {
        self.names = names;
        self
    }

    /// Where the frame observer puts `(frame, checksum)` pairs for the desync check.
    pub fn checksum_queue(&self) -> ChecksumQueue {
        self.checksums.clone()
    }

    pub fn end(&self) -> Option<&NetEnd> {
        self.end.as_ref()
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn server(&self) -> Option<&Server> {
        match &self.role {
            Role::Host { server, .. } => Some(server),
            Role::Join { .. } => None,
        }
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn name(&self, slot: u8) -> String {
        self.names
            .iter()
            .find(|(s, _)| *s == slot)
            .map_or_else(|| format!("player {}", slot + 1), |(_, n)| n.clone())
    }

    /// Receives and dispatches every waiting datagram, runs timers and handles events.
    fn pull(&mut self, now: Instant) {
        let datagrams = match self.endpoint.recv(now) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!("netplay: receiving: {e}");
                Vec::new()
            }
        };
        for (from, bytes) in datagrams {
            let valid = match &mut self.role {
                Role::Host { session, server } => {
                    if is_session_datagram(&bytes) {
                        session.handle_datagram(now, from, &bytes).is_ok()
                    } else if let Some(slot) = session.slot_of(from) {
                        // The server counts what it rejects itself.
                        server.handle_datagram(now, PeerId(slot), &bytes);
                        true
                    } else {
                        false
                    }
                }
                Role::Join { session, host } => {
                    if from != *host {
                        false
                    } else if is_session_datagram(&bytes) {
                        session.handle_datagram(now, from, &bytes).is_ok()
                    } else {
                        self.client.handle_datagram(now, &bytes);
                        true
                    }
                }
            };
            if !valid {
                self.endpoint.note_invalid();
            }
        }
        match &mut self.role {
            Role::Host { session, server } => {
                session.handle_timeout(now);
                server.handle_timeout(now);
            }
            Role::Join { session, .. } => session.handle_timeout(now),
        }
        self.client.handle_timeout(now);
        self.handle_events(now);
    }

    fn handle_events(&mut self, now: Instant) {
        let mut left = Vec::new();
        if let Role::Host { session, server } = &mut self.role {
            while let Some(ev) = session.poll_event() {
                match ev {
                    HostEvent::Left { slot, reason } => left.push((slot, reason.to_string())),
                    HostEvent::Refused { addr, reason } => {
                        tracing::info!("netplay: refused {addr}: {reason}")
                    }
                    other => tracing::debug!("netplay: {other:?}"),
                }
            }
            for (slot, _) in &left {
                // Already gone from the server when it timed out there first.
                let _ = server.remove_peer(PeerId(*slot), now);
            }
            while let Some(ev) = server.poll_event() {
                match ev {
                    ServerEvent::PeerSilent { peer, silent_for } => tracing::warn!(
                        "netplay: nothing from player {} for {} ms",
                        peer.0 + 1,
                        silent_for.as_millis()
                    ),
                    ServerEvent::PeerLeft {
                        peer,
                        from_frame,
                        reason,
                    } => {
                        tracing::warn!(
                            "netplay: player {} is out ({reason:?}); neutral input from frame {}",
                            peer.0 + 1,
                            from_frame.0
                        );
                        session.kick(peer.0, "timed out");
                    }
                    ServerEvent::Desync {
                        frame,
                        peer,
                        expected,
                        got,
                    } => tracing::error!(
                        "netplay: desync at frame {}: player {} has {got:016x}, host has {expected:016x}",
                        frame.0,
                        peer.0 + 1
                    ),
                }
            }
        }
        for (slot, reason) in left {
            tracing::info!("netplay: {} {reason}", self.name(slot));
        }
        if let Role::Join { session, .. } = &mut self.role {
            while let Some(ev) = session.poll_event() {
                if let JoinEvent::Failed(e) = ev {
                    tracing::error!("netplay: {e}");
                    self.end.get_or_insert(NetEnd::HostLeft(e.to_string()));
                }
            }
        }
        while let Some(ev) = self.client.poll_event() {
            match ev {
                ClientEvent::ServerSilent { silent_for } => tracing::warn!(
                    "netplay: nothing from the host for {} ms",
                    silent_for.as_millis()
                ),
                ClientEvent::ServerLost => {
                    let msg = "the host stopped answering (no datagram for the timeout)";
                    tracing::error!("netplay: {msg}");
                    self.end.get_or_insert(NetEnd::HostLeft(msg.into()));
                }
                ClientEvent::PlayerLeft { peer, from_frame } => {
                    tracing::info!(
                        "netplay: {} left; neutral input from frame {}",
                        self.name(peer.0),
                        from_frame.0
                    );
                    self.counters.players_left.push((peer.0, from_frame.0));
                }
                ClientEvent::Desync { frame, peer } => {
                    self.counters.desyncs += 1;
                    tracing::error!(
                        "netplay: desync detected at frame {}: {} differs from the host",
                        frame.0,
                        self.name(peer.0)
                    );
                }
            }
        }
    }

    /// Sends everything the state machines want to send; the host's client and server talk
    /// in memory.
    fn push(&mut self, now: Instant) {
        match &mut self.role {
            Role::Host { session, server } => {
                let me = self.client.me();
                // A handful of rounds settles it: a reply can only trigger acks.
                for _ in 0..4 {
                    let mut moved = false;
                    while let Some(bytes) = self.client.poll_transmit(now) {
                        server.handle_datagram(now, me, &bytes);
                        moved = true;
                    }
                    while let Some((peer, bytes)) = server.poll_transmit(now) {
                        if peer == me {
                            self.client.handle_datagram(now, &bytes);
                            moved = true;
                        } else if let Some(addr) = session.addr_of(peer.0) {
                            self.endpoint.send(now, addr, bytes);
                        }
                    }
                    if !moved {
                        break;
                    }
                }
                while let Some(t) = session.poll_transmit(now) {
                    self.endpoint.send(now, t.to, t.bytes);
                }
            }
            Role::Join { session, host } => {
                while let Some(bytes) = self.client.poll_transmit(now) {
                    self.endpoint.send(now, *host, bytes);
                }
                while let Some(t) = session.poll_transmit(now) {
                    self.endpoint.send(now, t.to, t.bytes);
                }
            }
        }
        self.endpoint.flush_due(now);
    }

    /// Keeps the network going without running frames: the host serves its peers until they
    /// have left (or `grace` ran out), so that they can finish the frames already published.
    pub fn linger(&mut self, grace: Duration) {
        let start = Instant::now();
        loop {
            let now = Instant::now();
            self.pull(now);
            self.push(now);
            let remaining = match &self.role {
                Role::Host { server, .. } => server.peers().filter(|p| p.0 != 0).count(),
                Role::Join { .. } => 0,
            };
            if remaining == 0 || now.duration_since(start) >= grace {
                return;
            }
            let _ = self
                .endpoint
                .wait_until(now, Some(now + Duration::from_millis(5)));
        }
    }

    /// Says goodbye (the host to everyone, a joiner to the host) and flushes it out,
    /// including datagrams the network conditioner still holds.
    pub fn close(&mut self, reason: &str) {
        let now = Instant::now();
        match &mut self.role {
            Role::Host { session, .. } => session.shutdown(reason),
            Role::Join { session, .. } => session.leave(reason),
        }
        self.push(now);
        let deadline = now + Duration::from_millis(500);
        while self.endpoint.queued() > 0 && Instant::now() < deadline {
            let now = Instant::now();
            self.endpoint.flush_due(now);
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn take_checksums(&mut self) {
        let mut queue = self.checksums.borrow_mut();
        while let Some((frame, sum)) = queue.pop_front() {
            self.client.report_checksum(Frame(frame), sum);
        }
    }

    /// The largest RTT this peer sees: the host's own client talks in memory, so the host
    /// reports its slowest peer.
    fn rtt(&self) -> Option<Duration> {
        match &self.role {
            Role::Host { server, .. } => server
                .peers()
                .filter(|p| *p != self.client.me())
                .filter_map(|p| server.rtt(p))
                .max(),
            Role::Join { .. } => self.client.rtt(),
        }
    }

    /// One line for the window: RTT per peer, keyframe interval and lead, stalls, kbit/s.
    pub fn status_line(&self) -> String {
        let s = self.client.stats();
        let e = self.endpoint.stats();
        let secs = self.started.elapsed().as_secs_f64().max(0.001);
        let mut line = format!(
            "K {} lead {} stalls {} up {:.1} down {:.1} kbit/s",
            s.keyframe_interval,
            s.lead.map_or("-".into(), |l| l.to_string()),
            s.stalls,
            e.wire_bytes_sent as f64 * 8.0 / 1000.0 / secs,
            e.wire_bytes_received as f64 * 8.0 / 1000.0 / secs,
        );
        match &self.role {
            Role::Host { server, .. } => {
                for p in server.peers().filter(|p| *p != self.client.me()) {
                    let rtt = server
                        .rtt(p)
                        .map_or("-".into(), |r| r.as_millis().to_string());
                    line.push_str(&format!(" | P{} {} ms", p.0 + 1, rtt));
                }
            }
            Role::Join { .. } => {
                let rtt = s.rtt.map_or("-".into(), |r| r.as_millis().to_string());
                line.push_str(&format!(" | rtt {rtt} ms"));
            }
        }
        line
    }
}

impl Feed for NetFeed {
    fn sample(&mut self, now: Instant, local: &Inputs) {
        let mut pad = local[0];
        if let Some(bot) = &mut self.bot {
            pad.0 |= bot.next(u64::from(self.client.frame().0)).0;
        }
        self.local = pad;
        self.pull(now);
    }

    fn next(&mut self, now: Instant) -> FeedPoll {
        self.pull(now);
        self.take_checksums();
        if self.end.is_some() {
            return FeedPoll::End;
        }
        if let Some(bot) = &mut self.bot {
            // A bot decides per frame, even when several frames run in one tick.
            self.local.0 = bot.next(u64::from(self.client.frame().0)).0;
        }
        self.client.push_local_input(now, self.local);
        let frame = self.client.poll_frame();
        self.push(now);
        match frame {
            Some((_, inputs)) => {
                if let Some(rtt) = self.rtt() {
                    self.counters.record_rtt(rtt);
                }
                FeedPoll::Run(inputs)
            }
            None => FeedPoll::Wait(Some(now + STALL_POLL)),
        }
    }

    fn pace(&self) -> Option<f64> {
        Some(self.client.pace())
    }

    fn status_line(&self) -> Option<String> {
        Some(self.status_line())
    }

    fn stats(&self) -> Map<String, Value> {
        let s = self.client.stats();
        let e = self.endpoint.stats();
        let mut m = Map::new();
        m.insert(
            "kind".into(),
            json!(match self.role {
                Role::Host { .. } => "host",
                Role::Join { .. } => "join",
            }),
        );
        m.insert("slot".into(), json!(self.client.me().0));
        m.insert("stalls".into(), json!(s.stalls));
        m.insert("stall_ms".into(), json!(s.stalled.as_secs_f64() * 1000.0));
        m.insert(
            "input_latency_frames".into(),
            json!({ "median": s.latency.median(), "p95": s.latency.p95() }),
        );
        m.insert("rtt_ms".into(), json!(self.counters.rtt_median()));
        m.insert("keyframe_interval".into(), json!(s.keyframe_interval));
        m.insert("lead".into(), json!(s.lead));
        m.insert("pace".into(), json!(s.pace));
        let dropped = e.packets_dropped_invalid
            + s.traffic.packets_dropped_invalid
            + self
                .server()
                .map_or(0, |srv| srv.stats().traffic.packets_dropped_invalid);
        m.insert("bytes_sent".into(), json!(e.wire_bytes_sent));
        m.insert("bytes_received".into(), json!(e.wire_bytes_received));
        m.insert("payload_bytes_sent".into(), json!(e.bytes_sent));
        m.insert("payload_bytes_received".into(), json!(e.bytes_received));
        m.insert("packets_sent".into(), json!(e.packets_sent));
        m.insert("packets_received".into(), json!(e.packets_received));
        m.insert("packets_dropped_invalid".into(), json!(dropped));
        m.insert("desyncs_detected".into(), json!(self.counters.desyncs));
        m.insert(
            "players_left".into(),
            json!(self
                .counters
                .players_left
                .iter()
                .map(|(slot, frame)| json!({"slot": slot, "from_frame": frame}))
                .collect::<Vec<_>>()),
        );
        m
    }
}
