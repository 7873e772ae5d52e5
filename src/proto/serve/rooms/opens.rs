//! The opening of rooms: a creator's Open (its limits per address, the server's room and
//! memory caps, the room's name), its start state's upload, the off-loop job that checks
//! it and builds the room's endpoint (`serve::opening`), and the room made from what the
//! job brings. Holds the uploads, the jobs and the opening counts per address. Imports
//! the session's upload and endpoint settings, the job, and the directory's `Claim` (an
//! Open waits for its name's); nothing else of the other parts of [`Rooms`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::RngCore;

use crate::lockstep;
use crate::session::guard::prefix;
use crate::session::msg::{OpenRoom, RoomInfo};
use crate::session::{EndpointConfig, HostConfig, SessionInfo, Upload};

use super::super::fleet::{DirOp, Fleet};
use super::super::names::{room_name, valid_room_name};
use super::super::opening::{OpenJob, Opened};
use super::directory::Claim;
use super::{Room, Rooms, ServeEvent};

impl Rooms {
    pub(super) fn handle_open(&mut self, now: Instant, from: SocketAddr, open: OpenRoom) {
        if !self.proven(now, from, &open.cookie) {
            return;
        }
        if self.claims.values().any(|c| c.from == from) {
            // A resent Open while its name's claim is under way: answered when it is done.
            return;
        }
        if let Some(room) = self.by_addr.get(&from) {
            let reason = format!("you are in room {room} already");
            return self.refuse(from, reason);
        }
        let (start, count) = self.opens.entry(prefix(from.ip())).or_insert((now, 0));
        if now >= *start + Duration::from_secs(60) {
            (*start, *count) = (now, 0);
        }
        if *count >= self.cfg.opens_per_minute {
            let count = *count;
            self.stats.rate_limited += 1;
            let reason = format!(
                "too many rooms opened from your address in the last minute ({count} at most); \
                 try again soon"
            );
            return self.refuse(from, reason);
        }
        let mine = prefix(from.ip());
        let held = self
            .rooms
            .values()
            .map(|r| r.creator)
            .chain(self.hosted.values().map(|r| r.host))
            .chain(
                self.uploads
                    .iter()
                    .filter(|(_, u)| !self.rooms.contains_key(&u.room))
                    .map(|(a, _)| *a),
            )
            .filter(|a| prefix(a.ip()) == mine)
            .count();
        if held >= self.cfg.rooms_per_address {
            self.stats.rate_limited += 1;
            let reason = format!(
                "your address has {held} rooms open, the most this server allows; close one first"
            );
            return self.refuse(from, reason);
        }
        // A finished upload is a room already, until its creator's Hello retires it.
        let uploading = self.uploads.values().filter(|u| !u.is_done()).count();
        if self.len() + uploading + self.claims.len() >= self.cfg.max_rooms {
            self.stats.full += 1;
            if let Some(spare) = self.fleet.as_ref().and_then(Fleet::spare_server) {
                let server = spare.server.clone();
                return self.send_moved(from, open.room, server);
            }
            let reason = format!("the server is full ({} rooms)", self.cfg.max_rooms);
            return self.refuse(from, reason);
        }
        let raw = open.raw_len as usize;
        if raw > self.cfg.max_state {
            let reason = format!(
                "the start state is too big for this server ({} MiB unpacked at most)",
                self.cfg.max_state >> 20
            );
            return self.refuse(from, reason);
        }
        if self.memory() + state_bytes(&open) > self.cfg.max_memory {
            self.stats.full += 1;
            let reason = format!(
                "the server is full: its rooms hold {} MiB of start states, the most it keeps",
                self.cfg.max_memory >> 20
            );
            return self.refuse(from, reason);
        }
        let name = if open.room.is_empty() {
            loop {
                let name = room_name(&mut self.rng);
                if !self.name_taken(&name) {
                    break name;
                }
            }
        } else if !valid_room_name(&open.room) {
            let reason = format!(
                "{:?} is no room name: use 1 to 32 letters, digits, '-' or '_'",
                open.room
            );
            return self.refuse(from, reason);
        } else if let Some(server) = self.held_elsewhere(&open.room) {
            return self.refuse(
                from,
                format!("room {} exists already (on {server})", open.room),
            );
        } else if self.name_taken(&open.room) {
            return self.refuse(from, format!("room {} exists already", open.room));
        } else {
            open.room.clone()
        };
        if let Some(fleet) = &self.fleet {
            if fleet.online {
                let mut i = RoomInfo {
                    name: name.clone(),
                    content: open.content_name.clone(),
                    core: open.core_name.clone(),
                    players: 0,
                    seats: open.players,
                    password: open.password,
                    playing: false,
                    age_secs: 0,
                    spectators: 0,
                    mode: open.mode.unwrap_or(self.cfg.lockstep.mode),
                    region: fleet.region.clone(),
                    server: fleet.me.clone(),
                };
                i.content.truncate(crate::session::msg::MAX_TEXT);
                self.published.insert(name.clone(), i.clone());
                self.directory_out.push_back(DirOp::Claim(i));
                let since = now;
                self.claims.insert(name, Claim { from, open, since });
                return;
            }
            // Written to the directory when it answers again (`publish`).
            self.events.push_back(ServeEvent::ClaimUnanswered {
                room: name.clone(),
                why: "the directory is unreachable".into(),
            });
        }
        self.start_upload(now, from, name, open);
    }

