//! A player's side of a hand-over of the lockstep server (see the `lockstep::handover`
//! doc): what it offers the new authority (the agreed frames it holds) and how it moves to
//! it (the frames it lacked, and its samples no frame carried yet sent again). Holds the
//! sample log; imports the link and the outbox's pads, nothing of the server.

use std::collections::VecDeque;
use std::time::Instant;

use crate::input::{Inputs, Pad};

use super::super::frame::Frame;
use super::super::link::PeerLink;
use super::{Client, HELD_FRAMES};

/// Samples kept before the first one no received frame carried (10 s at 60 fps): a new
/// authority's frames may carry this player's samples at another offset than the last
/// one it was told (its lead grew or shrank meanwhile), and the log must reach back to the
/// sample the newest agreed frame carries.
const LOG_SLACK: u32 = 600;
/// How far from the expected index the sample a new authority's newest frame carries is
/// looked for.
const ALIGN_WINDOW: u32 = 16;

/// Every sample this player pushed from `base` on: the outbox forgets a sample once the
/// server acknowledged it, but only a frame carrying it makes it agreed; a new authority
/// is sent the rest again.
#[derive(Debug, Default)]
pub(super) struct SampleLog {
    base: u32,
    pads: VecDeque<Pad>,
}

impl SampleLog {
    pub fn start_at(&mut self, start: u32) {
        self.base = start;
        self.pads.clear();
    }

    pub fn push(&mut self, pad: Pad) {
        self.pads.push_back(pad);
    }

    pub fn replace_newest(&mut self, pad: Pad) {
        if let Some(last) = self.pads.back_mut() {
            *last = pad;
        }
    }

    fn end(&self) -> u32 {
        self.base + self.pads.len() as u32
    }

    fn get(&self, i: u32) -> Option<Pad> {
        self.pads.get(i.checked_sub(self.base)? as usize).copied()
    }

    /// Received frames carry the samples before `end`: those older than `LOG_SLACK` go.
    pub fn placed_before(&mut self, end: u32) {
        while self.base + LOG_SLACK < end && self.pads.pop_front().is_some() {
            self.base += 1;
        }
    }
}

impl Client {
    /// The end of the frames received: every frame before it is agreed and held.
    pub fn received_end(&self) -> Frame {
        self.next_frame.plus(self.frames.len() as u32)
    }

    /// The agreed frames this client holds (up to 68 s of them), and the frame the first
    /// is: what it offers a new authority.
    pub fn agreed(&self) -> (Frame, Vec<Inputs>) {
        let end = self.received_end();
        let first = Frame(end.0 - self.held.len() as u32);
        (first, self.held.iter().copied().collect())
    }

    /// Moves this client to a new lockstep server (see `lockstep::handover`): `missing` are
    /// the agreed frames from [`received_end`](Self::received_end) on that it lacked. Its
    /// link starts afresh, and its samples from the first that no agreed frame carries are
    /// sent again: the returned index, the new server's first sample of this player. A
    /// spectator's is 0.
    pub fn rehome(&mut self, now: Instant, missing: &[Inputs]) -> u32 {
        let end = self.received_end().0;
        for f in missing {
            self.frames.push_back((*f, self.recv_lead as u8, now));
            self.held.push_back(*f);
        }
        let excess = self.held.len().saturating_sub(HELD_FRAMES);
        self.held.drain(..excess);
        self.link = PeerLink::new(now, now, self.cfg.send_budget, self.cfg.udp_ip_header);
        self.irtt_sent = None;
        self.up_lossy = false;
        self.lost = false;
        self.send_due = true;
        if self.is_spectator() {
            return 0;
        }
        // The newest received frame carried sample `end - lead`'s predecessor; the frames
        // it lacked carry as many more, unless its lead changed meanwhile (it grows by
        // repeating a sample, shrinks by dropping one equal to the one before).
        let expected = (end.saturating_sub(self.recv_lead) + missing.len() as u32)
            .clamp(self.log.base, self.log.end());
        let first = match self.held.back().map(|f| f[self.me.index()]) {
            Some(last) => self.align(expected, last),
            None => expected,
        };
        let base = self.log.base;
        let samples = self.log.pads.iter().skip((first - base) as usize).copied();
        self.outbox.rebase(first, samples);
        first
    }

    /// The first sample to send again: the nearest to `expected` whose predecessor is
    /// `last`, the input on the newest agreed frame, so that the new server's frames go on
    /// from it with no change made up or lost; `expected` if there is none near.
    fn align(&self, expected: u32, last: Pad) -> u32 {
        let fits = |i: u32| i > self.log.base && self.log.get(i - 1) == Some(last);
        (0..=ALIGN_WINDOW)
            .flat_map(|d| [expected.checked_add(d), expected.checked_sub(d)])
            .flatten()
            .filter(|&i| i <= self.log.end())
            .find(|&i| fits(i))
            .unwrap_or(expected)
    }
}
