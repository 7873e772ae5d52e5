//! Runner pacing on simulated time: deadlines, catch-up cap, stalls, pace, end conditions.

use std::cell::Cell;
use std::rc::Rc;

use super::*;
use crate::input::{Pad, MAX_PLAYERS};

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

/// A machine whose state is its frame count and whose "sound" is the number of each
/// frame it ran, kept until drained: what run-ahead must play once per frame.
#[derive(Default)]
struct Tape {
    frames: u64,
    sound: Vec<u64>,
    loads: u32,
}

impl Machine for Tape {
    fn run_frame(&mut self, _inputs: &Inputs) {
        self.sound.push(self.frames);
        self.frames += 1;
    }
    fn fps(&self) -> f64 {
        60.0
    }
    fn save_state(&mut self) -> Option<Vec<u8>> {
        Some(self.frames.to_le_bytes().to_vec())
    }
    fn load_state(&mut self, state: &[u8]) -> bool {
        self.loads += 1;
        self.frames = u64::from_le_bytes(state.try_into().unwrap());
        true
    }
    fn discard_audio(&mut self) {
        self.sound.clear();
    }
}

/// Repeats its pads; predicts them held.
struct Held;

impl Feed for Held {
    fn sample(&mut self, _now: Instant, _local: &Inputs) {}
    fn next(&mut self, _now: Instant) -> FeedPoll {
        FeedPoll::Run([Pad::NEUTRAL; MAX_PLAYERS])
    }
    fn predict(&mut self, max: u32, out: &mut Vec<Inputs>) {
        out.extend(std::iter::repeat_n(
            [Pad::NEUTRAL; MAX_PLAYERS],
            max as usize,
        ));
    }
}

#[test]
fn run_ahead_plays_each_frames_sound_once_and_runs_each_frame_once_while_guesses_hold() {
    // Ticks every 16.7 ms, sometimes late by up to three frames (catch-up ticks run
    // several frames): the sound heard is every frame's exactly once, in order; the machine
    // stays on the newest frame run ahead, 3 past the last that counts; and since every
    // guess holds, no frame runs twice and no state is loaded.
    let clock = ManualClock::new();
    let cfg = RunnerConfig {
        run_ahead: 3,
        ..RunnerConfig::default()
    };
    let mut runner = Runner::with_clock(Held, cfg, clock.clone());
    let mut tape = Tape::default();
    let mut heard = Vec::new();
    let mut runs = 0;
    let period = Duration::from_secs_f64(1.0 / 60.0);
    for i in 0..300u32 {
        let before = tape.frames;
        let tick = runner
            .tick(&mut tape, &[Pad::NEUTRAL; MAX_PLAYERS])
            .unwrap();
        runs += tape.frames - before;
        assert_eq!(
            tape.frames,
            runner.frame() + 3,
            "tick {i}: not on the newest frame ahead"
        );
        heard.append(&mut tape.sound);
        if tick.frames > 0 {
            assert!(tick.shown);
            // The newest frame heard is the one shown: 3 past the last that counts.
            assert_eq!(heard.last(), Some(&(runner.frame() + 2)), "tick {i}");
        }
        clock.advance(period * if i % 37 == 36 { 3 } else { 1 });
    }
    let expected: Vec<u64> = (0..=runner.frame() + 2).collect();
    assert_eq!(heard, expected);
    assert_eq!(runs, runner.frame() + 3, "frames run more than once");
    assert_eq!(tape.loads, 0);
    let s = runner.stats();
    // All but the first, which had nothing run ahead yet.
    assert_eq!(s.timeline.confirmed, runner.frame() - 1);
    assert_eq!(s.rollbacks, 0);
}

/// A machine whose state is a hash of every input it ran, and whose picture is that hash
/// after the last frame run (kept across loads, as a core's picture is).
#[derive(Default)]
struct Hasher {
    state: (u64, u64),
    picture: u64,
    runs: u64,
    loads: u64,
}

fn mix(h: u64, inputs: &Inputs) -> u64 {
    inputs
        .iter()
        .fold(h, |h, p| (h ^ u64::from(p.0)).wrapping_mul(0x100_0000_01b3))
}

