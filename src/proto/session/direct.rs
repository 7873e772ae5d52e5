//! [`DirectPath`]: the rules of a direct path between a hosted room's host and one joiner,
//! which `framelock serve` introduced to each other. One per joiner on the host's side, one
//! on the joiner's; both sides run the same rules. It owns no keys and no socket: its owner
//! seals the [`PathMsg`]s it asks to send, checks the tags of what comes in, and carries the
//! game over [`route`](DirectPath::route) when it names an address, else over the relay.
//!
//! # Punching
//! - The server's `Introduce` names the other side's address as the server sees it (and a
//!   host's local addresses, for two players behind one router) and a wait, picked from
//!   both sides' round trips so that their first punches cross: each side's first punch
//!   opens its own router's mapping for the other's.
//! - A punch is a tagged `Path/Punch` to every candidate, on the schedule [`PUNCH_AT`],
//!   each with its own token: made from the attempt's fresh secret (never sent) and the
//!   candidate's address, so only what reached that address can echo it. The first one to each candidate leaves with a TTL of
//!   [`LOW_TTL`]: it opens this side's router without reaching the other's, which some
//!   routers would answer by blocking the sender for good (Dolphin, PR #11382).
//! - A tagged punch from anywhere is answered there with `PunchBack` (its token), and its
//!   source becomes a candidate: the other side's address as this one sees it, which
//!   nobody named (ICE's peer-reflexive candidate). That is a router that maps per
//!   destination, a local address, or a router that took one of this side's punches itself
//!   (it accepts datagrams on its WAN address) before its home's own punch left, kept a
//!   conntrack entry for it, and so mapped its home's flow here to a new port. Such a
//!   learned candidate is punched once per punch that came from it, never on the schedule:
//!   an address named only by a (possibly forged) source gets at most twice what came from
//!   it, under QUIC's 3x rule for unproven addresses. It is proven like any other, only by
//!   a `PunchBack` from it that echoes the token made for it.
//! - A `PunchBack` proves the path both ways only if it echoes the token of the punch sent
//!   to the very address it came from: datagrams go direct there from then on. Nothing
//!   unauthenticated moves the game, and a side that read the token sent to its own
//!   address cannot answer "from" someone else's (issue 50: one forged `PunchBack` moved a
//!   game's stream to a victim).
//! - A side whose router forwards a port to it (`portmap`) tells the other over the relay
//!   ([`advertise`](DirectPath::advertise), a tagged `Path/Candidates`): the other punches
//!   that address too, at once, in a fresh attempt if the first one had ended. A forwarded
//!   port takes the punch whatever the router's mapping rules, so a symmetric-NAT home
//!   with UPnP goes direct.
//!
//! # Falling back
//! - No proof within [`GIVE_UP`] of the introduction: the relay carries this player, as
//!   it did since it joined; the other side decides the same on its own.
//! - A direct path that is silent for [`SILENCE`] (an idle one sends a tagged probe every
//!   [`KEEPALIVE`]) goes back to the relay without ending anything, well before the
//!   lockstep's 2-s drop; it is tried again after [`RETRY_AFTER`], then twice as long each
//!   time, up to [`RETRY_MAX`].
//! - Both sides take the other's datagrams over either path at any time, so a side that
//!   falls back first loses nothing.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::{Duration, Instant};

use rand::Rng;

use super::msg::{Msg, PathMsg, PATH_TOKEN_LEN};
use crate::wire::Transmit;

/// When the punches of one attempt leave, after its start.
pub const PUNCH_AT: [Duration; 6] = [
    Duration::from_millis(0),
    Duration::from_millis(200),
    Duration::from_millis(500),
    Duration::from_millis(1000),
    Duration::from_millis(1800),
    Duration::from_millis(2600),
];
/// An attempt without proof this long after its start leaves the player relayed.
pub const GIVE_UP: Duration = Duration::from_secs(3);
/// The first punch to a candidate: enough to leave a home router, not to reach the other's.
pub const LOW_TTL: u8 = 2;
/// Copies of a `Candidates` message sent over the relay.
const ADVERTISE_COPIES: usize = 2;
/// A direct path with nothing sent for this long gets a tagged probe.
pub const KEEPALIVE: Duration = Duration::from_millis(200);
/// A direct path with nothing heard for this long goes back to the relay.
pub const SILENCE: Duration = Duration::from_millis(800);
/// The first retry of a path that failed or died, then twice as long each time...
pub const RETRY_AFTER: Duration = Duration::from_secs(10);
/// ... up to this.
pub const RETRY_MAX: Duration = Duration::from_secs(120);
/// Most candidate addresses one path tries.
const MAX_CANDIDATES: usize = 8;

