//! [`Rooms`]: a dedicated server's rooms as one sans-IO state machine, a
//! [`session::Endpoint`](crate::session::Endpoint) per room behind a router (quinn-proto's
//! `Endpoint` over its `Connection`s). It never reads a clock and never touches a socket.
//!
//! This file is the facade, [`Rooms`], which holds all the state (every field is declared
//! here, the parts own none), and the router: which part a datagram or a timeout goes to.
//! The rest is split by the work each part does on those fields, each an `impl Rooms`:
//! - [`validation`]: proof of address and the anti-amplification budget;
//! - [`opens`]: Opens, uploads and the off-loop jobs that turn them into rooms;
//! - [`drain`]: a room's endpoint drained into routes and log lines, and its closing;
//! - [`listing`]: the pages of rooms and servers, and this server's load;
//! - [`directory`]: what the fleet's directory is told, and its news;
//! - [`hosted`]: rooms hosted by their creators, relayed and introduced;
//! - [`sharing`]: recordings for the archive, and the rooms as the web page shows them.
//!
//! Some parts define the types of the fields their work fills ([`Claim`], [`HostedRoom`]);
//! none imports another's items but `opens`, which files a directory [`Claim`], and
//! `sharing`, which reads a hosted room's end. Nothing here imports `netplay`, `app` or a
//! socket.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::lockstep::{self, Frame, PeerId, Slot, SpectatorId};
use crate::session::guard::{prefix, Cookies};
use crate::session::msg::{foreign_version, Hello, Msg, OpenRoom, RoomInfo, RoomMsg};
use crate::session::{Endpoint, EndpointEvent, PlayerOutReason, Upload};
use crate::wire::{Dropped, Handled, Header, Kind, Transmit, HEADER_LEN};

use super::archive;
use super::fleet::{DirOp, Fleet};
use super::opening::OpenJob;

mod directory;
mod drain;
mod hosted;
mod listing;
mod opens;
mod sharing;
mod validation;

use crate::input::MAX_PLAYERS;
use directory::Claim;
#[cfg(test)]
pub(super) use hosted::private_only;
use hosted::HostedRoom;
pub use hosted::{HOSTED_SILENCE, MEMBERS_PER_PREFIX, MEMBER_SILENCE, PROBATION};
#[cfg(test)]
pub use hosted::{MEMBER_RATE, PREFIX_RATE};
use listing::NAMED_ROOMS;
pub use sharing::RoomView;
use validation::VALIDATED_FOR;

/// How long a room with nobody in it stays open: its players' links may all have dropped
/// (they reconnect within a minute by default), or its creator never came to it. One whose
/// last player said goodbye closes at once. A silent player's link is declared gone after
/// at most [`HANDSHAKE_TIMEOUT`](crate::session::HANDSHAKE_TIMEOUT): the grace is the rest
/// of a minute, less a second for that datagram's way, so no room outlives its last
/// player's last datagram by more than [`ABANDONED_WITHIN`] (issue 36: rooms cannot be
/// hoarded).
pub const EMPTY_GRACE: Duration = ABANDONED_WITHIN
    .saturating_sub(crate::session::HANDSHAKE_TIMEOUT)
    .saturating_sub(Duration::from_secs(1));
/// Longest a room lives after the last datagram of the last player in it (or after its
/// upload, when its creator never comes to it).
pub const ABANDONED_WITHIN: Duration = Duration::from_secs(60);
/// Default [`ServeConfig::max_state`]: bytes of one room's unpacked start state.
pub const DEFAULT_MAX_STATE: usize = 64 << 20;
/// Default [`ServeConfig::max_memory`]: bytes of start states, packed and unpacked, the
/// rooms and uploads hold in all.
pub const DEFAULT_MAX_MEMORY: usize = 2 << 30;

