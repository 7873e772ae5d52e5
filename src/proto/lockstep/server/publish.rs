//! When a frame is published and which sample goes on it: the [`Publisher`], in its two
//! forms. Strict publishes a frame once every player's input for it is known, one lead for
//! all, sized by the worst input round trip and kept in step by time sync; optimistic
//! publishes on its own clock, each player's sample at that player's own offset (see
//! [`Mode`]). Reads and moves the players' inputs, appends to the
//! history and stops at a pause; imports the player, the history and the pause state, and
//! nothing of the spectators, the checksums or the server facade.

use std::time::{Duration, Instant};

use crate::input::{Inputs, Pad, MAX_PLAYERS};

use super::super::frame::{Frame, PeerId};
use super::super::lead::LeadController;
use super::super::pause::{Active, Pauses};
use super::super::rtt::WindowQuantile;
use super::super::timesync::pace_for;
use super::super::{Config, Mode};
use super::player::Player;
use super::stream::History;

/// Optimistic mode: arrival lateness samples kept per player (4 s at 60 fps), the quantile
/// its offset covers, and how many it takes before they replace the handshake's estimate.
const LATENESS_WINDOW: usize = 240;
const LATENESS_QUANTILE: f64 = 0.99;
const LATENESS_MIN_SAMPLES: usize = 60;
/// Optimistic mode: a sample counts as at most this many keyframe intervals later than the
/// newest one that came with it. The older samples of a burst (a link back after an outage)
/// were held up by the outage, not by the link's usual delay, and must not size the offset
/// for the seconds after it.
const LATENESS_SPREAD_K: u32 = 2;

/// The players by slot.
pub(super) type Players = [Option<Player>; MAX_PLAYERS];

/// Optimistic mode: one player's own offset (sample to frame), sized by `lateness`.
#[derive(Debug)]
pub(super) struct Offset {
    placement: LeadController,
    /// How late each of its samples arrived, in frames after the tick of the frame with its
    /// own index (as a duration at the nominal rate).
    lateness: WindowQuantile,
}

impl Offset {
    fn new(cfg: &Config) -> Offset {
        Offset {
            placement: LeadController::new(cfg.min_lead, cfg.max_lead, cfg.frame_duration()),
            lateness: WindowQuantile::new(LATENESS_WINDOW),
        }
    }
}

/// What a call to [`Publisher::publish`] did.
#[derive(Debug, Default)]
pub(super) struct Published {
    /// Frames were published.
    pub any: bool,
    /// A sample was placed on a frame (no more joins from now on).
    pub placed: bool,
    /// A deferred pause took effect after a frame: announce it.
    pub paused: Option<Active>,
}

/// The publication policy (see the module doc).
#[derive(Debug)]
pub(super) enum Publisher {
    Strict {
        /// Every player's lead.
        lead: LeadController,
    },
    Optimistic {
        /// When frame 0 was published; frame `f` is published at `clock + f` frame
        /// durations.
        clock: Option<Instant>,
        /// Each slot's offset, new with each player seated there.
        offsets: Box<[Offset; MAX_PLAYERS]>,
    },
}

impl Publisher {
    /// The publisher of `cfg`'s mode.
    pub fn new(cfg: &Config) -> Publisher {
        match cfg.mode {
            Mode::Strict => Publisher::Strict {
                lead: LeadController::new(cfg.min_lead, cfg.max_lead, cfg.frame_duration()),
            },
            Mode::Optimistic => Publisher::Optimistic {
                clock: None,
                offsets: Box::new(std::array::from_fn(|_| Offset::new(cfg))),
            },
        }
    }

    /// A player was seated at `peer`: its offset starts afresh.
    pub fn seat(&mut self, cfg: &Config, peer: PeerId) {
        if let Publisher::Optimistic { offsets, .. } = self {
            offsets[peer.index()] = Offset::new(cfg);
        }
    }

    /// The lead target in frames (strict; optimistic: each player has its own, and this
    /// stays at `min_lead`).
    pub fn lead(&self, cfg: &Config) -> u32 {
        match self {
            Publisher::Strict { lead } => lead.lead(),
            Publisher::Optimistic { .. } => cfg.min_lead,
        }
    }

