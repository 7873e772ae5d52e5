//! The session layer: who may join, with what, and the start state every joiner begins from.
//! Sans-IO like quinn-proto: no sockets, no clock reads; `now` is passed in and randomness
//! comes from a caller-provided seed. `net` carries the datagrams; `lockstep` takes over once
//! every player is ready. [`Endpoint`] is a session's whole server side (this layer, the
//! lockstep server and the transfers); `serve` runs one per room. It imports `lockstep`, `wire`,
//! `input` and `wording`, never `serve` above it; in `framelock-proto` it cannot reach a
//! socket, `app` or `netplay` at all.
//!
//! Handshake (host = H, joiner = J; every datagram starts with `wire::Header`; on a
//! dedicated server H is the room, see `room` for opening one):
//! ```text
//! J -> H  Hello      core, core version, content name + xxh3, player name, room (empty for
//!                    a direct host), the joiner's X25519 public key, padded to 1200 bytes
//!                                                                    (resent every 250 ms)
//! H -> J  Challenge  the host's SPAKE2 message         (only if the host set a password)
//! J -> H  Hello      ... + the joiner's SPAKE2 message and key confirmation (see `auth`)
//! H -> J  Welcome    slot, session id, fps, payload length + xxh3, player names, the
//!                    host's X25519 public key; tagged with the keys the two public keys
//!                    give (`wire::keys`), as is every datagram either way from here on
//!      or Refuse     "content differs: host has a.md (xxh3 ..), you have b.md (xxh3 ..)"
//!      or Room/NoRoom  the room asked for does not exist, and the ones that do
//! H -> J  StateChunk x N   lz4(options + state + SRAM) in 1152-byte chunks
//! J -> H  StateAck   cumulative index + bitmap; the last one says "verified"
//! H -> J  Lobby      players in and wanted, every 500 ms while the lobby waits for more
//! J -> H  Loading    every 250 ms from the start state until the first CTRL (at most 30 s)
//! H -> J  Dropped    the joiner went silent and lost its seat; it may come back (it runs
//!                    the handshake again and is given its seat back, by name)
//! J <> H  Path       a joiner that hears nothing sends a Probe; a tagged datagram from a
//!                    new address is answered with a Challenge there, and its Response
//!                    moves the peer to that address
//! J <> H  Chat       a player's or spectator's message, relayed by H to everyone else in
//!                    the session, and the acks of both (see `chat`)
//! ```
//!
//! In a room its creator hosts, the server passes every datagram above between J and H
//! whole (`Room/Forward`), introduces the two after the Welcome, and they try a direct path
//! with tagged `Path/Punch`es ([`direct`]); the participant routes each datagram over
//! whichever way works, and neither session machine sees the difference.
//!
//! One process's end of all this is a [`Participant`]: the host's [`Endpoint`] with its own
//! player's lockstep client, or a joiner's handshake, [`Seat`] and client. It holds every
//! rule about time and silence (lobbies, keepalives, timeouts, reconnecting, path changes),
//! and asks the machine for its work with [`CoreRequest`]s.
//! The joiner takes a Welcome only if its tag matches: a public key altered on the way (in
//! the Hello or the Welcome) costs a resend, and a Hello with another key rekeys the seat
//! until the joiner has used its keys. After that a datagram from the joiner's address
//! whose tag fails is dropped unread (`SessionStats::dropped_auth`), a Hello no longer
//! counts as a sign of life, and the joiner drops untagged datagrams from the host.
//!
//! In a room with a password the room's creator checks each answer: the server relays the
//! challenge and the answer (`msg::RelayStep`) and admits the joiner on the creator's
//! verdict.
//!
//! Spectators (Hello with `watch`) take slots from 16 on, not a seat; the Welcome names
//! them with slot 0xff. A Hello for a running game (a free seat, a spectator) is admitted
//! first and welcomed once the [`Endpoint`] has a state of the running machine
//! (`HostSession::handle_state`: the local player's, or a running player's fetched with a
//! resync request); the Welcome's frame says where the state is, and the lockstep server
//! sends frames from there (a late player's input counts once it caught up, see
//! `lockstep::Server::add_late_peer`). Meanwhile the joiner's Hellos are answered with an
//! empty `Lobby`. A seat that came free while the game ran goes back to its player: by
//! name, or, for one with no name of its own, by address.
//!
//! Calling order for both `HostSession` and `JoinSession`, as for every machine here (the
//! face is written down at [`Transmit`]): feed every session-layer datagram
//! (`is_session_datagram`) to `handle_datagram`, then call `handle_timeout(now)`, drain
//! `poll_transmit(now)` and `poll_event()`, and sleep until `poll_timeout()` or the next
//! datagram. Keep doing so after the start: late chunks and Byes still arrive, and a joiner
//! sends `Loading` until told (`JoinSession::end_loading`) that its lockstep client speaks for it.

