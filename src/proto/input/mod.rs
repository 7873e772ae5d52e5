//! Input sampling: turning pads, keys and bots into one `Pad` per player per frame. It imports
//! nothing of `framelock-proto`: every layer above stands on it, in both crates.

mod bot;
mod keymap;
mod pad;

pub use bot::{Bot, BotSpec};
pub use keymap::{KeyMap, KeyMapError, KEYBOARD_PLAYERS};
pub use pad::{Button, Inputs, Pad, MAX_PLAYERS};
