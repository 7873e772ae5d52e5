//! A room's endpoint drained after it took a datagram or a timeout: its datagrams queued,
//! its events turned into routes (who is in which room, who is trusted to receive) and
//! the server's log lines, its next timer filed, and its closing once nobody is in it.
//! Imports the endpoint's events (and the directory's `DirOp`, to forget a closed room
//! there); nothing of the other parts of [`Rooms`].

use std::time::Instant;

use crate::session::{EndpointEvent, PlayerOutReason, SessionLeftReason};
use crate::wire::Transmit;

use super::super::fleet::DirOp;
use super::{Rooms, ServeEvent, EMPTY_GRACE};

impl Rooms {
    /// Drains a room's events and datagrams, and closes it when its time has come.
    pub(super) fn drain_room(&mut self, now: Instant, name: &str) {
        let Some(room) = self.rooms.get_mut(name) else {
            return;
        };
        let sent: Vec<Transmit> = std::iter::from_fn(|| room.endpoint.poll_transmit(now)).collect();
        // Queued before the events below forget a departed player's address: its goodbye
        // is among these.
        for t in sent {
            self.queue(t);
        }
        let Some(room) = self.rooms.get_mut(name) else {
            return;
        };
        while let Some(ev) = room.endpoint.poll_event() {
            let room_name = room.name.clone();
            match ev {
                EndpointEvent::Admitted { slot, name, addr } => {
                    self.by_addr.insert(addr, room_name.clone());
                    room.addrs.insert(slot.number(), addr);
                    if addr == room.creator {
                        // The creator's upload is over once it joined its room.
                        self.uploads.remove(&addr);
                    }
                    if slot.is_spectator() {
                        room.spectator_names.insert(slot.number(), name);
                        continue;
                    }
                    self.events.push_back(ServeEvent::Admitted {
                        room: room_name,
                        slot: slot.number(),
                        name,
                        addr,
                    });
                }
                EndpointEvent::Refused { addr, reason } => {
                    self.events.push_back(ServeEvent::Refused { addr, reason })
                }
                EndpointEvent::Started { slots } => {
                    room.started = true;
                    self.events.push_back(ServeEvent::Started {
                        room: room_name,
                        players: slots.len(),
                    });
                }
                EndpointEvent::PlayerJoined {
                    slot,
                    name,
                    from_frame,
                } => self.events.push_back(ServeEvent::PlayerJoined {
                    room: room_name,
                    slot: slot.0,
                    name,
                    from_frame,
                }),
                EndpointEvent::Watching { slot, frame } => {
                    self.events.push_back(ServeEvent::Watching {
                        room: room_name,
                        name: room
                            .spectator_names
                            .get(&slot.0)
                            .cloned()
                            .unwrap_or_default(),
                        frame,
                        watching: room.endpoint.spectator_count(),
                    })
                }
                EndpointEvent::SpectatorLeft { slot, reason } => {
                    if let Some(addr) = room.addrs.remove(&slot.0) {
                        self.by_addr.remove(&addr);
                        self.validated.remove(&addr);
                    }
                    let name = room.spectator_names.remove(&slot.0).unwrap_or_default();
                    self.events.push_back(ServeEvent::SpectatorLeft {
                        room: room_name,
                        reason: format!("{name} {reason}"),
                    });
                }
                EndpointEvent::Left { slot, reason } => {
                    // No longer routed to the room, nor trusted to receive.
                    if let Some(addr) = room.addrs.remove(&slot.0) {
                        self.by_addr.remove(&addr);
                        self.validated.remove(&addr);
                    }
                    room.left_on_purpose = matches!(reason, SessionLeftReason::Bye(_));
                    if room.started {
                        // Said once, with the frame its input stops at (`Out`).
                        room.goodbyes.insert(slot.0, reason.to_string());
                        continue;
                    }
                    self.events.push_back(ServeEvent::Left {
                        room: room_name,
                        slot: slot.0,
                        reason: reason.to_string(),
                    });
                }
                EndpointEvent::PlayerOut {
                    slot,
                    from_frame,
                    reason,
                } => {
                    if let Some(addr) = room.addrs.remove(&slot.0) {
                        self.by_addr.remove(&addr);
                        self.validated.remove(&addr);
                    }
                    room.left_on_purpose = reason == PlayerOutReason::Left;
                    self.events.push_back(ServeEvent::Out {
                        room: room_name,
                        slot: slot.0,
                        from_frame,
                        reason,
                        said: room.goodbyes.remove(&slot.0),
                    });
                }
                EndpointEvent::Desync {
                    frame,
                    slot,
                    source,
                    ..
                } => self.events.push_back(ServeEvent::Desync {
                    room: room_name,
                    slot: slot.0,
                    frame,
                    source: source.map(|p| p.0),
                }),
                EndpointEvent::Resynced { slot, frame } => {
                    self.events.push_back(ServeEvent::Resynced {
                        room: room_name,
                        slot: slot.number(),
                        frame,
                    })
                }
                EndpointEvent::PathChanged { slot, from, to } => {
                    // It echoed a challenge there: it receives what is sent to it.
                    self.by_addr.remove(&from);
                    self.validated.remove(&from);
                    self.by_addr.insert(to, room_name.clone());
                    self.validated.insert(to, now);
                    room.addrs.insert(slot.number(), to);
                    if from == room.creator {
                        room.creator = to;
                    }
                    self.events.push_back(ServeEvent::PathChanged {
                        room: room_name,
                        slot: slot.number(),
                        from,
                        to,
                    });
                }
                _ => {}
            }
        }
        if room.addrs.is_empty() {
            room.empty_since.get_or_insert(now);
        } else {
            room.empty_since = None;
            room.left_on_purpose = false;
        }
        // Nobody in it: at once if the last one said goodbye, else after a grace in which
        // players whose links dropped come back.
        let empty = room
            .empty_since
            .is_some_and(|t| (room.left_on_purpose && room.started) || now >= t + EMPTY_GRACE);
        if empty {
            let why = if room.left_on_purpose {
                "everyone left"
            } else if room.started {
                "nobody came back to it"
            } else {
                "nobody is in it"
            };
            self.close(now, name, why);
        } else {
            self.reschedule(name);
        }
    }

