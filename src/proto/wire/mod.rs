//! The datagram header every framelock packet starts with, shared by the session handshake
//! (`session`) and the lockstep protocol (`lockstep`). It imports nothing of `framelock-proto`: `net`,
//! `lockstep` and `session` stand on it. Two layouts, told apart by the first
//! byte:
//!
//! ```text
//! session kinds (handshake, state transfer; frozen across versions, so that a peer of
//! another version is still told why it is refused)
//! offset size field
//!      0    2 magic  b"FL"
//!      2    1 version PROTOCOL_VERSION
//!      3    1 kind    (Kind, 0x01..=0x0F, 0x20..)
//!      4    4 session id, u32 little endian (0 until the host has assigned one)
//!      8    . body, defined by the kind
//!
//! lockstep kinds (CTRL, UPDATE: up to 60 a second each way, so every byte is budget)
//!      0    1 (version % 16) << 4 | short << 1 | kind  (kind: CTRL 0, UPDATE 1; short: the
//!           body leaves out its first byte, the flags, which then have their usual value,
//!           see `lockstep::msg`; bits 2-3 are 0, so the byte is never b'F', 0x46)
//!      1    . body
//! ```
//! Lockstep datagrams flow only between peers whose handshake agreed on the whole version
//! and the keys, so they carry only its low 4 bits, a cheap check against strays, and need
//! neither magic nor session id: their tag, made with keys derived for this session and
//! this peer, tells them apart from strays and from other sessions' datagrams (also from a
//! version 16 apart), and `Header::session` is 0 for them. All
//! multi-byte integers on the wire are little endian.
//!
//! Every datagram between a host and a joiner after the handshake (from the Welcome on,
//! which carries the host's public key) ends with a [`keys::TAG_LEN`]-byte tag over all
//! of it; see [`keys`]. Layouts here and in `session::msg` and `lockstep::msg` are without
//! it.

pub mod keys;

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use thiserror::Error;

pub const MAGIC: [u8; 2] = *b"FL";
/// Bumped on every incompatible wire change; peers with another version are refused by name.
pub const PROTOCOL_VERSION: u8 = 15;
/// What a lockstep header holds of [`PROTOCOL_VERSION`]: its low 4 bits.
pub const LOCKSTEP_VERSION: u8 = PROTOCOL_VERSION & 0x0f;
/// Header length of session-layer datagrams.
pub const HEADER_LEN: usize = 8;
/// Header length of lockstep datagrams (CTRL, UPDATE).
pub const LOCKSTEP_HEADER_LEN: usize = 1;
/// Bit of a lockstep datagram's first byte: its body leaves out the flags byte.
pub const LOCKSTEP_SHORT: u8 = 0x02;
/// Datagrams larger than this are never sent (fits a 1280-byte IPv6 MTU with headers to spare).
pub const MAX_DATAGRAM: usize = 1200;

/// IPv4 + UDP header bytes, for on-the-wire accounting.
pub const IPV4_UDP_OVERHEAD: usize = 28;
/// IPv6 + UDP header bytes.
pub const IPV6_UDP_OVERHEAD: usize = 48;

/// IP + UDP header bytes a datagram to or from `addr` carries on the wire.
pub fn header_overhead(addr: SocketAddr) -> usize {
    match addr.ip() {
        IpAddr::V4(_) => IPV4_UDP_OVERHEAD,
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => IPV4_UDP_OVERHEAD,
        IpAddr::V6(_) => IPV6_UDP_OVERHEAD,
    }
}

/// Bytes a tagged datagram to or from `addr` carries beyond what its protocol wrote: the IP
/// and UDP headers and the tag. The lockstep send budget counts them.
pub fn link_overhead(addr: SocketAddr) -> usize {
    header_overhead(addr) + keys::TAG_LEN
}

