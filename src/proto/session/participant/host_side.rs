//! The host's side of a participant: its endpoint (lobby, lockstep server) and, once the
//! game runs, its own player's lockstep client in memory.

use super::*;

/// The host's side: its endpoint and, once the game runs, its own player's client.
#[derive(Debug)]
pub struct HostSide {
    pub(super) endpoint: Endpoint,
    /// The own player's lockstep settings (in memory: no wire, no budget).
    pub(super) local_cfg: lockstep::Config,
    pub(super) client: Option<Client>,
    pub(super) cfg: ParticipantConfig,
    pub(super) frame_loop: FrameLoop,
    pub(super) chat_rate: RateWindow,
    pub(super) events: VecDeque<ParticipantEvent>,
    pub(super) now: Instant,
    /// A room on a server that this process hosts: how each joiner is reached.
    pub(super) routes: Option<HostRoutes>,
}

impl HostSide {
    pub(super) fn clock(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        self.now
    }

    pub(super) fn handle_datagram(
        &mut self,
        at: Instant,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Handled<'static> {
        let at = self.clock(at);
        let handled = match &mut self.routes {
            Some(routes) => {
                let handled = routes.handle_datagram(at, from, datagram, &mut self.endpoint);
                while let Some((peer, event)) = routes.poll_event() {
                    let peer = Some(peer);
                    self.events
                        .push_back(ParticipantEvent::Path { peer, event });
                }
                handled
            }
            None => self.endpoint.handle_datagram(at, from, datagram),
        };
        self.handle_endpoint_events(at);
        handled
    }

    pub(super) fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock(now);
        if self.frame_loop.check_overdue(now) {
            self.events
                .push_back(ParticipantEvent::StartOverdue { after: "the lobby" });
        }
        if self.frame_loop.started.is_none() && !self.frame_loop.overdue {
            // The own player is starting too (its window opens): the server hears it in
            // memory only once it runs.
            self.endpoint.local_starting(now);
        }
        self.endpoint.handle_timeout(now);
        if let Some(c) = &mut self.client {
            c.handle_timeout(now);
        }
        if let Some(routes) = &mut self.routes {
            routes.handle_timeout(now, &mut self.endpoint);
            while let Some((peer, event)) = routes.poll_event() {
                let peer = Some(peer);
                self.events
                    .push_back(ParticipantEvent::Path { peer, event });
            }
        }
        self.handle_endpoint_events(now);
    }

    pub(super) fn handle_core(&mut self, now: Instant, reply: CoreReply) {
        let now = self.clock(now);
        match reply {
            CoreReply::Checksum { frame, checksum } => {
                if let Some(c) = &mut self.client {
                    c.report_checksum(frame, checksum);
                }
            }
            CoreReply::State {
                frame,
                state,
                for_slots,
            } => self.endpoint.handle_state(now, frame, state, &for_slots),
            CoreReply::Loaded { .. } => {}
        }
        self.handle_endpoint_events(now);
    }

    /// Moves what the endpoint raised into events and the in-memory link's datagrams both
    /// ways (a handful of rounds settles it: a reply can only trigger acks).
    pub(super) fn handle_endpoint_events(&mut self, now: Instant) {
        while let Some(ev) = self.endpoint.poll_event() {
            match &ev {
                EndpointEvent::Started { .. } => {
                    self.frame_loop.could_start = Some(now);
                    let me = self.endpoint.local().unwrap_or(PeerId(0));
                    match Client::new(now, self.local_cfg.clone(), me) {
                        Ok(c) => self.client = Some(c),
                        Err(e) => {
                            tracing::error!("cannot start this player's lockstep client: {e}");
                        }
                    }
                }
                EndpointEvent::StateWanted { slots } => {
                    self.events
                        .push_back(ParticipantEvent::Core(CoreRequest::SaveState {
                            for_slots: slots.clone(),
                        }))
                }
                EndpointEvent::Desync {
                    slot,
                    send_state: true,
                    ..
                } => self
                    .events
                    .push_back(ParticipantEvent::Core(CoreRequest::SaveState {
                        for_slots: vec![Slot::Player(*slot)],
                    })),
                _ => {}
            }
            self.events.push_back(ParticipantEvent::Session(ev));
        }
        while let Some(line) = self.endpoint.poll_chat() {
            self.events.push_back(ParticipantEvent::Chat(line));
        }
        if let Some(client) = &mut self.client {
            if !self.frame_loop.away(now) {
                for _ in 0..4 {
                    let mut moved = false;
                    while let Some(t) = client.poll_transmit(now) {
                        self.endpoint.handle_local(now, &t.bytes);
                        moved = true;
                    }
                    while let Some(bytes) = self.endpoint.poll_local(now) {
                        client.handle_datagram(now, &bytes);
                        moved = true;
                    }
                    if !moved {
                        break;
                    }
                }
            }
            while let Some(ev) = client.poll_event() {
                self.events.push_back(ParticipantEvent::Game(ev));
            }
        }
    }

    pub(super) fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let now = self.clock(now);
        if self.frame_loop.away(now) {
            return None;
        }
        self.handle_endpoint_events(now);
        let Some(routes) = &mut self.routes else {
            return self.endpoint.poll_transmit(now);
        };
        while let Some(t) = self.endpoint.poll_transmit(now) {
            routes.route(now, t);
        }
        routes.poll_transmit()
    }

    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        // Nothing moves between a stopped frame loop's client and the endpoint.
        let client = match self.frame_loop.away(self.now) {
            true => self.client.as_ref().and_then(Client::poll_timeout_held),
            false => self.client.as_ref().and_then(Client::poll_timeout),
        };
        let routes = self.routes.as_ref().and_then(HostRoutes::poll_timeout);
        [self.endpoint.poll_timeout(), client, routes]
            .into_iter()
            .flatten()
            .min()
    }
}
