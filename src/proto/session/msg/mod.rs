//! Bodies of the session-layer datagrams (kinds 0x01..=0x0D, 0x20); `wire::Header` comes first. It
//! must not import the session's state machines (a constant of `guard` aside), nor anything above
//! `session`.
//!
//! Strings are `u8` length + UTF-8 (`str8`) unless noted; integers are little endian.
//! ```text
//! Hello      str8 core_name, str8 core_version, str8 content_name,
//!            u8 has_hash, [u64 content_hash if has_hash], str8 player_name, str8 room
//!            (empty: a direct host), u8 flags (bit 0: a spectator; bit 1: keep no replay of
//!            the room with this player in it, `--no-share`), [32] the joiner's X25519
//!            public key (`wire::keys`), u8 auth (0 = none, 1 = PAKE answer, 2 = no password
//!            to offer), [33] the challenge answered (auth 1, 2), [33] the joiner's SPAKE2
//!            message and [32] its key confirmation (auth 1), [16] cookie (zeros until the
//!            host sent one in a Retry), [16] seat key (the one its Welcome gave it, when it
//!            comes back to its seat; zeros: none), u16 n + n zero bytes of padding to
//!            `PADDED_LEN`
//! Challenge  [33] the host's SPAKE2 message (side B)
//! Welcome    u8 slot (0xff: a spectator), u64 fps (f64 bits), u32 frame (the session frame
//!            the state is at: 0, or later for a joiner of a running game), u32 raw_len,
//!            u32 packed_len,
//!            u64 xxh3(raw payload), u16 chunk_size, u8 slots (session size), u8 keyframe
//!            interval K, u8 mode (0 strict, 1 optimistic: `lockstep::Mode`), [32] the
//!            host's X25519 public key, [16] the seat's key (zeros for a spectator: what
//!            a reconnect or a rejoin shows to get this seat back), u8 n,
//!            n x (u8 slot, str8 name)
//! Refuse     u16 len + UTF-8 reason           (frozen: the same in every protocol version)
//! StateChunk u32 index, u32 seq, data (the rest; chunk_size bytes except the last chunk)
//! StateAck   u32 cum (every chunk < cum arrived), u32 seq of the latest arrival, u8 flags
//!            (bit 0: whole state received and verified), bitmap (the rest;
//!            bit i, LSB first, = chunk cum + i arrived)
//! Bye        str8 reason
//! Dropped    str8 reason (the host dropped this joiner for its silence: it may come back)
//! Path       u8 op: 1 Probe (a joiner that hears nothing: shows its session id and tag
//!            from wherever it is now); 2 Challenge [8] token; 3 Response [8] the token of
//!            the challenge answered, sent back to the address the challenge came from;
//!            4 Punch [8] token (a try at a direct path between a hosted room's host and
//!            a joiner, `session::direct`); 5 PunchBack [8] the token of the punch
//!            answered, sent back to where it came from; 6 Candidates u8 n (at most 4) +
//!            n x addr: more addresses of the sender to punch (its router's port mapping),
//!            sent over the relay
//! Lobby      u8 ready (players with the start state, the host's included), u8 want; a
//!            running game answers a joiner's Hellos with 0, 0 while its state is made
//! Loading    (empty: the joiner has the start state and is not running yet)
//! Room       u8 op, then by op (a dedicated server's rooms; see `RoomMsg`):
//!            1 Open     str8 room (empty: the server names it), u8 players, u8 K (0: the
//!                       mode's default),
//!                       u64 fps bits, u8 flags (bit 0: password), str8 core_name,
//!                       str8 core_version, str8 content_name, u8 has_hash [u64 hash],
//!                       str8 player_name, u32 raw_len, u32 packed_len, u64 xxh3(raw
//!                       payload), u8 start_with (players the game starts with),
//!                       u8 mode (as Welcome's; 0xff: the server's), [16] cookie (as
//!                       Hello's), u8 n + n x addr (the creator's local addresses),
//!                       u16 n + n zero bytes of padding to `PADDED_LEN`; flags bit 1:
//!                       hosted (the creator hosts the game, the server relays and
//!                       introduces; nothing is uploaded)
//!            2 Opened   str8 room (the header carries the room's session id), [32] the
//!                       secret of a hosted room's host (zeros for a room on the server):
//!                       every Room datagram between the server and that host then carries
//!                       a tag made with keys derived from it (`wire::keys::Keys::for_room`)
//!            3 NoRoom   str8 room asked for, u8 n, n x str8 open room
//!            4 List     u32 first (index of the first room wanted), padding as Open's
//!            5 Rooms    u32 total, u32 first, u8 n, n x (str8 name, str8 content,
//!                       str8 core, u8 players in, u8 seats, u8 flags (bit 0: password,
//!                       bit 1: playing, bit 2: optimistic), u32 age in seconds, u8 spectators,
//!                       str8 region, str8 server (both empty: the server answering)
//!            6 Relay    u32 ticket, u8 step, then by step: 1 (server -> creator: a
//!                       joiner asks in) nothing; 2 (creator: its challenge) [33];
//!                       3 (server: the joiner's answer) [33] message, [32] confirmation;
//!                       4 (creator: the verdict) u8 admitted
//!            7 Moved    str8 room, str8 server ("ADDR:PORT" of the fleet's server that holds
//!                       the room, or that has room for a new one; empty: this one)
//!            8 Locate   str8 room, padding as Open's (where is it held?)
//!            9 ListServers  u16 first, padding as Open's
//!           10 Servers  u16 total, u16 first, u8 n, n x (str8 server, str8 region,
//!                       u16 rooms, u16 max rooms, u16 players)
//!           11 Forward  addr, u16 len + that many bytes: a datagram relayed whole between a hosted
//!                       room's host and a joiner; host -> server: `addr` is the joiner it
//!                       is for, server -> host: the joiner it came from
//!           12 Introduce  addr (the peer as the server sees it), u8 n + n x addr (its
//!                       local addresses), u16 ms to wait before the first punch
//!           13 Present  u8 players, u8 direct, u8 relayed, u8 playing: a hosted room's
//!                       host (or a joiner on a direct path) says it is still there
//!           14 ListReplays  u16 first, padding as Open's (the replays the server keeps)
//!           15 Replays  u16 total, u16 first, u8 n, n x (str8 id, str8 room, str8 game,
//!                       str8 core, str8 players (", "-joined), i64 unix seconds it began,
//!                       u32 frames, u32 fps x 1000, u32 bytes, str8 server), newest first
//!           16 FetchReplay  str8 id, u32 offset, padding as Open's
//!           17 ReplayPiece  str8 id, u32 total bytes (0: no such replay), u32 offset,
//!                       u16 len + that many bytes (at most `REPLAY_PIECE`)
//!           18 Share    u32 total, u64 xxh3 of the whole recording, u32 offset, u16 len +
//!                       that many bytes: a hosted room's host uploads the room's recording
//!                       (`.flr`) after the game, under the room's session id
//!           19 ShareAck u32 received (every byte before it arrived), u8 done (1: whole)
//! Open's flags bit 2: keep no replay of the room (`--no-share`).
//! ```
//!
//! An `addr` is u8 family (4 or 6), the address's 4 or 16 bytes, u16 port.
//!
//! Retry (kind 0x20) is a 16-byte cookie, a host's or server's whole answer to a Hello or
//! Open that carries no cookie made for its source address (`session::guard::Cookies`).
//!
//! Hello, Open, List, Locate and ListServers must be padded to `PADDED_LEN` bytes (shorter
//! ones are malformed): before an address has shown that it receives what is sent to it (by
//! echoing a cookie made for it), no answer to it is larger than what it sent, so a forged
//! source address gets nothing amplified.