/// What a datagram's body holds. Session-layer kinds are 0x01..=0x0F (0x0E chat) and
/// 0x20 on (0x20 Retry); lockstep kinds 0x10..=0x1F.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Kind {
    /// client -> host: wants to join (version, names, hashes, options, password proof).
    Hello = 0x01,
    /// host -> client: password challenge nonce.
    Challenge = 0x02,
    /// host -> client: accepted; carries session id, player slot, host's options.
    Welcome = 0x03,
    /// host -> client: refused, with a reason.
    Refuse = 0x04,
    /// host -> client: a chunk of the start state.
    StateChunk = 0x05,
    /// client -> host: which state chunks arrived.
    StateAck = 0x06,
    /// either way: leaving on purpose.
    Bye = 0x07,
    /// either way: desync recovery, the host's state for one joiner and its acks.
    Resync = 0x08,
    /// host -> ready joiner, while the lobby waits for the others: players in and wanted
    /// (the joiner knows the host is there).
    Lobby = 0x09,
    /// client -> host, from the start state until its first CTRL: still loading (content,
    /// window), not gone.
    Loading = 0x0A,
    /// A dedicated server's rooms: opening one, its directory, and the password exchange
    /// it relays between a joiner and the room's creator (see `session::msg::RoomMsg`).
    Room = 0x0B,
    /// host -> joiner: its seat was dropped for silence; it may come back (reconnect).
    Dropped = 0x0C,
    /// either way: path checks after an address change, and the joiner's probes.
    Path = 0x0D,
    /// either way: chat messages and their acks (see `session::chat`).
    Chat = 0x0E,
    /// host/server -> stranger: prove your address, echo this cookie (`session::guard`).
    Retry = 0x20,
    /// client -> server lockstep control (inputs, acks, timestamps, checksums).
    Ctrl = 0x10,
    /// server -> client lockstep update (everyone's inputs, next keyframe).
    Update = 0x11,
}

impl Kind {
    pub fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            0x01 => Kind::Hello,
            0x02 => Kind::Challenge,
            0x03 => Kind::Welcome,
            0x04 => Kind::Refuse,
            0x05 => Kind::StateChunk,
            0x06 => Kind::StateAck,
            0x07 => Kind::Bye,
            0x08 => Kind::Resync,
            0x09 => Kind::Lobby,
            0x0a => Kind::Loading,
            0x0b => Kind::Room,
            0x0c => Kind::Dropped,
            0x0d => Kind::Path,
            0x0e => Kind::Chat,
            0x20 => Kind::Retry,
            0x10 => Kind::Ctrl,
            0x11 => Kind::Update,
            _ => return None,
        })
    }
}

/// A datagram to send: the one type through which every sans-IO state machine (`session`,
/// `lockstep`, `serve`, the `net` conditioner) hands its driver what to put on the wire
/// (see [`Machine`] for the rest of their face).
///
/// `To` says where the datagram goes: a socket address; a slot where the driver knows the
/// addresses (`PeerId` for the lockstep server's players, `SpectatorId` for its spectators,
/// `Slot` for the host's chat); `()` for a machine with one peer, which its driver seals and
/// addresses (the lockstep client, a resync half, a joiner's chat).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit<To = SocketAddr> {
    pub to: To,
    pub bytes: Vec<u8>,
    /// The IP TTL to send it with; `None`: the socket's. A direct path's first punch asks
    /// for a low one, so that it opens our router's mapping without reaching the peer's
    /// (see `session::direct`).
    pub ttl: Option<u8>,
}

impl<To> Transmit<To> {
    /// A datagram to `to`, sent with the socket's TTL.
    pub fn new(to: To, bytes: Vec<u8>) -> Self {
        Transmit {
            to,
            bytes,
            ttl: None,
        }
    }

    /// The same datagram, sent to `to` (a driver that maps a slot to its address).
    pub fn with_to<T>(self, to: T) -> Transmit<T> {
        Transmit {
            to,
            bytes: self.bytes,
            ttl: self.ttl,
        }
    }
}

/// What a state machine did with a datagram given to its `handle_datagram`: the one
/// answer every machine gives (see [`Machine`] for the rest of the face).
#[derive(Debug, PartialEq, Eq)]
pub enum Handled<'a> {
    /// This machine's: read and acted on (it may have queued datagrams and events), or a
    /// harmless repeat (a resent chunk, a late copy), which needs no counting.
    Taken,
    /// Not this machine's: for the driver to give to the next one. The slice is the
    /// datagram, without its tag where this machine checked and removed it (a joiner's
    /// `Seat` passes its lockstep client's UPDATEs so).
    Passed(&'a [u8]),
    /// Dropped (the machine's stats count it, under the reason's counter where it keeps
    /// one).
    Dropped(Dropped),
}

impl Handled<'_> {
    /// The machine took it.
    pub fn is_taken(&self) -> bool {
        matches!(self, Handled::Taken)
    }
}

