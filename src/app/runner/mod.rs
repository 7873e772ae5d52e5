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
//! Running ahead (`RunnerConfig::run_ahead`: `play --run-ahead`, netplay's `--speculate`):
//! after a tick that ran frames, the feed's predicted inputs ([`Feed::predict`]) run on
//! from the last frame that counts, the newest one's picture is left for the frontend and
//! the machine's state is loaded back. The state after each frame run ahead is kept: the
//! next tick starts from the newest one whose inputs still hold (a rollback starts from
//! the first that changed), so a steady tick runs one frame that counts and one new one
//! ahead. Each frame's sound plays once, when it is first run ahead. The depth drops while
//! a frame, the frames ahead and a save and load would not fit 70% of a frame period.
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

pub use roles::{Clock, Feed, FeedPoll, FrameObserver, Machine, ObserverError, SystemClock};

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
    /// Frames to run ahead of the feed after each tick that ran frames, with the feed's
    /// predicted inputs, to show and take back (`play --run-ahead`); 0: none.
    pub run_ahead: u32,
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
    /// Frames emulated during this tick (0..=catch_up_cap unless fast).
    pub frames: u32,
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
    /// Frames that count whose inputs differed from those run ahead with: ticks that found
    /// one (each a rollback: what was shown ahead is run again from the last real frame),
    /// how many frames ahead each had to redo, and pictures shown that a later frame's
    /// inputs proved wrong.
    pub rollbacks: u64,
    pub rollback_frames: crate::lockstep::LatencyStats,
    pub corrected_frames_shown: u64,
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
    /// Run-ahead: the newest frame whose sound was played (frames run ahead play theirs
    /// once; the feed's own run of them later is silent), and the predicted inputs.
    heard: Option<u64>,
    predicted: Vec<Inputs>,
    /// Pictures shown ahead not yet proven right or wrong: (first frame run ahead, the
    /// inputs it was run with through the frame shown).
    shown_ahead: std::collections::VecDeque<(u64, Vec<Inputs>)>,
    /// Depth run ahead now: `config.run_ahead`, lowered while the core cannot afford it.
    depth: u32,
    /// Time one frame takes to run (smoothed) and one save plus load.
    frame_cost: Option<Duration>,
    save_load_cost: Option<Duration>,
    said_budget: bool,
    /// The frame of the picture shown last, and the inputs it was run ahead with from
    /// which frame (to tell a rollback).
    last_head: Option<u64>,
    last_ahead: (u64, Vec<Inputs>),
    /// The state after each frame of `last_ahead`, kept for the next tick: frames whose
    /// inputs are still the same are not run again. Spare buffers for reuse, the last
    /// frame that counts's state, and `Machine::loads` when the states were made.
    ahead_states: Vec<Vec<u8>>,
    spare_states: Vec<Vec<u8>>,
    base_state: Vec<u8>,
    loads_seen: Option<u64>,
}