mod room;

use room::{decode_room, encode_room};
pub use room::{
    OpenRoom, RelayStep, ReplayInfo, RoomInfo, RoomMsg, ServerInfo, MAX_LOCALS, MAX_REPLAYS_LISTED,
    REPLAY_PIECE,
};

use std::net::{IpAddr, SocketAddr};

use super::guard::COOKIE_LEN;
use crate::input::MAX_PLAYERS;
use crate::lockstep::{Mode, PeerId, Roster};
use crate::wire::keys::PUBLIC_KEY_LEN;
pub use crate::wire::keys::ROOM_KEY_LEN;
use crate::wire::{Header, Kind, WireError, HEADER_LEN, MAGIC, MAX_DATAGRAM, PROTOCOL_VERSION};

/// A SPAKE2 message on Ed25519: a side byte and a point.
pub const PAKE_MSG_LEN: usize = 33;
/// A key confirmation: blake3 keyed with the PAKE's key over both messages.
pub const CONFIRM_LEN: usize = 32;
/// Longest room name (bytes).
pub const MAX_ROOM_NAME: usize = 32;
/// Size every Hello, Open and List datagram is padded to (see the module docs).
pub const PADDED_LEN: usize = MAX_DATAGRAM;
/// Most rooms one `Rooms` answer lists (each with its region and server, within
/// `MAX_DATAGRAM`).
pub const MAX_LISTED: usize = 6;
/// Most servers one `Servers` answer lists.
pub const MAX_SERVERS_LISTED: usize = 12;
/// Longest region name (bytes).
pub const MAX_REGION: usize = 16;
/// Longest server address ("ADDR:PORT", IPv6 in brackets) kept (bytes).
pub const MAX_SERVER: usize = 47;
/// Longest core name, version or content name kept (bytes); keeps a Hello under `MAX_DATAGRAM`.
pub const MAX_TEXT: usize = 200;
/// Longest player name kept (bytes).
pub const MAX_PLAYER_NAME: usize = 32;
/// Largest ack bitmap: covers 8192 chunks past the cumulative point.
pub const MAX_ACK_BITMAP: usize = 1024;
/// Start-state bytes per `StateChunk` datagram (datagram = 8 + 8 + this = 1168 bytes).
pub const CHUNK_SIZE: usize = 1152;

