//! The frame scheduler: decides when the next frame runs and with which inputs.
//!
//! A [`Runner`] drives a [`Machine`] (the core) with inputs from a [`Feed`] (local pads,
//! a replay, netplay). It owns the clock: it reads [`Clock::now`] and passes `now` down,
//! and it tells its caller how long to wait instead of sleeping, so the same runner serves
//! the window loop (which waits in the event loop) and the headless loop (which sleeps).
//!
//! Pacing: frames are due at an absolute deadline that advances by one frame period per
//! emulated frame, so timer jitter does not accumulate. Time is cut into display slots of
//! one nominal period; at most one tick per slot runs frames (a "displayed frame"), and it
//! runs at most `catch_up_cap` frames. A runner that fell more than `max_lag` behind forgets
//! the backlog instead of racing to catch up. `fast` drops pacing altogether.
//!
//! Running ahead (`RunnerConfig::run_ahead`: netplay's speculation, `play --run-ahead`):
//! after the frames that are due, the feed's predicted inputs ([`Feed::predict`]) run on
//! ahead of the frames that count, and the newest one's picture is left for the frontend.
//! It is one timeline (`timeline`): a frame that comes to count with the inputs it was run
//! ahead with is not run again (its saved state is the agreed one), so a steady frame costs
//! one run and one save; a wrong guess loads the state before it and runs to the present
//! again, silently. An observer that needs the machine on a frame that counts (a checksum, a
//! state for a joiner) gets it run there once more. A player's picture runs ahead during a
//! stall too, within the depth. The depth drops to what a rollback of that many frames
//! costs within a frame period ([`RunnerConfig::speculation_costs`] seeds the costs); a
//! save or load that fails, or a frame whose second run differs from its first, stops
//! running ahead for the rest of the run ([`Feed::speculation_stopped`]).
//!
//! Calling order: `tick` repeatedly; after each tick wait `Tick::timeout` (or until an
//! event) and tick again, until `Tick::status` is `Ended`.
//!
//! This file is the [`Runner`] and its pacing and run-ahead state; the traits of what it
//! drives and is fed by are in `roles`. It must not import a frontend, netplay or a core:
//! they implement its traits.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::input::Inputs;

mod roles;

mod states;
mod timeline;

pub use roles::{Clock, Feed, FeedPoll, FrameObserver, Machine, ObserverError, SystemClock};
use timeline::Timeline;
pub use timeline::{Costs, SpeculationFailure, TimelineCounts};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("after frame {frame}: {source}")]
    Observer { frame: u64, source: ObserverError },
    #[error("frontend: {0}")]
    Frontend(String),
}

#[derive(Clone, Debug)]
pub struct RunnerConfig {
    /// Run unthrottled.
    pub fast: bool,
    /// Stop after this many frames.
    pub max_frames: Option<u64>,
    /// Most frames one displayed frame may run to catch up.
    pub catch_up_cap: u32,
    /// Further behind than this, the backlog is dropped.
    pub max_lag: Duration,
    /// In fast mode, how long one tick may keep running frames (at least one runs).
    pub fast_budget: Duration,
    /// Most frames to run ahead of the frames that count, with the feed's predicted inputs
    /// (netplay's speculation, `play --run-ahead`); 0: none.
    pub run_ahead: u32,
    /// What a frame, a save and a load cost on this machine (measured before, e.g. by the
    /// rollback check), for the depth before the run measures them itself.
    pub speculation_costs: Option<Costs>,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            fast: false,
            max_frames: None,
            catch_up_cap: 4,
            max_lag: Duration::from_millis(250),
            fast_budget: Duration::from_millis(2),
            run_ahead: 0,
            speculation_costs: None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    FrameLimit,
    FeedEnded,
    Shutdown,
    Quit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Frames ran, or none were due yet.
    Running,
    /// Frames were due but the feed had no inputs.
    Stalled,
    Paused,
    Ended(EndReason),
}

/// The outcome of one [`Runner::tick`].
#[derive(Clone, Copy, Debug)]
pub struct Tick {
    /// Frames that counted during this tick (0..=catch_up_cap unless fast).
    pub frames: u32,
    /// The machine shows a new picture: frames counted, or ran ahead (a player's picture
    /// runs ahead during a stall too).
    pub shown: bool,
    pub status: Status,
    /// When to tick again at the latest.
    pub wake_at: Instant,
    /// `wake_at` minus the time at the end of the tick (what a caller should wait).
    pub timeout: Duration,
}

