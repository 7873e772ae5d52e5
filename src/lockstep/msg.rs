//! The CTRL (client -> server) and UPDATE (server -> client) bodies.
//!
//! Both follow the 1-byte lockstep `wire::Header` (and, on a link, precede the tag). Little endian; `rel` = the low 7 bits of a
//! counter in one byte, or its low 15 bits in two (`codec::put_rel`, `codec::put_seq`),
//! expanded by the receiver to the value nearest to what it expects next. Only the newest
//! datagram's rel fields are read (run starts, acks): a late one may have been written
//! against what the receiver held a while ago.
//!
//! ```text
//! common head (2 bytes, + 1 flags, + 1-2 ack, + 2 ts, + 3 echo, + 2 irtt)
//!   u8  flags     0x01 ack, 0x02 echo, 0x04 run, 0x08 extras, 0x10 per kind (CTRL: irtt
//!                 follows; UPDATE: "your CTRLs are being lost"), 0x20 ts, 0x40 CTRL: age
//!                 follows, UPDATE: advance follows, 0x80 the run's first item is
//!                 delta-coded against the one before it (which the receiver holds: it
//!                 acknowledged it); other bits must be 0. Left out when it is 0x85 (ack,
//!                 run, 0x80: about three CTRLs in four), which the header's short bit says
//!   u16 seq       this datagram's 16-bit wrapping sequence number (per direction)
//!   rel ack       newest seq received from the other side, written against the ack that
//!                 the newest of our datagrams it acknowledged carried        [ack]
//!   u16 ts        sender's clock, milliseconds, wrapping (every 16th datagram, and every
//!                 one while the sender has no round trip yet)               [ts]
//!   u16 echo_ts   newest ts received from the other side, echoed once      [echo]
//!   u8  hold_ms   how long ago that ts arrived (RTT = now - echo_ts - hold) [echo]
//!   u16 irtt_ms   CTRL only: input round trip, the client's 99th percentile of the time
//!                 from pushing a sample to receiving the frame that carries it; sent when
//!                 it changes and every 16th datagram                              [0x10]
//! CTRL
//!   extras: u8 n (bits 0-4: 0..=16 checksums, 0x40: this client's frame loop stood still
//!           lately (see `pause`; repeated until acknowledged), 0x80: a pause request
//!           follows; never 0),
//!           n x (varint frame, u32 low half of the machine checksum),
//!           [u8 request: bits 1-7 its number (wrapping; the server acts once per number),
//!            bit 0: 1 pause, 0 resume; repeated until a CTRL carrying it is acknowledged]
//!   run (last: it takes the rest of the datagram, so it has no count):
//!           rel first sample index, u8 age_ms: milliseconds since the newest sample was
//!           pushed, 0xff if not known (not in this datagram, or too old) [0x40; without it
//!           the age is 0: a CTRL leaves as its newest sample is pushed], bits:
//!           delta-coded pads (the first against sample `first - 1` with 0x80, else in
//!           full; then per sample as in `codec`), the last byte padded with 1 bits
//! UPDATE
//!   i8  advance   receiver's phase in 1/16 frames (> 0: its inputs arrive early, slow
//!                 down); when it changes and every 16th datagram                  [0x40]
//!   u8  extras    bits 0-5: notices after the run (0..=32), 0x40 lead follows, 0x80 mask
//!                 follows; never 0                                               [0x08]
//!   u8  lead      receiver's sample-to-frame offset at the end of the run; sent until a
//!                 datagram carrying its current value is acknowledged          [extras]
//!   u8  mask      players carried (others are neutral); without it, every slot of the
//!                 session. Sent when it makes the datagram smaller             [extras]
//!   run:    rel from, varint count (next keyframe = from + count), bits: frame-major
//!           delta-coded pads of the carried players (the first frame against frame
//!           `from - 1` with 0x80, else in full)
//!   notices: n x (u8 kind<<4 | peer, u32 frame); kind 1 = left, 2 = desync, 3 = joined
//!            (then u8 len + that many bytes of the player's name, at most 16), 4 = paused
//!            by peer at frame (no frame from it on is published until resumed), 5 =
//!            resumed by peer at frame, 6 = peer's pause request refused (the u32 is
//!            reason << 24 | seconds until it would be granted; reason 1 = too many pauses,
//!            2 = only the player who paused may resume yet)
//! ```
//! Fields that rarely change ride only in some datagrams: the budget of 2.5 KB/s per direction
//! (UDP/IP header and tag included) buys more datagrams, and so faster recovery from loss,
//! the smaller each one is; on a lossy link each side would send every frame if the budget
//! allowed. Mean sizes a joiner sends and receives, 2 players, 100 ms RTT, ±20 ms each way,
//! 5% loss, K = 2, bots pressing buttons, a checksum every 60 frames (the simulator,
//! `tests::bench_datagram_sizes`): CTRL 9.4 bytes, UPDATE 13.4. That is what makes a CTRL
//! per frame nearly fit the budget with its 32 bytes of UDP/IP header and tag (60 x 41.4 =
//! 2484 B/s): 59 of the 60 fit the default 2450 B/s, where every CTRL left out costs a
//! sample a frame of waiting, and at 100 ms, ±20 ms each way, enough of those cost the lead
//! a frame. Hence a one-byte ack, no count for the CTRL's sample run, no flags byte
//! when it holds its usual value, and a timestamp in every 16th datagram only.
//!
//! Size cap: no datagram exceeds `wire::MAX_DATAGRAM` (1200). A CTRL holds one player's
//! samples: even changing every frame (at most 18 bits), more than 500 fit, far beyond 2 s.
//! An UPDATE holds every player's: 2 s of 8 players changing every frame is 8 x 120 x 18
//! bits = 2.2 KB, so the server cuts the range into up to 4 consecutive datagrams per round
//! (about 60 such frames each), each with its own sequence number. A client ignores a
//! segment that does not continue the frames it holds, so its ack never claims frames it
//! lacks; it comes again.
//!
//! Decoding never panics: every read is bounds-checked, counts are capped, and unknown flags
//! are rejected, as are trailing bytes after an UPDATE. A CTRL's run has no count, so a CTRL
//! cut at the end of a sample reads as the samples before the cut (all of them sent by the
//! client; UDP delivers a datagram whole or not at all, so this takes a forger).

use crate::input::{Inputs, Pad, MAX_PLAYERS};
use std::ops::RangeInclusive;

use crate::wire::{Header, Kind, WireError, LOCKSTEP_HEADER_LEN, LOCKSTEP_SHORT, MAX_DATAGRAM};

use super::codec::{self, put_rel, put_seq, put_u16, put_u32, put_varint, Reader};
use super::frame::{seq_newer, Frame, PeerId};

