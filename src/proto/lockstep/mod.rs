//! Keyframe lockstep, sans-IO: the protocol that keeps every peer's emulator on the same
//! inputs. It never touches a socket and never reads a clock: every entry point takes `now`,
//! randomness is not used at all, and the caller moves the datagrams (`net` over UDP, or in
//! memory with zero delay for the host's own player: same code path). The vocabulary follows
//! quinn-proto: `handle_*` feeds in, `poll_*` drains out, getters take `&self`. It imports only
//! `input` and `wire` (and `net`'s simulated network in tests), nothing of the session layer or
//! above; in `framelock-proto` it cannot reach a socket, a window or a core.
//!
//! # Layout
//! `client/` and `server/` stand side by side on `link` (sequence numbers, acks,
//! timestamps, RTT, loss, budget, silence: one per end and peer); neither imports the
//! other. The server's state is split by owner (see its module doc); the client's pacing
//! advice is `playout`. `msg` and `codec` are the wire bodies, under both.
//!
//! # Protocol
//! One [`Server`] (inside the hosting process) and one [`Client`] per player.
//!
//! - Each client pushes one local pad sample per frame and sends a CTRL every K frames (the
//!   *keyframe interval*) carrying all its samples the server has not acknowledged yet.
//!   While it waits at a keyframe its frame clock runs on (the runner catches the frames up
//!   afterwards), so it samples one per frame period waited: the input for the frames it
//!   will catch up on reaches the server during the wait, not late after it.
//! - The server places sample `i` of player `p` on frame `i + lead_p`. Once it holds every
//!   player's input for a frame, the frame is *published*; the first unpublished frame is the
//!   *next keyframe*. An UPDATE carries the next keyframe, every player's per-frame input from
//!   the first frame that client lacks up to it, and that start frame. Frame 0 waits until
//!   every player's first CTRL has arrived: each is running then, so none starts behind.
//! - A client emulates every frame before its newest keyframe; at the keyframe without a newer
//!   UPDATE it waits ([`Client::poll_frame`] returns `None`).
//! - The lead follows the worst *input round trip* (sample pushed -> its frame received,
//!   99th percentile over 4 s, reported by each client; see `lead`): up at once, down slowly
//!   with hysteresis; from frame 0 it covers the round trip the handshake measured
//!   ([`Server::seed_rtt`]), generously, until every client has reported its own (after 60
//!   samples), which replaces that estimate at once. K and the lead are separate numbers, so
//!   the added latency is one round trip plus K - 1 frames, not one or two keyframe
//!   intervals on top.
//! - Lead changes never lose a tap: the lead grows by repeating a player's last applied input
//!   for one more frame, and shrinks by dropping a sample equal to the input before it (only
//!   the players furthest ahead drop, so no player's samples wait for another's newer ones).
//!   The sequence of distinct inputs (every press and release, one-frame taps included) is
//!   kept.
//! - Clock drift: the server estimates each client's phase from when its samples were pushed
//!   and sends its advance in every UPDATE; [`Client::pace`] (0.98..=1.02) slows a client that
//!   runs ahead (see `timesync`).
//! - Reliability: every datagram repeats every unacknowledged
//!   item (samples, frames, checksums, notices), delta-coded (first value in full, then one
//!   bit "same" or one bit plus the new value per frame), with a 16-bit wrapping sequence
//!   number, the newest sequence number received (ack), in every 16th datagram a timestamp
//!   (in every one until the sender has a round trip), and once the echo of the peer's
//!   newest timestamp with its hold time (RTT). Layout and sizes: `msg`.
//! - Loss: while a direction loses datagrams (sequence gaps, about 1 % or more), the client
//!   sends a CTRL with every sample instead of every K-th, so a loss costs one frame, not K,
//!   as far as the send budget allows (`budget`: 2450 B/s per side and link by default,
//!   UDP/IP headers and tag included: at 100 ms RTT and 5% loss about 59 of the 60 CTRLs a
//!   second wanted fit).
//! - Players out of the session (removed, timed out, empty slots) get neutral input from a
//!   frame the server announces; the frames themselves carry it, so every client applies it
//!   from the same frame.
//! - Desync detection: clients report checksums; the server compares them with the host
//!   player's (slot 0), raises [`ServerEvent::Desync`] and tells every client.
//! - Late streams: the server keeps 4 s of published frames, and every frame from a state
//!   handed out until its stream starts ([`Server::keep_from`]), so a client can start from
//!   a machine state at a recent frame ([`Client::new_at`], [`Server::add_late_peer`]). A
//!   late player is sent every frame from there with neutral input on its seat, and no
//!   frame waits for it, until its newest sample is within the lead and two keyframe
//!   intervals of the frontier (it caught up, running what it holds up to 4 frames per
//!   displayed frame); then its samples go on frames from the frontier on, which every
//!   client is told with the player's name ([`ClientEvent::PlayerJoined`]).
//! - Pause: a player asks in its CTRLs ([`Client::request_pause`]); the server stops
//!   publishing at its frontier, so every peer stands at the same frame and goes on from it,
//!   and tells everyone who paused and resumed (notices). Input round trips across a pause,
//!   or across a player's frame loop standing still, are not taken for the link: the lead
//!   stays where the link had it (rules and numbers: `pause`).
//! - Spectators ([`Server::add_spectator`], [`Client::spectator`]) get the same UPDATEs on
//!   a stream of their own, at most one per keyframe interval, under their own send budget,
//!   and send CTRLs with acks only. Nothing of the players' waits for them; a silent one is
//!   dropped, and one more than 2 s behind gets no frames until its driver gives it a
//!   fresh state ([`Server::restart_spectator`], [`Client::skip_to`]).
//! - Hand-over: the server can move to another process mid-game, from the frames the
//!   players agreed on, with no press lost ([`merge_agreed`], [`Client::rehome`],
//!   [`Server::resume`]; design in `handover`); [`best_place`] and [`AuthorityPlacement`]
//!   say where it serves everyone's round trips best (`placement`).
//!
//! # Optimistic mode
//! With [`Mode::Optimistic`] everything above holds (samples, CTRLs and UPDATEs, their
//! reliability, notices, checksums, late streams) except when a frame is published:
//! - The server publishes frame `f` at `t0 + f / fps`, `t0` being when frame 0 could start
//!   (every player's first CTRL in), with each player's input as far as it has heard;
//!   [`Server::poll_timeout`] names the next tick. Nothing waits for a player.
//! - Each player has its own offset (sample `i` goes on frame `i + offset`), sized like the
//!   lead but from that player's samples alone: how late each arrived, in frames after the
//!   tick of the frame with its own index (99th percentile over 4 s, a sample counting as at
//!   most two keyframe intervals later than the newest one that came with it, so an
//!   outage's backlog does not size the offset afterwards), up at once, down slowly.
//! - Its unplaced samples are its *command buffer*. Below its offset the player's last
//!   input is repeated (the offset grows); at it, the next buffered sample is placed, or, if
//!   none has arrived, the last input is repeated and the late sample goes on the first
//!   frame after it arrives, after its earlier ones (counted in [`Placement`]). Above it,
//!   buffered samples equal to the last input are merged away until the offset is back;
//!   a change is never merged, so every press and release keeps a frame of its own.
//! - UPDATEs go out every tick to a player in memory and about every keyframe interval to
//!   the others (K defaults to 1 in this mode: [`Mode::default_keyframe_interval`]); the
//!   server sends no phase advance.
//! - Clients play the stream like a recording ([`Client::paced_by_arrival`]): after a wait
//!   for a frame their scheduler restarts its clock from the frame that came, frames beyond
//!   K + 6 in hand are run sooner ([`Client::backlog`]), and [`Client::pace`] keeps the time
//!   frames wait between arriving and being run within about a frame, which also absorbs
//!   clock drift. Nothing is sampled ahead during a wait.
//!
//! # Speculation
//! The protocol decides every frame; a player may still show frames it has not been sent.
//! [`Client::predict`] gives the inputs to run ahead with: the frames received and not yet
//! run, as they are, then frames through the one this player's newest sample lands on
//! (sample `i` on frame `i + lead`, as the server places it), with that sample and the
//! ones before it in this player's seat and every other seat's last input repeated. The
//! driver (`app::runner`) runs them from the last agreed frame's state, shows the last,
//! and goes back; when an UPDATE brings other inputs for a frame it ran ahead, it runs
//! from there again (a rollback). Nothing of this reaches the wire: checksums, UPDATEs and
//! recordings concern agreed frames only. [`Client::shown`] measures what the player sees
//! (`ClientStats::perceived`): from a sample to the first picture that used it.
//!
//! # Default keyframe interval
//! Measured on the simulated network (2 players, 100 ms RTT, clean link, no send budget;
//! `cargo bench --bench lockstep_sim -- keyframe`):
//!
//! | K | median input latency | up / down incl. UDP/IP headers |
//! |---|----------------------|--------------------------------|
//! | 1 | 117 ms (7 frames)    | 2.5 / 2.6 KB/s (uncapped)      |
//! | 2 | 133 ms (8 frames)    | 1.2 / 1.3 KB/s                 |
//! | 3 | 150 ms (9 frames)    | 0.8 / 0.9 KB/s                 |
//! | 4 | 167 ms (10 frames)   | 0.6 / 0.7 KB/s                 |
//!
//! Each step of K adds one frame of latency; K = 2 is the smallest interval within the
//! 2.5 KB/s budget, hence the default. On lossy links every K sends as often as the send
//! budget allows because of the redundancy above.
//!
//! # Measured on the simulated network
//!
//! `cargo test --release --lib lockstep -- --nocapture` runs the sans-IO protocol over a seeded
//! simulated network (2 players unless noted, after a 5 s warm-up; bandwidth with 32 bytes of
//! UDP/IPv4 header and tag per datagram; "±20 ms" here is the round trip's jitter, ±10 ms each way):
//!
//! | scenario | stalled frames | added latency median / p95 | up / down |
//! |---|---|---|---|
//! | 100 ms RTT, clean, K = 2 | 0% | 133 / 133 ms | 1.24 / 1.30 KB/s |
//! | 100 ms RTT ±20 ms, 5% loss (6 seeds) | 0.07-0.18% | 150 / 150-167 ms | 2.45 / 2.44-2.45 KB/s |
//! | the same with `--send-budget 0` | 0.12% | 150 / 150 ms | 2.47 / 2.51 KB/s |
//! | 250 ms RTT, 25% loss | 0.41% | 350 / 383 ms | 2.45 / 2.35 KB/s |
//! | 2 s RTT, 25% loss, 3 players | 0.83% | 2267 / 2367 ms | 2.45 / 3.7 KB/s |
//! | RTT 20 -> 300 -> 20 ms, 3 players | 0.28% | 83 / 367 ms | lead 5 -> 24 -> 5 |
//! | clocks drifting ±0.5%, with / without time sync | 0% / 35.1% | | |
//! | 8 players, 50% loss | 0.44% | 417 / 483 ms | |
//! | first 10 s at 250 ms RTT, 25% loss, from frame 0: lead seeded from the handshake / not | 0.33% / 2.47% | 350 / 800 ms (seeded) | |
//!
//! The simulated players schedule frames as `netplay` does: they never drop a backlog, a
//! joiner catches up its start delay, and a player samples its pad while it waits.
//!
//! The 2 s row is one seed, whose draws move with any change to the protocol. The middle
//! rows' ±20 ms is the round trip's (±10 ms each way); for ±20 ms each way see the netplay
//! benchmark (`tests/benches/netplay.rs`).
//!
//! With more than 2 players the server's budget to each peer grows with the players its
//! UPDATEs carry (3 players: 3.7 KB/s). `cargo bench --bench lockstep_sim -- matrix`
//! simulates the netplay benchmark's matrix with and without the budget.

