//! Replays of finished rooms (`serve --archive`), as far as the sans-IO server makes them:
//! a room on the server is recorded from the inputs it publishes (`Tape`); a hosted room's
//! host uploads its own recording after the game (`Room/Share`, reassembled by `Incoming`);
//! either way the server hands the result out as a [`Kept`] for its driver to check
//! ([`verify`]) and store (`netplay::archive`). Listing and fetching replays are answered
//! by the driver too ([`ArchiveAsk`]), since only it reads the store.
//!
//! # A room's recording on the server
//! The start state the creator uploaded is frame 0 of every player's game; from the
//! lockstep server's published frames (`Endpoint::published_since`, pulled whenever the
//! room is drained, long before they are forgotten) and the checksums most players agree
//! on (`Endpoint::agreed_checksum`), the server writes the same `.flr` a player writes
//! (see `replay`). Frames are written [`LAG_SECS`] behind the newest one, so that each
//! frame's checksum has arrived before the frames after it are written (a replay compares
//! a checksum only when it comes before the next frame's block).
//!
//! # An upload
//! Accepted only under the session id of a hosted room that is open or ended at most
//! [`SHARE_WITHIN`] ago, from the IP address of its host or of one of its joiners, at most
//! [`ServeConfig::max_replay`](super::ServeConfig::max_replay) bytes long, whose pieces add
//! up to the xxh3 its first piece announced; then [`verify`] reads it whole and checks it
//! was recorded with the room's core and content and ends cleanly. Everything refused is
//! counted by why ([`ServeStats`](super::ServeStats)).
//!
//! Imports the recording format (`replay`) and the session's messages; nothing above `serve`.

use std::collections::VecDeque;
use std::io::{Cursor, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::input::{Inputs, MAX_PLAYERS};
use crate::lockstep::{Frame, Slot};
use crate::replay::{Header, Recorder, RecorderOptions, Replay, Sink, Start, Status};
use crate::session::msg::{OpenRoom, ReplayInfo};
use crate::session::{Endpoint, StartPayload};

/// How far behind the newest published frame a room's recording writes.
pub const LAG_SECS: f64 = 2.0;
/// How long after a hosted room ended its recording may still be uploaded.
pub const SHARE_WITHIN: Duration = Duration::from_secs(300);
/// The players' default checksum interval, as the header names it.
const CHECKSUM_INTERVAL: u32 = 60;
/// Default [`ServeConfig::max_replay`](super::ServeConfig::max_replay): bytes of one
/// replay (its start state included).
pub const DEFAULT_MAX_REPLAY: usize = 16 << 20;

/// A finished room's recording for the archive.
#[derive(Clone, Debug)]
pub struct Kept {
    /// What the listing says of it (its id, length and size are set by [`verify`] or here).
    pub info: ReplayInfo,
    /// The `.flr` file's bytes.
    pub bytes: Vec<u8>,
    /// An upload, to be checked against the room before it is kept; `None`: the server
    /// recorded it itself.
    pub expect: Option<OpenRoom>,
}

/// A request about the archive, for the driver to answer ([`Rooms::answer`](super::Rooms::answer)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArchiveAsk {
    /// `ListReplays`.
    List { from: SocketAddr, first: u16 },
    /// `FetchReplay`.
    Fetch {
        from: SocketAddr,
        id: String,
        offset: u32,
    },
}

/// The id of a recording: its xxh3, 16 hex digits.
pub fn replay_id(bytes: &[u8]) -> String {
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(bytes))
}

/// Reads a recording whole and checks that it is one of the room `expect` describes:
/// the same core (name and version) and content, at least one frame, and a clean end.
/// Returns its listing (the room's name and the server are left for the caller).
pub fn verify(bytes: &[u8], expect: Option<&OpenRoom>) -> Result<ReplayInfo, String> {
    let mut log = Replay::from_reader(Cursor::new(bytes), "upload.flr")
        .map_err(|e| format!("not a recording: {e}"))?;
    let h = log.header().clone();
    if let Some(o) = expect {
        if h.core_name != o.core_name || h.core_version != o.core_version {
            return Err(format!(
                "recorded with {} {}, the room ran {} {}",
                h.core_name, h.core_version, o.core_name, o.core_version
            ));
        }
        if h.content_hash != o.content_hash || h.content_name != o.content_name {
            return Err(format!(
                "recorded with {:?}, the room played {:?}",
                h.content_name, o.content_name
            ));
        }
    }
    let status = loop {
        match log.next_item() {
            Ok(Some(_)) => {}
            Ok(None) => break log.status(),
            Err(e) => return Err(format!("damaged: {e}")),
        }
    };
    let frames = match status {
        Some(Status::Complete { frames }) if frames > 0 => frames,
        Some(Status::Complete { .. }) => return Err("it holds no frame".into()),
        _ => return Err("truncated: it does not end cleanly".into()),
    };
    Ok(ReplayInfo {
        id: replay_id(bytes),
        room: String::new(),
        game: h.content_name.clone(),
        core: h.core_name.clone(),
        players: players_of(&h),
        created_unix: h.created_unix,
        frames,
        fps_milli: (h.frame_rate * 1000.0).round() as u32,
        bytes: bytes.len() as u32,
        server: String::new(),
    })
}

