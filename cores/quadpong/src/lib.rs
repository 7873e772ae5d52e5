//! Quadpong: pong on the four sides of a square arena for 1 to 4 players, drawn with
//! OpenGL shaders. framelock's hardware-rendered test core: a libretro core (any frontend
//! can load `libquadpong.so`, RetroArch included) that asks for an OpenGL, OpenGL ES or
//! (to test a refusal) Vulkan context with SET_HW_RENDER, draws into the frontend's frame
//! buffer with depth and stencil, and keeps its whole state in system RAM, so savestates,
//! rollback and desync checksums work as for any core.
//!
//! [`game`] is the pure game (no clock, no I/O), [`draw`] the picture as vertices, [`gl`]
//! the OpenGL calls, [`libretro`] the C export layer over one global instance.

pub mod draw;
pub mod game;
pub mod gl;
pub mod libretro;
