//! Chat: short text messages between the players and spectators of a session, in the lobby
//! and during play. Sans-IO like the rest of `session`: [`ChatLink`] is a joiner's end (in
//! its `Seat`), [`ChatRelay`] the server side's (in the `Endpoint`, so a direct host and
//! every `serve` room relay alike). Nothing here waits on the game: lockstep never holds a
//! frame for a chat datagram. It imports only `wire`, `wording`, lockstep's frame and slot
//! types and `msg`'s name rules: not the machines that hold it, nor anything above `session`.
//!
//! Every message goes to the session's server side, which relays it to everyone else in
//! the session (players and spectators with the start state), in one order it picks. The
//! relay keeps a line only until each recipient acknowledged it and logs nothing, so a
//! dedicated server never stores what its rooms say.
//!
//! # Wire
//! Kind `Chat` (0x0E), with the session header; tagged with the sender's session keys like
//! every datagram after the handshake, so nobody can speak in another's name.
//! ```text
//! offset size field
//!      8    1 op: 0 Say (joiner -> server side), 1 Line (server side -> joiner), 2 Ack
//! Say      9    4 stream id (the sender's, new for each seat)   13  4 seq
//!         17    4 frame the sender was at                        21  . text (UTF-8)
//! Line     9    4 stream id (the relay's to this joiner)        13  4 seq
//!         17    4 frame   21  1 sender's slot (16 and up: a spectator)
//!         22    1 name length n   23  n name   23+n  . text (UTF-8)
//! Ack      9    4 stream id acknowledged   13  4 next seq expected (cumulative)
//! ```
//! Each direction is its own reliable stream: numbered from 0, resent until acknowledged
//! (after twice the measured round trip), delivered in order exactly once (up to
//! [`AHEAD`] out-of-order messages are held). A stream id the receiver has not seen starts
//! a new stream (a player back from a lost connection has a new seat).
//!
//! # Limits
//! A message is at most [`MAX_CHARS`] printable characters: control characters, terminal
//! escape sequences and bidirectional overrides are removed wherever a message is decoded
//! ([`sanitize`]). A sender may say [`RATE_COUNT`] messages in [`RATE_WINDOW`]; more is
//! refused locally ([`ChatRefused::TooFast`]). The relay allows each sender a burst of
//! [`RELAY_BURST`] refilled at the same rate (room for resends that arrive bunched up); a
//! modified client's flood beyond that is acknowledged, dropped and counted
//! ([`ChatRelay::flood_dropped`]).

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use crate::lockstep::{Frame, PeerId, Slot, SpectatorId};
use crate::wire::{Dropped, Handled, Header, Kind, Transmit, WireError};

use super::msg::MAX_PLAYER_NAME;

/// Longest message, in characters (after [`sanitize`]).
pub const MAX_CHARS: usize = 200;
/// Messages a sender may say in [`RATE_WINDOW`].
pub const RATE_COUNT: usize = 5;
/// See [`RATE_COUNT`].
pub const RATE_WINDOW: Duration = Duration::from_secs(10);
/// Messages the relay takes from one sender at once before it drops a flood; refilled at
/// [`RATE_COUNT`] per [`RATE_WINDOW`].
pub const RELAY_BURST: f64 = 10.0;
/// Out-of-order messages a receiver holds for the one missing before them.
pub const AHEAD: u32 = 64;
/// Messages in flight on one stream; later ones wait for acknowledgements.
const WINDOW: usize = 16;
/// Lines queued for one recipient that does not acknowledge; the oldest go beyond this.
const MAX_QUEUE: usize = 256;
/// Resend time before a round trip was measured, and its bounds.
const RTO_INIT: Duration = Duration::from_millis(300);
const RTO_MIN: Duration = Duration::from_millis(60);
const RTO_MAX: Duration = Duration::from_secs(2);

const OP_SAY: u8 = 0;
const OP_LINE: u8 = 1;
const OP_ACK: u8 = 2;