/// `--path`: which paths a player uses in a room on a server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PathMode {
    /// Direct where a path proves itself, relayed otherwise.
    #[default]
    Auto,
    /// As `Auto` (a path that cannot go direct still relays: nothing else would play), but
    /// a failure is logged as a warning.
    Direct,
    /// Never tries a direct path: the server carries everything.
    Relayed,
}

impl FromStr for PathMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(PathMode::Auto),
            "direct" => Ok(PathMode::Direct),
            "relayed" => Ok(PathMode::Relayed),
            other => Err(format!(
                "unknown path `{other}`: use auto, direct or relayed"
            )),
        }
    }
}

/// How a player's datagrams travel, as the status bar and `--stats-json` say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathKind {
    /// Straight between the two.
    Direct,
    /// Through the server.
    Relayed,
}

impl PathKind {
    /// `"direct"` or `"relayed"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PathKind::Direct => "direct",
            PathKind::Relayed => "relayed",
        }
    }
}

/// What a path did, for the owner to log and show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathEvent {
    /// Proven both ways: the game goes to `addr` now.
    Direct {
        /// Where the other side answered from.
        addr: SocketAddr,
        /// Since the introduction (or the retry's start).
        after: Duration,
    },
    /// Back on (or left on) the relay.
    Relayed {
        /// Why.
        why: &'static str,
    },
}

#[derive(Debug)]
enum Phase {
    /// Not introduced (yet), or `PathMode::Relayed`.
    Idle,
    Punching {
        start: Instant,
        step: usize,
    },
    Direct {
        addr: SocketAddr,
        heard: Instant,
        sent: Instant,
    },
    Relayed {
        retry_at: Instant,
    },
}

/// One side's direct path to the other. See the module docs.
#[derive(Debug)]
pub struct DirectPath {
    mode: PathMode,
    phase: Phase,
    candidates: Vec<SocketAddr>,
    /// Candidates that had their low-TTL punch.
    opened: Vec<SocketAddr>,
    /// Candidates known only as the source of a punch: punched once per punch from them.
    learned: Vec<SocketAddr>,
    /// The attempt's secret: each candidate's token is made from it (`token_for`).
    secret: [u8; PATH_TOKEN_LEN],
    /// When the current attempt was asked for (for `PathEvent::Direct::after`).
    asked: Option<Instant>,
    /// Attempts that failed or paths that died, for the backoff.
    failures: u32,
    /// The first attempt ended (proven or not): bulk data may go.
    settled: bool,
    /// How long the first proven path took from its introduction.
    first_direct: Option<Duration>,
    out: VecDeque<(SocketAddr, PathMsg, Option<u8>)>,
    /// Messages for the other side that go over the relay.
    relay_out: VecDeque<PathMsg>,
    events: VecDeque<PathEvent>,
}

