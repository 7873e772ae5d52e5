//! `framelock host`, `framelock join` and `framelock spectate`: the glue that carries the
//! sans-IO session handshake (`session`) and lockstep protocol (`lockstep`) over UDP
//! (`net`), and feeds the frames the lockstep client allows into the frame runner (`app`).
//!
//! Order of a session: load the core (and, on the host, the content) -> handshake (`lobby`)
//! -> the joiner applies the host's options and state -> everyone runs frames from the
//! lockstep client (`feed`) -> goodbye. The host's own player uses the same lockstep client
//! as everybody else, talking to the in-process server in memory.
//!
//! This file holds the commands' options and errors; `start` the commands themselves up
//! to the first frame, `run` the frames, `core_side` what the session asks of the core,
//! `invite` and `address` the words and addresses players type. Nothing under `netplay`
//! opens a window itself (`app` does) or is imported by `app`, `session` or `lockstep`.

mod address;
pub mod archive;
mod chat;
#[cfg(test)]
mod chat_tests;
mod core_side;
mod directory;
mod feed;
mod fleet;
mod invite;
pub mod links;
mod lobby;
mod metrics;
mod nats_login;
mod open;
mod port_map;
mod replays;
mod report;
mod run;
mod seat_keys;
mod serve;
mod speculation;
mod start;
mod status;
pub mod web;
#[cfg(test)]
mod world;

use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

pub use directory::BUCKET;
pub use feed::{CoreWork, NetFeed, Shared};
pub use fleet::{list_servers, servers_json, servers_table, ServerRow};
pub use nats_login::{NatsAuth, Secret, PASSWORD_ENV, TOKEN_ENV};
pub use open::{join_options, open, register};
pub use replays::{fetch_replay, fetch_to, list_replays, replays_json, replays_table};
pub use seat_keys::FILE_NAME as SEAT_KEYS_FILE;
pub use serve::{list_rooms, rooms_json, rooms_table, serve, ServeOptions};
pub use speculation::{Delay, Speculate};
pub use start::{host, join};

use crate::app::{PlayError, PlayOptions};
use crate::frontend::chat_board::ChatShow;
use crate::host::HostError;
use crate::lockstep;
use crate::net::portmap::PortMapMode;
use crate::net::{NetError, NetSim};
use crate::session::direct::PathMode;
use crate::session::{ParticipantConfig, SessionError};

/// The UDP port `host` listens on and `join` connects to by default.
pub const DEFAULT_PORT: u16 = 7845;

/// Settings common to both ends.
#[derive(Clone, Debug)]
pub struct NetOptions {
    pub play: PlayOptions,
    pub name: String,
    pub password: Option<String>,
    pub netsim: Option<NetSim>,
    /// Frames between desync checksums.
    pub checksum_interval: u32,
    /// Bytes per second to each peer, UDP/IP headers included (0: unlimited).
    pub send_budget: u32,
    /// Test hook: `(frame, mask)` flips bits of this peer's own input at that frame.
    pub inject_desync: Option<(u32, u16)>,
    /// `--pause-at`, `--pause-for`: pause for everyone at this frame, for this long.
    pub pause_at: Option<(u32, Duration)>,
    /// Test hook: the main thread stays busy this long after the start state (joiner) or
    /// the lobby (host), before the content is loaded and the first frame runs.
    pub start_delay: Option<Duration>,
    /// `--speculate`: how far a player's picture may run ahead of the agreed frames.
    pub speculate: Speculate,
    /// `--delay`: frames between a player's press and the picture that shows it.
    pub delay: Delay,
    /// Where the rollback check's verdicts are kept.
    pub cache_dir: PathBuf,
    /// The file of seat keys `join` was given (`seat_keys`).
    pub seat_keys: PathBuf,
    /// How long a joiner whose link dropped tries to come back (zero: it does not).
    pub reconnect: Duration,
    /// Chat messages to say as play begins (`--say`).
    pub say: Vec<String>,
    /// Whose chat messages are shown (`--chat`).
    pub chat: ChatShow,
    /// Test hook: say "ping N" this often from the first frame.
    pub chat_every: Option<Duration>,
    /// `--path`: direct paths in a room on a server.
    pub path: PathMode,
    /// `--port-map`: whether a host (and a player in a room a player hosts) asks its
    /// router to forward its port.
    pub port_map: PortMapMode,
    /// `--no-share`: ask the server to keep no replay of a room this player is in.
    pub no_share: bool,
}