const F_ACK: u8 = 0x01;
const F_ECHO: u8 = 0x02;
const F_RUN: u8 = 0x04;
const F_EXTRAS: u8 = 0x08;
/// CTRL: carries the input round trip. UPDATE: the server sees this client's CTRLs lost.
const F_KIND: u8 = 0x10;
const F_TS: u8 = 0x20;
/// UPDATE: the advance follows the head.
const F_ADVANCE: u8 = 0x40;
/// CTRL: the newest sample's age follows the run's count.
const F_AGE: u8 = 0x40;
/// The run's first item is delta-coded against the one before it.
const F_BASE: u8 = 0x80;
/// CTRL age byte: the newest sample's age is not known (not in this datagram, or 255 ms or
/// more old).
const AGE_UNKNOWN: u8 = 0xff;
/// The flags most datagrams carry (an ack, a run delta-coded against what the receiver
/// holds, nothing else): a datagram with these leaves the flags byte out and says so in its
/// header (`wire::LOCKSTEP_SHORT`).
const USUAL_FLAGS: u8 = F_ACK | F_RUN | F_BASE;
/// UPDATE extras byte: the notice count, and which fields follow it.
const X_NOTICES: u8 = 0x3f;
const X_LEAD: u8 = 0x40;
const X_MASK: u8 = 0x80;
/// CTRL extras byte: the checksum count, and whether a pause request follows them.
const X_CHECKSUMS: u8 = 0x1f;
const X_PAUSE: u8 = 0x80;
const X_STOPPED: u8 = 0x40;

/// Every this many datagrams carries the sender's timestamp: at 50-60 datagrams a second,
/// 3-4 RTT samples, plenty for the smoothed RTT (time sync, timeouts, the stats). The lead
/// does not depend on it: it follows the input round trip, which the client measures from
/// its own samples. Every 4th would cost 0.8 bytes per CTRL.
pub const TS_EVERY: u16 = 16;
/// Slowly changing fields (input round trip, advance) go out when they change and at least
/// every this many datagrams, in case the one that changed them was lost.
pub const REFRESH_EVERY: u16 = 16;

/// What a side keeps to write its acks short and to read the other side's
/// (`codec::put_seq`); the client and the server each keep one per link.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckRefs {
    /// The ack carried by the newest of our datagrams the other side acknowledged: it holds
    /// that one or a newer one.
    held: Option<u16>,
    /// The newest ack the other side sent us.
    newest_in: Option<u16>,
}

impl AckRefs {
    /// Takes `ack` from the other side's newest datagram.
    pub fn received(&mut self, ack: u16) {
        if self.newest_in.is_none_or(|a| seq_newer(ack, a)) {
            self.newest_in = Some(ack);
        }
    }

    /// The other side acknowledged our datagram that carried ack `carried`.
    pub fn acknowledged(&mut self, carried: Option<u16>) {
        self.held = carried.or(self.held);
    }

    /// What the other side holds of our acks, for `encode_ctrl` / `encode_update`.
    pub fn held(&self) -> Option<u16> {
        self.held
    }

    /// What to read the other side's acks against (`decode_ctrl` / `decode_update`): the
    /// newest it sent, or before any, the newest sequence number we sent (`next_seq - 1`).
    pub fn reference(&self, next_seq: u16) -> u16 {
        self.newest_in.unwrap_or(next_seq.wrapping_sub(1))
    }
}

/// `value` if datagram `seq` should carry it: it differs from `sent` (what went out last,
/// updated here), or `seq` is a multiple of `REFRESH_EVERY`.
pub fn refresh<T: Copy + PartialEq>(value: T, sent: &mut Option<T>, seq: u16) -> Option<T> {
    if *sent == Some(value) && !seq.is_multiple_of(REFRESH_EVERY) {
        return None;
    }
    *sent = Some(value);
    Some(value)
}

/// Most samples or frames one datagram carries; more would not fit 1200 bytes anyway
/// except for long runs of unchanged input.
pub const MAX_RUN: usize = 4096;
pub const MAX_CHECKSUMS: usize = 16;
pub const MAX_NOTICES: usize = 32;
/// Bytes a CTRL needs besides its sample bits: header, head (12 with every field), run
/// header (rel + varint + age), checksum list, pause request.
pub const CTRL_OVERHEAD: usize = LOCKSTEP_HEADER_LEN + 12 + 6 + 1 + MAX_CHECKSUMS * 9 + 1;
/// Bytes an UPDATE needs besides its input bits: header, head (10), advance, extras byte,
/// lead, mask, run header (rel + varint), notice list.
pub const UPDATE_OVERHEAD: usize =
    LOCKSTEP_HEADER_LEN + 10 + 1 + 3 + 5 + MAX_NOTICES * 5 + MAX_NAMED_NOTICES * (1 + NAME_LEN);
/// `Joined` notices (which carry a name of up to `NAME_LEN` bytes) per UPDATE at most.
pub const MAX_NAMED_NOTICES: usize = 2;
/// Bytes of a player's name a `Joined` notice carries at most.
pub const NAME_LEN: usize = 16;
/// Input bits one datagram may carry.
pub const CTRL_BIT_BUDGET: usize = (MAX_DATAGRAM - CTRL_OVERHEAD) * 8;
pub const UPDATE_BIT_BUDGET: usize = (MAX_DATAGRAM - UPDATE_OVERHEAD) * 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Echo {
    pub ts: u16,
    pub hold_ms: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub seq: u16,
    pub ack: Option<u16>,
    pub ts: Option<u16>,
    pub echo: Option<Echo>,
}

/// Sequence numbers a datagram may be ahead of the newest one received. A sender keeps at
/// most 1024 datagrams unacknowledged, so anything further is no datagram it sent; trusted,
/// it would make every genuine datagram after it look old, and be ignored (its samples, its
/// frames, its acks), until the sender's count caught up: minutes of a frozen session.
pub const MAX_SEQ_JUMP: u16 = 1024;