/// What a Hello says about the password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Auth {
    /// First contact: no answer yet.
    None,
    /// Answer to `challenge`: the joiner's SPAKE2 message and its key confirmation.
    Pake {
        /// The challenge answered.
        challenge: [u8; PAKE_MSG_LEN],
        /// The joiner's SPAKE2 message.
        msg: [u8; PAKE_MSG_LEN],
        /// Its key confirmation.
        confirm: [u8; CONFIRM_LEN],
    },
    /// Answer to `challenge` from a joiner that was given no password.
    NoPassword {
        /// The challenge answered.
        challenge: [u8; PAKE_MSG_LEN],
    },
}

/// A joiner asks in (see the layout above).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// The joiner's core.
    pub core_name: String,
    /// Its version.
    pub core_version: String,
    /// The game file's name (shown in messages).
    pub content_name: String,
    /// xxh3 of the game file; `None` without content.
    pub content_hash: Option<u64>,
    /// The name the others see.
    pub player_name: String,
    /// The cookie echoed from the host's Retry (zeros: none yet).
    pub cookie: [u8; COOKIE_LEN],
    /// The room asked for on a dedicated server; empty for a direct host.
    pub room: String,
    /// Asks to watch (a spectator) rather than to play.
    pub watch: bool,
    /// Asks the server to keep no replay of a room with this player in it (`--no-share`).
    pub no_share: bool,
    /// The joiner's X25519 public key for this session's datagram keys (`wire::keys`).
    pub key: [u8; PUBLIC_KEY_LEN],
    /// The answer to the password check, if any.
    pub auth: Auth,
    /// The key of the seat this player had (its Welcome's), when it comes back to it;
    /// zeros: none.
    pub seat_key: [u8; SEAT_KEY_LEN],
}

/// Bytes of a seat's key (`Welcome::seat_key`).
pub const SEAT_KEY_LEN: usize = 16;

/// A path check (see the layout above): QUIC's PATH_CHALLENGE and PATH_RESPONSE, and a
/// joiner's probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathMsg {
    /// Joiner -> host: it hears nothing; here it is, from wherever it is now.
    Probe,
    /// A token the peer must send back from the address it was sent to.
    Challenge([u8; PATH_TOKEN_LEN]),
    /// The token of a challenge, sent back to where the challenge came from.
    Response([u8; PATH_TOKEN_LEN]),
    /// A hosted room's host or joiner tries a direct path (`session::direct`).
    Punch([u8; PATH_TOKEN_LEN]),
    /// The token of a punch, sent back to where the punch came from.
    PunchBack([u8; PATH_TOKEN_LEN]),
    /// A hosted room's host or joiner tells the other, over the relay, more addresses to
    /// punch: the outside address its router forwards to it (`portmap`). At most
    /// [`MAX_PATH_CANDIDATES`], the rest `None`.
    Candidates([Option<SocketAddr>; MAX_PATH_CANDIDATES]),
}

