//! Rooms whose creator hosts the game itself (`host --server`, `--path auto|direct`): the
//! server lists them, relays whole datagrams between the host and each joiner
//! (`Room/Forward`), and introduces the two once the host welcomed the joiner
//! (`Room/Introduce`), so that they can try a direct path (`session::direct`). Once one
//! works, only the players' `Present`s reach the server. It never reads a relayed
//! datagram beyond its header, and holds no state of the game.
//!
//! - A joiner is relayed once its Hello proved its address (a cookie) and named the room;
//!   every datagram from it goes to the host, and the host's `Forward`s go only to the
//!   room's joiners: the server is nobody else's relay.
//! - A datagram naming the room's session from an address in no room (a joiner whose
//!   router changed its mapping) makes that address a member *on probation*: what it sends
//!   goes to the host, but it is sent a `Retry` with a cookie and, until it echoes that,
//!   at most what it sent (`validation`), whatever the host forwards. A session id is no
//!   proof of address: anyone on the path of one datagram of the room may know it.
//! - Members count per IP address (IPv6: per /64): at most [`MEMBERS_PER_PREFIX`], and a
//!   member on probation is forgotten after [`PROBATION`] without its echo, so that one
//!   machine's ports cannot fill a room's slots.
//! - What members send through the relay is rate-limited per member ([`MEMBER_RATE`]) and
//!   per IP address or /64 ([`PREFIX_RATE`]), in datagrams and bytes: a joiner's game sends
//!   a few dozen small datagrams a second, and a flood of tiny ones would otherwise make
//!   the server send the host a tagged `Forward` for each.
//! - The introduction's wait is half the difference of the two round trips the server
//!   measured (from its Retry to the echoed cookie), so that both sides' punches leave at
//!   about the same time.
//! - A room closes when its host says it left (a `Present` with no players), or said
//!   nothing for [`HOSTED_SILENCE`]; a joiner silent for [`MEMBER_SILENCE`] is forgotten.

use std::collections::HashSet;

use rand::Rng;

use super::*;
use crate::session::msg::ROOM_KEY_LEN;
use crate::wire::keys::{Keys, Side};

/// A hosted room whose host is silent this long closes (its players' reconnects end too).
pub const HOSTED_SILENCE: Duration = Duration::from_secs(60);
/// A joiner of a hosted room silent this long is forgotten (one on a direct path says it is
/// there every 10 s).
pub const MEMBER_SILENCE: Duration = Duration::from_secs(120);
/// Round trip assumed for an address whose Retry round was not seen.
const DEFAULT_RTT: Duration = Duration::from_millis(100);
/// Joiners (and would-be joiners) a hosted room relays at most, beyond its seats.
const SPARE_MEMBERS: usize = 8;
/// Members of one hosted room from one IPv4 address or IPv6 /64 (players behind one router
/// each count).
pub const MEMBERS_PER_PREFIX: usize = 6;
/// A member on probation that has not echoed its cookie this long is forgotten.
pub const PROBATION: Duration = Duration::from_secs(10);
/// How long a room whose host said it left still relays the host's last datagrams (its
/// goodbyes may arrive after the word that it left).
const LEAVING_GRACE: Duration = Duration::from_millis(500);
/// What one member may send through the relay, sustained; bursts of `RELAY_BURST` of it
/// pass too (a start-state's acknowledgements, a reconnect).
pub const MEMBER_RATE: RelayRate = RelayRate {
    datagrams: 200.0,
    bytes: 48.0 * 1024.0,
};
/// What all the members from one IPv4 address or IPv6 /64 may send together (players
/// behind one router share it).
pub const PREFIX_RATE: RelayRate = RelayRate {
    datagrams: 500.0,
    bytes: 128.0 * 1024.0,
};
/// Seconds of a rate a bucket holds.
const RELAY_BURST: f64 = 2.0;

/// Datagrams and bytes a second.
#[derive(Clone, Copy, Debug)]
pub struct RelayRate {
    pub datagrams: f64,
    pub bytes: f64,
}

/// A token bucket of datagrams and bytes (both must allow a datagram).
#[derive(Clone, Copy, Debug)]
pub(super) struct RelayBudget {
    datagrams: f64,
    bytes: f64,
    at: Instant,
}

impl RelayBudget {
    fn full(now: Instant, rate: RelayRate) -> RelayBudget {
        RelayBudget {
            datagrams: rate.datagrams * RELAY_BURST,
            bytes: rate.bytes * RELAY_BURST,
            at: now,
        }
    }