/// Who said a line.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Speaker {
    /// Someone in the session, by slot: every line the relay hands on.
    In(Slot),
    /// This joiner itself while it watches: a spectator's `Welcome` does not say which
    /// spectator slot it has, so its own line (as `Participant::say` returns it, to show and
    /// record) names none. Never on the wire.
    OwnWatching,
}

impl Speaker {
    /// The host's own player (seat 0).
    pub const HOST: Speaker = Speaker::In(Slot::Player(PeerId(0)));

    /// A spectator said it.
    pub fn is_spectator(self) -> bool {
        match self {
            Speaker::In(slot) => slot.is_spectator(),
            Speaker::OwnWatching => true,
        }
    }

    /// The speaker's seat, if it has one.
    pub fn player(self) -> Option<PeerId> {
        match self {
            Speaker::In(slot) => slot.player(),
            Speaker::OwnWatching => None,
        }
    }

    /// The number a recording's `Chat` event and a `Line` carry: the slot's number, and for
    /// [`Speaker::OwnWatching`] the one a spectator's `Welcome` gives it (`0xff`).
    pub fn number(self) -> u8 {
        match self {
            Speaker::In(slot) => slot.number(),
            Speaker::OwnWatching => super::msg::SPECTATOR,
        }
    }

    /// The speaker a `Line`'s slot number names (16 and up: a spectator).
    fn from_number(n: u8) -> Speaker {
        Speaker::In(if n >= SpectatorId::FIRST {
            Slot::Spectator(SpectatorId(n))
        } else {
            Slot::Player(PeerId(n))
        })
    }
}

/// A message as everyone sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatLine {
    /// Who said it.
    pub from: Speaker,
    /// The sender's name.
    pub name: String,
    /// The session frame the sender was at when it sent it.
    pub frame: Frame,
    /// The text, sanitised.
    pub text: String,
}

impl ChatLine {
    /// Sent by a spectator.
    pub fn is_spectator(&self) -> bool {
        self.from.is_spectator()
    }
}

impl fmt::Display for ChatLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mark = if self.is_spectator() {
            " (spectator)"
        } else {
            ""
        };
        write!(f, "{}{mark}: {}", self.name, self.text)
    }
}

/// Why a message was not sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChatRefused {
    /// Over [`RATE_COUNT`] in [`RATE_WINDOW`]; the next may go after `wait`.
    TooFast {
        /// Until a message may go again.
        wait: Duration,
    },
    /// Nothing printable in it.
    Empty,
    /// Not in a session yet (still joining, or reconnecting).
    NotConnected,
}

impl fmt::Display for ChatRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChatRefused::TooFast { wait } => write!(
                f,
                "not sent: at most {RATE_COUNT} messages in {} s (wait {:.0} s)",
                RATE_WINDOW.as_secs(),
                wait.as_secs_f64().ceil()
            ),
            ChatRefused::Empty => write!(f, "not sent: nothing printable in it"),
            ChatRefused::NotConnected => write!(f, "not sent: not in a session now"),
        }
    }
}

/// `text` as a message may carry it: see [`crate::wording::one_line`], cut to
/// [`MAX_CHARS`] characters.
pub fn sanitize(text: &str) -> String {
    crate::wording::one_line(text, MAX_CHARS)
}

/// A chat datagram's body (`pub` for the framelock crate's chat tests, which forge some).
#[doc(hidden)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChatMsg {
    Say {
        stream: u32,
        seq: u32,
        frame: Frame,
        text: String,
    },
    Line {
        stream: u32,
        seq: u32,
        line: ChatLine,
    },
    Ack {
        stream: u32,
        next: u32,
    },
}