/// Most addresses one `PathMsg::Candidates` carries.
pub const MAX_PATH_CANDIDATES: usize = 4;

impl PathMsg {
    /// A `Candidates` of the first [`MAX_PATH_CANDIDATES`] of `addrs`.
    pub fn candidates(addrs: &[SocketAddr]) -> PathMsg {
        let mut list = [None; MAX_PATH_CANDIDATES];
        for (slot, a) in list.iter_mut().zip(addrs) {
            *slot = Some(*a);
        }
        PathMsg::Candidates(list)
    }
}

/// Bytes of a path challenge's token.
pub const PATH_TOKEN_LEN: usize = 8;

/// `Welcome::slot` of a spectator.
pub const SPECTATOR: u8 = 0xff;
/// The host admits a joiner (see the layout above).
#[derive(Clone, Debug, PartialEq)]
pub struct Welcome {
    /// The joiner's slot (`SPECTATOR` for one).
    pub slot: u8,
    /// The core's frames per second.
    pub fps: f64,
    /// The session frame the start state is at.
    pub frame: u32,
    /// The start payload's length, uncompressed.
    pub raw_len: u32,
    /// Its length compressed, as sent.
    pub packed_len: u32,
    /// xxh3 of the uncompressed payload.
    pub payload_hash: u64,
    /// Bytes per `StateChunk`.
    pub chunk_size: u16,
    /// Player slots of the session and the lockstep keyframe interval: the joiner's lockstep
    /// client must use the host's.
    pub slots: u8,
    /// See `slots`.
    pub keyframe_interval: u8,
    /// When the lockstep server publishes frames: the joiner's client plays accordingly.
    pub mode: Mode,
    /// The host's X25519 public key for this joiner's datagram keys (`wire::keys`).
    pub key: [u8; PUBLIC_KEY_LEN],
    /// The seat's key: a reconnect or a rejoin shows it in its Hello to get the seat back
    /// while the seat is kept for this player (zeros for a spectator).
    pub seat_key: [u8; SEAT_KEY_LEN],
    /// Players in, by seat and name.
    pub players: Roster,
}

impl Welcome {
    /// The joiner's seat; `None` for a spectator (decoding let nothing else through).
    pub fn seat(&self) -> Option<PeerId> {
        (self.slot != SPECTATOR).then_some(PeerId(self.slot))
    }
}

/// Which start-state chunks arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateAck {
    /// Every chunk below this arrived.
    pub cum: u32,
    /// Sequence number of the latest arrival.
    pub latest_seq: u32,
    /// The whole state arrived and checks out.
    pub verified: bool,
    /// Bit i: chunk `cum + i` arrived.
    pub bitmap: Vec<u8>,
}

/// A session-layer datagram's body, by kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Msg<'a> {
    /// Joiner -> host.
    Hello(Hello),
    /// Host -> joiner: its SPAKE2 message.
    Challenge([u8; PAKE_MSG_LEN]),
    /// Host or server -> stranger: echo this cookie to show you receive at your address.
    Retry([u8; COOKIE_LEN]),
    /// Host -> joiner.
    Welcome(Welcome),
    /// Host -> joiner: why not.
    Refuse(String),
    /// Host -> joiner: a piece of the start state.
    StateChunk {
        /// Its index.
        index: u32,
        /// The sender's sequence number (for RTT and loss).
        seq: u32,
        /// Its bytes.
        data: &'a [u8],
    },
    /// Joiner -> host.
    StateAck(StateAck),
    /// Either way: leaving, and why.
    Bye(String),
    /// Host -> joiner: dropped for its silence, and why; it may come back.
    Dropped(String),
    /// Either way: path validation after an address change.
    Path(PathMsg),
    /// The host's lobby to a ready joiner: players in (the host's included) and wanted.
    Lobby {
        /// Players in, the host's included.
        ready: u8,
        /// Players wanted.
        want: u8,
    },
    /// A joiner with the start state that does not run yet (loads its content, opens its
    /// window) to the host: it is still coming. Sent until its first CTRL.
    Loading,
    /// A dedicated server's rooms.
    Room(RoomMsg<'a>),
}

