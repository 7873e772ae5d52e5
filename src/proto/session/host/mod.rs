//! Host side of the session: admits joiners, hands out slots and sends the start payload.
//! `admission` holds the handshake (Hellos, passwords, which seat), `start_state` the
//! start state and its transfer to each joiner, `paths` a joiner's move to a new address,
//! `config` the [`HostConfig`], `events` what it reports; this module the peers, the
//! datagrams' tags, the lobby and the timers. None of it imports anything above `session`.

mod admission;
mod config;
mod events;
mod paths;
mod start_state;

use admission::Pending;
pub use config::HostConfig;
pub use events::{HostEvent, Player, SessionLeftReason};
use paths::PathCheck;

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{rngs::StdRng, Rng, SeedableRng};

use super::auth::Challenger;
use super::guard::{prefix, Cookies, Limiter};
use super::msg::{
    foreign_version, Auth, Hello, Msg, PathMsg, RelayStep, RoomMsg, Welcome, CHUNK_SIZE,
    PAKE_MSG_LEN, PATH_TOKEN_LEN, SEAT_KEY_LEN, SPECTATOR,
};
use super::transfer::Sender;
use super::{
    Dropped, Handled, SessionError, SessionInfo, SessionStats, Transmit, HELLO_INTERVAL,
    LOADING_LIMIT,
};
use crate::input::MAX_PLAYERS;
use crate::lockstep::{Frame, PeerId, Roster, Slot, SpectatorId};
use crate::wire::keys::{KeyPair, Keys, Side, PUBLIC_KEY_LEN, TAG_LEN};
use crate::wire::{Header, Kind, WireError, PROTOCOL_VERSION};

/// Unanswered password challenges kept at once (past it, the oldest of the address prefix
/// holding the most is evicted).
const MAX_PENDING: usize = 64;
/// Unanswered password challenges one address prefix (`guard::prefix`) holds at once (its
/// oldest is evicted): a flood from one source cannot evict another's check.
pub const MAX_PENDING_PER_ADDRESS: usize = 4;
/// Password attempts one address prefix makes at once before the rate applies...
pub const FREE_GUESSES: u32 = 5;
/// ...and then one every this long (5 a minute).
pub const GUESS_EVERY: Duration = Duration::from_secs(12);
/// A player's seat is taken over by a new connection of the same name from the same IP (it
/// crashed and runs `join` again) only once the seat has been silent this long: a name
/// alone never replaces a player who is still talking.
pub const TAKEOVER_SILENCE: Duration = Duration::from_secs(1);
/// How long a seat whose player's link dropped is kept for that player: only a Hello
/// showing the seat's key (`Welcome::seat_key`) gets it meanwhile; after it, a name does.
/// As long as a joiner tries to reconnect by default.
pub const SEAT_KEPT: Duration = Duration::from_secs(60);
/// Copies of a Bye sent (no ack; three copies survive 25% loss 98% of the time).
const BYE_COPIES: usize = 3;
/// Default `HostConfig::ready_timeout`: a ready joiner waiting in the lobby says it is there
/// once a second (`LOBBY_INTERVAL`), so that a lobby can wait for minutes for little traffic;
/// ten missed in a row is a joiner gone (it may still come back: it is told `Dropped`).
pub const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the lobby tells its ready joiners that it is there and how many are in: often
/// enough to keep a home router's UDP mapping (many forget one after 30 s), about 40 bytes
/// a second.
pub const LOBBY_INTERVAL: Duration = Duration::from_secs(1);
/// How often a path check's challenge is sent again, and how many times.
const PATH_RETRY: Duration = Duration::from_millis(250);
const PATH_TRIES: u8 = 8;
/// Until a new address answered its challenge it is sent at most this many times the bytes
/// received from it (QUIC's anti-amplification factor).
pub const PATH_AMPLIFICATION: u64 = 3;
/// Datagrams from unknown addresses whose tag is tried against joiners' keys (an address
/// change, a hosted room's punch), per second: bounds what a flood of junk costs.
pub(crate) const TRIALS_PER_SECOND: u32 = 500;
/// Spectators are numbered from here in the session's slot space (players are 0..8).
pub const FIRST_SPECTATOR_SLOT: u8 = crate::lockstep::SpectatorId::FIRST;
/// Default `HostConfig::max_spectators`.
pub const DEFAULT_MAX_SPECTATORS: u8 = 16;
/// Most spectators a session takes (slots 16..=254).
pub const MAX_SPECTATORS: u8 = 239;