    fn refill(&mut self, now: Instant, rate: RelayRate) {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.datagrams = (self.datagrams + dt * rate.datagrams).min(rate.datagrams * RELAY_BURST);
        self.bytes = (self.bytes + dt * rate.bytes).min(rate.bytes * RELAY_BURST);
        self.at = self.at.max(now);
    }

    fn allows(&self, len: usize) -> bool {
        self.datagrams >= 1.0 && self.bytes >= len as f64
    }

    fn spend(&mut self, len: usize) {
        self.datagrams -= 1.0;
        self.bytes -= len as f64;
    }
}

/// A member on probation is sent its cookie again at most this often.
const RECHALLENGE: Duration = Duration::from_secs(1);

/// A joiner of a hosted room, by address.
#[derive(Clone, Copy, Debug)]
pub(super) struct Member {
    /// When last heard.
    heard: Instant,
    /// Its round trip to the server (its Retry's echo), for the introduction's timing.
    rtt: Duration,
    /// It echoed a cookie made for its address; until then it is on probation.
    proven: bool,
    /// When it joined (or was last challenged, while on probation).
    since: Instant,
    challenged: Instant,
    /// What it may still send through the relay.
    budget: RelayBudget,
}

pub(super) struct HostedRoom {
    pub(super) name: String,
    pub(super) host: SocketAddr,
    pub(super) open: OpenRoom,
    pub(super) opened: Instant,
    pub(super) session: u32,
    /// The secret the server and the host tag their Room datagrams with, and its keys.
    key: [u8; ROOM_KEY_LEN],
    keys: Keys,
    /// When the host last said anything.
    heard: Instant,
    host_rtt: Duration,
    /// Joiners by address.
    members: HashMap<SocketAddr, Member>,
    /// What the members of each IPv4 address or IPv6 /64 may still send through the relay.
    prefix_budgets: HashMap<IpAddr, RelayBudget>,
    introduced: HashSet<SocketAddr>,
    /// The host's last `Present`.
    players: u8,
    /// When its host said it left: it closes `LEAVING_GRACE` after.
    left: Option<Instant>,
    pub(super) direct: u8,
    pub(super) relayed: u8,
    playing: bool,
    /// A player asked that no replay be kept (`--no-share`).
    pub(super) no_share: bool,
    /// Its recording was uploaded whole.
    pub(super) shared: bool,
}

/// A hosted room that ended lately: who may upload its recording (`serve::archive`).
#[derive(Clone, Debug)]
pub(super) struct Ended {
    pub(super) name: String,
    pub(super) open: OpenRoom,
    pub(super) host: SocketAddr,
    /// The IP addresses of its joiners.
    pub(super) members: Vec<IpAddr>,
    pub(super) no_share: bool,
    pub(super) shared: bool,
    pub(super) at: Instant,
}

/// Ended hosted rooms remembered at most.
const MAX_ENDED: usize = 4096;

impl HostedRoom {
    /// Whether member `from` may send `len` bytes through the relay now (its own budget
    /// and its address's), taking them if so.
    fn relay_allows(&mut self, now: Instant, from: SocketAddr, len: usize) -> bool {
        let Some(m) = self.members.get_mut(&from) else {
            return false;
        };
        let p = self
            .prefix_budgets
            .entry(prefix(from.ip()))
            .or_insert_with(|| RelayBudget::full(now, PREFIX_RATE));
        m.budget.refill(now, MEMBER_RATE);
        p.refill(now, PREFIX_RATE);
        let ok = m.budget.allows(len) && p.allows(len);
        if ok {
            m.budget.spend(len);
            p.spend(len);
        }
        ok
    }

    /// Its joiners' IP addresses (those that proved them).
    pub(super) fn member_ips(&self) -> Vec<IpAddr> {
        self.members
            .iter()
            .filter(|(_, m)| m.proven)
            .map(|(a, _)| a.ip())
            .collect()
    }

    pub(super) fn info(&self, now: Instant) -> RoomInfo {
        RoomInfo {
            name: self.name.clone(),
            content: self.open.content_name.clone(),
            core: self.open.core_name.clone(),
            players: self.players.clamp(1, self.open.players),
            seats: self.open.players,
            password: self.open.password,
            playing: self.playing,
            age_secs: now.saturating_duration_since(self.opened).as_secs() as u32,
            spectators: 0,
            mode: self.open.mode.unwrap_or_default(),
            region: String::new(),
            server: String::new(),
        }
    }
}