fn players_of(h: &Header) -> String {
    h.players
        .iter()
        .flatten()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A `Sink` both the recorder and the room hold: the recording's bytes in memory.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Sink for Shared {
    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A room's recording on the server, from its game's first frame (see the module docs).
pub(super) struct Tape {
    rec: Recorder<Shared>,
    buf: Shared,
    /// The next frame to copy from the endpoint.
    next: Frame,
    /// Copied and not yet written: from `written` on.
    held: VecDeque<Inputs>,
    written: Frame,
    lag: usize,
    /// Frames were forgotten before they were copied: the recording would skip them.
    broken: bool,
    pub(super) info: ReplayInfo,
}

impl std::fmt::Debug for Tape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tape")
            .field("next", &self.next)
            .field("written", &self.written)
            .finish_non_exhaustive()
    }
}

impl Tape {
    /// A recording of the room `open` from its start state `start`, its game just started
    /// with the players `endpoint` has.
    pub(super) fn start(
        room: &str,
        open: &OpenRoom,
        start: StartPayload,
        endpoint: &Endpoint,
        created_unix: i64,
    ) -> Result<Tape, String> {
        let mut players: [Option<String>; MAX_PLAYERS] = Default::default();
        for p in endpoint.players() {
            if let Slot::Player(peer) = p.slot {
                if let Some(n) = players.get_mut(peer.index()) {
                    *n = Some(
                        crate::lockstep::own_name(&p.name, p.slot)
                            .map_or_else(|| format!("player {}", peer.index() + 1), str::to_string),
                    );
                }
            }
        }
        let header = Header {
            core_name: open.core_name.clone(),
            core_version: open.core_version.clone(),
            content_name: open.content_name.clone(),
            content_hash: open.content_hash,
            core_options: start.options,
            players,
            start: Start::State(start.state),
            start_frame: 0,
            frame_rate: open.fps,
            // Informational: the checksums recorded are those the players reported.
            checksum_interval: CHECKSUM_INTERVAL,
            created_unix,
            // A built-in game is told by its missing content hash; a core is found by name.
            core_path: None,
            content_path: None,
            start_sram: (!start.sram.is_empty()).then_some(start.sram),
            netplay_context: true,
            netplay_mode: Some(endpoint.mode().as_str().to_string()),
            // Players report the low 32 bits of their checksums (`lockstep::msg`).
            checksum_bits: Some(32),
        };
        let buf = Shared::default();
        let rec = Recorder::with_sink(buf.clone(), room, &header, &RecorderOptions::default())
            .map_err(|e| e.to_string())?;
        let info = ReplayInfo {
            room: room.to_string(),
            game: open.content_name.clone(),
            core: open.core_name.clone(),
            players: players_of(&header),
            created_unix,
            fps_milli: (open.fps * 1000.0).round() as u32,
            ..ReplayInfo::default()
        };
        Ok(Tape {
            rec,
            buf,
            next: Frame::ZERO,
            held: VecDeque::new(),
            written: Frame::ZERO,
            lag: (LAG_SECS * open.fps).ceil() as usize,
            broken: false,
            info,
        })
    }

    /// Copies the frames the room published since the last pull and writes those old
    /// enough.
    pub(super) fn pull(&mut self, endpoint: &Endpoint) {
        if self.broken {
            return;
        }
        if let Some((first, frames)) = endpoint.published_since(self.next) {
            if first > self.next {
                tracing::warn!(
                    "room {}: frames {}..{} were forgotten before they were recorded; no replay \
                     is kept of it",
                    self.info.room,
                    self.next.0,
                    first.0
                );
                self.broken = true;
                return;
            }
            for inputs in frames {
                self.held.push_back(*inputs);
                self.next = self.next.next();
            }
        }
        self.write(endpoint, self.lag);
    }

    /// Writes the held frames but the newest `keep`, each with its agreed checksum.
    fn write(&mut self, endpoint: &Endpoint, keep: usize) {
        while self.held.len() > keep {
            let Some(inputs) = self.held.pop_front() else {
                break;
            };
            let frame = self.written;
            self.written = frame.next();
            if self.rec.record_frame(frame, &inputs).is_err() {
                self.broken = true;
                return;
            }
            if let Some(value) = endpoint.agreed_checksum(frame) {
                let _ = self.rec.record_checksum(frame, value);
            }
        }
    }

    /// The finished recording, if the game ran a frame and nothing was lost.
    pub(super) fn finish(mut self, endpoint: &Endpoint) -> Option<Kept> {
        self.pull(endpoint);
        self.write(endpoint, 0);
        if self.broken {
            return None;
        }
        let summary = self.rec.finish().ok()?;
        if summary.frames == 0 {
            return None;
        }
        let bytes = std::mem::take(&mut *self.buf.0.lock().unwrap_or_else(|e| e.into_inner()));
        let mut info = self.info;
        info.id = replay_id(&bytes);
        info.frames = summary.frames;
        info.bytes = bytes.len() as u32;
        Some(Kept {
            info,
            bytes,
            expect: None,
        })
    }
}

/// A recording being uploaded by a hosted room's host: its pieces in order.
#[derive(Debug)]
pub(super) struct Incoming {
    pub(super) session: u32,
    pub(super) total: u32,
    pub(super) hash: u64,
    pub(super) bytes: Vec<u8>,
    /// When its last piece came.
    pub(super) heard: std::time::Instant,
}

impl Incoming {
    /// Takes the piece at `offset` if it is the next one; returns whether it did.
    pub(super) fn take(&mut self, offset: u32, piece: &[u8]) -> bool {
        if offset as usize != self.bytes.len()
            || self.bytes.len() + piece.len() > self.total as usize
        {
            return false;
        }
        self.bytes.extend_from_slice(piece);
        true
    }

    pub(super) fn is_whole(&self) -> bool {
        self.bytes.len() == self.total as usize
    }
}
