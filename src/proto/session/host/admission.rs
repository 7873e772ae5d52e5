//! The host's handshake: a Hello is checked for versions, content and core, the password
//! (here or relayed to a room's creator), given a seat (its own again on a rejoin) and
//! answered with a Welcome.

use super::*;

#[derive(Debug)]
pub(super) struct Pending {
    pub(super) addr: SocketAddr,
    pub(super) since: Instant,
    pub(super) check: Check,
}

#[derive(Debug)]
pub(super) enum Check {
    /// This host knows the password.
    Local(Challenger),
    /// The room's creator does: `challenge` once it sent one, `answer` while its verdict
    /// on the joiner's Hello is awaited.
    Relayed {
        ticket: u32,
        challenge: Option<[u8; PAKE_MSG_LEN]>,
        answer: Option<Hello>,
    },
}

impl Pending {
    pub(super) fn challenge(&self) -> Option<[u8; PAKE_MSG_LEN]> {
        match &self.check {
            Check::Local(c) => Some(c.message()),
            Check::Relayed { challenge, .. } => *challenge,
        }
    }
}

impl HostSession {
    pub(super) fn handle_hello(&mut self, now: Instant, from: SocketAddr, hello: Hello) {
        if let Some(peer) = self.peers.iter_mut().find(|p| p.addr == from) {
            // A resent Hello: same slot, same Welcome, if it still needs one. Its key differs
            // only if one of the two was altered on the way (`open` lets Hellos through only
            // until the joiner used its keys): the newer one makes the keys.
            if hello.key != peer.their_key {
                let id = self.cfg.session_id;
                if let Some(keys) = self.key_pair.agree(Side::Host, &hello.key, id) {
                    peer.keys = keys;
                    peer.their_key = hello.key;
                }
            }
            peer.last_heard = now;
            if matches!(peer.phase, Phase::AwaitingState) {
                let lobby = Msg::Lobby { ready: 0, want: 0 };
                self.send(from, &lobby, self.cfg.session_id);
            } else if matches!(peer.phase, Phase::Welcomed { .. }) {
                peer.phase = Phase::Welcomed {
                    sent_at: now,
                    resent: true,
                };
                self.queue
                    .push_back(Transmit::new(from, peer.tagged_welcome()));
            }
            return;
        }
        // Proof of address (a room on a server checks it there): no seat, no password
        // check, nothing but a Retry until the Hello echoes a cookie made for it. A hosted
        // room's joiners too, as the server names them: the host does not take the
        // server's word for an address it sends a start state to.
        let hosted = self.cfg.hosted_room.is_some();
        if self.cfg.creator.is_none() && !self.cookies.check(now, from, &hello.cookie) {
            let cookie = self.cookies.make(now, from);
            self.send(from, &Msg::Retry(cookie), 0);
            return;
        }
        if !hello.watch && self.seat_still_talking(now, from, &hello.player_name) {
            // Its own new connection waits (its Hellos are resent) until the old one is
            // silent; anyone else using its name and IP never gets the seat.
            tracing::debug!(%from, name = %hello.player_name, "session: the seat of that name still talks; not taken over");
            return;
        }
        let Some(slot) = self.slot_for(now, from, &hello) else {
            let reason = if hello.watch {
                format!(
                    "no room for another spectator: {} watching, the most this session takes \
                     (--max-spectators {})",
                    self.spectators().len(),
                    self.cfg.max_spectators
                )
            } else if let Some((name, left)) = self.kept_seat(now) {
                format!(
                    "session is full: the free seat is kept for {name}, who left, for {} s \
                     more (only their own `join` takes it back); try again then, or watch \
                     with `framelock spectate`",
                    left.as_secs().max(1)
                )
            } else {
                format!(
                    "session is full: all {} seats are taken (you can watch it with \
                     `framelock spectate`)",
                    self.cfg.max_players
                )
            };
            return self.refuse(from, reason);
        };
        if let Some(room) = self.cfg.hosted_room.as_ref().filter(|r| **r != hello.room) {
            let reason = format!("this is room {room}, not {}", hello.room);
            return self.refuse(from, reason);
        }
        if !hello.room.is_empty() && self.cfg.creator.is_none() && !hosted {
            let reason = format!(
                "this is a framelock host, not a server with rooms: join it without --room {}",
                hello.room
            );
            return self.refuse(from, reason);
        }
        if Some(from) != self.cfg.creator && !self.check_password(now, from, &hello) {
            return;
        }
        self.admit(now, from, slot, hello);
    }

