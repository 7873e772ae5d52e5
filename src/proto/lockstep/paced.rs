//! A lockstep client's frames scheduled as `app::runner` schedules them under `netplay`
//! (tests and benchmarks): the one copy of "a player paced like the runner" that the lockstep
//! simulation (`sim`) and the session and serve harnesses (`session::testkit`) share.
//!
//! Per display slot: frame deadlines on the player's own clock, scaled by
//! [`Client::pace`] from frame 0 on and moved back once by [`Client::take_start_delay`];
//! at most [`CATCH_UP_CAP`] frames a slot, a late starter's backlog on top, and no backlog
//! ever dropped (netplay runs with an unbounded `max_lag`). A pad is pushed before every
//! frame asked for, during a stall too, so that the client samples on the clock.

use std::time::Instant;

use crate::input::{Inputs, Pad};

use super::{Client, Frame};

/// Most frames one display slot runs.
pub const CATCH_UP_CAP: u32 = 4;

/// Where a player's frame clock stands.
#[derive(Debug, Default)]
pub struct Paced {
    /// The next frame's deadline, in seconds on the player's clock; `None` until frame 0
    /// ran (the clock starts with it, not while waiting for it).
    next_frame: Option<f64>,
    /// Frames run since the start (or the last [`Paced::restart`]).
    frames: u64,
}

/// What one display slot did.
#[derive(Clone, Copy, Debug)]
pub struct DisplaySlot {
    /// Frames it ran.
    pub ran: u32,
    /// Frames were due but the client had none (waiting for frame 0 is no stall).
    pub stalled: bool,
}

impl Paced {
    /// The stream starts again (a spectator's restart): as if no frame had run yet.
    pub fn restart(&mut self) {
        self.frames = 0;
    }

    /// One display slot at `local` seconds on the player's clock, whose frames last
    /// `period` seconds at pace 1: runs the frames due, at most `max` of them. `pace` is the
    /// pace to run at (1.0 ignores the client's), `pad(fresh)` the pad to push before a frame
    /// (`fresh`: the client asks for a new sample), `ran(client, frame, inputs)` takes each
    /// frame run.
    #[allow(clippy::too_many_arguments)]
    pub fn slot(
        &mut self,
        client: &mut Client,
        now: Instant,
        local: f64,
        period: f64,
        pace: f64,
        max: u32,
        mut pad: impl FnMut(bool) -> Pad,
        mut ran: impl FnMut(&mut Client, Frame, Inputs),
    ) -> DisplaySlot {
        let period = period / pace;
        let mut next_frame = *self.next_frame.get_or_insert(local);
        if self.frames > 0 {
            if let Some(behind) = client.take_start_delay() {
                next_frame -= behind.as_secs_f64();
            }
        }
        let clock_due = if next_frame > local + 1e-9 {
            0
        } else {
            (((local - next_frame) / period) as u32 + 1).min(CATCH_UP_CAP)
        };
        // As `app::runner`: a late starter's backlog runs on top, off the clock.
        let due = if clock_due > 0 {
            clock_due.max((client.backlog() + 1).min(CATCH_UP_CAP))
        } else {
            0
        };
        let mut slot = DisplaySlot {
            ran: 0,
            stalled: false,
        };
        for _ in 0..due.min(max) {
            let fresh = client.wants_input();
            client.push_local_input(now, pad(fresh));
            match client.poll_frame() {
                Some((f, inputs)) => {
                    next_frame += period;
                    slot.ran += 1;
                    self.frames += 1;
                    ran(client, f, inputs);
                }
                None => {
                    slot.stalled = self.frames > 0;
                    break;
                }
            }
        }
        if slot.ran > clock_due {
            next_frame -= period * f64::from(slot.ran - clock_due);
        }
        // A client paced by the frames' arrival starts its clock again after waiting for one.
        let restart = slot.ran == 0 && slot.stalled && client.paced_by_arrival();
        self.next_frame = (self.frames > 0 && !restart).then_some(next_frame);
        slot
    }
}
