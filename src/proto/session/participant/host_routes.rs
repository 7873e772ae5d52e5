//! [`HostRoutes`]: how a hosted room's host reaches each joiner: through the server that
//! lists the room (each datagram wrapped in a `Room/Forward`), or on a [`DirectPath`] once
//! one is proven. The endpoint never sees the difference: a joiner is always the address
//! the server names it by, whichever way its datagrams came.
//!
//! Every `Room` datagram between the host and the server carries a tag made with the
//! room's secret (the server's `Opened` gave it: `Keys::for_room`): a `Present` saying
//! the host left, a `Forward` or an `Introduce` forged from either's address is dropped.

use std::collections::{HashMap, VecDeque};

use super::*;
use crate::session::direct::{DirectPath, PathEvent, PathKind, PathMode};
use crate::session::msg::{Msg, RoomMsg, ROOM_KEY_LEN};
use crate::wire::keys::Side;
use crate::wire::{Header, Kind};

/// How often the host tells the server it is still there (the room closes after
/// `serve::HOSTED_SILENCE` without a word).
pub const PRESENT_EVERY: Duration = Duration::from_secs(5);
/// Most joiners (and would-be joiners) the routes keep.
const MAX_PEERS: usize = 64;
/// A joiner not heard of for this long is forgotten (the endpoint dropped it long before).
const FORGET: Duration = Duration::from_secs(180);

#[derive(Debug)]
struct Route {
    path: DirectPath,
    /// The endpoint holds the start-state transfer to this joiner (its first direct
    /// attempt runs).
    holding: bool,
    heard: Instant,
    /// The slot this joiner plays, and its path as of when it last was in the game (a
    /// player who left keeps the path it had).
    seat: Option<(PeerId, PathKind)>,
    /// The server introduced this joiner (the host's own mapping goes to it).
    introduced: bool,
    /// The addresses the joiner's router forwards to it, as it told (`Path/Candidates`).
    advertised: Vec<SocketAddr>,
}

/// The host's routes to its joiners. See the module docs.
#[derive(Debug)]
pub struct HostRoutes {
    server: SocketAddr,
    mode: PathMode,
    rng: StdRng,
    /// By the joiner's address as the server names it.
    routes: HashMap<SocketAddr, Route>,
    /// Direct addresses (proven or tried) -> the joiner's address as the server names it.
    aliases: HashMap<SocketAddr, SocketAddr>,
    present_due: Instant,
    out: VecDeque<Transmit>,
    events: VecDeque<(SocketAddr, PathEvent)>,
    /// The host left: no more presence.
    closed: bool,
    /// The seats of forgotten joiners, as `Route::seat`.
    forgotten: Vec<(PeerId, PathKind)>,
    /// The outside address this host's router forwards to it (`portmap`), told to each
    /// joiner the server introduces.
    mapped: Option<SocketAddr>,
    /// The room's keys with the server.
    keys: Keys,
}

impl HostRoutes {
    pub fn new(
        now: Instant,
        server: SocketAddr,
        mode: PathMode,
        seed: u64,
        room_key: &[u8; ROOM_KEY_LEN],
    ) -> HostRoutes {
        HostRoutes {
            server,
            mode,
            rng: StdRng::seed_from_u64(seed),
            routes: HashMap::new(),
            aliases: HashMap::new(),
            present_due: now,
            out: VecDeque::new(),
            events: VecDeque::new(),
            closed: false,
            forgotten: Vec::new(),
            mapped: None,
            keys: Keys::for_room(room_key, Side::Joiner),
        }
    }

    /// A room message for the server, tagged with the room's keys.
    fn to_server(&self, msg: RoomMsg<'_>) -> Transmit {
        let mut bytes = Msg::Room(msg).encode(0);
        self.keys.seal(&mut bytes);
        Transmit::new(self.server, bytes)
    }

    /// This host's router forwards `addr` to it (or no longer does): joiners introduced
    /// already hear of it now, the others at their introduction.
    pub fn set_mapped(&mut self, addr: Option<SocketAddr>, endpoint: &mut Endpoint) {
        if self.mapped == addr {
            return;
        }
        self.mapped = addr;
        if let Some(addr) = addr {
            for route in self.routes.values_mut().filter(|r| r.introduced) {
                route.path.advertise(&[addr]);
            }
        }
        self.pump(endpoint);
    }

