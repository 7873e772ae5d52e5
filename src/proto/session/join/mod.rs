//! Joiner side of the session: Hello until answered, the password challenge, the Welcome,
//! then the start payload, verified before it is handed over.
//!
//! This file is [`JoinSession`], the handshake's phases and the host's path; what it is told
//! and hands over is in `config`, the checks a room's creator makes for the server in
//! `checks`. Sans-IO: it must not import sockets, clocks, `lockstep`'s machines or anything
//! above `session`.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::{rngs::StdRng, Rng, SeedableRng};

mod checks;
mod config;

use checks::PasswordChecks;
pub use config::{JoinConfig, JoinEvent, StartState};

use super::guard::COOKIE_LEN;
use super::msg::{
    foreign_version, refuse_text, Auth, Hello, Msg, PathMsg, RelayStep, RoomMsg, StateAck, Welcome,
    PATH_TOKEN_LEN,
};
use super::payload::{StartPayload, MAX_PAYLOAD};
use super::transfer::{ChunkOutcome, Progress, Receiver};
use super::{
    auth, option_diffs, Dropped, Handled, SessionError, SessionStats, Transmit, LOADING_INTERVAL,
    LOADING_LIMIT,
};
use crate::wire::keys::{KeyPair, Keys, Side, TAG_LEN};
use crate::wire::{Header, Kind, WireError, HEADER_LEN, MAGIC, MAX_DATAGRAM};

const BYE_COPIES: usize = 3;
/// The final "verified" ack is sent this many times unprompted (and again whenever the host
/// resends a chunk), since the host cannot start this player without it.
const FINAL_ACK_COPIES: u8 = 3;
const FINAL_ACK_SPACING: Duration = Duration::from_millis(15);

/// A new address the host's tagged datagrams came from, until it answers a challenge.
#[derive(Debug)]
struct HostPath {
    addr: SocketAddr,
    token: [u8; PATH_TOKEN_LEN],
    next: Instant,
    tries: u8,
    received: u64,
    sent: u64,
}

/// How often a path challenge is sent again, and how many times.
const PATH_RETRY: Duration = Duration::from_millis(250);
const PATH_TRIES: u8 = 8;

#[derive(Debug)]
enum Phase {
    Hello,
    Receiving {
        welcome: Welcome,
        rx: Box<Receiver>,
    },
    Ready {
        count: u32,
        latest_seq: u32,
        ack_at: Option<Instant>,
        /// Unprompted extra copies of the final ack still to send.
        copies: u8,
        /// When the start state was complete.
        since: Instant,
        /// The next `Msg::Loading`; `None` once this player runs (or `LOADING_LIMIT` passed).
        loading: Option<Instant>,
    },
    Done,
}

/// The joiner's session. See the module docs for the calling order.
#[derive(Debug)]
pub struct JoinSession {
    cfg: JoinConfig,
    rng: StdRng,
    /// This joiner's half of the key exchange; its public key rides in every Hello.
    key_pair: KeyPair,
    /// The datagram keys, from the Welcome on: every datagram either way carries their tag.
    keys: Option<Keys>,
    /// The password checks this room's creator makes for the server.
    checks: PasswordChecks,
    phase: Phase,
    auth: Auth,
    /// The host's proof-of-address cookie, echoed in every Hello once it sent one.
    cookie: [u8; COOKIE_LEN],
    /// The seat's key its Welcome carried (zeros: none).
    seat_key: [u8; crate::session::msg::SEAT_KEY_LEN],
    started: Instant,
    last_heard: Option<Instant>,
    /// Datagrams from the host's address that were not valid session datagrams.
    strays_from_host: u32,
    /// The last `Msg::Lobby` numbers: players in and wanted.
    lobby: Option<(u8, u8)>,
    next_hello: Instant,
    session: u32,
    queue: VecDeque<Vec<u8>>,
    /// Path messages to an address other than the host's (answers go where the challenge
    /// came from), tagged.
    out: VecDeque<Transmit>,
    host_path: Option<HostPath>,
    events: VecDeque<JoinEvent>,
    stats: SessionStats,
}

crate::wire::impl_machine!(JoinSession, JoinEvent);

