//! framelock: a libretro frontend with keyframe lockstep netplay.
//!
//! Data flows one way:
//! pad devices (`frontend`) -> input sampling (`input`) -> lockstep protocol (`lockstep`,
//! sans-IO, with the `session` handshake; carried over UDP by `net`) -> frame scheduler (`app`)
//! -> core (`host`) -> video and audio outputs (`frontend`). Recordings live in `replay`,
//! video files of the game in `video`; `portmap` asks home routers to forward a port. Each
//! module imports only those on the layers below it: `wire`, `input`, `wording` and
//! `portmap`; then `net`, `replay` and `host`; `lockstep` and `frontend`;
//! `session`, `config` and `video`; `serve` and `app`; `netplay`; `cli` on top.
//! The window, sound and gamepads (`frontend`'s devices) are the default cargo feature `gui`;
//! without it framelock links no desktop library and runs servers and headless games.

pub mod app;
pub mod cli;
pub mod config;
pub mod frontend;
pub mod host;
pub mod input;
// The protocols' and the log format's public items are documented (CI denies warnings).
#[warn(missing_docs)]
pub mod lockstep;
pub mod net;
pub mod netplay;
#[warn(missing_docs)]
pub mod portmap;
#[warn(missing_docs)]
pub mod replay;
pub mod serve;
#[warn(missing_docs)]
pub mod session;
pub mod video;
pub mod wire;
pub mod wording;
