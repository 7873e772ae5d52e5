//! [`HostConfig`]: who may join the host's session and what they are told. Data only: it
//! must not import the [`HostSession`](super::HostSession) that uses it.

use std::net::SocketAddr;
use std::time::Duration;

use super::super::HANDSHAKE_TIMEOUT;
use super::{DEFAULT_MAX_SPECTATORS, READY_TIMEOUT};
use crate::input::MAX_PLAYERS;
use crate::lockstep::Frame;

/// The host's side of the handshake: who may join, and what they are told.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// Random, non-zero (0 means "unassigned" on the wire and is replaced by 1).
    pub session_id: u32,
    /// Seeds the password checks' randomness (32 bytes from the OS in real use).
    pub entropy: [u8; 32],
    /// Joiners must prove they know it; `None` or empty admits anyone.
    pub password: Option<String>,
    /// A room on a dedicated server: the room's creator, who plays in slot 0 and alone knows
    /// the password, if one is set (`relayed_password`): every other joiner's check is
    /// relayed to it (`HostEvent::Relay`, `HostSession::handle_relay`).
    pub creator: Option<SocketAddr>,
    /// A password is set in a room: its creator checks it (see `creator`).
    pub relayed_password: bool,
    /// Players including the host's own (at most 8).
    pub max_players: u8,
    /// The game starts once this many players are in (0: `max_players`); the other seats
    /// can be taken while it runs.
    pub start_with: u8,
    /// Spectators admitted at once.
    pub max_spectators: u8,
    /// The host plays in slot 0; `false` for a dedicated host (joiners take slots 0..).
    pub host_is_player: bool,
    /// Frames per second of the core, told to joiners.
    pub fps: f64,
    /// Lockstep keyframe interval K and mode, told to joiners in Welcome.
    pub keyframe_interval: u8,
    /// See `keyframe_interval`.
    pub mode: crate::lockstep::Mode,
    /// Frame at which the start state was taken.
    pub frame: Frame,
    /// Silence after which a joiner in the handshake or transfer is dropped.
    pub handshake_timeout: Duration,
    /// A joiner that has the start state and waits for the others in the lobby is dropped
    /// after this long without a datagram (it sends `Msg::Loading` while it loads, then its
    /// lockstep client CTRLs while it waits).
    pub ready_timeout: Duration,
    /// A room on a dedicated server that this process hosts (`session::direct`): every
    /// joiner comes relayed by the server, which checked its address already, so a Hello
    /// naming this room needs no cookie here.
    pub hosted_room: Option<String>,
}

impl HostConfig {
    /// Defaults: 8 seats, the host plays slot 0, no password, the usual timeouts.
    pub fn new(session_id: u32, entropy: [u8; 32], fps: f64) -> HostConfig {
        HostConfig {
            session_id,
            entropy,
            password: None,
            creator: None,
            relayed_password: false,
            max_players: MAX_PLAYERS as u8,
            start_with: 0,
            max_spectators: DEFAULT_MAX_SPECTATORS,
            host_is_player: true,
            fps,
            keyframe_interval: crate::lockstep::DEFAULT_KEYFRAME_INTERVAL as u8,
            mode: crate::lockstep::Mode::Strict,
            frame: Frame::ZERO,
            handshake_timeout: HANDSHAKE_TIMEOUT,
            ready_timeout: READY_TIMEOUT,
            hosted_room: None,
        }
    }
}
