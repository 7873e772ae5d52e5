//! `framelock serve`: a server that players behind home routers reach with outbound UDP
//! alone. It runs no core and has no player. It imports nothing above `session`; in
//! `framelock-proto` it cannot reach a socket, `app`, `netplay` or `cli` at all. A room is one of two kinds:
//! - **Hosted by its creator** (`host --server`, the default `--path auto`): the creator's
//!   process holds the room's [`session::Endpoint`](crate::session::Endpoint) as a direct
//!   host does; the server lists the room, relays whole datagrams between the host and each
//!   joiner, and introduces the two once the host welcomed the joiner, so that they can try
//!   a direct path (`session::direct`). Where one proves itself the server hears only the
//!   players' `Present`s; where none does it keeps relaying. Nothing of the game is kept
//!   here: the room ends with its host (`rooms/hosted.rs`).
//! - **On the server** (`host --server --path relayed`): the room's endpoint runs here, every
//!   player remote, the creator in slot 0; it outlives its creator. The rest of this page
//!   is about this kind.
//!
//! [`Rooms`] routes datagrams to both kinds; `netplay::serve` carries it over a UDP socket.
//! With `serve --archive` it also keeps finished rooms' replays: a room on the server is
//! recorded from the frames it publishes, a hosted room's host uploads its recording, and
//! both are handed to the driver to store ([`archive`]); `serve --http` shows the rooms
//! on a web page from [`Rooms::page_rooms`] (`netplay::web`).
//!
//! # A room's life (on the server)
//! 1. The creator (`framelock host --server`) opens it and uploads its start state (see
//!    `session::room`): core, content, options, machine state, as a direct host has them.
//! 2. Players join by name (`framelock join SERVER --room NAME`): the server checks their
//!    protocol, core, content and options against the creator's exactly as a direct host
//!    does, and sends them the start state. A password is checked end to end between the
//!    joiner and the creator (SPAKE2, relayed): the server never learns it.
//! 3. When every seat is taken and every player has the start state, the room's lockstep
//!    server starts, and from then on works as a direct host's does: CTRLs in, UPDATEs out,
//!    the 0.5 s warning and 2 s drop, goodbyes, checksums compared.
//! 4. The room goes on while any player is in it. When its creator leaves (or its link
//!    drops), the others play on: a player who runs supplies the state for late joiners,
//!    returning players and resyncs, and the lowest seat checks relayed passwords (every
//!    player passed the check, so each knows the password). The creator comes back like
//!    anyone else, to its own seat. The room closes once nobody is in it: at once when the
//!    last player said goodbye, after [`EMPTY_GRACE`] when their links dropped (they
//!    reconnect within a minute by default) or when its creator never came to it.
//!
//! # Abuse
//! - **Proof of address.** A Hello or Open from an address that has not echoed a cookie
//!   made for it (`session::guard::Cookies`, QUIC's Retry) is answered with a Retry and
//!   nothing else. Until an address has echoed one (or is a room's player, admitted after
//!   one), the server never sends it more bytes than it received, and Hello, Open, List,
//!   Locate and ListServers must be padded to 1200 bytes: a forged source address gets
//!   nothing amplified (QUIC's rule, RFC 9000 section 8, at 1x instead of 3x). Nothing
//!   room-wide (a session id, a room's key) counts as proof.
//! - Opening rooms is limited per IPv4 address or IPv6 /64
//!   ([`ServeConfig::opens_per_minute`]) and in all ([`ServeConfig::max_rooms`]); each
//!   room's unpacked start state ([`ServeConfig::max_state`]) and all rooms' start states
//!   together ([`ServeConfig::max_memory`]) are capped, as their Opens declare them (the
//!   unpacking stops at the declared size); an upload is at most
//!   [`MAX_UPLOAD`](crate::session::MAX_UPLOAD) bytes. Each refusal says which limit. A
//!   whole upload is unpacked, checked and packed again off the loop that answers
//!   datagrams ([`OpenJob`]), so a big one stalls no other room.
//! - A room with nobody in it, its creator included, closes after [`EMPTY_GRACE`]: within
//!   [`ABANDONED_WITHIN`] (a minute) of its last player's last datagram.
//! - Password checks are limited per address inside each room's session (see
//!   `session::host`): a few at once, then one every 12 s, at most 4 pending per address.
//! - Datagrams are routed by source address first: a player can only ever speak in the room
//!   it joined, with that room's session id. Garbage, strays and datagrams for rooms the
//!   sender is not in are counted ([`ServeStats`]) and dropped.
//!
//! # A fleet of servers
//! `serve --directory nats://HOST:4222 --public-address ADDR:PORT --region NAME` makes the
//! server a member of a fleet whose room directory is one NATS JetStream key-value bucket
//! (the client, its bucket layout and its liveness rules: `netplay::directory`). Without
//! `--directory` nothing of this runs.
//! - **Names.** An Open's name is claimed in the directory with create-if-absent before
//!   the upload starts ([`DirOp::Claim`]); a name another member holds is refused, naming
//!   it. While the directory is unreachable, rooms open here alone and are written back
//!   when it answers.
//! - **Listing.** Every member watches the whole bucket ([`Fleet`]): `List` answers with
//!   the fleet's rooms, each with its region and server; `ListServers` with every member's
//!   last heartbeat (rooms, capacity, players).
//! - **Redirects.** A Hello or `Locate` for a room another member holds is answered with
//!   `Room/Moved` naming it, and the player asks that server: lockstep needs one authority
//!   per room, so a room is only ever played on the server that opened it. A full member
//!   answers an Open with `Moved` to the least loaded member of its region with room.
//! - **Trust.** With `--directory-key`, members sign what they write and believe only
//!   entries that verify ([`fleet`]'s "Signed entries"); even then they redirect only to an
//!   address a server can have. How a member signs in to NATS: `netplay::directory`.
//! - **A member dies.** Its heartbeat stops; after [`SILENT`] the others delete its
//!   heartbeat and rooms. Its players see "the host stopped answering" and their recordings
//!   end cleanly; a room does not migrate (no other server has the players' machine
//!   states), the players open a new one.

pub mod archive;
pub mod fleet;
mod names;
mod opening;
mod rooms;

pub use fleet::{DirNews, DirOp, Fleet, HEARTBEAT, SILENT};
pub use names::{room_name, valid_room_name};
pub use opening::{OpenJob, Opened};
pub use rooms::{
    RoomView, Rooms, ServeConfig, ServeEvent, ServeStats, ABANDONED_WITHIN, EMPTY_GRACE,
    HOSTED_SILENCE, MEMBERS_PER_PREFIX, MEMBER_SILENCE, PROBATION,
};

#[cfg(test)]
mod tests;