impl Head {
    /// Whether the peer can have sent this head: its sequence number at most
    /// `MAX_SEQ_JUMP` past `recv` (the newest received), and its ack, if any, of a datagram
    /// we sent (`sent_any`, the newest being `next_send - 1`). An ack of one never sent
    /// would become the reference later acks are read against, and they would read wrong.
    pub fn plausible(&self, recv: Option<u16>, next_send: u16, sent_any: bool) -> bool {
        let seq_ok = recv
            .is_none_or(|r| self.seq.wrapping_sub(r) <= MAX_SEQ_JUMP || !seq_newer(self.seq, r));
        let ack_ok = self
            .ack
            .is_none_or(|a| sent_any && !seq_newer(a, next_send.wrapping_sub(1)));
        seq_ok && ack_ok
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleRun {
    /// Index of `pads[0]` in the client's sample stream.
    pub first: u32,
    /// Sample `first - 1`, which the server holds (it was acknowledged): `pads[0]` is
    /// delta-coded against it. `None`: written in full.
    pub base: Option<Pad>,
    pub pads: Vec<Pad>,
    /// Milliseconds between pushing the newest sample and sending this datagram; `None` if
    /// the newest sample is not in this datagram.
    pub age_ms: Option<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ctrl {
    pub head: Head,
    /// Input round trip in milliseconds (see the module doc).
    pub input_rtt_ms: Option<u16>,
    pub samples: Option<SampleRun>,
    pub checksums: Vec<(Frame, u64)>,
    /// A player's request to pause or resume the game (see `PauseRequest`).
    pub pause: Option<PauseRequest>,
    /// The client's frame loop stood still lately (see `pause`).
    pub stopped: bool,
}

/// A player asks the server to pause (or resume) the game for everyone. Numbered, so a
/// request repeated until acknowledged is acted on once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PauseRequest {
    /// 0..=127, wrapping.
    pub id: u8,
    /// Pause (true) or resume (false).
    pub pause: bool,
}

/// Why the server refused a pause request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PauseRefusal {
    /// The player paused too often lately; it may again in `wait_secs`.
    TooMany {
        /// Seconds until a pause would be granted.
        wait_secs: u32,
    },
    /// Another player paused: only that one may resume for `wait_secs` more.
    NotYours {
        /// Seconds until anyone may resume.
        wait_secs: u32,
    },
}

impl PauseRefusal {
    const SECS: u32 = 0x00ff_ffff;

    fn to_wire(self) -> u32 {
        match self {
            PauseRefusal::TooMany { wait_secs } => 1 << 24 | wait_secs.min(Self::SECS),
            PauseRefusal::NotYours { wait_secs } => 2 << 24 | wait_secs.min(Self::SECS),
        }
    }

