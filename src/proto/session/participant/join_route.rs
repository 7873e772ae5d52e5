//! [`JoinRoute`]: a joiner's way to a hosted room's host: through the server it joined by
//! (the session talks to the server's address, which relays), or on a [`DirectPath`] once
//! the server introduced the two and a path is proven. The session never sees the
//! difference: what comes straight from the host is handed on as if from the server.

use super::*;
use crate::session::direct::{DirectPath, PathEvent, PathKind, PathMode};
use crate::session::msg::{Msg, RoomMsg};
use crate::wire::keys::Keys;
use crate::wire::{Header, Kind};

/// How often a joiner on a direct path tells the server it is still there (it keeps the
/// home router's mapping to the server for the relay to fall back on).
pub const PRESENT_EVERY: Duration = Duration::from_secs(10);

/// A joiner's route to its host. See the module docs.
#[derive(Debug)]
pub struct JoinRoute {
    server: SocketAddr,
    path: DirectPath,
    rng: StdRng,
    present_due: Option<Instant>,
    out: VecDeque<Transmit>,
    /// The server introduced the host: the room is hosted by a player.
    introduced: bool,
    /// The outside address this joiner's router forwards to it (`portmap`), told to the
    /// host once it is introduced.
    mapped: Option<SocketAddr>,
}

impl JoinRoute {
    pub fn new(server: SocketAddr, mode: PathMode, seed: u64) -> JoinRoute {
        JoinRoute {
            server,
            path: DirectPath::new(mode),
            rng: StdRng::seed_from_u64(seed),
            present_due: None,
            out: VecDeque::new(),
            introduced: false,
            mapped: None,
        }
    }

    /// This joiner's router forwards `addr` to it (or no longer does): the host hears of
    /// it over the relay, now if introduced, else at the introduction.
    pub fn set_mapped(&mut self, addr: Option<SocketAddr>, keys: Option<&Keys>, session: u32) {
        if self.mapped == addr {
            return;
        }
        self.mapped = addr;
        if let (true, Some(addr)) = (self.introduced, addr) {
            self.path.advertise(&[addr]);
            self.pump(keys, session);
        }
    }

    /// A datagram from `from`: returns the address the session hears it from (the server's,
    /// for what came straight from the host), or `None` if it was the route's own.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
        keys: Option<&Keys>,
        session: u32,
    ) -> Option<SocketAddr> {
        let kind = Header::parse(datagram).ok().map(|(h, _)| h.kind);
        if from == self.server {
            if kind == Some(Kind::Retry) && keys.is_some() {
                // Welcomed already: the server challenges this address (its router gave it
                // a new one) before it relays more to it than it sent. The echo proves it.
                self.out
                    .push_back(Transmit::new(self.server, datagram.to_vec()));
                return None;
            }
            if kind == Some(Kind::Room) {
                if let Ok((
                    _,
                    Msg::Room(RoomMsg::Introduce {
                        peer,
                        locals,
                        wait_ms,
                    }),
                )) = Msg::decode(datagram)
                {
                    self.introduced = true;
                    tracing::debug!(host = %peer, wait_ms, "netplay: the server introduced the host; trying a direct path");
                    self.path
                        .introduced(now, peer, &locals, wait_ms, &mut self.rng);
                    if let Some(mapped) = self.mapped {
                        self.path.advertise(&[mapped]);
                    }
                    self.pump(keys, session);
                    return None;
                }
            }
            if kind == Some(Kind::Path) {
                let body = keys.and_then(|k| k.open(datagram));
                if let Some(addrs) = super::host_routes::candidates(body) {
                    tracing::debug!(?addrs, "netplay: the host's router forwards a port to it");
                    self.path.handle_candidates(now, &addrs, self.rng.gen());
                    self.pump(keys, session);
                    return None;
                }
            }
            return Some(from);
        }
        // Straight from somewhere else: only what carries the host's tag counts.
        let keys = keys?;
        let body = keys.open(datagram)?;
        if kind == Some(Kind::Path) {
            if let Ok((_, Msg::Path(msg))) = Msg::decode(body) {
                if self.path.handle_msg(now, from, &msg, &mut self.rng) {
                    self.pump(Some(keys), session);
                    return None;
                }
            }
        }
        if !self.path.knows(from) {
            // The host moved on its own (not a path of a room): the session's path check.
            return Some(from);
        }
        self.path.heard(now, from);
        Some(self.server)
    }

    /// Where a datagram of the session goes: to the host directly if the path is direct
    /// (the server's own messages still go to the server).
    pub fn route(&mut self, now: Instant, t: Transmit) -> Transmit {
        let to_host =
            t.to == self.server && Header::parse(&t.bytes).is_ok_and(|(h, _)| h.kind != Kind::Room);
        if to_host {
            if let Some(addr) = self.path.route(now) {
                return t.with_to(addr);
            }
        }
        t
    }

    /// Runs the path's schedule and, while it is direct, the presence message.
    pub fn handle_timeout(&mut self, now: Instant, keys: Option<&Keys>, session: u32) {
        self.path.handle_timeout(now, self.rng.gen());
        if self.path.direct().is_some() {
            let due = *self.present_due.get_or_insert(now + PRESENT_EVERY);
            if now >= due {
                self.present_due = Some(now + PRESENT_EVERY);
                let present = RoomMsg::Present {
                    players: 0,
                    direct: 0,
                    relayed: 0,
                    playing: false,
                };
                self.out
                    .push_back(Transmit::new(self.server, Msg::Room(present).encode(0)));
            }
        } else {
            self.present_due = None;
        }
        self.pump(keys, session);
    }

    fn pump(&mut self, keys: Option<&Keys>, session: u32) {
        let seal = |bytes: &mut Vec<u8>| keys.map(|k| k.seal(bytes)).is_some();
        self.path.seal_sends(session, seal, &mut self.out);
        let mut relayed = Vec::new();
        let seal = |bytes: &mut Vec<u8>| keys.map(|k| k.seal(bytes)).is_some();
        self.path.seal_relayed(session, seal, &mut relayed);
        for bytes in relayed {
            self.out.push_back(Transmit::new(self.server, bytes));
        }
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        [self.path.poll_timeout(), self.present_due]
            .into_iter()
            .flatten()
            .min()
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<PathEvent> {
        self.path.poll_event()
    }

    /// How long the first direct path took from the introduction, if one was proven.
    pub fn first_direct(&self) -> Option<Duration> {
        self.path.first_direct()
    }

    /// How this joiner's datagrams travel; `None` until the server introduced the host
    /// (a room on the server itself never does).
    pub fn kind(&self) -> Option<PathKind> {
        self.introduced.then(|| self.path.kind())
    }
}