#[derive(Debug)]
enum Phase {
    /// Admitted to a running game: waits for a state to be sent (it hears `Lobby` meanwhile).
    AwaitingState,
    /// Welcome sent, waiting for the first StateAck.
    Welcomed {
        sent_at: Instant,
        /// Sent more than once: the first StateAck may answer any copy, so its delay is
        /// no RTT sample (Karn's rule; the chunks' own sequence numbers give clean ones).
        resent: bool,
    },
    Sending(Box<Sender>),
    /// Has the whole start state (since `since`); `rtt` as the transfer measured it.
    Ready {
        rtt: Option<Duration>,
        since: Instant,
        /// Its latest sign of life was a `Msg::Loading`, not a CTRL: it does not run yet.
        loading: bool,
    },
}

#[derive(Debug)]
struct Peer {
    addr: SocketAddr,
    /// This link's datagram keys: every datagram either way carries their tag once the
    /// joiner can have the Welcome (see `HostSession::open`).
    keys: Keys,
    /// The joiner's public key the keys were made with.
    their_key: [u8; PUBLIC_KEY_LEN],
    slot: Slot,
    name: String,
    last_heard: Instant,
    /// When a datagram with its tag last came from its address (any kind: CTRLs too).
    spoke: Instant,
    /// The Welcome, untagged (tagged as it is sent: see `Peer::tagged_welcome`).
    welcome: Vec<u8>,
    phase: Phase,
    /// The frame its start state is at, and the packed payload it is sent.
    frame: Frame,
    payload: Arc<[u8]>,
    /// A new address its tagged datagrams came from, under validation.
    path: Option<PathCheck>,
    /// Its seat's key, sent in its Welcome (zeros for a spectator): what gives the seat
    /// back to a reconnect (`seat_for`).
    seat_key: [u8; SEAT_KEY_LEN],
}

impl Peer {
    /// Whether datagrams from `addr` are this joiner's: its address, or one under validation.
    fn at(&self, addr: SocketAddr) -> bool {
        self.addr == addr || self.path.as_ref().is_some_and(|c| c.addr == addr)
    }

    /// Has the start state (and waits for the game to start, or plays).
    fn is_ready(&self) -> bool {
        matches!(self.phase, Phase::Ready { .. })
    }

    fn is_player(&self) -> bool {
        !self.slot.is_spectator()
    }

    /// The joiner may hold the keys: it was sent a Welcome.
    fn keyed(&self) -> bool {
        !matches!(self.phase, Phase::AwaitingState)
    }

    /// The Welcome with its tag: the joiner takes it only if the tag is the one its own
    /// keys make, so a Welcome or Hello altered on the way (the host's or the joiner's
    /// public key) costs a resend, not a session whose two ends hold different keys.
    fn tagged_welcome(&self) -> Vec<u8> {
        let mut bytes = self.welcome.clone();
        self.keys.seal(&mut bytes);
        bytes
    }
}

/// A seat's last player, for giving it back when that player joins again.
#[derive(Clone, Debug)]
struct Departed {
    slot: PeerId,
    name: String,
    ip: IpAddr,
    /// Its seat's key: within `HostConfig::seat_kept` of `at` only a Hello that shows it
    /// gets the seat back.
    seat_key: [u8; SEAT_KEY_LEN],
    at: Option<Instant>,
}