/// Counters for `--stats-json`.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    pub frames: u64,
    /// Display slots in which frames were due but the feed said Wait, after the first frame
    /// (waiting for a netplay session's first inputs is its start, not a stall).
    pub stall_frames: u64,
    /// Ticks that ran at least one frame.
    pub displayed_frames: u64,
    /// Frames run beyond the first in a tick.
    pub catch_up_frames: u64,
    /// Times the backlog exceeded `max_lag` and was dropped.
    pub lag_resets: u64,
    /// Frames run ahead and taken back (those reused from the tick before not counted), and
    /// the time that took (saves and loads included).
    pub ahead_frames: u64,
    pub ahead_time: Duration,
    /// Guesses run ahead that proved wrong (each a rollback: the frames from the wrong one
    /// to the present run again), how many frames each ran again, and pictures shown that
    /// a later frame's inputs proved wrong.
    pub rollbacks: u64,
    pub rollback_frames: crate::lockstep::LatencyStats,
    pub corrected_frames_shown: u64,
    /// What running ahead did (frames confirmed without running again, saves, loads...),
    /// and the most frames a picture ran ahead of the last frame that counts.
    pub timeline: TimelineCounts,
    pub ahead_max: u32,
    pub wall: Duration,
}

pub struct Runner<M, F, C = SystemClock> {
    feed: F,
    clock: C,
    config: RunnerConfig,
    observers: Vec<Box<dyn FrameObserver<M>>>,
    fps: f64,
    /// Nominal frame period (from the machine's fps).
    period: Duration,
    /// Deadline of the next frame; `None` before the first tick.
    next_frame: Option<Instant>,
    /// Start of display slot 0.
    slot_origin: Instant,
    last_run_slot: Option<u64>,
    last_stall_slot: Option<u64>,
    paused: bool,
    started: Option<Instant>,
    ended: Option<EndReason>,
    stats: RunStats,
    /// Running ahead: the frames run ahead and the states kept, the predicted inputs (a
    /// buffer reused), the depth now (`config.run_ahead`, lowered while the machine cannot
    /// afford it), whether that was said, and why running ahead stopped, if it did.
    timeline: Timeline,
    predicted: Vec<Inputs>,
    depth: u32,
    said_budget: bool,
    /// Whether the log said the core cannot reload its state before a checksum.
    said_reload: bool,
    stopped: Option<SpeculationFailure>,
}

/// Frame period for `fps`, with a sane fallback for cores that report nonsense.
fn period_of(fps: f64) -> Duration {
    if fps.is_finite() && fps > 1.0 && fps < 1000.0 {
        Duration::from_secs_f64(1.0 / fps)
    } else {
        Duration::from_secs_f64(1.0 / 60.0)
    }
}

impl<M: Machine, F: Feed> Runner<M, F, SystemClock> {
    pub fn new(feed: F, config: RunnerConfig) -> Self {
        Runner::with_clock(feed, config, SystemClock)
    }
}

impl<M: Machine, F: Feed, C: Clock> Runner<M, F, C> {
    pub fn with_clock(feed: F, config: RunnerConfig, mut clock: C) -> Self {
        let now = clock.now();
        let config_depth = config.run_ahead;
        let seed_costs = config.speculation_costs;
        Runner {
            feed,
            clock,
            config,
            observers: Vec::new(),
            fps: 0.0,
            period: period_of(60.0),
            next_frame: None,
            slot_origin: now,
            last_run_slot: None,
            last_stall_slot: None,
            paused: false,
            started: None,
            ended: None,
            stats: RunStats::default(),
            timeline: {
                let mut t = Timeline::new();
                if let Some(costs) = seed_costs {
                    t.costs = costs;
                }
                t
            },
            predicted: Vec::new(),
            depth: config_depth,
            said_budget: false,
            said_reload: false,
            stopped: None,
        }
    }

    /// Adds a per-frame hook; hooks run in the order they were added.
    pub fn observe(&mut self, observer: Box<dyn FrameObserver<M>>) {
        self.observers.push(observer);
    }

    pub fn feed(&self) -> &F {
        &self.feed
    }

    pub fn feed_mut(&mut self) -> &mut F {
        &mut self.feed
    }