mod auth;
pub mod chat;
pub mod direct;
mod endpoint;
pub mod guard;
mod host;
mod join;
pub mod msg;
mod participant;
mod payload;
mod resync;
mod room;
mod seat;
mod transfer;

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use thiserror::Error;

pub use crate::wire::{Dropped, Handled, Transmit};
use crate::wire::{HEADER_LEN, MAGIC};

pub use chat::{ChatLine, ChatRefused, Speaker};
pub use endpoint::{Endpoint, EndpointConfig, EndpointEvent, EndpointStats, PlayerOutReason};
pub use host::{
    HostConfig, HostEvent, HostSession, Player, SessionLeftReason, DEFAULT_MAX_SPECTATORS,
    FIRST_SPECTATOR_SLOT, MAX_SPECTATORS, SEAT_KEPT,
};
pub use join::{JoinConfig, JoinEvent, JoinSession, StartState};
pub use participant::{
    CoreReply, CoreRequest, Participant, ParticipantConfig, ParticipantEvent, DEFAULT_RECONNECT,
    FRAME_LOOP_AWAY, LOBBY_KEEPALIVE, LOBBY_SILENCE, PROBE_AFTER,
};
pub use payload::{StartPayload, MAX_PAYLOAD};
pub use resync::{resync_part, resync_request, ResyncPart, ResyncRecv, ResyncSend};
pub use room::{is_kind, OpenEvent, RoomOpener, Upload, MAX_UPLOAD};
pub use seat::{Seat, SeatEvent};
pub use transfer::Progress;

/// Silence after which a handshake or start-state transfer is given up.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Hello (and Welcome) retransmission interval until answered.
pub const HELLO_INTERVAL: Duration = Duration::from_millis(250);
/// How often a joiner that has the start state but does not run yet (it loads its content,
/// unserializes the state, opens its window) tells the host it is still coming
/// (`Msg::Loading`): half the 500 ms after which a silent player is warned about, so one
/// lost datagram raises no warning.
pub const LOADING_INTERVAL: Duration = Duration::from_millis(250);
/// Longest a joiner may take from the start state to its first CTRL while the others wait
/// at frame 0. Loading a large romset from a slow disk and a first Vulkan window (shader
/// caches cold) take seconds each; 30 s covers both with room, and caps how long a peer
/// whose start hangs (a driver deadlock while its network thread lives on) holds everyone.
pub const LOADING_LIMIT: Duration = Duration::from_secs(30);

/// What a peer runs; the host refuses joiners whose core, core version or content differ.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionInfo {
    /// The core's `library_name`.
    pub core_name: String,
    /// The core's `library_version`.
    pub core_version: String,
    /// File name of the content, shown in messages only; the hash decides.
    pub content_name: String,
    /// xxh3 of the content file; `None` for cores that run without content.
    pub content_hash: Option<u64>,
    /// Core option values. The host's are sent to joiners, which apply them.
    pub options: Vec<(String, String)>,
    /// The name the others see.
    pub player_name: String,
}

/// Why a join failed or a session ended, worded for the player.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SessionError {
    /// The host refused the join (its reason).
    #[error("refused by the host: {0}")]
    Refused(String),
    /// A dedicated server refused it (its reason).
    #[error("refused by the server: {0}")]
    RefusedByServer(String),
    /// The server has no room of that name.
    #[error("no room {room} on {addr}{}", open_rooms(.rooms))]
    NoRoom {
        /// The room asked for.
        room: String,
        /// The server.
        addr: SocketAddr,
        /// The rooms it has (some of them).
        rooms: Vec<String>,
    },
    /// Another server of the fleet holds the room.
    #[error("room {room} is on {server}: join it there")]
    Moved {
        /// The room asked for.
        room: String,
        /// The server that holds it.
        server: String,
    },
    /// Nothing came back from the address.
    #[error("no answer from {addr} after {secs} s: is the host running and the port open?")]
    NoAnswer {
        /// The address asked.
        addr: SocketAddr,
        /// How long it waited.
        secs: u64,
    },
    /// Something answered that is not framelock.
    #[error(
        "{addr} answered with {datagrams} datagram(s) that are not a framelock host's: is \
         that the host's address and port?"
    )]
    NotFramelock {
        /// The address asked.
        addr: SocketAddr,
        /// How many datagrams it sent.
        datagrams: u32,
    },
    /// The host stopped answering mid-handshake.
    #[error("the host went silent during the handshake ({secs} s without a datagram)")]
    HostSilent {
        /// How long it was silent.
        secs: u64,
    },
    /// The host speaks another protocol version.
    #[error("the host speaks framelock protocol {host}, this build speaks {ours}")]
    VersionMismatch {
        /// The host's version.
        host: u8,
        /// This build's.
        ours: u8,
    },
    /// The host said goodbye (its reason).
    #[error("the host left: {0}")]
    HostLeft(String),
    /// The host dropped this player for its silence (its reason); it may come back.
    #[error("dropped by the host: {0}")]
    Dropped(String),
    /// The link stayed down past the time this player waits to reconnect.
    #[error("lost the connection and could not reconnect within {secs} s")]
    ReconnectGaveUp {
        /// How long it tried.
        secs: u64,
    },
    /// The start state failed its check or cannot be used (why).
    #[error("start state is bad: {0}")]
    BadState(String),
    /// The start state is over `MAX_PAYLOAD`.
    #[error("start state is too big (limit {} MiB)", MAX_PAYLOAD >> 20)]
    PayloadTooBig,
    /// This side left on purpose.
    #[error("left the session")]
    Left,
}