/// A dedicated server's settings.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Rooms open at once, including ones whose start state is still uploading.
    pub max_rooms: usize,
    /// Rooms one IPv4 address or IPv6 /64 may open per minute.
    pub opens_per_minute: u32,
    /// Rooms (open or uploading) created from one IPv4 address or IPv6 /64 at once.
    pub rooms_per_address: usize,
    /// Largest unpacked start state a room may have (its Open declares it; the unpacking
    /// stops there).
    pub max_state: usize,
    /// Start-state bytes (packed and unpacked) all rooms and uploads hold together: an
    /// Open that would pass it is refused.
    pub max_memory: usize,
    /// Every room's lockstep settings (players, session, fps and K come from its creator; the
    /// mode too if the creator asks for one).
    pub lockstep: lockstep::Config,
    /// Seeds session ids, room names and the rooms' password-check randomness (from the OS
    /// by default; tests set it to repeat a run).
    pub entropy: [u8; 32],
    /// Spectators each room takes at once.
    pub max_spectators: u8,
    /// Keep finished rooms' recordings (`serve --archive`): record the rooms on the server,
    /// take hosted rooms' uploads, and hand them out ([`Rooms::poll_kept`]).
    pub archive: bool,
    /// Bytes of one replay at most (an upload past it is refused).
    pub max_replay: usize,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            max_rooms: 1000,
            opens_per_minute: 6,
            rooms_per_address: 8,
            max_state: DEFAULT_MAX_STATE,
            max_memory: DEFAULT_MAX_MEMORY,
            lockstep: lockstep::Config::default(),
            // From the OS: a server that forgets to seed it still gets keys nobody can guess.
            entropy: rand::random(),
            max_spectators: crate::session::DEFAULT_MAX_SPECTATORS,
            archive: false,
            max_replay: archive::DEFAULT_MAX_REPLAY,
        }
    }
}

/// What happened on the server, for its log. A room's endpoint's events come as it raised
/// them ([`ServeEvent::Room`], quinn-proto's `DatagramEvent::ConnectionEvent`); the variants
/// beside it say what only the server knows: who opened a room, a spectator's name, a
/// player's goodbye.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServeEvent {
    Opened {
        room: String,
        creator: SocketAddr,
        seats: u8,
        core: String,
        content: String,
        password: bool,
    },
    Refused {
        addr: SocketAddr,
        reason: String,
    },
    /// An event of the room's endpoint, as raised. A player's goodbye in the running game
    /// is not among them (`Out` says it); nor are `PlayerOut`, `Watching` and
    /// `SpectatorLeft`, which the variants below say with the server's knowledge.
    Room {
        room: String,
        event: EndpointEvent,
    },
    /// A player is out of the running game; `said` is its goodbye's reason if it said one
    /// (its leaving is said once, here, with the frame its input stops at).
    Out {
        room: String,
        slot: PeerId,
        from_frame: Frame,
        reason: PlayerOutReason,
        said: Option<String>,
    },
    Closed {
        room: String,
        why: String,
    },
    /// A spectator has its state and watches; `watching` are in the room now.
    Watching {
        room: String,
        name: String,
        frame: Frame,
        watching: usize,
    },
    SpectatorLeft {
        room: String,
        reason: String,
    },
    /// A player or creator was sent to another server of the fleet.
    Moved {
        addr: SocketAddr,
        room: String,
        server: String,
    },
    /// The directory did not answer a claim: the room opens here alone.
    ClaimUnanswered {
        room: String,
        why: String,
    },
}

/// Datagrams the server turned away, by why.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServeStats {
    pub datagrams_in: u64,
    pub datagrams_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Not a framelock datagram, or not one of a kind a server takes from a stranger.
    pub garbage: u64,
    /// A Hello naming a room that does not exist, or a room datagram for a session id the
    /// sender is not in.
    pub wrong_room: u64,
    /// Room openings refused: too many from one address, or the server is full (rooms or
    /// memory).
    pub rate_limited: u64,
    pub full: u64,
    /// Hellos and Opens answered with a Retry: no cookie made for their address.
    pub retries: u64,
    /// Answers not sent because they would have sent more to an address that has not shown
    /// it receives datagrams than it sent (anti-amplification).
    pub held_unvalidated: u64,
    pub rooms_opened: u64,
    pub rooms_closed: u64,
    /// Datagrams from a room's player whose tag was not that player's (forged or altered),
    /// over every room, open or closed.
    pub dropped_auth: u64,
    /// Chat messages over a sender's allowance (a modified client's flood), dropped, over
    /// every room, open or closed.
    pub chat_flood_dropped: u64,
    /// Bytes of datagrams relayed whole between hosted rooms' hosts and their joiners.
    pub bytes_relayed: u64,
    /// Datagrams from a hosted room's joiner not relayed: over what one joiner, or one
    /// IPv4 address or IPv6 /64, may send through the relay (`hosted::MEMBER_RATE`).
    pub relay_limited: u64,
    /// Rooms on the server whose recording was handed to the archive.
    pub replays_recorded: u64,
    /// Hosted rooms' uploads received whole and handed to the archive to check.
    pub uploads_received: u64,
    /// Uploads refused: for no room that exists or ended lately (or with archiving off).
    pub uploads_unknown_room: u64,
    /// ... from an address of nobody in the room.
    pub uploads_stranger: u64,
    /// ... larger than `max_replay`.
    pub uploads_too_large: u64,
    /// ... whose bytes do not add up to the hash they announced.
    pub uploads_forged: u64,
    /// ... of a room a player asked to keep no replay of (`--no-share`).
    pub uploads_not_shared: u64,
}