/// The host's session. See the module docs for the calling order.
#[derive(Debug)]
pub struct HostSession {
    cfg: HostConfig,
    info: SessionInfo,
    rng: StdRng,
    /// This session's half of every joiner's key exchange.
    key_pair: KeyPair,
    next_ticket: u32,
    packed: Arc<[u8]>,
    raw_len: u32,
    hash: u64,
    peers: Vec<Peer>,
    pending: VecDeque<Pending>,
    accepting: bool,
    /// When the lobby last told its ready joiners it is there (`Msg::Lobby`).
    lobby_sent: Option<Instant>,
    queue: VecDeque<Transmit>,
    events: VecDeque<HostEvent>,
    last_refusal: Option<(SocketAddr, String)>,
    next_peer: usize,
    stats: SessionStats,
    /// Who held each seat that came free while the game ran.
    departed: Vec<Departed>,
    /// Unknown-address datagrams tried against the joiners' keys this second (see
    /// `TRIALS_PER_SECOND`).
    trials: (Option<Instant>, u32),
    /// Joiners whose start-state transfer waits (`hold_transfer`).
    held: Vec<SocketAddr>,
    /// The latest time a datagram or a timeout brought (when a seat came free).
    latest: Option<Instant>,
    /// A direct host's proof-of-address cookies (a room's are checked by `serve::Rooms`).
    cookies: Cookies,
    /// Password attempts by address prefix (`FREE_GUESSES`, `GUESS_EVERY`).
    guesses: Limiter,
}

crate::wire::impl_machine!(HostSession, HostEvent);

impl HostSession {
    /// `info.options` are the option values every joiner will apply.
    pub fn new(
        mut cfg: HostConfig,
        info: SessionInfo,
        state: Vec<u8>,
        sram: Vec<u8>,
    ) -> Result<HostSession, SessionError> {
        cfg.session_id = cfg.session_id.max(1);
        cfg.max_players = cfg.max_players.clamp(1, MAX_PLAYERS as u8);
        if cfg.password.as_deref() == Some("") {
            cfg.password = None;
        }
        let mut rng = StdRng::from_seed(cfg.entropy);
        let key_pair = KeyPair::from_entropy(rng.gen());
        let cookies = Cookies::new(rng.gen());
        let mut host = HostSession {
            cookies,
            guesses: Limiter::new(FREE_GUESSES, GUESS_EVERY),
            rng,
            key_pair,
            next_ticket: 0,
            cfg,
            info,
            packed: Arc::from(Vec::new()),
            raw_len: 0,
            hash: 0,
            peers: Vec::new(),
            pending: VecDeque::new(),
            accepting: true,
            lobby_sent: None,
            queue: VecDeque::new(),
            events: VecDeque::new(),
            last_refusal: None,
            next_peer: 0,
            stats: SessionStats::default(),
            departed: Vec::new(),
            trials: (None, 0),
            held: Vec::new(),
            latest: None,
        };
        if host.cfg.start_with == 0 || host.cfg.start_with > host.cfg.max_players {
            host.cfg.start_with = host.cfg.max_players;
        }
        host.cfg.max_spectators = host.cfg.max_spectators.min(MAX_SPECTATORS);
        host.set_start_state(state, sram)?;
        Ok(host)
    }

    /// The session id.
    pub fn session_id(&self) -> u32 {
        self.cfg.session_id
    }

    /// The counters.
    pub fn stats(&self) -> SessionStats {
        self.stats
    }

    /// Stops admitting joiners (they are refused "the game has already started").
    pub fn close_lobby(&mut self) {
        self.accepting = false;
    }

    /// Players the game starts with.
    pub fn start_with(&self) -> u8 {
        self.cfg.start_with
    }

    /// True once the lobby closed (the game runs).
    pub fn lobby_closed(&self) -> bool {
        !self.accepting
    }

    /// Spectators admitted (the ones still receiving their state included).
    pub fn spectators(&self) -> Vec<Player> {
        self.peers
            .iter()
            .filter(|p| !p.is_player())
            .map(|p| Player {
                slot: p.slot,
                name: p.name.clone(),
                addr: Some(p.addr),
                ready: p.is_ready(),
                rtt: None,
            })
            .collect()
    }