mod budget;
mod client;
mod codec;
mod frame;
mod handover;
mod lead;
mod link;
mod msg;
mod pause;
mod placement;
mod playout;
mod roster;
mod rtt;
mod server;
mod stats;
mod timesync;

#[cfg(test)]
mod bounds_tests;
#[cfg(test)]
mod datagram_tests;
#[cfg(test)]
mod event_tests;
#[cfg(test)]
mod handover_tests;
#[cfg(test)]
mod late_tests;
#[cfg(test)]
mod optimistic_tests;
// The simulator is public, hidden from the docs, for the `lockstep_sim` benchmark's tables.
#[doc(hidden)]
pub mod paced;
#[doc(hidden)]
pub mod sim;
#[cfg(test)]
mod speculate_tests;
#[cfg(test)]
mod start_tests;
#[cfg(test)]
mod tests;

use std::time::Duration;

use thiserror::Error;

use crate::input::MAX_PLAYERS;

pub use client::{Client, ClientEvent};
pub use frame::{Frame, PeerId, Slot, SpectatorId};
pub use handover::{merge_agreed, HandoverConflict};
pub use msg::PauseRefusal;
pub use pause::{OWNED_FOR, PAUSES_PER_WINDOW, PAUSE_LIMIT, PAUSE_WINDOW};
pub use placement::{best_place, longest_rtt, AuthorityPlacement, Move, Place};
pub use roster::{own_name, Roster};
pub use server::{PeerLeftReason, Server, ServerEvent, SPECTATOR_LAG_SECS, SPECTATOR_TIMEOUT};
pub use stats::{
    ClientStats, LatencyStats, PeerStats, Placement, ServerStats, SpectatorStats, Traffic,
};

