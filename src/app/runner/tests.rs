//! Runner pacing on simulated time: deadlines, catch-up cap, stalls, pace, end conditions.
//! Run-ahead (`run_ahead`) has a file of its own beside this one, sharing its machines.

use std::cell::Cell;
use std::rc::Rc;

use super::*;
use crate::input::{Pad, MAX_PLAYERS};

mod run_ahead;

/// A clock moved by hand; `step` is added on every read (to make fast-mode budgets expire).
#[derive(Clone)]
struct ManualClock {
    now: Rc<Cell<Instant>>,
    step: Duration,
}

impl ManualClock {
    fn new() -> ManualClock {
        ManualClock {
            now: Rc::new(Cell::new(Instant::now())),
            step: Duration::ZERO,
        }
    }
    fn get(&self) -> Instant {
        self.now.get()
    }
    fn set(&self, t: Instant) {
        self.now.set(t);
    }
    fn advance(&self, d: Duration) {
        self.now.set(self.now.get() + d);
    }
}

impl Clock for ManualClock {
    fn now(&mut self) -> Instant {
        let t = self.now.get();
        self.now.set(t + self.step);
        t
    }
}

/// Counts frames and remembers the inputs it got.
#[derive(Default)]
struct Counter {
    frames: u64,
    last: Inputs,
    shutdown_at: Option<u64>,
}

impl Machine for Counter {
    fn run_frame(&mut self, inputs: &Inputs) {
        self.frames += 1;
        self.last = *inputs;
    }
    fn fps(&self) -> f64 {
        60.0
    }
    fn shutdown_requested(&self) -> bool {
        self.shutdown_at.is_some_and(|f| self.frames >= f)
    }
}

/// Plays the local pad; stalls while `stall` says so; ends after `end_after` frames.
#[derive(Default)]
struct Scripted {
    local: Inputs,
    given: u64,
    stall: Option<(u64, u32)>, // (from frame, number of polls to refuse)
    end_after: Option<u64>,
    pace: Option<f64>,
    /// Said once by `take_behind` after this many frames ran.
    behind: Option<(u64, Duration)>,
}

impl Feed for Scripted {
    fn sample(&mut self, _now: Instant, local: &Inputs) {
        self.local = *local;
    }
    fn next(&mut self, _now: Instant) -> FeedPoll {
        if self.end_after == Some(self.given) {
            return FeedPoll::End;
        }
        if let Some((from, left)) = &mut self.stall {
            if self.given >= *from && *left > 0 {
                *left -= 1;
                return FeedPoll::Wait(None);
            }
        }
        self.given += 1;
        FeedPoll::Run(self.local)
    }
    fn pace(&self) -> Option<f64> {
        self.pace
    }
    fn take_behind(&mut self) -> Option<Duration> {
        match self.behind {
            Some((after, d)) if self.given >= after => {
                self.behind = None;
                Some(d)
            }
            _ => None,
        }
    }
}

const P: Duration = Duration::from_nanos(16_666_667);

fn runner(
    feed: Scripted,
    config: RunnerConfig,
) -> (Runner<Counter, Scripted, ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    (Runner::with_clock(feed, config, clock.clone()), clock)
}

/// Ticks like a driver that waits exactly as told, until `until` is reached.
fn drive(
    r: &mut Runner<Counter, Scripted, ManualClock>,
    clock: &ManualClock,
    m: &mut Counter,
    until: Instant,
) -> Vec<Tick> {
    let mut ticks = Vec::new();
    while clock.get() < until {
        let t = r.tick(m, &[Pad::NEUTRAL; MAX_PLAYERS]).unwrap();
        ticks.push(t);
        if matches!(t.status, Status::Ended(_)) {
            break;
        }
        clock.set(t.wake_at.max(clock.get()));
    }
    ticks
}

/// A runner whose feed refuses `polls` polls from frame `from` on, driven for one second.
fn stalled_second(
    from: u64,
    polls: u32,
) -> (
    Runner<Counter, Scripted, ManualClock>,
    ManualClock,
    Counter,
    Vec<Tick>,
) {
    let feed = Scripted {
        stall: Some((from, polls)),
        ..Default::default()
    };
    let (mut r, clock) = runner(feed, RunnerConfig::default());
    let mut m = Counter::default();
    let t0 = clock.get();
    let ticks = drive(&mut r, &clock, &mut m, t0 + Duration::from_secs(1));
    (r, clock, m, ticks)
}

#[test]
fn paces_at_the_machine_fps_one_frame_per_display() {
    let (mut r, clock) = runner(Scripted::default(), RunnerConfig::default());
    let mut m = Counter::default();
    let t0 = clock.get();
    let ticks = drive(&mut r, &clock, &mut m, t0 + Duration::from_secs(1));
    assert!((59..=61).contains(&m.frames), "{} frames in 1 s", m.frames);
    assert!(ticks.iter().all(|t| t.frames <= 1));
    assert_eq!(r.stats().catch_up_frames, 0);
}