    /// The lead of `peer`'s samples: the common one, or its own offset.
    pub fn lead_of(&self, peer: PeerId) -> u32 {
        match self {
            Publisher::Strict { lead } => lead.lead(),
            Publisher::Optimistic { offsets, .. } => offsets[peer.index()].placement.lead(),
        }
    }

    /// The phase advance to tell player `peer`: time sync's (strict); none in optimistic
    /// mode, whose clients pace themselves by the frames' arrival (see `Client::pace`).
    pub fn advance(&self, cfg: &Config, players: &Players, peer: PeerId) -> f64 {
        match self {
            Publisher::Strict { .. } => advances(cfg, players)[peer.index()],
            Publisher::Optimistic { .. } => 0.0,
        }
    }

    /// Shortest time between two UPDATEs with new frames to a player whose datagrams cost
    /// `header` bytes. Strict: none, a frame is published when a CTRL brings its last input,
    /// about once per keyframe interval. Optimistic: a frame is published every tick, and
    /// sending each at once would double the traffic, so they go out a keyframe interval's
    /// worth at a time (half a frame early, so a send is not put off to the tick after); a
    /// player in memory gets each at once.
    pub fn batch(&self, cfg: &Config, header: usize) -> Duration {
        match self {
            Publisher::Optimistic { .. } if header > 0 => cfg
                .frame_duration()
                .mul_f64(f64::from(cfg.keyframe_interval) - 0.5),
            _ => Duration::ZERO,
        }
    }

    /// Player `peer`'s samples `from..end` arrived at `now`. Optimistic mode, once the
    /// clock runs: records how late they came, in frames after the tick of the frame with
    /// their own index. The offset that covers that puts a sample on a frame not yet
    /// published.
    pub fn samples_arrived(
        &mut self,
        cfg: &Config,
        peer: PeerId,
        now: Instant,
        from: u32,
        end: u32,
    ) {
        let Publisher::Optimistic {
            clock: Some(clock),
            offsets,
        } = self
        else {
            return;
        };
        let Some(newest) = end.checked_sub(1) else {
            return;
        };
        let ticks = now.saturating_duration_since(*clock).as_secs_f64() * cfg.fps;
        let cap = ticks - f64::from(newest) + f64::from(LATENESS_SPREAD_K * cfg.keyframe_interval);
        let lateness = &mut offsets[peer.index()].lateness;
        for i in from..end {
            let late = (ticks - f64::from(i)).min(cap).max(0.0);
            lateness.record(Duration::from_secs_f64(late / cfg.fps));
        }
    }

    /// Optimistic mode: when the next frame is due, unless nobody plays or the game is
    /// paused.
    pub fn next_tick(
        &self,
        cfg: &Config,
        players: &Players,
        paused: bool,
        frontier: Frame,
    ) -> Option<Instant> {
        let Publisher::Optimistic {
            clock: Some(clock), ..
        } = self
        else {
            return None;
        };
        if players.iter().all(Option::is_none) || paused {
            return None;
        }
        Some(*clock + tick_offset(cfg, frontier))
    }

    /// The game resumed after `paused_for`: nothing of the pause is a clock's, so the
    /// optimistic frame clock goes on from here.
    pub fn resumed(&mut self, paused_for: Duration) {
        if let Publisher::Optimistic { clock: Some(c), .. } = self {
            *c += paused_for;
        }
    }

