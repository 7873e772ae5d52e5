//! Opening a room on a dedicated server, sans-IO: the creator's side ([`RoomOpener`]) and the
//! server's ([`Upload`]).
//!
//! ```text
//! C -> S  Room/Open    room name (or none), seats, K, fps, password or not, core, content,
//!                      the start payload's sizes and xxh3          (resent every 250 ms)
//! S -> C  Room/Opened  the room's name; the header carries its session id
//!      or Refuse       "the server is full (500 rooms)", "room quiet-fox exists", ...
//!      or Room/Moved   full, and another server of its fleet and region has room: the
//!                      creator asks that one instead
//! C -> S  StateChunk x N   the packed start payload, as a host sends it to a joiner
//! S -> C  StateAck         cumulative index + bitmap; the last one says "verified"
//! ```
//! The creator then joins its own room like any player (a Hello naming the room, from the
//! same address): the server keeps slot 0 for it, and the creator checks other joiners'
//! passwords, which the server relays (`msg::RelayStep`).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::msg::{Msg, OpenRoom, RoomMsg, StateAck, CHUNK_SIZE, ROOM_KEY_LEN};
use super::payload::{Packed, StartPayload, MAX_PAYLOAD};
use super::transfer::{ChunkOutcome, Progress, Receiver, Rtt, Sender};
use super::{Dropped, Handled, SessionError, Transmit, HANDSHAKE_TIMEOUT, HELLO_INTERVAL};
use crate::wire::{Header, Kind};

/// Largest packed start payload a server takes from a room's creator: far above any core's
/// savestate seen (FBNeo's largest are a few MiB), far below what would let a few forged
/// Opens exhaust the server's memory.
pub const MAX_UPLOAD: usize = 32 << 20;
/// Unprompted copies of the server's final "verified" ack.
const FINAL_ACK_COPIES: u8 = 3;

/// What a [`RoomOpener`] reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenEvent {
    /// The server opened the room: the upload of the start state begins.
    Opened {
        /// The room's name.
        room: String,
        /// Its session id.
        session: u32,
    },
    /// The server has the whole start state: join the room now.
    Uploaded {
        /// The room's name.
        room: String,
        /// Its session id.
        session: u32,
    },
    /// The server is full and sent the creator to another server of its fleet, which it
    /// asks now.
    Moved {
        /// That server.
        server: SocketAddr,
    },
    /// The server refused the room, or went silent.
    Failed(SessionError),
}

/// Redirects a creator follows at most, so that two servers sending it to each other
/// cannot keep it busy.
const MAX_MOVES: u8 = 3;

#[derive(Debug)]
enum Phase {
    Asking { next: Instant },
    Uploading { room: String, sender: Box<Sender> },
    Done,
}

/// The creator's side of opening a room. Calling order as for the other session machines.
#[derive(Debug)]
pub struct RoomOpener {
    server: SocketAddr,
    open: OpenRoom,
    packed: Arc<[u8]>,
    phase: Phase,
    session: u32,
    started: Instant,
    last_heard: Option<Instant>,
    queue: VecDeque<Vec<u8>>,
    events: VecDeque<OpenEvent>,
    timeout: Duration,
    moves: u8,
    /// A hosted room's secret from its `Opened` (zeros until then, and for a room on the
    /// server).
    room_key: [u8; ROOM_KEY_LEN],
}

crate::wire::impl_machine!(RoomOpener, OpenEvent, counts_drops = false);

impl RoomOpener {
    /// `open`'s payload fields are filled in from `payload`.
    pub fn new(
        now: Instant,
        server: SocketAddr,
        mut open: OpenRoom,
        payload: &StartPayload,
    ) -> Result<RoomOpener, SessionError> {
        let Packed {
            raw_len,
            hash,
            bytes,
        } = payload.pack()?;
        if bytes.len() > MAX_UPLOAD {
            return Err(SessionError::PayloadTooBig);
        }
        open.raw_len = raw_len;
        open.packed_len = bytes.len() as u32;
        open.payload_hash = hash;
        Ok(RoomOpener::asking(now, server, open, bytes.into()))
    }