impl Msg<'_> {
    /// The header kind this body goes with.
    pub fn kind(&self) -> Kind {
        match self {
            Msg::Hello(_) => Kind::Hello,
            Msg::Challenge(_) => Kind::Challenge,
            Msg::Retry(_) => Kind::Retry,
            Msg::Welcome(_) => Kind::Welcome,
            Msg::Refuse(_) => Kind::Refuse,
            Msg::StateChunk { .. } => Kind::StateChunk,
            Msg::StateAck(_) => Kind::StateAck,
            Msg::Bye(_) => Kind::Bye,
            Msg::Dropped(_) => Kind::Dropped,
            Msg::Path(_) => Kind::Path,
            Msg::Lobby { .. } => Kind::Lobby,
            Msg::Loading => Kind::Loading,
            Msg::Room(_) => Kind::Room,
        }
    }

    /// The whole datagram: header with `session`, then the body.
    pub fn encode(&self, session: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        Header {
            kind: self.kind(),
            session,
        }
        .write(&mut out);
        match self {
            Msg::Hello(h) => {
                put_str8(&mut out, &h.core_name, MAX_TEXT);
                put_str8(&mut out, &h.core_version, MAX_TEXT);
                put_str8(&mut out, &h.content_name, MAX_TEXT);
                match h.content_hash {
                    Some(hash) => {
                        out.push(1);
                        out.extend_from_slice(&hash.to_le_bytes());
                    }
                    None => out.push(0),
                }
                put_str8(&mut out, &h.player_name, MAX_PLAYER_NAME);
                put_str8(&mut out, &h.room, MAX_ROOM_NAME);
                out.push(u8::from(h.watch) | u8::from(h.no_share) << 1);
                out.extend_from_slice(&h.key);
                match &h.auth {
                    Auth::None => out.push(0),
                    Auth::Pake {
                        challenge,
                        msg,
                        confirm,
                    } => {
                        out.push(1);
                        out.extend_from_slice(challenge);
                        out.extend_from_slice(msg);
                        out.extend_from_slice(confirm);
                    }
                    Auth::NoPassword { challenge } => {
                        out.push(2);
                        out.extend_from_slice(challenge);
                    }
                }
                out.extend_from_slice(&h.cookie);
                out.extend_from_slice(&h.seat_key);
                pad(&mut out);
            }
            Msg::Challenge(nonce) => out.extend_from_slice(nonce),
            Msg::Retry(cookie) => out.extend_from_slice(cookie),
            Msg::Welcome(w) => {
                out.push(w.slot);
                out.extend_from_slice(&w.fps.to_bits().to_le_bytes());
                out.extend_from_slice(&w.frame.to_le_bytes());
                out.extend_from_slice(&w.raw_len.to_le_bytes());
                out.extend_from_slice(&w.packed_len.to_le_bytes());
                out.extend_from_slice(&w.payload_hash.to_le_bytes());
                out.extend_from_slice(&w.chunk_size.to_le_bytes());
                out.push(w.slots);
                out.push(w.keyframe_interval);
                out.push(w.mode.to_byte());
                out.extend_from_slice(&w.key);
                out.extend_from_slice(&w.seat_key);
                out.push(w.players.len().min(MAX_PLAYERS) as u8);
                for (seat, name) in w.players.iter().take(MAX_PLAYERS) {
                    out.push(seat.0);
                    put_str8(&mut out, name, MAX_PLAYER_NAME);
                }
            }
            Msg::Refuse(reason) => {
                let text = clip(reason, MAX_DATAGRAM - HEADER_LEN - 2);
                out.extend_from_slice(&(text.len() as u16).to_le_bytes());
                out.extend_from_slice(text.as_bytes());
            }
            Msg::StateChunk { index, seq, data } => {
                out.extend_from_slice(&index.to_le_bytes());
                out.extend_from_slice(&seq.to_le_bytes());
                out.extend_from_slice(data);
            }
            Msg::StateAck(a) => {
                out.extend_from_slice(&a.cum.to_le_bytes());
                out.extend_from_slice(&a.latest_seq.to_le_bytes());
                out.push(a.verified as u8);
                out.extend_from_slice(&a.bitmap[..a.bitmap.len().min(MAX_ACK_BITMAP)]);
            }
            Msg::Bye(reason) | Msg::Dropped(reason) => put_str8(&mut out, reason, MAX_TEXT),
            Msg::Path(PathMsg::Probe) => out.push(1),
            Msg::Path(PathMsg::Challenge(token)) => {
                out.push(2);
                out.extend_from_slice(token);
            }
            Msg::Path(PathMsg::Response(token)) => {
                out.push(3);
                out.extend_from_slice(token);
            }
            Msg::Path(PathMsg::Punch(token)) => {
                out.push(4);
                out.extend_from_slice(token);
            }
            Msg::Path(PathMsg::PunchBack(token)) => {
                out.push(5);
                out.extend_from_slice(token);
            }
            Msg::Path(PathMsg::Candidates(list)) => {
                out.push(6);
                out.push(list.iter().flatten().count() as u8);
                for a in list.iter().flatten() {
                    put_addr(&mut out, *a);
                }
            }
            Msg::Lobby { ready, want } => out.extend_from_slice(&[*ready, *want]),
            Msg::Loading => {}
            Msg::Room(r) => encode_room(&mut out, r),
        }
        out
    }

    /// Parses a session-layer datagram. Never panics; lockstep kinds are `UnknownKind`.
    pub fn decode(datagram: &[u8]) -> Result<(Header, Msg<'_>), WireError> {
        let (header, body) = Header::parse(datagram)?;
        let kind = header.kind;
        let bad = |_| WireError::Malformed(kind);
        let mut r = Reader { buf: body };
        let msg = match kind {
            Kind::Hello => {
                let core_name = r.str8().map_err(bad)?;
                let core_version = r.str8().map_err(bad)?;
                let content_name = r.str8().map_err(bad)?;
                let content_hash = match r.u8().map_err(bad)? {
                    0 => None,
                    1 => Some(r.u64().map_err(bad)?),
                    _ => return Err(WireError::Malformed(kind)),
                };
                let player_name = r.str8().map_err(bad)?;
                let room = r.str8().map_err(bad)?;
                let flags = r.u8().map_err(bad)?;
                if flags > 3 {
                    return Err(WireError::Malformed(kind));
                }
                let (watch, no_share) = (flags & 1 != 0, flags & 2 != 0);
                let key = r.array().map_err(bad)?;
                let auth = match r.u8().map_err(bad)? {
                    0 => Auth::None,
                    1 => Auth::Pake {
                        challenge: r.array().map_err(bad)?,
                        msg: r.array().map_err(bad)?,
                        confirm: r.array().map_err(bad)?,
                    },
                    2 => Auth::NoPassword {
                        challenge: r.array().map_err(bad)?,
                    },
                    _ => return Err(WireError::Malformed(kind)),
                };
                let cookie = r.array().map_err(bad)?;
                let seat_key = r.array().map_err(bad)?;
                r.padding().map_err(bad)?;
                Msg::Hello(Hello {
                    cookie,
                    seat_key,
                    core_name,
                    core_version,
                    content_name,
                    content_hash,
                    player_name,
                    room,
                    watch,
                    no_share,
                    key,
                    auth,
                })
            }
            Kind::Challenge => Msg::Challenge(r.array().map_err(bad)?),
            Kind::Retry => Msg::Retry(r.array().map_err(bad)?),
            Kind::Welcome => {
                let slot = r.u8().map_err(bad)?;
                let fps = f64::from_bits(r.u64().map_err(bad)?);
                let frame = r.u32().map_err(bad)?;
                let raw_len = r.u32().map_err(bad)?;
                let packed_len = r.u32().map_err(bad)?;
                let payload_hash = r.u64().map_err(bad)?;
                let chunk_size = r.u16().map_err(bad)?;
                let slots = r.u8().map_err(bad)?;
                let keyframe_interval = r.u8().map_err(bad)?;
                let mode =
                    Mode::from_byte(r.u8().map_err(bad)?).ok_or(WireError::Malformed(kind))?;
                let key = r.array().map_err(bad)?;
                let seat_key = r.array().map_err(bad)?;
                let n = r.u8().map_err(bad)? as usize;
                if n > MAX_PLAYERS
                    || (slot >= slots && slot != SPECTATOR)
                    || slots as usize > MAX_PLAYERS
                    || keyframe_interval == 0
                    || chunk_size == 0
                {
                    return Err(WireError::Malformed(kind));
                }
                if !fps.is_finite() || fps <= 0.0 {
                    return Err(WireError::Malformed(kind));
                }
                let mut players = Vec::with_capacity(n);
                for _ in 0..n {
                    let seat =
                        PeerId::new(r.u8().map_err(bad)?).ok_or(WireError::Malformed(kind))?;
                    players.push((seat, r.str8().map_err(bad)?));
                }
                let players = players.into_iter().collect();
                Msg::Welcome(Welcome {
                    slot,
                    fps,
                    frame,
                    raw_len,
                    packed_len,
                    payload_hash,
                    chunk_size,
                    slots,
                    keyframe_interval,
                    mode,
                    key,
                    seat_key,
                    players,
                })
            }
            Kind::Refuse => {
                let text = refuse_text(body).ok_or(WireError::Malformed(kind))?;
                if body.len() != 2 + u16::from_le_bytes([body[0], body[1]]) as usize {
                    return Err(WireError::Malformed(kind));
                }
                r.buf = &[];
                Msg::Refuse(text)
            }
            Kind::StateChunk => {
                let index = r.u32().map_err(bad)?;
                let seq = r.u32().map_err(bad)?;
                if r.buf.is_empty() {
                    return Err(WireError::Malformed(kind));
                }
                Msg::StateChunk {
                    index,
                    seq,
                    data: r.buf,
                }
            }
            Kind::StateAck => {
                let cum = r.u32().map_err(bad)?;
                let latest_seq = r.u32().map_err(bad)?;
                let flags = r.u8().map_err(bad)?;
                if flags > 1 || r.buf.len() > MAX_ACK_BITMAP {
                    return Err(WireError::Malformed(kind));
                }
                Msg::StateAck(StateAck {
                    cum,
                    latest_seq,
                    verified: flags == 1,
                    bitmap: r.buf.to_vec(),
                })
            }
            Kind::Bye => Msg::Bye(r.str8().map_err(bad)?),
            Kind::Dropped => Msg::Dropped(r.str8().map_err(bad)?),
            Kind::Path => Msg::Path(match r.u8().map_err(bad)? {
                1 => PathMsg::Probe,
                2 => PathMsg::Challenge(r.array().map_err(bad)?),
                3 => PathMsg::Response(r.array().map_err(bad)?),
                4 => PathMsg::Punch(r.array().map_err(bad)?),
                5 => PathMsg::PunchBack(r.array().map_err(bad)?),
                6 => {
                    let n = usize::from(r.u8().map_err(bad)?);
                    if n > MAX_PATH_CANDIDATES {
                        return Err(WireError::Malformed(kind));
                    }
                    let mut list = [None; MAX_PATH_CANDIDATES];
                    for slot in list.iter_mut().take(n) {
                        *slot = Some(r.addr().map_err(bad)?);
                    }
                    PathMsg::Candidates(list)
                }
                _ => return Err(WireError::Malformed(kind)),
            }),
            Kind::Lobby => {
                let ready = r.u8().map_err(bad)?;
                let want = r.u8().map_err(bad)?;
                if ready > want || usize::from(want) > crate::input::MAX_PLAYERS {
                    return Err(WireError::Malformed(kind));
                }
                Msg::Lobby { ready, want }
            }
            Kind::Loading => Msg::Loading,
            Kind::Room => Msg::Room(decode_room(&mut r).map_err(bad)?),
            // Carried by `resync` and `lockstep`, not by the handshake.
            // Chat and resyncs have their own codecs (`chat`, `resync`).
            Kind::Resync | Kind::Chat | Kind::Ctrl | Kind::Update => {
                return Err(WireError::UnknownKind(kind as u8))
            }
        };
        if !r.buf.is_empty() && !matches!(msg, Msg::StateChunk { .. } | Msg::StateAck(_)) {
            return Err(WireError::Malformed(kind));
        }
        // What a stranger sends first must be as large as any answer to it.
        let padded = matches!(
            msg,
            Msg::Hello(_)
                | Msg::Room(
                    RoomMsg::Open(_)
                        | RoomMsg::List { .. }
                        | RoomMsg::Locate { .. }
                        | RoomMsg::ListServers { .. }
                        | RoomMsg::ListReplays { .. }
                        | RoomMsg::FetchReplay { .. }
                )
        );
        if padded && datagram.len() < PADDED_LEN {
            return Err(WireError::Malformed(kind));
        }
        Ok((header, msg))
    }
}

