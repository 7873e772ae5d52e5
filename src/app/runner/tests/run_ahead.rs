//! Run-ahead on simulated time: each frame's sound plays once, wrong guesses run again
//! and the picture and agreed frames stay right, a held guess costs no second run, and a
//! core that cannot save or is too slow plays on with less or no running ahead.

use super::*;

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