    /// Opens a room the creator hosts itself (`open.hosted`): nothing is uploaded, and the
    /// room is there once the server said `Opened`.
    pub fn hosted(now: Instant, server: SocketAddr, mut open: OpenRoom) -> RoomOpener {
        open.hosted = true;
        (open.raw_len, open.packed_len, open.payload_hash) = (0, 0, 0);
        RoomOpener::asking(now, server, open, Arc::from(Vec::new()))
    }

    fn asking(now: Instant, server: SocketAddr, open: OpenRoom, packed: Arc<[u8]>) -> RoomOpener {
        RoomOpener {
            server,
            open,
            packed,
            phase: Phase::Asking { next: now },
            session: 0,
            started: now,
            last_heard: None,
            queue: VecDeque::new(),
            events: VecDeque::new(),
            timeout: HANDSHAKE_TIMEOUT,
            moves: 0,
            room_key: [0; ROOM_KEY_LEN],
        }
    }

    /// A hosted room's secret, once the server opened it: the host tags what it tells the
    /// server with keys made from it (`wire::keys::Keys::for_room`).
    pub fn room_key(&self) -> [u8; ROOM_KEY_LEN] {
        self.room_key
    }

    /// The room's session id, once the server opened it.
    pub fn session(&self) -> u32 {
        self.session
    }

    /// The server it opens the room on.
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// Bytes of the start state the server has acknowledged, and in all.
    pub fn progress(&self) -> Progress {
        let total = self.packed.len();
        let done = match &self.phase {
            Phase::Uploading { sender, .. } => (sender.acked() as usize * CHUNK_SIZE).min(total),
            _ => 0,
        };
        Progress { done, total }
    }

