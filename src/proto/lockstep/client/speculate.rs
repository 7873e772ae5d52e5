//! What speculation needs of the client: this player's newest samples, whatever the server
//! acknowledged, to place on frames not received yet (sample `i` goes on frame `i + lead`);
//! the inputs of the last frame handed out (the others' are repeated ahead); and which of
//! the samples were seen on screen, after how long. Imports nothing of the client.

use std::collections::VecDeque;
use std::ops::RangeInclusive;
use std::time::Instant;

use crate::input::{Inputs, Pad, MAX_PLAYERS};

use super::super::frame::{Frame, PeerId};
use super::super::stats::LatencyStats;

/// Own samples kept for speculation: more than any lead plus stall backlog.
const MINE: usize = 512;

/// One player's speculation state (see the module doc).
#[derive(Debug)]
pub(super) struct Speculation {
    /// The player's slot.
    me: usize,
    /// This player's newest samples: (index, pad, when pushed).
    mine: VecDeque<(u32, Pad, Instant)>,
    /// The inputs of the last frame handed out.
    last_inputs: Inputs,
    /// The first of `mine` whose landing frame was not shown yet.
    unseen: u32,
}

impl Speculation {
    pub fn new(me: PeerId) -> Speculation {
        Speculation {
            me: usize::from(me.0),
            mine: VecDeque::new(),
            last_inputs: [Pad::NEUTRAL; MAX_PLAYERS],
            unseen: 0,
        }
    }

    /// Sample `index`, `pad`, was pushed at `at`.
    pub fn pushed(&mut self, index: u32, pad: Pad, at: Instant) {
        if self.mine.len() >= MINE {
            self.mine.pop_front();
        }
        self.mine.push_back((index, pad, at));
    }

    /// A frame with `inputs` was handed out.
    pub fn handed_out(&mut self, inputs: Inputs) {
        self.last_inputs = inputs;
    }

    /// Appends to `out`, up to `max` frames in all, the `frames` after those received (the
    /// newest of which had `received`, if any), each with the others' inputs of the last
    /// frame and this player's sample where the server will place it at `lead`; `last_pad`
    /// where no sample is kept.
    pub fn extend(
        &self,
        out: &mut Vec<Inputs>,
        max: usize,
        received: Option<Inputs>,
        frames: RangeInclusive<u32>,
        lead: u32,
        last_pad: Pad,
    ) {
        let base = received.unwrap_or(self.last_inputs);
        for frame in frames {
            if out.len() >= max {
                break;
            }
            let mut inputs = base;
            if let Some(slot) = inputs.get_mut(self.me) {
                *slot = self.own_sample(frame.wrapping_sub(lead), last_pad);
            }
            out.push(inputs);
        }
    }

    /// This player's sample `index`, or its newest if that is older (`last_pad` if none).
    fn own_sample(&self, index: u32, last_pad: Pad) -> Pad {
        let first = self.mine.front().map_or(0, |m| m.0);
        match index.checked_sub(first) {
            Some(i) => self.mine.get(i as usize).map_or(last_pad, |m| m.1),
            None => self.mine.front().map_or(last_pad, |m| m.1),
        }
    }

    /// The picture of frame `head` was shown at `now`: each of this player's samples that
    /// lands on or before it at `lead` was seen, after how many frame periods (at `fps`),
    /// recorded in `perceived` if `in_session` says its push time counts.
    pub fn shown(
        &mut self,
        now: Instant,
        head: Frame,
        lead: u32,
        fps: f64,
        in_session: impl Fn(Instant) -> bool,
        perceived: &mut LatencyStats,
    ) {
        let first = self.mine.front().map_or(0, |m| m.0);
        self.unseen = self.unseen.max(first);
        while let Some(&(index, _, pushed)) = self.mine.get((self.unseen - first) as usize) {
            if index + lead > head.0 {
                break;
            }
            if in_session(pushed) {
                let periods = now.saturating_duration_since(pushed).as_secs_f64() * fps;
                perceived.record(periods.round() as u32);
            }
            self.unseen += 1;
        }
    }
}
