//! `frontend::window` in a build without the `gui` feature (a server-only `framelock`):
//! the same face, but no window can be opened, so every command that needs one fails
//! early and says why. [`WindowFrontend`] has no value here, so its methods cannot run.
//! Imports nothing from `app`, `netplay` or `session`.

use std::convert::Infallible;
use std::time::Duration;

use super::audio::{AudioSettings, AudioStats};
use super::chat_board::ChatBoard;
use super::keyboard::KeyCode;
use super::screenshot::{ScreenshotError, ShotAt};
use super::Requests;
pub use super::WindowSettings;
use crate::host::Core;
use crate::input::{Inputs, KeyMap};

#[derive(Debug, thiserror::Error)]
pub enum WindowError {
    #[error(
        "this framelock was built without windows (cargo feature `gui`): run with --headless, \
         or use a build with default features"
    )]
    NotBuilt,
}

/// There is never a display to open a window on.
pub fn check_display() -> Result<(), WindowError> {
    Err(WindowError::NotBuilt)
}

/// No window: opening one fails, so no value of this type exists.
pub struct WindowFrontend(Infallible);

impl WindowFrontend {
    pub fn audio_stats(&self) -> AudioStats {
        match self.0 {}
    }

    pub fn open(
        _settings: WindowSettings,
        _core: &Core,
        _keymaps: &[KeyMap],
        _audio: &AudioSettings,
        _shot_at: Option<ShotAt>,
    ) -> Result<WindowFrontend, WindowError> {
        Err(WindowError::NotBuilt)
    }

    pub fn open_for_text(
        _settings: WindowSettings,
        _keymaps: &[KeyMap],
    ) -> Result<WindowFrontend, WindowError> {
        Err(WindowError::NotBuilt)
    }

    pub fn start_game(
        &mut self,
        _core: &Core,
        _audio: &AudioSettings,
        _shot_at: Option<ShotAt>,
        _status: Option<String>,
        _chat: Option<(ChatBoard, KeyCode)>,
    ) {
        match self.0 {}
    }

    pub fn show_text(&mut self, _rows: &[String], _timeout: Duration) -> Result<bool, WindowError> {
        match self.0 {}
    }

    pub fn ask_secret(
        &mut self,
        _rows: &[String],
        _prompt: &str,
    ) -> Result<Option<String>, WindowError> {
        match self.0 {}
    }

    pub fn pump(&mut self, _timeout: Duration) -> Result<Requests, WindowError> {
        match self.0 {}
    }

    pub fn pads(&mut self) -> Inputs {
        match self.0 {}
    }

    pub fn show(
        &mut self,
        _core: &mut Core,
        _new_frame: bool,
        _frame: u64,
    ) -> Result<(), ScreenshotError> {
        match self.0 {}
    }

    pub fn set_status(&mut self, _line: &str) {
        match self.0 {}
    }

    pub fn set_paused(&mut self, _paused: bool) {
        match self.0 {}
    }
}