    /// Puts a room's next timer in `timers`.
    pub(super) fn reschedule(&mut self, name: &str) {
        let Some(room) = self.rooms.get_mut(name) else {
            return;
        };
        let next = room.next_timer();
        if next == room.due {
            return;
        }
        if let Some(old) = room.due.take() {
            self.timers.remove(&(old, name.to_string()));
        }
        if let Some(t) = next {
            self.timers.insert((t, name.to_string()));
        }
        room.due = next;
    }

    pub(super) fn close(&mut self, now: Instant, name: &str, why: &str) {
        let Some(mut room) = self.rooms.remove(name) else {
            return;
        };
        if let Some(t) = room.due {
            self.timers.remove(&(t, name.to_string()));
        }
        room.endpoint.shutdown(&format!("the room closed: {why}"));
        while let Some(t) = room.endpoint.poll_transmit(now) {
            self.queue(t);
        }
        for addr in room.addrs.values().chain([&room.creator]) {
            if self.by_addr.get(addr).is_some_and(|r| r == name) {
                self.by_addr.remove(addr);
            }
            // Forgotten with the room, so the set holds only players of open rooms.
            self.validated.remove(addr);
        }
        self.by_session.remove(&room.endpoint.session_id());
        self.uploads.remove(&room.creator);
        if self.published.remove(name).is_some() {
            self.directory_out
                .push_back(DirOp::Remove(name.to_string()));
        }
        self.stats.rooms_closed += 1;
        self.stats.dropped_auth += room.endpoint.stats().dropped_auth;
        self.stats.chat_flood_dropped += room.endpoint.stats().chat_flood_dropped;
        self.events.push_back(ServeEvent::Closed {
            room: name.to_string(),
            why: why.to_string(),
        });
    }
}
