//! [`Rooms`]: a dedicated server's rooms as one sans-IO state machine, a
//! [`session::Endpoint`] per room behind a router (quinn-proto's `Endpoint` over its
//! `Connection`s). It never reads a clock and never touches a socket.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};

use crate::lockstep::{self, Frame};
use crate::session::guard::{prefix, Cookies, COOKIE_LEN};
use crate::session::msg::{
    foreign_version, Hello, Msg, OpenRoom, RoomInfo, RoomMsg, ServerInfo, MAX_LISTED,
    MAX_SERVERS_LISTED,
};
use crate::session::{
    Endpoint, EndpointConfig, EndpointEvent, HostConfig, PlayerOutReason, SessionInfo,
    SessionLeftReason, Upload,
};
use crate::wire::{Header, Kind, Transmit};

use super::fleet::{DirNews, DirOp, Fleet};
use super::names::{room_name, valid_room_name};
use super::opening::{OpenJob, Opened};

mod hosted;

use crate::input::MAX_PLAYERS;
use hosted::HostedRoom;
pub use hosted::{HOSTED_SILENCE, MEMBER_SILENCE};

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
/// Unvalidated addresses whose bytes are counted for the anti-amplification rule at once;
/// past this the oldest count is forgotten (its address then gets nothing until it sends
/// again).
const MAX_UNVALIDATED: usize = 65_536;
/// Addresses that proved they receive at their address (echoed a cookie) remembered at
/// once, and for how long: their Hellos and Opens need no new cookie meanwhile.
const MAX_VALIDATED: usize = 65_536;
const VALIDATED_FOR: Duration = Duration::from_secs(600);
/// Default [`ServeConfig::max_state`]: bytes of one room's unpacked start state.
pub const DEFAULT_MAX_STATE: usize = 64 << 20;
/// Default [`ServeConfig::max_memory`]: bytes of start states, packed and unpacked, the
/// rooms and uploads hold in all.
pub const DEFAULT_MAX_MEMORY: usize = 2 << 30;
/// Rooms named in a `NoRoom` answer.
const NAMED_ROOMS: usize = 16;
/// How often a fleet member compares its rooms with what it wrote in the directory, and
/// sends its load for the heartbeat.
const PUBLISH_EVERY: Duration = Duration::from_secs(1);
/// Longest an Open waits for the directory's answer to its name's claim; past this the room
/// opens here alone (and is written to the directory when it answers again).
const CLAIM_WAIT: Duration = Duration::from_secs(2);

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
        }
    }
}