/// Default keyframe interval: the smallest K whose traffic fits 2.5 KB/s per direction
/// (see the table in the module doc).
pub const DEFAULT_KEYFRAME_INTERVAL: u32 = 2;

/// When the server publishes a frame.
///
/// - **Strict**: once every player's input for it is known. Everyone plays with the same
///   delay, the worst player's round trip: fair, but one slow link slows the whole game.
/// - **Optimistic**: on its own frame clock at the core's rate, with every player's input as
///   far as it has heard. Nobody waits for anybody: each player's samples go on frames at
///   that player's own offset (its round trip to the server and a margin for its jitter),
///   and a sample that comes later than that goes on the first frame not yet published,
///   after the player's earlier ones (its *command buffer*). A slow player sees its own
///   input late; the others do not notice it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// A frame is published once every player's input for it is in.
    #[default]
    Strict,
    /// Frames are published on the server's clock with the input that is in.
    Optimistic,
}

impl Mode {
    /// Every mode, in byte order.
    pub const ALL: [Mode; 2] = [Mode::Strict, Mode::Optimistic];

    /// The name on the command line and in stats (`strict`, `optimistic`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Strict => "strict",
            Mode::Optimistic => "optimistic",
        }
    }

    /// The keyframe interval a session of this mode uses unless told otherwise. Strict: the
    /// smallest within 2.5 KB/s (see the table above). Optimistic: 1, a CTRL with every
    /// sample and an UPDATE with every tick: nothing waits at a keyframe there, so K is
    /// latency alone, a frame per step of K each way (20 ms round trip, simulated: a median
    /// of 3 frames at K = 1, 4 at K = 2 even with an UPDATE every tick), and about 2.4 KB/s
    /// each way still fits the budget.
    pub fn default_keyframe_interval(self) -> u32 {
        match self {
            Mode::Strict => DEFAULT_KEYFRAME_INTERVAL,
            Mode::Optimistic => 1,
        }
    }

    /// The mode's byte in handshakes and recordings.
    pub fn to_byte(self) -> u8 {
        match self {
            Mode::Strict => 0,
            Mode::Optimistic => 1,
        }
    }

    /// The mode of a byte from the wire or a log; `None` for an unknown one.
    pub fn from_byte(b: u8) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.to_byte() == b)
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown mode {s:?}: strict or optimistic"))
    }
}