impl Machine for Hasher {
    fn run_frame(&mut self, inputs: &Inputs) {
        self.state = (self.state.0 + 1, mix(self.state.1, inputs));
        self.picture = self.state.1;
        self.runs += 1;
    }
    fn fps(&self) -> f64 {
        60.0
    }
    fn save_state(&mut self) -> Option<Vec<u8>> {
        let mut v = self.state.0.to_le_bytes().to_vec();
        v.extend(self.state.1.to_le_bytes());
        Some(v)
    }
    fn load_state(&mut self, s: &[u8]) -> bool {
        self.loads += 1;
        self.state = (
            u64::from_le_bytes(s[..8].try_into().unwrap()),
            u64::from_le_bytes(s[8..].try_into().unwrap()),
        );
        true
    }
    fn loads(&self) -> u64 {
        self.loads
    }
}

/// Player 2's pad changes every 7 frames; the feed knows the next 2 frames for sure and
/// guesses the rest as held, so some guesses are wrong.
#[derive(Default)]
struct Guessing {
    next: u64,
    /// Frames past the next it knows for sure (the rest it guesses held from the last of
    /// them); 2 by default.
    known: Option<u64>,
    /// What it last predicted, and every frame's inputs it handed out.
    predicted: Vec<Inputs>,
    ran: Vec<Inputs>,
}

fn truth(frame: u64) -> Inputs {
    let mut inputs = [Pad::NEUTRAL; MAX_PLAYERS];
    inputs[1] = Pad((frame / 7) as u16 % 5);
    inputs
}

impl Feed for Guessing {
    fn sample(&mut self, _now: Instant, _local: &Inputs) {}
    fn next(&mut self, _now: Instant) -> FeedPoll {
        let inputs = truth(self.next);
        self.next += 1;
        self.ran.push(inputs);
        FeedPoll::Run(inputs)
    }
    fn predict(&mut self, max: u32, out: &mut Vec<Inputs>) {
        for i in 0..u64::from(max) {
            let f = self.next + i;
            let known = self.known.unwrap_or(2);
            out.push(if i < known {
                truth(f)
            } else {
                truth((self.next + known).saturating_sub(1))
            });
        }
        self.predicted = out.clone();
    }
}

#[test]
fn a_wrong_guess_is_run_again_and_the_picture_and_the_agreed_frames_are_always_right() {
    // The machine needed on every 10th frame, and on the frame before each wrong guess
    // (the frame after it is the first whose guess is wrong: it runs on a state saved
    // after a frame that ran on the agreed state).
    wrong_guesses_with_the_machine_needed(10, 0, 2);
    wrong_guesses_with_the_machine_needed(7, 6, 2);
    // Nothing known ahead: the first frame ahead may be wrong right after one ran on the
    // agreed state.
    wrong_guesses_with_the_machine_needed(7, 6, 0);
    wrong_guesses_with_the_machine_needed(3, 1, 0);
}

