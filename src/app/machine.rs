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

    /// The core's state, and once the core has repeated a picture instead of drawing one,
    /// the picture too: a frame that repeats must show what the frame before it showed,
    /// whatever ran before the state came back (the desync checksum hashes the picture).
    fn save_state_into(&mut self, buf: &mut Vec<u8>) -> bool {
        if let Err(e) = self.serialize_into(buf) {
            tracing::debug!("save state: {e}");
            return false;
        }
        if self.repeats() > 0 {
            let len = buf.len() as u64;
            self.save_picture(buf);
            buf.extend_from_slice(&len.to_le_bytes());
            buf.extend_from_slice(PICTURE_MAGIC);
        }
        true
    }

    fn load_state(&mut self, state: &[u8]) -> bool {
        let (state, picture) = split_picture(state);
        if let Err(e) = self.unserialize(state) {
            tracing::debug!("load state: {e}");
            return false;
        }
        if let Some(picture) = picture {
            self.load_picture(picture);
        }
        true
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

/// Ends a saved state that carries the picture after it: `[state][picture][state's length,
/// u64 LE][PICTURE_MAGIC]`. Such states stay in this process (rollback and run-ahead).
const PICTURE_MAGIC: &[u8; 8] = b"FLPICTR1";

/// A saved state and the picture kept with it, if any.
fn split_picture(saved: &[u8]) -> (&[u8], Option<&[u8]>) {
    let n = saved.len();
    if n < 16 || &saved[n - 8..] != PICTURE_MAGIC {
        return (saved, None);
    }
    let len = u64::from_le_bytes(saved[n - 16..n - 8].try_into().unwrap_or_default()) as usize;
    if len > n - 16 {
        return (saved, None);
    }
    (&saved[..len], Some(&saved[len..n - 16]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_with_its_picture_splits_back_and_a_plain_one_stays_whole() {
        let mut saved = b"state bytes".to_vec();
        saved.extend_from_slice(b"pic");
        saved.extend_from_slice(&11u64.to_le_bytes());
        saved.extend_from_slice(PICTURE_MAGIC);
        assert_eq!(
            split_picture(&saved),
            (&b"state bytes"[..], Some(&b"pic"[..]))
        );
        assert_eq!(split_picture(b"plain"), (&b"plain"[..], None));
        // A length that does not fit is no picture.
        let mut odd = b"xy".to_vec();
        odd.extend_from_slice(&99u64.to_le_bytes());
        odd.extend_from_slice(PICTURE_MAGIC);
        assert_eq!(split_picture(&odd).1, None);
    }
}
