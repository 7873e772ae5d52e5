//! A player's input queue on the server: the samples its CTRLs brought and not placed on a
//! frame yet, the ones placed but kept as the base of its delta coding, and the input it
//! had on the newest published frame. Holds no link, stream or publication policy (the
//! publisher decides which sample goes on which frame) and imports nothing of the rest of
//! the server.

use std::collections::VecDeque;

use crate::input::Pad;

use super::super::frame::Frame;
use super::super::msg::SampleRun;

/// Samples a peer may have buffered beyond the frame being published; more are ignored.
const MAX_BUFFERED: usize = 8192;

/// One player's samples (see the module doc).
#[derive(Debug)]
pub(super) struct InputQueue {
    /// Received samples not yet placed on a frame: indices `next..next + samples.len()`.
    pub samples: VecDeque<Pad>,
    pub next: u32,
    /// Samples `used_base..next`, placed on frames already but kept: a CTRL's first sample
    /// is delta-coded against the one before it, and the client's oldest unacknowledged
    /// sample trails what we placed by up to a round trip.
    used: VecDeque<Pad>,
    pub used_base: u32,
    /// The input this player had on the newest published frame.
    pub last: Pad,
    /// A sample was dropped since the last published frame.
    pub dropped: bool,
    /// The first sample's index.
    first: u32,
}

impl InputQueue {
    /// A queue whose first sample is `first`'s (a player's samples are numbered like the
    /// frames of its stream).
    pub fn new(first: Frame) -> InputQueue {
        InputQueue {
            samples: VecDeque::new(),
            next: first.0,
            used: VecDeque::new(),
            used_base: first.0,
            last: Pad::NEUTRAL,
            dropped: false,
            first: first.0,
        }
    }

    /// Whether any sample came (the player has played).
    pub fn received_any(&self) -> bool {
        self.recv_end() > self.first
    }

    /// The index after the newest sample received.
    pub fn recv_end(&self) -> u32 {
        self.next + self.samples.len() as u32
    }

    /// Sample `i`, if still held.
    pub fn sample(&self, i: u32) -> Option<Pad> {
        match i.checked_sub(self.next) {
            Some(k) => self.samples.get(k as usize).copied(),
            None => self
                .used
                .get(i.checked_sub(self.used_base)? as usize)
                .copied(),
        }
    }

    /// Takes the next sample off the queue to place it on a frame (or drop it).
    pub fn take_sample(&mut self) -> Option<Pad> {
        let s = self.samples.pop_front()?;
        self.next += 1;
        self.used.push_back(s);
        // The client never asks for more than a buffer's worth back (see `MAX_BUFFERED`).
        if self.used.len() > MAX_BUFFERED {
            self.used.pop_front();
            self.used_base += 1;
        }
        Some(s)
    }

    /// A run continues the samples we hold and fits the buffer; otherwise acking the
    /// datagram that carried it would make the client forget samples we never stored.
    pub fn fits(&self, run: &SampleRun) -> bool {
        let end = self.recv_end();
        let new = (run.first + run.pads.len() as u32).saturating_sub(end) as usize;
        run.first <= end && self.samples.len() + new <= MAX_BUFFERED
    }

    /// Appends what of `run` (which [`fits`](Self::fits)) is new; returns how many of its
    /// first samples we held already.
    pub fn extend(&mut self, run: &SampleRun) -> u32 {
        let skip = (self.recv_end() - run.first) as usize;
        self.samples.extend(run.pads.iter().skip(skip).copied());
        // The client holds everything before `first` acknowledged: later CTRLs start
        // there or later, so older samples are no base any more.
        while self.used_base + 1 < run.first && self.used.pop_front().is_some() {
            self.used_base += 1;
        }
        skip as u32
    }

    /// A late joiner caught up: the samples it pushed while it did are dropped but the
    /// newest, which goes on the next frame, and its input until then is neutral.
    pub fn catch_up(&mut self) {
        while self.samples.len() > 1 {
            self.take_sample();
        }
        self.last = Pad::NEUTRAL;
    }
}
