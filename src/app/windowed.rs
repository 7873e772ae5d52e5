//! The windowed mode as the run loop's [`Frontend`], beside the headless one
//! (`headless.rs`). The window itself (events, drawing, sound, pads) is
//! `frontend::window`; this module only maps it onto the run loop's contract, and imports
//! nothing from `netplay`.

use std::time::Duration;

use super::driver::{Frontend, Requests};
use super::runner::{RunError, Tick};
use crate::frontend::window::WindowFrontend;
use crate::host::Core;
use crate::input::Inputs;

impl Frontend<Core> for WindowFrontend {
    fn wait(&mut self, timeout: Duration) -> Result<Requests, RunError> {
        self.pump(timeout)
            .map_err(|e| RunError::Frontend(e.to_string()))
    }

    fn local_inputs(&mut self) -> Inputs {
        self.pads()
    }

    fn present(&mut self, core: &mut Core, tick: &Tick, frame: u64) -> Result<(), RunError> {
        self.show(core, tick.shown, frame)
            .map_err(|e| RunError::Frontend(e.to_string()))
    }

    fn status(&mut self, line: &str) {
        self.set_status(line);
    }

    fn paused(&mut self, paused: bool) {
        self.set_paused(paused);
    }
}
