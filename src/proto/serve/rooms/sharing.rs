//! The archive's side of the rooms (`serve --archive`, see `serve::archive`): a room's
//! recording started with its game, pulled as it is drained and finished when it closes;
//! hosted rooms' uploads taken piece by piece; requests for the archive's listing and
//! bytes passed to the driver and its answers sent back. Also the rooms as the server's
//! web page shows them. Reads the rooms, changes nothing of them but their recordings.

use std::time::Instant;

use crate::lockstep::Slot;
use crate::session::msg::{Msg, RoomInfo, RoomMsg};
use crate::wire::Transmit;

use super::super::archive::{self, ArchiveAsk, Incoming, Kept, Tape, SHARE_WITHIN};
use super::{hosted::Ended, Rooms};

/// Uploads under way at once at most (each holds at most `max_replay` bytes).
const MAX_SHARES: usize = 64;

/// A room as the server's web page shows it: the listing's entry, and what only this server
/// knows of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoomView {
    pub info: RoomInfo,
    /// The players' names, where the server knows them (rooms on the server).
    pub names: Vec<String>,
    /// Players on a direct path to the host, and relayed by the server.
    pub direct: u8,
    pub relayed: u8,
}

impl Rooms {
    /// This server's rooms for its web page, by name (the fleet's others are in
    /// [`fleet_rooms`](Self::fleet_rooms)).
    pub fn page_rooms(&self, now: Instant) -> Vec<RoomView> {
        let mut all: Vec<RoomView> = self
            .rooms
            .values()
            .map(|r| {
                let names: Vec<String> = r
                    .endpoint
                    .players()
                    .into_iter()
                    .filter(|p| matches!(p.slot, Slot::Player(_)))
                    .map(|p| p.name)
                    .collect();
                RoomView {
                    info: self.own_info(r, now),
                    relayed: names.len().min(255) as u8,
                    names,
                    direct: 0,
                }
            })
            .collect();
        all.extend(self.hosted.values().map(|r| {
            let mut info = r.info(now);
            if let Some(f) = &self.fleet {
                info.server = f.me.clone();
                info.region = f.region.clone();
            }
            RoomView {
                info,
                names: Vec::new(),
                direct: r.direct,
                relayed: r.relayed,
            }
        }));
        all.sort_by(|a, b| a.info.name.cmp(&b.info.name));
        all
    }

    /// The other fleet members' rooms, as the directory last told them.
    pub fn fleet_rooms(&self) -> Vec<RoomInfo> {
        let Some(f) = &self.fleet else {
            return Vec::new();
        };
        f.rooms
            .values()
            .filter(|r| r.server != f.me)
            .cloned()
            .collect()
    }