impl DirectPath {
    /// A path that waits for its introduction.
    pub fn new(mode: PathMode) -> DirectPath {
        DirectPath {
            mode,
            phase: Phase::Idle,
            candidates: Vec::new(),
            opened: Vec::new(),
            learned: Vec::new(),
            secret: [0; PATH_TOKEN_LEN],
            asked: None,
            failures: 0,
            settled: mode == PathMode::Relayed,
            first_direct: None,
            out: VecDeque::new(),
            relay_out: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    /// Tells the other side, over the relay, that `addrs` reach this one too (a port its
    /// router forwards). Nothing in `PathMode::Relayed`.
    pub fn advertise(&mut self, addrs: &[SocketAddr]) {
        if self.mode != PathMode::Relayed && !addrs.is_empty() {
            // Twice: it is said once, and one lost datagram would cost the direct path.
            for _ in 0..ADVERTISE_COPIES {
                self.relay_out.push_back(PathMsg::candidates(addrs));
            }
        }
    }

    /// The other side's `Candidates` came over the relay: they are punched at once, in a
    /// fresh attempt with `token` unless the path is direct already.
    pub fn handle_candidates(
        &mut self,
        now: Instant,
        addrs: &[SocketAddr],
        token: [u8; PATH_TOKEN_LEN],
    ) {
        if self.mode == PathMode::Relayed {
            return;
        }
        let before = self.candidates.len();
        for &a in addrs {
            self.add_candidate(a);
        }
        // Named over the relay: punched on the schedule from now on.
        self.learned.retain(|l| !addrs.contains(l));
        if self.candidates.len() > before && !matches!(self.phase, Phase::Direct { .. }) {
            self.start(now, now, token);
        }
    }

    /// The server introduced the other side: punch `candidates` from `now + wait` on, with
    /// `token` (fresh and random: its echo is the proof).
    pub fn introduce(
        &mut self,
        now: Instant,
        candidates: &[SocketAddr],
        wait: Duration,
        token: [u8; PATH_TOKEN_LEN],
    ) {
        if self.mode == PathMode::Relayed || matches!(self.phase, Phase::Direct { .. }) {
            return;
        }
        for &c in candidates {
            self.add_candidate(c);
        }
        self.learned.retain(|l| !candidates.contains(l));
        self.start(now, now + wait, token);
    }

    fn add_candidate(&mut self, addr: SocketAddr) {
        if !self.candidates.contains(&addr) && self.candidates.len() < MAX_CANDIDATES {
            self.candidates.push(addr);
        }
    }

    /// The token of the punches to `addr` in this attempt.
    pub fn token_for(&self, addr: SocketAddr) -> [u8; PATH_TOKEN_LEN] {
        let mut h = blake3::Hasher::new_derive_key("framelock 2026-11 punch token per address");
        h.update(&self.secret);
        h.update(addr.to_string().as_bytes());
        let mut out = [0; PATH_TOKEN_LEN];
        out.copy_from_slice(&h.finalize().as_bytes()[..PATH_TOKEN_LEN]);
        out
    }

    fn start(&mut self, now: Instant, at: Instant, token: [u8; PATH_TOKEN_LEN]) {
        self.secret = token;
        self.asked = Some(now);
        self.phase = Phase::Punching { start: at, step: 0 };
    }

    /// The server's `Introduce`, as both sides take it: the other side at `peer` (as the
    /// server sees it) and at its `locals`, punched from `now + wait_ms` on with a fresh
    /// token from `rng`. Returns the candidates it named.
    pub fn introduced(
        &mut self,
        now: Instant,
        peer: SocketAddr,
        locals: &[SocketAddr],
        wait_ms: u16,
        rng: &mut impl Rng,
    ) -> Vec<SocketAddr> {
        let mut candidates = vec![peer];
        candidates.extend_from_slice(locals);
        let wait = Duration::from_millis(wait_ms.into());
        self.introduce(now, &candidates, wait, rng.gen());
        candidates
    }

    /// A path message with the other side's tag came straight from `from`: true if it was a
    /// punch or its echo, which are the path's own (a fresh token from `rng` starts an
    /// attempt a punch asks for).
    pub fn handle_msg(
        &mut self,
        now: Instant,
        from: SocketAddr,
        msg: &PathMsg,
        rng: &mut impl Rng,
    ) -> bool {
        match *msg {
            PathMsg::Punch(echo) => self.handle_punch(now, from, echo, rng.gen()),
            PathMsg::PunchBack(token) => {
                self.handle_punch_back(now, from, token);
            }
            _ => return false,
        }
        true
    }

    /// A punch with the other side's tag came from `from`: answer it there, and try it.
    /// `token` starts an attempt if none is under way.
    pub fn handle_punch(
        &mut self,
        now: Instant,
        from: SocketAddr,
        echo: [u8; PATH_TOKEN_LEN],
        token: [u8; PATH_TOKEN_LEN],
    ) {
        if self.mode == PathMode::Relayed {
            return;
        }
        self.out.push_back((from, PathMsg::PunchBack(echo), None));
        let new = !self.candidates.contains(&from);
        match self.phase {
            Phase::Direct { .. } => return,
            Phase::Punching { .. } => {}
            Phase::Idle | Phase::Relayed { .. } => {
                // The other side is trying (its introduction came first, or it retries).
                self.start(now, now, token);
            }
        }
        if new && self.candidates.len() < MAX_CANDIDATES {
            self.add_candidate(from);
            self.learned.push(from);
        }
        // A learned address gets one punch per punch from it (the schedule skips it).
        if self.learned.contains(&from) {
            let punch = PathMsg::Punch(self.token_for(from));
            self.out.push_back((from, punch, None));
        }
    }

    /// A `PunchBack` with the other side's tag came from `from`; true if it proved the path.
    pub fn handle_punch_back(
        &mut self,
        now: Instant,
        from: SocketAddr,
        token: [u8; PATH_TOKEN_LEN],
    ) -> bool {
        let sent_there = self.candidates.contains(&from) && token == self.token_for(from);
        if !sent_there || !matches!(self.phase, Phase::Punching { .. }) {
            return false;
        }
        let after = self
            .asked
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        self.phase = Phase::Direct {
            addr: from,
            heard: now,
            sent: now,
        };
        self.settled = true;
        self.failures = 0;
        self.first_direct.get_or_insert(after);
        self.events
            .push_back(PathEvent::Direct { addr: from, after });
        true
    }

    /// A datagram with the other side's tag came straight from `from`. Any address of the
    /// other side's counts: each side may have proven a different one (one answered on a
    /// LAN address, the other on the address the server saw), and sends there.
    pub fn heard(&mut self, now: Instant, from: SocketAddr) {
        let known = self.candidates.contains(&from);
        if let Phase::Direct { addr, heard, .. } = &mut self.phase {
            if *addr == from || known {
                *heard = now;
            }
        }
    }

    /// Where the game goes now: the other side's direct address, or `None` (the relay).
    /// The caller sends there, so the path counts as used.
    pub fn route(&mut self, now: Instant) -> Option<SocketAddr> {
        match &mut self.phase {
            Phase::Direct { addr, sent, .. } => {
                *sent = now;
                Some(*addr)
            }
            _ => None,
        }
    }

    /// The direct address, if the path is direct.
    pub fn direct(&self) -> Option<SocketAddr> {
        match self.phase {
            Phase::Direct { addr, .. } => Some(addr),
            _ => None,
        }
    }

    /// How long the first proven path took from its introduction, if one was.
    pub fn first_direct(&self) -> Option<Duration> {
        self.first_direct
    }

    /// How this player's datagrams travel now.
    pub fn kind(&self) -> PathKind {
        match self.phase {
            Phase::Direct { .. } => PathKind::Direct,
            _ => PathKind::Relayed,
        }
    }

    /// The first attempt is over (or never comes): big transfers may start. Until then they
    /// wait, so that a start state does not cross the server when a direct path is near.
    pub fn settled(&self) -> bool {
        self.settled || matches!(self.phase, Phase::Idle)
    }

    /// Whether `addr` is one this path tries or uses.
    pub fn knows(&self, addr: SocketAddr) -> bool {
        self.candidates.contains(&addr) || self.direct() == Some(addr)
    }

    /// Runs the schedule: punches due, a direct path's keepalive and silence, retries.
    /// `token` is a fresh token for a retry that starts now.
    pub fn handle_timeout(&mut self, now: Instant, token: [u8; PATH_TOKEN_LEN]) {
        match self.phase {
            Phase::Idle => {}
            Phase::Punching { start, step } => {
                if now >= start + GIVE_UP {
                    self.fail(now, "no direct path within 3 s");
                    return;
                }
                if step < PUNCH_AT.len() && now >= start + PUNCH_AT[step] {
                    for i in 0..self.candidates.len() {
                        let c = self.candidates[i];
                        if self.learned.contains(&c) {
                            continue;
                        }
                        let ttl = (!self.opened.contains(&c)).then_some(LOW_TTL);
                        if ttl.is_some() {
                            self.opened.push(c);
                        }
                        let punch = PathMsg::Punch(self.token_for(c));
                        self.out.push_back((c, punch, ttl));
                    }
                    self.phase = Phase::Punching {
                        start,
                        step: step + 1,
                    };
                }
            }
            Phase::Direct { addr, heard, sent } => {
                if now >= heard + SILENCE {
                    self.fail(now, "the direct path went silent");
                } else if now >= sent + KEEPALIVE {
                    self.out.push_back((addr, PathMsg::Probe, None));
                    self.phase = Phase::Direct {
                        addr,
                        heard,
                        sent: now,
                    };
                }
            }
            Phase::Relayed { retry_at } => {
                if now >= retry_at && !self.candidates.is_empty() {
                    self.start(now, now, token);
                    self.handle_timeout(now, token);
                }
            }
        }
    }

    fn fail(&mut self, now: Instant, why: &'static str) {
        let backoff = RETRY_AFTER
            .saturating_mul(1 << self.failures.min(8))
            .min(RETRY_MAX);
        self.failures += 1;
        self.settled = true;
        self.phase = Phase::Relayed {
            retry_at: now + backoff,
        };
        self.events.push_back(PathEvent::Relayed { why });
    }

    /// When [`handle_timeout`](Self::handle_timeout) has work next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.phase {
            Phase::Idle => None,
            Phase::Punching { start, step } => Some(match PUNCH_AT.get(step) {
                Some(at) => start + *at,
                None => start + GIVE_UP,
            }),
            Phase::Direct { heard, sent, .. } => Some((heard + SILENCE).min(sent + KEEPALIVE)),
            Phase::Relayed { retry_at } => (!self.candidates.is_empty()).then_some(retry_at),
        }
    }