/// Pads a datagram to `PADDED_LEN` bytes: a u16 count, then that many zero bytes.
fn pad(out: &mut Vec<u8>) {
    let n = PADDED_LEN.saturating_sub(out.len() + 2);
    out.extend_from_slice(&(n as u16).to_le_bytes());
    out.resize(out.len() + n, 0);
}

/// The datagram's protocol version byte, if it is a framelock datagram of the given kind,
/// whatever its version (a peer of another version must still be told why it is refused).
pub fn foreign_version(datagram: &[u8], kind: Kind) -> Option<u8> {
    (datagram.len() >= HEADER_LEN
        && datagram[0..2] == MAGIC
        && datagram[2] != PROTOCOL_VERSION
        && datagram[3] == kind as u8)
        // Lazily: `then_some` would read byte 2 of a datagram shorter than that.
        .then(|| datagram[2])
}

/// Reads a Refuse body. Its layout is frozen across protocol versions.
pub fn refuse_text(body: &[u8]) -> Option<String> {
    let mut r = Reader { buf: body };
    let len = r.u16().ok()? as usize;
    let text = r.take(len).ok()?;
    Some(printable(&String::from_utf8_lossy(text)))
}

/// Text from a peer as a terminal or window may show it: line breaks, tabs and the
/// Unicode line and paragraph separators become spaces; other control characters and
/// format characters (Unicode category Cf: the bidirectional overrides such as U+202E
/// that show a name backwards, zero-width spaces and joiners that make two names look
/// alike, the soft hyphen) go. A name, a refusal, a goodbye or a chat line could otherwise
/// carry escape sequences that clear a screen, forge a log line, or pass for someone
/// else's name. Every string the handshake and the chat decode passes through here.
pub fn printable(text: &str) -> String {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    text.chars()
        .filter_map(|c| match c {
            '\n' | '\r' | '\t' | '\u{2028}' | '\u{2029}' => Some(' '),
            c if c.is_control() => None,
            c if c.general_category() == GeneralCategory::Format => None,
            c => Some(c),
        })
        .collect()
}

