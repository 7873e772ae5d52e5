//! The rooms as others see them: `framelock rooms` and `framelock servers` pages, a
//! room's location in the fleet, the names offered when one is missing, and this server's
//! load. Reads the rooms, the hosted rooms and the fleet; changes nothing but the
//! outgoing queue. Imports nothing of the other parts of [`Rooms`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Instant;

use crate::session::msg::{Msg, RoomInfo, RoomMsg, ServerInfo, MAX_LISTED, MAX_SERVERS_LISTED};

use super::{info, Room, Rooms};

/// Rooms named in a `NoRoom` answer.
pub(super) const NAMED_ROOMS: usize = 16;

impl Rooms {
    /// This server's load, as `framelock servers` lists it.
    pub fn load(&self) -> ServerInfo {
        let (me, region) = match &self.fleet {
            Some(f) => (f.me.clone(), f.region.clone()),
            None => (String::new(), String::new()),
        };
        let players: usize = self
            .rooms
            .values()
            .map(|r| r.endpoint.players().len())
            .sum();
        let players = players
            + self
                .hosted
                .values()
                .map(|r| usize::from(r.direct) + usize::from(r.relayed) + 1)
                .sum::<usize>();
        let rooms = self.rooms.len() + self.hosted.len();
        ServerInfo {
            server: me,
            region,
            rooms: rooms.min(usize::from(u16::MAX)) as u16,
            max_rooms: self.cfg.max_rooms.min(usize::from(u16::MAX)) as u16,
            players: players.min(usize::from(u16::MAX)) as u16,
        }
    }

    /// The rooms as `framelock rooms` lists them, by name.
    pub fn list(&self, now: Instant) -> Vec<RoomInfo> {
        let mut all: Vec<RoomInfo> = self.rooms.values().map(|r| self.own_info(r, now)).collect();
        all.extend(self.hosted.values().map(|r| r.info(now)));
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// This server's rooms and, in a fleet, every other server's, by name.
    fn fleet_list(&self, now: Instant) -> Vec<RoomInfo> {
        let mut all: BTreeMap<&str, RoomInfo> = BTreeMap::new();
        if let Some(f) = &self.fleet {
            for r in f.rooms.values() {
                all.insert(&r.name, r.clone());
            }
        }
        for r in self.rooms.values() {
            all.insert(&r.name, self.own_info(r, now));
        }
        for r in self.hosted.values() {
            let mut i = r.info(now);
            if let Some(f) = &self.fleet {
                i.server = f.me.clone();
                i.region = f.region.clone();
            }
            all.insert(&r.name, i);
        }
        all.into_values().collect()
    }

    /// A room of this server as the directory and listings show it.
    pub(super) fn own_info(&self, r: &Room, now: Instant) -> RoomInfo {
        let mut i = info(r, now);
        if let Some(f) = &self.fleet {
            i.server = f.me.clone();
            i.region = f.region.clone();
        }
        i
    }

    /// Some open rooms' names, the fleet's included.
    pub(super) fn room_names(&self, n: usize) -> Vec<String> {
        let others = self.fleet.iter().flat_map(|f| f.rooms.keys());
        let mut names: Vec<String> = self
            .rooms
            .keys()
            .chain(self.hosted.keys())
            .chain(others)
            .cloned()
            .collect();
        names.sort();
        names.dedup();
        names.truncate(n);
        names
    }

    /// Where a room is held: here (an empty server), on another server of the fleet, or
    /// nowhere (`NoRoom`).
    pub(super) fn handle_locate(&mut self, from: SocketAddr, room: String) {
        let msg = if self.rooms.contains_key(&room) {
            RoomMsg::Moved {
                room,
                server: String::new(),
            }
        } else if let Some(server) = self.held_elsewhere(&room) {
            RoomMsg::Moved { room, server }
        } else {
            self.stats.wrong_room += 1;
            let rooms = self.room_names(NAMED_ROOMS);
            RoomMsg::NoRoom { room, rooms }
        };
        self.send(from, Msg::Room(msg).encode(0));
    }

    /// The fleet's servers: this one (as it is now) and the others' last heartbeats.
    pub(super) fn handle_servers(&mut self, from: SocketAddr, first: u16) {
        let (total, servers) = page(self.fleet_servers(), first.into(), MAX_SERVERS_LISTED);
        let total = total.min(u32::from(u16::MAX)) as u16;
        let msg = Msg::Room(RoomMsg::Servers {
            total,
            first,
            servers,
        });
        self.send(from, msg.encode(0));
    }

    pub(super) fn handle_list(&mut self, now: Instant, from: SocketAddr, first: u32) {
        let all = if self.fleet.is_some() {
            self.fleet_list(now)
        } else {
            self.list(now)
        };
        let (total, rooms) = page(all, first, MAX_LISTED);
        let msg = Msg::Room(RoomMsg::Rooms {
            total,
            first,
            rooms,
        });
        self.send(from, msg.encode(0));
    }
}

/// A listing's page from entry `first`, at most `max` long, and the listing's length.
fn page<T>(all: Vec<T>, first: u32, max: usize) -> (u32, Vec<T>) {
    let total = all.len().min(u32::MAX as usize) as u32;
    let page = all.into_iter().skip(first as usize).take(max).collect();
    (total, page)
}
