//! The host's `Core` as the runner's `Machine`.

use super::runner::Machine;
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

    fn memory_checksum(&mut self) -> Option<u64> {
        Some(Core::memory_checksum(self))
    }
}