    /// The next path message to seal and send: where, what, and a TTL for the IP header
    /// (`None`: the system's).
    pub fn poll_send(&mut self) -> Option<(SocketAddr, PathMsg, Option<u8>)> {
        self.out.pop_front()
    }

    /// Moves the path messages to send into `out`, each sealed by `seal` (false: no keys
    /// to seal with yet, and it is dropped) under `session`, with its TTL.
    pub fn seal_sends(
        &mut self,
        session: u32,
        mut seal: impl FnMut(&mut Vec<u8>) -> bool,
        out: &mut VecDeque<Transmit>,
    ) {
        while let Some((to, msg, ttl)) = self.out.pop_front() {
            let mut bytes = Msg::Path(msg).encode(session);
            if seal(&mut bytes) {
                out.push_back(Transmit { to, bytes, ttl });
            }
        }
    }

    /// Moves the messages for the relay into `out`, each sealed by `seal` (false: no keys
    /// yet, and it is dropped) under `session`.
    pub fn seal_relayed(
        &mut self,
        session: u32,
        mut seal: impl FnMut(&mut Vec<u8>) -> bool,
        out: &mut Vec<Vec<u8>>,
    ) {
        while let Some(msg) = self.relay_out.pop_front() {
            let mut bytes = Msg::Path(msg).encode(session);
            if seal(&mut bytes) {
                out.push(bytes);
            }
        }
    }

