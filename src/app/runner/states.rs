//! The saved states speculation keeps: the frames run ahead of the agreed ones, each with the
//! inputs it ran with and the machine's state after it, in a ring of buffers that are reused
//! (a state is a megabyte for Genesis Plus GX: allocating one per frame costs page faults),
//! plus spare buffers for the base states beside it. Data only: it must not import the
//! runner or know a machine.

use std::collections::VecDeque;

use crate::input::Inputs;

/// A frame run ahead: the inputs it ran with and the state after it.
#[derive(Debug)]
pub(super) struct Ahead {
    pub inputs: Inputs,
    pub state: Vec<u8>,
}

/// The frames run ahead, oldest first, and the buffers not in use.
#[derive(Debug, Default)]
pub(super) struct StateRing {
    ahead: VecDeque<Ahead>,
    spare: Vec<Vec<u8>>,
    /// Buffers made so far (each is reused from then on): bounded by the depth, not by the
    /// frames run.
    made: usize,
}

impl StateRing {
    pub fn len(&self) -> usize {
        self.ahead.len()
    }

    pub fn get(&self, i: usize) -> Option<&Ahead> {
        self.ahead.get(i)
    }

    /// The state after the frame at index `i` (which must exist).
    pub fn state_mut(&mut self, i: usize) -> &mut Vec<u8> {
        &mut self.ahead[i].state
    }

    pub fn front(&self) -> Option<&Ahead> {
        self.ahead.front()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Ahead> {
        self.ahead.iter()
    }

    /// A buffer to save into: a spare one, or a new one.
    pub fn buffer(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_else(|| {
            self.made += 1;
            Vec::new()
        })
    }

    /// Gives a buffer back for reuse.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        self.spare.push(buf);
    }

    /// Appends the frame after the newest one.
    pub fn push(&mut self, inputs: Inputs, state: Vec<u8>) {
        self.ahead.push_back(Ahead { inputs, state });
    }

    pub fn pop_front(&mut self) -> Option<Ahead> {
        self.ahead.pop_front()
    }

    /// Keeps the oldest `n` frames; the others' buffers go back to the spares.
    pub fn truncate(&mut self, n: usize) {
        while self.ahead.len() > n {
            if let Some(a) = self.ahead.pop_back() {
                self.spare.push(a.state);
            }
        }
    }

    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Buffers made so far.
    pub fn made(&self) -> usize {
        self.made
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Pad, MAX_PLAYERS};

    #[test]
    fn buffers_are_reused_not_made_per_frame() {
        // 10,000 frames through a window of 8 ahead: the ring makes the window's buffers
        // once, then only reuses them.
        let mut ring = StateRing::default();
        let inputs = [Pad::NEUTRAL; MAX_PLAYERS];
        for frame in 0..10_000u32 {
            let mut buf = ring.buffer();
            buf.clear();
            buf.extend_from_slice(&frame.to_le_bytes());
            ring.push(inputs, buf);
            if ring.len() > 8 {
                let old = ring.pop_front().expect("not empty");
                ring.recycle(old.state);
            }
            if frame % 97 == 0 {
                ring.truncate(3);
            }
        }
        assert!(ring.made() <= 10, "{} buffers made", ring.made());
    }
}
