//! What the server tells its driver: [`ServerEvent`]s, and why a player left. Data only;
//! imports nothing of the server.

use std::time::Duration;

use super::super::frame::{Frame, PeerId, SpectatorId};

/// Why the server dropped a peer ([`ServerEvent::PeerLeft`]): the lockstep layer's view,
/// which the session's endpoint words for its players as a `PlayerOutReason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerLeftReason {
    /// [`Server::remove_peer`](super::Server::remove_peer) was called.
    Removed,
    /// Silent for longer than [`Config::timeout`](super::super::Config::timeout).
    TimedOut,
}

/// What happened, for the driver to act on or log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerEvent {
    /// Nothing heard from `peer` for `silent_for` (>= `warn_after`); raised once per silence.
    PeerSilent {
        /// The player's slot.
        peer: PeerId,
        /// How long nothing has come.
        silent_for: Duration,
    },
    /// `peer`, added after the start ([`Server::add_late_peer`](super::Server::add_late_peer)), caught up: its input
    /// enters the game from `from_frame` on (every client is told).
    PeerJoined {
        /// The player's slot.
        peer: PeerId,
        /// The first frame its input counts.
        from_frame: Frame,
    },
    /// Spectator `id` was silent past the timeout and is out.
    SpectatorLeft {
        /// The spectator.
        id: SpectatorId,
    },
    /// Spectator `id` fell more than [`SPECTATOR_LAG_SECS`](super::SPECTATOR_LAG_SECS) behind the frontier: it gets no
    /// frames until [`Server::restart_spectator`](super::Server::restart_spectator) gives it a fresh start.
    SpectatorBehind {
        /// The spectator.
        id: SpectatorId,
        /// How far behind the frontier its acks are.
        frames: u32,
    },
    /// `peer` is out of the session; it gets neutral input from `from_frame` on.
    PeerLeft {
        /// The player's slot.
        peer: PeerId,
        /// The first frame of neutral input.
        from_frame: Frame,
        /// Why.
        reason: PeerLeftReason,
    },
    /// `peer`'s checksum of `frame` differs from the reference player's (slot 0, the host's
    /// player, or the lowest slot still in the session).
    Desync {
        /// The frame compared.
        frame: Frame,
        /// The player whose checksum differs.
        peer: PeerId,
        /// The reference checksum.
        expected: u64,
        /// The player's.
        got: u64,
    },
}
