//! What the player sees, hears and holds: window, audio, keyboard and gamepads.
//! Everything here is optional at run time: headless runs use none of it.

pub mod aspect;
pub mod audio;
pub mod chat_overlay;
pub mod gamepads;
pub mod image;
pub mod keyboard;
pub mod screenshot;
pub mod status_bar;
pub mod window;
