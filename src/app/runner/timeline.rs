//! Speculation's one timeline. The machine runs ahead of the frames that count, on the
//! feed's guesses, and saves its state after each frame it runs ahead. When a frame comes to
//! count with the inputs it was run ahead with, the state after it *is* the agreed one (a
//! core is deterministic): it is taken as it is and the frame does not run again. A steady
//! frame costs one run and one save. Only a wrong guess costs more: the state before it is
//! loaded and the frames up to the present run again, silently, showing only the last.
//!
//! [`Timeline`] keeps the frames run ahead (their inputs and states, in reused buffers: see
//! `states`), the state after the last frame that counts (the *base*, where a rollback
//! starts) and the one before it with that frame's inputs (to draw the last agreed picture
//! again when the run ends), where the machine is and whose picture it shows, and what a
//! run, a save and a load cost. The runner decides what runs when and calls its observers;
//! this file keeps the machine and the states straight. It must not import the runner's
//! pacing, a core, a frontend or netplay.
//!
//! Invariant: the machine is on the agreed state (`at == agreed`) or the base holds it.

use std::time::Duration;

use super::roles::{Clock, Machine};
use super::states::StateRing;
use crate::input::{Inputs, MAX_PLAYERS};

/// Why speculation cannot go on with this core; the game goes on without it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpeculationFailure {
    #[error("the core could not save its state after frame {0}")]
    Save(u64),
    #[error("the core refused its own state of frame {0}")]
    Load(u64),
    #[error(
        "frame {frame} run again from a saved state gave the memory checksum {again:016x}, \
         its first run {first:016x}: the core's savestates do not round-trip"
    )]
    Diverged { frame: u64, first: u64, again: u64 },
}

/// What one call of [`Timeline::speculate`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Speculated {
    /// The frame the machine shows now (the newest run ahead), or `None` with nothing ahead.
    pub head: Option<u64>,
    /// Frames run (new ones and those run again).
    pub ran: u32,
    /// A guess that was wrong: the first frame whose inputs differ, and how many frames run
    /// ahead it made stale (those run again).
    pub wrong: Option<(u64, u32)>,
}

/// Smoothed costs of the machine's work (1/8 of each new sample).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Costs {
    pub run: Option<Duration>,
    pub save: Option<Duration>,
    pub load: Option<Duration>,
}

impl Costs {
    fn smooth(old: &mut Option<Duration>, new: Duration) {
        *old = Some(match *old {
            Some(old) => old.mul_f64(0.875) + new.mul_f64(0.125),
            None => new,
        });
    }

    /// Frames a rollback can run again within `budget`: a load, then a run and a save for
    /// each frame (the newest frame's own run and save included). `None` before measuring.
    pub fn affordable(&self, budget: Duration) -> Option<u32> {
        // A steady timeline loads nothing: until a rollback measures it, a load is taken to
        // cost what a save does.
        let (run, save) = (self.run?, self.save?);
        let load = self.load.unwrap_or(save);
        let per_frame = (run + save).as_secs_f64().max(1e-7);
        let frames = budget.saturating_sub(load).as_secs_f64() / per_frame;
        Some((frames as u32).saturating_sub(1))
    }
}

/// Work done on the timeline, for `--stats-json`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimelineCounts {
    /// Frames that counted without running again (their guess held).
    pub confirmed: u64,
    /// Frames run ahead for the first time, and run again after a wrong guess.
    pub ahead: u64,
    pub rerun: u64,
    /// Frames that counted but ran again on the agreed state because an observer needed
    /// the machine there (a checksum, a state for a joiner), and of those, how many were
    /// compared with their first run.
    pub materialized: u64,
    pub verified: u64,
    pub saves: u64,
    pub loads: u64,
}