impl NetOptions {
    /// The participant's settings these options make.
    fn participant(&self) -> ParticipantConfig {
        ParticipantConfig {
            checksum_interval: self.checksum_interval.max(1),
            reconnect: self.reconnect,
            path: self.path,
        }
    }
}

#[derive(Clone, Debug)]
pub struct HostOptions {
    pub net: NetOptions,
    pub port: u16,
    /// Players in the session, the host's included.
    pub players: u8,
    /// The game starts when this many are in (0: all of `players`); the other seats can be
    /// taken while it runs.
    pub start_with: u8,
    /// Spectators the session takes at once.
    pub max_spectators: u8,
    /// `None`: strict, or with `server` the server's mode.
    pub mode: Option<lockstep::Mode>,
    /// `None`: the mode's default.
    pub keyframe_interval: Option<u32>,
    /// Give up waiting for players after this long.
    pub lobby_timeout: Option<Duration>,
    /// Open a room on this dedicated server (`HOST[:PORT]` as typed) instead of listening.
    pub server: Option<String>,
    /// The room's name there (default: the server makes one up).
    pub room: Option<String>,
}

impl HostOptions {
    /// The mode of a session this host runs itself.
    pub fn session_mode(&self) -> lockstep::Mode {
        self.mode.unwrap_or_default()
    }

    /// Its keyframe interval: as given, else the mode's default.
    pub fn session_keyframe_interval(&self) -> u32 {
        self.keyframe_interval
            .unwrap_or_else(|| self.session_mode().default_keyframe_interval())
    }
}

#[derive(Clone, Debug)]
pub struct JoinOptions {
    pub net: NetOptions,
    /// `HOST[:PORT]` as typed.
    pub host: String,
    /// The room, when `host` is a dedicated server.
    pub room: Option<String>,
    /// Watch (`framelock spectate`) instead of playing.
    pub watch: bool,
    /// Ask the player for the password before the handshake, in the window or on the
    /// terminal (`framelock open`, for a room that has one).
    pub ask_password: bool,
}

#[derive(Debug, Error)]
pub enum NetplayError {
    #[error(transparent)]
    Play(#[from] PlayError),
    #[error(transparent)]
    Net(#[from] NetError),
    #[error("{0}")]
    Join(SessionError),
    #[error("starting the session: {0}")]
    Session(SessionError),
    #[error("lockstep: {0}")]
    Lockstep(#[from] lockstep::LockstepError),
    #[error("cannot join {host:?}: {reason}")]
    Resolve { host: String, reason: String },
    #[error("reading content {}: {}", .path.display(), crate::wording::io_reason(.io))]
    Content { path: PathBuf, io: std::io::Error },
    #[error("core: {0}")]
    Host(#[from] HostError),
    #[error("nobody joined in time: {ready} of {want} players ready after {secs} s")]
    LobbyTimeout { secs: u64, ready: usize, want: u8 },
    #[error("the session ended: {end} (after {frames} frames)")]
    Ended { end: SessionEnd, frames: u64 },
    #[error("interrupted before the game started")]
    Interrupted,
    /// The player pressed Esc or closed the window before the game started.
    #[error("left before the game started")]
    Left,
    #[error("fleet directory: {0}")]
    Directory(String),
    #[error("metrics: {0}")]
    Metrics(String),
    #[error("web page: {0}")]
    Web(String),
    #[error("replay archive: {0}")]
    Archive(String),
    #[error("{0}")]
    Link(String),
}

/// Why a session ended before this peer's last frame: the participant's typed cause, and
/// the command that brings this player back (said only when reconnecting gave up).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionEnd {
    pub cause: SessionError,
    /// `--rejoin`'s command line for this session, if the driver knows one.
    pub rejoin: Option<String>,
}

impl std::fmt::Display for SessionEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.cause)?;
        match (&self.cause, &self.rejoin) {
            (SessionError::ReconnectGaveUp { .. }, Some(cmd)) => {
                write!(f, "; to come back, run `{cmd}`")
            }
            _ => Ok(()),
        }
    }
}

/// Time a goodbye gets to leave the network conditioner before the process exits.
const GOODBYE_DRAIN: Duration = Duration::from_millis(500);