    /// The room's name is this server's: the creator uploads its start state.
    pub(super) fn start_upload(
        &mut self,
        now: Instant,
        from: SocketAddr,
        name: String,
        open: OpenRoom,
    ) {
        if open.hosted {
            return self.open_hosted(now, from, name, open);
        }
        let session = self.fresh_session();
        match Upload::new(now, from, name, session, open) {
            Ok(upload) => {
                if let Some((_, count)) = self.opens.get_mut(&prefix(from.ip())) {
                    *count += 1;
                }
                let bytes = upload.opened();
                self.by_session.insert(session, upload.room.clone());
                self.uploads.insert(from, upload);
                self.send(from, bytes);
            }
            Err(reason) => self.refuse(from, reason),
        }
    }

    /// A session id no room has.
    pub(super) fn fresh_session(&mut self) -> u32 {
        loop {
            let id = self.rng.next_u32();
            if id != 0 && !self.by_session.contains_key(&id) {
                break id;
            }
        }
    }

    /// Start-state bytes the rooms and uploads hold, as their Opens declared them.
    fn memory(&self) -> usize {
        let rooms = self.rooms.values().map(|r| state_bytes(&r.open));
        let uploads = self
            .uploads
            .values()
            .filter(|u| !self.rooms.contains_key(&u.room))
            .map(|u| state_bytes(&u.open));
        let claims = self.claims.values().map(|c| state_bytes(&c.open));
        rooms.chain(uploads).chain(claims).sum()
    }

    fn name_taken(&self, name: &str) -> bool {
        self.rooms.contains_key(name)
            || self.hosted.contains_key(name)
            || self.claims.contains_key(name)
            || self.uploads.values().any(|u| u.room == name)
            || self.held_elsewhere(name).is_some()
    }