/// See the module doc.
#[derive(Debug)]
pub struct Timeline {
    ring: StateRing,
    base: Vec<u8>,
    base_ok: bool,
    prev: Vec<u8>,
    prev_inputs: Inputs,
    prev_ok: bool,
    /// The machine's next frame (its state is the one after frame `at - 1`), and the frame
    /// whose picture it holds.
    at: u64,
    picture: Option<u64>,
    /// `Machine::loads` when this last touched the machine: more means somebody else loaded
    /// a state, and everything kept is stale.
    loads: Option<u64>,
    /// The newest frame whose sound was played: frames run again are silent.
    heard: Option<u64>,
    /// A frame that counts taken off the ring to run on the agreed state, kept until its
    /// run is compared with this first one.
    rerun: Option<(u64, Vec<u8>)>,
    /// Pictures shown so far, up to which of them corrections were counted, and how many
    /// were corrected.
    pictures: u64,
    corrected_upto: u64,
    corrected: u64,
    /// When each frame ahead was first shown (`pictures` then), by ring index.
    born: std::collections::VecDeque<u64>,
    /// Reused by [`reload`](Self::reload).
    fresh: Vec<u8>,
    pub costs: Costs,
    pub counts: TimelineCounts,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline::new()
    }
}

impl Timeline {
    pub fn new() -> Timeline {
        Timeline {
            ring: StateRing::default(),
            base: Vec::new(),
            base_ok: false,
            prev: Vec::new(),
            prev_inputs: [crate::input::Pad::NEUTRAL; MAX_PLAYERS],
            prev_ok: false,
            at: 0,
            picture: None,
            loads: None,
            heard: None,
            rerun: None,
            pictures: 0,
            corrected_upto: 0,
            corrected: 0,
            born: std::collections::VecDeque::new(),
            fresh: Vec::new(),
            costs: Costs::default(),
            counts: TimelineCounts::default(),
        }
    }

    /// The machine is on the agreed state: `agreed` is the next frame that counts.
    pub fn is_live(&self, agreed: u64) -> bool {
        self.at == agreed
    }

    /// Buffers the state ring made so far.
    pub fn buffers_made(&self) -> usize {
        self.ring.made()
    }

    /// Sees whether somebody else loaded a state into the machine since this last did
    /// (a resync, a jump): the machine is then on the agreed state `agreed`, and what ran
    /// ahead is stale.
    pub fn check_loads<M: Machine>(&mut self, machine: &M, agreed: u64) {
        let loads = machine.loads();
        if self.loads.is_some_and(|l| l != loads) {
            self.forget(agreed);
        }
        self.loads = Some(loads);
    }

    /// Forgets every state kept: the machine is on frame `agreed`'s start.
    pub fn forget(&mut self, agreed: u64) {
        self.ring.clear();
        self.born.clear();
        if let Some((_, buf)) = self.rerun.take() {
            self.ring.recycle(buf);
        }
        self.base_ok = false;
        self.prev_ok = false;
        self.at = agreed;
    }

    /// Frame `agreed` counts with `inputs`, and was run ahead with the same: the state after
    /// it becomes the base, and it does not run again. False when it was not run ahead, or
    /// with other inputs.
    pub fn confirm(&mut self, inputs: &Inputs) -> bool {
        if self.ring.front().is_none_or(|a| a.inputs != *inputs) {
            return false;
        }
        let Some(first) = self.ring.pop_front() else {
            return false;
        };
        self.born.pop_front();
        let old_base = std::mem::replace(&mut self.base, first.state);
        let old_prev = std::mem::replace(&mut self.prev, old_base);
        self.ring.recycle(old_prev);
        self.prev_ok = self.base_ok;
        self.prev_inputs = first.inputs;
        self.base_ok = true;
        self.counts.confirmed += 1;
        true
    }

