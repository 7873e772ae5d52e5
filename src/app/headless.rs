//! Headless mode: no window, no audio device, no event loop. For tests, CI and servers.

use std::time::Duration;

use super::driver::{Frontend, Requests};
use super::runner::{RunError, Tick};
use crate::frontend::screenshot::ShotAt;
use crate::host::Core;
use crate::input::{Inputs, Pad, MAX_PLAYERS};

/// Sleeps between frames, discards audio, and has no local players (bots play instead).
#[derive(Default)]
pub struct Headless {
    audio: Vec<i16>,
    shot: Option<ShotAt>,
    /// Test hook: time to stay busy after each displayed frame (a window's draw).
    busy: Option<Duration>,
    /// Test hook (`--hash-shown`): frames to hash the shown image of, and the hashes.
    hash_span: Option<(u64, u64)>,
    shown: Vec<(u64, u64)>,
}

impl Headless {
    pub fn new(shot: Option<ShotAt>, busy: Option<Duration>) -> Headless {
        Headless {
            audio: Vec::new(),
            shot,
            busy,
            hash_span: None,
            shown: Vec::new(),
        }
    }

    /// Hashes the image shown after each tick that leaves `frames run` within
    /// `from..from + count`.
    pub fn with_hash_shown(mut self, span: Option<(u64, u64)>) -> Headless {
        self.hash_span = span;
        self
    }

    /// `(frames run, xxh3 of the image shown)` for each displayed frame in the span.
    pub fn shown(&self) -> &[(u64, u64)] {
        &self.shown
    }
}

impl Frontend<Core> for Headless {
    fn wait(&mut self, timeout: Duration) -> Result<Requests, RunError> {
        if !timeout.is_zero() {
            std::thread::sleep(timeout);
        }
        Ok(Requests::default())
    }

    fn local_inputs(&mut self) -> Inputs {
        [Pad::NEUTRAL; MAX_PLAYERS]
    }

    fn present(&mut self, core: &mut Core, tick: &Tick, frame: u64) -> Result<(), RunError> {
        if tick.shown {
            // The host buffers audio until drained: drain it even though nobody listens.
            self.audio.clear();
            core.drain_audio(&mut self.audio);
            if let Some(shot) = &mut self.shot {
                shot.check(frame, core)
                    .map_err(|e| RunError::Frontend(e.to_string()))?;
            }
            if let Some((from, count)) = self.hash_span {
                if (from..from.saturating_add(count)).contains(&frame) {
                    let video = core.video();
                    let bytes: Vec<u8> =
                        video.pixels.iter().flat_map(|p| p.to_le_bytes()).collect();
                    self.shown.push((frame, xxhash_rust::xxh3::xxh3_64(&bytes)));
                }
            }
            if let Some(busy) = self.busy {
                std::thread::sleep(busy);
            }
        }
        Ok(())
    }
}
