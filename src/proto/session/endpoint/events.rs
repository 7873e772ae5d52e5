//! What an endpoint tells its driver: events, and why a player is out of the game.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use crate::lockstep::{Frame, PeerId, Slot, SpectatorId};
use crate::session::{SessionLeftReason, LOADING_LIMIT};

/// Why a player is out of a running game: its input turns neutral. Why it left the host's
/// session is a [`SessionLeftReason`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlayerOutReason {
    /// It said goodbye, or was removed.
    Left,
    /// Silent for the lockstep timeout.
    TimedOut,
    /// Silent for the lockstep timeout while it was still loading.
    TimedOutLoading,
    /// Still loading `LOADING_LIMIT` after it had the start state.
    SlowStart,
}

impl fmt::Display for PlayerOutReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlayerOutReason::Left => write!(f, "left"),
            PlayerOutReason::TimedOut => write!(f, "timed out"),
            PlayerOutReason::TimedOutLoading => write!(f, "timed out while loading"),
            PlayerOutReason::SlowStart => write!(
                f,
                "still loading {} s after it had the start state",
                LOADING_LIMIT.as_secs()
            ),
        }
    }
}

/// What happened, for the driver to log or act on. A seat is a [`PeerId`], a spectator a
/// [`SpectatorId`]; a [`Slot`] may be either.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndpointEvent {
    /// Admitted to the lobby; its start-state transfer follows. (Its input counts only
    /// from [`PlayerJoined`](Self::PlayerJoined)'s frame on.)
    Admitted {
        /// Who.
        slot: Slot,
        /// The name it goes by.
        name: String,
        /// Its address.
        addr: SocketAddr,
    },
    /// It has the whole start state; `ready` of `want` players are in.
    Ready {
        /// Who.
        slot: Slot,
        /// Players with the start state, the host's included.
        ready: usize,
        /// Players the session takes.
        want: u8,
    },
    /// A join attempt was refused, with the reason the joiner was sent.
    Refused {
        /// Its address.
        addr: SocketAddr,
        /// Why.
        reason: String,
    },
    /// A player left the lobby, or said goodbye during the game (a `PlayerOut` follows
    /// then). A spectator's leaving is `SpectatorLeft`.
    Left {
        /// The player.
        slot: PeerId,
        /// Why.
        reason: SessionLeftReason,
    },
    /// Every player is in and ready: the lockstep server runs, with these seats.
    Started {
        /// The seats.
        slots: Vec<PeerId>,
    },
    /// The lobby's time ran out before every player was in.
    LobbyExpired {
        /// Players with the start state, the host's included.
        ready: usize,
        /// Players the session takes.
        want: u8,
    },
    /// Nothing heard from the player for `silent_for` (once per silence).
    PlayerSilent {
        /// The player.
        slot: PeerId,
        /// How long nothing has come.
        silent_for: Duration,
    },
    /// The player is out of the game: neutral input from `from_frame` on.
    PlayerOut {
        /// The player.
        slot: PeerId,
        /// The frame it counts from.
        from_frame: Frame,
        /// Why.
        reason: PlayerOutReason,
    },
    /// The game waits for a player that is still loading, `waited` after it had the start
    /// state; `again` on the later reminders.
    StillLoading {
        /// The player.
        slot: PeerId,
        /// Time since it had the start state.
        waited: Duration,
        /// A reminder, not the first notice.
        again: bool,
    },
    /// A player the game waited for runs, `waited` after it had the start state.
    Running {
        /// The player.
        slot: PeerId,
        /// Time since it had the start state.
        waited: Duration,
    },
    /// The player's checksum of `frame` differs from the reference player's (with no local
    /// player: from most players'). With `send_state`, hand the machine's state to
    /// [`Endpoint::handle_state`](super::Endpoint::handle_state) at the next frame boundary;
    /// otherwise a recovery is under way already, or (with no local player) the endpoint
    /// fetches a state itself, from `source`.
    Desync {
        /// The frame.
        frame: Frame,
        /// The player.
        slot: PeerId,
        /// The reference checksum.
        expected: u64,
        /// The player's checksum.
        got: u64,
        /// Hand in a state for it.
        send_state: bool,
        /// The player the endpoint fetches a state from.
        source: Option<PeerId>,
    },
    /// The player has the state for `frame` and continues from it.
    Resynced {
        /// Who.
        slot: Slot,
        /// The frame.
        frame: Frame,
    },
    /// Hand the machine's state to [`Endpoint::handle_state`](super::Endpoint::handle_state)
    /// at the next frame boundary, for these joiners of the running game (late players,
    /// spectators).
    StateWanted {
        /// Who.
        slots: Vec<Slot>,
    },
    /// A player who joined the running game (or came back) plays from `from_frame` on.
    PlayerJoined {
        /// The player.
        slot: PeerId,
        /// The frame it counts from.
        from_frame: Frame,
        /// The name it goes by.
        name: String,
    },
    /// A spectator has its state and watches from `frame` on.
    Watching {
        /// The spectator.
        slot: SpectatorId,
        /// The frame.
        frame: Frame,
    },
    /// A spectator left (`reason` says why).
    SpectatorLeft {
        /// The spectator.
        slot: SpectatorId,
        /// Why.
        reason: String,
    },
    /// A joiner of the running game could not be given a state and was sent away.
    NoState {
        /// Who.
        slot: Slot,
    },
    /// A joiner's datagrams come from a new address, which answered a challenge: its
    /// datagrams go there from now on.
    PathChanged {
        /// Who.
        slot: Slot,
        /// The address it had.
        from: SocketAddr,
        /// The address it has now.
        to: SocketAddr,
    },
}