/// Settings shared by the server and every client of a session (they must agree on
/// `players`, `session`, `fps`, `keyframe_interval` and `mode`).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Player slots in the session, 1..=8; slots `0..players` may join.
    pub players: u8,
    /// K: frames between two CTRLs of a client.
    pub keyframe_interval: u32,
    /// Bounds of the lead in frames (the lead starts at `min_lead`). `max_lead` <= 255.
    pub min_lead: u32,
    /// See `min_lead`.
    pub max_lead: u32,
    /// Silence after which a peer (or the server) counts as gone.
    pub timeout: Duration,
    /// Silence after which a warning event is raised.
    pub warn_after: Duration,
    /// Session id from the handshake; datagrams of other sessions are dropped.
    pub session: u32,
    /// Nominal frames per second of the core.
    pub fps: f64,
    /// Most bytes per second each side sends on each link, every datagram's UDP/IP header
    /// included (see `budget`); 0 = unlimited.
    pub send_budget: u32,
    /// Bytes a datagram costs on the link beyond what the protocol wrote: UDP/IP header and
    /// tag, 32 over IPv4, 52 over IPv6 (`wire::link_overhead`). The send budget and the wire
    /// counters of `Traffic` add it per datagram; a server's peers
    /// start with it (see `Server::set_udp_ip_header`).
    pub udp_ip_header: usize,
    /// When frames are published (see [`Mode`]).
    pub mode: Mode,
}