impl ChatMsg {
    /// The datagram, with the session header (untagged).
    pub fn encode(&self, session: u32) -> Vec<u8> {
        let mut out = Vec::new();
        Header {
            kind: Kind::Chat,
            session,
        }
        .write(&mut out);
        match self {
            ChatMsg::Say {
                stream,
                seq,
                frame,
                text,
            } => {
                out.push(OP_SAY);
                for v in [stream, seq, &frame.0] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out.extend_from_slice(text.as_bytes());
            }
            ChatMsg::Line { stream, seq, line } => {
                out.push(OP_LINE);
                for v in [stream, seq, &line.frame.0] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out.push(line.from.number());
                let name = super::msg::clip(&line.name, MAX_PLAYER_NAME);
                out.push(name.len() as u8);
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(line.text.as_bytes());
            }
            ChatMsg::Ack { stream, next } => {
                out.push(OP_ACK);
                out.extend_from_slice(&stream.to_le_bytes());
                out.extend_from_slice(&next.to_le_bytes());
            }
        }
        out
    }

    /// A chat datagram's body (after the header), its strings sanitised; `None` if it does
    /// not parse.
    pub fn decode(body: &[u8]) -> Option<ChatMsg> {
        let (&op, rest) = body.split_first()?;
        let u32_at = |i: usize| -> Option<u32> {
            Some(u32::from_le_bytes(rest.get(i..i + 4)?.try_into().ok()?))
        };
        // Bytes past a message's longest encoding are cut first: a long flood costs no
        // decoding.
        let text = |b: &[u8]| -> Option<String> {
            Some(sanitize(&String::from_utf8_lossy(
                &b[..b.len().min(MAX_CHARS * 4)],
            )))
        };
        match op {
            OP_SAY => Some(ChatMsg::Say {
                stream: u32_at(0)?,
                seq: u32_at(4)?,
                frame: Frame(u32_at(8)?),
                text: text(rest.get(12..)?)?,
            }),
            OP_LINE => {
                let from = Speaker::from_number(*rest.get(12)?);
                let n = usize::from(*rest.get(13)?);
                let name = rest.get(14..14 + n)?;
                Some(ChatMsg::Line {
                    stream: u32_at(0)?,
                    seq: u32_at(4)?,
                    line: ChatLine {
                        from,
                        name: super::msg::printable(&String::from_utf8_lossy(name)),
                        frame: Frame(u32_at(8)?),
                        text: text(rest.get(14 + n..)?)?,
                    },
                })
            }
            OP_ACK if rest.len() == 8 => Some(ChatMsg::Ack {
                stream: u32_at(0)?,
                next: u32_at(4)?,
            }),
            _ => None,
        }
    }
}

/// A chat body that does not parse.
fn malformed() -> Handled<'static> {
    Handled::Dropped(WireError::Malformed(Kind::Chat).into())
}

/// At most [`RATE_COUNT`] messages in any [`RATE_WINDOW`]: the sender's own limit.
#[derive(Debug, Default)]
pub struct RateWindow {
    sent: VecDeque<Instant>,
}

impl RateWindow {
    /// Takes a message at `now`, or says how long until one may go.
    pub fn take(&mut self, now: Instant) -> Result<(), ChatRefused> {
        while self
            .sent
            .front()
            .is_some_and(|&t| now.saturating_duration_since(t) >= RATE_WINDOW)
        {
            self.sent.pop_front();
        }
        if self.sent.len() >= RATE_COUNT {
            let wait = (self.sent[0] + RATE_WINDOW).saturating_duration_since(now);
            return Err(ChatRefused::TooFast { wait });
        }
        self.sent.push_back(now);
        Ok(())
    }
}

/// One direction's sending end: numbered items resent until acknowledged.
#[derive(Debug)]
struct Outbox<T> {
    stream: u32,
    next_seq: u32,
    /// (seq, item, when last sent, resent)
    unacked: VecDeque<(u32, T, Option<Instant>, bool)>,
    srtt: Option<Duration>,
    /// Items dropped because the queue was full.
    overflow: u64,
}

impl<T: Clone> Outbox<T> {
    fn new(stream: u32) -> Self {
        Outbox {
            stream,
            next_seq: 0,
            unacked: VecDeque::new(),
            srtt: None,
            overflow: 0,
        }
    }

