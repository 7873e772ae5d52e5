//! Opening a room from its uploaded start state, off the loop that answers datagrams.
//!
//! Unpacking (lz4), hashing (xxh3) and packing again (a room's endpoint keeps the payload
//! it sends joiners) take a few hundred milliseconds for a 64 MiB state: done in the
//! server's loop, one upload would stall every other room's datagrams (issue 36, finding
//! 4). [`Rooms`](super::Rooms) stays sans-IO: once an upload is whole it hands out an
//! [`OpenJob`] ([`poll_job`](super::Rooms::poll_job)), the driver runs
//! [`OpenJob::run`] wherever it likes (`netplay::serve`: a worker thread; the simulated
//! worlds: at once) and gives the [`Opened`] back
//! ([`handle_opened`](super::Rooms::handle_opened)). Meanwhile the upload, and the memory
//! its Open declared, stay counted against the server's limits.

use std::net::SocketAddr;
use std::time::Instant;

use crate::session::msg::OpenRoom;
use crate::session::{Endpoint, EndpointConfig, SessionInfo, StartPayload};

/// A whole upload to check and open a room with: pure computation, no I/O.
pub struct OpenJob {
    pub(super) room: String,
    pub(super) creator: SocketAddr,
    pub(super) session: u32,
    /// The Open as the room keeps it (its mode and K settled).
    pub(super) open: OpenRoom,
    pub(super) cfg: EndpointConfig,
    /// The room's session info, without the options (they come with the payload).
    pub(super) info: SessionInfo,
    pub(super) packed: Vec<u8>,
    /// When the upload was whole: the room's lobby opens then.
    pub(super) since: Instant,
    /// Keep a copy of the start state for the room's recording (`serve --archive`).
    pub(super) keep_start: bool,
}

/// What an [`OpenJob`] made: the room's endpoint, or why its start state is refused.
pub struct Opened {
    pub(super) room: String,
    pub(super) creator: SocketAddr,
    pub(super) session: u32,
    pub(super) open: OpenRoom,
    pub(super) endpoint: Result<Endpoint, String>,
    /// The start state, for the room's recording, if the job kept it.
    pub(super) start: Option<StartPayload>,
}

impl OpenJob {
    /// Bytes of packed start state the job carries.
    pub fn len(&self) -> usize {
        self.packed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packed.is_empty()
    }

    /// Unpacks and checks the start state against the sizes and hash its Open declared
    /// (the unpacking stops at the declared size), then builds the room's endpoint.
    pub fn run(self) -> Opened {
        let OpenJob {
            room,
            creator,
            session,
            open,
            cfg,
            mut info,
            packed,
            since,
            keep_start,
        } = self;
        let mut start = None;
        let endpoint = StartPayload::unpack(&packed, open.raw_len, open.payload_hash)
            .map_err(|e| format!("the start state of room {room} is bad: {e}"))
            .and_then(|payload| {
                drop(packed);
                if keep_start {
                    start = Some(payload.clone());
                }
                info.options = payload.options;
                Endpoint::new(since, cfg, info, payload.state, payload.sram)
                    .map_err(|e| format!("cannot open room {room}: {e}"))
            });
        Opened {
            room,
            creator,
            session,
            open,
            endpoint,
            start,
        }
    }
}
