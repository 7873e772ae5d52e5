//! [`Endpoint`]: the server side of one session as one sans-IO state machine. It owns the
//! handshake and lobby ([`HostSession`]), the lockstep [`Server`] once the game starts, and
//! the desync recoveries under way ([`ResyncSend`]); it routes every datagram to the right
//! one and applies the policy that ties them together (a player who leaves the lobby or says
//! goodbye leaves the lockstep server, a player the server timed out is told so, a desync
//! asks for a state to send). `events` holds what it reports, `starting` how players get
//! into the game (the start, and states for late joiners, spectators and resyncs), `chat`
//! who hears the session's chat. It must not import `participant`, which drives it, nor anything
//! above `session`.
//!
//! `framelock host` drives one beside its own player's lockstep client, which talks to it in
//! memory ([`Endpoint::handle_local`], [`Endpoint::poll_local`]); a dedicated server drives
//! one per room, with no player of its own. Calling order, as for every state machine here:
//! feed each datagram to [`handle_datagram`](Endpoint::handle_datagram), call
//! [`handle_timeout`](Endpoint::handle_timeout) once [`poll_timeout`](Endpoint::poll_timeout)
//! is reached, then drain [`poll_transmit`](Endpoint::poll_transmit) and
//! [`poll_event`](Endpoint::poll_event). It never reads a clock and never touches a socket.

mod chat;
mod events;
mod recovery;

use recovery::{Recovery, StateFetch, FETCH_LIMIT};
mod starting;

pub use events::{EndpointEvent, PlayerOutReason};

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::input::MAX_PLAYERS;
use crate::lockstep::{
    self, Frame, PeerId, PeerLeftReason, Server, ServerEvent, ServerStats, Slot, SpectatorId,
};
use crate::wire::{link_overhead, Dropped, Handled, Header, Kind, Transmit, HEADER_LEN};

use super::chat::ChatRelay;
use super::{
    is_session_datagram, resync_request, HostConfig, HostEvent, HostSession, Player, ResyncRecv,
    ResyncSend, SessionError, SessionInfo, SessionStats, HELLO_INTERVAL, LOADING_LIMIT,
};

/// How long a player may load before the endpoint says that the game waits for it (the
/// usual start, a small game and a window, takes a few hundred milliseconds), and how often
/// it says so again.
const LOADING_QUIET: Duration = Duration::from_secs(1);
const LOADING_NOTICE: Duration = Duration::from_secs(5);
/// A spectator that falls too far behind again within this long of a fresh state cannot
/// follow the game on its link (its acknowledgements take over 2 s): it is sent away rather
/// than sent a state over and over.
const BEHIND_AGAIN: Duration = Duration::from_secs(30);

/// What an [`Endpoint`] needs besides the host's session settings.
#[derive(Clone, Debug)]
pub struct EndpointConfig {
    /// The handshake: session id, password, slots, whether slot 0 is a local player.
    pub host: HostConfig,
    /// The lockstep server's settings; `players`, `session` and `fps` are taken from `host`.
    pub lockstep: lockstep::Config,
    /// Give up the lobby after this long (raises [`EndpointEvent::LobbyExpired`]).
    pub lobby_timeout: Option<Duration>,
}

/// A joiner the game waits for: it has the start state, but does not run yet.
#[derive(Debug)]
struct Loading {
    slot: PeerId,
    /// How long it has had the start state, as of `heard`, its latest `Loading`.
    since: Duration,
    heard: Instant,
    /// When the endpoint last said it waits for it; `None` while it is quick.
    told: Option<Instant>,
}

impl Loading {
    fn waited(&self, now: Instant) -> Duration {
        self.since + now.saturating_duration_since(self.heard)
    }
}

/// Datagrams the endpoint turned away before any state machine used them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Malformed, unknown-sender, unexpected and wrong-session datagrams, the session
    /// layer's and the router's (the lockstep server counts its own in `ServerStats`).
    pub dropped_invalid: u64,
    /// Datagrams from a joiner that holds the session keys whose tag did not check out.
    pub dropped_auth: u64,
    /// Chat messages over a sender's allowance (a modified client's flood), dropped.
    pub chat_flood_dropped: u64,
    /// Chat messages relayed.
    pub chat_relayed: u64,
}