    fn push(&mut self, item: T) {
        if self.unacked.len() >= MAX_QUEUE {
            self.unacked.pop_front();
            self.overflow += 1;
        }
        self.unacked.push_back((self.next_seq, item, None, false));
        self.next_seq = self.next_seq.wrapping_add(1);
    }

    /// Starts the stream over under `stream`: what is not acknowledged is sent again,
    /// numbered from 0.
    fn restart(&mut self, stream: u32) {
        self.stream = stream;
        self.next_seq = 0;
        for (seq, _, sent, resent) in &mut self.unacked {
            *seq = self.next_seq;
            *sent = None;
            *resent = false;
            self.next_seq += 1;
        }
    }

    fn rto(&self) -> Duration {
        self.srtt
            .map_or(RTO_INIT, |s| (s * 2).clamp(RTO_MIN, RTO_MAX))
    }

    fn handle_ack(&mut self, now: Instant, stream: u32, next: u32) {
        if stream != self.stream {
            return;
        }
        while let Some((seq, _, sent, resent)) = self.unacked.front() {
            // Sequence numbers below `next` (wrapping) are acknowledged.
            if next.wrapping_sub(*seq) == 0 || next.wrapping_sub(*seq) > u32::MAX / 2 {
                break;
            }
            if let (Some(at), false) = (sent, resent) {
                let sample = now.saturating_duration_since(*at);
                self.srtt = Some(self.srtt.map_or(sample, |s| (s * 7 + sample) / 8));
            }
            self.unacked.pop_front();
        }
    }

    /// The next item due (never sent, or not acknowledged within the resend time).
    fn poll(&mut self, now: Instant) -> Option<(u32, T)> {
        let rto = self.rto();
        for (seq, item, sent, resent) in self.unacked.iter_mut().take(WINDOW) {
            match sent {
                None => {}
                Some(t) if now >= *t + rto => *resent = true,
                Some(_) => continue,
            }
            *sent = Some(now);
            return Some((*seq, item.clone()));
        }
        None
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // Items never sent go out with the next `poll_transmit`, which follows every call
        // that can make one due.
        let rto = self.rto();
        self.unacked
            .iter()
            .take(WINDOW)
            .filter_map(|(_, _, sent, _)| sent.map(|t| t + rto))
            .min()
    }
}

/// One direction's receiving end: in order, exactly once.
#[derive(Debug)]
struct Inbox<T> {
    stream: Option<u32>,
    next: u32,
    ahead: BTreeMap<u32, T>,
    ack_due: bool,
}

impl<T> Default for Inbox<T> {
    fn default() -> Self {
        Inbox {
            stream: None,
            next: 0,
            ahead: BTreeMap::new(),
            ack_due: false,
        }
    }
}

impl<T> Inbox<T> {
    /// Takes item `seq` of `stream`; returns the items now deliverable, in order.
    fn handle(&mut self, stream: u32, seq: u32, item: T) -> Vec<T> {
        if self.stream != Some(stream) {
            *self = Inbox {
                stream: Some(stream),
                ..Inbox::default()
            };
        }
        self.ack_due = true;
        let ahead = seq.wrapping_sub(self.next);
        if ahead >= AHEAD {
            // Delivered already (a resend whose ack was lost), or too far ahead.
            return Vec::new();
        }
        self.ahead.insert(seq, item);
        let mut out = Vec::new();
        while let Some(item) = self.ahead.remove(&self.next) {
            out.push(item);
            self.next = self.next.wrapping_add(1);
        }
        out
    }

    fn poll_ack(&mut self) -> Option<ChatMsg> {
        let stream = self.stream.filter(|_| self.ack_due)?;
        self.ack_due = false;
        Some(ChatMsg::Ack {
            stream,
            next: self.next,
        })
    }
}

/// A message to say: (frame, text).
type Said = (Frame, String);

/// A joiner's end of the chat (see the module docs).
#[derive(Debug)]
pub struct ChatLink {
    up: Outbox<Said>,
    down: Inbox<ChatLine>,
    lines: VecDeque<ChatLine>,
}