/// An exponentially smoothed duration (1/8 of each new sample).
fn smooth(old: Option<Duration>, new: Duration) -> Duration {
    match old {
        Some(old) => old.mul_f64(0.875) + new.mul_f64(0.125),
        None => new,
    }
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
            heard: None,
            predicted: Vec::new(),
            shown_ahead: std::collections::VecDeque::new(),
            depth: config_depth,
            frame_cost: None,
            save_load_cost: None,
            said_budget: false,
            last_head: None,
            last_ahead: (0, Vec::new()),
            ahead_states: Vec::new(),
            spare_states: Vec::new(),
            base_state: Vec::new(),
            loads_seen: None,
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
        if self.config.run_ahead > 0 {
            m.insert("speculate_depth".into(), json!(self.depth));
            m.insert("rollbacks".into(), json!(s.rollbacks));
            m.insert(
                "rollback_frames".into(),
                json!({
                    "median": s.rollback_frames.median(),
                    "max": s.rollback_frames.quantile(1.0),
                }),
            );
            m.insert(
                "corrected_frames_shown".into(),
                json!(s.corrected_frames_shown),
            );
            m.insert(
                "run_ahead".into(),
                json!({
                    "depth": self.config.run_ahead,
                    "frames": s.ahead_frames,
                    "ms_per_displayed_frame": if s.displayed_frames > 0 {
                        s.ahead_time.as_secs_f64() * 1e3 / s.displayed_frames as f64
                    } else {
                        0.0
                    },
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

    fn finish(&mut self, frames: u32, status: Status, wake_at: Instant) -> Tick {
        let end = self.clock.now();
        Tick {
            frames,
            status,
            wake_at,
            timeout: wake_at.saturating_duration_since(end),
        }
    }

    /// A frame that counts ran with `inputs`: were the pictures shown ahead of it run
    /// with the same? The newest picture's first wrong frame starts a rollback (see
    /// `note_rollback`); each picture shown with other inputs was a corrected one.
    fn check_prediction(&mut self, frame: u64, inputs: &Inputs, wrong_from: &mut Option<u64>) {
        let (first, ahead) = &self.last_ahead;
        let guess = frame
            .checked_sub(*first)
            .and_then(|i| ahead.get(i as usize));
        if guess.is_some_and(|g| g != inputs) && wrong_from.is_none() {
            *wrong_from = Some(frame);
        }
        let before = self.shown_ahead.len();
        self.shown_ahead.retain(|(first, ahead)| {
            match frame
                .checked_sub(*first)
                .and_then(|i| ahead.get(i as usize))
            {
                Some(guess) => guess == inputs,
                None => true,
            }
        });
        self.stats.corrected_frames_shown += (before - self.shown_ahead.len()) as u64;
        // Proven right through the frame shown.
        self.shown_ahead
            .retain(|(first, ahead)| first + ahead.len() as u64 > frame + 1);
    }

    /// A rollback: the picture shown last was run with other inputs from frame `from` on
    /// than what is known now, so the frames from there to it are run again.
    fn note_rollback(&mut self, from: u64) {
        if let Some(head) = self.last_head.filter(|h| *h >= from) {
            self.stats.rollbacks += 1;
            self.stats.rollback_frames.record((head + 1 - from) as u32);
        }
    }

    /// How far the core can afford to run ahead: a tick's frame plus `depth` more and a
    /// save and a load within 70% of a frame period, at least 1. Said once when it lowers
    /// the depth.
    fn affordable_depth(&mut self) -> u32 {
        let (Some(frame), Some(save_load)) = (self.frame_cost, self.save_load_cost) else {
            return self.config.run_ahead;
        };
        // Not on the first second's numbers: the first saves fault their buffers in.
        if self.config.fast || self.stats.displayed_frames < 60 {
            return self.config.run_ahead;
        }
        let budget = self.period.mul_f64(0.7).saturating_sub(save_load);
        let frames = (budget.as_secs_f64() / frame.as_secs_f64().max(1e-6)) as u32;
        // At least one frame: its cost keeps being measured, so a busy moment does not
        // stop it for good.
        let depth = frames
            .saturating_sub(1)
            .clamp(1, self.config.run_ahead.max(1));
        if depth < self.config.run_ahead && !self.said_budget {
            self.said_budget = true;
            tracing::warn!(
                "running ahead: a frame takes {:.2} ms and a save and load {:.2} ms here, so \
                 at most {depth} of {} frame(s) ahead fit a frame's time",
                frame.as_secs_f64() * 1e3,
                save_load.as_secs_f64() * 1e3,
                self.config.run_ahead
            );
        }
        depth
    }

    /// Runs the feed's predicted frames past the last one run, leaving the newest one's
    /// picture (and the sound of frames not heard yet) for the frontend, then restores the
    /// machine: the frames that count are the feed's own, whatever was shown.
    fn run_ahead(&mut self, machine: &mut M, mut wrong_from: Option<u64>) {
        let t0 = self.clock.now();
        self.depth = self.affordable_depth();
        let mut predicted = std::mem::take(&mut self.predicted);
        predicted.clear();
        self.feed.predict(self.depth, &mut predicted);
        let first = self.stats.frames;
        // Frames the last picture ran ahead through that are known otherwise now (newly
        // received inputs, or this player's own placed elsewhere).
        let (old_first, old) = &self.last_ahead;
        if wrong_from.is_none() {
            wrong_from = predicted
                .iter()
                .enumerate()
                .map(|(i, p)| (first + i as u64, p))
                .find(|(f, p)| {
                    f.checked_sub(*old_first)
                        .and_then(|j| old.get(j as usize))
                        .is_some_and(|o| o != *p)
                })
                .map(|(f, _)| f);
        }
        if let Some(from) = wrong_from {
            self.note_rollback(from);
        }
        let mut head = first.saturating_sub(1);
        if !predicted.is_empty() {
            head = self.run_predicted(machine, &predicted, wrong_from);
        }
        if predicted.is_empty() {
            self.last_ahead.1.clear();
            self.spare_states.append(&mut self.ahead_states);
        }
        self.predicted = predicted;
        self.last_head = Some(head);
        let now = self.clock.now();
        self.feed
            .displayed(now, head, (head + 1).saturating_sub(first) as u32);
        self.stats.ahead_time += now.saturating_duration_since(t0);
    }

    /// Runs `predicted` from the last frame that counts (first the frames whose states from
    /// the last tick still hold: same inputs since, and nobody else loaded a state), shows
    /// the last, and loads the machine back. Returns the frame shown.
    fn run_predicted(
        &mut self,
        machine: &mut M,
        predicted: &[Inputs],
        wrong_from: Option<u64>,
    ) -> u64 {
        let first = self.stats.frames;
        let (old_first, old) = std::mem::take(&mut self.last_ahead);
        let mut states = std::mem::take(&mut self.ahead_states);
        // States from the last tick hold while nobody else loaded one and the frames that
        // count since ran with the inputs they were run ahead with.
        let fresh = self.loads_seen == Some(machine.loads())
            && old_first <= first
            && wrong_from.is_none_or(|w| w >= first);
        let skip = (first - old_first.min(first)) as usize;
        let mut save_load = Duration::ZERO;
        let mut base = std::mem::take(&mut self.base_state);
        if fresh && (1..=states.len()).contains(&skip) {
            // The last frame that counts was run ahead already: its state is at hand.
            std::mem::swap(&mut base, &mut states[skip - 1]);
        } else {
            let t = self.clock.now();
            if !machine.save_state_into(&mut base) {
                tracing::warn!("running ahead: the core cannot save its state; running without");
                self.config.run_ahead = 0;
                return first.saturating_sub(1);
            }
            save_load += self.clock.now().saturating_duration_since(t);
        }
        // The states ahead that still hold, moved to the front.
        let skip = skip.min(states.len());
        self.spare_states.extend(states.drain(..skip));
        let mut keep = 0;
        if fresh {
            while keep + 1 < predicted.len()
                && keep < states.len()
                && old.get(skip + keep) == Some(&predicted[keep])
                && wrong_from.is_none_or(|w| w > first + keep as u64)
            {
                keep += 1;
            }
        }
        self.spare_states.extend(states.drain(keep..));
        if keep > 0 {
            let t = self.clock.now();
            if !machine.load_state(&states[keep - 1]) {
                keep = 0;
                self.spare_states.append(&mut states);
            }
            save_load += self.clock.now().saturating_duration_since(t);
        }
        for (i, inputs) in predicted.iter().enumerate().skip(keep) {
            machine.run_frame(inputs);
            let frame = first + i as u64;
            if self.heard.is_some_and(|h| frame <= h) {
                machine.discard_audio();
            }
            let mut buf = self.spare_states.pop().unwrap_or_default();
            let t = self.clock.now();
            if !machine.save_state_into(&mut buf) {
                buf.clear();
            }
            save_load += self.clock.now().saturating_duration_since(t);
            states.push(buf);
        }
        let last = first + predicted.len() as u64 - 1;
        self.heard = Some(self.heard.map_or(last, |h| h.max(last)));
        self.stats.ahead_frames += (predicted.len() - keep) as u64;
        let t_load = self.clock.now();
        if !machine.load_state(&base) {
            tracing::warn!("running ahead: the core refused its own state; stopping");
            self.config.run_ahead = 0;
        }
        save_load += self.clock.now().saturating_duration_since(t_load);
        self.save_load_cost = Some(smooth(self.save_load_cost, save_load));
        self.loads_seen = Some(machine.loads());
        self.base_state = base;
        self.ahead_states = states;
        if self.shown_ahead.len() >= 64 {
            self.shown_ahead.pop_front();
        }
        self.shown_ahead.push_back((first, predicted.to_vec()));
        self.last_ahead = (first, predicted.to_vec());
        last
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
        self.check_frame_limit();
        if let Some(reason) = self.ended {
            return Ok(self.finish(0, Status::Ended(reason), now));
        }
        if self.paused {
            return Ok(self.finish(0, Status::Paused, now + self.period));
        }
        if self.feed.paused() {
            // Resume from then, as `set_paused` does.
            self.next_frame = None;
            return Ok(self.finish(0, Status::Paused, now + self.period));
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
        let mut wrong_from = None;
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
                    let t0 = self.clock.now();
                    machine.run_frame(&inputs);
                    let frame = self.stats.frames;
                    if self.config.run_ahead > 0 {
                        let took = self.clock.now().saturating_duration_since(t0);
                        self.frame_cost = Some(smooth(self.frame_cost, took));
                        self.check_prediction(frame, &inputs, &mut wrong_from);
                    }
                    self.stats.frames += 1;
                    ran += 1;
                    next_frame += period;
                    for obs in &mut self.observers {
                        obs.after_frame(frame, &inputs, machine)
                            .map_err(|source| RunError::Observer { frame, source })?;
                    }
                    // After the observers: a video recording keeps every frame's own sound,
                    // even the sound already played while running ahead.
                    if self.heard.is_some_and(|h| frame <= h) {
                        machine.discard_audio();
                    }
                    if machine.shutdown_requested() {
                        self.ended = Some(EndReason::Shutdown);
                        break;
                    }
                }
                FeedPoll::Wait(until) => {
                    let next = self.stats.frames;
                    for obs in &mut self.observers {
                        obs.idle(next, machine)
                            .map_err(|source| RunError::Observer {
                                frame: next,
                                source,
                            })?;
                    }
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
        // Not after the last frame: the run ends on the frame that counts, picture and all.
        if ran > 0 && self.config.run_ahead > 0 && self.ended.is_none() {
            self.run_ahead(machine, wrong_from);
        } else if ran > 0 {
            let now = self.clock.now();
            self.feed.displayed(now, self.stats.frames - 1, 0);
        }
        if let Some(reason) = self.ended {
            return Ok(self.finish(ran, Status::Ended(reason), now));
        }

        let next_slot = self.slot_start(slot + 1);
        if let (0, Some(_)) = (ran, wait) {
            if self.feed.paused() {
                // Reached the frame a pause stops at: no stall.
                self.next_frame = None;
                return Ok(self.finish(0, Status::Paused, now + self.period));
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
            return Ok(self.finish(0, Status::Stalled, wake));
        }
        let wake = if self.config.fast {
            // Partial stall after some frames ran: honour the feed's hint.
            wait.flatten().unwrap_or(now)
        } else if self.last_run_slot == Some(slot) {
            next_frame.max(next_slot)
        } else {
            next_frame
        };
        Ok(self.finish(ran, Status::Running, wake))
    }
}

#[cfg(test)]
mod tests;