/// What happened in a room, for the server's log (one line each).
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
    Joined {
        room: String,
        slot: u8,
        name: String,
        addr: SocketAddr,
    },
    Started {
        room: String,
        players: usize,
    },
    Left {
        room: String,
        slot: u8,
        reason: String,
    },
    /// A player is out of the running game; `said` is its goodbye's reason if it said one
    /// (its leaving is said once, here, with the frame its input stops at).
    Out {
        room: String,
        slot: u8,
        from_frame: Frame,
        reason: PlayerOutReason,
        said: Option<String>,
    },
    /// The player's checksum of `frame` differs from most players'; `source` is the player
    /// whose state is fetched to resync it (`None`: a recovery is under way already).
    Desync {
        room: String,
        slot: u8,
        frame: Frame,
        source: Option<u8>,
    },
    /// The player has a majority player's state for `frame` and continues from it.
    Resynced {
        room: String,
        slot: u8,
        frame: Frame,
    },
    Closed {
        room: String,
        why: String,
    },
    /// A player who joined the running game (or came back) plays from `from_frame` on.
    PlayerJoined {
        room: String,
        slot: u8,
        name: String,
        from_frame: Frame,
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
    /// A player's datagrams come from a new address, which answered a challenge there.
    PathChanged {
        room: String,
        slot: u8,
        from: SocketAddr,
        to: SocketAddr,
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
    /// Its players' (and spectators') addresses by slot, as routed to it.
    addrs: HashMap<u8, SocketAddr>,
    spectator_names: HashMap<u8, String>,
    /// Since when nobody is in it, and whether the last one left on purpose.
    empty_since: Option<Instant>,
    left_on_purpose: bool,
    /// Players of the running game who said goodbye, and why, until they are out.
    goodbyes: HashMap<u8, String>,
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
}

struct Claim {
    from: SocketAddr,
    open: OpenRoom,
    since: Instant,
}

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
        }
    }

    /// Makes this server a member of a fleet: `me` is its public address ("ADDR:PORT"),
    /// `region` its region. Its rooms' names are then claimed in the directory before they
    /// open ([`poll_directory`](Self::poll_directory)), and the directory's news
    /// ([`handle_directory`](Self::handle_directory)) answers for the other servers' rooms.
    pub fn with_fleet(mut self, now: Instant, me: String, region: String) -> Rooms {
        self.fleet = Some(Fleet::new(me, region));
        self.publish_due = Some(now);
        self
    }

    /// The fleet as this server last heard of it.
    pub fn fleet(&self) -> Option<&Fleet> {
        self.fleet.as_ref()
    }

    /// Whether Opens wait for the directory's answer (its news comes on no socket: the
    /// driver looks for it often meanwhile).
    pub fn awaits_directory(&self) -> bool {
        !self.claims.is_empty()
    }

    /// The next thing to write in the directory.
    pub fn poll_directory(&mut self) -> Option<DirOp> {
        self.directory_out.pop_front()
    }

    /// News from the directory.
    pub fn handle_directory(&mut self, now: Instant, news: DirNews) {
        let Some(fleet) = &mut self.fleet else {
            return;
        };
        fleet.apply(&news);
        match news {
            DirNews::Claimed(room) => {
                if let Some(c) = self.claims.remove(&room) {
                    self.start_upload(now, c.from, room, c.open);
                }
            }
            DirNews::Unreachable(room) => {
                if let Some(c) = self.claims.remove(&room) {
                    self.events.push_back(ServeEvent::ClaimUnanswered {
                        room: room.clone(),
                        why: "the directory is unreachable".into(),
                    });
                    self.start_upload(now, c.from, room, c.open);
                }
            }
            DirNews::Taken { room, server } => {
                self.published.remove(&room);
                if let Some(c) = self.claims.remove(&room) {
                    self.refuse(c.from, format!("room {room} exists already (on {server})"));
                }
            }
            _ => {}
        }
    }

    /// This server's load, as `framelock servers` lists it.
    pub fn load(&self) -> ServerInfo {
        let (me, region) = match &self.fleet {
            Some(f) => (f.me.clone(), f.region.clone()),
            None => (String::new(), String::new()),
        };
        let players: usize = self
            .rooms
            .values()
            .map(|r| r.endpoint.players().len())
            .sum();
        let players = players
            + self
                .hosted
                .values()
                .map(|r| usize::from(r.direct) + usize::from(r.relayed) + 1)
                .sum::<usize>();
        let rooms = self.rooms.len() + self.hosted.len();
        ServerInfo {
            server: me,
            region,
            rooms: rooms.min(usize::from(u16::MAX)) as u16,
            max_rooms: self.cfg.max_rooms.min(usize::from(u16::MAX)) as u16,
            players: players.min(usize::from(u16::MAX)) as u16,
        }
    }

    /// This server's rooms and, in a fleet, every other server's, by name.
    fn fleet_list(&self, now: Instant) -> Vec<RoomInfo> {
        let mut all: BTreeMap<&str, RoomInfo> = BTreeMap::new();
        if let Some(f) = &self.fleet {
            for r in f.rooms.values() {
                all.insert(&r.name, r.clone());
            }
        }
        for r in self.rooms.values() {
            all.insert(&r.name, self.own_info(r, now));
        }
        for r in self.hosted.values() {
            let mut i = r.info(now);
            if let Some(f) = &self.fleet {
                i.server = f.me.clone();
                i.region = f.region.clone();
            }
            all.insert(&r.name, i);
        }
        all.into_values().collect()
    }

    /// A room of this server as the directory and listings show it.
    fn own_info(&self, r: &Room, now: Instant) -> RoomInfo {
        let mut i = info(r, now);
        if let Some(f) = &self.fleet {
            i.server = f.me.clone();
            i.region = f.region.clone();
        }
        i
    }

    /// Compares the rooms with what the directory was told, and queues what changed.
    fn publish(&mut self, now: Instant) {
        let Some(fleet) = &self.fleet else {
            return;
        };
        if self.publish_due.is_some_and(|t| now < t) {
            return;
        }
        self.publish_due = Some(now + PUBLISH_EVERY);
        let me = fleet.me.clone();
        let region = fleet.region.clone();
        let infos: Vec<RoomInfo> = self
            .rooms
            .values()
            .map(|r| info(r, now))
            .chain(self.hosted.values().map(|r| r.info(now)))
            .collect();
        for mut i in infos {
            i.server = me.clone();
            i.region = region.clone();
            let same = self.published.get(&i.name).is_some_and(|p| {
                RoomInfo {
                    age_secs: i.age_secs,
                    ..p.clone()
                } == i
            });
            if !same {
                self.published.insert(i.name.clone(), i.clone());
                self.directory_out.push_back(DirOp::Update(i));
            }
        }
        let gone: Vec<String> = self
            .published
            .keys()
            .filter(|n| {
                !self.rooms.contains_key(*n)
                    && !self.hosted.contains_key(*n)
                    && !self.claims.contains_key(*n)
                    && !self.uploads.values().any(|u| &u.room == *n)
            })
            .cloned()
            .collect();
        for name in gone {
            self.published.remove(&name);
            self.directory_out.push_back(DirOp::Remove(name));
        }
        let expired: Vec<String> = self
            .claims
            .iter()
            .filter(|(_, c)| now >= c.since + CLAIM_WAIT)
            .map(|(n, _)| n.clone())
            .collect();
        for room in expired {
            if let Some(c) = self.claims.remove(&room) {
                self.events.push_back(ServeEvent::ClaimUnanswered {
                    room: room.clone(),
                    why: format!("no answer from the directory in {} s", CLAIM_WAIT.as_secs()),
                });
                self.start_upload(now, c.from, room, c.open);
            }
        }
        let load = self.load();
        self.directory_out.push_back(DirOp::Load(load));
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

    /// The rooms as `framelock rooms` lists them, by name.
    pub fn list(&self, now: Instant) -> Vec<RoomInfo> {
        let mut all: Vec<RoomInfo> = self.rooms.values().map(|r| self.own_info(r, now)).collect();
        all.extend(self.hosted.values().map(|r| r.info(now)));
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        self.stats.datagrams_in += 1;
        self.stats.bytes_in += datagram.len() as u64;
        if !self.is_validated(from) {
            self.count_unvalidated(from, datagram.len());
        }
        let header = Header::parse(datagram).ok().map(|(h, _)| h);
        if self.hosted_by_addr.contains_key(&from) {
            return self.hosted_datagram(now, from, datagram);
        }
        if let Some(upload) = self.uploads.get_mut(&from) {
            let chunk = header.is_some_and(|h| h.kind == Kind::StateChunk);
            let reopen = header.is_some_and(|h| h.kind == Kind::Room)
                && matches!(Msg::decode(datagram), Ok((_, Msg::Room(RoomMsg::Open(_)))));
            if chunk {
                if let Some(packed) = upload.handle_datagram(now, datagram) {
                    self.open_job(now, from, packed);
                }
                return;
            }
            if reopen && !upload.is_done() {
                // A resent Open: the Opened was lost.
                let bytes = upload.opened();
                self.send(from, bytes);
                return;
            }
        }
        if let Some(name) = self.by_addr.get(&from).cloned() {
            if let Some(room) = self.rooms.get_mut(&name) {
                room.endpoint.handle_datagram(now, from, datagram);
                self.drain_room(now, &name);
                return;
            }
        }
        // A Hello always passes the proof of address here, whatever session id it names.
        let foreign_hello = foreign_version(datagram, Kind::Hello).is_some();
        if foreign_hello || header.is_some_and(|h| h.kind == Kind::Hello) {
            return self.handle_hello(now, from, datagram);
        }
        // A room player's datagram from a new address (its router's mapping changed, it
        // moved networks): the room whose session id it names (a session-layer datagram, a
        // joiner's `Path` probe), or a room with a player at the same IP (its router gave it a
        // new port), tries its players' keys on it and checks the new path.
        if let Some(name) = self.room_for_stranger(from, header.map(|h| h.session)) {
            if self.hosted.contains_key(&name) {
                return self.join_hosted(now, from, &name, datagram);
            }
            if let Some(room) = self.rooms.get_mut(&name) {
                room.endpoint.handle_datagram(now, from, datagram);
                self.drain_room(now, &name);
                return;
            }
        }
        match header.map(|h| h.kind) {
            Some(Kind::Room) => match Msg::decode(datagram) {
                Ok((_, Msg::Room(RoomMsg::Open(open)))) => self.handle_open(now, from, open),
                Ok((_, Msg::Room(RoomMsg::List { first }))) => self.handle_list(now, from, first),
                Ok((_, Msg::Room(RoomMsg::Locate { room }))) => self.handle_locate(from, room),
                Ok((_, Msg::Room(RoomMsg::ListServers { first }))) => {
                    self.handle_servers(from, first)
                }
                _ => self.stats.garbage += 1,
            },
            // A goodbye or a late datagram from someone no longer in a room.
            Some(Kind::Bye | Kind::Ctrl | Kind::StateAck | Kind::Loading) => {
                self.stats.wrong_room += 1
            }
            _ => self.stats.garbage += 1,
        }
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
        if self.hosted.contains_key(&hello.room) {
            return self.join_hosted(now, from, &hello.room.clone(), datagram);
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

    fn handle_open(&mut self, now: Instant, from: SocketAddr, open: OpenRoom) {
        if !self.proven(now, from, &open.cookie) {
            return;
        }
        if self.claims.values().any(|c| c.from == from) {
            // A resent Open while its name's claim is under way: answered when it is done.
            return;
        }
        if let Some(room) = self.by_addr.get(&from) {
            let reason = format!("you are in room {room} already");
            return self.refuse(from, reason);
        }
        let (start, count) = self.opens.entry(prefix(from.ip())).or_insert((now, 0));
        if now >= *start + Duration::from_secs(60) {
            (*start, *count) = (now, 0);
        }
        if *count >= self.cfg.opens_per_minute {
            let count = *count;
            self.stats.rate_limited += 1;
            let reason = format!(
                "too many rooms opened from your address in the last minute ({count} at most); \
                 try again soon"
            );
            return self.refuse(from, reason);
        }
        let mine = prefix(from.ip());
        let held = self
            .rooms
            .values()
            .map(|r| r.creator)
            .chain(self.hosted.values().map(|r| r.host))
            .chain(
                self.uploads
                    .iter()
                    .filter(|(_, u)| !self.rooms.contains_key(&u.room))
                    .map(|(a, _)| *a),
            )
            .filter(|a| prefix(a.ip()) == mine)
            .count();
        if held >= self.cfg.rooms_per_address {
            self.stats.rate_limited += 1;
            let reason = format!(
                "your address has {held} rooms open, the most this server allows; close one first"
            );
            return self.refuse(from, reason);
        }
        // A finished upload is a room already, until its creator's Hello retires it.
        let uploading = self.uploads.values().filter(|u| !u.is_done()).count();
        if self.len() + uploading + self.claims.len() >= self.cfg.max_rooms {
            self.stats.full += 1;
            if let Some(spare) = self.fleet.as_ref().and_then(Fleet::spare_server) {
                let server = spare.server.clone();
                return self.send_moved(from, open.room, server);
            }
            let reason = format!("the server is full ({} rooms)", self.cfg.max_rooms);
            return self.refuse(from, reason);
        }
        let raw = open.raw_len as usize;
        if raw > self.cfg.max_state {
            let reason = format!(
                "the start state is too big for this server ({} MiB unpacked at most)",
                self.cfg.max_state >> 20
            );
            return self.refuse(from, reason);
        }
        if self.memory() + state_bytes(&open) > self.cfg.max_memory {
            self.stats.full += 1;
            let reason = format!(
                "the server is full: its rooms hold {} MiB of start states, the most it keeps",
                self.cfg.max_memory >> 20
            );
            return self.refuse(from, reason);
        }
        let name = if open.room.is_empty() {
            loop {
                let name = room_name(&mut self.rng);
                if !self.name_taken(&name) {
                    break name;
                }
            }
        } else if !valid_room_name(&open.room) {
            let reason = format!(
                "{:?} is no room name: use 1 to 32 letters, digits, '-' or '_'",
                open.room
            );
            return self.refuse(from, reason);
        } else if let Some(server) = self.held_elsewhere(&open.room) {
            return self.refuse(
                from,
                format!("room {} exists already (on {server})", open.room),
            );
        } else if self.name_taken(&open.room) {
            return self.refuse(from, format!("room {} exists already", open.room));
        } else {
            open.room.clone()
        };
        if let Some(fleet) = &self.fleet {
            if fleet.online {
                let mut i = RoomInfo {
                    name: name.clone(),
                    content: open.content_name.clone(),
                    core: open.core_name.clone(),
                    players: 0,
                    seats: open.players,
                    password: open.password,
                    playing: false,
                    age_secs: 0,
                    spectators: 0,
                    mode: open.mode.unwrap_or(self.cfg.lockstep.mode),
                    region: fleet.region.clone(),
                    server: fleet.me.clone(),
                };
                i.content.truncate(crate::session::msg::MAX_TEXT);
                self.published.insert(name.clone(), i.clone());
                self.directory_out.push_back(DirOp::Claim(i));
                let since = now;
                self.claims.insert(name, Claim { from, open, since });
                return;
            }
            // Written to the directory when it answers again (`publish`).
            self.events.push_back(ServeEvent::ClaimUnanswered {
                room: name.clone(),
                why: "the directory is unreachable".into(),
            });
        }
        self.start_upload(now, from, name, open);
    }

    /// The room's name is this server's: the creator uploads its start state.
    fn start_upload(&mut self, now: Instant, from: SocketAddr, name: String, open: OpenRoom) {
        if open.hosted {
            return self.open_hosted(now, from, name, open);
        }
        let session = self.fresh_session();
        match Upload::new(now, from, name, session, open) {
            Ok(upload) => {
                if let Some((_, count)) = self.opens.get_mut(&prefix(from.ip())) {
                    *count += 1;
                }
                let bytes = upload.opened();
                self.by_session.insert(session, upload.room.clone());
                self.uploads.insert(from, upload);
                self.send(from, bytes);
            }
            Err(reason) => self.refuse(from, reason),
        }
    }

    /// A session id no room has.
    fn fresh_session(&mut self) -> u32 {
        loop {
            let id = self.rng.next_u32();
            if id != 0 && !self.by_session.contains_key(&id) {
                break id;
            }
        }
    }

    /// Whether `from` proved its address: it echoed `cookie`, made for it, now or lately.
    /// If not, it is sent a Retry with one (no larger than the padded datagram it sent) and
    /// nothing else.
    fn proven(&mut self, now: Instant, from: SocketAddr, cookie: &[u8; COOKIE_LEN]) -> bool {
        if self.is_validated(from) {
            return true;
        }
        if self.cookies.check(now, from, cookie) {
            if let Some(sent) = self.retried.remove(&from) {
                if self.rtts.len() >= MAX_VALIDATED {
                    self.rtts.clear();
                }
                self.rtts.insert(from, now.saturating_duration_since(sent));
            }
            if self.validated.len() >= MAX_VALIDATED {
                self.validated
                    .retain(|_, t| now < *t + Duration::from_secs(30));
            }
            if self.validated.len() < MAX_VALIDATED {
                self.validated.insert(from, now);
            }
            return true;
        }
        self.stats.retries += 1;
        if self.retried.len() >= MAX_VALIDATED {
            self.retried.clear();
        }
        self.retried.insert(from, now);
        let cookie = self.cookies.make(now, from);
        self.send(from, Msg::Retry(cookie).encode(0));
        false
    }

    /// Whether `addr` showed it receives what is sent to it: it echoed a cookie, it is a
    /// room's player or spectator (admitted after one), or it uploads a room's state (its
    /// Open echoed one).
    fn is_validated(&self, addr: SocketAddr) -> bool {
        self.validated.contains_key(&addr)
            || self.by_addr.contains_key(&addr)
            || self.hosted_by_addr.contains_key(&addr)
            || self.uploads.contains_key(&addr)
    }

    /// Start-state bytes the rooms and uploads hold, as their Opens declared them.
    fn memory(&self) -> usize {
        let rooms = self.rooms.values().map(|r| state_bytes(&r.open));
        let uploads = self
            .uploads
            .values()
            .filter(|u| !self.rooms.contains_key(&u.room))
            .map(|u| state_bytes(&u.open));
        let claims = self.claims.values().map(|c| state_bytes(&c.open));
        rooms.chain(uploads).chain(claims).sum()
    }

    fn name_taken(&self, name: &str) -> bool {
        self.rooms.contains_key(name)
            || self.hosted.contains_key(name)
            || self.claims.contains_key(name)
            || self.uploads.values().any(|u| u.room == name)
            || self.held_elsewhere(name).is_some()
    }

    /// The server of the fleet that holds the room, if another one does.
    fn held_elsewhere(&self, name: &str) -> Option<String> {
        if self.rooms.contains_key(name) || self.hosted.contains_key(name) {
            return None;
        }
        let fleet = self.fleet.as_ref()?;
        fleet.rooms.get(name).map(|r| r.server.clone())
    }

    /// Some open rooms' names, the fleet's included.
    fn room_names(&self, n: usize) -> Vec<String> {
        let others = self.fleet.iter().flat_map(|f| f.rooms.keys());
        let mut names: Vec<String> = self
            .rooms
            .keys()
            .chain(self.hosted.keys())
            .chain(others)
            .cloned()
            .collect();
        names.sort();
        names.dedup();
        names.truncate(n);
        names
    }

    fn send_moved(&mut self, to: SocketAddr, room: String, server: String) {
        self.events.push_back(ServeEvent::Moved {
            addr: to,
            room: room.clone(),
            server: server.clone(),
        });
        self.send(to, Msg::Room(RoomMsg::Moved { room, server }).encode(0));
    }

    /// Where a room is held: here (an empty server), on another server of the fleet, or
    /// nowhere (`NoRoom`).
    fn handle_locate(&mut self, from: SocketAddr, room: String) {
        let msg = if self.rooms.contains_key(&room) {
            RoomMsg::Moved {
                room,
                server: String::new(),
            }
        } else if let Some(server) = self.held_elsewhere(&room) {
            RoomMsg::Moved { room, server }
        } else {
            self.stats.wrong_room += 1;
            let rooms = self.room_names(NAMED_ROOMS);
            RoomMsg::NoRoom { room, rooms }
        };
        self.send(from, Msg::Room(msg).encode(0));
    }

    /// The fleet's servers: this one (as it is now) and the others' last heartbeats.
    fn handle_servers(&mut self, from: SocketAddr, first: u16) {
        let me = self.load();
        let mut all: Vec<ServerInfo> = match &self.fleet {
            Some(f) => f
                .servers
                .values()
                .filter(|s| s.server != me.server)
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        all.push(me);
        all.sort_by(|a, b| a.server.cmp(&b.server));
        let msg = Msg::Room(RoomMsg::Servers {
            total: all.len().min(usize::from(u16::MAX)) as u16,
            first,
            servers: all
                .into_iter()
                .skip(usize::from(first))
                .take(MAX_SERVERS_LISTED)
                .collect(),
        });
        self.send(from, msg.encode(0));
    }

    fn handle_list(&mut self, now: Instant, from: SocketAddr, first: u16) {
        let (total, rooms): (usize, Vec<RoomInfo>) = if self.fleet.is_some() {
            let all = self.fleet_list(now);
            let page = all
                .iter()
                .skip(usize::from(first))
                .take(MAX_LISTED)
                .cloned()
                .collect();
            (all.len(), page)
        } else {
            let all = self.list(now);
            let page = all
                .iter()
                .skip(usize::from(first))
                .take(MAX_LISTED)
                .cloned()
                .collect();
            (all.len(), page)
        };
        let msg = Msg::Room(RoomMsg::Rooms {
            total: total.min(usize::from(u16::MAX)) as u16,
            first,
            rooms,
        });
        self.send(from, msg.encode(0));
    }

    /// The creator's upload is whole: its check and the room's endpoint are made off the
    /// loop (`opening`), and the room opens when [`handle_opened`](Self::handle_opened)
    /// brings them.
    fn open_job(&mut self, now: Instant, creator: SocketAddr, packed: Vec<u8>) {
        let Some(upload) = self.uploads.get(&creator) else {
            return;
        };
        let mut open = upload.open.clone();
        let mut entropy = [0u8; 32];
        self.rng.fill_bytes(&mut entropy);
        let mut host = HostConfig::new(upload.session, entropy, open.fps);
        host.max_players = open.players;
        host.start_with = open.start_with;
        host.max_spectators = self.cfg.max_spectators;
        host.host_is_player = false;
        // The creator's choices, else the server's; K 0 is the mode's default.
        let mode = open.mode.unwrap_or(self.cfg.lockstep.mode);
        let k = match open.keyframe_interval {
            0 => mode.default_keyframe_interval() as u8,
            k => k,
        };
        open.mode = Some(mode);
        open.keyframe_interval = k;
        host.keyframe_interval = k;
        host.mode = mode;
        host.creator = Some(creator);
        host.relayed_password = open.password;
        let cfg = EndpointConfig {
            host,
            lockstep: lockstep::Config {
                mode,
                ..self.cfg.lockstep.clone()
            }
            .with_keyframe_interval(u32::from(k)),
            lobby_timeout: None,
        };
        let info = SessionInfo {
            core_name: open.core_name.clone(),
            core_version: open.core_version.clone(),
            content_name: open.content_name.clone(),
            content_hash: open.content_hash,
            options: Vec::new(),
            player_name: open.player_name.clone(),
        };
        self.jobs.push_back(OpenJob {
            room: upload.room.clone(),
            creator,
            session: upload.session,
            open,
            cfg,
            info,
            packed,
            since: now,
        });
    }

    /// The next room to check and build off the loop: run it ([`OpenJob::run`]) and give
    /// what it made to [`handle_opened`](Self::handle_opened).
    pub fn poll_job(&mut self) -> Option<OpenJob> {
        self.jobs.pop_front()
    }

    /// Runs every waiting job here and now (the simulated worlds, on a manual clock, and
    /// the fuzzer: nothing else needs answering meanwhile).
    pub fn run_jobs(&mut self, now: Instant) {
        while let Some(job) = self.poll_job() {
            let opened = job.run();
            self.handle_opened(now, opened);
        }
    }

    /// A room's start state was checked and its endpoint built (or refused): it opens and
    /// waits for its creator's Hello and the other players'.
    pub fn handle_opened(&mut self, now: Instant, opened: Opened) {
        let Opened {
            room: name,
            creator,
            session,
            open,
            endpoint,
        } = opened;
        // Its creator's upload may have been given up meanwhile (the server shut it).
        if !self
            .uploads
            .get(&creator)
            .is_some_and(|u| u.session == session && u.room == name)
        {
            return;
        }
        match endpoint {
            Ok(endpoint) => {
                if let Some(u) = self.uploads.get_mut(&creator) {
                    u.verified();
                }
                self.stats.rooms_opened += 1;
                self.events.push_back(ServeEvent::Opened {
                    room: name.clone(),
                    creator,
                    seats: open.players,
                    core: open.core_name.clone(),
                    content: open.content_name.clone(),
                    password: open.password,
                });
                self.by_addr.insert(creator, name.clone());
                self.rooms.insert(
                    name.clone(),
                    Room {
                        name: name.clone(),
                        endpoint,
                        creator,
                        open,
                        opened: now,
                        started: false,
                        due: None,
                        addrs: HashMap::new(),
                        spectator_names: HashMap::new(),
                        // Until its creator comes to it from the upload.
                        empty_since: Some(now),
                        left_on_purpose: false,
                        goodbyes: HashMap::new(),
                    },
                );
                self.reschedule(&name);
            }
            Err(reason) => {
                if let Some(u) = self.uploads.remove(&creator) {
                    self.by_session.remove(&u.session);
                }
                self.refuse(creator, reason);
            }
        }
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
        }
    }

    /// Puts a room's next timer in `timers`.
    fn reschedule(&mut self, name: &str) {
        let Some(room) = self.rooms.get_mut(name) else {
            return;
        };
        let next = room.next_timer();
        if next == room.due {
            return;
        }
        if let Some(old) = room.due.take() {
            self.timers.remove(&(old, name.to_string()));
        }
        if let Some(t) = next {
            self.timers.insert((t, name.to_string()));
        }
        room.due = next;
    }

    /// Drains a room's events and datagrams, and closes it when its time has come.
    fn drain_room(&mut self, now: Instant, name: &str) {
        let Some(room) = self.rooms.get_mut(name) else {
            return;
        };
        let sent: Vec<Transmit> = std::iter::from_fn(|| room.endpoint.poll_transmit(now)).collect();
        // Queued before the events below forget a departed player's address: its goodbye
        // is among these.
        for t in sent {
            self.queue(t);
        }
        let Some(room) = self.rooms.get_mut(name) else {
            return;
        };
        while let Some(ev) = room.endpoint.poll_event() {
            let room_name = room.name.clone();
            match ev {
                EndpointEvent::Joined { slot, name, addr } => {
                    self.by_addr.insert(addr, room_name.clone());
                    room.addrs.insert(slot, addr);
                    if addr == room.creator {
                        // The creator's upload is over once it joined its room.
                        self.uploads.remove(&addr);
                    }
                    if crate::session::is_spectator_slot(slot) {
                        room.spectator_names.insert(slot, name);
                        continue;
                    }
                    self.events.push_back(ServeEvent::Joined {
                        room: room_name,
                        slot,
                        name,
                        addr,
                    });
                }
                EndpointEvent::Refused { addr, reason } => {
                    self.events.push_back(ServeEvent::Refused { addr, reason })
                }
                EndpointEvent::Started { slots } => {
                    room.started = true;
                    self.events.push_back(ServeEvent::Started {
                        room: room_name,
                        players: slots.len(),
                    });
                }
                EndpointEvent::PlayerJoined {
                    slot,
                    name,
                    from_frame,
                } => self.events.push_back(ServeEvent::PlayerJoined {
                    room: room_name,
                    slot: slot.0,
                    name,
                    from_frame,
                }),
                EndpointEvent::Watching { slot, frame } => {
                    self.events.push_back(ServeEvent::Watching {
                        room: room_name,
                        name: room
                            .spectator_names
                            .get(&slot.0)
                            .cloned()
                            .unwrap_or_default(),
                        frame,
                        watching: room.endpoint.spectator_count(),
                    })
                }
                EndpointEvent::SpectatorLeft { slot, reason } => {
                    if let Some(addr) = room.addrs.remove(&slot.0) {
                        self.by_addr.remove(&addr);
                        self.validated.remove(&addr);
                    }
                    let name = room.spectator_names.remove(&slot.0).unwrap_or_default();
                    self.events.push_back(ServeEvent::SpectatorLeft {
                        room: room_name,
                        reason: format!("{name} {reason}"),
                    });
                }
                EndpointEvent::Left { slot, reason } => {
                    // No longer routed to the room, nor trusted to receive.
                    if let Some(addr) = room.addrs.remove(&slot) {
                        self.by_addr.remove(&addr);
                        self.validated.remove(&addr);
                    }
                    room.left_on_purpose = matches!(reason, SessionLeftReason::Bye(_));
                    if room.started && !crate::session::is_spectator_slot(slot) {
                        // Said once, with the frame its input stops at (`Out`).
                        room.goodbyes.insert(slot, reason.to_string());
                        continue;
                    }
                    self.events.push_back(ServeEvent::Left {
                        room: room_name,
                        slot,
                        reason: reason.to_string(),
                    });
                }
                EndpointEvent::PlayerOut {
                    slot,
                    from_frame,
                    reason,
                } => {
                    if let Some(addr) = room.addrs.remove(&slot.0) {
                        self.by_addr.remove(&addr);
                        self.validated.remove(&addr);
                    }
                    room.left_on_purpose = reason == PlayerOutReason::Left;
                    self.events.push_back(ServeEvent::Out {
                        room: room_name,
                        slot: slot.0,
                        from_frame,
                        reason,
                        said: room.goodbyes.remove(&slot.0),
                    });
                }
                EndpointEvent::Desync {
                    frame,
                    slot,
                    source,
                    ..
                } => self.events.push_back(ServeEvent::Desync {
                    room: room_name,
                    slot: slot.0,
                    frame,
                    source: source.map(|p| p.0),
                }),
                EndpointEvent::Resynced { slot, frame } => {
                    self.events.push_back(ServeEvent::Resynced {
                        room: room_name,
                        slot,
                        frame,
                    })
                }
                EndpointEvent::PathChanged { slot, from, to } => {
                    // It echoed a challenge there: it receives what is sent to it.
                    self.by_addr.remove(&from);
                    self.validated.remove(&from);
                    self.by_addr.insert(to, room_name.clone());
                    self.validated.insert(to, now);
                    room.addrs.insert(slot, to);
                    if from == room.creator {
                        room.creator = to;
                    }
                    self.events.push_back(ServeEvent::PathChanged {
                        room: room_name,
                        slot,
                        from,
                        to,
                    });
                }
                _ => {}
            }
        }
        if room.addrs.is_empty() {
            room.empty_since.get_or_insert(now);
        } else {
            room.empty_since = None;
            room.left_on_purpose = false;
        }
        // Nobody in it: at once if the last one said goodbye, else after a grace in which
        // players whose links dropped come back.
        let empty = room
            .empty_since
            .is_some_and(|t| (room.left_on_purpose && room.started) || now >= t + EMPTY_GRACE);
        if empty {
            let why = if room.left_on_purpose {
                "everyone left"
            } else if room.started {
                "nobody came back to it"
            } else {
                "nobody is in it"
            };
            self.close(now, name, why);
        } else {
            self.reschedule(name);
        }
    }

    fn close(&mut self, now: Instant, name: &str, why: &str) {
        let Some(mut room) = self.rooms.remove(name) else {
            return;
        };
        if let Some(t) = room.due {
            self.timers.remove(&(t, name.to_string()));
        }
        room.endpoint.shutdown(&format!("the room closed: {why}"));
        while let Some(t) = room.endpoint.poll_transmit(now) {
            self.queue(t);
        }
        for addr in room.addrs.values().chain([&room.creator]) {
            if self.by_addr.get(addr).is_some_and(|r| r == name) {
                self.by_addr.remove(addr);
            }
            // Forgotten with the room, so the set holds only players of open rooms.
            self.validated.remove(addr);
        }
        self.by_session.remove(&room.endpoint.session_id());
        self.uploads.remove(&room.creator);
        if self.published.remove(name).is_some() {
            self.directory_out
                .push_back(DirOp::Remove(name.to_string()));
        }
        self.stats.rooms_closed += 1;
        self.stats.dropped_auth += room.endpoint.stats().dropped_auth;
        self.stats.chat_flood_dropped += room.endpoint.stats().chat_flood_dropped;
        self.events.push_back(ServeEvent::Closed {
            room: name.to_string(),
            why: why.to_string(),
        });
    }

    /// Closes every room, telling its players (Ctrl-C on the server).
    pub fn shutdown(&mut self, now: Instant) {
        let names: Vec<String> = self.rooms.keys().cloned().collect();
        for name in names {
            self.close(now, &name, "the server is shutting down");
        }
        let hosted: Vec<String> = self.hosted.keys().cloned().collect();
        for name in hosted {
            self.close_hosted(&name, "the server is shutting down");
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

    /// Queues a datagram if the anti-amplification rule lets it go to its address: judged
    /// now, while the address is known to be validated or not.
    fn queue(&mut self, t: Transmit) {
        if self.allowed(&t) {
            self.out.push_back(t);
        }
    }

    fn allowed(&mut self, t: &Transmit) -> bool {
        let ok = self.is_validated(t.to) || self.spend_unvalidated(t.to, t.bytes.len());
        if !ok {
            self.stats.held_unvalidated += 1;
        }
        ok
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
        self.queue(Transmit { to, bytes });
    }

    fn refuse(&mut self, to: SocketAddr, reason: String) {
        self.send(to, Msg::Refuse(reason.clone()).encode(0));
        self.events
            .push_back(ServeEvent::Refused { addr: to, reason });
    }

    fn count_unvalidated(&mut self, from: SocketAddr, len: usize) {
        if !self.unvalidated.contains_key(&from) {
            if self.unvalidated.len() >= MAX_UNVALIDATED {
                if let Some(old) = self.unvalidated_order.pop_front() {
                    self.unvalidated.remove(&old);
                }
            }
            self.unvalidated_order.push_back(from);
        }
        self.unvalidated.entry(from).or_default().0 += len as u64;
    }

    /// Whether `len` more bytes to the unvalidated `to` stay within what it sent.
    fn spend_unvalidated(&mut self, to: SocketAddr, len: usize) -> bool {
        let Some((got, sent)) = self.unvalidated.get_mut(&to) else {
            return false;
        };
        if *sent + len as u64 > *got {
            return false;
        }
        *sent += len as u64;
        true
    }
}

/// Bytes a room's start state takes, packed and unpacked, as its Open declares them (the
/// unpacking stops at the declared size).
fn state_bytes(open: &OpenRoom) -> usize {
    open.raw_len as usize + open.packed_len as usize
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
