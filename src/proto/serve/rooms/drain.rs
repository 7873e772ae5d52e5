//! A room's endpoint drained after it took a datagram or a timeout: its datagrams queued,
//! its events turned into routes (who is in which room, who is trusted to receive) and
//! passed on for the server's log (with a spectator's name or a player's goodbye added),
//! its next timer filed, and its closing once nobody is in it.
//! Imports the endpoint's events (and the directory's `DirOp`, to forget a closed room
//! there); nothing of the other parts of [`Rooms`].

use std::time::Instant;

use crate::lockstep::Slot;
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
        let mut started = false;
        while let Some(ev) = room.endpoint.poll_event() {
            // The routes first: who is in the room, and who is trusted to receive.
            let gone = match &ev {
                EndpointEvent::Admitted { slot, name, addr } => {
                    self.by_addr.insert(*addr, room.name.clone());
                    room.addrs.insert(*slot, *addr);
                    if *addr == room.creator {
                        // The creator's upload is over once it joined its room.
                        self.uploads.remove(addr);
                    }
                    if let Slot::Spectator(s) = slot {
                        room.spectator_names.insert(*s, name.clone());
                    }
                    None
                }
                EndpointEvent::PathChanged { slot, from, to } => {
                    // It echoed a challenge there: it receives what is sent to it.
                    self.by_addr.remove(from);
                    self.validated.remove(from);
                    self.by_addr.insert(*to, room.name.clone());
                    self.validated.insert(*to, now);
                    room.addrs.insert(*slot, *to);
                    if *from == room.creator {
                        room.creator = *to;
                    }
                    None
                }
                EndpointEvent::Started { .. } => {
                    room.started = true;
                    started = true;
                    None
                }
                EndpointEvent::Left { slot, reason } => {
                    room.left_on_purpose = matches!(reason, SessionLeftReason::Bye(_));
                    Some(Slot::Player(*slot))
                }
                EndpointEvent::PlayerOut { slot, reason, .. } => {
                    room.left_on_purpose = *reason == PlayerOutReason::Left;
                    Some(Slot::Player(*slot))
                }
                EndpointEvent::SpectatorLeft { slot, .. } => Some(Slot::Spectator(*slot)),
                _ => None,
            };
            // No longer routed to the room, nor trusted to receive.
            if let Some(addr) = gone.and_then(|slot| room.addrs.remove(&slot)) {
                self.by_addr.remove(&addr);
                self.validated.remove(&addr);
            }
            let room_name = room.name.clone();
            let told = match ev {
                EndpointEvent::Left { slot, reason } if room.started => {
                    // Said once, with the frame its input stops at (`Out`).
                    room.goodbyes.insert(slot, reason.to_string());
                    continue;
                }
                EndpointEvent::PlayerOut {
                    slot,
                    from_frame,
                    reason,
                } => ServeEvent::Out {
                    room: room_name,
                    slot,
                    from_frame,
                    reason,
                    said: room.goodbyes.remove(&slot),
                },
                EndpointEvent::Watching { slot, frame } => ServeEvent::Watching {
                    room: room_name,
                    name: room.spectator_names.get(&slot).cloned().unwrap_or_default(),
                    frame,
                    watching: room.endpoint.spectator_count(),
                },
                EndpointEvent::SpectatorLeft { slot, reason } => {
                    let name = room.spectator_names.remove(&slot).unwrap_or_default();
                    ServeEvent::SpectatorLeft {
                        room: room_name,
                        reason: format!("{name} {reason}"),
                    }
                }
                event => ServeEvent::Room {
                    room: room_name,
                    event,
                },
            };
            self.events.push_back(told);
        }
        if started {
            self.start_tape(name);
        }
        self.pull_tape(name);
        let Some(room) = self.rooms.get_mut(name) else {
            return;
        };
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
        self.finish_tape(&mut room);
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
