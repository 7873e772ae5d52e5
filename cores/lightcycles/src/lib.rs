//! Light cycles: framelock's built-in libretro game, for 1 to 8 players.
//!
//! [`Game`] is the pure game (no clock, no I/O, no host randomness); [`libretro`] is the thin
//! C export layer over one global instance. Every `retro_*` symbol is also re-exported here
//! so a Rust frontend can link this crate and call `lightcycles::retro_run` directly.

pub mod cpu;
pub mod font;
pub mod game;
pub mod grid;
pub mod libretro;
pub mod render;
pub mod rng;
pub mod sound;
pub mod state;

#[cfg(test)]
mod game_tests;
#[cfg(test)]
mod libretro_tests;

pub use game::{
    Game, Mode, Phase, Rider, Seat, SeatKind, Settings, MAX_PLAYERS, SCREEN_H, SCREEN_W,
};
pub use libretro::*;
pub use sound::{AUDIO_FRAMES, AUDIO_SAMPLES, SAMPLE_RATE};
pub use state::{StateError, STATE_SIZE};