fn wrong_guesses_with_the_machine_needed(every: u64, offset: u64, known: u64) {
    // Each tick the picture must be what running every frame that counts and then the
    // predicted ones from scratch gives, and the machine's state the one after the newest
    // frame run ahead; every observer sees each frame that counts once, in order, with its
    // inputs, and where it asks for the machine, the machine as it is after that frame.
    // Wrong guesses every 7 frames cost re-runs, yet far fewer frames run than twice each.
    let clock = ManualClock::new();
    let cfg = RunnerConfig {
        run_ahead: 6,
        ..RunnerConfig::default()
    };
    let feed = Guessing {
        known: Some(known),
        ..Guessing::default()
    };
    let mut runner = Runner::with_clock(feed, cfg, clock.clone());
    let seen: Seen = Rc::default();
    runner.observe(Box::new(Checker {
        seen: seen.clone(),
        every,
        offset,
    }));
    let mut m = Hasher::default();
    let period = Duration::from_secs_f64(1.0 / 60.0);
    let mut jump: Option<(usize, u64)> = None;
    for i in 0..600u32 {
        let tick = runner.tick(&mut m, &[Pad::NEUTRAL; MAX_PLAYERS]).unwrap();
        let feed = runner.feed();
        let agreed = match jump {
            Some((n, x)) => feed.ran[n..].iter().fold(x, mix),
            None => feed.ran.iter().fold(0, mix),
        };
        let shown = feed.predicted.iter().fold(agreed, mix);
        let head = (feed.ran.len() + feed.predicted.len()) as u64;
        assert_eq!(
            m.state,
            (head, shown),
            "tick {i}: not on the newest frame ahead"
        );
        if tick.shown {
            assert_eq!(m.picture, shown, "tick {i} shows another picture");
        }
        if i == 299 {
            // A resync loads another state (the host's) on the agreed frames: what was run
            // ahead is stale now.
            let n = feed.ran.len();
            let x = agreed ^ 0xdead;
            let mut state = (n as u64).to_le_bytes().to_vec();
            state.extend(x.to_le_bytes());
            m.load_state(&state);
            jump = Some((n, x));
        }
        clock.advance(period * if i % 50 == 49 { 3 } else { 1 });
    }
    let frames = runner.frame();
    let stats = runner.stats();
    let feed = runner.feed();
    let seen = seen.borrow();
    assert_eq!(seen.len() as u64, frames);
    let mut hash = 0;
    for (f, (frame, inputs, machine)) in seen.iter().enumerate() {
        assert_eq!(*frame, f as u64);
        assert_eq!(*inputs, feed.ran[f]);
        hash = match jump {
            Some((n, x)) if f == n => mix(x, inputs),
            _ => mix(hash, inputs),
        };
        if let Some(state) = machine {
            assert_eq!(
                *state,
                (f as u64 + 1, hash),
                "frame {f}: the machine elsewhere"
            );
        }
    }
    assert!(stats.rollbacks > 50, "{stats:?}");
    assert!(stats.timeline.confirmed > frames / 2, "{stats:?}");
    assert!(stats.timeline.materialized >= frames / every, "{stats:?}");
    // Guessing blind with the machine needed every few frames costs more.
    let most = if known == 0 { 3 } else { 2 };
    assert!(m.runs < frames * most, "{} frames run for {frames}", m.runs);
}

/// Each frame that counts as an observer saw it: its inputs, and the machine's state if it
/// had the machine.
type Seen = Rc<std::cell::RefCell<Vec<(u64, Inputs, Option<(u64, u64)>)>>>;

/// Sees every frame that counts; asks for the machine on every `every`th and keeps its
/// state then.
struct Checker {
    seen: Seen,
    every: u64,
    offset: u64,
}

impl FrameObserver<Hasher> for Checker {
    fn after_frame(
        &mut self,
        frame: u64,
        inputs: &Inputs,
        m: &mut Hasher,
    ) -> Result<(), ObserverError> {
        let machine = (frame % self.every == self.offset).then_some(m.state);
        self.seen.borrow_mut().push((frame, *inputs, machine));
        Ok(())
    }
    fn needs_machine(&mut self, frame: u64) -> bool {
        frame % self.every == self.offset
    }
    fn after_frame_ahead(&mut self, frame: u64, inputs: &Inputs) -> Result<(), ObserverError> {
        self.seen.borrow_mut().push((frame, *inputs, None));
        Ok(())
    }
}

/// Knows every frame's inputs ahead: every guess holds.
#[derive(Default)]
struct Oracle {
    next: u64,
}

impl Feed for Oracle {
    fn sample(&mut self, _now: Instant, _local: &Inputs) {}
    fn next(&mut self, _now: Instant) -> FeedPoll {
        self.next += 1;
        FeedPoll::Run(truth(self.next - 1))
    }
    fn predict(&mut self, max: u32, out: &mut Vec<Inputs>) {
        out.extend((0..u64::from(max)).map(|i| truth(self.next + i)));
    }
}