    /// The fleet's servers as their heartbeats last told them (this one as it is now).
    pub fn fleet_servers(&self) -> Vec<crate::session::msg::ServerInfo> {
        let me = self.load();
        let mut all: Vec<_> = match &self.fleet {
            Some(f) => f
                .servers
                .values()
                .filter(|s| s.server != me.server)
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        all.push(me);
        all.sort_by(|a, b| a.server.cmp(&b.server));
        all
    }

    /// A finished room's recording to check (if it is an upload) and keep.
    pub fn poll_kept(&mut self) -> Option<Kept> {
        self.kept.pop_front()
    }

    /// A request about the archive to answer with [`answer`](Self::answer).
    pub fn poll_ask(&mut self) -> Option<ArchiveAsk> {
        self.asks.pop_front()
    }

    /// Sends the archive's answer to a request, within what the asker may be sent.
    pub fn answer(&mut self, to: std::net::SocketAddr, bytes: Vec<u8>) {
        self.queue(Transmit::new(to, bytes));
    }

    /// No replay is kept of `room`: one of its players asked (`--no-share`).
    pub(super) fn no_share(&mut self, room: &str) {
        if let Some(r) = self.rooms.get_mut(room) {
            r.no_share = true;
            r.start = None;
            r.tape = None;
        }
        if let Some(r) = self.hosted.get_mut(room) {
            r.no_share = true;
        }
    }

    /// Its game started: its recording starts from the start state it kept.
    pub(super) fn start_tape(&mut self, name: &str) {
        let Some(room) = self.rooms.get_mut(name) else {
            return;
        };
        let Some(start) = room.start.take() else {
            return;
        };
        let created = self.unix_now;
        match Tape::start(name, &room.open, start, &room.endpoint, created) {
            Ok(tape) => room.tape = Some(tape),
            Err(e) => tracing::warn!("room {name}: cannot record it: {e}"),
        }
    }

    /// Copies what the room's game published since the last pull into its recording.
    pub(super) fn pull_tape(&mut self, name: &str) {
        if let Some(room) = self.rooms.get_mut(name) {
            if let Some(tape) = &mut room.tape {
                tape.pull(&room.endpoint);
            }
        }
    }

    /// A room's recording finished as the room closes, for the archive.
    pub(super) fn finish_tape(&mut self, room: &mut super::Room) {
        let Some(tape) = room.tape.take() else {
            return;
        };
        if room.no_share {
            return;
        }
        if let Some(kept) = tape.finish(&room.endpoint) {
            self.stats.replays_recorded += 1;
            self.kept.push_back(kept);
        }
    }

    /// A datagram about the archive (`ListReplays`, `FetchReplay`, `Share`), from anyone.
    pub(super) fn archive_datagram(
        &mut self,
        now: Instant,
        from: std::net::SocketAddr,
        datagram: &[u8],
    ) {
        let (session, msg) = match Msg::decode(datagram) {
            Ok((h, Msg::Room(m))) => (h.session, m),
            _ => {
                self.stats.garbage += 1;
                return;
            }
        };
        match msg {
            RoomMsg::ListReplays { first } if self.cfg.archive => {
                self.asks.push_back(ArchiveAsk::List { from, first })
            }
            RoomMsg::FetchReplay { id, offset } if self.cfg.archive => {
                self.asks.push_back(ArchiveAsk::Fetch { from, id, offset })
            }
            // No archive: nothing is kept.
            RoomMsg::ListReplays { first } => {
                let none = RoomMsg::Replays {
                    total: 0,
                    first,
                    replays: Vec::new(),
                };
                self.send(from, Msg::Room(none).encode(0));
            }
            RoomMsg::FetchReplay { id, offset } => {
                let none = RoomMsg::ReplayPiece {
                    id,
                    total: 0,
                    offset,
                    bytes: &[],
                };
                self.send(from, Msg::Room(none).encode(0));
            }
            RoomMsg::Share {
                total,
                hash,
                offset,
                bytes,
            } => self.handle_share(now, from, session, (total, hash, offset), bytes),
            _ => self.stats.garbage += 1,
        }
    }

    /// A piece of a hosted room's recording (see `serve::archive` for what is refused).
    fn handle_share(
        &mut self,
        now: Instant,
        from: std::net::SocketAddr,
        session: u32,
        (total, hash, offset): (u32, u64, u32),
        piece: &[u8],
    ) {
        let ack = |received: usize, done: bool| {
            Msg::Room(RoomMsg::ShareAck {
                received: received as u32,
                done,
            })
            .encode(session)
        };
        if let Some(share) = self.shares.get_mut(&from) {
            if share.session == session && share.total == total && share.hash == hash {
                share.heard = now;
                share.take(offset, piece);
                let (received, whole) = (share.bytes.len(), share.is_whole());
                if whole {
                    if let Some(share) = self.shares.remove(&from) {
                        self.share_done(session, share);
                    }
                }
                return self.send(from, ack(received, whole));
            }
        }
        // A new upload: its first piece.
        if offset != 0 {
            // A piece of one already finished (its last ack was lost), or of nothing.
            if self.ended.get(&session).is_some_and(|e| e.shared) {
                return self.send(from, ack(total as usize, true));
            }
            self.stats.garbage += 1;
            return;
        }
        let room = match self.ended.get(&session) {
            Some(e) => Some((e.host, e.members.clone(), e.no_share, e.shared)),
            None => self
                .hosted
                .values()
                .find(|r| r.session == session)
                .map(|r| (r.host, r.member_ips(), r.no_share, false)),
        };
        let refuse = |rooms: &mut Rooms, reason: String| {
            tracing::info!("replay upload from {from} refused: {reason}");
            rooms.send(from, Msg::Refuse(reason).encode(session));
        };
        if !self.cfg.archive {
            self.stats.uploads_unknown_room += 1;
            return refuse(self, "this server keeps no replays".into());
        }
        let Some((host, members, no_share, shared)) = room else {
            self.stats.uploads_unknown_room += 1;
            return refuse(self, "no room of that session ended here lately".into());
        };
        if host.ip() != from.ip() && !members.contains(&from.ip()) {
            self.stats.uploads_stranger += 1;
            return refuse(self, "you were not in that room".into());
        }
        if no_share {
            self.stats.uploads_not_shared += 1;
            return refuse(
                self,
                "a player of that room asked that no replay be kept".into(),
            );
        }
        if shared {
            return self.send(from, ack(total as usize, true));
        }
        if total as usize > self.cfg.max_replay {
            self.stats.uploads_too_large += 1;
            return refuse(
                self,
                format!(
                    "the recording has {total} bytes; this server keeps replays of at most {}",
                    self.cfg.max_replay
                ),
            );
        }
        if self.shares.len() >= MAX_SHARES {
            let oldest = self
                .shares
                .iter()
                .min_by_key(|(_, s)| s.heard)
                .map(|(a, _)| *a);
            if let Some(a) = oldest {
                self.shares.remove(&a);
            }
        }
        let mut share = Incoming {
            session,
            total,
            hash,
            bytes: Vec::with_capacity(total as usize),
            heard: now,
        };
        share.take(0, piece);
        let (received, whole) = (share.bytes.len(), share.is_whole());
        if whole {
            self.share_done(session, share);
        } else {
            self.shares.insert(from, share);
        }
        self.send(from, ack(received, whole));
    }

    /// A whole upload: its hash checked here, the rest by the archive (`archive::verify`).
    fn share_done(&mut self, session: u32, share: Incoming) {
        if xxhash_rust::xxh3::xxh3_64(&share.bytes) != share.hash {
            self.stats.uploads_forged += 1;
            tracing::info!("replay upload for session {session:08x} refused: its hash differs");
            return;
        }
        let open = match self.ended.get_mut(&session) {
            Some(e) => {
                e.shared = true;
                Some((e.name.clone(), e.open.clone()))
            }
            None => self
                .hosted
                .values_mut()
                .find(|r| r.session == session)
                .map(|r| {
                    r.shared = true;
                    (r.name.clone(), r.open.clone())
                }),
        };
        let Some((room, open)) = open else {
            return;
        };
        self.stats.uploads_received += 1;
        let mut info = crate::session::msg::ReplayInfo {
            room,
            ..Default::default()
        };
        info.id = archive::replay_id(&share.bytes);
        self.kept.push_back(Kept {
            info,
            bytes: share.bytes,
            expect: Some(open),
        });
    }

    /// Forgets uploads gone quiet and hosted rooms ended too long ago.
    pub(super) fn sweep_shares(&mut self, now: Instant) {
        self.shares
            .retain(|_, s| now < s.heard + std::time::Duration::from_secs(30));
        self.ended
            .retain(|_, e: &mut Ended| now < e.at + SHARE_WITHIN);
    }
}
