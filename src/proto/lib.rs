//! framelock's I/O-free protocols: the wire format (`wire`), pad inputs (`input`), keyframe
//! lockstep (`lockstep`), the session handshake and the participant (`session`), the
//! server's rooms (`serve`), the recording format (`replay`), and the simulated network the
//! tests and benchmarks run them on (`net::sim`, `net::conditioner`). Each module imports
//! only those on the layers below it: `wire`, `input` and `wording`; then `net`; `lockstep`
//! and `replay`; `session`; `serve` on top.
//!
//! This crate depends on no window, audio, GPU, socket, async-runtime or core-loading crate:
//! its machines take datagrams and instants in and hand datagrams out; sockets, clocks,
//! threads and cores plug in from the `framelock` crate.

pub mod input;
// The protocols' and the log format's public items are documented (CI denies warnings).
#[warn(missing_docs)]
pub mod lockstep;
pub mod net;
#[warn(missing_docs)]
pub mod replay;
pub mod serve;
#[warn(missing_docs)]
pub mod session;
pub mod wire;
pub mod wording;