    /// Frames emulated so far.
    pub fn frame(&self) -> u64 {
        self.stats.frames
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    pub fn set_paused(&mut self, paused: bool) {
        if self.paused && !paused {
            // Resume from now rather than catching up the paused time.
            self.next_frame = None;
        }
        self.paused = paused;
    }

    /// Ends the run (user quit); the next tick reports `Ended(reason)`.
    pub fn stop(&mut self, reason: EndReason) {
        self.ended.get_or_insert(reason);
    }

    pub fn stats(&mut self) -> RunStats {
        let mut s = self.stats.clone();
        s.timeline = self.timeline.counts;
        s.corrected_frames_shown = self.timeline.corrected();
        if let Some(t0) = self.started {
            s.wall = self.clock.now().saturating_duration_since(t0);
        }
        s
    }

    /// Runner and feed numbers as JSON (for `--stats-json`).
    pub fn stats_json(&mut self) -> Map<String, Value> {
        let s = self.stats();
        let wall = s.wall.as_secs_f64();
        let mut m = Map::new();
        m.insert("frames".into(), json!(s.frames));
        m.insert("wall_s".into(), json!(wall));
        let fps = if wall > 0.0 {
            s.frames as f64 / wall
        } else {
            0.0
        };
        m.insert("fps".into(), json!(fps));
        m.insert("stall_frames".into(), json!(s.stall_frames));
        m.insert("displayed_frames".into(), json!(s.displayed_frames));
        m.insert("catch_up_frames".into(), json!(s.catch_up_frames));
        m.insert("lag_resets".into(), json!(s.lag_resets));
        if self.config.run_ahead > 0 || self.stopped.is_some() {
            m.insert("speculate_depth".into(), json!(self.depth));
            m.insert("rollbacks".into(), json!(s.rollbacks));
            m.insert(
                "rollback_frames".into(),
                json!({
                    "median": s.rollback_frames.median(),
                    "p95": s.rollback_frames.p95(),
                    "max": s.rollback_frames.quantile(1.0),
                }),
            );
            m.insert(
                "corrected_frames_shown".into(),
                json!(s.corrected_frames_shown),
            );
            let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e3);
            let costs = self.timeline.costs;
            let t = s.timeline;
            m.insert(
                "run_ahead".into(),
                json!({
                    "depth": self.config.run_ahead,
                    "frames": t.ahead,
                    "frames_rerun": t.rerun,
                    "frames_confirmed": t.confirmed,
                    "frames_materialized": t.materialized,
                    "frames_verified": t.verified,
                    "saves": t.saves,
                    "loads": t.loads,
                    "state_buffers": self.timeline.buffers_made(),
                    "ahead_max": s.ahead_max,
                    "run_ms": ms(costs.run),
                    "save_ms": ms(costs.save),
                    "load_ms": ms(costs.load),
                    "ms_per_displayed_frame": if s.displayed_frames > 0 {
                        s.ahead_time.as_secs_f64() * 1e3 / s.displayed_frames as f64
                    } else {
                        0.0
                    },
                    "stopped": self.stopped.as_ref().map(|e| e.to_string()),
                }),
            );
        }
        m.insert("feed".into(), Value::Object(self.feed.stats()));
        m
    }

    /// Ends the run once `max_frames` frames ran (unless it ended already).
    fn check_frame_limit(&mut self) {
        if self.ended.is_none()
            && self
                .config
                .max_frames
                .is_some_and(|m| self.stats.frames >= m)
        {
            self.ended = Some(EndReason::FrameLimit);
        }
    }

    fn slot(&self, now: Instant) -> u64 {
        (now.saturating_duration_since(self.slot_origin).as_nanos() / self.period.as_nanos().max(1))
            as u64
    }

    fn slot_start(&self, slot: u64) -> Instant {
        self.slot_origin + self.period.mul_f64(slot as f64)
    }

    fn finish(&mut self, frames: u32, shown: bool, status: Status, wake_at: Instant) -> Tick {
        let end = self.clock.now();
        Tick {
            frames,
            shown,
            status,
            wake_at,
            timeout: wake_at.saturating_duration_since(end),
        }
    }

    /// Running ahead is on and has not stopped.
    fn speculating(&self) -> bool {
        self.config.run_ahead > 0 && self.stopped.is_none()
    }

    /// A wrong guess ran `frames` frames again.
    fn note_rollback(&mut self, frames: u32) {
        if frames > 0 {
            self.stats.rollbacks += 1;
            self.stats.rollback_frames.record(frames);
            self.feed.rolled_back(frames);
        }
    }

