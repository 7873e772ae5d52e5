//! Keyframe lockstep, sans-IO: the protocol that keeps every peer's emulator on the same
//! inputs. It never touches a socket and never reads a clock: every entry point takes `now`,
//! and the caller moves the datagrams (`net` over UDP, or in memory for the host's own
//! player). The vocabulary follows quinn-proto: `handle_*` feeds in, `poll_*` drains out.
//!
//! # Protocol
//! One [`Server`] (inside the hosting process) and one [`Client`] per player, the host's own
//! player included (its datagrams are handed over in memory, same code path).
//!
//! - Every frame the client pushes one local pad sample. Every K frames (the *keyframe
//!   interval*, [`Config::keyframe_interval`]) it sends a CTRL carrying all its samples the
//!   server has not acknowledged yet.
//! - The server places sample `i` of player `p` on frame `i + lead_p`. As soon as it holds
//!   every player's sample for a frame, that frame is *published*. The first unpublished
//!   frame is the *next keyframe*. UPDATEs carry everyone's per-frame inputs from the frame
//!   the client has up to the next keyframe.
//! - A client may emulate every frame before its newest keyframe; at the keyframe without a
//!   newer UPDATE it waits ([`Client::poll_frame`] returns `None`).
//! - The lead follows the largest smoothed RTT (see `lead`): up at once, down slowly. It
//!   grows by repeating a player's last applied input for one more frame, and shrinks by
//!   dropping a sample equal to the input before it, so the sequence of distinct inputs (every
//!   press and every release, one-frame taps included) is never changed.
//! - Drift: the server measures each client's phase and tells it in every UPDATE how far
//!   ahead it runs; [`Client::pace`] turns that into a speed factor (see `timesync`).
//! - Reliability as in section 4 of the design doc: every datagram repeats every
//!   unacknowledged item (samples, frames, checksums, notices), delta-coded; each carries a
//!   16-bit sequence number, the newest sequence number received (ack), its own timestamp and
//!   the echo of the peer's newest timestamp with the hold time (RTT). See `msg` for bytes.
//! - Peers out of the session (dropped, removed, empty slots) get neutral input from a frame
//!   the server announces; every client applies it from that same frame because the frames
//!   themselves carry it.
//! - Desync detection: clients report checksums, the server compares them with the host
//!   player's (slot 0), emits [`ServerEvent::Desync`] and tells every client.

mod client;
mod codec;
mod frame;
mod lead;
mod msg;
mod rtt;
mod server;
mod stats;
mod timesync;

#[cfg(test)]
mod event_tests;
#[cfg(test)]
mod sim;
#[cfg(test)]
mod tests;

use std::time::Duration;

use thiserror::Error;

use crate::input::MAX_PLAYERS;

pub use client::{Client, ClientEvent};
pub use frame::{Frame, PeerId};
pub use server::{LeaveReason, Server, ServerEvent};
pub use stats::{ClientStats, LatencyStats, PeerStats, ServerStats, Traffic};

/// Default keyframe interval. K = 2 sends 30 CTRLs (and about 30 UPDATEs) per second and
/// player: about 1.7 KB/s per direction with UDP headers, while adding only one frame of
/// batching delay to the lead (see the module `lead` and the measurements in `tests`).
pub const DEFAULT_KEYFRAME_INTERVAL: u32 = 2;

/// Settings shared by the server and every client of a session (they must agree on
/// `players`, `session`, `fps` and `keyframe_interval`).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Player slots in the session, 1..=8; slots `0..players` may join.
    pub players: u8,
    /// K: frames between two CTRLs of a client.
    pub keyframe_interval: u32,
    /// Bounds of the lead in frames (the lead starts at `min_lead`). `max_lead` <= 255.
    pub min_lead: u32,
    pub max_lead: u32,
    /// Silence after which a peer (or the server) counts as gone.
    pub timeout: Duration,
    /// Silence after which a warning event is raised.
    pub warn_after: Duration,
    /// Session id from the handshake; datagrams of other sessions are dropped.
    pub session: u32,
    /// Nominal frames per second of the core.
    pub fps: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            players: 2,
            keyframe_interval: DEFAULT_KEYFRAME_INTERVAL,
            min_lead: DEFAULT_KEYFRAME_INTERVAL,
            max_lead: 240,
            timeout: Duration::from_secs(2),
            warn_after: Duration::from_millis(500),
            session: 0,
            fps: 60.0,
        }
    }
}

impl Config {
    pub fn validate(&self) -> Result<(), LockstepError> {
        let bad = |what| Err(LockstepError::Config(what));
        if self.players == 0 || usize::from(self.players) > MAX_PLAYERS {
            return bad("players must be 1..=8");
        }
        if !(1..=60).contains(&self.keyframe_interval) {
            return bad("keyframe_interval must be 1..=60 frames");
        }
        if self.min_lead == 0 || self.min_lead > self.max_lead || self.max_lead > 255 {
            return bad("leads must satisfy 1 <= min_lead <= max_lead <= 255");
        }
        if !(self.fps.is_finite() && self.fps >= 1.0 && self.fps <= 1000.0) {
            return bad("fps must be 1..=1000");
        }
        if self.timeout.is_zero() || self.warn_after > self.timeout {
            return bad("timeout must be > 0 and >= warn_after");
        }
        Ok(())
    }

    /// Duration of one frame at the nominal rate.
    pub fn frame_duration(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.fps)
    }

    /// How long a side waits before sending again when nothing new triggered a datagram:
    /// the keyframe interval plus half a frame (keepalive and retransmission).
    pub(crate) fn resend_interval(&self) -> Duration {
        self.frame_duration()
            .mul_f64(f64::from(self.keyframe_interval) + 0.5)
    }
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LockstepError {
    #[error("bad lockstep config: {0}")]
    Config(&'static str),
    #[error("{0} is not a slot of this session")]
    NoSuchSlot(PeerId),
    #[error("{0} is already in the session")]
    AlreadyPresent(PeerId),
    #[error("{0} is not in the session")]
    NotPresent(PeerId),
    #[error("the session has started: players can only join before the first frame")]
    Started,
}