    /// A datagram from `from`: dropped unless it is the server's answer.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Handled<'static> {
        if from != self.server {
            return Handled::Dropped(Dropped::NotFromHost(from));
        }
        let (header, msg) = match Msg::decode(datagram) {
            Ok(m) => m,
            Err(e) => return Handled::Dropped(e.into()),
        };
        if !matches!(self.phase, Phase::Asking { .. }) && header.session != self.session {
            return Handled::Dropped(Dropped::WrongSession {
                got: header.session,
                want: self.session,
            });
        }
        self.last_heard = Some(now);
        match (msg, &mut self.phase) {
            (Msg::Room(RoomMsg::Opened { room, key }), Phase::Asking { .. })
                if header.session != 0 =>
            {
                self.session = header.session;
                self.room_key = key;
                if self.open.hosted {
                    self.events.push_back(OpenEvent::Opened {
                        room: room.clone(),
                        session: header.session,
                    });
                    self.events.push_back(OpenEvent::Uploaded {
                        room,
                        session: header.session,
                    });
                    self.phase = Phase::Done;
                    return Handled::Taken;
                }
                let sender = Sender::new(now, self.packed.clone(), CHUNK_SIZE, Rtt::default());
                self.events.push_back(OpenEvent::Opened {
                    room: room.clone(),
                    session: header.session,
                });
                self.phase = Phase::Uploading {
                    room,
                    sender: Box::new(sender),
                };
                self.check_done();
            }
            (Msg::Room(RoomMsg::Moved { server, .. }), Phase::Asking { .. }) => {
                match server.parse::<SocketAddr>() {
                    Ok(to) if self.moves < MAX_MOVES && to.is_ipv4() == self.server.is_ipv4() => {
                        self.moves += 1;
                        self.server = to;
                        self.open.cookie = Default::default();
                        self.phase = Phase::Asking { next: now };
                        self.started = now;
                        self.last_heard = None;
                        self.events.push_back(OpenEvent::Moved { server: to });
                    }
                    _ => {
                        self.phase = Phase::Done;
                        let reason = format!("the server is full and sent us to {server:?}");
                        self.events
                            .push_back(OpenEvent::Failed(SessionError::RefusedByServer(reason)));
                    }
                }
            }
            (Msg::Retry(cookie), Phase::Asking { next }) => {
                // Sent again at once, with the proof of our address.
                self.open.cookie = cookie;
                *next = now;
            }
            (Msg::Refuse(reason), Phase::Asking { .. }) => {
                self.phase = Phase::Done;
                self.events
                    .push_back(OpenEvent::Failed(SessionError::RefusedByServer(reason)));
            }
            (Msg::StateAck(ack), Phase::Uploading { sender, .. }) => {
                sender.handle_ack(now, &ack);
                self.check_done();
            }
            _ => {}
        }
        Handled::Taken
    }

    fn check_done(&mut self) {
        if let Phase::Uploading { room, sender } = &self.phase {
            if sender.is_complete() {
                self.events.push_back(OpenEvent::Uploaded {
                    room: room.clone(),
                    session: self.session,
                });
                self.phase = Phase::Done;
            }
        }
    }

    /// Resends and timeouts due by `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if matches!(self.phase, Phase::Done) {
            return;
        }
        let silent_since = self.last_heard.unwrap_or(self.started);
        if now >= silent_since + self.timeout {
            let e = match self.last_heard {
                None => SessionError::NoAnswer {
                    addr: self.server,
                    secs: self.timeout.as_secs(),
                },
                Some(_) => SessionError::HostSilent {
                    secs: self.timeout.as_secs(),
                },
            };
            self.phase = Phase::Done;
            self.events.push_back(OpenEvent::Failed(e));
            return;
        }
        match &mut self.phase {
            Phase::Asking { next } if now >= *next => {
                *next = now + HELLO_INTERVAL;
                let msg = Msg::Room(RoomMsg::Open(self.open.clone()));
                self.queue.push_back(msg.encode(0));
            }
            Phase::Uploading { sender, .. } => sender.detect_losses(now),
            _ => {}
        }
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let bytes = match self.queue.pop_front() {
            Some(b) => b,
            None => {
                let Phase::Uploading { sender, .. } = &mut self.phase else {
                    return None;
                };
                let (index, seq) = sender.poll_chunk(now)?;
                Msg::StateChunk {
                    index,
                    seq,
                    data: sender.chunk(index),
                }
                .encode(self.session)
            }
        };
        Some(Transmit::new(self.server, bytes))
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<OpenEvent> {
        self.events.pop_front()
    }

    /// When `handle_timeout` or `poll_transmit` has work next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.queue.is_empty() {
            return Some(self.started);
        }
        let silence = self.last_heard.unwrap_or(self.started) + self.timeout;
        let own = match &self.phase {
            Phase::Asking { next } => Some(*next),
            Phase::Uploading { sender, .. } => sender.poll_timeout(),
            Phase::Done => return None,
        };
        Some(own.map_or(silence, |t| t.min(silence)))
    }
}

/// The server's side of one creator's upload.
#[derive(Debug)]
pub struct Upload {
    /// What the creator asked for.
    pub open: OpenRoom,
    /// The room's session id.
    pub session: u32,
    /// The room's name.
    pub room: String,
    creator: SocketAddr,
    rx: Receiver,
    last_heard: Instant,
    /// The whole state arrived and was verified (the payload itself went to the room: an
    /// upload keeps no copy).
    done: bool,
    /// Final acks still to send unprompted.
    copies: u8,
    /// Every chunk is in and the server is checking the payload (the receiver gave it up).
    checking: bool,
    /// The whole payload, from the last chunk until `poll_packed` takes it.
    packed: Option<Vec<u8>>,
}

impl Upload {
    /// Checks the sizes the creator announced; `Err` says why they are refused.
    pub fn new(
        now: Instant,
        creator: SocketAddr,
        room: String,
        session: u32,
        open: OpenRoom,
    ) -> Result<Upload, String> {
        let packed = open.packed_len as usize;
        let plausible = lz4_flex::block::get_maximum_output_size(open.raw_len as usize);
        if packed > MAX_UPLOAD || open.raw_len as usize > MAX_PAYLOAD || packed > plausible {
            return Err(format!(
                "the start state is too big for this server ({} MiB at most)",
                MAX_UPLOAD >> 20
            ));
        }
        Ok(Upload {
            rx: Receiver::new(packed, CHUNK_SIZE),
            open,
            session,
            room,
            creator,
            last_heard: now,
            done: false,
            copies: 0,
            checking: false,
            packed: None,
        })
    }

