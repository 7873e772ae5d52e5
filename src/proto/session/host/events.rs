//! What the host's session tells its driver (`Endpoint`): events, why a joiner left, and
//! the players as it sees them.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use crate::lockstep::Slot;
use crate::session::LOADING_LIMIT;

/// Why a joiner left the host's session: its lobby, or its roster during the game. Why a
/// player's input in the running game turned neutral is an `PlayerOutReason`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionLeftReason {
    /// The joiner said goodbye, with its reason.
    Bye(String),
    /// Silent for too long before it was ready.
    Timeout,
    /// Silent for too long while it waited, ready, for the others.
    Silent,
    /// Still loading (not running) `LOADING_LIMIT` after it had the start state.
    SlowStart,
    /// Removed by the host (`kick`), with the reason sent to it.
    Kicked(String),
    /// Dropped for its silence, with the reason sent to it: it may come back.
    Dropped(String),
}

impl fmt::Display for SessionLeftReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionLeftReason::Bye(r) => write!(f, "left ({r})"),
            SessionLeftReason::Timeout => write!(f, "timed out during the handshake"),
            SessionLeftReason::Silent => {
                write!(f, "went silent while waiting for the game to start")
            }
            SessionLeftReason::SlowStart => write!(
                f,
                "was still loading {} s after it had the start state",
                LOADING_LIMIT.as_secs()
            ),
            SessionLeftReason::Kicked(r) => write!(f, "removed by the host ({r})"),
            SessionLeftReason::Dropped(r) => write!(f, "was dropped ({r})"),
        }
    }
}

/// What happened, for the driver (`Endpoint`) to act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostEvent {
    /// Admitted; the start state transfer follows.
    Admitted {
        /// Who.
        slot: Slot,
        /// The name it goes by.
        name: String,
        /// Its address.
        addr: SocketAddr,
    },
    /// The joiner has the whole start state and verified it.
    Ready {
        /// Who.
        slot: Slot,
    },
    /// A ready joiner does not run yet (loads its content, opens its window) but says it is
    /// still coming (`Msg::Loading`, every `LOADING_INTERVAL`), `since` after the host had
    /// its last ack of the start state. Raised for each such datagram until `LOADING_LIMIT`
    /// has passed: once the lobby is closed, pass it on to the lockstep server
    /// (`Server::starting`), which hears a player only from its CTRLs otherwise.
    Loading {
        /// Who.
        slot: Slot,
        /// Time since it had the start state.
        since: Duration,
    },
    /// It left the lobby or the session.
    Left {
        /// Who.
        slot: Slot,
        /// Why.
        reason: SessionLeftReason,
    },
    /// A join attempt was refused, with the reason the joiner was sent.
    Refused {
        /// Its address.
        addr: SocketAddr,
        /// Why.
        reason: String,
    },
    /// A player taking a seat in the running game, or a spectator, was admitted: it needs
    /// the machine's state at a frame boundary
    /// ([`HostSession::handle_state`](super::HostSession::handle_state)).
    StateWanted {
        /// Who.
        slot: Slot,
    },
    /// The joiner's datagrams come from a new address, which answered its challenge: its
    /// seat moved there.
    PathChanged {
        /// Who.
        slot: Slot,
        /// The address it had.
        from: SocketAddr,
        /// The address it has now.
        to: SocketAddr,
    },
}

/// A player or a spectator as the host sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Player {
    /// Its seat, or its spectator id.
    pub slot: Slot,
    /// Its name.
    pub name: String,
    /// `None` for the host's own player.
    pub addr: Option<SocketAddr>,
    /// It has the start state.
    pub ready: bool,
    /// Round trip to the host measured during the start-state transfer (`None` for the
    /// host's own player, or before any unambiguous sample).
    pub rtt: Option<Duration>,
}