impl From<Result<(), Dropped>> for Handled<'_> {
    fn from(r: Result<(), Dropped>) -> Self {
        match r {
            Ok(()) => Handled::Taken,
            Err(why) => Handled::Dropped(why),
        }
    }
}

/// The face every sans-IO machine shows its driver (quinn-proto's `Endpoint`/`Connection`
/// and str0m's `Input`/`Output` are the models): datagrams and the clock in, datagrams,
/// events and the next wake-up out. `now` comes first; the machine never reads a clock.
///
/// ```text
/// in:  handle_datagram(now, from, datagram) -> Handled   a datagram that arrived
///      handle_timeout(now)                              the clock reached poll_timeout
///      handle_* (a machine's own inputs: a pad, a state, a leave; not in this trait)
/// out: poll_transmit(now) -> Option<Transmit<Addr>>    drain until None
///      poll_event() -> Option<Event>                   drain until None
///      poll_timeout() -> Option<Instant>               when to call handle_timeout next
/// ```
///
/// One turn of a driver (`net::drive::step` over a socket) is: the datagrams that came,
/// the timers, the datagrams to send, the events; then it sleeps until `poll_timeout` or
/// the next datagram. The machines keep these methods as their own too, so that a caller
/// needs no import; this trait is what a driver generic over them uses.
pub trait Machine {
    /// Where its datagrams come from and go: a socket address; a slot where the driver
    /// knows the addresses (the lockstep server's); `()` where it has one peer, whose
    /// datagrams the driver has already routed (the lockstep client).
    type Addr;
    /// What it tells its driver.
    type Event;
    /// Whether it counts the datagrams it drops in stats of its own; for one that does
    /// not, its driver counts them (`net::Link::note_invalid`).
    const COUNTS_DROPS: bool = true;

    /// A datagram from `from`, received at `now`: what the machine did with it.
    fn handle_datagram<'a>(
        &mut self,
        now: Instant,
        from: Self::Addr,
        datagram: &'a [u8],
    ) -> Handled<'a>;
    /// Runs the timers due by `now` (calling it early does no harm).
    fn handle_timeout(&mut self, now: Instant);
    /// The next datagram to send; drain until `None`.
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<Self::Addr>>;
    /// The next event; drain until `None`.
    fn poll_event(&mut self) -> Option<Self::Event>;
    /// When `handle_timeout` (or `poll_transmit`) has work next.
    fn poll_timeout(&self) -> Option<Instant>;
}

/// Implements [`Machine`] (addressed by `SocketAddr`) for a type whose own methods already
/// have its face: `impl_machine!(Type, EventType)`, and `counts_drops = false` after them
/// for one without stats of its own.
macro_rules! impl_machine {
    ($ty:ty, $event:ty $(, counts_drops = $counts:expr)?) => {
        impl $crate::wire::Machine for $ty {
            type Addr = ::std::net::SocketAddr;
            type Event = $event;
            $(const COUNTS_DROPS: bool = $counts;)?

            fn handle_datagram<'a>(
                &mut self,
                now: ::std::time::Instant,
                from: ::std::net::SocketAddr,
                datagram: &'a [u8],
            ) -> $crate::wire::Handled<'a> {
                <$ty>::handle_datagram(self, now, from, datagram)
            }
            fn handle_timeout(&mut self, now: ::std::time::Instant) {
                <$ty>::handle_timeout(self, now)
            }
            fn poll_transmit(
                &mut self,
                now: ::std::time::Instant,
            ) -> Option<$crate::wire::Transmit> {
                <$ty>::poll_transmit(self, now)
            }
            fn poll_event(&mut self) -> Option<$event> {
                <$ty>::poll_event(self)
            }
            fn poll_timeout(&self) -> Option<::std::time::Instant> {
                <$ty>::poll_timeout(self)
            }
        }
    };
}
pub(crate) use impl_machine;

