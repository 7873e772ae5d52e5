//! [`JoinRoute`]: a joiner's way to a hosted room's host: through the server it joined by
//! (the session talks to the server's address, which relays), or on a [`DirectPath`] once
//! the server introduced the two and a path is proven. The session never sees the
//! difference: what comes straight from the host is handed on as if from the server.

use super::*;
use crate::session::direct::{DirectPath, PathEvent, PathKind, PathMode};
use crate::session::msg::{Msg, PathMsg, RoomMsg, PATH_TOKEN_LEN};
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
    out: VecDeque<(Transmit, Option<u8>)>,
    /// The server introduced the host: the room is hosted by a player.
    introduced: bool,
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
        }
    }

    fn token(&mut self) -> [u8; PATH_TOKEN_LEN] {
        self.rng.gen()
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
                    let mut candidates = vec![peer];
                    candidates.extend(locals);
                    tracing::debug!(host = %peer, wait_ms, "netplay: the server introduced the host; trying a direct path");
                    let token = self.token();
                    let wait = Duration::from_millis(wait_ms.into());
                    self.path.introduce(now, &candidates, wait, token);
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
            let token = self.token();
            match Msg::decode(body) {
                Ok((_, Msg::Path(PathMsg::Punch(echo)))) => {
                    self.path.handle_punch(now, from, echo, token);
                    self.pump(Some(keys), session);
                    return None;
                }
                Ok((_, Msg::Path(PathMsg::PunchBack(t)))) => {
                    self.path.handle_punch_back(now, from, t);
                    self.pump(Some(keys), session);
                    return None;
                }
                _ => {}
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
        let token = self.token();
        self.path.handle_timeout(now, token);
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
                self.out.push_back((
                    Transmit {
                        to: self.server,
                        bytes: Msg::Room(present).encode(0),
                        ttl: None,
                    },
                    None,
                ));
            }
        } else {
            self.present_due = None;
        }
        self.pump(keys, session);
    }

    fn pump(&mut self, keys: Option<&Keys>, session: u32) {
        while let Some((to, msg, ttl)) = self.path.poll_send() {
            let Some(keys) = keys else {
                continue;
            };
            let mut bytes = Msg::Path(msg).encode(session);
            keys.seal(&mut bytes);
            self.out.push_back((Transmit::new(to, bytes), ttl));
        }
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        [self.path.poll_timeout(), self.present_due]
            .into_iter()
            .flatten()
            .min()
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        let (t, ttl) = self.out.pop_front()?;
        Some(Transmit { ttl, ..t })
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