/// `s` cut to at most `max` bytes on a char boundary.
pub fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// An address as the Room layouts carry it (see the table above).
fn put_addr(out: &mut Vec<u8>, addr: SocketAddr) {
    match addr.ip() {
        IpAddr::V4(ip) => {
            out.push(4);
            out.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            out.push(6);
            out.extend_from_slice(&ip.octets());
        }
    }
    out.extend_from_slice(&addr.port().to_le_bytes());
}

fn put_str8(out: &mut Vec<u8>, s: &str, max: usize) {
    let s = clip(s, max.min(255));
    out.push(s.len() as u8);
    out.extend_from_slice(s.as_bytes());
}

/// Bounds-checked cursor; every read fails instead of panicking on short input.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ()> {
        if self.buf.len() < n {
            return Err(());
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], ()> {
        self.take(N)?.try_into().map_err(|_| ())
    }
    fn u8(&mut self) -> Result<u8, ()> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, ()> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32, ()> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, ()> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    /// A u16 count and that many zero bytes (see `pad`).
    fn padding(&mut self) -> Result<(), ()> {
        let n = usize::from(self.u16()?);
        if self.take(n)?.iter().any(|&b| b != 0) {
            return Err(());
        }
        Ok(())
    }
    fn addr(&mut self) -> Result<SocketAddr, ()> {
        let ip: IpAddr = match self.u8()? {
            4 => IpAddr::from(self.array::<4>()?),
            6 => IpAddr::from(self.array::<16>()?),
            _ => return Err(()),
        };
        Ok(SocketAddr::new(ip, self.u16()?))
    }
    fn str8(&mut self) -> Result<String, ()> {
        let n = self.u8()? as usize;
        let text = std::str::from_utf8(self.take(n)?).map_err(|_| ())?;
        Ok(printable(text))
    }
}

#[cfg(test)]
mod tests;
