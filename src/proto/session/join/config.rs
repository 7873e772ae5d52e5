//! What a joiner is told and what it hands over: [`JoinConfig`] (whom to join, with what),
//! [`StartState`] (what the host sent to start from) and [`JoinEvent`]. Data only: it must
//! not import the [`JoinSession`](super::JoinSession) that uses them.

use std::net::SocketAddr;
use std::time::Duration;

use crate::lockstep::{PeerId, Roster};
use crate::session::payload::StartPayload;
use crate::session::{OptionDiff, SessionError, SessionInfo, HANDSHAKE_TIMEOUT, HELLO_INTERVAL};

/// What a joiner asks for and with what.
#[derive(Clone, Debug)]
pub struct JoinConfig {
    /// The host (or server) to join.
    pub host: SocketAddr,
    /// What this joiner runs; the host compares it with its own.
    pub info: SessionInfo,
    /// The session's password, if it has one.
    pub password: Option<String>,
    /// The room on a dedicated server; empty for a direct host.
    pub room: String,
    /// This joiner opened the room: it checks other joiners' passwords, which the server
    /// relays to it (it knows `password`; the server does not).
    pub creator: bool,
    /// Seeds the key pair and the password check's randomness: from the OS unless a test
    /// sets it to repeat a run.
    pub entropy: [u8; 32],
    /// How often the Hello is sent until it is answered.
    pub hello_interval: Duration,
    /// Silence after which the join fails.
    pub timeout: Duration,
    /// Watch the game (a spectator) instead of playing.
    pub watch: bool,
    /// Ask the server to keep no replay of the room (`--no-share`).
    pub no_share: bool,
    /// The key of the seat a Welcome gave this player (zeros: none yet): a reconnect
    /// shows it to get the seat back while the host keeps it.
    pub seat_key: [u8; crate::session::msg::SEAT_KEY_LEN],
}

impl JoinConfig {
    /// Defaults: no password, no room, a player, the usual timeout.
    pub fn new(host: SocketAddr, info: SessionInfo) -> JoinConfig {
        JoinConfig {
            host,
            info,
            password: None,
            room: String::new(),
            creator: false,
            entropy: rand::random(),
            hello_interval: HELLO_INTERVAL,
            timeout: HANDSHAKE_TIMEOUT,
            watch: false,
            no_share: false,
            seat_key: [0; crate::session::msg::SEAT_KEY_LEN],
        }
    }
}

/// Everything a joiner needs to start: load the options and the state, then play `slot`.
#[derive(Clone, Debug, PartialEq)]
pub struct StartState {
    /// The seat to play; `None`: it watches (a spectator).
    pub slot: Option<PeerId>,
    /// The session id.
    pub session: u32,
    /// Players in, by seat and name.
    pub players: Roster,
    /// The core's frames per second, as the host runs it.
    pub fps: f64,
    /// The session frame the state is at.
    pub frame: crate::lockstep::Frame,
    /// Session size in player slots and the lockstep keyframe interval, as the host set them.
    pub slots: u8,
    /// See `slots`.
    pub keyframe_interval: u8,
    /// The session's lockstep mode.
    pub mode: crate::lockstep::Mode,
    /// Host's options, state and SRAM; apply the options before loading the state.
    pub payload: StartPayload,
    /// Where the joiner's own option values differed (already replaced by the host's).
    pub option_diffs: Vec<OptionDiff>,
}

impl StartState {
    /// The lockstep settings this joiner plays with: the session's slots, keyframe interval,
    /// mode, id and frame rate over `base` (this end's own: send budget, header size, timeouts).
    pub fn lockstep(&self, base: crate::lockstep::Config) -> crate::lockstep::Config {
        crate::lockstep::Config {
            players: self.slots,
            session: self.session,
            fps: self.fps,
            mode: self.mode,
            ..base
        }
        .with_keyframe_interval(u32::from(self.keyframe_interval))
    }
}

/// What happened, for the driver to act on.
#[derive(Clone, Debug, PartialEq)]
pub enum JoinEvent {
    /// Admitted; the start state is on its way.
    Welcomed {
        /// The seat to play; `None`: it watches (a spectator).
        slot: Option<PeerId>,
        /// The session id.
        session: u32,
        /// Players in, by seat and name.
        players: Roster,
        /// Bytes of the compressed start state to come.
        packed_len: usize,
        /// The session's lockstep mode.
        mode: crate::lockstep::Mode,
        /// Its keyframe interval K.
        keyframe_interval: u8,
    },
    /// The start state arrived and verified.
    Ready(Box<StartState>),
    /// The host's lobby waits for more players: `ready` of `want` are in (the host's player
    /// included). Raised when the numbers change.
    Waiting {
        /// Players with the start state, the host's included.
        ready: u8,
        /// Players the session takes.
        want: u8,
    },
    /// The join failed (refused, no answer, corrupt state) or the host left.
    Failed(SessionError),
    /// This player checked a joiner's password, which the room's server relayed.
    PasswordChecked {
        /// The password was right.
        admitted: bool,
    },
    /// The host's datagrams come from a new address, which answered a challenge: this
    /// joiner sends there from now on.
    HostMoved {
        /// The address it had.
        from: SocketAddr,
        /// The address it has now.
        to: SocketAddr,
    },
}
