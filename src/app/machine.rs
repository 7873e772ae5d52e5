//! The host's `Core` as the runner's `Machine`, and its frame as a frontend `Image`.

use std::path::PathBuf;

use super::runner::Machine;
use crate::frontend::image::Image;
use crate::frontend::screenshot::{save_png, ScreenshotError};
use crate::host::Core;
use crate::input::Inputs;

impl Machine for Core {
    fn run_frame(&mut self, inputs: &Inputs) {
        Core::run_frame(self, inputs);
    }

    fn fps(&self) -> f64 {
        self.av_info().fps
    }

    fn shutdown_requested(&self) -> bool {
        Core::shutdown_requested(self)
    }

    fn save_state(&mut self) -> Option<Vec<u8>> {
        self.serialize()
            .inspect_err(|e| tracing::debug!("save state: {e}"))
            .ok()
    }

    fn save_state_into(&mut self, buf: &mut Vec<u8>) -> bool {
        self.serialize_into(buf)
            .inspect_err(|e| tracing::debug!("save state: {e}"))
            .is_ok()
    }

    fn load_state(&mut self, state: &[u8]) -> bool {
        self.unserialize(state)
            .inspect_err(|e| tracing::debug!("load state: {e}"))
            .is_ok()
    }

    fn loads(&self) -> u64 {
        Core::loads(self)
    }

    fn discard_audio(&mut self) {
        self.clear_audio();
    }
}

/// The core's last frame as plain pixels.
pub fn core_image(core: &Core) -> Image<'_> {
    let v = core.video();
    Image::packed(v.width, v.height, v.pixels)
}

/// The hidden `--screenshot-at FRAME PATH` test hook: saves the frame shown once `FRAME`
/// frames have run, as displayed (rotated).
#[derive(Clone, Debug)]
pub struct ShotAt {
    pub frame: u64,
    pub path: PathBuf,
    done: bool,
}

impl ShotAt {
    pub fn new(frame: u64, path: PathBuf) -> ShotAt {
        ShotAt {
            frame,
            path,
            done: false,
        }
    }

    /// Takes the shot if `frames_run` reached the target; at most once.
    pub fn check(&mut self, frames_run: u64, core: &Core) -> Result<(), ScreenshotError> {
        if self.done || frames_run < self.frame {
            return Ok(());
        }
        self.done = true;
        save_png(&self.path, &core_image(core), core.rotation())?;
        tracing::info!("screenshot at frame {frames_run}: {}", self.path.display());
        Ok(())
    }
}