/// Default send budget: under the 2.5 KB/s per direction that netplay promises, with room
/// for the bucket's first burst and a datagram of overdraft (one-time costs). 2400 held back
/// about one CTRL in thirty at 100 ms RTT, ±20 ms each way and 5% loss, and that wait cost
/// the lead a frame in one simulated session of sixteen and in about a third of the real
/// ones; at 2450 about one in sixty waits (16 of 16, and the real runs measured, at 150 ms
/// instead of 167).
pub const DEFAULT_SEND_BUDGET: u32 = 2450;

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
            send_budget: DEFAULT_SEND_BUDGET,
            udp_ip_header: budget::UDP_IP_HEADER,
            mode: Mode::Strict,
        }
    }
}

impl Config {
    /// These settings with keyframe interval `k`, and the lead's floor at `k` too (at least
    /// 1): the one place that ties `min_lead` to K for every session.
    pub fn with_keyframe_interval(self, k: u32) -> Config {
        Config {
            keyframe_interval: k,
            min_lead: k.max(1),
            ..self
        }
    }

    /// Refuses settings the protocol cannot run with, naming the one.
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

/// A call the protocol cannot carry out.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LockstepError {
    /// A setting out of range (which).
    #[error("bad lockstep config: {0}")]
    Config(&'static str),
    /// The slot is beyond the session's players.
    #[error("{0} is not a slot of this session")]
    NoSuchSlot(PeerId),
    /// The player is in the session already.
    #[error("{0} is already in the session")]
    AlreadyPresent(PeerId),
    /// The player is not in the session.
    #[error("{0} is not in the session")]
    NotPresent(PeerId),
    /// `add_peer` after the first frame (late players use `add_late_peer`).
    #[error("the session has started: players can only join before the first frame")]
    Started,
    /// A late stream must start at a frame the server still keeps.
    #[error("a stream cannot start at {start}: frames {oldest}..={frontier} are kept")]
    StartOutOfRange {
        /// The frame asked for.
        start: Frame,
        /// The oldest frame kept.
        oldest: Frame,
        /// The next frame to publish.
        frontier: Frame,
    },
    /// That spectator id is taken.
    #[error("spectator {0} is already watching")]
    SpectatorPresent(u8),
    /// No spectator has that id.
    #[error("no spectator {0}")]
    NoSpectator(u8),
}