#[test]
fn a_guess_that_held_costs_no_second_run_and_the_run_ends_on_the_agreed_frame() {
    // 600 ticks, 8 ahead, every guess right: each frame runs once (the 8 ahead at the end
    // once more each at most, to come back), a save each, no load until the end; the last
    // tick leaves the machine on the last frame that counts, picture and all.
    let clock = ManualClock::new();
    let cfg = RunnerConfig {
        run_ahead: 8,
        max_frames: Some(600),
        ..RunnerConfig::default()
    };
    let mut runner = Runner::with_clock(Oracle::default(), cfg, clock.clone());
    let mut m = Hasher::default();
    let period = Duration::from_secs_f64(1.0 / 60.0);
    loop {
        let tick = runner.tick(&mut m, &[Pad::NEUTRAL; MAX_PLAYERS]).unwrap();
        if let Status::Ended(_) = tick.status {
            break;
        }
        clock.advance(period);
    }
    let agreed = (0..600).map(truth).fold(0, |h, i| mix(h, &i));
    assert_eq!(m.state, (600, agreed));
    assert_eq!(m.picture, agreed);
    let s = runner.stats();
    assert!(m.runs <= 600 + 8 + 1, "{} runs for 600 frames", m.runs);
    assert_eq!(s.rollbacks, 0);
    assert!(s.timeline.saves <= 600 + 8 + 1, "{:?}", s.timeline);
    assert!(m.loads <= 2, "{} loads", m.loads);
    assert!(s.timeline.confirmed >= 590, "{:?}", s.timeline);
}

/// Saves until frame `fail_at`, then cannot: speculation must stop and the run go on.
#[derive(Default)]
struct Fragile {
    inner: Hasher,
    fail_at: u64,
}

impl Machine for Fragile {
    fn run_frame(&mut self, inputs: &Inputs) {
        self.inner.run_frame(inputs)
    }
    fn fps(&self) -> f64 {
        60.0
    }
    fn save_state(&mut self) -> Option<Vec<u8>> {
        if self.inner.state.0 >= self.fail_at {
            return None;
        }
        self.inner.save_state()
    }
    fn load_state(&mut self, s: &[u8]) -> bool {
        self.inner.load_state(s)
    }
    fn loads(&self) -> u64 {
        self.inner.loads
    }
}

#[derive(Default)]
struct Stopped(Rc<std::cell::RefCell<Vec<String>>>);

impl Feed for Stopped {
    fn sample(&mut self, _now: Instant, _local: &Inputs) {}
    fn next(&mut self, _now: Instant) -> FeedPoll {
        FeedPoll::Run([Pad::NEUTRAL; MAX_PLAYERS])
    }
    fn predict(&mut self, max: u32, out: &mut Vec<Inputs>) {
        out.extend(std::iter::repeat_n(
            [Pad::NEUTRAL; MAX_PLAYERS],
            max as usize,
        ));
    }
    fn speculation_stopped(&mut self, why: &str) {
        self.0.borrow_mut().push(why.to_string());
    }
}

#[test]
fn a_core_whose_save_fails_mid_game_plays_on_without_running_ahead() {
    let clock = ManualClock::new();
    let cfg = RunnerConfig {
        run_ahead: 4,
        ..RunnerConfig::default()
    };
    let said = Rc::default();
    let mut runner = Runner::with_clock(Stopped(Rc::clone(&said)), cfg, clock.clone());
    let mut m = Fragile {
        fail_at: 100,
        ..Fragile::default()
    };
    let period = Duration::from_secs_f64(1.0 / 60.0);
    for _ in 0..300 {
        runner.tick(&mut m, &[Pad::NEUTRAL; MAX_PLAYERS]).unwrap();
        clock.advance(period);
    }
    let frames = runner.frame();
    // Every frame that counts ran: the machine is on the agreed state, on the last one.
    let agreed = (0..frames).fold(0, |h, _| mix(h, &[Pad::NEUTRAL; MAX_PLAYERS]));
    assert_eq!(m.inner.state, (frames, agreed));
    assert!(frames > 250);
    let said = said.borrow();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains("could not save its state"), "{said:?}");
    let s = runner.stats_json();
    assert!(s["run_ahead"]["stopped"].is_string(), "{s:?}");
}

/// A core that takes 5 ms of (simulated) time a frame.
struct Slow {
    tape: Tape,
    clock: ManualClock,
}

impl Machine for Slow {
    fn run_frame(&mut self, inputs: &Inputs) {
        self.clock.advance(Duration::from_millis(5));
        self.tape.run_frame(inputs);
    }
    fn fps(&self) -> f64 {
        60.0
    }
    fn save_state(&mut self) -> Option<Vec<u8>> {
        self.tape.save_state()
    }
    fn load_state(&mut self, state: &[u8]) -> bool {
        self.tape.load_state(state)
    }
}

