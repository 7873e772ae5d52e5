//! What this player's CTRLs carry until the server acknowledges it: the local samples not
//! acknowledged yet (and the last one that was, the next run's delta base), how far the
//! samples sent reach, and the checksums to report. Imports nothing of the client.

use std::collections::VecDeque;
use std::ops::RangeInclusive;

use super::super::frame::Frame;
use super::super::msg::{self, SampleRun};
use crate::input::Pad;

/// Unacknowledged checksums kept (the oldest go first).
const MAX_CHECKSUMS: usize = 16;

/// The client's unacknowledged samples and checksums (see the module doc).
#[derive(Debug, Default)]
pub(super) struct Outbox {
    /// Unacknowledged local samples: indices `samples_base..samples_end`.
    samples: VecDeque<Pad>,
    samples_base: u32,
    /// Sample `samples_base - 1` (acknowledged, so the server holds it): the next CTRL's
    /// first sample is delta-coded against it.
    acked_pad: Option<Pad>,
    /// End of the samples sent so far: the server holds at most these.
    sent_end: u32,
    /// Checksums to report, each with its id, until a CTRL that carried it is acknowledged.
    checksums: VecDeque<(u32, Frame, u64)>,
    next_check: u32,
}

impl Outbox {
    /// The first sample to come is the one for frame `start`.
    pub fn start_at(&mut self, start: u32) {
        self.samples_base = start;
        self.sent_end = start;
    }

    /// A new authority takes the samples from `first` on (`samples`): they are sent
    /// again, as if none had been, the first in full (it holds none before it).
    pub fn rebase(&mut self, first: u32, samples: impl Iterator<Item = Pad>) {
        self.samples = samples.collect();
        self.samples_base = first;
        self.sent_end = first;
        self.acked_pad = None;
    }

    /// Index of the next sample to be pushed.
    pub fn samples_end(&self) -> u32 {
        self.samples_base + self.samples.len() as u32
    }

    /// There are samples not acknowledged yet.
    pub fn has_samples(&self) -> bool {
        !self.samples.is_empty()
    }

    /// Appends a sample; its index.
    pub fn push(&mut self, pad: Pad) -> u32 {
        let index = self.samples_end();
        self.samples.push_back(pad);
        index
    }

    /// Overwrites the newest sample; false if there is none.
    pub fn replace_newest(&mut self, pad: Pad) -> bool {
        match self.samples.back_mut() {
            Some(last) => {
                *last = pad;
                true
            }
            None => false,
        }
    }

    /// Queues the checksum of `frame` (the oldest goes past `MAX_CHECKSUMS`).
    pub fn report_checksum(&mut self, frame: Frame, checksum: u64) {
        if self.checksums.len() >= MAX_CHECKSUMS {
            self.checksums.pop_front();
        }
        self.checksums.push_back((self.next_check, frame, checksum));
        self.next_check += 1;
    }

    /// A CTRL that carried the samples before `samples_end` and the checksums before id
    /// `checks_end` was acknowledged.
    pub fn acked(&mut self, samples_end: u32, checks_end: u32) {
        while self.samples_base < samples_end {
            let Some(pad) = self.samples.pop_front() else {
                break;
            };
            self.acked_pad = Some(pad);
            self.samples_base += 1;
        }
        while self.checksums.front().is_some_and(|c| c.0 < checks_end) {
            self.checksums.pop_front();
        }
    }

    /// Samples from the first unacknowledged one that fit in one CTRL.
    pub fn fitting(&self) -> usize {
        msg::pads_fitting(self.samples.iter().copied(), msg::CTRL_BIT_BUDGET)
    }

    /// All the unacknowledged samples fit in `n`.
    pub fn all_fit(&self, n: usize) -> bool {
        n == self.samples.len()
    }

    /// The first `n` unacknowledged samples, as a CTRL carries them.
    pub fn sample_run(&self, n: usize, age_ms: Option<u8>) -> SampleRun {
        SampleRun {
            first: self.samples_base,
            base: self.acked_pad,
            pads: self.samples.iter().take(n).copied().collect(),
            age_ms,
        }
    }

    /// The checksums one CTRL carries, and the id after the last of them: acknowledging
    /// that CTRL covers those.
    pub fn checksums(&self) -> (Vec<(Frame, u64)>, u32) {
        let carried = self
            .checksums
            .iter()
            .take(msg::MAX_CHECKSUMS)
            .map(|c| (c.1, c.2))
            .collect();
        let checks_end = match self.checksums.len().min(msg::MAX_CHECKSUMS) {
            0 => self.next_check,
            n => self.checksums[n - 1].0 + 1,
        };
        (carried, checks_end)
    }

    /// The end of the first `n` unacknowledged samples.
    pub fn end_of(&self, n: usize) -> u32 {
        self.samples_base + n as u32
    }

    /// A CTRL with the first `n` samples leaves: where the samples the server holds may
    /// end, as that CTRL's sample references say (somewhere between our first
    /// unacknowledged one and the end of all we sent before it).
    pub fn sent(&mut self, n: usize) -> RangeInclusive<u32> {
        let refs = self.samples_base..=self.sent_end.max(self.samples_base);
        self.sent_end = self.sent_end.max(self.samples_base + n as u32);
        refs
    }
}