/// The server side of one session. See the module docs for the calling order.
#[derive(Debug)]
pub struct Endpoint {
    cfg: EndpointConfig,
    session: HostSession,
    /// `None` in the lobby.
    server: Option<Server>,
    /// The in-process player, if any (slot 0 of `framelock host`).
    local: Option<PeerId>,
    resyncs: Vec<(Slot, ResyncSend)>,
    fetches: Vec<StateFetch>,
    /// Finished fetches whose last acks are still to go out.
    fetches_done: Vec<(PeerId, ResyncRecv)>,
    /// Each seat's standing in recovering from a desync.
    recovery: [Recovery; MAX_PLAYERS],
    next_resync_id: u32,
    loading: Vec<Loading>,
    /// When each spectator last fell too far behind.
    fell_behind: Vec<(SpectatorId, Instant)>,
    lobby_opened: Instant,
    lobby_expired: bool,
    out: VecDeque<Transmit>,
    to_local: VecDeque<Vec<u8>>,
    chat: ChatRelay,
    events: VecDeque<EndpointEvent>,
    stats: EndpointStats,
}

crate::wire::impl_machine!(Endpoint, EndpointEvent);

impl Endpoint {
    /// Opens the lobby. `state` and `sram` are the start state every joiner receives;
    /// `info.options` the option values every joiner applies.
    pub fn new(
        now: Instant,
        cfg: EndpointConfig,
        info: SessionInfo,
        state: Vec<u8>,
        sram: Vec<u8>,
    ) -> Result<Endpoint, SessionError> {
        let local = cfg.host.host_is_player.then_some(PeerId(0));
        let session = HostSession::new(cfg.host.clone(), info, state, sram)?;
        let chat = ChatRelay::new(cfg.host.session_id, cfg.host.host_is_player);
        Ok(Endpoint {
            cfg,
            session,
            server: None,
            local,
            resyncs: Vec::new(),
            fetches: Vec::new(),
            fetches_done: Vec::new(),
            recovery: [Recovery::default(); MAX_PLAYERS],
            next_resync_id: 0,
            loading: Vec::new(),
            fell_behind: Vec::new(),
            lobby_opened: now,
            lobby_expired: false,
            out: VecDeque::new(),
            to_local: VecDeque::new(),
            chat,
            events: VecDeque::new(),
            stats: EndpointStats::default(),
        })
    }

    /// The session's lockstep mode.
    pub fn mode(&self) -> lockstep::Mode {
        self.cfg.lockstep.mode
    }

    /// The session id every datagram of it carries.
    pub fn session_id(&self) -> u32 {
        self.session.session_id()
    }

    /// Players in the session, the local one included, by slot.
    pub fn players(&self) -> Vec<Player> {
        self.session.players()
    }

    /// The local player's slot, if it has one.
    pub fn local(&self) -> Option<PeerId> {
        self.local
    }

    /// True once the lobby closed and the lockstep server runs.
    pub fn game_started(&self) -> bool {
        self.server.is_some()
    }

    /// Tags `bytes` for the joiner at `addr`, if it was welcomed (see `session::direct`).
    pub fn seal_for(&self, addr: SocketAddr, bytes: &mut Vec<u8>) -> bool {
        self.session.seal_for(addr, bytes)
    }