    /// True once `from` proved it knows the password (or none is set); otherwise sends the
    /// challenge, relays the check, or refuses.
    pub(super) fn check_password(&mut self, now: Instant, from: SocketAddr, hello: &Hello) -> bool {
        let relayed = self.cfg.relayed_password;
        let Some(password) = self.cfg.password.clone().or(relayed.then(String::new)) else {
            return true;
        };
        let pending = self.pending.iter().position(|p| p.addr == from);
        let answered = |p: &Pending, c: &[u8; PAKE_MSG_LEN]| p.challenge() == Some(*c);
        match (&hello.auth, pending) {
            (Auth::NoPassword { challenge }, Some(i)) if answered(&self.pending[i], challenge) => {
                self.pending.remove(i);
                let reason = "wrong password: this session needs one and you gave none";
                self.refuse(from, reason.into());
            }
            (Auth::Pake { challenge, .. }, Some(i)) if answered(&self.pending[i], challenge) => {
                // A first answer is a guess: counted, and past the rate not checked.
                let first = !matches!(
                    &self.pending[i].check,
                    Check::Relayed {
                        answer: Some(_),
                        ..
                    }
                );
                if first {
                    if let Err(wait) = self.guesses.take(now, from.ip()) {
                        self.pending.remove(i);
                        tracing::warn!(%from, "session: password attempt refused: too many from this address");
                        let reason = format!(
                            "too many password attempts from your address: try again in {} s",
                            wait.as_secs().max(1)
                        );
                        self.refuse(from, reason);
                        return false;
                    }
                }
                return self.check_answer(from, i, hello);
            }
            // First contact, a stale answer, or an expired challenge: (re)challenge.
            (_, Some(i)) => {
                self.pending[i].since = now;
                match (&self.pending[i].check, self.pending[i].challenge()) {
                    (_, Some(c)) => self.send(from, &Msg::Challenge(c), 0),
                    // The creator has not answered (it may not have been in the room yet
                    // when it was asked): ask again.
                    (Check::Relayed { ticket, .. }, None) => {
                        let ticket = *ticket;
                        self.relay(ticket, RelayStep::Asks);
                    }
                    (Check::Local(_), None) => {}
                }
            }
            (_, None) => {
                self.make_room_for_pending(from);
                let check = if relayed {
                    self.next_ticket += 1;
                    let ticket = self.next_ticket;
                    self.relay(ticket, RelayStep::Asks);
                    Check::Relayed {
                        ticket,
                        challenge: None,
                        answer: None,
                    }
                } else {
                    let challenger = Challenger::new(&password, &mut self.rng);
                    self.send(from, &Msg::Challenge(challenger.message()), 0);
                    Check::Local(challenger)
                };
                self.pending.push_back(Pending {
                    addr: from,
                    since: now,
                    check,
                });
            }
        }
        false
    }

    /// Checks the password answer `hello` carries for pending check `i` (or relays it to the
    /// room's checker); true if it is right.
    pub(super) fn check_answer(&mut self, from: SocketAddr, i: usize, hello: &Hello) -> bool {
        let Auth::Pake { msg, confirm, .. } = &hello.auth else {
            return false;
        };
        match &mut self.pending[i].check {
            Check::Relayed { ticket, answer, .. } => {
                // A resent Hello asks again: the answer or the verdict may have been lost on
                // the way to or from the creator, which answers a repeat the same.
                if answer.is_none() {
                    *answer = Some(hello.clone());
                }
                let step = RelayStep::Answer {
                    msg: *msg,
                    confirm: *confirm,
                };
                let ticket = *ticket;
                self.relay(ticket, step);
                false
            }
            Check::Local(_) => {
                let Some(p) = self.pending.remove(i) else {
                    return false;
                };
                let Check::Local(challenger) = p.check else {
                    return false;
                };
                if challenger.verify(msg, confirm) {
                    return true;
                }
                tracing::warn!(%from, "session: wrong password");
                self.refuse(from, "wrong password".into());
                false
            }
        }
    }