/// Why a datagram was dropped ([`Handled::Dropped`]).
#[derive(Debug, Error, PartialEq, Eq)]
pub enum Dropped {
    /// The header or body does not parse.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// The datagram names another session.
    #[error("wrong session id {got:#010x} (this session is {want:#010x})")]
    WrongSession {
        /// The id in the datagram.
        got: u32,
        /// This session's id.
        want: u32,
    },
    /// A kind only a joined peer sends, from an address (or lockstep slot) that has not
    /// joined.
    #[error("{0:?} from an address that has not joined")]
    UnknownPeer(Kind),
    /// From an address other than the one this side talks to (a joiner's host, a room
    /// opener's server).
    #[error("datagram from {0}, which is not the host")]
    NotFromHost(SocketAddr),
    /// A kind this side does not take now.
    #[error("unexpected {0:?} datagram")]
    Unexpected(Kind),
    /// A state chunk outside the state, or of the wrong length.
    #[error("state chunk out of range or of the wrong length")]
    BadChunk,
    /// Its tag is not the peer's: forged or altered on the way, dropped before any field
    /// of it was read (session machines count it in `SessionStats::dropped_auth`).
    #[error("its tag is not the peer's (forged or altered on the way)")]
    Unauthentic,
}

impl Dropped {
    /// A datagram this side does not take now: its kind, or why its header does not parse.
    pub fn unexpected(datagram: &[u8]) -> Dropped {
        match Header::parse(datagram) {
            Ok((h, _)) => Dropped::Unexpected(h.kind),
            Err(e) => e.into(),
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Header {
    pub kind: Kind,
    /// The session id of a session-layer datagram; lockstep kinds carry none (0).
    pub session: u32,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum WireError {
    #[error("datagram too short ({0} bytes)")]
    Truncated(usize),
    #[error("not a framelock datagram (bad magic)")]
    BadMagic,
    #[error("protocol version {0} (this build speaks {PROTOCOL_VERSION})")]
    Version(u8),
    #[error("unknown datagram kind {0:#04x}")]
    UnknownKind(u8),
    #[error("malformed {0:?} body")]
    Malformed(Kind),
    /// The run is delta-coded against an item (UPDATE: frame, CTRL: sample) this peer no
    /// longer or not yet holds: a late or early datagram, not a corrupt one.
    #[error("{0:?} coded against item {1}, which this peer does not hold")]
    MissingBase(Kind, u32),
}

impl Kind {
    /// The low nibble of a lockstep datagram's first byte, for the lockstep kinds.
    fn lockstep_code(self) -> Option<u8> {
        match self {
            Kind::Ctrl => Some(0x0),
            Kind::Update => Some(0x1),
            _ => None,
        }
    }
}

/// A lockstep header's byte for a version's low bits and a kind's code (short bit included).
const fn lockstep_byte(version: u8, code: u8) -> u8 {
    (version & 0x0f) << 4 | code
}

/// True if `datagram` is a lockstep datagram whose body leaves out its flags byte.
pub fn is_short(datagram: &[u8]) -> bool {
    datagram
        .first()
        .is_some_and(|&b| b != MAGIC[0] && b & LOCKSTEP_SHORT != 0)
}

impl Header {
    pub fn write(&self, out: &mut Vec<u8>) {
        if let Some(code) = self.kind.lockstep_code() {
            out.push(lockstep_byte(LOCKSTEP_VERSION, code));
        } else {
            out.extend_from_slice(&MAGIC);
            out.push(PROTOCOL_VERSION);
            out.push(self.kind as u8);
            out.extend_from_slice(&self.session.to_le_bytes());
        }
    }

    /// Splits a datagram into its header and body.
    pub fn parse(datagram: &[u8]) -> Result<(Header, &[u8]), WireError> {
        if datagram.first() != Some(&MAGIC[0]) {
            return Self::parse_lockstep(datagram);
        }
        if datagram.len() < HEADER_LEN {
            return Err(WireError::Truncated(datagram.len()));
        }
        if datagram[0..2] != MAGIC {
            return Err(WireError::BadMagic);
        }
        if datagram[2] != PROTOCOL_VERSION {
            return Err(WireError::Version(datagram[2]));
        }
        let kind = Kind::from_u8(datagram[3]).ok_or(WireError::UnknownKind(datagram[3]))?;
        if kind.lockstep_code().is_some() {
            // Lockstep kinds never take the long header.
            return Err(WireError::UnknownKind(datagram[3]));
        }
        let session = u32::from_le_bytes(datagram[4..8].try_into().expect("4 bytes"));
        Ok((Header { kind, session }, &datagram[HEADER_LEN..]))
    }

    fn parse_lockstep(datagram: &[u8]) -> Result<(Header, &[u8]), WireError> {
        if datagram.len() < LOCKSTEP_HEADER_LEN {
            return Err(WireError::Truncated(datagram.len()));
        }
        let kind = match datagram[0] & 0x0f & !LOCKSTEP_SHORT {
            0x0 => Kind::Ctrl,
            0x1 => Kind::Update,
            _ => return Err(WireError::BadMagic),
        };
        if datagram[0] >> 4 != LOCKSTEP_VERSION {
            return Err(WireError::Version(datagram[0] >> 4));
        }
        let header = Header { kind, session: 0 };
        Ok((header, &datagram[LOCKSTEP_HEADER_LEN..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_garbage() {
        let mut buf = Vec::new();
        Header {
            kind: Kind::StateAck,
            session: 0xdead_beef,
        }
        .write(&mut buf);
        buf.extend_from_slice(b"body");
        assert_eq!(&buf[..4], &[b'F', b'L', PROTOCOL_VERSION, 0x06]);
        let (h, body) = Header::parse(&buf).unwrap();
        assert_eq!(
            (h.kind, h.session, body),
            (Kind::StateAck, 0xdead_beef, &b"body"[..])
        );
        assert_eq!(Header::parse(&buf[..5]), Err(WireError::Truncated(5)));
        let mut bad = buf.clone();
        bad[2] = PROTOCOL_VERSION + 1;
        assert_eq!(
            Header::parse(&bad),
            Err(WireError::Version(PROTOCOL_VERSION + 1))
        );
        bad = buf.clone();
        bad[3] = 0x7f;
        assert_eq!(Header::parse(&bad), Err(WireError::UnknownKind(0x7f)));
        bad[1] = b'X';
        assert_eq!(Header::parse(&bad), Err(WireError::BadMagic));
    }

    #[test]
    fn lockstep_header_is_one_byte_with_version_and_kind() {
        let mut buf = Vec::new();
        Header {
            kind: Kind::Ctrl,
            session: 7,
        }
        .write(&mut buf);
        // The session id stays off the wire: the tag stands for it.
        assert_eq!(buf, [LOCKSTEP_VERSION << 4]);
        assert_eq!(
            Header::parse(&buf),
            Ok((
                Header {
                    kind: Kind::Ctrl,
                    session: 0
                },
                &[][..]
            ))
        );
        assert_eq!(Header::parse(&[]), Err(WireError::Truncated(0)));
        // Another version's CTRL, and the old 8-byte layout of lockstep kinds, are refused.
        buf[0] = (LOCKSTEP_VERSION ^ 1) << 4;
        assert_eq!(
            Header::parse(&buf),
            Err(WireError::Version(LOCKSTEP_VERSION ^ 1))
        );
        let old = [b'F', b'L', 2, 0x10, 7, 0, 0, 0];
        assert_eq!(Header::parse(&old), Err(WireError::Version(2)));
        let old_kind = [b'F', b'L', PROTOCOL_VERSION, 0x11, 7, 0, 0, 0];
        assert_eq!(Header::parse(&old_kind), Err(WireError::UnknownKind(0x11)));
        // Neither a lockstep kind nor the magic: not ours.
        assert_eq!(Header::parse(&[0x35, 7, 0, 0, 0]), Err(WireError::BadMagic));
        // The short bit: the same kind, told apart by `is_short`.
        let short = [LOCKSTEP_VERSION << 4 | LOCKSTEP_SHORT | 1, 7];
        assert_eq!(Header::parse(&short).unwrap().0.kind, Kind::Update);
        assert!(is_short(&short) && !is_short(&[LOCKSTEP_VERSION << 4 | 1, 7]));
        assert!(!is_short(b"FL") && !is_short(&[]));
    }

    #[test]
    fn every_version_to_255_has_a_lockstep_byte_that_is_never_the_magic() {
        // The protocol's version goes past 15: its lockstep byte keeps the low bits, and no
        // kind's byte, short or not, can be taken for a session datagram.
        for version in 0..=u8::MAX {
            for code in [0, 1, LOCKSTEP_SHORT, LOCKSTEP_SHORT | 1] {
                let byte = lockstep_byte(version, code);
                assert_ne!(byte, MAGIC[0], "version {version}, code {code}");
                assert_eq!(byte >> 4, version % 16);
                assert_eq!(byte & 0x0f, code);
            }
        }
    }
}