impl ChatLink {
    /// `stream` names this seat's messages; a new seat (a reconnect) takes a new one.
    pub fn new(stream: u32) -> ChatLink {
        ChatLink {
            up: Outbox::new(stream),
            down: Inbox::default(),
            lines: VecDeque::new(),
        }
    }

    /// Queues `text` (sanitised already, within the rate) said at `frame`.
    pub fn say(&mut self, frame: Frame, text: String) {
        self.up.push((frame, text));
    }

    /// A chat datagram's body from the host (its tag checked): taken, or dropped if it does
    /// not parse or is a joiner's `Say`.
    pub fn handle(&mut self, now: Instant, body: &[u8]) -> Handled<'static> {
        match ChatMsg::decode(body) {
            Some(ChatMsg::Line { stream, seq, line }) => {
                self.lines.extend(self.down.handle(stream, seq, line));
                Handled::Taken
            }
            Some(ChatMsg::Ack { stream, next }) => {
                self.up.handle_ack(now, stream, next);
                Handled::Taken
            }
            Some(ChatMsg::Say { .. }) => Handled::Dropped(Dropped::Unexpected(Kind::Chat)),
            None => malformed(),
        }
    }

    /// The next datagram to send (untagged: the driver seals it for the host).
    pub fn poll_transmit(&mut self, now: Instant, session: u32) -> Option<Transmit<()>> {
        if let Some(ack) = self.down.poll_ack() {
            return Some(Transmit::new((), ack.encode(session)));
        }
        let (seq, (frame, text)) = self.up.poll(now)?;
        let msg = ChatMsg::Say {
            stream: self.up.stream,
            seq,
            frame,
            text,
        };
        Some(Transmit::new((), msg.encode(session)))
    }

    /// The next message from someone else, in the relay's order.
    pub fn poll_line(&mut self) -> Option<ChatLine> {
        self.lines.pop_front()
    }

    /// When a resend is due (acks go out with the next `poll_transmit`).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.up.poll_timeout()
    }

    /// Messages said and not yet acknowledged by the host.
    pub fn unacked(&self) -> usize {
        self.up.unacked.len()
    }
}