struct Room {
    name: String,
    endpoint: Endpoint,
    creator: SocketAddr,
    open: OpenRoom,
    opened: Instant,
    started: bool,
    /// Its entry in `Rooms::timers`.
    due: Option<Instant>,
    /// Its players' (and spectators') addresses, as routed to it.
    addrs: HashMap<Slot, SocketAddr>,
    spectator_names: HashMap<SpectatorId, String>,
    /// Since when nobody is in it, and whether the last one left on purpose.
    empty_since: Option<Instant>,
    left_on_purpose: bool,
    /// Players of the running game who said goodbye, and why, until they are out.
    goodbyes: HashMap<PeerId, String>,
    /// A player asked that no replay be kept of the room (`--no-share`).
    no_share: bool,
    /// The start state, kept until the game starts for its recording (`--archive`).
    start: Option<crate::session::StartPayload>,
    /// The game's recording, from its first frame.
    tape: Option<archive::Tape>,
}

impl Room {
    fn next_timer(&self) -> Option<Instant> {
        [
            self.endpoint.poll_timeout(),
            self.empty_since.map(|t| t + EMPTY_GRACE),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// A dedicated server's rooms. Calling order as for [`Endpoint`].
pub struct Rooms {
    cfg: ServeConfig,
    rng: StdRng,
    rooms: BTreeMap<String, Room>,
    /// Every room's next timer, earliest first: finding the rooms due, and the next wake-up,
    /// costs a look at the front instead of a pass over every room.
    timers: BTreeSet<(Instant, String)>,
    /// When the per-address opening counts were last swept.
    swept: Option<Instant>,
    by_session: HashMap<u32, String>,
    /// Players (and creators) by address: the room they are in.
    by_addr: HashMap<SocketAddr, String>,
    uploads: HashMap<SocketAddr, Upload>,
    /// Whole uploads to check and open rooms with, off the loop (`opening`).
    jobs: VecDeque<OpenJob>,
    /// Room openings per address prefix (`guard::prefix`) in the current minute.
    opens: HashMap<IpAddr, (Instant, u32)>,
    /// Proof-of-address cookies (`session::guard`).
    cookies: Cookies,
    /// Addresses that echoed a cookie made for them, and when: they receive what is sent
    /// to them. A room's players and spectators, and a creator uploading, count as
    /// validated while they are there (`allowed`).
    validated: HashMap<SocketAddr, Instant>,
    /// Bytes received from and sent to each address that has not: never send it more than
    /// it sent.
    unvalidated: HashMap<SocketAddr, (u64, u64)>,
    unvalidated_order: VecDeque<SocketAddr>,
    out: VecDeque<Transmit>,
    events: VecDeque<ServeEvent>,
    stats: ServeStats,
    /// The fleet this server belongs to (`serve --directory`).
    fleet: Option<Fleet>,
    /// Opens waiting for the directory's answer to their name's claim, by name.
    claims: HashMap<String, Claim>,
    /// What the directory was last told of each room of this server.
    published: HashMap<String, RoomInfo>,
    directory_out: VecDeque<DirOp>,
    /// When the rooms are next compared with what the directory was told.
    publish_due: Option<Instant>,
    /// Rooms whose creators host them (`hosted`), by name, and their hosts and joiners by
    /// address.
    hosted: BTreeMap<String, HostedRoom>,
    hosted_by_addr: HashMap<SocketAddr, String>,
    /// When a Retry went to an address, and the round trip its echo showed (for the
    /// introductions' timing).
    retried: HashMap<SocketAddr, Instant>,
    rtts: HashMap<SocketAddr, Duration>,
    /// Finished rooms' recordings for the archive (`poll_kept`).
    kept: VecDeque<archive::Kept>,
    /// Requests about the archive for the driver (`poll_ask`).
    asks: VecDeque<archive::ArchiveAsk>,
    /// Hosted rooms that ended lately, by session id: their recording may still come.
    ended: HashMap<u32, hosted::Ended>,
    /// Recordings being uploaded, by uploader.
    shares: HashMap<SocketAddr, archive::Incoming>,
    /// The wall clock as the driver last told it, unix seconds (a replay's date).
    unix_now: i64,
}

crate::wire::impl_machine!(Rooms, ServeEvent);

impl Rooms {
    pub fn new(cfg: ServeConfig) -> Rooms {
        // Its own key, derived: nothing else the seed makes (session ids) tells it.
        let cookies = Cookies::new(blake3::derive_key("framelock serve cookies", &cfg.entropy));
        Rooms {
            rng: StdRng::from_seed(cfg.entropy),
            cfg,
            rooms: BTreeMap::new(),
            timers: BTreeSet::new(),
            swept: None,
            by_session: HashMap::new(),
            by_addr: HashMap::new(),
            uploads: HashMap::new(),
            jobs: VecDeque::new(),
            opens: HashMap::new(),
            cookies,
            validated: HashMap::new(),
            unvalidated: HashMap::new(),
            unvalidated_order: VecDeque::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: ServeStats::default(),
            fleet: None,
            claims: HashMap::new(),
            published: HashMap::new(),
            directory_out: VecDeque::new(),
            publish_due: None,
            hosted: BTreeMap::new(),
            hosted_by_addr: HashMap::new(),
            retried: HashMap::new(),
            rtts: HashMap::new(),
            kept: VecDeque::new(),
            asks: VecDeque::new(),
            ended: HashMap::new(),
            shares: HashMap::new(),
            unix_now: 0,
        }
    }

    /// The wall clock, unix seconds: the date a replay recorded from now on carries.
    pub fn set_unix_time(&mut self, secs: i64) {
        self.unix_now = secs;
    }

    pub fn stats(&self) -> ServeStats {
        let open: u64 = self
            .rooms
            .values()
            .map(|r| r.endpoint.stats().dropped_auth)
            .sum();
        let flood: u64 = self
            .rooms
            .values()
            .map(|r| r.endpoint.stats().chat_flood_dropped)
            .sum();
        ServeStats {
            dropped_auth: self.stats.dropped_auth + open,
            chat_flood_dropped: self.stats.chat_flood_dropped + flood,
            ..self.stats
        }
    }

    /// Each open room's name, mode and its players' lockstep numbers (for `--stats-json`).
    pub fn room_stats(&self) -> Vec<(String, lockstep::Mode, Option<lockstep::ServerStats>)> {
        self.rooms
            .values()
            .map(|r| (r.name.clone(), r.endpoint.mode(), r.endpoint.server_stats()))
            .collect()
    }

    /// Rooms open (their start state uploaded, or hosted by their creators).
    pub fn len(&self) -> usize {
        self.rooms.len() + self.hosted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rooms.is_empty() && self.hosted.is_empty()
    }

    /// A datagram from `from`, routed to the room, upload or handler it is for. Dropped
    /// here (counted in `ServeStats::garbage` or `wrong_room`) when none wants it; a room's
    /// endpoint says itself what it did with its datagrams.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Handled<'static> {
        self.stats.datagrams_in += 1;
        self.stats.bytes_in += datagram.len() as u64;
        if !self.is_validated(from) {
            self.count_unvalidated(from, datagram.len());
        }
        let header = Header::parse(datagram).ok().map(|(h, _)| h);
        // The archive's requests and uploads, from anyone: the op byte tells them from the
        // rooms' own traffic without decoding that.
        if header.is_some_and(|h| h.kind == Kind::Room)
            && matches!(datagram.get(HEADER_LEN), Some(14 | 16 | 18))
        {
            self.archive_datagram(now, from, datagram);
            return Handled::Taken;
        }
        if self.hosted_by_addr.contains_key(&from) {
            self.hosted_datagram(now, from, datagram);
            return Handled::Taken;
        }
        if let Some(upload) = self.uploads.get_mut(&from) {
            let chunk = header.is_some_and(|h| h.kind == Kind::StateChunk);
            let reopen = header.is_some_and(|h| h.kind == Kind::Room)
                && matches!(Msg::decode(datagram), Ok((_, Msg::Room(RoomMsg::Open(_)))));
            if chunk {
                let handled = upload.handle_datagram(now, datagram);
                if let Some(packed) = upload.poll_packed() {
                    self.open_job(now, from, packed);
                }
                return handled;
            }
            if reopen && !upload.is_done() {
                // A resent Open: the Opened was lost.
                let bytes = upload.opened();
                self.send(from, bytes);
                return Handled::Taken;
            }
        }
        if let Some(name) = self.by_addr.get(&from).cloned() {
            if let Some(room) = self.rooms.get_mut(&name) {
                let handled = room.endpoint.handle_datagram(now, from, datagram);
                self.drain_room(now, &name);
                return handled;
            }
        }
        // A Hello always passes the proof of address here, whatever session id it names.
        let foreign_hello = foreign_version(datagram, Kind::Hello).is_some();
        if foreign_hello || header.is_some_and(|h| h.kind == Kind::Hello) {
            self.handle_hello(now, from, datagram);
            return Handled::Taken;
        }
        // A room player's datagram from a new address (its router's mapping changed, it
        // moved networks): the room whose session id it names (a session-layer datagram, a
        // joiner's `Path` probe), or a room with a player at the same IP (its router gave it a
        // new port), tries its players' keys on it and checks the new path.
        if let Some(name) = self.room_for_stranger(from, header.map(|h| h.session)) {
            if self.hosted.contains_key(&name) {
                // A session id is no proof of address: on probation until it echoes a cookie.
                self.join_hosted(now, from, &name, datagram, false);
                return Handled::Taken;
            }
            if let Some(room) = self.rooms.get_mut(&name) {
                let handled = room.endpoint.handle_datagram(now, from, datagram);
                self.drain_room(now, &name);
                return handled;
            }
        }
        let kind = match Header::parse(datagram) {
            Ok((h, _)) => h.kind,
            Err(e) => {
                self.stats.garbage += 1;
                return Handled::Dropped(e.into());
            }
        };
        match kind {
            Kind::Room => match Msg::decode(datagram) {
                Ok((_, Msg::Room(RoomMsg::Open(open)))) => self.handle_open(now, from, open),
                Ok((_, Msg::Room(RoomMsg::List { first }))) => self.handle_list(now, from, first),
                Ok((_, Msg::Room(RoomMsg::Locate { room }))) => self.handle_locate(from, room),
                Ok((_, Msg::Room(RoomMsg::ListServers { first }))) => {
                    self.handle_servers(from, first)
                }
                Ok(_) => {
                    self.stats.garbage += 1;
                    return Handled::Dropped(Dropped::Unexpected(kind));
                }
                Err(e) => {
                    self.stats.garbage += 1;
                    return Handled::Dropped(e.into());
                }
            },
            // A goodbye or a late datagram from someone no longer in a room.
            Kind::Bye | Kind::Ctrl | Kind::StateAck | Kind::Loading => {
                self.stats.wrong_room += 1;
                return Handled::Dropped(Dropped::UnknownPeer(kind));
            }
            _ => {
                self.stats.garbage += 1;
                return Handled::Dropped(Dropped::Unexpected(kind));
            }
        }
        Handled::Taken
    }

    /// The room a datagram from an address that is in no room may come from (see
    /// `handle_datagram`); `None` for a stranger's handshake or a room's own requests.
    fn room_for_stranger(&self, from: SocketAddr, session: Option<u32>) -> Option<String> {
        match session {
            Some(0) => None,
            Some(id) => self.by_session.get(&id).cloned(),
            // A lockstep datagram: the room of a player behind the same IP.
            None => self
                .by_addr
                .iter()
                .find(|(a, _)| a.ip() == from.ip())
                .map(|(_, room)| room.clone()),
        }
    }

    fn handle_hello(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        let hello: Hello = match Msg::decode(datagram) {
            Ok((_, Msg::Hello(h))) => h,
            Err(crate::wire::WireError::Version(v)) => {
                let reason = format!(
                    "server speaks protocol {}, you speak {v}",
                    crate::wire::PROTOCOL_VERSION
                );
                return self.refuse(from, reason);
            }
            _ => {
                self.stats.garbage += 1;
                return;
            }
        };
        if !self.proven(now, from, &hello.cookie) {
            return;
        }
        if hello.room.is_empty() {
            let reason = "this is a framelock server: join a room on it with --room NAME \
                          (`framelock rooms` lists them)";
            return self.refuse(from, reason.into());
        }
        if let Some(server) = self.held_elsewhere(&hello.room) {
            return self.send_moved(from, hello.room, server);
        }
        if hello.no_share {
            self.no_share(&hello.room);
        }
        if self.hosted.contains_key(&hello.room) {
            return self.join_hosted(now, from, &hello.room.clone(), datagram, true);
        }
        let Some(room) = self.rooms.get_mut(&hello.room) else {
            self.stats.wrong_room += 1;
            let rooms = self.room_names(NAMED_ROOMS);
            let msg = Msg::Room(RoomMsg::NoRoom {
                room: hello.room,
                rooms,
            });
            return self.send(from, msg.encode(0));
        };
        room.endpoint.handle_datagram(now, from, datagram);
        let name = room.name.clone();
        self.drain_room(now, &name);
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        let expired: Vec<SocketAddr> = self
            .uploads
            .iter()
            .filter(|(_, u)| u.expired(now))
            .map(|(a, _)| *a)
            .collect();
        for addr in expired {
            if let Some(u) = self.uploads.remove(&addr) {
                if !self.rooms.contains_key(&u.room) {
                    self.by_session.remove(&u.session);
                }
            }
        }
        let mut due = Vec::new();
        while let Some((t, _)) = self.timers.first() {
            if *t > now {
                break;
            }
            let Some((_, name)) = self.timers.pop_first() else {
                break;
            };
            due.push(name);
        }
        for name in due {
            if let Some(room) = self.rooms.get_mut(&name) {
                room.due = None;
                room.endpoint.handle_timeout(now);
            }
            self.drain_room(now, &name);
        }
        self.publish(now);
        if self.swept.is_none_or(|t| now >= t + Duration::from_secs(1)) {
            self.swept = Some(now);
            self.opens
                .retain(|_, (start, _)| now < *start + Duration::from_secs(60));
            self.validated.retain(|_, t| now < *t + VALIDATED_FOR);
            self.retried
                .retain(|_, t| now < *t + Duration::from_secs(10));
            self.sweep_hosted(now);
            self.sweep_shares(now);
        }
    }

    /// Closes every room, telling its players (Ctrl-C on the server).
    pub fn shutdown(&mut self, now: Instant) {
        let names: Vec<String> = self.rooms.keys().cloned().collect();
        for name in names {
            self.close(now, &name, "the server is shutting down");
        }
        let hosted: Vec<String> = self.hosted.keys().cloned().collect();
        for name in hosted {
            self.close_hosted(now, &name, "the server is shutting down");
        }
    }

    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let t = match self.out.pop_front() {
            Some(t) => t,
            None => loop {
                let t = self.poll_uploads(now)?;
                if self.allowed(&t) {
                    break t;
                }
            },
        };
        self.stats.datagrams_out += 1;
        self.stats.bytes_out += t.bytes.len() as u64;
        Some(t)
    }

    fn poll_uploads(&mut self, now: Instant) -> Option<Transmit> {
        self.uploads.values_mut().find_map(|u| u.poll_transmit(now))
    }

    pub fn poll_event(&mut self) -> Option<ServeEvent> {
        self.events.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        let rooms = self.timers.first().map(|(t, _)| *t);
        let uploads = self.uploads.values().map(Upload::poll_timeout);
        // Hosted rooms are swept once a second while there are any.
        let sweep = match self.swept {
            _ if self.hosted.is_empty() => None,
            Some(t) => Some(t + Duration::from_secs(1)),
            None => self.hosted.values().map(|r| r.opened).min(),
        };
        std::iter::once(rooms)
            .chain(uploads)
            .chain([self.publish_due, sweep])
            .flatten()
            .min()
    }

    fn send(&mut self, to: SocketAddr, bytes: Vec<u8>) {
        self.queue(Transmit::new(to, bytes));
    }

    fn refuse(&mut self, to: SocketAddr, reason: String) {
        self.send(to, Msg::Refuse(reason.clone()).encode(0));
        self.events
            .push_back(ServeEvent::Refused { addr: to, reason });
    }
}

fn info(r: &Room, now: Instant) -> RoomInfo {
    let players = r.endpoint.players().len() as u8;
    RoomInfo {
        name: r.name.clone(),
        content: r.open.content_name.clone(),
        core: r.open.core_name.clone(),
        players: players.min(r.open.players),
        seats: r.open.players,
        password: r.open.password,
        playing: r.started,
        age_secs: now.saturating_duration_since(r.opened).as_secs() as u32,
        spectators: r.endpoint.spectator_count().min(255) as u8,
        mode: r.open.mode.unwrap_or_default(),
        region: String::new(),
        server: String::new(),
    }
}