    /// Evicts a pending check for a new one from `from`: its prefix's oldest once it holds
    /// `MAX_PENDING_PER_ADDRESS`, or, when all are taken, the oldest of the prefix holding
    /// the most (a flood from one source evicts only its own checks).
    pub(super) fn make_room_for_pending(&mut self, from: SocketAddr) {
        let mine = prefix(from.ip());
        let count = |p: IpAddr| {
            self.pending
                .iter()
                .filter(|x| prefix(x.addr.ip()) == p)
                .count()
        };
        let victim = if count(mine) >= MAX_PENDING_PER_ADDRESS {
            Some(mine)
        } else if self.pending.len() >= MAX_PENDING {
            self.pending
                .iter()
                .map(|p| prefix(p.addr.ip()))
                .max_by_key(|p| count(*p))
        } else {
            None
        };
        if let Some(v) = victim {
            if let Some(i) = self.pending.iter().position(|p| prefix(p.addr.ip()) == v) {
                self.pending.remove(i);
            }
        }
    }

    /// The room's creator answered a relayed password check.
    pub(super) fn handle_relay(&mut self, now: Instant, ticket: u32, step: RelayStep) {
        let Some(i) = self
            .pending
            .iter()
            .position(|p| matches!(p.check, Check::Relayed { ticket: t, .. } if t == ticket))
        else {
            return;
        };
        let addr = self.pending[i].addr;
        match step {
            RelayStep::Challenge(c) => {
                if let Check::Relayed { challenge, .. } = &mut self.pending[i].check {
                    if challenge.is_none() {
                        *challenge = Some(c);
                        self.send(addr, &Msg::Challenge(c), 0);
                    }
                }
            }
            RelayStep::Verdict(ok) => {
                let Some(p) = self.pending.remove(i) else {
                    return;
                };
                let Check::Relayed {
                    answer: Some(hello),
                    ..
                } = p.check
                else {
                    return;
                };
                if !ok {
                    tracing::warn!(%addr, "session: wrong password (checked by the room's creator)");
                    return self.refuse(addr, "wrong password".into());
                }
                match self.slot_for(now, addr, &hello) {
                    Some(slot) => self.admit(now, addr, slot, hello),
                    None => self.refuse(addr, "the room filled up meanwhile".into()),
                }
            }
            RelayStep::Asks | RelayStep::Answer { .. } => {}
        }
    }

    /// Passes a step of a password check on to the room's checker (see `checker`).
    pub(super) fn relay(&mut self, ticket: u32, step: RelayStep) {
        if let Some(checker) = self.checker() {
            let msg = Msg::Room(RoomMsg::Relay { ticket, step });
            self.send(checker, &msg, self.cfg.session_id);
        }
    }

    pub(super) fn admit(&mut self, now: Instant, from: SocketAddr, slot: Slot, hello: Hello) {
        if let Some(reason) = incompatibility(&self.info, &hello) {
            return self.refuse(from, reason);
        }
        let Some(keys) = self
            .key_pair
            .agree(Side::Host, &hello.key, self.cfg.session_id)
        else {
            return self.refuse(from, "your Hello carries no usable public key".into());
        };
        let name = hello.player_name.trim().to_string();
        // A nameless joiner goes by its place: "player 2", "spectator 1".
        let name = if name.is_empty() {
            slot.to_string()
        } else {
            name
        };
        // A player back from another address while its old one still holds the seat (it
        // crashed moments ago): the new one takes over.
        if self.peers.iter().any(|p| p.slot == slot) {
            self.kick(slot, "replaced by a new connection of the same player");
        }
        // A fresh key per Welcome: only this connection can show it to come back.
        let seat_key = match slot {
            Slot::Player(_) => self.rng.gen(),
            Slot::Spectator(_) => [0; SEAT_KEY_LEN],
        };
        if !self.accepting {
            // The game runs: the joiner is welcomed once a state of the running machine
            // is there.
            tracing::debug!(%from, slot = slot.number(), %name, "session: admitted, waiting for a state");
            self.peers.push(Peer {
                addr: from,
                keys,
                their_key: hello.key,
                slot,
                name: name.clone(),
                last_heard: now,
                spoke: now,
                welcome: Vec::new(),
                phase: Phase::AwaitingState,
                frame: Frame::ZERO,
                payload: Arc::from(Vec::new()),
                path: None,
                seat_key,
            });
            self.events.push_back(HostEvent::Admitted {
                slot,
                name,
                addr: from,
            });
            self.events.push_back(HostEvent::StateWanted { slot });
            return;
        }
        let mut players = self.roster();
        if let Slot::Player(seat) = slot {
            players.set(seat, name.clone());
        }
        let welcome = Msg::Welcome(Welcome {
            seat_key,
            slot: welcome_slot(slot),
            fps: self.cfg.fps,
            frame: self.cfg.frame.0,
            raw_len: self.raw_len,
            packed_len: self.packed.len() as u32,
            payload_hash: self.hash,
            chunk_size: CHUNK_SIZE as u16,
            slots: self.cfg.max_players,
            keyframe_interval: self.cfg.keyframe_interval,
            mode: self.cfg.mode,
            key: self.key_pair.public(),
            players,
        })
        .encode(self.cfg.session_id);
        tracing::debug!(%from, slot = slot.number(), %name, "session: player joined");
        let peer = Peer {
            addr: from,
            keys,
            their_key: hello.key,
            slot,
            name: name.clone(),
            last_heard: now,
            spoke: now,
            welcome,
            phase: Phase::Welcomed {
                sent_at: now,
                resent: false,
            },
            frame: self.cfg.frame,
            payload: self.packed.clone(),
            path: None,
            seat_key,
        };
        self.queue
            .push_back(Transmit::new(from, peer.tagged_welcome()));
        self.peers.push(peer);
        self.events.push_back(HostEvent::Admitted {
            slot,
            name,
            addr: from,
        });
    }