    /// Players in the game by seat and name, the host's own included.
    fn roster(&self) -> Roster {
        self.players()
            .into_iter()
            .filter_map(|p| Some((p.slot.player()?, p.name)))
            .collect()
    }

    /// Players in the session, the host's own included, by slot.
    pub fn players(&self) -> Vec<Player> {
        let mut out: Vec<Player> = self
            .peers
            .iter()
            .filter(|p| p.is_player())
            .map(|p| Player {
                slot: p.slot,
                name: p.name.clone(),
                addr: Some(p.addr),
                ready: p.is_ready(),
                rtt: match p.phase {
                    Phase::Ready { rtt, .. } => rtt,
                    _ => None,
                },
            })
            .collect();
        if self.cfg.host_is_player {
            out.push(Player {
                slot: Slot::Player(PeerId(0)),
                name: self.info.player_name.clone(),
                addr: None,
                ready: true,
                rtt: None,
            });
        }
        out.sort_by_key(|p| p.slot);
        out
    }

    /// Who the joiner at `addr` is.
    pub fn slot_of(&self, addr: SocketAddr) -> Option<Slot> {
        self.peers.iter().find(|p| p.at(addr)).map(|p| p.slot)
    }

    /// The address of the joiner in `slot`.
    pub fn addr_of(&self, slot: Slot) -> Option<SocketAddr> {
        self.peers.iter().find(|p| p.slot == slot).map(|p| p.addr)
    }

    /// Players that have the start state, the host's own included.
    fn ready_count(&self) -> u8 {
        let joiners = self
            .peers
            .iter()
            .filter(|p| p.is_player() && p.is_ready())
            .count() as u8;
        joiners + u8::from(self.cfg.host_is_player)
    }

    /// True when at least one joiner is in and every joining player is ready.
    pub fn all_ready(&self) -> bool {
        let mut players = self.peers.iter().filter(|p| p.is_player()).peekable();
        players.peek().is_some() && players.all(Peer::is_ready)
    }