/// The local addresses a creator named that a joiner may punch: only private, link-local
/// or loopback ones (two players behind one router), never a public address a creator
/// could aim every joiner's punches at. Told only at the introduction, after the host
/// welcomed the joiner (its password checked).
pub(crate) fn private_only(locals: &[SocketAddr]) -> Vec<SocketAddr> {
    let private = |ip: IpAddr| match ip {
        IpAddr::V4(v4) => v4.is_private() || v4.is_link_local() || v4.is_loopback(),
        IpAddr::V6(v6) => {
            let s = v6.segments()[0];
            v6.is_loopback() || (s & 0xfe00) == 0xfc00 || (s & 0xffc0) == 0xfe80
        }
    };
    locals.iter().copied().filter(|a| private(a.ip())).collect()
}

impl Rooms {
    /// The room's name is this server's: a hosted room opens at once.
    pub(super) fn open_hosted(
        &mut self,
        now: Instant,
        from: SocketAddr,
        name: String,
        open: OpenRoom,
    ) {
        let session = self.fresh_session();
        if let Some((_, count)) = self.opens.get_mut(&prefix(from.ip())) {
            *count += 1;
        }
        let host_rtt = self.rtts.get(&from).copied().unwrap_or(DEFAULT_RTT);
        self.events.push_back(ServeEvent::Opened {
            room: name.clone(),
            creator: from,
            seats: open.players,
            core: open.core_name.clone(),
            content: open.content_name.clone(),
            password: open.password,
        });
        self.stats.rooms_opened += 1;
        self.by_session.insert(session, name.clone());
        self.hosted_by_addr.insert(from, name.clone());
        // The room's secret: only the host's proven address hears it (`Keys::for_room`).
        let key: [u8; ROOM_KEY_LEN] = self.rng.gen();
        let opened = Msg::Room(RoomMsg::Opened {
            room: name.clone(),
            key,
        })
        .encode(session);
        let open_no_share = open.no_share;
        self.hosted.insert(
            name.clone(),
            HostedRoom {
                name,
                host: from,
                open,
                opened: now,
                session,
                key,
                keys: Keys::for_room(&key, Side::Host),
                heard: now,
                host_rtt,
                members: HashMap::new(),
                prefix_budgets: HashMap::new(),
                introduced: HashSet::new(),
                players: 1,
                left: None,
                direct: 0,
                relayed: 0,
                playing: false,
                no_share: open_no_share,
                shared: false,
            },
        );
        self.send(from, opened);
    }

    /// A joiner's Hello (`proven`: its address echoed a cookie) or a joiner's datagram from
    /// a new address naming the room's session (on probation, and challenged): relayed to
    /// the host from now on.
    pub(super) fn join_hosted(
        &mut self,
        now: Instant,
        from: SocketAddr,
        name: &str,
        datagram: &[u8],
        proven: bool,
    ) {
        let rtt = self.rtts.get(&from).copied().unwrap_or(DEFAULT_RTT);
        let max_members = self.cfg.max_spectators as usize + MAX_PLAYERS + SPARE_MEMBERS;
        let Some(room) = self.hosted.get_mut(name).filter(|r| r.left.is_none()) else {
            return;
        };
        if !room.members.contains_key(&from) {
            let mine = prefix(from.ip());
            let same = room
                .members
                .keys()
                .filter(|a| prefix(a.ip()) == mine)
                .count();
            let busy = if room.members.len() >= max_members {
                Some("too many joiners at once")
            } else if same >= MEMBERS_PER_PREFIX {
                Some("too many joiners from your address at once")
            } else {
                None
            };
            if let Some(why) = busy {
                // Told only to an address that proved it receives: a refusal is no
                // reflector either.
                self.stats.rate_limited += 1;
                if proven {
                    let reason = format!("room {name} is busy: {why}; try again soon");
                    self.refuse(from, reason);
                }
                return;
            }
        }
        let session = room.session;
        let member = room.members.entry(from).or_insert(Member {
            heard: now,
            rtt,
            proven,
            since: now,
            challenged: now,
            budget: RelayBudget::full(now, MEMBER_RATE),
        });
        member.heard = now;
        if proven && !member.proven {
            (member.proven, member.rtt) = (true, rtt);
        }
        let probation = !member.proven;
        self.hosted_by_addr.insert(from, name.to_string());
        if probation {
            self.challenge_member(now, from, session);
        }
        self.relay_to_host(now, name, from, datagram);
    }