    /// Running ahead stops for the rest of the run: the machine goes back to the frames that
    /// count and plays on from there. Said once, in the log and to the feed.
    fn stop_speculating(&mut self, machine: &mut M, why: SpeculationFailure) {
        let agreed = self.stats.frames;
        tracing::warn!(
            "running ahead stopped for the rest of this session: {why}; playing on without it"
        );
        if let Err(e) = self
            .timeline
            .settle(machine, &mut self.clock, agreed, false)
        {
            tracing::error!("running ahead: cannot go back to the agreed frames ({e})");
        }
        self.timeline.forget(agreed);
        self.feed.speculation_stopped(&why.to_string());
        self.stopped = Some(why);
    }

    /// How far the machine can afford to run ahead: a rollback through that many frames (a
    /// load, then a run and a save each) within 80% of a frame period, at least 1. Said
    /// once when it lowers the depth.
    fn affordable_depth(&mut self) -> u32 {
        if self.config.fast {
            return self.config.run_ahead;
        }
        let costs = self.timeline.costs;
        let Some(frames) = costs.affordable(self.period.mul_f64(0.8)) else {
            return self.config.run_ahead;
        };
        // At least one frame: its cost keeps being measured, so a busy moment does not
        // stop it for good.
        let depth = frames.clamp(1, self.config.run_ahead.max(1));
        if depth < self.config.run_ahead && !self.said_budget && self.stats.displayed_frames > 60 {
            self.said_budget = true;
            let ms = |d: Option<Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1e3);
            tracing::info!(
                "running ahead: a frame takes {:.2} ms, a save {:.2} ms and a load {:.2} ms \
                 here, so a rollback through at most {depth} of {} frame(s) fits a frame's time",
                ms(costs.run),
                ms(costs.save),
                ms(costs.load),
                self.config.run_ahead
            );
        }
        depth
    }

    /// A frame that counts, `frame`, with `inputs`, while running ahead: taken as it ran
    /// ahead when its guess held and no observer needs the machine on it; otherwise run on
    /// the agreed state (after a wrong guess, everything ahead of it is dropped).
    fn count_frame(
        &mut self,
        machine: &mut M,
        frame: u64,
        inputs: &Inputs,
    ) -> Result<(), RunError> {
        let last = self.config.max_frames.is_some_and(|m| frame + 1 >= m);
        // The run ends on the frame that counts, picture and all, and its checksum is
        // compared between peers and with replays.
        let checksummed = last || self.observers.iter_mut().any(|o| o.takes_checksum(frame));
        let needed = !self.speculating()
            || checksummed
            || self.observers.iter_mut().any(|o| o.needs_machine(frame));
        if !needed && self.timeline.confirm(inputs) {
            self.stats.frames += 1;
            for obs in &mut self.observers {
                obs.after_frame_ahead(frame, inputs)
                    .map_err(|source| RunError::Observer { frame, source })?;
            }
            return Ok(());
        }
        match self
            .timeline
            .before_live(machine, &mut self.clock, frame, inputs)
        {
            Ok(Some((_, stale))) => self.note_rollback(stale),
            Ok(None) => {}
            Err(e) => self.stop_speculating(machine, e),
        }
        if !self.timeline.is_live(frame) {
            // Speculation stopped and could not come back: nothing else to do but go on.
            self.timeline.forget(frame);
        }
        if checksummed && !self.timeline.reload(machine) && !self.said_reload {
            self.said_reload = true;
            tracing::debug!("the core cannot save and load its state before frame {frame}");
        }
        if self.speculating() {
            let t0 = self.clock.now();
            machine.run_frame(inputs);
            self.timeline
                .timed_run(self.clock.now().saturating_duration_since(t0));
        } else {
            machine.run_frame(inputs);
        }
        if needed {
            self.timeline.counts.materialized += 1;
        }
        let fresh = self.timeline.ran_live(frame);
        self.stats.frames += 1;
        for obs in &mut self.observers {
            obs.after_frame(frame, inputs, machine)
                .map_err(|source| RunError::Observer { frame, source })?;
        }
        // After the observers: a video recording keeps every frame's own sound, even the
        // sound already played while running ahead.
        if !fresh {
            machine.discard_audio();
        }
        if self.speculating() {
            let agreed = self.stats.frames;
            if let Err(e) = self.timeline.after_live(machine, &mut self.clock, agreed) {
                self.stop_speculating(machine, e);
            }
        }
        Ok(())
    }

    /// Runs the feed's predicted frames ahead of the frames that count and leaves the
    /// newest one's picture for the frontend (see the module doc). True if a new picture
    /// is shown.
    fn run_ahead(&mut self, machine: &mut M, counted: bool) -> bool {
        let t0 = self.clock.now();
        self.depth = self.affordable_depth();
        let mut predicted = std::mem::take(&mut self.predicted);
        predicted.clear();
        self.feed.predict(self.depth, &mut predicted);
        predicted.truncate(self.depth as usize);
        let agreed = self.stats.frames;
        let result = self
            .timeline
            .speculate(machine, &mut self.clock, agreed, &predicted);
        self.predicted = predicted;
        let spec = match result {
            Ok(spec) => spec,
            Err(e) => {
                self.stop_speculating(machine, e);
                return counted;
            }
        };
        if let Some((_, stale)) = spec.wrong {
            self.note_rollback(stale);
        }
        let shown = counted || spec.ran > 0;
        if shown {
            self.timeline.shown();
            let head = spec.head.unwrap_or(agreed.saturating_sub(1));
            let ahead = (head + 1).saturating_sub(agreed) as u32;
            self.stats.ahead_max = self.stats.ahead_max.max(ahead);
            let now = self.clock.now();
            self.feed
                .displayed(now, head, (head + 1).saturating_sub(agreed) as u32);
            self.stats.ahead_time += now.saturating_duration_since(t0);
        }
        shown
    }

    /// Calls the observers' `idle` while the feed waits for frame `next`: on the agreed
    /// state, put back there first when one needs it (a state for a joiner, a jump).
    fn idle(&mut self, machine: &mut M, next: u64) -> Result<(), RunError> {
        if self.speculating() && !self.timeline.is_live(next) {
            if !self
                .observers
                .iter_mut()
                .any(|o| o.idle_needs_machine(next))
            {
                return Ok(());
            }
            if let Err(e) = self.timeline.settle(machine, &mut self.clock, next, false) {
                self.stop_speculating(machine, e);
            }
        }
        for obs in &mut self.observers {
            obs.idle(next, machine)
                .map_err(|source| RunError::Observer {
                    frame: next,
                    source,
                })?;
        }
        if self.speculating() {
            self.timeline.check_loads(machine, next);
        }
        Ok(())
    }

    /// The run ends: the machine goes back to the last frame that counts, picture and all
    /// (its checksum, screenshot and save RAM are the agreed ones).
    fn settle_at_end(&mut self, machine: &mut M) {
        if self.config.run_ahead == 0 {
            return;
        }
        let agreed = self.stats.frames;
        if let Err(e) = self.timeline.settle(machine, &mut self.clock, agreed, true) {
            tracing::error!("running ahead: cannot go back to the agreed frames at the end ({e})");
        }
    }

    /// Samples local input, runs the frames that are due and says when to come back.
    pub fn tick(&mut self, machine: &mut M, local: &Inputs) -> Result<Tick, RunError> {
        let now = self.clock.now();
        self.started.get_or_insert(now);
        let fps = machine.fps();
        if fps != self.fps {
            // New timing (first tick, or SET_SYSTEM_AV_INFO): restart slots and deadlines.
            self.fps = fps;
            self.period = period_of(fps);
            self.slot_origin = now;
            self.last_run_slot = None;
            self.last_stall_slot = None;
            self.next_frame = None;
        }
        self.feed.sample(now, local);
        if self.speculating() {
            self.timeline.check_loads(machine, self.stats.frames);
        }
        self.check_frame_limit();
        if let Some(reason) = self.ended {
            self.settle_at_end(machine);
            return Ok(self.finish(0, false, Status::Ended(reason), now));
        }
        if self.paused {
            return Ok(self.finish(0, false, Status::Paused, now + self.period));
        }
        if self.feed.paused() {
            // Resume from then, as `set_paused` does.
            self.next_frame = None;
            return Ok(self.finish(0, false, Status::Paused, now + self.period));
        }

        let pace = self.feed.pace().map_or(1.0, |p| p.clamp(0.5, 2.0));
        let period = self.period.div_f64(pace);
        let slot = self.slot(now);
        let mut next_frame = *self.next_frame.get_or_insert(now);
        if self.stats.frames > 0 {
            if let Some(behind) = self.feed.take_behind().filter(|d| !d.is_zero()) {
                tracing::debug!(
                    "{} ms behind the feed's clock: catching up",
                    behind.as_millis()
                );
                next_frame = next_frame.checked_sub(behind).unwrap_or(next_frame);
            }
        }

        let due = if self.config.fast {
            u32::MAX
        } else if self.last_run_slot == Some(slot) || next_frame > now {
            0
        } else {
            let behind = now - next_frame;
            if behind > self.config.max_lag {
                tracing::debug!("{} ms behind: dropping the backlog", behind.as_millis());
                self.stats.lag_resets += 1;
                next_frame = now;
                1
            } else {
                let n = behind.as_nanos() / period.as_nanos().max(1) + 1;
                n.min(u128::from(self.config.catch_up_cap.max(1))) as u32
            }
        };

        // Frames the feed asks to catch up run on top, within the cap; the clock does not
        // advance for them.
        let clock_due = due;
        let due = if due > 0 && due < u32::MAX {
            let extra = self.feed.backlog();
            due.max(extra.saturating_add(1).min(self.config.catch_up_cap.max(1)))
        } else {
            due
        };
        let mut ran = 0u32;
        let mut wait = None;
        while ran < due {
            if self
                .config
                .max_frames
                .is_some_and(|m| self.stats.frames >= m)
            {
                self.ended = Some(EndReason::FrameLimit);
                break;
            }
            match self.feed.next(now) {
                FeedPoll::Run(inputs) => {
                    let frame = self.stats.frames;
                    self.count_frame(machine, frame, &inputs)?;
                    ran += 1;
                    next_frame += period;
                    if machine.shutdown_requested() {
                        self.ended = Some(EndReason::Shutdown);
                        break;
                    }
                }
                FeedPoll::Wait(until) => {
                    let next = self.stats.frames;
                    self.idle(machine, next)?;
                    wait = Some(until);
                    break;
                }
                FeedPoll::End => {
                    self.ended = Some(EndReason::FeedEnded);
                    break;
                }
            }
            if self.config.fast
                && self.clock.now().saturating_duration_since(now) >= self.config.fast_budget
            {
                break;
            }
        }
        if ran > clock_due && clock_due < u32::MAX {
            next_frame = next_frame
                .checked_sub(period * (ran - clock_due))
                .unwrap_or(next_frame);
        }
        self.next_frame = Some(next_frame);
        if ran > 0 {
            self.last_run_slot = Some(slot);
            self.stats.displayed_frames += 1;
            self.stats.catch_up_frames += u64::from(ran - 1);
        }
        self.check_frame_limit();
        // A player's picture runs ahead whenever a frame was due, stalled or not; not after
        // the last frame: the run ends on the frame that counts, picture and all.
        let due_now = ran > 0 || (clock_due > 0 && self.stats.frames > 0);
        let mut shown = ran > 0;
        if self.speculating() && self.ended.is_none() && due_now {
            shown = self.run_ahead(machine, ran > 0);
        } else if ran > 0 {
            let now = self.clock.now();
            self.feed.displayed(now, self.stats.frames - 1, 0);
        }
        if let Some(reason) = self.ended {
            self.settle_at_end(machine);
            return Ok(self.finish(ran, true, Status::Ended(reason), now));
        }

        let next_slot = self.slot_start(slot + 1);
        if let (0, Some(_)) = (ran, wait) {
            if self.feed.paused() {
                // Reached the frame a pause stops at: no stall.
                self.next_frame = None;
                return Ok(self.finish(0, shown, Status::Paused, now + self.period));
            }
        }
        if let (0, Some(until)) = (ran, wait) {
            if self.stats.frames > 0 && self.feed.paced_by_arrival() {
                if self.last_stall_slot != Some(slot) {
                    self.last_stall_slot = Some(slot);
                    self.stats.stall_frames += 1;
                }
                self.next_frame = None;
            } else if self.stats.frames == 0 {
                // Waiting for the very first frame is the session starting, not a stall, and
                // not a backlog either: the clock starts with frame 0. Catching up the wait
                // would put a netplay joiner that many frames ahead of the host, its inputs
                // waiting at the server for the host's until time sync (2%) undoes it.
                self.next_frame = None;
            } else if self.last_stall_slot != Some(slot) {
                self.last_stall_slot = Some(slot);
                self.stats.stall_frames += 1;
            }
            let wake = until.unwrap_or(next_slot).max(now);
            return Ok(self.finish(0, shown, Status::Stalled, wake));
        }
        let wake = if self.config.fast {
            // Partial stall after some frames ran: honour the feed's hint.
            wait.flatten().unwrap_or(now)
        } else if self.last_run_slot == Some(slot) {
            next_frame.max(next_slot)
        } else {
            next_frame
        };
        Ok(self.finish(ran, shown, Status::Running, wake))
    }
}

#[cfg(test)]
mod tests;
