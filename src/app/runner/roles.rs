//! What the [`Runner`](super::Runner) deals with, as traits: the [`Machine`] it drives, the
//! [`Feed`] its inputs come from, the [`Clock`] it reads and the [`FrameObserver`]s it tells
//! after each frame. Traits and their defaults only: it must not import the runner, a core,
//! a frontend or netplay.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::input::Inputs;

/// Source of time. Only the runner reads it; everything below gets `now` passed in.
pub trait Clock {
    fn now(&mut self) -> Instant;
}

/// The real clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&mut self) -> Instant {
        Instant::now()
    }
}

/// What the runner drives: anything that emulates one frame per call.
pub trait Machine {
    fn run_frame(&mut self, inputs: &Inputs);
    /// Frames per second the machine wants to run at (may change between frames).
    fn fps(&self) -> f64;
    /// The machine asked to stop (libretro SHUTDOWN).
    fn shutdown_requested(&self) -> bool {
        false
    }
    /// The whole machine's state, for running ahead and coming back (`None`: it cannot).
    fn save_state(&mut self) -> Option<Vec<u8>> {
        None
    }
    /// `save_state` into `buf` (its allocation reused); false if it cannot.
    fn save_state_into(&mut self, buf: &mut Vec<u8>) -> bool {
        match self.save_state() {
            Some(state) => {
                *buf = state;
                true
            }
            None => false,
        }
    }
    /// Restores a state from `save_state`; false if the machine refused it.
    fn load_state(&mut self, _state: &[u8]) -> bool {
        false
    }
    /// States loaded so far, by anyone: tells the runner when its states ahead are stale.
    fn loads(&self) -> u64 {
        0
    }
    /// Drops the sound of the frames run since the last frontend drain: frames whose sound
    /// was already played, or will never be shown.
    fn discard_audio(&mut self) {}
    /// A checksum of the machine's memory, the game's state without its picture: what a
    /// state saved and loaded back must restore exactly (`None`: the machine has none).
    fn memory_checksum(&mut self) -> Option<u64> {
        None
    }
}

/// What a feed says when asked for the next frame's inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeedPoll {
    /// Run the next frame with these inputs.
    Run(Inputs),
    /// Inputs are not there yet (a stall): ask again at the given time, or next display slot.
    Wait(Option<Instant>),
    /// No more frames (end of a replay, session closed).
    End,
}

/// Where each frame's inputs come from.
pub trait Feed {
    /// The local players' pads at `now`; called on every tick, before any `next`.
    fn sample(&mut self, now: Instant, local: &Inputs);
    /// The inputs of the next frame to emulate.
    fn next(&mut self, now: Instant) -> FeedPoll;
    /// Speed the feed wants relative to the machine's fps (netplay drift correction);
    /// the runner clamps it to 0.5..=2.
    fn pace(&self) -> Option<f64> {
        None
    }
    /// Time the runner's clock is behind the feed's, learnt after frames began (netplay: a
    /// joiner's frame 0 arrived a one-way trip after the host ran it). The runner moves its
    /// deadlines back by it and catches up, `catch_up_cap` frames per displayed frame (past
    /// `max_lag` the backlog is dropped as usual). Asked every tick once frames ran.
    fn take_behind(&mut self) -> Option<Duration> {
        None
    }
    /// Frames the feed holds beyond what its clock asks for, to be run sooner (a netplay
    /// spectator's buffer, a late joiner catching up): a tick that runs frames runs up to
    /// this many more, within `catch_up_cap`, without moving the frame clock for them.
    fn backlog(&mut self) -> u32 {
        0
    }
    /// The feed's frames come at their own pace (a netplay spectator's): after a wait for
    /// one, the clock starts again from the frame that came instead of catching up the wait,
    /// which would empty the feed's buffer again at once. Its backlog catches it up instead.
    fn paced_by_arrival(&self) -> bool {
        false
    }
    /// Longest the run loop may wait before ticking again, even with no frame due: a
    /// netplay feed must answer its peers' datagrams promptly, not once per frame.
    fn max_wait(&self) -> Option<Duration> {
        None
    }
    /// Waits up to `timeout` for the feed's own events (netplay: a datagram arriving, or one
    /// the network conditioner holds falling due), returning as soon as one happens; false
    /// if the feed has nothing to wait on (the frontend waits instead). Sleeping instead
    /// would answer a peer's datagram up to `max_wait` late, on every hop of a round trip.
    fn wait_io(&mut self, _timeout: Duration) -> bool {
        false
    }
    /// Inputs to run ahead with, after the frames run so far: up to `max` frames, one
    /// entry per frame, pushed to `out` (empty: nothing to show ahead). The frames are
    /// shown, then taken back; the feed's own frames stay the only ones that count.
    fn predict(&mut self, _max: u32, _out: &mut Vec<Inputs>) {}
    /// The picture of frame `head` (the runner's count: 0 is the first frame it ran) was
    /// shown at `now`, run `depth` frames ahead of the last frame that counts.
    fn displayed(&mut self, _now: Instant, _head: u64, _depth: u32) {}
    /// A guess run ahead was wrong: `frames` frames ran again (a rollback).
    fn rolled_back(&mut self, _frames: u32) {}
    /// Running ahead stopped for the rest of the run, and why (said once, to show it).
    fn speculation_stopped(&mut self, _why: &str) {}
    /// The game stands still for everyone here (a netplay pause): the runner runs nothing,
    /// counts no stall, and goes on from the moment it ends, with nothing to catch up.
    fn paused(&self) -> bool {
        false
    }
    /// A pause is in force or asked for (the feed's, as `paused`; it may not have reached
    /// the frame it stops at yet).
    fn pause_in_force(&self) -> bool {
        false
    }
    /// The user asks to pause (`Some(true)`), resume, or toggle (`None`). True if the feed
    /// handles it (netplay: for everyone); false to pause this runner alone.
    fn request_pause(&mut self, _pause: Option<bool>) -> bool {
        false
    }
    /// A short status line for the window (netplay: RTT, keyframe interval, lead, ...).
    fn status_line(&self) -> Option<String> {
        None
    }
    /// Numbers for `--stats-json` (under `"feed"`).
    fn stats(&self) -> Map<String, Value> {
        Map::new()
    }
}

