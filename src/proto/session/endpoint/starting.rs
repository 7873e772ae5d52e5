//! How players get into the game: the start once every player is ready, and a state of
//! the running machine for a late joiner, a spectator or one that fell behind (from the
//! local machine, or fetched from a player who runs).

use super::*;

impl Endpoint {
    /// A state of the running machine is needed for `slot` (a late joiner, a spectator, or
    /// one that fell behind): from the local player's machine, or else fetched from a player
    /// who runs.
    pub(super) fn want_state(&mut self, now: Instant, slot: Slot) {
        if self.local.is_some() {
            self.events
                .push_back(EndpointEvent::StateWanted { slots: vec![slot] });
            return;
        }
        let Some(server) = &self.server else {
            return;
        };
        let source = server
            .peers()
            .filter(|p| server.has_sent_ctrl(*p) && !server.is_pending(*p))
            .find(|p| Slot::Player(*p) != slot);
        let Some(from) = source else {
            tracing::warn!("no player runs that could send a state for {slot}");
            return;
        };
        StateFetch::ask(&mut self.fetches, &mut self.next_resync_id, now, from, slot);
    }

    /// A joiner of the running game has its state: it enters the lockstep server, a player
    /// as a late peer (its input counts once it caught up), a spectator as a watcher.
    pub(super) fn enter_running(&mut self, now: Instant, slot: Slot) {
        let (Some(server), Some(frame)) = (&mut self.server, self.session.start_frame(slot)) else {
            return;
        };
        let Some(addr) = self.session.addr_of(slot) else {
            return;
        };
        let header = link_overhead(addr);
        let result = match slot {
            Slot::Spectator(id) => server.add_spectator(now, id, frame, header),
            Slot::Player(peer) => {
                let players = self.session.players();
                let me = players.into_iter().find(|p| p.slot == slot);
                let rtt = me.as_ref().and_then(|p| p.rtt);
                let name = me.map(|p| p.name).unwrap_or_default();
                server
                    .add_late_peer(now, peer, frame, &name)
                    .and_then(|()| {
                        server.set_udp_ip_header(peer, header)?;
                        match rtt {
                            Some(rtt) => server.seed_rtt(now, peer, rtt),
                            None => Ok(()),
                        }
                    })
            }
        };
        match (result, slot) {
            (Ok(()), Slot::Spectator(id)) => self
                .events
                .push_back(EndpointEvent::Watching { slot: id, frame }),
            (Ok(()), Slot::Player(_)) => {}
            (Err(e), _) => {
                tracing::warn!("{slot} cannot enter the game: {e}");
                self.session.kick(
                    slot,
                    "the state you were sent is too old by now; run the same command again",
                );
            }
        }
    }

    /// Says which players the game waits for while they load, `(slot, since)` from their
    /// latest `Loading`, and when each then runs.
    pub(super) fn track_loading(&mut self, now: Instant, heard: Vec<(PeerId, Duration)>) {
        let Some(server) = &self.server else {
            return;
        };
        for (slot, since) in heard {
            match self.loading.iter_mut().find(|l| l.slot == slot) {
                Some(l) => (l.since, l.heard) = (since, now),
                None => self.loading.push(Loading {
                    slot,
                    since,
                    heard: now,
                    told: None,
                }),
            }
        }
        let events = &mut self.events;
        self.loading.retain_mut(|l| {
            let waited = l.waited(now);
            if server.has_sent_ctrl(l.slot) {
                if l.told.is_some() {
                    events.push_back(EndpointEvent::Running {
                        slot: l.slot,
                        waited,
                    });
                }
                return false;
            }
            let again = match l.told {
                None if waited >= LOADING_QUIET => false,
                Some(t) if now >= t + LOADING_NOTICE => true,
                _ => return true,
            };
            events.push_back(EndpointEvent::StillLoading {
                slot: l.slot,
                waited,
                again,
            });
            l.told = Some(now);
            true
        });
    }

    /// Closes the lobby and starts the lockstep server once every player is in and ready.
    pub(super) fn maybe_start(&mut self, now: Instant) {
        let players = self.session.players();
        let ready: Vec<PeerId> = players
            .iter()
            .filter(|p| p.ready)
            .filter_map(|p| p.slot.player())
            .collect();
        if ready.len() < usize::from(self.session.start_with()) || !self.session.all_ready() {
            return;
        }
        match self.start(now, &players, &ready) {
            Ok(()) => self
                .events
                .push_back(EndpointEvent::Started { slots: ready }),
            Err(e) => {
                // The configuration was validated when the host set it up; this is a bug.
                tracing::error!("cannot start the lockstep server: {e}");
                self.lobby_expired = true;
                self.events.push_back(EndpointEvent::LobbyExpired {
                    ready: ready.len(),
                    want: self.cfg.host.max_players,
                });
            }
        }
    }

    pub(super) fn start(
        &mut self,
        now: Instant,
        players: &[Player],
        ready: &[PeerId],
    ) -> Result<(), lockstep::LockstepError> {
        let cfg = lockstep::Config {
            players: self.cfg.host.max_players,
            session: self.session.session_id(),
            fps: self.cfg.host.fps,
            ..self.cfg.lockstep.clone()
        };
        let mut server = Server::new(now, cfg)?;
        // With no machine of its own, no player's checksum is the reference.
        server.set_majority_checksums(self.local.is_none());
        for (p, peer) in players.iter().filter_map(|p| Some((p, p.slot.player()?))) {
            if !ready.contains(&peer) {
                continue;
            }
            server.add_peer(now, peer)?;
            match p.addr {
                Some(addr) => server.set_udp_ip_header(peer, link_overhead(addr))?,
                // The local player talks in memory: no wire, no send budget.
                None => {
                    server.set_send_budget(peer, 0)?;
                    server.set_udp_ip_header(peer, 0)?;
                }
            }
            // The first lead then covers the round trip from frame 0 on.
            if let Some(rtt) = p.rtt {
                tracing::debug!(%peer, ?rtt, "round trip from the handshake");
                server.seed_rtt(now, peer, rtt)?;
            }
        }
        self.session.close_lobby();
        self.server = Some(server);
        // Spectators that have the start state watch from its frame.
        for s in self.session.spectators().into_iter().filter(|s| s.ready) {
            self.enter_running(now, s.slot);
        }
        Ok(())
    }
}