#[test]
fn catch_up_is_capped_per_displayed_frame() {
    let (mut r, clock) = runner(Scripted::default(), RunnerConfig::default());
    let mut m = Counter::default();
    r.tick(&mut m, &Default::default()).unwrap();
    // The display hitched for 10 frames (under max_lag).
    clock.advance(P * 10);
    let t = r.tick(&mut m, &Default::default()).unwrap();
    assert_eq!(t.frames, 4);
    // Same display slot again: nothing more runs until the next slot.
    let again = r.tick(&mut m, &Default::default()).unwrap();
    assert_eq!(again.frames, 0);
    assert!(again.wake_at > clock.get());
    let t0 = clock.get();
    let ticks = drive(&mut r, &clock, &mut m, t0 + P * 6);
    assert!(ticks.iter().all(|t| t.frames <= 4));
    // 1 + 10 hitched + 6 more slots of time = 17 frames due; all caught up by now.
    assert!((16..=18).contains(&m.frames), "{}", m.frames);
    assert!(r.stats().catch_up_frames >= 9);
}

#[test]
fn a_long_hitch_drops_the_backlog() {
    let (mut r, clock) = runner(Scripted::default(), RunnerConfig::default());
    let mut m = Counter::default();
    r.tick(&mut m, &Default::default()).unwrap();
    clock.advance(Duration::from_secs(2));
    let t = r.tick(&mut m, &Default::default()).unwrap();
    assert_eq!(t.frames, 1);
    let t0 = clock.get();
    drive(&mut r, &clock, &mut m, t0 + P * 5);
    assert!(m.frames <= 8, "raced to catch up: {} frames", m.frames);
    assert_eq!(r.stats().lag_resets, 1);
}

#[test]
fn stalls_count_display_slots_and_wait_for_the_feed() {
    // The feed refuses 10 polls from frame 30 on; each refusal waits for the next slot.
    let (mut r, _, m, ticks) = stalled_second(30, 10);
    assert_eq!(r.stats().stall_frames, 10);
    let stalled: Vec<_> = ticks
        .iter()
        .filter(|t| t.status == Status::Stalled)
        .collect();
    assert_eq!(stalled.len(), 10);
    assert!(stalled.iter().all(|t| t.frames == 0));
    // Once inputs arrive the runner catches up, at most 4 frames per displayed frame,
    // and ends the second on time.
    assert!(ticks.iter().all(|t| t.frames <= 4));
    assert!(ticks.iter().any(|t| t.frames > 1));
    assert!((59..=61).contains(&m.frames), "{} frames", m.frames);
}

#[test]
fn waiting_for_the_first_frame_is_not_a_stall() {
    let (mut r, _, m, ticks) = stalled_second(0, 10);
    assert_eq!(
        ticks.iter().filter(|t| t.status == Status::Stalled).count(),
        10
    );
    assert_eq!(r.stats().stall_frames, 0);
    assert!(m.frames > 0);
}

#[test]
fn the_clock_starts_with_the_first_frame_not_while_waiting_for_it() {
    // The feed has nothing for the first 10 display slots (a joiner waiting for the host's
    // first UPDATE). Then frames are paced from frame 0 on: no burst to make up the wait.
    let (mut r, _, m, ticks) = stalled_second(0, 10);
    assert!(
        ticks.iter().all(|t| t.frames <= 1),
        "a burst after the wait"
    );
    assert_eq!(r.stats().catch_up_frames, 0);
    assert!((49..=51).contains(&m.frames), "{} frames", m.frames);
}

#[test]
fn a_clock_found_behind_catches_up_within_the_cap() {
    // A joiner learns two frames in that its frame 0 came 200 ms (12 frames) after the host
    // ran it: it catches those frames up, at most 4 per displayed frame, and stays there.
    let feed = Scripted {
        behind: Some((2, P * 12)),
        ..Default::default()
    };
    let (mut r, clock) = runner(feed, RunnerConfig::default());
    let mut m = Counter::default();
    let t0 = clock.get();
    let ticks = drive(&mut r, &clock, &mut m, t0 + P * 10 + P / 2);
    assert!(ticks.iter().all(|t| t.frames <= 4), "over the cap");
    assert_eq!(m.frames, 11 + 12, "10 slots plus the 12 frames behind");
    assert_eq!(r.stats().catch_up_frames, 12);
    drive(&mut r, &clock, &mut m, t0 + P * 60 + P / 2);
    assert_eq!(m.frames, 61 + 12, "no more catching up: in phase");
    assert_eq!(r.stats().stall_frames, 0);
}

#[test]
fn a_long_stall_does_not_cause_a_long_burst() {
    let (mut r, clock, mut m, _) = stalled_second(30, 1_000_000);
    assert_eq!(m.frames, 30);
    let stalls = r.stats().stall_frames;
    assert!((29..=31).contains(&stalls), "{stalls} stall frames");
    r.feed_mut().stall = None;
    let t1 = clock.get();
    drive(&mut r, &clock, &mut m, t1 + P * 10);
    assert!(m.frames <= 41, "{} frames", m.frames);
}