    /// Frame `frame` (the next that counts) is about to run on the machine with `inputs`:
    /// puts the machine on the agreed state, and drops what ran ahead from `frame` on if it
    /// ran with other inputs. Returns the wrong guess (its frame and the frames it made
    /// stale), if there was one.
    pub fn before_live<M: Machine, C: Clock>(
        &mut self,
        machine: &mut M,
        clock: &mut C,
        frame: u64,
        inputs: &Inputs,
    ) -> Result<Option<(u64, u32)>, SpeculationFailure> {
        let mut wrong = None;
        match self.ring.front() {
            Some(a) if a.inputs == *inputs => {
                if let Some(first) = self.ring.pop_front() {
                    self.born.pop_front();
                    if let Some((_, old)) = self.rerun.replace((frame, first.state)) {
                        self.ring.recycle(old);
                    }
                }
            }
            Some(_) => {
                wrong = Some((frame, self.ring.len() as u32));
                self.count_corrected(0);
                self.ring.clear();
                self.born.clear();
            }
            None => {}
        }
        if self.at != frame {
            if !self.base_ok {
                return Err(SpeculationFailure::Load(frame.saturating_sub(1)));
            }
            let base = std::mem::take(&mut self.base);
            let loaded = self.load(machine, clock, &base);
            self.base = base;
            if !loaded {
                return Err(SpeculationFailure::Load(frame.saturating_sub(1)));
            }
            self.at = frame;
        }
        // The state before this frame becomes the one to draw its picture again from.
        if self.base_ok {
            std::mem::swap(&mut self.prev, &mut self.base);
            self.prev_ok = true;
            self.prev_inputs = *inputs;
        } else {
            self.prev_ok = false;
        }
        self.base_ok = false;
        Ok(wrong)
    }

    /// Frame `frame` ran on the machine (after [`before_live`](Self::before_live)); its
    /// sound was played unless it was heard already (`false`: drop it).
    pub fn ran_live(&mut self, frame: u64) -> bool {
        self.at = frame + 1;
        self.picture = Some(frame);
        let heard = self.heard.is_some_and(|h| frame <= h);
        if !heard {
            self.heard = Some(frame);
        }
        !heard
    }

    /// After the observers of a frame that ran on the agreed state (`agreed` is the next
    /// one now): what was kept is stale if one of them loaded a state; a first run of the
    /// frame ahead with the same inputs is compared with this run, memory for memory (a
    /// core whose states do not round-trip is found here, not by the peers).
    pub fn after_live<M: Machine, C: Clock>(
        &mut self,
        machine: &mut M,
        clock: &mut C,
        agreed: u64,
    ) -> Result<(), SpeculationFailure> {
        self.check_loads(machine, agreed);
        let Some((frame, first)) = self.rerun.take() else {
            return Ok(());
        };
        let result = self.compare(machine, clock, frame, &first);
        self.ring.recycle(first);
        result
    }

    fn compare<M: Machine, C: Clock>(
        &mut self,
        machine: &mut M,
        clock: &mut C,
        frame: u64,
        first: &[u8],
    ) -> Result<(), SpeculationFailure> {
        let Some(live) = machine.memory_checksum() else {
            return Ok(());
        };
        if !self.load(machine, clock, first) {
            return Err(SpeculationFailure::Load(frame));
        }
        let again = machine.memory_checksum().unwrap_or(live);
        self.counts.verified += 1;
        if again != live {
            return Err(SpeculationFailure::Diverged {
                frame,
                first: again,
                again: live,
            });
        }
        Ok(())
    }