    /// Where a joiner that passed the checks goes: a free spectator's slot if it watches,
    /// else its seat (`seat_for`); `None` if there is none.
    fn slot_for(&self, now: Instant, from: SocketAddr, hello: &Hello) -> Option<Slot> {
        if hello.watch {
            self.free_spectator_slot().map(Slot::Spectator)
        } else {
            self.seat_for(now, from, &hello.player_name, &hello.seat_key)
                .map(Slot::Player)
        }
    }

    /// The seat for a player joining from `from` as `name` showing `key`: the seat it held
    /// before, if it is back (by its seat's key; by name or, with no name of its own, by
    /// address only once [`SEAT_KEPT`] has passed since it left); else a seat nobody left,
    /// else any free one not kept for its last player. Slot 0 is the host's own player's,
    /// or kept for a room's creator. While the game runs, a seat still held by the same
    /// name from the same machine is that player's too if it shows the seat's key (its
    /// link dropped and it reconnects from a new port before it timed out).
    pub(super) fn seat_for(
        &self,
        now: Instant,
        from: SocketAddr,
        name: &str,
        key: &[u8; SEAT_KEY_LEN],
    ) -> Option<PeerId> {
        let name = name.trim();
        let shows = |seat_key: &[u8; SEAT_KEY_LEN]| *key != [0; SEAT_KEY_LEN] && seat_key == key;
        // Kept for its last player, who shows the key its Welcome gave it to get it back.
        let kept = |d: &Departed| {
            d.seat_key != [0; SEAT_KEY_LEN] && d.at.is_some_and(|t| now < t + SEAT_KEPT)
        };
        // The creator may come back from another address (its router, another network):
        // slot 0 goes back to its name then.
        let creator_back = !name.is_empty()
            && name == self.info.player_name.trim()
            && self
                .departed
                .iter()
                .any(|d| d.slot == PeerId(0) && d.name == name);
        let first = match self.cfg.creator {
            Some(creator) => u8::from(creator != from && !creator_back),
            None => u8::from(self.cfg.host_is_player),
        };
        let free: Vec<PeerId> = (first..self.cfg.max_players)
            .map(PeerId)
            .filter(|s| self.peers.iter().all(|p| p.slot != Slot::Player(*s)))
            .collect();
        let departed = |s: PeerId| self.departed.iter().rev().find(|d| d.slot == s);
        let own_name = |s: PeerId| !name.is_empty() && name != s.to_string();
        let by_key = free
            .iter()
            .copied()
            .find(|&s| departed(s).is_some_and(|d| kept(d) && shows(&d.seat_key)));
        let by_name = || {
            free.iter()
                .copied()
                .find(|&s| own_name(s) && departed(s).is_some_and(|d| d.name == name && !kept(d)))
        };
        let still_held = || {
            self.peers
                .iter()
                .filter(|_| !self.accepting)
                .filter_map(|p| Some((p, p.slot.player().filter(|s| s.0 >= first)?)))
                .find(|(p, s)| {
                    own_name(*s) && p.name == name && p.addr.ip() == from.ip() && shows(&p.seat_key)
                })
                .filter(|(p, _)| p.addr != from && now >= p.spoke + TAKEOVER_SILENCE)
                .map(|(_, s)| s)
        };
        let by_addr = || {
            free.iter().copied().find(|&s| {
                !own_name(s)
                    && departed(s).is_some_and(|d| {
                        d.ip == from.ip()
                            && (d.name.is_empty() || d.name == s.to_string())
                            && !kept(d)
                    })
            })
        };
        let unheld = || free.iter().copied().find(|&s| departed(s).is_none());
        let not_kept = || {
            free.iter()
                .copied()
                .find(|&s| departed(s).is_none_or(|d| !kept(d)))
        };
        by_key
            .or_else(by_name)
            .or_else(still_held)
            .or_else(by_addr)
            .or_else(unheld)
            .or_else(not_kept)
    }

