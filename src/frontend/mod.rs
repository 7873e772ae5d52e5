//! What the player sees, hears and holds: window, audio, keyboard and gamepads, the chat
//! board and screenshots. Everything here is optional at run time: headless runs use none
//! of the devices. It sits below `app`, which drives it through the run loop's `Frontend`
//! (`app::windowed`), and imports nothing from `app`, `netplay` or `session`.

pub mod aspect;
pub mod audio;
pub mod chat_board;
pub mod chat_overlay;
pub mod gamepads;
pub mod image;
pub mod keyboard;
pub mod screenshot;
pub mod status_bar;
pub mod window;

/// What the player asked for while the frontend waited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    pub quit: bool,
    pub toggle_pause: bool,
}
