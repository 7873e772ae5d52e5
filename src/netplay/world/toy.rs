//! The simulated world's machine: a deterministic stand-in for a core.

use std::collections::{BTreeMap, VecDeque};

use crate::app::record::StateChecksum;
use crate::app::replay::ReplayMachine;
use crate::app::sync_test::Checksummed;
use crate::app::Machine;
use crate::input::Inputs;

use crate::netplay::core_side::SessionMachine;

/// A deterministic stand-in for a core: its state is the session frame it is at and a hash
/// of every input it ran, so two machines agree exactly when they ran the same inputs from
/// the same state.
#[derive(Clone, Debug, Default)]
pub struct Toy {
    pub frame: u32,
    pub hash: u64,
    /// The hash after each frame, and each frame's inputs (for resyncs).
    hashes: BTreeMap<u32, u64>,
    pub(super) history: VecDeque<(u32, Inputs)>,
    pub loads: u64,
    /// Frames run, speculative ones and those run again included.
    pub runs: u64,
    /// The hash takes a turn of its own after this session frame (a desync on purpose).
    pub diverge_at: Option<u32>,
    /// Its loads keep the hash it has (a core whose savestates do not round-trip).
    pub broken_loads: bool,
    /// From this session frame on it cannot save its state (a core that fails mid-game).
    pub saves_fail_from: Option<u32>,
}

impl Toy {
    /// A toy whose hash takes a turn of its own after session frame `at`.
    pub fn diverging(at: Option<u32>) -> Toy {
        Toy {
            diverge_at: at,
            ..Toy::default()
        }
    }

    fn fold(hash: u64, inputs: &Inputs) -> u64 {
        inputs.iter().fold(hash ^ 0x9e37, |h, p| {
            (h ^ u64::from(p.0)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }

    pub(super) fn state(&self) -> Vec<u8> {
        let mut v = self.frame.to_le_bytes().to_vec();
        v.extend_from_slice(&self.hash.to_le_bytes());
        v
    }

    pub(super) fn restore(&mut self, state: &[u8]) -> bool {
        if state.len() != 12 {
            return false;
        }
        let (Ok(frame), Ok(hash)) = (state[..4].try_into(), state[4..12].try_into()) else {
            return false;
        };
        self.frame = u32::from_le_bytes(frame);
        if !self.broken_loads {
            self.hash = u64::from_le_bytes(hash);
        }
        self.loads += 1;
        true
    }

    /// Whether port `port` pressed `pad` in one of the last frames run (600 at most).
    pub fn ran_input(&self, port: usize, pad: u16) -> bool {
        self.history.iter().any(|(_, i)| i[port].0 == pad)
    }

    /// The hash after session frame `frame` ran.
    pub fn hash_after(&self, frame: u32) -> Option<u64> {
        self.hashes.get(&frame).copied()
    }
}

impl Machine for Toy {
    fn run_frame(&mut self, inputs: &Inputs) {
        self.hash = Toy::fold(self.hash, inputs);
        if self.diverge_at == Some(self.frame) {
            self.hash ^= 0xd1;
        }
        self.hashes.insert(self.frame, self.hash);
        self.history.push_back((self.frame, *inputs));
        if self.history.len() > 600 {
            self.history.pop_front();
        }
        self.frame += 1;
        self.runs += 1;
    }
    fn fps(&self) -> f64 {
        60.0
    }
    fn save_state(&mut self) -> Option<Vec<u8>> {
        if self.saves_fail_from.is_some_and(|f| self.frame >= f) {
            return None;
        }
        Some(self.state())
    }
    fn load_state(&mut self, state: &[u8]) -> bool {
        self.restore(state)
    }
    fn loads(&self) -> u64 {
        self.loads
    }
    fn memory_checksum(&mut self) -> Option<u64> {
        Some(self.hash)
    }
}

impl SessionMachine for Toy {
    fn session_checksum(&mut self) -> u64 {
        self.hash
    }
    fn serialize(&mut self) -> Result<Vec<u8>, String> {
        Ok(self.state())
    }
    fn unserialize(&mut self, state: &[u8]) -> Result<(), String> {
        self.restore(state)
            .then_some(())
            .ok_or_else(|| "not a toy state".into())
    }
}

impl Checksummed for Toy {
    fn checksum(&mut self) -> u64 {
        self.hash
    }
    fn take_audio(&mut self) -> Vec<i16> {
        Vec::new()
    }
    fn put_back_audio(&mut self, _samples: Vec<i16>) {}
}

impl StateChecksum for Toy {
    fn state_checksum(&mut self) -> u64 {
        self.hash
    }
}

impl ReplayMachine for Toy {
    fn load_state(&mut self, state: &[u8]) -> Result<(), String> {
        self.restore(state)
            .then_some(())
            .ok_or_else(|| "not a toy state".into())
    }
}