impl JoinSession {
    /// Starts the handshake: the first Hello is due at once.
    pub fn new(now: Instant, cfg: JoinConfig) -> JoinSession {
        let mut rng = StdRng::from_seed(cfg.entropy);
        let key_pair = KeyPair::from_entropy(rng.gen());
        JoinSession {
            rng,
            key_pair,
            keys: None,
            checks: PasswordChecks::default(),
            cfg,
            phase: Phase::Hello,
            auth: Auth::None,
            cookie: [0; COOKIE_LEN],
            seat_key: [0; crate::session::msg::SEAT_KEY_LEN],
            started: now,
            last_heard: None,
            strays_from_host: 0,
            lobby: None,
            next_hello: now,
            session: 0,
            queue: VecDeque::new(),
            out: VecDeque::new(),
            host_path: None,
            events: VecDeque::new(),
            stats: SessionStats::default(),
        }
    }

    /// The address it joins.
    pub fn host(&self) -> SocketAddr {
        self.cfg.host
    }

    /// The room on a dedicated server; `None` for a direct host.
    pub fn room(&self) -> Option<&str> {
        Some(self.cfg.room.as_str()).filter(|r| !r.is_empty())
    }

    /// Session id, once welcomed (0 before).
    pub fn session_id(&self) -> u32 {
        self.session
    }

    /// The id of this seat's chat stream: new with each handshake (its entropy), and
    /// telling nothing of it.
    pub(crate) fn chat_stream(&self) -> u32 {
        let h = blake3::derive_key("framelock chat stream", &self.cfg.entropy);
        u32::from_le_bytes([h[0], h[1], h[2], h[3]])
    }

    /// The counters.
    pub fn stats(&self) -> SessionStats {
        self.stats
    }

    /// Start-state bytes (compressed) received so far and in total; (0, 0) before Welcome.
    pub fn progress(&self) -> Progress {
        match &self.phase {
            Phase::Receiving { rx, .. } => Progress {
                done: rx.received_bytes(),
                total: rx.packed().len(),
            },
            _ => Progress::default(),
        }
    }

    /// It has the start state.
    pub fn is_ready(&self) -> bool {
        matches!(self.phase, Phase::Ready { .. })
    }

    /// This player runs: its lockstep client sent its first CTRL, which tells the host from
    /// now on that it is there. Ends the `Msg::Loading` sent since the start state.
    pub fn end_loading(&mut self) {
        if let Phase::Ready { loading, .. } = &mut self.phase {
            *loading = None;
        }
    }

    /// Says goodbye to the host (drain `poll_transmit` afterwards).
    pub fn leave(&mut self, reason: &str) {
        for _ in 0..BYE_COPIES {
            self.queue
                .push_back(Msg::Bye(reason.into()).encode(self.session));
        }
        self.phase = Phase::Done;
    }

    fn fail(&mut self, e: SessionError) {
        tracing::warn!("session: join failed: {e}");
        self.phase = Phase::Done;
        self.events.push_back(JoinEvent::Failed(e));
    }

    pub(crate) fn hello(&self) -> Vec<u8> {
        let i = &self.cfg.info;
        Msg::Hello(Hello {
            core_name: i.core_name.clone(),
            core_version: i.core_version.clone(),
            content_name: i.content_name.clone(),
            content_hash: i.content_hash,
            player_name: i.player_name.clone(),
            room: self.cfg.room.clone(),
            watch: self.cfg.watch,
            no_share: self.cfg.no_share,
            key: self.key_pair.public(),
            auth: self.auth.clone(),
            cookie: self.cookie,
            seat_key: self.cfg.seat_key,
        })
        .encode(0)
    }

