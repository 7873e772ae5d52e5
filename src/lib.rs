//! framelock: a libretro frontend with keyframe lockstep netplay.
//!
//! Data flows one way:
//! pad devices (`frontend`) -> input sampling (`input`) -> lockstep protocol (`lockstep`,
//! sans-IO, with the `session` handshake; carried over UDP by `net`) -> frame scheduler (`app`)
//! -> core (`host`) -> video and audio outputs (`frontend`). Recordings live in `replay`,
//! video files of the game in `video`; `portmap` asks home routers to forward a port.
//!
//! The I/O-free protocols are the workspace crate `framelock-proto` (`src/proto/`): `wire`,
//! `input`, `wording`, `lockstep`, `replay`, `session`, `serve`'s rooms and the simulated
//! network (`net::sim`, `net::conditioner`), re-exported here under the same paths. It
//! depends on no window, audio, GPU, socket, async-runtime or core-loading crate, so those
//! rules are compile errors, not comments. Each module of this crate imports only those on
//! the layers below it: the protocols and `portmap`; then `net` and `host`; `frontend`;
//! `config` and `video`; `app`; `netplay`; `cli` on top.
//! The window, sound and gamepads (`frontend`'s devices) are the default cargo feature `gui`;
//! without it framelock links no desktop library and runs servers and headless games.

pub mod app;
pub mod cli;
pub mod config;
pub mod frontend;
pub mod host;
pub mod net;
pub mod netplay;
// Its public items are documented (CI denies warnings), as the protocols' are.
#[warn(missing_docs)]
pub mod portmap;
pub mod video;

// The I/O-free protocols live in their own crate, so nothing in them can reach a window,
// a socket or a core; their paths here stay what they were.
pub use framelock_proto::{input, lockstep, replay, serve, session, wire, wording};