    /// A cookie for a member on probation, under the room's session id: its joiner echoes
    /// the `Retry` as it came (`session::participant::JoinRoute`). Within what the address
    /// sent, like everything to it until then.
    fn challenge_member(&mut self, now: Instant, to: SocketAddr, session: u32) {
        self.stats.retries += 1;
        self.retried.insert(to, now);
        let cookie = self.cookies.make(now, to);
        self.send(to, Msg::Retry(cookie).encode(session));
    }

    /// Whether `addr` is a hosted room's host or a member that proved its address.
    pub(super) fn hosted_proven(&self, addr: SocketAddr) -> bool {
        let Some(room) = self
            .hosted_by_addr
            .get(&addr)
            .and_then(|n| self.hosted.get(n))
        else {
            return false;
        };
        room.host == addr || room.members.get(&addr).is_some_and(|m| m.proven)
    }

    /// A datagram from a hosted room's host or one of its joiners.
    pub(super) fn hosted_datagram(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        let Some(name) = self.hosted_by_addr.get(&from).cloned() else {
            return;
        };
        let Some(room) = self.hosted.get_mut(&name) else {
            self.hosted_by_addr.remove(&from);
            return;
        };
        let kind = Header::parse(datagram).ok().map(|(h, _)| h.kind);
        if from != room.host {
            let Some(m) = room.members.get_mut(&from) else {
                self.hosted_by_addr.remove(&from);
                return;
            };
            m.heard = now;
            if kind == Some(Kind::Retry) {
                // A member on probation echoes its cookie: its address is proven.
                if let Ok((_, Msg::Retry(cookie))) = Msg::decode(datagram) {
                    if !m.proven && self.cookies.check(now, from, &cookie) {
                        m.proven = true;
                        if let Some(sent) = self.retried.remove(&from) {
                            m.rtt = now.saturating_duration_since(sent);
                        }
                    }
                }
                return;
            }
            if !m.proven && now >= m.challenged + RECHALLENGE {
                m.challenged = now;
                let session = room.session;
                self.challenge_member(now, from, session);
            }
            if kind == Some(Kind::Room) {
                // A joiner on a direct path says it is there; nothing else of the kind is
                // for the host.
                return;
            }
            return self.relay_to_host(now, &name, from, datagram);
        }
        if kind != Some(Kind::Room) {
            self.stats.garbage += 1;
            return;
        }
        // Only the host has the room's keys: nothing is taken from its address alone.
        let Some(body) = room.keys.open(datagram) else {
            if matches!(Msg::decode(datagram), Ok((_, Msg::Room(RoomMsg::Open(_))))) {
                // Its Open again, untagged: the Opened (and the key) was lost.
                let opened = Msg::Room(RoomMsg::Opened {
                    room: name.clone(),
                    key: room.key,
                })
                .encode(room.session);
                self.send(from, opened);
            } else {
                self.stats.dropped_auth += 1;
            }
            return;
        };
        room.heard = now;
        match Msg::decode(body) {
            Ok((_, Msg::Room(RoomMsg::Forward { peer, datagram }))) => {
                if !room.members.contains_key(&peer) {
                    self.stats.wrong_room += 1;
                    return;
                }
                let welcome = Header::parse(datagram).is_ok_and(|(h, _)| h.kind == Kind::Welcome);
                if welcome && room.introduced.insert(peer) {
                    self.introduce(&name, peer);
                }
                self.stats.bytes_relayed += datagram.len() as u64;
                self.send(peer, datagram.to_vec());
            }
            Ok((
                _,
                Msg::Room(RoomMsg::Present {
                    players,
                    direct,
                    relayed,
                    playing,
                }),
            )) => {
                if players == 0 {
                    // Its host left (it counts itself while it is there). Its goodbyes,
                    // sent just before, may arrive after this: they are relayed for
                    // `LEAVING_GRACE` more, and the room closes at the next sweep after.
                    room.left.get_or_insert(now);
                    return;
                }
                (room.players, room.direct, room.relayed, room.playing) =
                    (players, direct, relayed, playing);
            }
            // Its Open again: the Opened was lost.
            Ok((_, Msg::Room(RoomMsg::Open(_)))) => {
                let opened = Msg::Room(RoomMsg::Opened {
                    room: name.clone(),
                    key: room.key,
                })
                .encode(room.session);
                self.send(from, opened);
            }
            _ => self.stats.garbage += 1,
        }
    }