#[test]
fn a_core_too_slow_for_the_depth_runs_fewer_frames_ahead() {
    // 5 ms a frame: a frame plus one ahead fit 70% of 16.7 ms, six ahead do not.
    let clock = ManualClock::new();
    let cfg = RunnerConfig {
        run_ahead: 6,
        ..RunnerConfig::default()
    };
    let mut runner = Runner::with_clock(Held, cfg, clock.clone());
    let mut m = Slow {
        tape: Tape::default(),
        clock: clock.clone(),
    };
    for _ in 0..300 {
        runner.tick(&mut m, &[Pad::NEUTRAL; MAX_PLAYERS]).unwrap();
        clock.advance(Duration::from_millis(2));
    }
    let s = runner.stats_json();
    assert_eq!(s["speculate_depth"], 1, "{s:?}");
    assert_eq!(s["run_ahead"]["depth"], 6);
}

/// A machine whose picture comes from a cache its state does not hold (as Genesis Plus GX's
/// sprite cache): the cache follows every frame run, and a load rebuilds it from the state,
/// so a machine that loaded draws differently from one that never did.
#[derive(Default)]
struct Cached {
    inner: Hasher,
    cache: u64,
}

impl Machine for Cached {
    fn run_frame(&mut self, inputs: &Inputs) {
        self.inner.run_frame(inputs);
        self.cache = mix(self.cache.rotate_left(7), inputs);
    }
    fn fps(&self) -> f64 {
        60.0
    }
    fn save_state(&mut self) -> Option<Vec<u8>> {
        self.inner.save_state()
    }
    fn load_state(&mut self, s: &[u8]) -> bool {
        let ok = self.inner.load_state(s);
        self.cache = self.inner.state.1;
        ok
    }
    fn loads(&self) -> u64 {
        self.inner.loads
    }
}

/// Frames and the pictures (state and cache) after them.
type Drawn = Rc<std::cell::RefCell<Vec<(u64, (u64, u64), u64)>>>;

/// Keeps the picture after every `every`th frame, where it takes a checksum.
struct Pictures {
    every: u64,
    seen: Drawn,
}

impl FrameObserver<Cached> for Pictures {
    fn after_frame(&mut self, frame: u64, _: &Inputs, m: &mut Cached) -> Result<(), ObserverError> {
        if self.takes_checksum(frame) {
            self.seen.borrow_mut().push((frame, m.inner.state, m.cache));
        }
        Ok(())
    }
    fn needs_machine(&mut self, frame: u64) -> bool {
        self.takes_checksum(frame)
    }
    fn takes_checksum(&mut self, frame: u64) -> bool {
        (frame + 1).is_multiple_of(self.every)
    }
}

#[test]
fn a_checksum_is_the_same_whether_the_machine_rolled_back_or_never_loaded() {
    // A peer that rolls back and a peer (or a replay) that never loads take every checksum
    // of a machine whose picture a load changes, and agree on every one.
    let run = |run_ahead: u32| {
        let clock = ManualClock::new();
        let cfg = RunnerConfig {
            run_ahead,
            max_frames: Some(400),
            ..RunnerConfig::default()
        };
        let mut runner = Runner::with_clock(Guessing::default(), cfg, clock.clone());
        let seen = Rc::default();
        runner.observe(Box::new(Pictures {
            every: 10,
            seen: Rc::clone(&seen),
        }));
        let mut m = Cached::default();
        for _ in 0..1000 {
            let tick = runner.tick(&mut m, &[Pad::NEUTRAL; MAX_PLAYERS]).unwrap();
            if matches!(tick.status, Status::Ended(_)) {
                break;
            }
            clock.advance(Duration::from_secs_f64(1.0 / 60.0));
        }
        let rollbacks = runner.stats().rollbacks;
        let seen = seen.borrow().clone();
        (seen, rollbacks, m.inner.state, m.cache)
    };
    let (plain, none, end, cache) = run(0);
    let (rolled, rollbacks, rolled_end, rolled_cache) = run(6);
    assert_eq!(none, 0);
    assert!(rollbacks > 20, "{rollbacks} rollbacks");
    assert_eq!(plain.len(), 40);
    assert_eq!(plain, rolled);
    // The last frame is one that counts too, picture and all.
    assert_eq!((end, cache), (rolled_end, rolled_cache));
}