    /// Runs ahead on `predicted`, the inputs of the frames from `agreed` on: keeps the
    /// frames run ahead whose inputs still hold, runs the others from the last kept one,
    /// saving after each, and leaves the machine on the newest with its picture. Nothing
    /// predicted puts the machine back on the agreed state.
    pub fn speculate<M: Machine, C: Clock>(
        &mut self,
        machine: &mut M,
        clock: &mut C,
        agreed: u64,
        predicted: &[Inputs],
    ) -> Result<Speculated, SpeculationFailure> {
        let keep = self
            .ring
            .iter()
            .zip(predicted)
            .take_while(|(a, p)| a.inputs == **p)
            .count();
        let mut out = Speculated::default();
        if keep < self.ring.len() && keep < predicted.len() {
            out.wrong = Some((agreed + keep as u64, (self.ring.len() - keep) as u32));
            self.count_corrected(keep);
        }
        self.ring.truncate(keep);
        self.born.truncate(keep);
        if predicted.is_empty() {
            self.settle(machine, clock, agreed, false)?;
            return Ok(out);
        }
        let head = agreed + predicted.len() as u64 - 1;
        out.head = Some(head);
        if !self.base_ok {
            // On the agreed state (a frame that counts just ran on it): save it to come
            // back to, before the machine moves ahead.
            if self.at != agreed {
                return Err(SpeculationFailure::Load(agreed.saturating_sub(1)));
            }
            let mut base = std::mem::take(&mut self.base);
            let saved = self.save(machine, clock, &mut base);
            self.base = base;
            if !saved {
                return Err(SpeculationFailure::Save(agreed.saturating_sub(1)));
            }
            self.base_ok = true;
        }
        if predicted.len() == keep {
            self.show(machine, clock, agreed, head)?;
            return Ok(out);
        }
        let from = agreed + keep as u64;
        if self.at != from {
            let loaded = match keep {
                0 if self.base_ok => {
                    let base = std::mem::take(&mut self.base);
                    let ok = self.load(machine, clock, &base);
                    self.base = base;
                    ok
                }
                0 => false,
                k => {
                    let state = std::mem::take(self.ring_state_mut(k - 1));
                    let ok = self.load(machine, clock, &state);
                    *self.ring_state_mut(k - 1) = state;
                    ok
                }
            };
            if !loaded {
                return Err(SpeculationFailure::Load(from.saturating_sub(1)));
            }
            self.at = from;
        }
        for (i, inputs) in predicted.iter().enumerate().skip(keep) {
            let frame = agreed + i as u64;
            self.run(machine, clock, inputs, frame);
            if frame < self.first_unheard() {
                machine.discard_audio();
                self.counts.rerun += 1;
            } else {
                self.heard = Some(frame);
                self.counts.ahead += 1;
            }
            let mut buf = self.ring.buffer();
            if !self.save(machine, clock, &mut buf) {
                self.ring.recycle(buf);
                // Nothing beyond the last state saved can be trusted to come back to.
                self.at = frame + 1;
                return Err(SpeculationFailure::Save(frame));
            }
            self.ring.push(*inputs, buf);
            self.born.push_back(self.pictures);
            out.ran += 1;
        }
        Ok(out)
    }

    /// A new picture was shown (speculative or not).
    pub fn shown(&mut self) {
        self.pictures += 1;
    }

    /// Pictures shown that a later frame's inputs proved wrong, so far.
    pub fn corrected(&self) -> u64 {
        self.corrected
    }

    /// Puts the machine on the agreed state (the start of frame `agreed`), drawing the last
    /// agreed frame's picture again if `redraw` and it shows another.
    pub fn settle<M: Machine, C: Clock>(
        &mut self,
        machine: &mut M,
        clock: &mut C,
        agreed: u64,
        redraw: bool,
    ) -> Result<(), SpeculationFailure> {
        let last = agreed.checked_sub(1);
        if redraw && self.picture != last && self.prev_ok {
            if let Some(last) = last {
                let prev = std::mem::take(&mut self.prev);
                let loaded = self.load(machine, clock, &prev);
                self.prev = prev;
                if !loaded {
                    return Err(SpeculationFailure::Load(last.saturating_sub(1)));
                }
                let inputs = self.prev_inputs;
                self.run(machine, clock, &inputs, last);
                machine.discard_audio();
                return Ok(());
            }
        }
        if self.at != agreed {
            if !self.base_ok {
                return Err(SpeculationFailure::Load(agreed.saturating_sub(1)));
            }
            let base = std::mem::take(&mut self.base);
            let loaded = self.load(machine, clock, &base);
            self.base = base;
            if !loaded {
                return Err(SpeculationFailure::Load(agreed.saturating_sub(1)));
            }
            self.at = agreed;
        }
        Ok(())
    }