    /// What the path did, oldest first.
    pub fn poll_event(&mut self) -> Option<PathEvent> {
        self.events.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    /// Two paths wired to each other through a filter: `passes(from, to)` says whether a
    /// datagram gets through (a router's rules).
    fn run(
        a: &mut DirectPath,
        b: &mut DirectPath,
        a_addr: SocketAddr,
        b_addr: SocketAddr,
        passes: &dyn Fn(SocketAddr, SocketAddr, Instant) -> bool,
        t0: Instant,
        until: Duration,
    ) {
        let mut now = t0;
        let mut token = 1u8;
        while now < t0 + until {
            token = token.wrapping_add(1);
            a.handle_timeout(now, [token; 8]);
            b.handle_timeout(now, [token.wrapping_add(100); 8]);
            for _ in 0..4 {
                while let Some((to, msg, _)) = a.poll_send() {
                    if to == b_addr && passes(a_addr, b_addr, now) {
                        deliver(b, now, a_addr, msg, [token; 8]);
                    }
                }
                while let Some((to, msg, _)) = b.poll_send() {
                    if to == a_addr && passes(b_addr, a_addr, now) {
                        deliver(a, now, b_addr, msg, [token; 8]);
                    }
                }
            }
            now += Duration::from_millis(10);
        }
    }

    fn deliver(p: &mut DirectPath, now: Instant, from: SocketAddr, msg: PathMsg, t: [u8; 8]) {
        match msg {
            PathMsg::Punch(echo) => p.handle_punch(now, from, echo, t),
            PathMsg::PunchBack(tok) => {
                p.handle_punch_back(now, from, tok);
            }
            PathMsg::Probe => p.heard(now, from),
            _ => {}
        }
    }

    #[test]
    fn crossing_punches_prove_a_path_and_a_silent_one_falls_back_then_retries() {
        let t0 = Instant::now();
        let (ha, ja) = (addr("198.51.100.1:4000"), addr("203.0.113.9:5000"));
        let mut host = DirectPath::new(PathMode::Auto);
        let mut join = DirectPath::new(PathMode::Auto);
        assert!(host.settled() && join.settled());
        host.introduce(t0, &[ja], Duration::from_millis(30), [1; 8]);
        join.introduce(t0, &[ha], Duration::ZERO, [2; 8]);
        assert!(!host.settled());
        // A home router drops what comes in before its side sent there.
        let opened_h = std::cell::Cell::new(false);
        let passes = |from: SocketAddr, _to: SocketAddr, _now: Instant| {
            if from == ha {
                opened_h.set(true);
                true
            } else {
                opened_h.get()
            }
        };
        run(
            &mut host,
            &mut join,
            ha,
            ja,
            &passes,
            t0,
            Duration::from_secs(1),
        );
        assert_eq!(host.kind(), PathKind::Direct);
        assert_eq!(join.kind(), PathKind::Direct);
        assert_eq!(join.direct(), Some(ha));
        assert!(matches!(host.poll_event(), Some(PathEvent::Direct { addr, .. }) if addr == ja));

        // The direct path starts dropping everything: both go back to the relay in time.
        let t1 = t0 + Duration::from_secs(1);
        let dead = |_: SocketAddr, _: SocketAddr, _: Instant| false;
        run(
            &mut host,
            &mut join,
            ha,
            ja,
            &dead,
            t1,
            SILENCE + Duration::from_millis(50),
        );
        assert_eq!(host.kind(), PathKind::Relayed);
        assert_eq!(join.kind(), PathKind::Relayed);
        let t2 = t1 + SILENCE + Duration::from_millis(50);
        // It heals; the retry after `RETRY_AFTER` finds it again.
        let open = |_: SocketAddr, _: SocketAddr, _: Instant| true;
        run(
            &mut host,
            &mut join,
            ha,
            ja,
            &open,
            t2,
            RETRY_AFTER - Duration::from_secs(1),
        );
        assert_eq!(
            host.kind(),
            PathKind::Relayed,
            "no retry before RETRY_AFTER"
        );
        let t3 = t2 + RETRY_AFTER - Duration::from_secs(1);
        run(
            &mut host,
            &mut join,
            ha,
            ja,
            &open,
            t3,
            Duration::from_secs(2),
        );
        assert_eq!(host.kind(), PathKind::Direct);
        assert_eq!(join.kind(), PathKind::Direct);
    }

    #[test]
    fn a_path_proven_on_different_addresses_each_way_stays_direct() {
        let t0 = Instant::now();
        let (h_lan, h_seen) = (addr("192.168.1.2:4000"), addr("198.51.100.1:4000"));
        let mut join = DirectPath::new(PathMode::Auto);
        join.introduce(t0, &[h_seen, h_lan], Duration::ZERO, [1; 8]);
        // The host proved the joiner's LAN address; the joiner proved the host's public one.
        join.handle_punch_back(t0, h_seen, join.token_for(h_seen));
        assert_eq!(join.direct(), Some(h_seen));
        // The host's datagrams come from its LAN address: the path stays alive.
        let mut now = t0;
        while now < t0 + 3 * SILENCE {
            now += Duration::from_millis(50);
            join.heard(now, h_lan);
            join.handle_timeout(now, [2; 8]);
        }
        assert_eq!(join.kind(), PathKind::Direct);
        // From an address it never tried, nothing counts.
        join.heard(now + SILENCE, addr("203.0.113.5:1"));
        join.handle_timeout(now + SILENCE, [2; 8]);
        assert_eq!(join.kind(), PathKind::Relayed);
    }

    #[test]
    fn a_path_that_never_answers_settles_relayed_after_three_seconds() {
        let t0 = Instant::now();
        let (ha, ja) = (addr("198.51.100.1:4000"), addr("203.0.113.9:5000"));
        let mut host = DirectPath::new(PathMode::Auto);
        let mut join = DirectPath::new(PathMode::Auto);
        host.introduce(t0, &[ja], Duration::ZERO, [1; 8]);
        join.introduce(t0, &[ha], Duration::ZERO, [2; 8]);
        let dead = |_: SocketAddr, _: SocketAddr, _: Instant| false;
        run(
            &mut host,
            &mut join,
            ha,
            ja,
            &dead,
            t0,
            GIVE_UP - Duration::from_millis(20),
        );
        assert!(!host.settled());
        run(
            &mut host,
            &mut join,
            ha,
            ja,
            &dead,
            t0 + GIVE_UP,
            Duration::from_millis(20),
        );
        assert!(host.settled() && join.settled());
        assert_eq!(host.kind(), PathKind::Relayed);
        assert_eq!(
            host.poll_event(),
            Some(PathEvent::Relayed {
                why: "no direct path within 3 s"
            })
        );
    }

    #[test]
    fn each_candidate_gets_its_own_token_with_a_low_ttl_first_and_relayed_mode_never_punches() {
        let t0 = Instant::now();
        let mut p = DirectPath::new(PathMode::Auto);
        let (a, b) = (addr("10.0.0.2:1"), addr("192.0.2.7:9"));
        p.introduce(t0, &[a, b], Duration::ZERO, [3; 8]);
        p.handle_timeout(t0, [4; 8]);
        let first: Vec<_> = std::iter::from_fn(|| p.poll_send()).collect();
        assert_eq!(first.len(), 2);
        assert!(first
            .iter()
            .all(|(to, m, ttl)| *m == PathMsg::Punch(p.token_for(*to)) && *ttl == Some(LOW_TTL)));
        assert_ne!(p.token_for(a), p.token_for(b), "one token per address");
        p.handle_timeout(t0 + PUNCH_AT[1], [4; 8]);
        assert!(std::iter::from_fn(|| p.poll_send()).all(|(_, _, ttl)| ttl.is_none()));
        // A forged echo (another token) proves nothing.
        assert!(!p.handle_punch_back(t0 + PUNCH_AT[1], a, [9; 8]));

        // Issue 50: the side at `b` read the token sent to it and echoes it "from" a victim
        // (a forged source): nothing moves. A forged punch from the victim gets it at most
        // a PunchBack and one punch, each the size of what came "from" it.
        let victim = addr("192.0.2.66:53");
        assert!(!p.handle_punch_back(t0 + PUNCH_AT[1], victim, p.token_for(b)));
        p.handle_punch(t0 + PUNCH_AT[1], victim, [5; 8], [6; 8]);
        for at in &PUNCH_AT[2..] {
            p.handle_timeout(t0 + *at, [4; 8]);
        }
        let to_victim = std::iter::from_fn(|| p.poll_send())
            .filter(|(to, _, _)| *to == victim)
            .count();
        assert_eq!(to_victim, 2, "a PunchBack and one punch");
        assert!(!p.handle_punch_back(t0 + PUNCH_AT[2], victim, p.token_for(b)));
        assert!(p.handle_punch_back(t0 + PUNCH_AT[2], b, p.token_for(b)));
        assert_eq!(p.direct(), Some(b));

        let mut off = DirectPath::new(PathMode::Relayed);
        off.introduce(t0, &[a], Duration::ZERO, [3; 8]);
        off.handle_punch(t0, a, [7; 8], [3; 8]);
        off.handle_timeout(t0, [3; 8]);
        assert_eq!(off.poll_send(), None);
        assert_eq!(off.poll_timeout(), None);
    }

    /// Bytes of a path message on the wire (before its tag, the same for each kind).
    fn size(m: PathMsg) -> usize {
        Msg::Path(m).encode(0).len()
    }

    /// Issue 54: the host's router takes datagrams sent to its own WAN address, and the
    /// joiner's punch reached it before the host's own punch left: the router keeps an entry
    /// for it and maps the host's flow to the joiner to a new port. The host's punches reach
    /// the joiner from `h_new`, which nobody named; what the joiner sends to `h_seen` (the
    /// address the server saw) the router takes itself. The joiner answers `h_new` and
    /// adopts it, proves it with the token it made for `h_new`, and sends it at most 3x what
    /// came from it until then.
    #[test]
    fn a_punch_from_a_port_the_router_remapped_is_answered_adopted_and_proven_within_3x() {
        let t0 = Instant::now();
        let h_seen = addr("198.51.100.1:4000");
        let h_new = addr("198.51.100.1:61001");
        let j = addr("203.0.113.9:5000");
        let mut host = DirectPath::new(PathMode::Auto);
        let mut join = DirectPath::new(PathMode::Auto);
        // The joiner starts 300 ms early (its introduction came first).
        join.introduce(t0, &[h_seen], Duration::ZERO, [2; 8]);
        host.introduce(t0, &[j], Duration::from_millis(300), [1; 8]);
        let (mut from_new, mut to_new) = (0, 0);
        let mut now = t0;
        while now < t0 + GIVE_UP && join.direct().is_none() {
            host.handle_timeout(now, [3; 8]);
            join.handle_timeout(now, [4; 8]);
            for _ in 0..4 {
                while let Some((to, msg, ttl)) = host.poll_send() {
                    assert_eq!(to, j);
                    // A low-TTL punch dies between the routers, as on the internet.
                    if ttl.is_none() {
                        from_new += size(msg);
                        deliver(&mut join, now, h_new, msg, [5; 8]);
                    }
                }
                while let Some((to, msg, _)) = join.poll_send() {
                    assert_ne!(to, j);
                    if to == h_new {
                        to_new += size(msg);
                        deliver(&mut host, now, j, msg, [6; 8]);
                    }
                    // To `h_seen`: the host's router takes it itself.
                }
                assert!(
                    to_new <= 3 * from_new,
                    "{to_new} B to an unproven address that sent {from_new} B"
                );
            }
            now += Duration::from_millis(10);
        }
        assert_eq!(join.direct(), Some(h_new), "the remapped port is adopted");
        assert_eq!(host.direct(), Some(j));
        assert!(to_new > 0);
        assert!(
            now < t0 + Duration::from_millis(600),
            "proven at {:?}",
            now - t0
        );
    }

    /// Whoever read the token sent to a candidate (it sits at `h_seen`, or on the way) forges
    /// punches from another port of that address, and echoes every token it could know
    /// "from" there: no path moves to the forged address, which gets back no more than 3x
    /// what came "from" it; the real candidate still proves itself.
    #[test]
    fn a_forged_punch_from_another_port_of_a_candidate_proves_nothing_and_gets_under_3x() {
        let t0 = Instant::now();
        let h_seen = addr("198.51.100.1:4000");
        let victim = addr("198.51.100.1:53");
        let mut join = DirectPath::new(PathMode::Auto);
        join.introduce(t0, &[h_seen], Duration::ZERO, [2; 8]);
        let (mut forged, mut to_victim) = (0, 0);
        let mut known = Vec::new();
        let mut now = t0;
        for at in PUNCH_AT.iter().take(4) {
            now = t0 + *at;
            join.handle_timeout(now, [4; 8]);
            // The attacker forges a punch from `victim`, echoing what it read at `h_seen`.
            let punch = PathMsg::Punch(join.token_for(h_seen));
            forged += size(punch);
            join.handle_punch(now, victim, join.token_for(h_seen), [7; 8]);
            while let Some((to, msg, _)) = join.poll_send() {
                match (to, msg) {
                    (to, PathMsg::Punch(t) | PathMsg::PunchBack(t)) if to == h_seen => {
                        known.push(t)
                    }
                    (to, _) if to == victim => to_victim += size(msg),
                    _ => {}
                }
            }
            // Only the token sent to the victim could prove it, and the victim never echoes.
            for &t in &known {
                forged += size(PathMsg::PunchBack(t));
                assert!(
                    !join.handle_punch_back(now, victim, t),
                    "a forged echo moved it"
                );
            }
            assert!(
                to_victim <= 3 * forged,
                "{to_victim} B to the victim, {forged} B from it"
            );
        }
        assert_eq!(join.direct(), None);
        assert!(join.handle_punch_back(now, h_seen, join.token_for(h_seen)));
        assert_eq!(join.direct(), Some(h_seen));
    }
}
