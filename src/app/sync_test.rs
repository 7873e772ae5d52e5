//! `play --sync-test N`: does the core's savestate round-trip? The check a core passes
//! before rollback may trust it (after ggrs's SyncTest session): after every frame, load
//! the state saved N frames back, run those N frames again with the same inputs, and
//! compare each frame's checksum with the first run's. A core that saves too little, or
//! loads it wrong, or depends on something outside its state, diverges within N frames.
//!
//! The checksum is the machine's memory (`Core::memory_checksum`): the game's state. The
//! picture is left out, since a core may repeat the previous picture instead of drawing
//! (Genesis Plus GX while it boots) and after a load "previous" is the frame run before
//! the load; so are the savestate's bytes, in which Genesis Plus GX's sound chip keeps
//! counters that a load does not bring back bit for bit while the game runs the same.
//!
//! It runs as a frame observer, so the game, its recording and its stats are the same as
//! without it; the re-runs' sound is dropped and the last re-run leaves the machine (and
//! its picture) where the first run had it.

use std::collections::VecDeque;

use super::runner::{FrameObserver, Machine, ObserverError};
use crate::host::Core;
use crate::input::Inputs;

/// A frame whose re-run differed.
#[derive(Debug, thiserror::Error)]
#[error(
    "sync test failed: frame {frame} re-run from the state of frame {from} has checksum \
     {rerun:016x}, the first run had {first:016x}: the core's savestates do not round-trip"
)]
pub struct SyncTestError {
    pub frame: u64,
    pub from: u64,
    pub first: u64,
    pub rerun: u64,
}

/// One frame of the window: its inputs, the checksum after it, and the state after it.
struct Step {
    inputs: Inputs,
    checksum: u64,
    state: Vec<u8>,
}

/// The sync test's observer; see the module doc.
pub struct SyncTest {
    depth: usize,
    /// The last `depth + 1` frames, oldest first.
    window: VecDeque<Step>,
    /// Frames re-run and compared.
    checked: u64,
    /// Shared with the caller for `--stats-json`.
    report: std::sync::Arc<std::sync::Mutex<SyncReport>>,
}

/// What the sync test did.
#[derive(Clone, Debug, Default)]
pub struct SyncReport {
    pub depth: u32,
    pub frames_checked: u64,
    pub rollbacks: u64,
}

impl SyncTest {
    pub fn new(depth: u32) -> (SyncTest, std::sync::Arc<std::sync::Mutex<SyncReport>>) {
        let report = std::sync::Arc::new(std::sync::Mutex::new(SyncReport {
            depth,
            ..SyncReport::default()
        }));
        let test = SyncTest {
            depth: depth.max(1) as usize,
            window: VecDeque::new(),
            checked: 0,
            report: report.clone(),
        };
        (test, report)
    }
}

/// What the sync test needs of a machine besides running frames.
pub trait Checksummed: Machine {
    fn checksum(&mut self) -> u64;
    /// The sound not yet drained (the frame the first run just played), and putting it
    /// back after the re-runs.
    fn take_audio(&mut self) -> Vec<i16>;
    fn put_back_audio(&mut self, samples: Vec<i16>);
    /// A copy of the save RAM, which a state may not hold, and writing it back (the
    /// rollback check leaves the machine as it found it).
    fn save_ram(&mut self) -> Option<Vec<u8>> {
        None
    }
    fn restore_save_ram(&mut self, _sram: &[u8]) {}
    /// `RETRO_SERIALIZATION_QUIRK_*` flags the machine declared.
    fn serialization_quirks(&self) -> u64 {
        0
    }
}

impl Checksummed for Core {
    fn checksum(&mut self) -> u64 {
        self.memory_checksum()
    }

    fn take_audio(&mut self) -> Vec<i16> {
        let mut out = Vec::new();
        self.drain_audio(&mut out);
        out
    }

    fn put_back_audio(&mut self, samples: Vec<i16>) {
        self.clear_audio();
        self.queue_audio(&samples);
    }

    fn save_ram(&mut self) -> Option<Vec<u8>> {
        self.memory(crate::host::MemoryRegion::SaveRam)
            .map(<[u8]>::to_vec)
    }

    fn restore_save_ram(&mut self, sram: &[u8]) {
        self.write_sram(sram);
    }

    fn serialization_quirks(&self) -> u64 {
        Core::serialization_quirks(self)
    }
}

impl<M: Checksummed> FrameObserver<M> for SyncTest {
    fn after_frame(
        &mut self,
        frame: u64,
        inputs: &Inputs,
        machine: &mut M,
    ) -> Result<(), ObserverError> {
        let checksum = machine.checksum();
        let state = machine
            .save_state()
            .ok_or("sync test: the core cannot save its state")?;
        self.window.push_back(Step {
            inputs: *inputs,
            checksum,
            state,
        });
        if self.window.len() > self.depth + 1 {
            self.window.pop_front();
        }
        if self.window.len() < self.depth + 1 {
            return Ok(());
        }
        // Back to the oldest kept frame, then the newer ones again, silently.
        let from = frame - self.depth as u64;
        let heard = machine.take_audio();
        if !machine.load_state(&self.window[0].state) {
            return Err(
                format!("sync test: the core refused its own state of frame {from}").into(),
            );
        }
        let again = self.window.iter().skip(1).map(|s| (s.inputs, s.checksum));
        if let Some((i, rerun)) = rerun_and_compare(machine, again) {
            return Err(Box::new(SyncTestError {
                frame: from + 1 + i as u64,
                from,
                first: self.window[i + 1].checksum,
                rerun,
            }));
        }
        self.checked += self.depth as u64;
        machine.put_back_audio(heard);
        let mut report = self.report.lock().unwrap_or_else(|e| e.into_inner());
        report.frames_checked = self.checked;
        report.rollbacks += 1;
        Ok(())
    }
}

/// Runs each `(inputs, checksum of the first run)` again, silently; the first frame whose
/// checksum differs now: its index and that checksum.
fn rerun_and_compare<M: Checksummed>(
    machine: &mut M,
    frames: impl Iterator<Item = (Inputs, u64)>,
) -> Option<(usize, u64)> {
    for (i, (inputs, want)) in frames.enumerate() {
        machine.run_frame(&inputs);
        machine.discard_audio();
        let got = machine.checksum();
        if got != want {
            return Some((i, got));
        }
    }
    None
}