    /// A datagram from `from`: its tag checked (`open`), then handled.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Handled<'static> {
        self.latest = Some(self.latest.map_or(now, |t| t.max(now)));
        match self.open(now, from, datagram) {
            Some(body) => self.handle_opened(now, from, body).into(),
            None => Handled::Dropped(Dropped::Unauthentic),
        }
    }

    /// Tags `bytes` for the joiner at `addr`, if it holds the keys (it was welcomed).
    pub fn seal_for(&self, addr: SocketAddr, bytes: &mut Vec<u8>) -> bool {
        let Some(peer) = self.peers.iter().find(|p| p.addr == addr && p.keyed()) else {
            return false;
        };
        peer.keys.seal(bytes);
        true
    }

    /// `datagram` without its tag if the tag is the joiner's at `addr`.
    pub fn open_from<'a>(&self, addr: SocketAddr, datagram: &'a [u8]) -> Option<&'a [u8]> {
        let peer = self.peers.iter().find(|p| p.addr == addr && p.keyed())?;
        peer.keys.open(datagram)
    }

    /// A datagram as it arrived from `from`, without its tag if the sender is a joiner
    /// that has the keys; `None` (counted in `SessionStats::dropped_auth`) if its tag is not
    /// that joiner's. Unknown senders' datagrams pass as they are (the handshake is
    /// unauthenticated), and so do a joiner's Hello until it acknowledged its Welcome, and
    /// its goodbye until it was sent one: neither changes a seat whose keys are in use.
    ///
    /// A datagram from an unknown address whose tag is a joiner's comes from that joiner
    /// at a new address (its NAT mapping changed, it moved networks): it is taken, and a
    /// path check starts there (see `PathCheck`). Its seat moves once the check is answered.
    pub fn open<'a>(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &'a [u8],
    ) -> Option<&'a [u8]> {
        let Some(i) = self.peers.iter().position(|p| p.at(from)) else {
            return self.open_unknown(now, from, datagram);
        };
        let peer = &mut self.peers[i];
        if let Some(body) = peer.keys.open(datagram) {
            if let Some(check) = peer.path.as_mut().filter(|c| c.addr == from) {
                check.received += datagram.len() as u64;
            }
            if peer.addr == from {
                peer.spoke = now;
            }
            return Some(body);
        }
        let peer = &self.peers[i];
        // Hellos are resent until the Welcome arrives; after the start state they would
        // only keep a silent seat alive.
        let handshake = matches!(peer.phase, Phase::AwaitingState | Phase::Welcomed { .. });
        let kind = Header::parse(datagram).ok().map(|(h, _)| h.kind);
        match kind {
            Some(Kind::Hello) if handshake => Some(datagram),
            Some(Kind::Bye) if !peer.keyed() => Some(datagram),
            _ => {
                self.stats.datagrams_in += 1;
                self.stats.dropped_auth += 1;
                tracing::trace!(%from, "session: dropped a datagram with a wrong tag");
                None
            }
        }
    }

    /// Tags a datagram for the joiner at `to` once it may hold the keys.
    pub fn seal(&self, to: SocketAddr, bytes: &mut Vec<u8>) {
        if let Some(peer) = self.peers.iter().find(|p| p.at(to) && p.keyed()) {
            peer.keys.seal(bytes);
        }
    }

    /// A datagram from `from` that [`open`](Self::open) let through.
    pub fn handle_opened(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Result<(), Dropped> {
        self.stats.datagrams_in += 1;
        let result = self.dispatch(now, from, datagram);
        if let Err(why) = &result {
            tracing::trace!(%from, "session: dropped datagram: {why}");
            self.stats.drop(why);
        }
        result
    }

    fn dispatch(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) -> Result<(), Dropped> {
        if let Ok((h, _)) = crate::wire::Header::parse(datagram) {
            if h.kind == Kind::Ctrl {
                // A ready joiner's lockstep client sends CTRLs while it waits for the game
                // to start: in the lobby they only show that it is still there.
                // Its tag (checked in `open`) says whose session it is.
                let peer = self.peers.iter_mut().find(|p| p.at(from));
                return match peer {
                    Some(p) if p.is_ready() => {
                        p.last_heard = now;
                        if let Phase::Ready { loading, .. } = &mut p.phase {
                            *loading = false;
                        }
                        Ok(())
                    }
                    _ => Err(Dropped::UnknownPeer(Kind::Ctrl)),
                };
            }
        }
        let (header, msg) = match Msg::decode(datagram) {
            Ok(ok) => ok,
            Err(WireError::Version(v)) if foreign_version(datagram, Kind::Hello).is_some() => {
                let reason = format!(
                    "protocol version differs: host speaks {PROTOCOL_VERSION}, you speak {v}"
                );
                // Unproven address: never more bytes than it sent.
                if Msg::Refuse(reason.clone()).encode(0).len() <= datagram.len() {
                    self.refuse(from, reason);
                }
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let id = self.cfg.session_id;
        let pre_welcome = matches!(msg, Msg::Hello(_) | Msg::Bye(_));
        if header.session != id && !(pre_welcome && header.session == 0) {
            return Err(Dropped::WrongSession {
                got: header.session,
                want: id,
            });
        }
        match msg {
            Msg::Hello(hello) => {
                self.handle_hello(now, from, hello);
                Ok(())
            }
            Msg::StateAck(ack) => self.handle_ack(now, from, &ack),
            Msg::Loading => self.handle_loading(now, from),
            Msg::Room(RoomMsg::Relay { ticket, step }) if Some(from) == self.checker() => {
                self.handle_relay(now, ticket, step);
                Ok(())
            }
            Msg::Path(path) => self.handle_path(now, from, path),
            Msg::Bye(reason) => {
                if let Some(i) = self.pending.iter().position(|p| p.addr == from) {
                    self.pending.remove(i);
                    return Ok(());
                }
                let slot = self.slot_of(from).ok_or(Dropped::UnknownPeer(Kind::Bye))?;
                self.drop_peer(slot, SessionLeftReason::Bye(reason));
                Ok(())
            }
            other => Err(Dropped::Unexpected(other.kind())),
        }
    }

    /// Who checks relayed passwords in a room: its creator while it is in, else the player
    /// in the lowest seat that has the start state (every player in the room knows the
    /// password: it passed the check).
    fn checker(&self) -> Option<SocketAddr> {
        let creator = self.cfg.creator?;
        if self.peers.iter().any(|p| p.addr == creator) {
            return Some(creator);
        }
        self.peers
            .iter()
            .filter(|p| p.is_player() && p.is_ready())
            .min_by_key(|p| p.slot)
            .map(|p| p.addr)
    }

    fn refuse(&mut self, to: SocketAddr, reason: String) {
        self.send(to, &Msg::Refuse(reason.clone()), 0);
        // One event per attempt, not one per resent Hello.
        if self.last_refusal.as_ref() != Some(&(to, reason.clone())) {
            tracing::debug!(%to, %reason, "session: join refused");
            self.last_refusal = Some((to, reason.clone()));
            self.events
                .push_back(HostEvent::Refused { addr: to, reason });
        }
    }

    fn send(&mut self, to: SocketAddr, msg: &Msg, session: u32) {
        let mut bytes = msg.encode(session);
        self.seal(to, &mut bytes);
        self.queue.push_back(Transmit::new(to, bytes));
    }

    fn drop_peer(&mut self, slot: Slot, reason: SessionLeftReason) {
        if let Some(i) = self.peers.iter().position(|p| p.slot == slot) {
            let peer = self.peers.remove(i);
            if let (Slot::Player(seat), false) = (slot, self.accepting) {
                self.departed.retain(|d| d.slot != seat);
                self.departed.push(Departed {
                    slot: seat,
                    name: peer.name.clone(),
                    ip: peer.addr.ip(),
                    seat_key: peer.seat_key,
                    at: self.latest,
                });
            }
            tracing::debug!(slot = slot.number(), name = %peer.name, %reason, "session: player left");
            self.events.push_back(HostEvent::Left { slot, reason });
        }
    }

    /// Removes a joiner and tells it why.
    pub fn kick(&mut self, slot: Slot, reason: &str) {
        if let Some(addr) = self.addr_of(slot) {
            for _ in 0..BYE_COPIES {
                self.send(addr, &Msg::Bye(reason.into()), self.cfg.session_id);
            }
            self.drop_peer(slot, SessionLeftReason::Kicked(reason.into()));
        }
    }

    /// Drops a joiner that went silent and tells it so (`Msg::Dropped`): it may come back
    /// (it reconnects, and takes its seat back).
    pub fn drop_silent(&mut self, slot: Slot, reason: &str) {
        if let Some(addr) = self.addr_of(slot) {
            for _ in 0..BYE_COPIES {
                self.send(addr, &Msg::Dropped(reason.into()), self.cfg.session_id);
            }
            self.drop_peer(slot, SessionLeftReason::Dropped(reason.into()));
        }
    }

    /// Says goodbye to every joiner (call before quitting, then drain `poll_transmit`).
    pub fn shutdown(&mut self, reason: &str) {
        let slots: Vec<Slot> = self.peers.iter().map(|p| p.slot).collect();
        for slot in slots {
            self.kick(slot, reason);
        }
    }

    /// Resends, timeouts and the lobby's notices due by `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.latest = Some(self.latest.map_or(now, |t| t.max(now)));
        let timeout = self.cfg.handshake_timeout;
        self.pending.retain(|p| now < p.since + timeout);
        let silent: Vec<Slot> = self
            .peers
            .iter()
            .filter(|p| !p.is_ready() && now >= p.last_heard + timeout)
            .map(|p| p.slot)
            .collect();
        for slot in silent {
            self.drop_peer(slot, SessionLeftReason::Timeout);
        }
        if self.accepting {
            // Once the game runs, the lockstep server times players out instead.
            self.tend_ready_joiners(now);
        }
        self.send_path_challenges(now);
        for peer in &mut self.peers {
            match &mut peer.phase {
                Phase::Welcomed { sent_at, resent } if now >= *sent_at + HELLO_INTERVAL => {
                    *sent_at = now;
                    *resent = true;
                    self.queue
                        .push_back(Transmit::new(peer.addr, peer.tagged_welcome()));
                }
                Phase::Sending(sender) => sender.detect_losses(now),
                _ => {}
            }
        }
    }

    /// In the lobby: drops ready joiners silent for `ready_timeout`, and every
    /// `LOBBY_INTERVAL` tells the others how many players are in.
    fn tend_ready_joiners(&mut self, now: Instant) {
        let ready_timeout = self.cfg.ready_timeout;
        let gone: Vec<(Slot, SocketAddr, SessionLeftReason)> = self
            .peers
            .iter()
            .filter(|p| p.is_ready() && now >= p.last_heard + ready_timeout)
            .map(|p| {
                let slow = matches!(p.phase, Phase::Ready { since, loading: true, .. }
                    if now >= since + LOADING_LIMIT);
                let reason = if slow {
                    SessionLeftReason::SlowStart
                } else {
                    SessionLeftReason::Silent
                };
                (p.slot, p.addr, reason)
            })
            .collect();
        for (slot, addr, reason) in gone {
            let why = match reason {
                SessionLeftReason::SlowStart => format!(
                    "dropped from the lobby: still loading {} s after the start state",
                    LOADING_LIMIT.as_secs()
                ),
                _ => format!(
                    "dropped from the lobby: nothing heard for {} s",
                    ready_timeout.as_secs_f64()
                ),
            };
            if matches!(reason, SessionLeftReason::SlowStart) {
                self.send(addr, &Msg::Bye(why), self.cfg.session_id);
                self.drop_peer(slot, reason);
            } else {
                // It may come back (its link returns, its laptop wakes): it reconnects.
                self.send(addr, &Msg::Dropped(why.clone()), self.cfg.session_id);
                self.drop_peer(slot, SessionLeftReason::Dropped(why));
            }
        }
        if self.lobby_sent.is_none_or(|t| now >= t + LOBBY_INTERVAL) {
            self.lobby_sent = Some(now);
            let lobby = Msg::Lobby {
                ready: self.ready_count(),
                want: self.cfg.max_players,
            };
            let to: Vec<SocketAddr> = self
                .peers
                .iter()
                .filter(|p| p.is_ready())
                .map(|p| p.addr)
                .collect();
            for addr in to {
                self.send(addr, &lobby, self.cfg.session_id);
            }
        }
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let t = self.poll_transmit_inner(now)?;
        self.stats.datagrams_out += 1;
        Some(t)
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<HostEvent> {
        self.events.pop_front()
    }

    /// The earliest time `handle_timeout` or `poll_transmit` has work to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let timeout = self.cfg.handshake_timeout;
        let pending = self.pending.iter().map(|p| p.since + timeout);
        let peers = self.peers.iter().flat_map(|p| match &p.phase {
            Phase::AwaitingState => [Some(p.last_heard + timeout), None],
            Phase::Welcomed { sent_at, .. } => [
                Some(*sent_at + HELLO_INTERVAL),
                Some(p.last_heard + timeout),
            ],
            Phase::Sending(s) => [
                s.poll_timeout().filter(|_| !self.held.contains(&p.addr)),
                Some(p.last_heard + timeout),
            ],
            // The first notice is due at once.
            Phase::Ready { .. } if self.accepting => [
                Some(self.lobby_sent.map_or(p.last_heard, |t| t + LOBBY_INTERVAL)),
                Some(p.last_heard + self.cfg.ready_timeout),
            ],
            Phase::Ready { .. } => [None, None],
        });
        let paths = self
            .peers
            .iter()
            .filter_map(|p| p.path.as_ref().map(|c| c.next));
        pending.chain(peers.flatten()).chain(paths).min()
    }
}