    /// Who opens the room.
    pub fn creator(&self) -> SocketAddr {
        self.creator
    }

    /// The room's `Opened` answer (also the answer to a resent Open).
    pub fn opened(&self) -> Vec<u8> {
        Msg::Room(RoomMsg::Opened {
            room: self.room.clone(),
            key: [0; ROOM_KEY_LEN],
        })
        .encode(self.session)
    }

    /// A datagram from the creator: a chunk. Once every chunk is in,
    /// [`poll_packed`](Self::poll_packed) has the packed payload: the server unpacks and
    /// checks it (`StartPayload::unpack`, costly for a big state) off the loop that answers
    /// datagrams, and says it checked out with [`verified`](Self::verified). Meanwhile
    /// chunks only show the creator is there.
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Handled<'static> {
        let (header, index, seq, data) = match Msg::decode(datagram) {
            Ok((header, Msg::StateChunk { index, seq, data })) => (header, index, seq, data),
            Ok((header, _)) => return Handled::Dropped(Dropped::Unexpected(header.kind)),
            Err(e) => return Handled::Dropped(e.into()),
        };
        if header.session != self.session {
            return Handled::Dropped(Dropped::WrongSession {
                got: header.session,
                want: self.session,
            });
        }
        self.last_heard = now;
        if self.done {
            // The creator missed our final ack.
            self.copies = self.copies.max(1);
            return Handled::Taken;
        }
        if self.checking {
            return Handled::Taken;
        }
        match self.rx.handle_chunk(now, index, seq, data) {
            ChunkOutcome::Invalid => return Handled::Dropped(Dropped::BadChunk),
            ChunkOutcome::New if self.rx.is_full() => {
                self.checking = true;
                self.packed = Some(self.rx.take_packed());
            }
            _ => {}
        }
        Handled::Taken
    }

    /// The packed payload, once, when the last chunk came in (see `handle_datagram`).
    pub fn poll_packed(&mut self) -> Option<Vec<u8>> {
        self.packed.take()
    }

    /// The payload `poll_packed` returned checked out: the creator is told so.
    pub fn verified(&mut self) {
        self.checking = false;
        self.done = true;
        self.copies = FINAL_ACK_COPIES;
    }

    /// Whether the creator has been silent for the handshake timeout.
    pub fn expired(&self, now: Instant) -> bool {
        // Its payload is being checked: the check's answer decides (a room then opens, and
        // closes if nobody comes to it).
        !self.checking && now >= self.last_heard + HANDSHAKE_TIMEOUT
    }

    /// The whole start state is in and verified.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The next ack to send.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let ack = if self.done {
            if self.copies == 0 {
                return None;
            }
            self.copies -= 1;
            StateAck {
                cum: self.rx.count(),
                latest_seq: self.rx.latest_seq(),
                verified: true,
                bitmap: Vec::new(),
            }
        } else if self.checking {
            return None;
        } else {
            self.rx.poll_ack(now, false)?
        };
        Some(Transmit::new(
            self.creator,
            Msg::StateAck(ack).encode(self.session),
        ))
    }

    /// When `poll_transmit` has an ack due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let ack = if self.done {
            (self.copies > 0).then_some(self.last_heard)
        } else if self.checking {
            None
        } else {
            self.rx.poll_timeout()
        };
        let silence = (!self.checking).then_some(self.last_heard + HANDSHAKE_TIMEOUT);
        [ack, silence].into_iter().flatten().min()
    }
}

/// Whether `datagram` is a session-layer datagram of `kind` (any session id).
pub fn is_kind(datagram: &[u8], kind: Kind) -> bool {
    matches!(Header::parse(datagram), Ok((h, _)) if h.kind == kind)
}
