//! What netplay tells people: the log lines for what a session's participant raised, the
//! numbers gathered for `--stats-json`, and the window's status line. It decides nothing
//! about the session; the participant (`session::Participant`) does. It must not import the feed or
//! the commands (`feed`, `start`, `run`), which call it.

mod events;
mod stats;

pub(super) use stats::placement_json;
pub(crate) use stats::Play;

use std::time::{Duration, Instant};

use crate::frontend::chat_board::ChatBoard;
use crate::lockstep::{Frame, PeerId, Roster, Slot};
use crate::session::direct::{PathEvent, PathMode};

/// The log line for a path of a room hosted by a player that went direct or back to the
/// relay; `who` is the other side.
pub(crate) fn log_path(who: &str, event: &PathEvent, mode: PathMode) {
    match event {
        PathEvent::Direct { addr, after } => tracing::info!(
            "netplay: direct path to {who} ({addr}, proven in {} ms): the server no longer \
             carries the game",
            after.as_millis()
        ),
        PathEvent::Relayed { why } if mode == PathMode::Direct => {
            tracing::warn!("netplay: {who} stays relayed by the server: {why}")
        }
        PathEvent::Relayed { why } => {
            tracing::info!("netplay: {who} is relayed by the server: {why}")
        }
    }
}

/// Netplay numbers gathered while running.
#[derive(Default)]
pub(crate) struct Counters {
    desyncs: u64,
    /// Frames of the desyncs this peer heard of.
    desync_frames: Vec<Frame>,
    /// Recoveries completed (host: states delivered; joiner: states loaded).
    pub resyncs: u64,
    /// Joiner: ms from hearing of a desync to loading the host's state.
    resync_ms: Vec<f64>,
    desync_heard_at: Option<Instant>,
    players_left: Vec<(PeerId, Frame)>,
    players_joined: Vec<(PeerId, Frame)>,
    /// Spectator: fresh states it jumped to after falling behind.
    pub jumps: u64,
    /// Joiner: times it lost the host, came back, and ms from losing to playing again.
    pub connections_lost: u64,
    pub reconnects: u64,
    pub reconnect_ms: Vec<f64>,
    lost_at: Option<Instant>,
    /// RTT samples (ms, one per frame run), as a 1 ms histogram capped at 5 s.
    rtt_ms: Vec<u64>,
    rtt_count: u64,
    /// Spectator: its delay behind the players (ms), every 30th frame.
    pub delay_ms: Vec<f64>,
}

pub(crate) fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

impl Counters {
    pub fn record_rtt(&mut self, rtt: Duration) {
        if self.rtt_ms.is_empty() {
            self.rtt_ms = vec![0; 5001];
        }
        let ms = (rtt.as_secs_f64() * 1000.0).round().min(5000.0) as usize;
        self.rtt_ms[ms] += 1;
        self.rtt_count += 1;
    }

    fn rtt_median(&self) -> Option<u64> {
        let half = self.rtt_count.div_ceil(2);
        let mut seen = 0;
        for (ms, n) in self.rtt_ms.iter().enumerate() {
            seen += n;
            if seen >= half && *n > 0 {
                return Some(ms as u64);
            }
        }
        None
    }

    /// A desync recovery's state was loaded.
    pub fn resynced(&mut self, now: Instant) {
        self.resyncs += 1;
        if let Some(heard) = self.desync_heard_at.take() {
            let ms = now.saturating_duration_since(heard).as_secs_f64() * 1000.0;
            self.resync_ms.push(ms);
        }
    }

    /// Back in the session after a lost connection.
    pub fn reconnected(&mut self, now: Instant) {
        self.reconnects += 1;
        if let Some(lost) = self.lost_at.take() {
            let ms = now.saturating_duration_since(lost).as_secs_f64() * 1000.0;
            self.reconnect_ms.push(ms);
        }
    }
}

/// Who is in, the counters, and the wording of events.
#[derive(Default)]
pub(crate) struct Report {
    pub names: Roster,
    /// The room, when the session runs on a dedicated server.
    pub room: Option<String>,
    pub counters: Counters,
    /// Seats whose players left (or were dropped) and by which name, to tell a player who
    /// comes back from a new one.
    gone: Roster,
    /// Host: why each player who left the running game said it left (its goodbye), for the
    /// one line that says so with the frame its input stops at.
    left_why: Vec<(PeerId, String)>,
    /// Joiner: the command that gets it back into the session, said when it gives up.
    pub rejoin: Option<String>,
    /// Where chat messages are shown and typed.
    pub chat: ChatBoard,
    /// The pause in force: who paused (as the status bar says it) and since when.
    pub paused: Option<(String, Instant)>,
    /// Pauses seen: (slot that paused, frame, seconds it lasted here).
    pauses: Vec<(u8, u32, f64)>,
    /// `--path`, for the wording of a path that stays relayed.
    pub path: PathMode,
}

impl Report {
    /// How log lines name `seat`'s player (see [`Roster::label`]).
    pub fn name(&self, seat: PeerId) -> String {
        self.names.label(seat)
    }

    /// How log lines name whoever is in `slot`: a player as [`name`](Self::name) does, a
    /// spectator by its place.
    fn who(&self, slot: Slot) -> String {
        match slot {
            Slot::Player(seat) => self.name(seat),
            Slot::Spectator(_) => slot.to_string(),
        }
    }

    fn set_name(&mut self, seat: PeerId, name: String) {
        if !name.is_empty() {
            self.names.set(seat, name);
        }
    }
}