    /// `datagram` without its tag if the tag is the joiner's at `addr`.
    pub fn open_from<'a>(&self, addr: SocketAddr, datagram: &'a [u8]) -> Option<&'a [u8]> {
        self.session.open_from(addr, datagram)
    }

    /// `datagram` from an unknown address without its tag, and whose it is, if it is one of
    /// the joiners' at `addrs`: tried within the session's budget for unknown addresses.
    pub fn open_from_any<'a>(
        &mut self,
        now: Instant,
        addrs: &[SocketAddr],
        datagram: &'a [u8],
    ) -> Option<(SocketAddr, &'a [u8])> {
        self.session.open_from_any(now, addrs, datagram)
    }

    /// Holds (`true`) or releases the start-state transfer to the joiner at `addr` (see
    /// `HostSession::hold_transfer`).
    pub fn hold_transfer(&mut self, addr: SocketAddr, hold: bool) {
        self.session.hold_transfer(addr, hold);
    }

    /// A datagram from `from`. Rejected ones are counted in [`EndpointStats`] or, for the
    /// lockstep server's, in its own stats (a wrong tag in the session's `dropped_auth`).
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Handled<'static> {
        // A joiner's tag is checked before anything reads a field of its datagram.
        let Some(datagram) = self.session.open(now, from, datagram) else {
            return Handled::Dropped(Dropped::Unauthentic);
        };
        let slot = self.session.slot_of(from);
        let kind = Header::parse(datagram).ok().map(|(h, _)| h.kind);
        let is_resync = kind == Some(Kind::Resync);
        let mut counted = false;
        let handled = if kind == Some(Kind::Chat) {
            self.handle_chat(now, slot, &datagram[HEADER_LEN..])
        } else if is_resync {
            let body = &datagram[HEADER_LEN..];
            let acked = self
                .resyncs
                .iter_mut()
                .find(|(s, _)| Some(*s) == slot)
                .is_some_and(|(_, tx)| tx.handle_datagram(now, body).is_taken());
            if acked {
                Handled::Taken
            } else {
                self.handle_fetched(now, slot, body)
            }
        } else if is_session_datagram(datagram) || self.server.is_none() {
            // In the lobby a ready joiner's CTRLs only show that it is still there.
            self.session.handle_opened(now, from, datagram).into()
        } else if let (Some(slot), Some(server)) = (slot, &mut self.server) {
            // The lockstep server counts what it drops.
            counted = true;
            server.handle_datagram(now, slot, datagram)
        } else {
            Handled::Dropped(Dropped::UnknownPeer(kind.unwrap_or(Kind::Ctrl)))
        };
        if !counted && !handled.is_taken() {
            self.stats.dropped_invalid += 1;
        }
        self.handle_machine_events(now);
        handled
    }

    /// A piece of a state a player sends because this endpoint asked it; once whole, it goes
    /// to the players it was for.
    fn handle_fetched(
        &mut self,
        now: Instant,
        from: Option<Slot>,
        body: &[u8],
    ) -> Handled<'static> {
        let Some(i) = self
            .fetches
            .iter()
            .position(|f| Some(Slot::Player(f.from)) == from)
        else {
            return Handled::Dropped(Dropped::Unexpected(Kind::Resync));
        };
        let handled = self.fetches[i].rx.handle_datagram(now, body);
        if let Some((frame, state)) = self.fetches[i].rx.poll_state() {
            let f = self.fetches.remove(i);
            tracing::debug!(from = f.from.0, frame, "fetched a state for a resync");
            self.handle_state(now, Frame(frame), state, &f.for_slots);
            // Its final acks still go out.
            self.fetches_done.push((f.from, f.rx));
        }
        handled
    }

    /// A datagram from the local player's lockstep client.
    pub fn handle_local(&mut self, now: Instant, datagram: &[u8]) {
        if let (Some(me), Some(server)) = (self.local, &mut self.server) {
            server.handle_datagram(now, me, datagram);
            self.handle_machine_events(now);
        }
    }

    /// The local player is still starting (its window opens): it counts as heard, as a
    /// joiner's `Loading` does.
    pub fn local_starting(&mut self, now: Instant) {
        if let (Some(me), Some(server)) = (self.local, &mut self.server) {
            server.starting(now, me);
        }
    }

    /// The machine's state as of the start of `frame`, for the players in `slots` (asked for
    /// by `Desync { send_state: true }`).
    pub fn handle_state(&mut self, now: Instant, frame: Frame, state: Vec<u8>, slots: &[Slot]) {
        for &slot in slots {
            if self.session.awaits_state(slot) {
                match self
                    .session
                    .handle_state(now, slot, frame, state.clone(), Vec::new())
                {
                    // Its stream starts at `frame` however long its path and the transfer
                    // take: a late join never depends on that.
                    Ok(()) => {
                        if let Some(server) = &mut self.server {
                            server.keep_from(slot, Some(frame));
                        }
                    }
                    Err(e) => {
                        tracing::error!("cannot send a state to {slot}: {e}");
                        self.session
                            .kick(slot, "the state of the game could not be sent");
                    }
                }
                continue;
            }
            match slot {
                Slot::Spectator(id) => {
                    // One that fell behind: its stream starts again at the fresh state.
                    let restarted = self
                        .server
                        .as_mut()
                        .is_some_and(|s| s.restart_spectator(now, id, frame).is_ok());
                    if !restarted {
                        continue;
                    }
                }
                Slot::Player(peer) => {
                    let r = &mut self.recovery[peer.index()];
                    if *r == Recovery::Awaiting {
                        *r = Recovery::Sending;
                    }
                }
            }
            self.next_resync_id += 1;
            match ResyncSend::new(now, self.next_resync_id, frame.0, state.clone()) {
                Ok(tx) => {
                    self.resyncs.retain(|(s, _)| *s != slot);
                    self.resyncs.push((slot, tx));
                }
                Err(e) => tracing::error!("cannot send the state to {slot}: {e}"),
            }
        }
    }

    /// Runs the timers: handshake resends and timeouts, the lobby's, the lockstep server's.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.session.handle_timeout(now);
        let recovery = &mut self.recovery;
        let mut starved = Vec::new();
        self.fetches.retain(|f| {
            let alive = now < f.since + FETCH_LIMIT;
            if !alive {
                tracing::warn!(
                    "{} sent no state for a resync in {} s",
                    f.from,
                    FETCH_LIMIT.as_secs()
                );
                // The next report of the desync asks again.
                for &s in &f.for_slots {
                    if let Slot::Player(peer) = s {
                        recovery[peer.index()] = Recovery::default();
                    }
                    starved.push(s);
                }
            }
            alive
        });
        for slot in starved {
            if self.session.awaits_state(slot) || slot.is_spectator() {
                self.session.kick(
                    slot,
                    "no player could send the state of the game; join again",
                );
                self.events.push_back(EndpointEvent::NoState { slot });
            }
        }
        self.fetches_done
            .retain(|(_, rx)| rx.poll_timeout().is_some());
        if self.chat.is_active() {
            // Joiners gone or back in the handshake owe and are owed nothing.
            let slots = self.chat_slots();
            self.chat.retain(&slots);
        }
        if let Some(server) = &mut self.server {
            server.handle_timeout(now);
        } else if let Some(limit) = self.cfg.lobby_timeout {
            if !self.lobby_expired && now >= self.lobby_opened + limit {
                self.lobby_expired = true;
                self.events.push_back(EndpointEvent::LobbyExpired {
                    ready: self.ready_count(),
                    want: self.cfg.host.max_players,
                });
            }
        }
        self.handle_machine_events(now);
    }

    /// The next datagram for the network.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.queue_transmits(now);
        self.out.pop_front()
    }

    /// The next datagram for the local player's lockstep client.
    pub fn poll_local(&mut self, now: Instant) -> Option<Vec<u8>> {
        self.queue_transmits(now);
        self.to_local.pop_front()
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<EndpointEvent> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) (or `poll_transmit`) has work next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let lobby = match (&self.server, self.cfg.lobby_timeout) {
            (None, Some(limit)) if !self.lobby_expired => Some(self.lobby_opened + limit),
            _ => None,
        };
        let resyncs = self.resyncs.iter().map(|(_, tx)| tx.poll_timeout());
        let fetches = self.fetches.iter().flat_map(|f| {
            let ask = f
                .asked
                .filter(|_| !f.rx.started())
                .map(|t| t + HELLO_INTERVAL);
            [ask, f.rx.poll_timeout(), Some(f.since + FETCH_LIMIT)]
        });
        let done = self.fetches_done.iter().map(|(_, rx)| rx.poll_timeout());
        [
            self.session.poll_timeout(),
            self.server.as_ref().and_then(Server::poll_timeout),
            self.chat.poll_timeout(),
            lobby,
        ]
        .into_iter()
        .chain(resyncs)
        .chain(fetches)
        .chain(done)
        .flatten()
        .min()
    }

    /// Says goodbye to every joiner (drain `poll_transmit` afterwards).
    pub fn shutdown(&mut self, reason: &str) {
        self.session.shutdown(reason);
    }

    /// Joiners that still lack frames the server published (a host that finished serves
    /// until this is 0, so that they can finish too).
    pub fn undelivered(&self) -> usize {
        let Some(server) = &self.server else {
            return 0;
        };
        let spectators = self
            .session
            .spectators()
            .iter()
            .filter_map(|s| match s.slot {
                Slot::Spectator(id) => server.spectator(id),
                Slot::Player(_) => None,
            })
            .filter(|s| s.acked < server.frontier())
            .count();
        server
            .peers()
            .filter(|p| Some(*p) != self.local)
            .filter(|p| server.delivered(*p) < Some(server.frontier()))
            .count()
            + spectators
    }

    /// The largest smoothed round trip to a remote player, once the game runs.
    pub fn max_rtt(&self) -> Option<Duration> {
        let server = self.server.as_ref()?;
        server
            .peers()
            .filter(|p| Some(*p) != self.local)
            .filter_map(|p| server.rtt(p))
            .max()
    }

    /// The lockstep server's numbers, once it runs.
    pub fn server_stats(&self) -> Option<ServerStats> {
        self.server.as_ref().map(Server::stats)
    }

    /// The published frames from `from` on still kept, and the frame of the first (see
    /// [`Server::published_since`]); `None` in the lobby.
    pub fn published_since(
        &self,
        from: Frame,
    ) -> Option<(Frame, impl Iterator<Item = &crate::input::Inputs> + '_)> {
        self.server.as_ref().map(|s| s.published_since(from))
    }

    /// The checksum of `frame` most players agree on, once the game runs.
    pub fn agreed_checksum(&self, frame: Frame) -> Option<u64> {
        self.server.as_ref().and_then(|s| s.agreed_checksum(frame))
    }

    /// Smoothed round trip to the remote player `peer`, once the game runs.
    pub fn rtt(&self, peer: PeerId) -> Option<Duration> {
        self.server.as_ref().and_then(|s| s.rtt(peer))
    }

    /// The session layer's counters (handshakes, transfers, tags).
    pub fn session_stats(&self) -> SessionStats {
        self.session.stats()
    }

    /// Datagrams turned away before any state machine read them.
    pub fn stats(&self) -> EndpointStats {
        EndpointStats {
            dropped_auth: self.session.stats().dropped_auth,
            chat_flood_dropped: self.chat.flood_dropped(),
            chat_relayed: self.chat.relayed(),
            ..self.stats
        }
    }

    fn ready_count(&self) -> usize {
        self.session.players().iter().filter(|p| p.ready).count()
    }

    /// Moves what the state machines want to send into the queues, tagged for their
    /// joiners (the session layer tags its own).
    fn queue_transmits(&mut self, now: Instant) {
        let mut untagged = Vec::new();
        if let Some(server) = &mut self.server {
            while let Some(t) = server.poll_transmit(now) {
                if t.to.player().is_some() && t.to.player() == self.local {
                    self.to_local.push_back(t.bytes);
                } else if let Some(to) = self.session.addr_of(t.to) {
                    untagged.push(t.with_to(to));
                }
            }
        }
        let id = self.session.session_id();
        while let Some(t) = self.chat.poll_transmit(now, id) {
            if let Some(to) = self.session.addr_of(t.to) {
                untagged.push(t.with_to(to));
            }
        }
        self.push_tagged(&mut untagged);
        while let Some(t) = self.session.poll_transmit(now) {
            self.out.push_back(t);
        }
        for (slot, tx) in &mut self.resyncs {
            let Some(to) = self.session.addr_of(*slot) else {
                continue;
            };
            while let Some(t) = tx.poll_transmit(now, id) {
                untagged.push(t.with_to(to));
            }
        }
        for f in &mut self.fetches {
            let Some(to) = self.session.addr_of(Slot::Player(f.from)) else {
                continue;
            };
            if !f.rx.started() && f.asked.is_none_or(|t| now >= t + HELLO_INTERVAL) {
                f.asked = Some(now);
                untagged.push(Transmit::new(to, resync_request(id, f.id)));
            }
            while let Some(t) = f.rx.poll_transmit(now, id) {
                untagged.push(t.with_to(to));
            }
        }
        for (from, rx) in &mut self.fetches_done {
            if let Some(to) = self.session.addr_of(Slot::Player(*from)) {
                while let Some(t) = rx.poll_transmit(now, id) {
                    untagged.push(t.with_to(to));
                }
            }
        }
        self.push_tagged(&mut untagged);
        let (session, events) = (&self.session, &mut self.events);
        let recovery = &mut self.recovery;
        self.resyncs.retain(|(slot, tx)| {
            if tx.is_complete() {
                events.push_back(EndpointEvent::Resynced {
                    slot: *slot,
                    frame: Frame(tx.frame()),
                });
                if let Slot::Player(peer) = slot {
                    recovery[peer.index()] = Recovery::Counting {
                        from: Frame(tx.frame()),
                    };
                }
            }
            !tx.is_complete() && session.addr_of(*slot).is_some()
        });
    }

    fn push_tagged(&mut self, untagged: &mut Vec<Transmit>) {
        for mut t in untagged.drain(..) {
            self.session.seal(t.to, &mut t.bytes);
            self.out.push_back(t);
        }
    }

    /// Applies the policy between the session layer and the lockstep server to what they
    /// raised, and turns it into events.
    fn handle_machine_events(&mut self, now: Instant) {
        let mut loading_heard = Vec::new();
        self.handle_session_events(now, &mut loading_heard);
        self.handle_server_events(now);
        // The server's timeouts kick players, which the session reports as gone.
        self.handle_session_events(now, &mut loading_heard);
        self.track_loading(now, loading_heard);
        if self.server.is_none() && !self.lobby_expired {
            self.maybe_start(now);
        }
    }

    fn handle_session_events(&mut self, now: Instant, loading_heard: &mut Vec<(PeerId, Duration)>) {
        while let Some(ev) = self.session.poll_event() {
            match ev {
                HostEvent::Admitted { slot, name, addr } => self
                    .events
                    .push_back(EndpointEvent::Admitted { slot, name, addr }),
                HostEvent::Ready { slot } if self.server.is_some() => self.enter_running(now, slot),
                HostEvent::Ready { slot } => {
                    self.events.push_back(EndpointEvent::Ready {
                        slot,
                        ready: self.ready_count(),
                        want: self.session.start_with(),
                    });
                }
                HostEvent::StateWanted { slot } => self.want_state(now, slot),
                HostEvent::Loading {
                    slot: Slot::Player(peer),
                    since,
                } => {
                    if self.server.as_mut().is_some_and(|s| s.starting(now, peer)) {
                        loading_heard.push((peer, since));
                    }
                }
                HostEvent::Loading { .. } => {}
                HostEvent::Refused { addr, reason } => self
                    .events
                    .push_back(EndpointEvent::Refused { addr, reason }),
                HostEvent::PathChanged { slot, from, to } => {
                    if let (Some(server), Slot::Player(p)) = (&mut self.server, slot) {
                        let _ = server.set_udp_ip_header(p, link_overhead(to));
                    }
                    self.events
                        .push_back(EndpointEvent::PathChanged { slot, from, to })
                }
                HostEvent::Left {
                    slot: Slot::Spectator(id),
                    reason,
                } => {
                    if let Some(server) = &mut self.server {
                        server.remove_spectator(id);
                        server.keep_from(Slot::Spectator(id), None);
                    }
                    self.events.push_back(EndpointEvent::SpectatorLeft {
                        slot: id,
                        reason: reason.to_string(),
                    });
                }
                HostEvent::Left {
                    slot: Slot::Player(slot),
                    reason,
                } => {
                    self.loading.retain(|l| l.slot != slot);
                    if let Some(server) = &mut self.server {
                        // Already gone from the server when it timed out there first.
                        let _ = server.remove_peer(now, slot);
                        server.keep_from(Slot::Player(slot), None);
                    }
                    self.events.push_back(EndpointEvent::Left { slot, reason });
                }
            }
        }
    }

    fn handle_server_events(&mut self, now: Instant) {
        let Some(server) = &mut self.server else {
            return;
        };
        let mut want = Vec::new();
        while let Some(ev) = server.poll_event() {
            match ev {
                ServerEvent::PeerJoined { peer, from_frame } => {
                    let name = self
                        .session
                        .players()
                        .into_iter()
                        .find(|p| p.slot == Slot::Player(peer))
                        .map(|p| p.name)
                        .unwrap_or_default();
                    self.events.push_back(EndpointEvent::PlayerJoined {
                        slot: peer,
                        from_frame,
                        name,
                    })
                }
                ServerEvent::SpectatorLeft { id } => {
                    self.session.drop_silent(Slot::Spectator(id), "timed out")
                }
                ServerEvent::SpectatorBehind { id, .. } => want.push(id),
                ServerEvent::PeerSilent { peer, silent_for } => {
                    self.events.push_back(EndpointEvent::PlayerSilent {
                        slot: peer,
                        silent_for,
                    })
                }
                ServerEvent::PeerLeft {
                    peer,
                    from_frame,
                    reason,
                } => {
                    // One that went while it loaded never ran.
                    let was_loading = self
                        .loading
                        .iter()
                        .find(|l| l.slot == peer)
                        .map(|l| l.waited(now));
                    self.loading.retain(|l| l.slot != peer);
                    let reason = match (reason, was_loading) {
                        (PeerLeftReason::Removed, _) => PlayerOutReason::Left,
                        (PeerLeftReason::TimedOut, None) => PlayerOutReason::TimedOut,
                        (PeerLeftReason::TimedOut, Some(t)) if t >= LOADING_LIMIT => {
                            PlayerOutReason::SlowStart
                        }
                        (PeerLeftReason::TimedOut, Some(_)) => PlayerOutReason::TimedOutLoading,
                    };
                    match reason {
                        PlayerOutReason::Left => {}
                        // Silent: it may come back (its link returns) and take its seat again.
                        PlayerOutReason::TimedOut | PlayerOutReason::TimedOutLoading => self
                            .session
                            .drop_silent(Slot::Player(peer), &reason.to_string()),
                        PlayerOutReason::SlowStart => {
                            self.session.kick(Slot::Player(peer), &reason.to_string())
                        }
                    }
                    self.events.push_back(EndpointEvent::PlayerOut {
                        slot: peer,
                        from_frame,
                        reason,
                    });
                }
                ServerEvent::Desync {
                    frame,
                    peer,
                    expected,
                    got,
                } => {
                    let i = peer.index();
                    // Reports from before the coming state are stale.
                    let recover = self.recovery[i].counts(frame);
                    if recover {
                        self.recovery[i] = Recovery::Awaiting;
                    }
                    let mut source = None;
                    if recover && self.local.is_none() {
                        // No machine here: ask a player whose checksum is the majority's.
                        source = server.checksum_holder(frame, expected, peer);
                        if let Some(from) = source {
                            let (fetches, id) = (&mut self.fetches, &mut self.next_resync_id);
                            StateFetch::ask(fetches, id, now, from, Slot::Player(peer));
                        }
                    }
                    self.events.push_back(EndpointEvent::Desync {
                        frame,
                        slot: peer,
                        expected,
                        got,
                        send_state: recover && self.local.is_some(),
                        source,
                    });
                }
            }
        }
        for id in want {
            let again = self
                .fell_behind
                .iter()
                .any(|(s, t)| *s == id && now < *t + BEHIND_AGAIN);
            self.fell_behind.retain(|(s, _)| *s != id);
            if again {
                self.session.kick(
                    Slot::Spectator(id),
                    "your link cannot follow the game: it fell more than 2 s behind twice \
                     within 30 s",
                );
                continue;
            }
            self.fell_behind.push((id, now));
            self.want_state(now, Slot::Spectator(id));
        }
    }

    /// Spectators admitted (and not yet gone).
    pub fn spectator_count(&self) -> usize {
        self.session.spectators().len()
    }

    /// A spectator's link.
    pub fn spectator(&self, id: SpectatorId) -> Option<lockstep::SpectatorStats> {
        self.server.as_ref()?.spectator(id)
    }
}

#[cfg(test)]
mod tests;