pub type ObserverError = Box<dyn std::error::Error + Send + Sync>;

/// Called after every frame that counts with its number (0 for the first), its inputs and
/// the machine. Recording, desync checksums and screenshot hooks plug in here.
///
/// Running ahead (speculation, run-ahead), most frames that count ran earlier, ahead, with
/// the same inputs, and the machine is past them: such a frame is not run again unless an
/// observer says it [`needs_machine`](Self::needs_machine) there, and otherwise reaches
/// every observer through [`after_frame_ahead`](Self::after_frame_ahead).
pub trait FrameObserver<M> {
    fn after_frame(
        &mut self,
        frame: u64,
        inputs: &Inputs,
        machine: &mut M,
    ) -> Result<(), ObserverError>;

    /// Whether [`after_frame`](Self::after_frame) for `frame` must see the machine as it is
    /// right after that frame (default: always). Say no where you can: the frame is then
    /// not run a second time.
    fn needs_machine(&mut self, _frame: u64) -> bool {
        true
    }

    /// Whether [`after_frame`](Self::after_frame) for `frame` takes the machine's checksum
    /// (default: no). Such a frame runs from its own state freshly saved and loaded, in
    /// every mode, because a load is not exact for everything a core draws from (after any
    /// load, Genesis Plus GX draws some frames of Airstriker differently, its memory equal):
    /// a peer that rolled back and one that never loaded would otherwise checksum different
    /// pictures of the same frame.
    fn takes_checksum(&mut self, _frame: u64) -> bool {
        false
    }

    /// `frame` counts with `inputs`; it ran earlier, ahead, and the machine is elsewhere.
    /// Only called when [`needs_machine`](Self::needs_machine) said no.
    fn after_frame_ahead(&mut self, _frame: u64, _inputs: &Inputs) -> Result<(), ObserverError> {
        Ok(())
    }

    /// Whether [`idle`](Self::idle) with `next` needs the machine on the frames that count
    /// (default: always); a stall when no observer does leaves the machine ahead.
    fn idle_needs_machine(&mut self, _next: u64) -> bool {
        true
    }

    /// Called when the feed has no frame to run (a stall), with the number of the next
    /// frame: work that must not wait for one (netplay: a spectator's jump to a fresh state).
    fn idle(&mut self, _next: u64, _machine: &mut M) -> Result<(), ObserverError> {
        Ok(())
    }
}

impl<M, F> FrameObserver<M> for F
where
    F: FnMut(u64, &Inputs, &mut M) -> Result<(), ObserverError>,
{
    fn after_frame(
        &mut self,
        frame: u64,
        inputs: &Inputs,
        machine: &mut M,
    ) -> Result<(), ObserverError> {
        self(frame, inputs, machine)
    }
}
