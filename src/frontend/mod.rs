//! What the player sees, hears and holds: window, audio, keyboard and gamepads, the chat
//! board and screenshots. Everything here is optional at run time: headless runs use none
//! of the devices. It sits below `app`, which drives it through the run loop's `Frontend`
//! (`app::windowed`), and imports nothing from `app`, `netplay` or `session`. The window,
//! sound and gamepad devices are the `gui` cargo feature; without it `window` is
//! `no_window.rs`, which opens nothing and says so.

pub mod aspect;
pub mod audio;
pub mod chat_board;
pub mod chat_overlay;
pub mod gamepads;
pub mod image;
pub mod keyboard;
pub mod screenshot;
pub mod status_bar;
#[cfg(feature = "gui")]
pub mod window;
#[cfg(not(feature = "gui"))]
#[path = "no_window.rs"]
pub mod window;

use std::path::PathBuf;

use chat_board::ChatBoard;
use keyboard::KeyCode;

/// What the player asked for while the frontend waited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    pub quit: bool,
    pub toggle_pause: bool,
}

/// Window options from the config file and the command line.
#[derive(Clone, Debug)]
pub struct WindowSettings {
    pub title: String,
    pub scale: u32,
    pub fullscreen: bool,
    pub vsync: bool,
    pub screenshots_dir: PathBuf,
    /// File name stem for screenshots (the content's name).
    pub shot_name: String,
    /// Netplay: the status line as the game starts; the window reserves a status bar below
    /// the game for it (and at least `status_bar::DEFAULT_ROWS` rows) from the start.
    pub status: Option<String>,
    /// Netplay: the chat shown over the picture, and the key that opens its input line.
    pub chat: Option<(ChatBoard, KeyCode)>,
}