    /// The creator's upload is whole: its check and the room's endpoint are made off the
    /// loop (`opening`), and the room opens when [`handle_opened`](Self::handle_opened)
    /// brings them.
    pub(super) fn open_job(&mut self, now: Instant, creator: SocketAddr, packed: Vec<u8>) {
        let Some(upload) = self.uploads.get(&creator) else {
            return;
        };
        let mut open = upload.open.clone();
        let mut entropy = [0u8; 32];
        self.rng.fill_bytes(&mut entropy);
        let mut host = HostConfig::new(upload.session, entropy, open.fps);
        host.max_players = open.players;
        host.start_with = open.start_with;
        host.max_spectators = self.cfg.max_spectators;
        host.host_is_player = false;
        // The creator's choices, else the server's; K 0 is the mode's default.
        let mode = open.mode.unwrap_or(self.cfg.lockstep.mode);
        let k = match open.keyframe_interval {
            0 => mode.default_keyframe_interval() as u8,
            k => k,
        };
        open.mode = Some(mode);
        open.keyframe_interval = k;
        host.keyframe_interval = k;
        host.mode = mode;
        host.creator = Some(creator);
        host.relayed_password = open.password;
        let cfg = EndpointConfig {
            host,
            lockstep: lockstep::Config {
                mode,
                ..self.cfg.lockstep.clone()
            }
            .with_keyframe_interval(u32::from(k)),
            lobby_timeout: None,
        };
        let info = SessionInfo {
            core_name: open.core_name.clone(),
            core_version: open.core_version.clone(),
            content_name: open.content_name.clone(),
            content_hash: open.content_hash,
            options: Vec::new(),
            player_name: open.player_name.clone(),
        };
        let keep_start = self.cfg.archive && !open.no_share;
        self.jobs.push_back(OpenJob {
            room: upload.room.clone(),
            creator,
            session: upload.session,
            open,
            cfg,
            info,
            packed,
            since: now,
            keep_start,
        });
    }

    /// The next room to check and build off the loop: run it ([`OpenJob::run`]) and give
    /// what it made to [`handle_opened`](Self::handle_opened).
    pub fn poll_job(&mut self) -> Option<OpenJob> {
        self.jobs.pop_front()
    }

    /// Runs every waiting job here and now (the simulated worlds, on a manual clock, and
    /// the fuzzer: nothing else needs answering meanwhile).
    pub fn run_jobs(&mut self, now: Instant) {
        while let Some(job) = self.poll_job() {
            let opened = job.run();
            self.handle_opened(now, opened);
        }
    }

    /// A room's start state was checked and its endpoint built (or refused): it opens and
    /// waits for its creator's Hello and the other players'.
    pub fn handle_opened(&mut self, now: Instant, opened: Opened) {
        let Opened {
            room: name,
            creator,
            session,
            open,
            endpoint,
            start,
        } = opened;
        // Its creator's upload may have been given up meanwhile (the server shut it).
        if !self
            .uploads
            .get(&creator)
            .is_some_and(|u| u.session == session && u.room == name)
        {
            return;
        }
        match endpoint {
            Ok(endpoint) => {
                let no_share = open.no_share;
                if let Some(u) = self.uploads.get_mut(&creator) {
                    u.verified();
                }
                self.stats.rooms_opened += 1;
                self.events.push_back(ServeEvent::Opened {
                    room: name.clone(),
                    creator,
                    seats: open.players,
                    core: open.core_name.clone(),
                    content: open.content_name.clone(),
                    password: open.password,
                });
                self.by_addr.insert(creator, name.clone());
                self.rooms.insert(
                    name.clone(),
                    Room {
                        name: name.clone(),
                        endpoint,
                        creator,
                        open,
                        opened: now,
                        started: false,
                        due: None,
                        addrs: HashMap::new(),
                        spectator_names: HashMap::new(),
                        // Until its creator comes to it from the upload.
                        empty_since: Some(now),
                        left_on_purpose: false,
                        goodbyes: HashMap::new(),
                        no_share,
                        start,
                        tape: None,
                    },
                );
                self.reschedule(&name);
            }
            Err(reason) => {
                if let Some(u) = self.uploads.remove(&creator) {
                    self.by_session.remove(&u.session);
                }
                self.refuse(creator, reason);
            }
        }
    }
}

/// Bytes a room's start state takes, packed and unpacked, as its Open declares them (the
/// unpacking stops at the declared size).
fn state_bytes(open: &OpenRoom) -> usize {
    open.raw_len as usize + open.packed_len as usize
}