    /// A datagram from `from`: only the host's count, and once there are keys only with its tag.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Handled<'static> {
        self.stats.datagrams_in += 1;
        let result = if from != self.cfg.host {
            match self.open_other(now, from, datagram) {
                Some(body) => self.dispatch(now, from, body),
                None => Err(Dropped::NotFromHost(from)),
            }
        } else {
            match self.open(datagram) {
                Some(body) => self.dispatch(now, from, body),
                None => Err(Dropped::Unauthentic),
            }
        };
        match &result {
            Ok(()) => self.last_heard = Some(now),
            Err(Dropped::NotFromHost(_)) => {}
            Err(why) => {
                self.strays_from_host += 1;
                tracing::trace!(%from, "session: dropped datagram: {why}");
                self.stats.drop(why);
            }
        }
        result.into()
    }

    /// The seat's key its Welcome carried (zeros: none yet, or a spectator).
    pub fn seat_key(&self) -> [u8; crate::session::msg::SEAT_KEY_LEN] {
        self.seat_key
    }

    /// The datagram keys, from the Welcome on.
    pub fn keys(&self) -> Option<&Keys> {
        self.keys.as_ref()
    }

    /// A datagram from the host without its tag, once this joiner has the keys; `None` if
    /// the tag is not the host's. Before the Welcome the datagram passes as it is, except
    /// the Welcome itself: it carries the host's public key and the tag made with the keys
    /// that key gives, which must check out.
    pub fn open<'a>(&self, datagram: &'a [u8]) -> Option<&'a [u8]> {
        if let Some(keys) = &self.keys {
            return keys.open(datagram);
        }
        let welcome = Header::parse(datagram).is_ok_and(|(h, _)| h.kind == Kind::Welcome);
        if !welcome {
            return Some(datagram);
        }
        let body = &datagram[..datagram.len().checked_sub(TAG_LEN)?];
        let (header, Msg::Welcome(w)) = Msg::decode(body).ok()? else {
            return None;
        };
        let keys = self.key_pair.agree(Side::Joiner, &w.key, header.session)?;
        keys.open(datagram)
    }

    /// A datagram from an address that is not the host's: taken (without its tag) only if
    /// it carries the host's tag, and then a path check starts there: the host moved (its
    /// router's mapping changed, it changed networks). This joiner moves to the new address
    /// once the host answers a challenge sent there.
    pub fn open_other<'a>(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &'a [u8],
    ) -> Option<&'a [u8]> {
        let body = self.keys.as_ref()?.open(datagram)?;
        match &mut self.host_path {
            Some(p) if p.addr == from => p.received += datagram.len() as u64,
            _ => {
                let mut token = [0; PATH_TOKEN_LEN];
                self.rng.fill(&mut token);
                tracing::debug!(old = %self.cfg.host, new = %from, "session: the host's datagram from a new address; checking the path");
                self.host_path = Some(HostPath {
                    addr: from,
                    token,
                    next: now,
                    tries: 0,
                    received: datagram.len() as u64,
                    sent: 0,
                });
                self.send_path_challenge(now);
            }
        }
        Some(body)
    }

    /// The path check's challenge, when due and within the new address's allowance.
    fn send_path_challenge(&mut self, now: Instant) {
        let Some(p) = &mut self.host_path else {
            return;
        };
        if now < p.next {
            return;
        }
        if p.tries >= PATH_TRIES {
            self.host_path = None;
            return;
        }
        let mut bytes = Msg::Path(PathMsg::Challenge(p.token)).encode(self.session);
        if let Some(keys) = &self.keys {
            keys.seal(&mut bytes);
        }
        p.next = now + PATH_RETRY;
        if p.sent + bytes.len() as u64 > super::host::PATH_AMPLIFICATION * p.received {
            return;
        }
        p.tries += 1;
        p.sent += bytes.len() as u64;
        self.out.push_back(Transmit::new(p.addr, bytes));
    }

    /// Tells the host where this joiner is now, with nothing else to say: a joiner that hears
    /// nothing sends it, so that a host that lost it after an address change finds it again
    /// (the datagram carries the session id, which a dedicated server routes by).
    pub fn probe(&mut self) {
        if self.keys.is_some() {
            self.queue
                .push_back(Msg::Path(PathMsg::Probe).encode(self.session));
        }
    }

    /// Tags a datagram for the host, once this joiner has the keys.
    pub fn seal(&self, bytes: &mut Vec<u8>) {
        if let Some(keys) = &self.keys {
            keys.seal(bytes);
        }
    }

    /// A session datagram from the host that [`open`](Self::open) (or, from another
    /// address, [`open_other`](Self::open_other)) let through.
    pub(crate) fn handle_opened(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Result<(), Dropped> {
        self.stats.datagrams_in += 1;
        let result = self.dispatch(now, from, datagram);
        match &result {
            Ok(()) => self.last_heard = Some(now),
            Err(why) => {
                tracing::trace!("session: dropped datagram: {why}");
                self.stats.drop(why);
            }
        }
        result
    }

    /// Counts a datagram from the host whose tag did not check out.
    pub(crate) fn note_unauthentic(&mut self) {
        self.stats.datagrams_in += 1;
        self.stats.drop(&Dropped::Unauthentic);
    }

    fn dispatch(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) -> Result<(), Dropped> {
        let (header, msg) = match Msg::decode(datagram) {
            Ok(ok) => ok,
            // Only a datagram in the frozen session layout (magic first) is a framelock
            // host of another version; anything else is noise, whatever its first byte.
            Err(WireError::Version(v))
                if matches!(self.phase, Phase::Hello) && datagram.starts_with(&MAGIC) =>
            {
                // A host of another version: its Refuse body is readable whatever the version.
                // Anything else of another version is noise (a datagram altered on the way):
                // a host of another version refuses a Hello with a Refuse first.
                let reason = foreign_version(datagram, Kind::Refuse)
                    .and_then(|_| refuse_text(&datagram[HEADER_LEN..]));
                let Some(text) = reason else {
                    return Err(WireError::Version(v).into());
                };
                self.fail(SessionError::Refused(text));
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let welcomed = !matches!(self.phase, Phase::Hello);
        if welcomed && header.session != self.session {
            return Err(Dropped::WrongSession {
                got: header.session,
                want: self.session,
            });
        }
        match (msg, &mut self.phase) {
            (Msg::Challenge(challenge), Phase::Hello) => {
                let answer = match &self.cfg.password {
                    Some(p) if !p.is_empty() => auth::answer(p, &challenge, &mut self.rng),
                    _ => None,
                };
                self.auth = match answer {
                    Some((msg, confirm)) => Auth::Pake {
                        challenge,
                        msg,
                        confirm,
                    },
                    None => Auth::NoPassword { challenge },
                };
                self.queue.push_back(self.hello());
                self.next_hello = now + self.cfg.hello_interval;
            }
            (Msg::Retry(cookie), Phase::Hello) => {
                // Echoed at once: the host answers nothing else until we proved our address.
                self.cookie = cookie;
                self.queue.push_back(self.hello());
                self.next_hello = now + self.cfg.hello_interval;
            }
            (Msg::Refuse(reason), Phase::Hello) => self.fail(SessionError::Refused(reason)),
            (Msg::Room(RoomMsg::Moved { room, server }), Phase::Hello) => {
                self.fail(SessionError::Moved { room, server })
            }
            (Msg::Room(RoomMsg::NoRoom { room, rooms }), Phase::Hello) => {
                self.fail(SessionError::NoRoom {
                    room,
                    addr: self.cfg.host,
                    rooms,
                })
            }
            // A running game gets a state ready for us first: the host is there.
            (Msg::Lobby { .. }, Phase::Hello) => {}
            // Every player of a room may check a joiner's password: its creator, or whoever
            // is in when the creator is not.
            (Msg::Room(RoomMsg::Relay { ticket, step }), _)
                if !self.cfg.room.is_empty() && welcomed =>
            {
                self.handle_relay(ticket, step)
            }
            (Msg::Path(PathMsg::Challenge(token)), _) if welcomed => {
                let mut bytes = Msg::Path(PathMsg::Response(token)).encode(self.session);
                self.seal(&mut bytes);
                self.out.push_back(Transmit::new(from, bytes));
            }
            (Msg::Path(PathMsg::Response(token)), _) if welcomed => {
                let answered = self
                    .host_path
                    .as_ref()
                    .is_some_and(|p| p.addr == from && p.token == token);
                if answered {
                    self.host_path = None;
                    let old = std::mem::replace(&mut self.cfg.host, from);
                    tracing::info!(%old, new = %from, "session: the host moved to a new address");
                    self.events.push_back(JoinEvent::HostMoved {
                        from: old,
                        to: from,
                    });
                }
            }
            (Msg::Path(PathMsg::Probe), _) if welcomed => {}
            (Msg::Dropped(reason), Phase::Receiving { .. } | Phase::Ready { .. }) => {
                self.fail(SessionError::Dropped(reason))
            }
            (Msg::Welcome(w), Phase::Hello) => self.handle_welcome(now, header.session, w),
            (Msg::Welcome(_), Phase::Receiving { rx, .. }) => rx.ack_soon(now),
            (Msg::StateChunk { index, seq, data }, Phase::Receiving { rx, .. }) => {
                match rx.handle_chunk(now, index, seq, data) {
                    ChunkOutcome::Invalid => return Err(Dropped::BadChunk),
                    ChunkOutcome::Duplicate => self.stats.chunks_duplicate += 1,
                    ChunkOutcome::New if rx.is_full() => self.finish(now),
                    _ => {}
                }
            }
            // The host missed our final ack: send it again.
            (
                Msg::StateChunk { seq, .. },
                Phase::Ready {
                    ack_at, latest_seq, ..
                },
            ) => {
                *latest_seq = seq;
                *ack_at = Some(now);
            }
            (Msg::Welcome(_), Phase::Ready { ack_at, .. }) => *ack_at = Some(now),
            (Msg::Lobby { ready, want }, Phase::Ready { .. }) => {
                if self.lobby != Some((ready, want)) {
                    self.lobby = Some((ready, want));
                    self.events.push_back(JoinEvent::Waiting { ready, want });
                }
            }
            (Msg::Bye(reason), Phase::Receiving { .. } | Phase::Ready { .. }) => {
                self.fail(SessionError::HostLeft(reason))
            }
            // Late copies of handshake answers after we moved on are harmless.
            (Msg::Challenge(_) | Msg::Refuse(_) | Msg::Welcome(_), _) if welcomed => {}
            (msg, _) => return Err(Dropped::Unexpected(msg.kind())),
        }
        Ok(())
    }

    /// The creator's half of a password check the server relays: make the challenge, then
    /// judge the answer.
    fn handle_relay(&mut self, ticket: u32, step: RelayStep) {
        let password = self.cfg.password.clone().unwrap_or_default();
        let Some(reply) = self.checks.handle(&password, ticket, step, &mut self.rng) else {
            return;
        };
        if let Some(admitted) = reply.judged {
            self.events
                .push_back(JoinEvent::PasswordChecked { admitted });
        }
        let msg = Msg::Room(RoomMsg::Relay {
            ticket,
            step: reply.step,
        });
        self.queue.push_back(msg.encode(self.session));
    }

    fn handle_welcome(&mut self, now: Instant, session: u32, w: Welcome) {
        let packed_ok =
            (w.packed_len as usize) <= lz4_flex::block::get_maximum_output_size(MAX_PAYLOAD);
        if w.raw_len as usize > MAX_PAYLOAD || !packed_ok {
            return self.fail(SessionError::PayloadTooBig);
        }
        if session == 0 || w.chunk_size as usize > MAX_DATAGRAM {
            return self.fail(SessionError::BadState("malformed welcome".into()));
        }
        // `open` checked the Welcome's tag with these keys.
        let Some(keys) = self.key_pair.agree(Side::Joiner, &w.key, session) else {
            return;
        };
        self.keys = Some(keys);
        self.session = session;
        self.seat_key = w.seat_key;
        tracing::info!(
            slot = w.slot,
            session = format_args!("{session:08x}"),
            bytes = w.packed_len,
            "session: welcomed"
        );
        self.events.push_back(JoinEvent::Welcomed {
            slot: w.seat(),
            session,
            players: w.players.clone(),
            packed_len: w.packed_len as usize,
            mode: w.mode,
            keyframe_interval: w.keyframe_interval,
        });
        let mut rx = Box::new(Receiver::new(w.packed_len as usize, w.chunk_size as usize));
        rx.ack_soon(now);
        let empty = rx.is_full();
        self.phase = Phase::Receiving { welcome: w, rx };
        if empty {
            self.finish(now);
        }
    }

    fn finish(&mut self, now: Instant) {
        let Phase::Receiving { welcome, rx } = &self.phase else {
            return;
        };
        match StartPayload::unpack(rx.packed(), welcome.raw_len, welcome.payload_hash) {
            Ok(payload) => {
                let state = StartState {
                    slot: welcome.seat(),
                    session: self.session,
                    players: welcome.players.clone(),
                    fps: welcome.fps,
                    frame: crate::lockstep::Frame(welcome.frame),
                    slots: welcome.slots,
                    keyframe_interval: welcome.keyframe_interval,
                    mode: welcome.mode,
                    option_diffs: option_diffs(&payload.options, &self.cfg.info.options),
                    payload,
                };
                let count = rx.count();
                let latest_seq = rx.latest_seq();
                self.phase = Phase::Ready {
                    count,
                    latest_seq,
                    ack_at: Some(now),
                    copies: FINAL_ACK_COPIES - 1,
                    since: now,
                    // The final acks say it first.
                    loading: Some(now + LOADING_INTERVAL),
                };
                self.events.push_back(JoinEvent::Ready(Box::new(state)));
            }
            Err(e) => {
                self.leave("start state failed verification");
                self.fail(e);
            }
        }
    }

    /// Resends and timeouts due by `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        let timeout = self.cfg.timeout;
        if matches!(self.phase, Phase::Hello | Phase::Receiving { .. }) {
            match self.last_heard {
                None if now >= self.started + timeout => {
                    let e = match self.strays_from_host {
                        0 => SessionError::NoAnswer {
                            addr: self.cfg.host,
                            secs: timeout.as_secs_f64().round() as u64,
                        },
                        n => SessionError::NotFramelock {
                            addr: self.cfg.host,
                            datagrams: n,
                        },
                    };
                    return self.fail(e);
                }
                Some(t) if now >= t + timeout => {
                    let secs = timeout.as_secs_f64().round() as u64;
                    return self.fail(SessionError::HostSilent { secs });
                }
                _ => {}
            }
        }
        if matches!(self.phase, Phase::Hello) && now >= self.next_hello {
            self.queue.push_back(self.hello());
            self.next_hello = now + self.cfg.hello_interval;
        }
        self.send_path_challenge(now);
        if let Phase::Ready { since, loading, .. } = &mut self.phase {
            match loading {
                // Not running after all this time: the host is told nothing more, and drops
                // this player once its silence timeout runs out.
                Some(_) if now >= *since + LOADING_LIMIT => {
                    tracing::debug!(
                        "session: not running {} s after the start state; no longer telling \
                         the host this player is loading",
                        LOADING_LIMIT.as_secs()
                    );
                    *loading = None;
                }
                Some(at) if now >= *at => {
                    *at = now + LOADING_INTERVAL;
                    self.queue.push_back(Msg::Loading.encode(self.session));
                }
                _ => {}
            }
        }
    }

    /// The next datagram to send, tagged once there are keys.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if let Some(t) = self.out.pop_front() {
            self.stats.datagrams_out += 1;
            return Some(t);
        }
        let bytes = match self.queue.pop_front() {
            Some(b) => Some(b),
            None => match &mut self.phase {
                Phase::Receiving { rx, .. } => rx
                    .poll_ack(now, false)
                    .map(|a| Msg::StateAck(a).encode(self.session)),
                Phase::Ready {
                    count,
                    latest_seq,
                    ack_at,
                    copies,
                    ..
                } if ack_at.is_some_and(|t| t <= now) => {
                    // Later copies go out spaced, so one burst of loss does not take them all.
                    *ack_at = (*copies > 0).then(|| now + FINAL_ACK_SPACING);
                    *copies = copies.saturating_sub(1);
                    let ack = StateAck {
                        cum: *count,
                        latest_seq: *latest_seq,
                        verified: true,
                        bitmap: Vec::new(),
                    };
                    Some(Msg::StateAck(ack).encode(self.session))
                }
                _ => None,
            },
        }?;
        self.stats.datagrams_out += 1;
        let mut bytes = bytes;
        self.seal(&mut bytes);
        Some(Transmit::new(self.cfg.host, bytes))
    }

    /// When the host was last heard from (any valid session datagram).
    pub fn last_heard(&self) -> Option<Instant> {
        self.last_heard
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<JoinEvent> {
        self.events.pop_front()
    }

    /// When `handle_timeout` or `poll_transmit` has work next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.queue.is_empty() || !self.out.is_empty() {
            return Some(self.started); // already due
        }
        let path = self.host_path.as_ref().map(|p| p.next);
        let silence = self.last_heard.unwrap_or(self.started) + self.cfg.timeout;
        match &self.phase {
            Phase::Hello => Some(self.next_hello.min(silence)),
            Phase::Receiving { rx, .. } => {
                Some(rx.poll_timeout().map_or(silence, |d| d.min(silence)))
            }
            Phase::Ready {
                ack_at, loading, ..
            } => [*ack_at, *loading].into_iter().flatten().min(),
            Phase::Done => None,
        }
        .into_iter()
        .chain(path)
        .min()
    }
}