    /// A free seat kept for the player who left it ([`SEAT_KEPT`]): its player's name and
    /// how long it stays kept, the soonest free first; for a refusal that says why.
    fn kept_seat(&self, now: Instant) -> Option<(String, Duration)> {
        (0..self.cfg.max_players)
            .map(PeerId)
            .filter(|s| self.peers.iter().all(|p| p.slot != Slot::Player(*s)))
            .filter_map(|s| self.departed.iter().rev().find(|d| d.slot == s))
            .filter(|d| d.seat_key != [0; SEAT_KEY_LEN])
            .filter_map(|d| {
                let left = (d.at? + SEAT_KEPT).checked_duration_since(now)?;
                Some((d.name.clone(), left))
            })
            .min_by_key(|(_, left)| *left)
    }

    /// Whether a running player of this name at `from`'s IP but another port spoke within
    /// `TAKEOVER_SILENCE` (see `seat_for`'s takeover).
    pub(super) fn seat_still_talking(&self, now: Instant, from: SocketAddr, name: &str) -> bool {
        let name = name.trim();
        !name.is_empty()
            && !self.accepting
            && self.peers.iter().any(|p| {
                p.is_player()
                    && p.name == name
                    && p.addr.ip() == from.ip()
                    && p.addr != from
                    && now < p.spoke + TAKEOVER_SILENCE
            })
    }

    /// A spectator's slot, if the session takes one more.
    pub(super) fn free_spectator_slot(&self) -> Option<SpectatorId> {
        let taken = self.peers.iter().filter(|p| !p.is_player()).count();
        if taken >= usize::from(self.cfg.max_spectators) {
            return None;
        }
        (FIRST_SPECTATOR_SLOT..=u8::MAX - 1)
            .map(SpectatorId)
            .find(|s| self.peers.iter().all(|p| p.slot != Slot::Spectator(*s)))
    }
}

/// The slot a joiner's Welcome names: its seat, or `SPECTATOR` (the wire's edge).
pub(super) fn welcome_slot(slot: Slot) -> u8 {
    match slot {
        Slot::Player(seat) => seat.0,
        Slot::Spectator(_) => SPECTATOR,
    }
}

/// What differs between the host and a joiner, phrased for the joiner; `None` if compatible.
pub(super) fn incompatibility(host: &SessionInfo, j: &Hello) -> Option<String> {
    let mut diffs = Vec::new();
    if host.core_name != j.core_name {
        diffs.push(format!(
            "core differs: host runs {}, you run {}",
            host.core_name, j.core_name
        ));
    } else if host.core_version != j.core_version {
        diffs.push(format!(
            "core version differs: host runs {} {}, you run {} {}",
            host.core_name, host.core_version, j.core_name, j.core_version
        ));
    }
    let names_differ = host.content_name != j.content_name;
    if host.content_hash != j.content_hash || (host.content_hash.is_none() && names_differ) {
        diffs.push(format!(
            "content differs: host has {}, you have {}",
            describe_content(&host.content_name, host.content_hash),
            describe_content(&j.content_name, j.content_hash)
        ));
    }
    (!diffs.is_empty()).then(|| diffs.join("; "))
}

pub(super) fn describe_content(name: &str, hash: Option<u64>) -> String {
    match (name.is_empty(), hash) {
        (true, None) => "no content".into(),
        (false, None) => format!("{name} (not hashed)"),
        (_, Some(h)) => format!("{name} (xxh3 {h:016x})"),
    }
}
