//! What this server tells its fleet's directory (`serve --directory`): the claims of new
//! rooms' names waiting for its answer, what it was last told of each room, the writes
//! queued for it, and its news (the other servers' rooms, a name held elsewhere). A
//! claimed name's upload starts in `opens`. Imports the fleet's vocabulary
//! ([`serve::fleet`](super::super::fleet)) and the facade's view of a room; nothing of the
//! other parts of [`Rooms`] and nothing of the rooms' endpoints.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::session::msg::{Msg, OpenRoom, RoomInfo, RoomMsg};

use super::super::fleet::{DirNews, DirOp, Fleet};
use super::{info, Rooms, ServeEvent};

/// How often a fleet member compares its rooms with what it wrote in the directory, and
/// sends its load for the heartbeat.
const PUBLISH_EVERY: Duration = Duration::from_secs(1);
/// Longest an Open waits for the directory's answer to its name's claim; past this the room
/// opens here alone (and is written to the directory when it answers again).
const CLAIM_WAIT: Duration = Duration::from_secs(2);

pub(super) struct Claim {
    pub(super) from: SocketAddr,
    pub(super) open: OpenRoom,
    pub(super) since: Instant,
}

impl Rooms {
    /// Makes this server a member of a fleet: `me` is its public address ("ADDR:PORT"),
    /// `region` its region. Its rooms' names are then claimed in the directory before they
    /// open ([`poll_directory`](Self::poll_directory)), and the directory's news
    /// ([`handle_directory`](Self::handle_directory)) answers for the other servers' rooms.
    pub fn with_fleet(mut self, now: Instant, me: String, region: String) -> Rooms {
        self.fleet = Some(Fleet::new(me, region));
        self.publish_due = Some(now);
        self
    }

    /// The fleet as this server last heard of it.
    pub fn fleet(&self) -> Option<&Fleet> {
        self.fleet.as_ref()
    }

    /// Whether Opens wait for the directory's answer (its news comes on no socket: the
    /// driver looks for it often meanwhile).
    pub fn awaits_directory(&self) -> bool {
        !self.claims.is_empty()
    }

    /// The next thing to write in the directory.
    pub fn poll_directory(&mut self) -> Option<DirOp> {
        self.directory_out.pop_front()
    }

    /// News from the directory.
    pub fn handle_directory(&mut self, now: Instant, news: DirNews) {
        let Some(fleet) = &mut self.fleet else {
            return;
        };
        fleet.apply(&news);
        match news {
            DirNews::Claimed(room) => {
                if let Some(c) = self.claims.remove(&room) {
                    self.start_upload(now, c.from, room, c.open);
                }
            }
            DirNews::Unreachable(room) => {
                if let Some(c) = self.claims.remove(&room) {
                    self.events.push_back(ServeEvent::ClaimUnanswered {
                        room: room.clone(),
                        why: "the directory is unreachable".into(),
                    });
                    self.start_upload(now, c.from, room, c.open);
                }
            }
            DirNews::Taken { room, server } => {
                self.published.remove(&room);
                if let Some(c) = self.claims.remove(&room) {
                    self.refuse(c.from, format!("room {room} exists already (on {server})"));
                }
            }
            _ => {}
        }
    }

    /// Compares the rooms with what the directory was told, and queues what changed.
    pub(super) fn publish(&mut self, now: Instant) {
        let Some(fleet) = &self.fleet else {
            return;
        };
        if self.publish_due.is_some_and(|t| now < t) {
            return;
        }
        self.publish_due = Some(now + PUBLISH_EVERY);
        let me = fleet.me.clone();
        let region = fleet.region.clone();
        let infos: Vec<RoomInfo> = self
            .rooms
            .values()
            .map(|r| info(r, now))
            .chain(self.hosted.values().map(|r| r.info(now)))
            .collect();
        for mut i in infos {
            i.server = me.clone();
            i.region = region.clone();
            let same = self.published.get(&i.name).is_some_and(|p| {
                RoomInfo {
                    age_secs: i.age_secs,
                    ..p.clone()
                } == i
            });
            if !same {
                self.published.insert(i.name.clone(), i.clone());
                self.directory_out.push_back(DirOp::Update(i));
            }
        }
        let gone: Vec<String> = self
            .published
            .keys()
            .filter(|n| {
                !self.rooms.contains_key(*n)
                    && !self.hosted.contains_key(*n)
                    && !self.claims.contains_key(*n)
                    && !self.uploads.values().any(|u| &u.room == *n)
            })
            .cloned()
            .collect();
        for name in gone {
            self.published.remove(&name);
            self.directory_out.push_back(DirOp::Remove(name));
        }
        let expired: Vec<String> = self
            .claims
            .iter()
            .filter(|(_, c)| now >= c.since + CLAIM_WAIT)
            .map(|(n, _)| n.clone())
            .collect();
        for room in expired {
            if let Some(c) = self.claims.remove(&room) {
                self.events.push_back(ServeEvent::ClaimUnanswered {
                    room: room.clone(),
                    why: format!("no answer from the directory in {} s", CLAIM_WAIT.as_secs()),
                });
                self.start_upload(now, c.from, room, c.open);
            }
        }
        let load = self.load();
        self.directory_out.push_back(DirOp::Load(load));
    }

    /// The server of the fleet that holds the room, if another one does.
    pub(super) fn held_elsewhere(&self, name: &str) -> Option<String> {
        if self.rooms.contains_key(name) || self.hosted.contains_key(name) {
            return None;
        }
        let fleet = self.fleet.as_ref()?;
        fleet.rooms.get(name).map(|r| r.server.clone())
    }

    pub(super) fn send_moved(&mut self, to: SocketAddr, room: String, server: String) {
        self.events.push_back(ServeEvent::Moved {
            addr: to,
            room: room.clone(),
            server: server.clone(),
        });
        self.send(to, Msg::Room(RoomMsg::Moved { room, server }).encode(0));
    }
}
