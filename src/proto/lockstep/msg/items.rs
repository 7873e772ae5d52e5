//! The CTRL and UPDATE bodies as values, and the limits and refresh rules of their
//! fields (layout: the `msg` module doc). No codec here; imports nothing of `msg`.

use crate::input::{Inputs, Pad};
use crate::wire::{LOCKSTEP_HEADER_LEN, MAX_DATAGRAM};

use super::super::frame::{seq_newer, Frame, PeerId};

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

/// The link fields of every lockstep datagram, after the [`wire::Header`](crate::wire::Header)
/// (kind and session): sequence number, ack, timestamp and echo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkHeader {
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

impl LinkHeader {
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
    pub head: LinkHeader,
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
    /// The player has sent no input yet (a seat taken but not played): it may not pause.
    NotPlaying,
    /// The player's last pause ran out by itself: it may pause again in `wait_secs`.
    TooSoon {
        /// Seconds until a pause would be granted.
        wait_secs: u32,
    },
}

impl PauseRefusal {
    const SECS: u32 = 0x00ff_ffff;

    pub(super) fn to_wire(self) -> u32 {
        match self {
            PauseRefusal::TooMany { wait_secs } => 1 << 24 | wait_secs.min(Self::SECS),
            PauseRefusal::NotYours { wait_secs } => 2 << 24 | wait_secs.min(Self::SECS),
            PauseRefusal::NotPlaying => 3 << 24,
            PauseRefusal::TooSoon { wait_secs } => 4 << 24 | wait_secs.min(Self::SECS),
        }
    }

    pub(super) fn from_wire(v: u32) -> Option<PauseRefusal> {
        let wait_secs = v & Self::SECS;
        match v >> 24 {
            1 => Some(PauseRefusal::TooMany { wait_secs }),
            2 => Some(PauseRefusal::NotYours { wait_secs }),
            3 => Some(PauseRefusal::NotPlaying),
            4 => Some(PauseRefusal::TooSoon { wait_secs }),
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
    pub(super) len: u8,
    pub(super) bytes: [u8; NAME_LEN],
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

    pub(super) fn from_wire(raw: &[u8]) -> Option<NoticeName> {
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
    pub head: LinkHeader,
    /// The server sees gaps in this client's CTRL sequence numbers.
    pub up_lossy: bool,
    /// Receiver's phase advantage in 1/16 frames (`None`: unchanged).
    pub advance: Option<i8>,
    pub frames: Option<FrameRun>,
    pub notices: Vec<Notice>,
}
