//! What the client tells its driver: [`ClientEvent`]s. Data only; imports nothing of the
//! client.

use std::time::Duration;

use super::super::frame::{Frame, PeerId};
use super::super::msg::PauseRefusal;

/// What happened, for the driver to act on or log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientEvent {
    /// Nothing heard from the server for `silent_for` (>= `warn_after`); once per silence.
    ServerSilent {
        /// How long nothing has come.
        silent_for: Duration,
    },
    /// The server was silent past the timeout; the client stops sending.
    ServerLost,
    /// `peer` left; it has neutral input from `from_frame` on.
    PlayerLeft {
        /// The player's slot.
        peer: PeerId,
        /// The first frame of neutral input.
        from_frame: Frame,
    },
    /// The server found `peer`'s checksum of `frame` different from the host player's.
    Desync {
        /// The frame compared.
        frame: Frame,
        /// The player whose checksum differs.
        peer: PeerId,
    },
    /// `peer` (a late joiner, or a player back) plays from `from_frame` on.
    PlayerJoined {
        /// The player's slot.
        peer: PeerId,
        /// The first frame its input counts.
        from_frame: Frame,
        /// The player's name.
        name: String,
    },
    /// `peer` paused the game: no frame from `at` on runs until it is resumed.
    Paused {
        /// Who paused.
        peer: PeerId,
        /// The first frame that waits.
        at: Frame,
    },
    /// `peer` resumed the game paused at `at`.
    Resumed {
        /// Who resumed.
        peer: PeerId,
        /// The frame the game goes on from.
        at: Frame,
    },
    /// This player's pause or resume request was refused.
    PauseRefused {
        /// Why.
        why: PauseRefusal,
    },
}