    /// The addresses each seated joiner's router forwards to it, as it told: where a host
    /// could be reached if the game moved to that player.
    pub fn advertised(&self) -> Vec<(PeerId, Vec<SocketAddr>)> {
        let mut out: Vec<(PeerId, Vec<SocketAddr>)> = self
            .routes
            .values()
            .filter_map(|r| Some((r.seat?.0, r.advertised.clone())))
            .filter(|(_, a)| !a.is_empty())
            .collect();
        out.sort_by_key(|(s, _)| *s);
        out
    }

    /// A datagram from `from`: the routes' own (a path probe, the server's introduction),
    /// or handed to the endpoint as from the joiner's address as the server names it,
    /// whichever way it came.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
        endpoint: &mut Endpoint,
    ) -> Handled<'static> {
        if from == self.server {
            // Only the room's server has the room's keys; an untagged `Room` datagram
            // from its address is someone else's.
            let kind = kind_of(datagram);
            let body = match kind {
                Some(Kind::Room) => match self.keys.open(datagram) {
                    Some(body) => body,
                    None => return Handled::Dropped(Dropped::Unauthentic),
                },
                _ => datagram,
            };
            return match Msg::decode(body) {
                Ok((_, Msg::Room(RoomMsg::Forward { peer, datagram }))) => {
                    let known = self.routes.contains_key(&peer);
                    let hello = Header::parse(datagram).is_ok_and(|(h, _)| h.kind == Kind::Hello);
                    if !known && (!hello || self.routes.len() >= MAX_PEERS) {
                        return Handled::Dropped(Dropped::unexpected(datagram));
                    }
                    let mode = self.mode;
                    let route = self.routes.entry(peer).or_insert_with(|| Route {
                        path: DirectPath::new(mode),
                        holding: false,
                        heard: now,
                        seat: None,
                        introduced: false,
                        advertised: Vec::new(),
                    });
                    route.heard = now;
                    if kind_of(datagram) == Some(Kind::Path) {
                        if let Some(addrs) = candidates(endpoint.open_from(peer, datagram)) {
                            tracing::debug!(%peer, ?addrs, "netplay: a joiner's router forwards a port to it");
                            route.advertised = addrs.clone();
                            route.path.handle_candidates(now, &addrs, self.rng.gen());
                            for a in addrs {
                                self.aliases.insert(a, peer);
                            }
                            self.pump(endpoint);
                            return Handled::Taken;
                        }
                    }
                    endpoint.handle_datagram(now, peer, datagram)
                }
                Ok((
                    _,
                    Msg::Room(RoomMsg::Introduce {
                        peer,
                        locals,
                        wait_ms,
                    }),
                )) => {
                    let Some(route) = self.routes.get_mut(&peer) else {
                        return Handled::Dropped(Dropped::unexpected(datagram));
                    };
                    tracing::debug!(%peer, wait_ms, "netplay: the server introduced a joiner; trying a direct path");
                    let rng = &mut self.rng;
                    for c in route.path.introduced(now, peer, &locals, wait_ms, rng) {
                        self.aliases.insert(c, peer);
                    }
                    route.introduced = true;
                    if let Some(mapped) = self.mapped {
                        route.path.advertise(&[mapped]);
                    }
                    self.pump(endpoint);
                    Handled::Taken
                }
                _ => Handled::Dropped(Dropped::unexpected(datagram)),
            };
        }
        let kind = Header::parse(datagram).ok().map(|(h, _)| h.kind);
        let peer = self.aliases.get(&from).copied();
        if kind == Some(Kind::Path) && self.handle_path(now, from, peer, datagram, endpoint) {
            return Handled::Taken;
        }
        match peer {
            Some(peer) => {
                let Some(route) = self.routes.get_mut(&peer) else {
                    return Handled::Dropped(Dropped::unexpected(datagram));
                };
                route.path.heard(now, from);
                route.heard = now;
                endpoint.handle_datagram(now, peer, datagram)
            }
            // Joiners of a hosted room come through the server; a stranger's Hello to
            // this address is not one.
            None if kind == Some(Kind::Hello) => Handled::Dropped(Dropped::unexpected(datagram)),
            None => endpoint.handle_datagram(now, from, datagram),
        }
    }

    /// A `Path` datagram straight from `from`: a punch or its echo is the routes' own
    /// (`true`); anything else goes on to the endpoint.
    fn handle_path(
        &mut self,
        now: Instant,
        from: SocketAddr,
        peer: Option<SocketAddr>,
        datagram: &[u8],
        endpoint: &mut Endpoint,
    ) -> bool {
        // Whose tag: the joiner this address is known for, else any joiner not direct (a
        // router that maps per destination shows a new port), within the session's budget
        // for unknown addresses.
        let opened = match peer {
            Some(p) => endpoint.open_from(p, datagram).map(|b| (p, b)),
            None => {
                let trying: Vec<SocketAddr> = self
                    .routes
                    .iter()
                    .filter(|(_, r)| !r.path.settled() || r.path.direct().is_none())
                    .map(|(a, _)| *a)
                    .collect();
                endpoint.open_from_any(now, &trying, datagram)
            }
        };
        let Some((peer, body)) = opened else {
            return false;
        };
        let Ok((_, Msg::Path(msg))) = Msg::decode(body) else {
            return false;
        };
        let Some(route) = self.routes.get_mut(&peer) else {
            return false;
        };
        if !route.path.handle_msg(now, from, &msg, &mut self.rng) {
            return false;
        }
        route.heard = now;
        if route.path.knows(from) {
            self.aliases.insert(from, peer);
        }
        self.pump(endpoint);
        true
    }

    /// Where a datagram of the endpoint goes: direct, or through the server.
    pub fn route(&mut self, now: Instant, t: Transmit) {
        let Some(route) = self.routes.get_mut(&t.to) else {
            self.out.push_back(t);
            return;
        };
        if let Some(addr) = route.path.route(now) {
            self.out.push_back(t.with_to(addr));
            return;
        }
        let forward = self.to_server(RoomMsg::Forward {
            peer: t.to,
            datagram: &t.bytes,
        });
        self.out.push_back(forward);
    }

    /// The host leaves (`endpoint` was shut down): the goodbyes it queued go first, then
    /// the server is told the room is over (a `Present` with nobody in it), since it relays
    /// nothing of a room that is over.
    pub fn close(&mut self, now: Instant, endpoint: &mut Endpoint) {
        while let Some(t) = endpoint.poll_transmit(now) {
            self.route(now, t);
        }
        let gone = RoomMsg::Present {
            players: 0,
            direct: 0,
            relayed: 0,
            playing: false,
        };
        self.closed = true;
        let gone = self.to_server(gone);
        self.out.push_back(gone);
    }

    /// Runs the paths' schedules, the presence message, and forgets joiners long gone.
    pub fn handle_timeout(&mut self, now: Instant, endpoint: &mut Endpoint) {
        for route in self.routes.values_mut() {
            route.path.handle_timeout(now, self.rng.gen());
        }
        let forgotten = &mut self.forgotten;
        self.routes.retain(|peer, r| {
            let keep = now < r.heard + FORGET;
            if !keep && r.holding {
                endpoint.hold_transfer(*peer, false);
            }
            if let (false, Some((slot, kind))) = (keep, r.seat) {
                forgotten.retain(|(s, _)| *s != slot);
                forgotten.push((slot, kind));
            }
            keep
        });
        let routes = &self.routes;
        self.aliases.retain(|_, p| routes.contains_key(p));
        if now >= self.present_due && !self.closed {
            self.present_due = now + PRESENT_EVERY;
            let players = endpoint.players();
            let (mut direct, mut relayed) = (0u8, 0u8);
            for p in players.iter().filter_map(|p| p.addr) {
                match self.kind(p) {
                    Some(PathKind::Direct) => direct += 1,
                    _ => relayed += 1,
                }
            }
            let present = RoomMsg::Present {
                players: players.len() as u8,
                direct,
                relayed,
                playing: endpoint.game_started(),
            };
            let present = self.to_server(present);
            self.out.push_back(present);
        }
        self.pump(endpoint);
    }

    /// Seals the paths' messages, moves their events out, and has the endpoint hold the
    /// start-state transfer to each joiner whose first direct attempt runs (released when
    /// it ends, so that the state goes the way the attempt found).
    fn pump(&mut self, endpoint: &mut Endpoint) {
        for p in endpoint.players() {
            let (Some(addr), Some(seat)) = (p.addr, p.slot.player()) else {
                continue;
            };
            // A slot is one joiner's: whoever had it before is gone.
            for (a, r) in &mut self.routes {
                if *a != addr && r.seat.is_some_and(|(s, _)| s == seat) {
                    r.seat = None;
                }
            }
            self.forgotten.retain(|(s, _)| *s != seat);
            if let Some(r) = self.routes.get_mut(&addr) {
                r.seat = Some((seat, r.path.kind()));
            }
        }
        let id = endpoint.session_id();
        let mut relayed = Vec::new();
        for (peer, route) in &mut self.routes {
            let seal = |bytes: &mut Vec<u8>| endpoint.seal_for(*peer, bytes);
            route.path.seal_sends(id, seal, &mut self.out);
            route.path.seal_relayed(id, seal, &mut relayed);
            for datagram in relayed.drain(..) {
                let forward = RoomMsg::Forward {
                    peer: *peer,
                    datagram: &datagram,
                };
                let mut bytes = Msg::Room(forward).encode(0);
                self.keys.seal(&mut bytes);
                self.out.push_back(Transmit::new(self.server, bytes));
            }
            while let Some(ev) = route.path.poll_event() {
                self.events.push_back((*peer, ev));
            }
            let hold = !route.path.settled();
            if hold != route.holding {
                route.holding = hold;
                endpoint.hold_transfer(*peer, hold);
            }
        }
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        self.routes
            .values()
            .filter_map(|r| r.path.poll_timeout())
            .chain([self.present_due])
            .min()
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    /// A path that went direct or back to the relay: the joiner (as the server names it).
    pub fn poll_event(&mut self) -> Option<(SocketAddr, PathEvent)> {
        self.events.pop_front()
    }

    /// The quickest first direct path of any joiner, from its introduction.
    pub fn first_direct(&self) -> Option<Duration> {
        self.routes
            .values()
            .filter_map(|r| r.path.first_direct())
            .min()
    }

    /// How each joiner that played is reached, by slot: a player in the game as now, one
    /// who left as when it was last in.
    pub fn paths(&self, endpoint: &Endpoint) -> Vec<(PeerId, PathKind)> {
        let mut out: Vec<(PeerId, PathKind)> = endpoint
            .players()
            .into_iter()
            .filter_map(|p| Some((p.slot.player()?, self.kind(p.addr?)?)))
            .collect();
        let left = self.routes.values().filter_map(|r| r.seat);
        for (slot, kind) in left.chain(self.forgotten.iter().copied()) {
            if !out.iter().any(|(s, _)| *s == slot) {
                out.push((slot, kind));
            }
        }
        out.sort_by_key(|(s, _)| *s);
        out
    }

    /// How the joiner at `addr` (as the server names it) is reached; `None`: not through
    /// this room's server.
    pub fn kind(&self, addr: SocketAddr) -> Option<PathKind> {
        self.routes.get(&addr).map(|r| r.path.kind())
    }
}

fn kind_of(datagram: &[u8]) -> Option<Kind> {
    Header::parse(datagram).ok().map(|(h, _)| h.kind)
}

/// The addresses of a `Path/Candidates` body, if that is what it is.
pub(super) fn candidates(body: Option<&[u8]>) -> Option<Vec<SocketAddr>> {
    match Msg::decode(body?) {
        Ok((_, Msg::Path(crate::session::msg::PathMsg::Candidates(list)))) => {
            Some(list.iter().flatten().copied().collect())
        }
        _ => None,
    }
}