/// A sender's allowance at the relay: a token bucket.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn take(&mut self, now: Instant) -> bool {
        let rate = RATE_COUNT as f64 / RATE_WINDOW.as_secs_f64();
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + dt * rate).min(RELAY_BURST);
        self.at = self.at.max(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The relay's state for one joiner.
#[derive(Debug)]
struct RelayPeer {
    up: Inbox<Said>,
    down: Outbox<ChatLine>,
    bucket: Bucket,
}

/// The server side of the chat (see the module docs): in an `Endpoint`.
#[derive(Debug)]
pub struct ChatRelay {
    peers: BTreeMap<Slot, RelayPeer>,
    next_stream: u32,
    /// Lines for the in-process player (a direct host's), if there is one.
    local: Option<VecDeque<ChatLine>>,
    flood_dropped: u64,
    relayed: u64,
}

impl ChatRelay {
    /// `local_player`: keep lines for a player in this process (a direct host).
    pub fn new(session: u32, local_player: bool) -> ChatRelay {
        ChatRelay {
            peers: BTreeMap::new(),
            // Stream ids of this relay differ from an earlier run's to the same joiner.
            next_stream: session.wrapping_mul(0x9e37_79b9),
            local: local_player.then(VecDeque::new),
            flood_dropped: 0,
            relayed: 0,
        }
    }

    fn peer(&mut self, now: Instant, slot: Slot) -> &mut RelayPeer {
        let next_stream = &mut self.next_stream;
        self.peers.entry(slot).or_insert_with(|| {
            *next_stream = next_stream.wrapping_add(1);
            RelayPeer {
                up: Inbox::default(),
                down: Outbox::new(*next_stream),
                bucket: Bucket {
                    tokens: RELAY_BURST,
                    at: now,
                },
            }
        })
    }

    /// A chat datagram's body (its tag checked) from the joiner in `slot`, named `name`.
    /// `roster` is the slots of who is in the session to hear it, the sender's included.
    /// Taken, or dropped if it does not parse or is not a joiner's (a relay's `Line`).
    pub fn handle(
        &mut self,
        now: Instant,
        slot: Slot,
        name: &str,
        body: &[u8],
        roster: &[Slot],
    ) -> Handled<'static> {
        match ChatMsg::decode(body) {
            Some(ChatMsg::Say {
                stream,
                seq,
                frame,
                text,
            }) => {
                let mut restarted = false;
                let mut dropped = 0;
                let peer = self.peer(now, slot);
                if peer.up.stream.is_some_and(|s| s != stream) {
                    restarted = true;
                }
                let said = peer.up.handle(stream, seq, (frame, text));
                let mut lines = Vec::new();
                for (frame, text) in said {
                    if !peer.bucket.take(now) {
                        dropped += 1;
                        continue;
                    }
                    if text.is_empty() {
                        continue;
                    }
                    lines.push(ChatLine {
                        from: Speaker::In(slot),
                        name: name.to_string(),
                        frame,
                        text,
                    });
                }
                self.flood_dropped += dropped;
                if restarted {
                    // A new seat in that slot: what it was owed starts over on a new stream.
                    self.next_stream = self.next_stream.wrapping_add(1);
                    let stream = self.next_stream;
                    if let Some(p) = self.peers.get_mut(&slot) {
                        p.down.restart(stream);
                    }
                }
                for line in lines {
                    self.relay(now, line, roster);
                }
                Handled::Taken
            }
            Some(ChatMsg::Ack { stream, next }) => {
                if let Some(p) = self.peers.get_mut(&slot) {
                    p.down.handle_ack(now, stream, next);
                }
                Handled::Taken
            }
            Some(ChatMsg::Line { .. }) => Handled::Dropped(Dropped::Unexpected(Kind::Chat)),
            None => malformed(),
        }
    }

    /// Sends `line` to everyone in `roster` but its sender (and to the local player).
    pub fn relay(&mut self, now: Instant, line: ChatLine, roster: &[Slot]) {
        self.relayed += 1;
        for &slot in roster {
            if Speaker::In(slot) != line.from {
                self.peer(now, slot).down.push(line.clone());
            }
        }
        if let Some(local) = &mut self.local {
            if line.from != Speaker::HOST {
                local.push_back(line);
            }
        }
    }

    /// Forgets the joiners not in `roster` (gone, or back in the handshake).
    pub fn retain(&mut self, roster: &[Slot]) {
        self.peers.retain(|slot, _| roster.contains(slot));
    }

    /// The next datagram to send (untagged), to the slot it is for.
    pub fn poll_transmit(&mut self, now: Instant, session: u32) -> Option<Transmit<Slot>> {
        for (&slot, peer) in &mut self.peers {
            if let Some(ack) = peer.up.poll_ack() {
                return Some(Transmit::new(slot, ack.encode(session)));
            }
            if let Some((seq, line)) = peer.down.poll(now) {
                let msg = ChatMsg::Line {
                    stream: peer.down.stream,
                    seq,
                    line,
                };
                return Some(Transmit::new(slot, msg.encode(session)));
            }
        }
        None
    }

    /// The next line for the local player.
    pub fn poll_local(&mut self) -> Option<ChatLine> {
        self.local.as_mut()?.pop_front()
    }

    /// When a resend is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.peers
            .values()
            .filter_map(|p| p.down.poll_timeout())
            .min()
    }

    /// True while some joiner has chat state here (the roster is worth checking).
    pub fn is_active(&self) -> bool {
        !self.peers.is_empty()
    }

    /// Messages over a sender's allowance, dropped (a modified client's flood).
    pub fn flood_dropped(&self) -> u64 {
        self.flood_dropped
    }

    /// Messages relayed.
    pub fn relayed(&self) -> u64 {
        self.relayed
    }
}

#[cfg(test)]
mod tests;