    fn from_wire(v: u32) -> Option<PauseRefusal> {
        let wait_secs = v & Self::SECS;
        match v >> 24 {
            1 => Some(PauseRefusal::TooMany { wait_secs }),
            2 => Some(PauseRefusal::NotYours { wait_secs }),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameRun {
    pub from: Frame,
    /// The inputs of frame `from - 1`, which the receiver holds: the first frame is
    /// delta-coded against them. `None`: the first frame is written in full.
    pub base: Option<Inputs>,
    pub frames: Vec<Inputs>,
    /// The receiver's own lead at the end of the run, in frames (`None`: as in the last
    /// run that carried it).
    pub lead: Option<u8>,
}

impl FrameRun {
    /// The next keyframe: the first frame this run does not cover.
    pub fn to(&self) -> Frame {
        self.from.plus(self.frames.len() as u32)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// `peer` gets neutral input from `from` on.
    Left { peer: PeerId, from: Frame },
    /// `peer`'s checksum for `frame` differed from the reference player's.
    Desync { peer: PeerId, frame: Frame },
    /// `peer` (a late joiner, or a player back after a drop) plays from `from` on.
    Joined {
        peer: PeerId,
        from: Frame,
        name: NoticeName,
    },
    /// `peer` paused the game: frames from `at` on wait until it is resumed.
    Paused { peer: PeerId, at: Frame },
    /// `peer` resumed the game paused at `at`.
    Resumed { peer: PeerId, at: Frame },
    /// `peer`'s pause request was refused (sent to that player only).
    PauseRefused { peer: PeerId, why: PauseRefusal },
}

/// A player's name as a notice carries it: up to `NAME_LEN` bytes of UTF-8.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct NoticeName {
    len: u8,
    bytes: [u8; NAME_LEN],
}

impl NoticeName {
    /// `name`, cut to `NAME_LEN` bytes at a character boundary.
    pub fn new(name: &str) -> NoticeName {
        let mut end = name.len().min(NAME_LEN);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0; NAME_LEN];
        bytes[..end].copy_from_slice(&name.as_bytes()[..end]);
        NoticeName {
            len: end as u8,
            bytes,
        }
    }

    fn from_wire(raw: &[u8]) -> Option<NoticeName> {
        let text = std::str::from_utf8(raw).ok()?;
        (raw.len() <= NAME_LEN).then(|| NoticeName::new(text))
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl std::fmt::Debug for NoticeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    pub head: Head,
    /// The server sees gaps in this client's CTRL sequence numbers.
    pub up_lossy: bool,
    /// Receiver's phase advantage in 1/16 frames (`None`: unchanged).
    pub advance: Option<i8>,
    pub frames: Option<FrameRun>,
    pub notices: Vec<Notice>,
}

fn malformed_ctrl() -> WireError {
    WireError::Malformed(Kind::Ctrl)
}

fn malformed_update() -> WireError {
    WireError::Malformed(Kind::Update)
}

/// Writes the head; `irtt` (CTRL) sets the per-kind flag and its field; `body` are the flags
/// of what the caller writes after the head.
fn put_head(out: &mut Vec<u8>, head: &Head, ack_held: Option<u16>, irtt: Option<u16>, body: u8) {
    let mut flags = body;
    if irtt.is_some() {
        flags |= F_KIND;
    }
    if head.ack.is_some() {
        flags |= F_ACK;
    }
    if head.echo.is_some() {
        flags |= F_ECHO;
    }
    if head.ts.is_some() {
        flags |= F_TS;
    }
    out.push(flags);
    put_u16(out, head.seq);
    if let Some(a) = head.ack {
        put_seq(out, a, ack_held);
    }
    if let Some(ts) = head.ts {
        put_u16(out, ts);
    }
    if let Some(e) = head.echo {
        put_u16(out, e.ts);
        out.push(e.hold_ms);
    }
    if let Some(v) = irtt {
        put_u16(out, v);
    }
}

/// `f` if `on`, else no flag.
fn flag(on: bool, f: u8) -> u8 {
    if on {
        f
    } else {
        0
    }
}

/// Leaves the flags byte out of an encoded datagram if it holds `USUAL_FLAGS`.
fn shorten(out: &mut Vec<u8>) {
    if out[LOCKSTEP_HEADER_LEN] == USUAL_FLAGS {
        out.remove(LOCKSTEP_HEADER_LEN);
        out[0] |= LOCKSTEP_SHORT;
    }
}

/// Reads the head; returns it with the flags and, for a CTRL (`ctrl`), the irtt field.
/// `short`: the flags byte is left out (`wire::is_short`). `ack_ref`: the newest ack
/// received from the sender (else our newest sequence number).
fn read_head(
    r: &mut Reader<'_>,
    ctrl: bool,
    short: bool,
    ack_ref: u16,
) -> Option<(Head, u8, Option<u16>)> {
    let flags = if short { USUAL_FLAGS } else { r.u8()? };
    let known = F_ACK | F_ECHO | F_RUN | F_EXTRAS | F_KIND | F_TS | F_BASE;
    let known = known | if ctrl { F_AGE } else { F_ADVANCE };
    if flags & !known != 0 {
        return None;
    }
    let seq = r.u16()?;
    let ack = if flags & F_ACK != 0 {
        Some(r.seq(ack_ref)?)
    } else {
        None
    };
    let ts = if flags & F_TS != 0 {
        Some(r.u16()?)
    } else {
        None
    };
    let echo = if flags & F_ECHO != 0 {
        Some(Echo {
            ts: r.u16()?,
            hold_ms: r.u8()?,
        })
    } else {
        None
    };
    let irtt = if ctrl && flags & F_KIND != 0 {
        Some(r.u16()?)
    } else {
        None
    };
    let head = Head { seq, ack, ts, echo };
    Some((head, flags, irtt))
}

/// The age byte a CTRL's run carries: none for 0 ms (a CTRL usually leaves the moment its
/// newest sample is pushed), `AGE_UNKNOWN` when the age is not known or does not fit.
fn age_byte(age_ms: Option<u8>) -> Option<u8> {
    match age_ms {
        Some(0) => None,
        Some(a) if a != AGE_UNKNOWN => Some(a),
        _ => Some(AGE_UNKNOWN),
    }
}

/// Encodes a CTRL datagram (header included). `refs`: the sample indices the server may
/// expect next (from the first unacknowledged to the end of everything sent so far), which
/// decide how short the run's first index can be written; `ack_held`: the ack carried by the
/// newest CTRL the server acknowledged (it holds that one or a newer), which decides how
/// short the ack can be.
pub fn encode_ctrl(
    session: u32,
    c: &Ctrl,
    refs: RangeInclusive<u32>,
    ack_held: Option<u16>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    Header {
        kind: Kind::Ctrl,
        session,
    }
    .write(&mut out);
    let run = c.samples.as_ref().filter(|s| !s.pads.is_empty());
    let checksums = &c.checksums[..c.checksums.len().min(MAX_CHECKSUMS)];
    let age = run.and_then(|r| age_byte(r.age_ms));
    let extras = checksums.len() as u8
        | if c.pause.is_some() { X_PAUSE } else { 0 }
        | if c.stopped { X_STOPPED } else { 0 };
    let body = flag(extras != 0, F_EXTRAS)
        | run.map_or(0, |r| {
            F_RUN | flag(r.base.is_some(), F_BASE) | flag(age.is_some(), F_AGE)
        });
    put_head(&mut out, &c.head, ack_held, c.input_rtt_ms, body);
    if extras != 0 {
        out.push(extras);
        for (f, v) in checksums {
            put_varint(&mut out, f.0);
            // The low half: a desync still shows at the first check with odds of 1 in 4e9
            // against, and a checksum rides in every CTRL until acknowledged.
            put_u32(&mut out, *v as u32);
        }
        if let Some(p) = c.pause {
            out.push((p.id & 0x7f) << 1 | u8::from(p.pause));
        }
    }
    // Last: the run takes the rest of the datagram, so it needs no count.
    if let Some(s) = run {
        put_rel(&mut out, s.first, refs);
        out.extend(age);
        out.extend(codec::encode_pads(s.pads.iter().copied(), s.base));
    }
    shorten(&mut out);
    out
}

/// Decodes a CTRL body; `sample_ref` is the next sample index the server expects, `ack_ref`
/// the newest ack the client sent it (before any, the newest UPDATE sequence number sent),
/// and `held` gives a sample it holds (the base of a delta-coded first sample).
pub fn decode_ctrl(
    body: &[u8],
    short: bool,
    sample_ref: u32,
    ack_ref: u16,
    held: impl Fn(u32) -> Option<Pad>,
) -> Result<Ctrl, WireError> {
    let mut r = Reader::new(body);
    let (head, flags, input_rtt_ms) =
        read_head(&mut r, true, short, ack_ref).ok_or_else(malformed_ctrl)?;
    let (has_run, has_extras) = (flags & F_RUN != 0, flags & F_EXTRAS != 0);
    if flags & (F_BASE | F_AGE) != 0 && !has_run {
        return Err(malformed_ctrl());
    }
    let mut checksums = Vec::new();
    let mut pause = None;
    let mut stopped = false;
    if has_extras {
        let x = r.u8().ok_or_else(malformed_ctrl)?;
        let n = usize::from(x & X_CHECKSUMS);
        if x == 0 || x & !(X_CHECKSUMS | X_PAUSE | X_STOPPED) != 0 || n > MAX_CHECKSUMS {
            return Err(malformed_ctrl());
        }
        stopped = x & X_STOPPED != 0;
        for _ in 0..n {
            let f = r.varint().ok_or_else(malformed_ctrl)?;
            let v = r.u32().ok_or_else(malformed_ctrl)?;
            checksums.push((Frame(f), u64::from(v)));
        }
        if x & X_PAUSE != 0 {
            let b = r.u8().ok_or_else(malformed_ctrl)?;
            pause = Some(PauseRequest {
                id: b >> 1,
                pause: b & 1 != 0,
            });
        }
    }
    let samples = if has_run {
        let first = r.rel(sample_ref).ok_or_else(malformed_ctrl)?;
        let age_ms = if flags & F_AGE != 0 {
            Some(r.u8().ok_or_else(malformed_ctrl)?).filter(|&a| a != AGE_UNKNOWN)
        } else {
            Some(0)
        };
        let base = if flags & F_BASE != 0 {
            let before = first.checked_sub(1).ok_or_else(malformed_ctrl)?;
            Some(held(before).ok_or(WireError::MissingBase(Kind::Ctrl, before))?)
        } else {
            None
        };
        let pads = codec::decode_pads(r.remaining(), base, 2 * MAX_RUN)
            .filter(|p| first.checked_add(p.len() as u32).is_some())
            .ok_or_else(malformed_ctrl)?;
        r.advance(r.remaining().len()).ok_or_else(malformed_ctrl)?;
        Some(SampleRun {
            first,
            base,
            pads,
            age_ms,
        })
    } else {
        None
    };
    if !r.is_empty() {
        return Err(malformed_ctrl());
    }
    Ok(Ctrl {
        head,
        input_rtt_ms,
        samples,
        checksums,
        pause,
        stopped,
    })
}

/// Players with a non-neutral pad somewhere in `frames`.
pub fn active_mask(frames: &[Inputs]) -> u8 {
    frames.iter().fold(0u8, |m, f| {
        f.iter()
            .enumerate()
            .filter(|(_, p)| **p != Pad::NEUTRAL)
            .fold(m, |m, (i, _)| m | (1 << i))
    })
}

/// Every slot of a session of `players`: the players an UPDATE carries unless it says.
pub fn session_mask(players: u8) -> u8 {
    ((1u16 << players.min(8)) - 1) as u8
}

/// Encodes an UPDATE datagram (header included) for a session of `players`. `refs`: the
/// frames the client may expect next (from the first it has not acknowledged to the end of
/// everything sent to it so far), which decide how short the run's start can be written;
/// `ack_held` as for `encode_ctrl`.
pub fn encode_update(
    session: u32,
    players: u8,
    u: &Update,
    refs: RangeInclusive<u32>,
    ack_held: Option<u16>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    Header {
        kind: Kind::Update,
        session,
    }
    .write(&mut out);
    let run = u.frames.as_ref().filter(|f| !f.frames.is_empty());
    let notices = &u.notices[..u.notices.len().min(MAX_NOTICES)];
    // The session's players, unless naming only the active ones is smaller (an idle or
    // departed player costs a bit per frame; naming the mask costs a byte).
    let (mask, bits) = match run {
        Some(fr) => {
            let all = session_mask(players);
            let bits = codec::encode_frames(&fr.frames, all, fr.base.as_ref());
            let active = active_mask(&fr.frames) & all;
            // Every player active (the usual case): one encoding, no choice to make.
            let fewer = (active != all)
                .then(|| codec::encode_frames(&fr.frames, active, fr.base.as_ref()))
                .filter(|fewer| fewer.len() + 1 < bits.len());
            match fewer {
                Some(fewer) => (Some(active), fewer),
                None => (None, bits),
            }
        }
        None => (None, Vec::new()),
    };
    let lead = run.and_then(|r| r.lead);
    let extras = notices.len() as u8
        | if lead.is_some() { X_LEAD } else { 0 }
        | if mask.is_some() { X_MASK } else { 0 };
    let body = flag(extras != 0, F_EXTRAS)
        | flag(u.up_lossy, F_KIND)
        | flag(u.advance.is_some(), F_ADVANCE)
        | run.map_or(0, |r| F_RUN | flag(r.base.is_some(), F_BASE));
    put_head(&mut out, &u.head, ack_held, None, body);
    if let Some(a) = u.advance {
        out.push(a as u8);
    }
    if extras != 0 {
        out.push(extras);
        out.extend(lead);
        out.extend(mask);
    }
    if let Some(fr) = run {
        put_rel(&mut out, fr.from.0, refs);
        put_varint(&mut out, fr.frames.len() as u32);
        out.extend(bits);
    }
    for n in notices {
        let (kind, peer, frame) = match *n {
            Notice::Left { peer, from } => (1u8, peer, from),
            Notice::Desync { peer, frame } => (2u8, peer, frame),
            Notice::Joined { peer, from, .. } => (3u8, peer, from),
            Notice::Paused { peer, at } => (4u8, peer, at),
            Notice::Resumed { peer, at } => (5u8, peer, at),
            Notice::PauseRefused { peer, why } => (6u8, peer, Frame(why.to_wire())),
        };
        out.push(kind << 4 | peer.0);
        put_u32(&mut out, frame.0);
        if let Notice::Joined { name, .. } = n {
            out.push(name.len);
            out.extend_from_slice(&name.bytes[..usize::from(name.len)]);
        }
    }
    shorten(&mut out);
    out
}

/// Decodes an UPDATE body for a session of `players`; `frame_ref` is the next frame the
/// client does not know yet, `ack_ref` as for `decode_ctrl`, and `held` gives the inputs of
/// a frame it holds (the base of a delta-coded first frame).
pub fn decode_update(
    body: &[u8],
    short: bool,
    frame_ref: u32,
    ack_ref: u16,
    players: u8,
    held: impl Fn(Frame) -> Option<Inputs>,
) -> Result<Update, WireError> {
    let mut r = Reader::new(body);
    let (head, flags, _) = read_head(&mut r, false, short, ack_ref).ok_or_else(malformed_update)?;
    let has_run = flags & F_RUN != 0;
    if flags & F_BASE != 0 && !has_run {
        return Err(malformed_update());
    }
    let advance = if flags & F_ADVANCE != 0 {
        Some(r.u8().ok_or_else(malformed_update)? as i8)
    } else {
        None
    };
    let extras = if flags & F_EXTRAS != 0 {
        Some(r.u8().ok_or_else(malformed_update)?).filter(|x| *x != 0)
    } else {
        Some(0)
    }
    .ok_or_else(malformed_update)?;
    let n_notices = usize::from(extras & X_NOTICES);
    if n_notices > MAX_NOTICES {
        return Err(malformed_update());
    }
    let lead = if extras & X_LEAD != 0 {
        Some(r.u8().ok_or_else(malformed_update)?)
    } else {
        None
    };
    let all = session_mask(players);
    let mask = if extras & X_MASK != 0 {
        let m = r.u8().ok_or_else(malformed_update)?;
        if m & !all != 0 {
            return Err(malformed_update());
        }
        m
    } else {
        all
    };
    if (lead.is_some() || extras & X_MASK != 0) && !has_run {
        return Err(malformed_update());
    }
    let frames = if has_run {
        let from = r.rel(frame_ref).ok_or_else(malformed_update)?;
        let count = r.varint().ok_or_else(malformed_update)? as usize;
        if count == 0 || count > 2 * MAX_RUN || from.checked_add(count as u32).is_none() {
            return Err(malformed_update());
        }
        let base = if flags & F_BASE != 0 {
            let before = from.checked_sub(1).ok_or_else(malformed_update)?;
            Some(held(Frame(before)).ok_or(WireError::MissingBase(Kind::Update, before))?)
        } else {
            None
        };
        let (frames, used) = codec::decode_frames(r.remaining(), count, mask, base.as_ref())
            .ok_or_else(malformed_update)?;
        r.advance(used).ok_or_else(malformed_update)?;
        Some(FrameRun {
            from: Frame(from),
            base,
            frames,
            lead,
        })
    } else {
        None
    };
    let mut notices = Vec::new();
    for _ in 0..n_notices {
        let tag = r.u8().ok_or_else(malformed_update)?;
        let frame = Frame(r.u32().ok_or_else(malformed_update)?);
        let peer = PeerId::new(tag & 0x0f).ok_or_else(malformed_update)?;
        notices.push(match tag >> 4 {
            1 => Notice::Left { peer, from: frame },
            2 => Notice::Desync { peer, frame },
            3 => {
                let len = r.u8().ok_or_else(malformed_update)?;
                let raw = r.bytes(usize::from(len)).ok_or_else(malformed_update)?;
                let name = NoticeName::from_wire(raw).ok_or_else(malformed_update)?;
                Notice::Joined {
                    peer,
                    from: frame,
                    name,
                }
            }
            4 => Notice::Paused { peer, at: frame },
            5 => Notice::Resumed { peer, at: frame },
            6 => Notice::PauseRefused {
                peer,
                why: PauseRefusal::from_wire(frame.0).ok_or_else(malformed_update)?,
            },
            _ => return Err(malformed_update()),
        });
    }
    if !r.is_empty() {
        return Err(malformed_update());
    }
    Ok(Update {
        head,
        up_lossy: flags & F_KIND != 0,
        advance,
        frames,
        notices,
    })
}

/// Most frames of `frames` whose masked, frame-major bits fit `budget_bits` (exact count).
pub fn frames_fitting(frames: &[Inputs], budget_bits: usize) -> usize {
    let mut mask = 0u8;
    // Bits each player's stream would cost if carried.
    let mut cost = [0usize; MAX_PLAYERS];
    for (i, f) in frames.iter().enumerate() {
        for p in 0..MAX_PLAYERS {
            cost[p] += if i == 0 {
                16
            } else {
                codec::delta_bits(frames[i - 1][p], f[p])
            };
        }
        mask |= active_mask(std::slice::from_ref(f));
        let bits: usize = (0..MAX_PLAYERS)
            .filter(|p| mask & (1 << p) != 0)
            .map(|p| cost[p])
            .sum();
        if bits > budget_bits || i >= MAX_RUN {
            return i;
        }
    }
    frames.len()
}

/// Most samples of `pads` whose delta-coded bits fit `budget_bits`.
pub fn pads_fitting(pads: impl IntoIterator<Item = Pad>, budget_bits: usize) -> usize {
    let mut bits = 0usize;
    let mut prev: Option<Pad> = None;
    let mut n = 0;
    for p in pads {
        bits += prev.map_or(16, |pr| codec::delta_bits(pr, p));
        if bits > budget_bits || n >= MAX_RUN {
            break;
        }
        prev = Some(p);
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    const H: usize = LOCKSTEP_HEADER_LEN;

    /// What a server holding samples up to 69_999 answers for a base.
    fn held_sample(i: u32) -> Option<Pad> {
        (i == 69_999).then_some(Pad(0x40))
    }

    fn ctrl() -> Ctrl {
        Ctrl {
            head: Head {
                seq: 0xfffe,
                ack: Some(7),
                ts: Some(1234),
                echo: Some(Echo {
                    ts: 1200,
                    hold_ms: 9,
                }),
            },
            input_rtt_ms: Some(140),
            samples: Some(SampleRun {
                first: 70_000,
                base: Some(Pad(0x40)),
                pads: [0u16, 0, 5, 5, 5, 0x8000, 0]
                    .iter()
                    .map(|&v| Pad(v))
                    .collect(),
                age_ms: Some(3),
            }),
            checksums: vec![(Frame(600), 0x0bad_f00d), (Frame(660), 1)],
            pause: None,
            stopped: false,
        }
    }

    /// The frame before `update()`'s run, which its first frame is delta-coded against.
    fn base() -> Inputs {
        let mut b = [Pad::NEUTRAL; MAX_PLAYERS];
        b[0] = Pad(1);
        b[7] = Pad(0x0300);
        b
    }

    /// What a client holding frames up to 131_069 answers for the base.
    fn held(f: Frame) -> Option<Inputs> {
        (f.0 == 131_069).then(base)
    }

    fn update() -> Update {
        let mut frames = vec![[Pad::NEUTRAL; MAX_PLAYERS]; 9];
        frames[3][0] = Pad(1);
        frames[4][7] = Pad(0xffff);
        Update {
            head: Head {
                seq: 3,
                ack: None,
                ts: Some(65_000),
                echo: None,
            },
            up_lossy: true,
            advance: Some(-17),
            frames: Some(FrameRun {
                from: Frame(131_070),
                base: Some(base()),
                frames,
                lead: Some(12),
            }),
            notices: vec![
                Notice::Left {
                    peer: PeerId(5),
                    from: Frame(99),
                },
                Notice::Desync {
                    peer: PeerId(1),
                    frame: Frame(600),
                },
                Notice::Joined {
                    peer: PeerId(2),
                    from: Frame(1234),
                    name: NoticeName::new("ana"),
                },
                Notice::Paused {
                    peer: PeerId(1),
                    at: Frame(700),
                },
                Notice::Resumed {
                    peer: PeerId(0),
                    at: Frame(700),
                },
                Notice::PauseRefused {
                    peer: PeerId(3),
                    why: PauseRefusal::TooMany { wait_secs: 41 },
                },
                Notice::PauseRefused {
                    peer: PeerId(1),
                    why: PauseRefusal::NotYours { wait_secs: 12 },
                },
            ],
        }
    }

    #[test]
    fn a_pause_request_rides_in_the_extras_byte() {
        let mut c = ctrl();
        let without = encode_ctrl(42, &c, 70_000..=70_010, None);
        c.pause = Some(PauseRequest {
            id: 100,
            pause: true,
        });
        let with = encode_ctrl(42, &c, 70_000..=70_010, None);
        assert_eq!(with.len(), without.len() + 1);
        let back = decode_ctrl(&with[H..], false, 70_000, 0, held_sample);
        assert_eq!(back, Ok(c.clone()));
        // Alone, without checksums: the extras byte says 0 checksums and a request.
        c.checksums.clear();
        c.pause = Some(PauseRequest {
            id: 5,
            pause: false,
        });
        c.stopped = true;
        let alone = encode_ctrl(42, &c, 70_000..=70_010, None);
        let back = decode_ctrl(&alone[H..], false, 70_000, 0, held_sample);
        assert_eq!(back, Ok(c));
    }

    #[test]
    fn ctrl_and_update_round_trip() {
        let c = ctrl();
        let bytes = encode_ctrl(42, &c, 70_000..=70_010, None);
        let short = encode_ctrl(42, &c, 70_000..=70_010, Some(0xfff0));
        assert_eq!(short.len() + 1, bytes.len(), "the ack in one byte");
        for ack_ref in [0xfff0, 0xfff1, 7] {
            let back = decode_ctrl(&short[H..], false, 70_000, ack_ref, held_sample);
            assert_eq!(back, Ok(c.clone()), "ack expanded around {ack_ref}");
        }
        let (h, body) = Header::parse(&bytes).unwrap();
        // Lockstep datagrams carry no session id: their tag stands for it.
        assert_eq!((h.kind, h.session), (Kind::Ctrl, 0));
        // The server expects a sample in 70_000..=70_010: the 7-bit index expands to 70_000.
        for reference in [70_000, 70_010] {
            assert_eq!(
                decode_ctrl(body, false, reference, 0, held_sample),
                Ok(c.clone())
            );
        }
        // Without the base sample the server cannot read the run; it says which it lacks.
        assert_eq!(
            decode_ctrl(body, false, 70_000, 0, |_| None),
            Err(WireError::MissingBase(Kind::Ctrl, 69_999))
        );
        let u = update();
        let bytes = encode_update(42, 8, &u, 131_070..=131_070, None);
        let (h, body) = Header::parse(&bytes).unwrap();
        assert_eq!(h.kind, Kind::Update);
        assert_eq!(
            decode_update(body, false, 131_070, 0, 8, held),
            Ok(u.clone())
        );
        // Without the base frame the client cannot read the run; it says which it lacks.
        assert_eq!(
            decode_update(body, false, 131_070, 0, 8, |_| None),
            Err(WireError::MissingBase(Kind::Update, 131_069))
        );
        // A bare keepalive: flags and seq.
        let bare = Ctrl {
            head: Head {
                seq: 1,
                ack: None,
                ts: None,
                echo: None,
            },
            input_rtt_ms: None,
            samples: None,
            checksums: Vec::new(),
            pause: None,
            stopped: false,
        };
        assert_eq!(encode_ctrl(1, &bare, 0..=0, None).len(), H + 3);
        // Far from what the client may hold, the start takes two bytes and still expands.
        let mut u = u;
        u.advance = None;
        u.head.ts = None;
        let full = u.clone();
        let bytes = encode_update(42, 8, &u, 131_000..=131_070, None);
        assert_eq!(
            decode_update(&bytes[H..], false, 131_000, 0, 8, held),
            Ok(u.clone())
        );
        let near = encode_update(42, 8, &u, 131_070..=131_070, None);
        assert_eq!(bytes.len(), near.len() + 1);
        // The first frame in full (no base): needs nothing held, costs the 2 x 16 bits.
        let mut full = full;
        full.frames.as_mut().unwrap().base = None;
        let full_bytes = encode_update(42, 8, &full, 131_000..=131_070, None);
        assert_eq!(
            decode_update(&full_bytes[H..], false, 131_000, 0, 8, |_| None),
            Ok(full)
        );
        assert!(full_bytes.len() > bytes.len());
    }

    #[test]
    fn a_ctrl_spends_a_byte_on_its_newest_samples_age_only_when_it_is_not_zero() {
        let mut c = ctrl();
        let sized = |c: &Ctrl, age: Option<u8>| {
            let mut c = c.clone();
            c.samples.as_mut().unwrap().age_ms = age;
            let bytes = encode_ctrl(1, &c, 70_000..=70_000, None);
            let back = decode_ctrl(&bytes[H..], false, 70_000, 0, held_sample).unwrap();
            (bytes.len(), back.samples.unwrap().age_ms)
        };
        let (zero, back) = sized(&c, Some(0));
        assert_eq!(back, Some(0));
        assert_eq!(sized(&c, Some(3)), (zero + 1, Some(3)));
        assert_eq!(sized(&c, Some(254)), (zero + 1, Some(254)));
        // Not known (the newest sample is not in this datagram), or too old to be of use.
        assert_eq!(sized(&c, None), (zero + 1, None));
        assert_eq!(sized(&c, Some(255)), (zero + 1, None));
        // Only with a run: an age flag on a CTRL without samples is malformed.
        c.samples = None;
        let mut bytes = encode_ctrl(1, &c, 70_000..=70_000, None);
        bytes[H] |= F_AGE;
        assert_eq!(
            decode_ctrl(&bytes[H..], false, 70_000, 0, held_sample),
            Err(WireError::Malformed(Kind::Ctrl))
        );
    }

    #[test]
    fn a_checksum_travels_as_its_frame_and_low_half_in_seven_bytes() {
        let mut c = ctrl();
        c.checksums = Vec::new();
        let none = encode_ctrl(1, &c, 70_000..=70_000, None).len();
        c.checksums = vec![(Frame(600), 0xdead_beef_0bad_f00d)];
        let one = encode_ctrl(1, &c, 70_000..=70_000, None);
        // The count byte, a 2-byte varint frame and 4 bytes of checksum.
        assert_eq!(one.len(), none + 1 + 6);
        let back = decode_ctrl(&one[H..], false, 70_000, 0, held_sample).unwrap();
        assert_eq!(back.checksums, vec![(Frame(600), 0x0bad_f00d)]);
        // Frames past 2^28 still fit (5-byte varint), and the overhead allows for it.
        c.checksums = vec![(Frame(u32::MAX), u64::MAX); MAX_CHECKSUMS];
        let big = encode_ctrl(1, &c, 70_000..=70_000, None);
        let back = decode_ctrl(&big[H..], false, 70_000, 0, held_sample).unwrap();
        assert_eq!(
            back.checksums,
            vec![(Frame(u32::MAX), 0xffff_ffff); MAX_CHECKSUMS]
        );
        assert_eq!(big.len() - none, 1 + MAX_CHECKSUMS * 9);
    }

    #[test]
    fn an_update_names_the_lead_when_asked_and_the_mask_when_that_is_smaller() {
        let mut u = update();
        u.notices.clear();
        u.advance = None;
        let with_lead = encode_update(1, 8, &u, 131_070..=131_070, None);
        u.frames.as_mut().unwrap().lead = None;
        let without = encode_update(1, 8, &u, 131_070..=131_070, None);
        // The lead's byte.
        assert_eq!(with_lead.len() - without.len(), 1);
        assert_eq!(
            decode_update(&without[H..], false, 131_070, 0, 8, held),
            Ok(u.clone())
        );
        // Players 0 and 7 of 8 press buttons: naming them (a byte) saves 6 players x 9
        // frames of "unchanged" bits, so the mask goes out, and a session that has no
        // slot 7 refuses it.
        assert_eq!(without[H] & F_EXTRAS, F_EXTRAS);
        assert!(decode_update(&without[H..], false, 131_070, 0, 2, held).is_err());
        // The same inputs on players 0 and 1 of a session of 2: every slot, so no mask and
        // no extras byte at all.
        let to_slot_1 = |mut i: Inputs| {
            i.swap(1, 7);
            i
        };
        let mut two = u.clone();
        let run = two.frames.as_mut().unwrap();
        run.base = run.base.map(to_slot_1);
        run.frames.iter_mut().for_each(|f| *f = to_slot_1(*f));
        let b = encode_update(1, 2, &two, 131_070..=131_070, None);
        assert_eq!(b[H] & F_EXTRAS, 0);
        assert_eq!(b.len(), without.len() - 2);
        let held2 = |f: Frame| held(f).map(to_slot_1);
        assert_eq!(decode_update(&b[H..], false, 131_070, 0, 2, held2), Ok(two));
    }

    #[test]
    fn typical_ctrl_is_small() {
        // K = 2 on a 100 ms link: about 8 unacked samples, one button pressed. Most CTRLs
        // carry no timestamp, echo or input round trip: flags, seq, ack, run header (first
        // in one byte, age; no count: the run ends with the datagram), bits (the first sample against the acknowledged one before
        // it, a 7-bit change, 3 unchanged, a 7-bit change, 3 unchanged: 20 bits).
        let mut c = ctrl();
        c.checksums.clear();
        c.head.ts = None;
        c.head.echo = None;
        c.input_rtt_ms = None;
        c.samples.as_mut().unwrap().pads = [0u16, 0, 0, 0, 16, 16, 16, 16]
            .iter()
            .map(|&v| Pad(v))
            .collect();
        // The ack (7) in one byte: the server holds ack 3 or newer from an acknowledged CTRL.
        let n = encode_ctrl(1, &c, 70_000..=70_008, Some(3)).len();
        assert_eq!(n, H + 4 + 2 + 3, "{n}");
    }

    #[test]
    fn the_usual_flags_are_left_out_and_the_header_says_so() {
        // An ack and a run coded against the acknowledged sample, nothing else: no flags byte.
        let mut c = ctrl();
        c.checksums.clear();
        (c.head.ts, c.head.echo, c.input_rtt_ms) = (None, None, None);
        c.samples.as_mut().unwrap().age_ms = Some(0);
        let bytes = encode_ctrl(1, &c, 70_000..=70_000, Some(3));
        assert!(crate::wire::is_short(&bytes));
        // Header, seq, a one-byte ack, the run's first index, 46 bits of pads.
        assert_eq!(bytes.len(), H + 2 + 1 + 1 + 6);
        assert_eq!(
            decode_ctrl(&bytes[H..], true, 70_000, 3, held_sample),
            Ok(c.clone())
        );
        // Any other flag brings the byte back.
        c.input_rtt_ms = Some(90);
        let long = encode_ctrl(1, &c, 70_000..=70_000, Some(3));
        assert!(!crate::wire::is_short(&long));
        assert_eq!(
            decode_ctrl(&long[H..], false, 70_000, 3, held_sample),
            Ok(c)
        );
        // UPDATEs likewise: 2 players, both active, no lead, notice or advance.
        let mut both = [Pad::NEUTRAL; MAX_PLAYERS];
        (both[0], both[1]) = (Pad(1), Pad(2));
        let u = Update {
            head: Head {
                seq: 9,
                ack: Some(5),
                ts: None,
                echo: None,
            },
            up_lossy: false,
            advance: None,
            frames: Some(FrameRun {
                from: Frame(500),
                base: Some(both),
                frames: vec![both; 4],
                lead: None,
            }),
            notices: Vec::new(),
        };
        let bytes = encode_update(1, 2, &u, 500..=500, Some(3));
        assert!(crate::wire::is_short(&bytes));
        let back = decode_update(&bytes[H..], true, 500, 3, 2, |_| Some(both));
        assert_eq!(back, Ok(u));
    }

    #[test]
    fn a_cut_update_is_rejected_and_a_cut_ctrl_reads_only_samples_sent() {
        let bytes = encode_update(9, 8, &update(), 131_070..=131_070, None);
        for len in H..bytes.len() {
            let r = decode_update(&bytes[H..len], false, 131_070, 0, 8, held);
            assert!(r.is_err(), "UPDATE cut to {len} bytes was accepted");
        }
        let mut long = bytes[H..].to_vec();
        long.push(0);
        assert!(decode_update(&long, false, 131_070, 0, 8, held).is_err());
        // A CTRL's run takes the rest of the datagram (no count): cut at the end of a
        // sample it reads as the samples before the cut. Never one the client did not send.
        let c = ctrl();
        let pads = &c.samples.as_ref().unwrap().pads;
        let bytes = encode_ctrl(9, &c, 70_000..=70_000, None);
        let mut shorter = 0;
        for len in H..bytes.len() {
            match decode_ctrl(&bytes[H..len], false, 70_000, 0, held_sample) {
                Ok(cut) => {
                    let run = cut.samples.expect("a run");
                    assert!(pads.starts_with(&run.pads) && run.pads.len() < pads.len());
                    shorter += 1;
                }
                Err(e) => assert_eq!(e, malformed_ctrl(), "cut to {len} bytes"),
            }
        }
        assert!(shorter < 3, "{shorter} cuts read as shorter runs");
    }

    #[test]
    fn random_and_mutated_bytes_never_panic() {
        let mut rng = SmallRng::seed_from_u64(5);
        let valid = [
            encode_ctrl(9, &ctrl(), 70_000..=70_000, None),
            encode_update(9, 8, &update(), 131_070..=131_070, None),
        ];
        for i in 0..200_000 {
            let body: Vec<u8> = if i % 2 == 0 {
                let len = rng.gen_range(0..64);
                (0..len).map(|_| rng.gen()).collect()
            } else {
                let mut b = valid[i % 4 / 2][H..].to_vec();
                for _ in 0..rng.gen_range(1..4) {
                    let at = rng.gen_range(0..b.len());
                    b[at] ^= 1 << rng.gen_range(0..8);
                }
                b
            };
            let (reference, ack_ref, short) = (rng.gen(), rng.gen(), rng.gen());
            let _ = decode_ctrl(&body, short, reference, ack_ref, |_| Some(Pad(0x0f0f)));
            let _ = decode_update(
                &body,
                short,
                reference,
                ack_ref,
                rng.gen_range(1..=8),
                |_| Some([Pad(0x0f0f); MAX_PLAYERS]),
            );
        }
    }

    #[test]
    fn fitting_counts_exact_bits() {
        let pads = [Pad(1); 100];
        // 16 bits + 99 x 1 bit.
        assert_eq!(pads_fitting(pads.iter().copied(), 115), 100);
        assert_eq!(pads_fitting(pads.iter().copied(), 114), 99);
        let mut frames = vec![[Pad::NEUTRAL; MAX_PLAYERS]; 10];
        for (i, f) in frames.iter_mut().enumerate() {
            f[2] = Pad(i as u16);
        }
        // Player 2 counts 0..9: 16 + the changes' costs (1, 2, 1, 3, 1, 2, 1, 4, 1 buttons
        // flipped: 7 + 12 + 7 + 17 + 7 + 12 + 7 + 18 + 7) = 110 bits.
        assert_eq!(frames_fitting(&frames, 110), 10);
        assert_eq!(frames_fitting(&frames, 109), 9);
        assert_eq!(
            encode_frames_len(&frames),
            110usize.div_ceil(8),
            "fitting and encoding agree"
        );
    }

    fn encode_frames_len(frames: &[Inputs]) -> usize {
        codec::encode_frames(frames, active_mask(frames), None).len()
    }
}