    fn relay_to_host(&mut self, now: Instant, name: &str, from: SocketAddr, datagram: &[u8]) {
        let Some(room) = self.hosted.get_mut(name) else {
            return;
        };
        if !room.relay_allows(now, from, datagram.len()) {
            self.stats.relay_limited += 1;
            return;
        }
        let host = room.host;
        self.stats.bytes_relayed += datagram.len() as u64;
        let mut bytes = Msg::Room(RoomMsg::Forward {
            peer: from,
            datagram,
        })
        .encode(0);
        room.keys.seal(&mut bytes);
        self.send(host, bytes);
    }

    /// Tells the host and a joiner it welcomed about each other, with waits that make
    /// their first punches cross.
    fn introduce(&mut self, name: &str, peer: SocketAddr) {
        let Some(room) = self.hosted.get(name) else {
            return;
        };
        let peer_rtt = room.members.get(&peer).map_or(DEFAULT_RTT, |m| m.rtt);
        let longest = peer_rtt.max(room.host_rtt);
        let wait = |rtt: Duration| ((longest - rtt) / 2).as_millis().min(2000) as u16;
        let to_host = RoomMsg::Introduce {
            peer,
            locals: Vec::new(),
            wait_ms: wait(room.host_rtt),
        };
        let to_peer = RoomMsg::Introduce {
            peer: room.host,
            locals: private_only(&room.open.locals),
            wait_ms: wait(peer_rtt),
        };
        let host = room.host;
        let mut to_host = Msg::Room(to_host).encode(0);
        room.keys.seal(&mut to_host);
        self.send(host, to_host);
        self.send(peer, Msg::Room(to_peer).encode(0));
    }

    /// Closes hosted rooms whose host went silent and forgets silent joiners.
    pub(super) fn sweep_hosted(&mut self, now: Instant) {
        let silent: Vec<(String, &str)> = self
            .hosted
            .values()
            .filter_map(|r| match r.left {
                Some(t) if now >= t + LEAVING_GRACE => Some((r.name.clone(), "its host left")),
                _ if now >= r.heard + HOSTED_SILENCE => {
                    Some((r.name.clone(), "its host went silent"))
                }
                _ => None,
            })
            .collect();
        for (name, why) in silent {
            self.close_hosted(now, &name, why);
        }
        let mut gone = Vec::new();
        for room in self.hosted.values_mut() {
            room.members.retain(|addr, m| {
                let keep =
                    now < m.heard + MEMBER_SILENCE && (m.proven || now < m.since + PROBATION);
                if !keep {
                    gone.push(*addr);
                }
                keep
            });
            let members = &room.members;
            room.prefix_budgets
                .retain(|p, _| members.keys().any(|a| prefix(a.ip()) == *p));
        }
        for addr in gone {
            self.hosted_by_addr.remove(&addr);
        }
    }

    pub(super) fn close_hosted(&mut self, now: Instant, name: &str, why: &str) {
        let Some(room) = self.hosted.remove(name) else {
            return;
        };
        if self.cfg.archive {
            if self.ended.len() >= MAX_ENDED {
                let oldest = self.ended.iter().min_by_key(|(_, e)| e.at).map(|(s, _)| *s);
                if let Some(s) = oldest {
                    self.ended.remove(&s);
                }
            }
            self.ended.insert(
                room.session,
                Ended {
                    name: room.name.clone(),
                    open: room.open.clone(),
                    host: room.host,
                    members: room.member_ips(),
                    no_share: room.no_share,
                    shared: room.shared,
                    at: now,
                },
            );
        }
        for addr in room.members.keys().chain([&room.host]) {
            if self.hosted_by_addr.get(addr).is_some_and(|r| r == name) {
                self.hosted_by_addr.remove(addr);
            }
        }
        self.by_session.remove(&room.session);
        if self.published.remove(name).is_some() {
            self.directory_out
                .push_back(DirOp::Remove(name.to_string()));
        }
        self.stats.rooms_closed += 1;
        self.events.push_back(ServeEvent::Closed {
            room: name.to_string(),
            why: why.to_string(),
        });
    }

    /// Players of hosted rooms on a direct path and relayed, as their hosts last said.
    pub fn hosted_paths(&self) -> (usize, usize) {
        self.hosted.values().fold((0, 0), |(d, r), room| {
            (d + usize::from(room.direct), r + usize::from(room.relayed))
        })
    }
}