fn open_rooms(rooms: &[String]) -> String {
    match rooms {
        [] => " (it has no open rooms)".into(),
        _ => format!(" (open rooms: {})", rooms.join(", ")),
    }
}

/// Datagram counters of one session-layer state machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// Datagrams handed in.
    pub datagrams_in: u64,
    /// Datagrams handed out to send.
    pub datagrams_out: u64,
    /// Malformed, truncated, unknown-sender, unexpected and wrong-session datagrams.
    pub dropped_invalid: u64,
    /// The subset of `dropped_invalid` that carried another session id.
    pub dropped_wrong_session: u64,
    /// Datagrams from a peer that holds the session keys whose tag did not check out
    /// (forged, or altered on the way), dropped before any field of them was read.
    pub dropped_auth: u64,
    /// Host: start-state chunks sent, and how many of those were resends.
    pub chunks_sent: u64,
    /// See `chunks_sent`.
    pub chunks_resent: u64,
    /// Joiner: chunks that arrived again after they were already in (wasted resends).
    pub chunks_duplicate: u64,
}

impl SessionStats {
    fn drop(&mut self, why: &Dropped) {
        if matches!(why, Dropped::Unauthentic) {
            self.dropped_auth += 1;
            return;
        }
        self.dropped_invalid += 1;
        if matches!(why, Dropped::WrongSession { .. }) {
            self.dropped_wrong_session += 1;
        }
    }
}

/// True for framelock datagrams of a session-layer kind (0x01..=0x0F, 0x20..), whatever their
/// protocol version (a joiner of another version must still get a readable Refuse).
pub fn is_session_datagram(datagram: &[u8]) -> bool {
    datagram.len() >= HEADER_LEN
        && datagram[0..2] == MAGIC
        && ((0x01..=0x0f).contains(&datagram[3]) || datagram[3] >= 0x20)
}

/// A core option whose value the joiner had different from the host's (the host's wins).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionDiff {
    /// The option.
    pub key: String,
    /// The host's value (`None`: unset).
    pub host: Option<String>,
    /// This joiner's value.
    pub local: Option<String>,
}

impl fmt::Display for OptionDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The host's values are applied as they are; only their display is made printable.
        let show = |v: &Option<String>| v.as_deref().map_or("(unset)".into(), msg::printable);
        write!(
            f,
            "core option {}: host has {}, you had {} (using the host's)",
            msg::printable(&self.key),
            show(&self.host),
            show(&self.local)
        )
    }
}

/// Options whose values differ between the host's and the local list, sorted by key.
pub fn option_diffs(host: &[(String, String)], local: &[(String, String)]) -> Vec<OptionDiff> {
    use std::collections::BTreeMap;
    let h: BTreeMap<_, _> = host.iter().map(|(k, v)| (k, v)).collect();
    let l: BTreeMap<_, _> = local.iter().map(|(k, v)| (k, v)).collect();
    let mut keys: Vec<_> = h.keys().chain(l.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| h.get(k) != l.get(k))
        .map(|k| OptionDiff {
            key: k.clone(),
            host: h.get(k).map(|v| v.to_string()),
            local: l.get(k).map(|v| v.to_string()),
        })
        .collect()
}

#[cfg(test)]
mod sim_tests;
#[cfg(test)]
pub(crate) mod testkit;
