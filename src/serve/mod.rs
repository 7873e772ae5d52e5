//! `framelock serve`: a dedicated lockstep server that players behind home routers reach with
//! outbound UDP alone. It runs no core and has no player: each room is a
//! [`session::Endpoint`](crate::session::Endpoint) whose players are all remote, the room's
//! creator in slot 0. [`Rooms`] routes datagrams to them; `netplay::serve` carries it over a
//! UDP socket.
//!
//! # A room's life
//! 1. The creator (`framelock host --server`) opens it and uploads its start state (see
//!    `session::room`): core, content, options, machine state, as a direct host has them.
//! 2. Players join by name (`framelock join SERVER --room NAME`): the server checks their
//!    protocol, core, content and options against the creator's exactly as a direct host
//!    does, and sends them the start state. A password is checked end to end between the
//!    joiner and the creator (SPAKE2, relayed): the server never learns it.
//! 3. When every seat is taken and every player has the start state, the room's lockstep
//!    server starts, and from then on works as a direct host's does: CTRLs in, UPDATEs out,
//!    the 0.5 s warning and 2 s drop, goodbyes, checksums compared.
//! 4. The room closes when its creator leaves (after serving the others the frames already
//!    published, for up to [`CLOSE_GRACE`]) or when everyone has left; the server frees
//!    everything it held.
//!
//! # Abuse
//! - Until an address has echoed a session id it was sent (so it receives what is sent to
//!   it), the server never sends it more bytes than it received: Hello, Open and List are
//!   padded to 1200 bytes, so a forged source address gets nothing amplified (QUIC's rule,
//!   RFC 9000 section 8, at 1x instead of 3x).
//! - Opening rooms is limited per source IP ([`ServeConfig::opens_per_minute`]) and in all
//!   ([`ServeConfig::max_rooms`]), each with a refusal that says so; an upload is at most
//!   [`MAX_UPLOAD`](crate::session::MAX_UPLOAD) bytes.
//! - Datagrams are routed by source address first: a player can only ever speak in the room
//!   it joined, with that room's session id. Garbage, strays and datagrams for rooms the
//!   sender is not in are counted ([`ServeStats`]) and dropped.
//!
//! # Past one machine (a plan; none of it is built)
//! One `serve` process holds its rooms in memory; a fleet spreads rooms over many:
//! - **Processes.** `serve` runs as a game-server fleet on an existing engine, for example
//!   Agones on Kubernetes: it allocates game-server pods that speak UDP on a public port,
//!   counts rooms per server (a `serve` reports its room count and `--max-rooms` as the
//!   pod's capacity), and drains a server before it is replaced.
//! - **Directory.** Room names live in an existing store with TTLs and watches, for example
//!   NATS JetStream key-value: key `rooms.NAME`, value `{server: "203.0.113.7:7845",
//!   game, core, seats, players, password, created}`, written by the serving process when the
//!   room opens and refreshed every 10 s with a 30 s TTL, deleted when it closes.
//! - **Players.** `host --server` asks any server of the fleet; the directory names a
//!   server with room to spare, and that server's address goes into the command friends
//!   run. `join --room NAME` looks the name up first (any server answers with the owner's
//!   address) and then talks to the owning server only: lockstep needs one authority per
//!   room, never two.
//! - **A server dies.** Its entries expire within 30 s; its players see today's "the host
//!   stopped answering (nothing for 2 s)" and their recordings end cleanly. Lockstep keeps
//!   no state a second server could take over mid-game without every player's machine state,
//!   so a room does not migrate: the players open a new one.
//! - **Listing.** `framelock rooms` asks any server, which lists the directory (a watch
//!   keeps a local copy) instead of its own rooms.

pub mod fleet;
mod names;
mod rooms;

pub use fleet::{DirNews, DirOp, Fleet, HEARTBEAT, SILENT};
pub use names::{room_name, valid_room_name};
pub use rooms::{Rooms, ServeConfig, ServeEvent, ServeStats, CLOSE_GRACE};

#[cfg(test)]
mod tests;