#[test]
fn pace_hint_speeds_up_within_the_cap() {
    let feed = Scripted {
        pace: Some(1.5),
        ..Default::default()
    };
    let (mut r, clock) = runner(feed, RunnerConfig::default());
    let mut m = Counter::default();
    let t0 = clock.get();
    drive(&mut r, &clock, &mut m, t0 + Duration::from_secs(1));
    assert!(
        (85..=95).contains(&m.frames),
        "{} frames at pace 1.5",
        m.frames
    );
}

#[test]
fn fast_mode_ignores_the_clock() {
    let config = RunnerConfig {
        fast: true,
        max_frames: Some(1000),
        ..Default::default()
    };
    let (mut r, clock) = runner(Scripted::default(), config);
    let mut m = Counter::default();
    let ticks = drive(&mut r, &clock, &mut m, clock.get() + Duration::from_secs(1));
    assert_eq!(m.frames, 1000);
    assert_eq!(
        ticks.last().unwrap().status,
        Status::Ended(EndReason::FrameLimit)
    );
    assert_eq!(clock.get(), ticks[0].wake_at, "fast mode never waited");
}

#[test]
fn fast_mode_yields_after_its_budget() {
    let config = RunnerConfig {
        fast: true,
        fast_budget: Duration::from_millis(1),
        ..Default::default()
    };
    let mut clock = ManualClock::new();
    clock.step = Duration::from_micros(100);
    let mut r = Runner::with_clock(Scripted::default(), config, clock);
    let mut m = Counter::default();
    let t = r.tick(&mut m, &Default::default()).unwrap();
    assert!(
        (5..=15).contains(&t.frames),
        "{} frames in a 1 ms budget",
        t.frames
    );
}

#[test]
fn frame_limit_feed_end_and_shutdown_end_the_run() {
    let config = RunnerConfig {
        max_frames: Some(10),
        ..Default::default()
    };
    let (mut r, clock) = runner(Scripted::default(), config);
    let mut m = Counter::default();
    let ticks = drive(&mut r, &clock, &mut m, clock.get() + Duration::from_secs(5));
    assert_eq!(m.frames, 10);
    assert_eq!(
        ticks.last().unwrap().status,
        Status::Ended(EndReason::FrameLimit)
    );

    let feed = Scripted {
        end_after: Some(5),
        ..Default::default()
    };
    let (mut r, clock) = runner(feed, RunnerConfig::default());
    let mut m = Counter::default();
    let ticks = drive(&mut r, &clock, &mut m, clock.get() + Duration::from_secs(5));
    assert_eq!(m.frames, 5);
    assert_eq!(
        ticks.last().unwrap().status,
        Status::Ended(EndReason::FeedEnded)
    );

    let (mut r, clock) = runner(Scripted::default(), RunnerConfig::default());
    let mut m = Counter {
        shutdown_at: Some(3),
        ..Default::default()
    };
    let ticks = drive(&mut r, &clock, &mut m, clock.get() + Duration::from_secs(5));
    assert_eq!(m.frames, 3);
    assert_eq!(
        ticks.last().unwrap().status,
        Status::Ended(EndReason::Shutdown)
    );
}

#[test]
fn pause_runs_nothing_and_resumes_without_a_burst() {
    let (mut r, clock) = runner(Scripted::default(), RunnerConfig::default());
    let mut m = Counter::default();
    r.tick(&mut m, &Default::default()).unwrap();
    r.set_paused(true);
    let t0 = clock.get();
    let ticks = drive(&mut r, &clock, &mut m, t0 + Duration::from_millis(100));
    assert!(ticks
        .iter()
        .all(|t| t.status == Status::Paused && t.frames == 0));
    assert_eq!(m.frames, 1);
    r.set_paused(false);
    let t = r.tick(&mut m, &Default::default()).unwrap();
    assert_eq!(t.frames, 1);
}

#[test]
fn observers_see_every_frame_in_order_and_can_fail() {
    let seen = Rc::new(Cell::new(0u64));
    let (mut r, clock) = runner(Scripted::default(), RunnerConfig::default());
    let s = seen.clone();
    r.observe(Box::new(
        move |frame: u64, inputs: &Inputs, m: &mut Counter| -> Result<(), ObserverError> {
            assert_eq!(frame, s.get());
            assert_eq!(m.frames, frame + 1);
            assert_eq!(inputs[1], Pad(0x40));
            s.set(frame + 1);
            if frame == 20 {
                return Err("disk full".into());
            }
            Ok(())
        },
    ));
    let mut m = Counter::default();
    let mut local = [Pad::NEUTRAL; MAX_PLAYERS];
    local[1] = Pad(0x40);
    let err = loop {
        match r.tick(&mut m, &local) {
            Ok(t) => clock.set(t.wake_at.max(clock.get() + Duration::from_micros(1))),
            Err(e) => break e,
        }
    };
    assert_eq!(seen.get(), 21);
    assert!(matches!(err, RunError::Observer { frame: 20, .. }), "{err}");
    assert_eq!(m.last[1], Pad(0x40));
}