    /// Publishes what can be: every frame whose inputs are all known (strict), or every
    /// frame whose time has come (optimistic), until a pause. First the lead (strict) or
    /// each player's offset (optimistic) follows the round trips.
    pub fn publish(
        &mut self,
        cfg: &Config,
        now: Instant,
        players: &mut Players,
        history: &mut History,
        pauses: &mut Pauses,
    ) -> Published {
        let frontier = history.frontier();
        let lead = match self {
            Publisher::Strict { lead } => update_lead(lead, cfg, now, players, frontier),
            Publisher::Optimistic { offsets, .. } => {
                update_offsets(offsets, cfg, now, players, frontier);
                0
            }
        };
        let mut out = Published::default();
        if players.iter().all(|p| p.is_none()) || !everyone_running(players, history) {
            return out;
        }
        while pauses.active().is_none() {
            let frame = history.frontier();
            let inputs = match self {
                Publisher::Strict { .. } => match strict_frame(lead, frame.0, players) {
                    Some((inputs, placed)) => {
                        out.placed |= placed;
                        inputs
                    }
                    None => break,
                },
                Publisher::Optimistic { clock, offsets } => {
                    if *clock.get_or_insert(now) + tick_offset(cfg, frame) > now {
                        break;
                    }
                    let (inputs, placed) = optimistic_frame(offsets, frame.0, players);
                    out.placed |= placed;
                    inputs
                }
            };
            history.push(inputs);
            out.any = true;
            out.paused = out
                .paused
                .or(pauses.frame_published(now, history.frontier()));
        }
        out
    }
}

/// The time a CTRL's samples wait before it leaves: up to K - 1 frames of batching.
fn batching(cfg: &Config) -> Duration {
    cfg.frame_duration()
        .mul_f64(f64::from(cfg.keyframe_interval - 1))
}

/// Optimistic mode: time from frame 0's publication to `frame`'s.
fn tick_offset(cfg: &Config, frame: Frame) -> Duration {
    Duration::from_secs_f64(f64::from(frame.0) / cfg.fps)
}

/// Frame 0 waits for every player's first CTRL: each is running then (state loaded,
/// window open). Started at once, a peer that took longer to get there (a window opening
/// after the lobby) ran behind the others by that much, and (strict) they waited for its
/// inputs at every keyframe until time sync (2%) had caught it up.
fn everyone_running(players: &Players, history: &History) -> bool {
    history.frontier() > Frame::ZERO || players.iter().flatten().all(|p| p.link.recv_seq.is_some())
}

/// Each player's phase advance in frames (> 0: ahead of the mean of the players in the
/// game; a late joiner still catching up is measured against them, not counted in their
/// mean); 0 when unknown.
pub(super) fn advances(cfg: &Config, players: &Players) -> [f64; MAX_PLAYERS] {
    let mut out = [0.0; MAX_PLAYERS];
    let origins: Vec<(usize, f64, bool)> = players
        .iter()
        .flatten()
        .filter_map(|p| p.phase.origin().map(|o| (p.id.index(), o, p.pending)))
        .collect();
    let playing: Vec<f64> = origins
        .iter()
        .filter(|(_, _, pending)| !pending)
        .map(|(_, o, _)| *o)
        .collect();
    if origins.len() < 2 || playing.is_empty() {
        return out;
    }
    let mean = playing.iter().sum::<f64>() / playing.len() as f64;
    let frame = cfg.frame_duration().as_secs_f64();
    for (i, o, _) in origins {
        out[i] = (mean - o) / frame;
    }
    out
}

/// Optimistic mode: moves each player's offset toward what its samples' lateness needs
/// (see [`Mode::Optimistic`]).
fn update_offsets(
    offsets: &mut [Offset; MAX_PLAYERS],
    cfg: &Config,
    now: Instant,
    players: &Players,
    frontier: Frame,
) {
    let batching = batching(cfg);
    for p in players.iter().flatten().filter(|p| !p.pending) {
        let o = &mut offsets[p.id.index()];
        let measured = o.lateness.len() >= LATENESS_MIN_SAMPLES;
        let need = if measured {
            o.lateness.quantile(LATENESS_QUANTILE)
        } else {
            p.link.rtt.conservative().map(|r| r + batching)
        };
        let before = o.placement.lead();
        let lead = o.placement.update(now, need, measured);
        if lead != before {
            tracing::debug!(
                "lockstep: {} offset {before} -> {lead} frames at {frontier} ({})",
                p.id,
                if measured { "measured" } else { "estimated" }
            );
        }
    }
}