    /// Puts the machine on `head`, the newest frame kept ahead, with its picture.
    fn show<M: Machine, C: Clock>(
        &mut self,
        machine: &mut M,
        clock: &mut C,
        agreed: u64,
        head: u64,
    ) -> Result<(), SpeculationFailure> {
        let n = self.ring.len();
        if self.picture != Some(head) {
            // Its picture is gone (the machine ran an agreed frame since): run it again
            // from the state before it.
            if self.at != head {
                let loaded = if n >= 2 {
                    let state = std::mem::take(self.ring_state_mut(n - 2));
                    let ok = self.load(machine, clock, &state);
                    *self.ring_state_mut(n - 2) = state;
                    ok
                } else {
                    let base = std::mem::take(&mut self.base);
                    let ok = self.base_ok && self.load(machine, clock, &base);
                    self.base = base;
                    ok
                };
                if !loaded {
                    return Err(SpeculationFailure::Load(head.saturating_sub(1)));
                }
            }
            let inputs = self
                .ring
                .get(n - 1)
                .map(|a| a.inputs)
                .unwrap_or(self.prev_inputs);
            self.run(machine, clock, &inputs, head);
            machine.discard_audio();
            self.counts.rerun += 1;
        } else if self.at != head + 1 {
            let state = std::mem::take(self.ring_state_mut(n - 1));
            let ok = self.load(machine, clock, &state);
            *self.ring_state_mut(n - 1) = state;
            if !ok {
                return Err(SpeculationFailure::Load(head));
            }
            self.at = head + 1;
        }
        debug_assert!(head + 1 == agreed + n as u64);
        Ok(())
    }

    fn ring_state_mut(&mut self, i: usize) -> &mut Vec<u8> {
        self.ring.state_mut(i)
    }

    /// The first frame whose sound was not played yet.
    fn first_unheard(&self) -> u64 {
        self.heard.map_or(0, |h| h + 1)
    }

    /// A wrong guess at ring index `from`: every picture shown since that frame was run
    /// ahead was a corrected one.
    fn count_corrected(&mut self, from: usize) {
        let Some(&born) = self.born.get(from) else {
            return;
        };
        let since = born.max(self.corrected_upto);
        self.corrected += self.pictures - since;
        self.corrected_upto = self.pictures;
    }

    fn run<M: Machine, C: Clock>(
        &mut self,
        machine: &mut M,
        clock: &mut C,
        inputs: &Inputs,
        frame: u64,
    ) {
        let t = clock.now();
        machine.run_frame(inputs);
        Costs::smooth(
            &mut self.costs.run,
            clock.now().saturating_duration_since(t),
        );
        self.at = frame + 1;
        self.picture = Some(frame);
    }

    /// Saves the machine's state and loads it back, so that the next frame runs from a loaded
    /// state as it does on a peer that rolled back (see `FrameObserver::takes_checksum`).
    /// False when the core cannot save or load its state; the frame then runs as it is.
    pub fn reload<M: Machine>(&mut self, machine: &mut M) -> bool {
        let mut buf = std::mem::take(&mut self.fresh);
        let ok = machine.save_state_into(&mut buf) && machine.load_state(&buf);
        self.fresh = buf;
        self.loads = Some(machine.loads());
        ok
    }

    /// Times a run of the machine that the runner did itself (a frame that counts).
    pub fn timed_run(&mut self, took: Duration) {
        Costs::smooth(&mut self.costs.run, took);
    }

    fn save<M: Machine, C: Clock>(
        &mut self,
        machine: &mut M,
        clock: &mut C,
        buf: &mut Vec<u8>,
    ) -> bool {
        let t = clock.now();
        let ok = machine.save_state_into(buf);
        Costs::smooth(
            &mut self.costs.save,
            clock.now().saturating_duration_since(t),
        );
        self.counts.saves += 1;
        ok
    }

    fn load<M: Machine, C: Clock>(&mut self, machine: &mut M, clock: &mut C, state: &[u8]) -> bool {
        let t = clock.now();
        let ok = machine.load_state(state);
        Costs::smooth(
            &mut self.costs.load,
            clock.now().saturating_duration_since(t),
        );
        self.counts.loads += 1;
        self.loads = Some(machine.loads());
        ok
    }
}