/// Optimistic mode: frame `frame`'s inputs, each player's next sample on it at its own
/// offset; and whether a sample was placed.
fn optimistic_frame(
    offsets: &[Offset; MAX_PLAYERS],
    frame: u32,
    players: &mut Players,
) -> (Inputs, bool) {
    let mut placed = false;
    let mut inputs = [Pad::NEUTRAL; MAX_PLAYERS];
    for p in players.iter_mut().flatten().filter(|p| !p.pending) {
        let target = offsets[p.id.index()].placement.lead();
        let q = &mut p.input;
        let mut offset = frame.saturating_sub(q.next);
        // Below its offset the player's input is repeated (the offset grows).
        if offset >= target {
            // A backlog drains by merging samples equal to the input before them;
            // a change is never merged away, so a tap keeps its frame.
            while offset > target && q.samples.front() == Some(&q.last) {
                q.take_sample();
                p.placed.merged += 1;
                offset -= 1;
            }
            // Nothing buffered: the player keeps its last input, and its next
            // sample goes on the first frame after it arrives.
            if let Some(s) = q.take_sample() {
                q.last = s;
                placed = true;
                if offset > target {
                    p.placed.late += 1;
                    p.placed.late_frames.record(offset - target);
                }
            }
        }
        inputs[p.id.index()] = p.input.last;
    }
    (inputs, placed)
}

/// Strict mode: updates the lead from the players' round trips; the new lead.
fn update_lead(
    lead: &mut LeadController,
    cfg: &Config,
    now: Instant,
    players: &Players,
    frontier: Frame,
) -> u32 {
    let batching = batching(cfg);
    let advances = advances(cfg, players);
    let worst = players
        .iter()
        .flatten()
        .filter(|p| !p.pending)
        .filter_map(|p| {
            let rtt = p
                .input_rtt
                .or(p.link.rtt.conservative().map(|r| r + batching))?;
            // A client that time sync speeds up (it runs behind) reaches its keyframe
            // that much sooner; one at its nominal rate or slowed down does not.
            Some(rtt.mul_f64(pace_for(advances[p.id.index()]).max(1.0)))
        })
        .max();
    let mut playing = players.iter().flatten().filter(|p| !p.pending).peekable();
    let measured = playing.peek().is_some() && playing.all(|p| p.input_rtt.is_some());
    let before = lead.lead();
    let lead = lead.update(now, worst, measured);
    if lead != before {
        tracing::debug!(
            "lockstep: lead {before} -> {lead} frames at {frontier} (worst input round trip {:?}, {})",
            worst.unwrap_or_default(),
            if measured { "measured" } else { "estimated" }
        );
    }
    lead
}

/// Strict mode: frame `frame`'s inputs, if every player's input for it is known, and
/// whether a sample was placed.
fn strict_frame(lead: u32, frame: u32, players: &mut Players) -> Option<(Inputs, bool)> {
    // Shrink: a player ahead of the lead drops one sample equal to the input before
    // it (at most one per published frame), so its lead falls without losing a change.
    // Only players with the largest offset drop: a frame waits for the newest sample
    // it carries, so a player whose offset fell below another's would hold the
    // other's samples back, and their measured round trips (and so the lead) with them.
    let largest = players
        .iter()
        .flatten()
        .filter(|p| !p.pending)
        .map(|p| frame.saturating_sub(p.input.next))
        .max()
        .unwrap_or(0);
    for p in players.iter_mut().flatten().filter(|p| !p.pending) {
        let q = &mut p.input;
        let offset = frame.saturating_sub(q.next);
        if !q.dropped && offset > lead && offset == largest && q.samples.front() == Some(&q.last) {
            q.take_sample();
            q.dropped = true;
        }
    }
    // A player is ready if its lead must grow (repeat its input) or its next sample is here.
    let ready = players
        .iter()
        .flatten()
        .filter(|p| !p.pending)
        .all(|p| frame.saturating_sub(p.input.next) < lead || !p.input.samples.is_empty());
    if !ready {
        return None;
    }
    let mut placed = false;
    let mut inputs = [Pad::NEUTRAL; MAX_PLAYERS];
    for p in players.iter_mut().flatten().filter(|p| !p.pending) {
        let q = &mut p.input;
        if frame.saturating_sub(q.next) >= lead {
            if let Some(s) = q.take_sample() {
                q.last = s;
                placed = true;
            }
        }
        // else grow: this frame repeats the player's input, no sample consumed.
        q.dropped = false;
        inputs[p.id.index()] = q.last;
    }
    Some((inputs, placed))
}
