//! A joiner's side of a participant: the handshake, the seat in the lobby and the game,
//! reconnecting after a lost host, and path probes after its address changed.

use super::*;

/// What a joiner is doing.
#[derive(Debug)]
pub(super) enum JoinPhase {
    /// The first handshake, until the start state is here.
    Joining(JoinSession),
    /// In the session: the lobby, then the game.
    Seated(Box<Seated>),
    /// Lost the host: the handshake again, until `until`.
    Reconnecting {
        session: JoinSession,
        until: Instant,
        /// When the current attempt began (a silent host restarts it).
        attempt: Instant,
    },
    Ended,
}

/// A joiner in the session.
#[derive(Debug)]
pub(super) struct Seated {
    pub(super) seat: Seat,
    pub(super) client: Client,
    /// The host's lockstep server has spoken (the game started): its silence is the
    /// client's timeout's business from now on.
    pub(super) contact: bool,
    /// The first CTRL left (the host hears this player from its CTRLs).
    pub(super) running: bool,
    /// When a CTRL last left while the lobby waits (see `LOBBY_KEEPALIVE`).
    pub(super) keepalive: Option<Instant>,
    /// When the first CTRL left, and whether `WaitingForStart` was said.
    pub(super) first_ctrl: Option<Instant>,
    pub(super) told_waiting: bool,
    /// The frame its machine started from.
    pub(super) start: Frame,
    /// When the host was last heard from at all.
    pub(super) heard: Instant,
    /// When the last probe left.
    pub(super) probed: Option<Instant>,
    /// A state to load before any frame runs (a jump).
    pub(super) awaiting_load: Option<Frame>,
}

/// A joiner's side.
#[derive(Debug)]
pub struct JoinSide {
    pub(super) join: JoinConfig,
    /// This end's own lockstep settings (budget, header, timeouts); the session's come
    /// from the start state.
    pub(super) base: lockstep::Config,
    pub(super) cfg: ParticipantConfig,
    pub(super) rng: StdRng,
    pub(super) phase: JoinPhase,
    pub(super) frame_loop: FrameLoop,
    pub(super) chat_rate: RateWindow,
    /// Frames handed out, for the checksum requests.
    pub(super) events: VecDeque<ParticipantEvent>,
    pub(super) now: Instant,
    /// This player said goodbye: a link that goes quiet afterwards is not reconnected.
    pub(super) closed: bool,
    /// Joined by a room's name: the way to a host that hosts the room itself.
    pub(super) route: Option<JoinRoute>,
}

impl JoinSide {
    pub(super) fn clock(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        self.now
    }

    /// The current handshake's keys (from its Welcome on) and session id.
    fn keys(phase: &JoinPhase) -> (Option<&Keys>, u32) {
        match phase {
            JoinPhase::Joining(session) | JoinPhase::Reconnecting { session, .. } => {
                (session.keys(), session.session_id())
            }
            JoinPhase::Seated(s) => (s.seat.join_session().keys(), s.seat.session_id()),
            JoinPhase::Ended => (None, 0),
        }
    }

    pub(super) fn handle_datagram(
        &mut self,
        at: Instant,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Handled<'static> {
        let at = self.clock(at);
        let mut from = from;
        if let Some(route) = &mut self.route {
            let (keys, session) = Self::keys(&self.phase);
            let to_session = route.handle_datagram(at, from, datagram, keys, session);
            while let Some(event) = route.poll_event() {
                self.events
                    .push_back(ParticipantEvent::Path { peer: None, event });
            }
            match to_session {
                Some(addr) => from = addr,
                None => {
                    // The route took it (a path probe, a server's introduction).
                    self.handle_machine_events(at);
                    return Handled::Taken;
                }
            }
        }
        let handled = match &mut self.phase {
            // Only the host talks to a joiner (counted by the session).
            JoinPhase::Joining(session) | JoinPhase::Reconnecting { session, .. } => {
                session.handle_datagram(at, from, datagram)
            }
            JoinPhase::Seated(s) => match s.seat.handle_datagram(at, from, datagram) {
                Handled::Passed(body) => {
                    let handled = s.client.handle_datagram(at, body);
                    s.contact = true;
                    s.heard = at;
                    handled
                }
                Handled::Taken => {
                    s.heard = at;
                    Handled::Taken
                }
                Handled::Dropped(why) => Handled::Dropped(why),
            },
            JoinPhase::Ended => Handled::Dropped(Dropped::unexpected(datagram)),
        };
        self.handle_machine_events(at);
        handled
    }

    pub(super) fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock(now);
        if self.frame_loop.check_overdue(now) {
            self.events.push_back(ParticipantEvent::StartOverdue {
                after: "the start state",
            });
        }
        let away = self.frame_loop.away(now);
        let mut lost = None;
        match &mut self.phase {
            JoinPhase::Joining(session) | JoinPhase::Reconnecting { session, .. } => {
                session.handle_timeout(now)
            }
            JoinPhase::Seated(s) => {
                s.seat.handle_timeout(now);
                if s.contact {
                    s.client.handle_timeout(now);
                } else if now.saturating_duration_since(s.heard) >= LOBBY_SILENCE {
                    lost = Some(format!(
                        "nothing from the host for {} s while waiting for the game to start",
                        LOBBY_SILENCE.as_secs()
                    ));
                }
                let wait_said = s.first_ctrl.is_some_and(|t| now >= t + WAIT_NOTICE);
                let frames = s.client.ready_frames() > 0 || s.client.frame() > s.start;
                if wait_said && !frames && !s.told_waiting {
                    s.told_waiting = true;
                    let late = s.start > Frame::ZERO;
                    self.events
                        .push_back(ParticipantEvent::WaitingForStart { late });
                }
                // Heard nothing for a while: say where this player is now (a host that lost
                // it after an address change finds it again; a server routes the probe).
                let quiet = now.saturating_duration_since(s.heard) >= PROBE_AFTER;
                if quiet && s.contact && !away && s.probed.is_none_or(|t| now >= t + PROBE_AFTER) {
                    s.probed = Some(now);
                    s.seat.probe();
                }
            }
            JoinPhase::Ended => {}
        }
        if let Some(why) = lost {
            self.lose(now, why);
        }
        if let Some(route) = &mut self.route {
            let (keys, session) = Self::keys(&self.phase);
            route.handle_timeout(now, keys, session);
            while let Some(event) = route.poll_event() {
                self.events
                    .push_back(ParticipantEvent::Path { peer: None, event });
            }
        }
        self.handle_machine_events(now);
    }

    /// See [`Participant::handle_mapped`].
    pub(super) fn set_mapped(&mut self, addr: Option<SocketAddr>) {
        if let Some(route) = &mut self.route {
            let (keys, session) = Self::keys(&self.phase);
            route.set_mapped(addr, keys, session);
        }
    }

    pub(super) fn handle_core(&mut self, now: Instant, reply: CoreReply) {
        let now = self.clock(now);
        if let JoinPhase::Seated(s) = &mut self.phase {
            match reply {
                CoreReply::Checksum { frame, checksum } => {
                    s.client.report_checksum(frame, checksum)
                }
                CoreReply::State { frame, state, .. } => s.seat.handle_state(now, frame, state),
                CoreReply::Loaded { frame } => {
                    if s.awaiting_load == Some(frame) {
                        s.awaiting_load = None;
                    }
                }
            }
        }
        self.handle_machine_events(now);
    }

    /// The link to the host is gone: reconnect, or end.
    pub(super) fn lose(&mut self, now: Instant, why: String) {
        if self.cfg.reconnect.is_zero() || self.closed {
            self.end(SessionError::HostLeft(why));
            return;
        }
        let until = match &self.phase {
            JoinPhase::Reconnecting { until, .. } => *until,
            _ => now + self.cfg.reconnect,
        };
        let first = !matches!(self.phase, JoinPhase::Reconnecting { .. });
        let session = self.fresh_handshake(now);
        self.phase = JoinPhase::Reconnecting {
            session,
            until,
            attempt: now,
        };
        if first {
            tracing::warn!("session: lost the host ({why}); reconnecting");
            self.events
                .push_back(ParticipantEvent::ConnectionLost { why, until });
        }
    }

    /// A new handshake with the host, with keys of its own.
    pub(super) fn fresh_handshake(&mut self, now: Instant) -> JoinSession {
        let cfg = JoinConfig {
            entropy: self.rng.gen(),
            hello_interval: RECONNECT_HELLO,
            // The reconnect deadline bounds it; a silent host restarts the attempt.
            timeout: self.join.timeout,
            ..self.join.clone()
        };
        JoinSession::new(now, cfg)
    }

    pub(super) fn end(&mut self, e: SessionError) {
        if !matches!(self.phase, JoinPhase::Ended) {
            self.phase = JoinPhase::Ended;
            self.events.push_back(ParticipantEvent::Ended(e));
        }
    }

    pub(super) fn close(&mut self, reason: &str) {
        self.closed = true;
        match &mut self.phase {
            JoinPhase::Joining(s) | JoinPhase::Reconnecting { session: s, .. } => s.leave(reason),
            JoinPhase::Seated(s) => s.seat.leave(reason),
            JoinPhase::Ended => {}
        }
    }

    /// Seated with the start state: a seat and a lockstep client from its frame.
    pub(super) fn seat(
        &mut self,
        now: Instant,
        session: JoinSession,
        start: &StartState,
        jump: bool,
    ) {
        let host = session.host();
        // What a reconnect shows to get this seat back (`Welcome::seat_key`).
        self.join.seat_key = session.seat_key();
        let lcfg = start.lockstep(lockstep::Config {
            // Its one link is to the host: the host's address family sets the header size.
            udp_ip_header: link_overhead(host),
            ..self.base.clone()
        });
        let first = start.frame;
        let client = match start.slot {
            Some(seat) => Client::new_at(now, lcfg, seat, first),
            None => {
                // The host keeps a spectator that long, too: one back from a pause gets a
                // fresh state.
                let lcfg = lockstep::Config {
                    timeout: lockstep::SPECTATOR_TIMEOUT,
                    ..lcfg
                };
                Client::spectator(now, lcfg, first)
            }
        };
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                return self.end(SessionError::BadState(format!(
                    "the session's settings do not work: {e}"
                )))
            }
        };
        self.frame_loop.could_start.get_or_insert(now);
        let mut seat = Seat::new(session);
        if self.frame_loop.started.is_some() {
            // Back from a lost connection: the frame loop runs already.
            seat.end_loading();
        }
        self.phase = JoinPhase::Seated(Box::new(Seated {
            seat,
            client,
            contact: false,
            running: jump,
            keepalive: None,
            first_ctrl: None,
            told_waiting: jump,
            start: first,
            heard: now,
            probed: None,
            awaiting_load: jump.then_some(first),
        }));
    }

    /// Moves what the machines raised into events, and applies the rules between them.
    pub(super) fn handle_machine_events(&mut self, now: Instant) {
        let mut lose = None;
        let mut end = None;
        let mut seated = None;
        let reconnecting = matches!(self.phase, JoinPhase::Reconnecting { .. });
        match &mut self.phase {
            JoinPhase::Joining(_) | JoinPhase::Reconnecting { .. } => {
                while let Some(ev) = self.join_session_mut().and_then(JoinSession::poll_event) {
                    match ev {
                        JoinEvent::Welcomed {
                            slot,
                            players,
                            packed_len,
                            mode,
                            keyframe_interval,
                            ..
                        } => {
                            if !reconnecting {
                                self.events.push_back(ParticipantEvent::Welcomed {
                                    slot,
                                    players,
                                    packed_len,
                                    mode,
                                    keyframe_interval,
                                });
                            }
                        }
                        JoinEvent::Ready(start) => seated = Some((start, reconnecting)),
                        JoinEvent::Waiting { ready, want } => self
                            .events
                            .push_back(ParticipantEvent::Waiting { ready, want }),
                        JoinEvent::PasswordChecked { admitted } => self
                            .events
                            .push_back(ParticipantEvent::PasswordChecked { admitted }),
                        JoinEvent::HostMoved { from, to } => self
                            .events
                            .push_back(ParticipantEvent::HostMoved { from, to }),
                        JoinEvent::Failed(e) if reconnecting && retry(&e) => {
                            lose = Some(e.to_string())
                        }
                        JoinEvent::Failed(e) => end = Some(e),
                    }
                }
            }
            JoinPhase::Seated(s) => {
                while let Some(ev) = s.seat.poll_event() {
                    match ev {
                        SeatEvent::Failed(SessionError::Dropped(why)) => {
                            lose = Some(format!("dropped by the host ({why})"))
                        }
                        SeatEvent::Failed(e) => end = Some(e),
                        SeatEvent::Waiting { ready, want } => self
                            .events
                            .push_back(ParticipantEvent::Waiting { ready, want }),
                        SeatEvent::PasswordChecked { admitted } => self
                            .events
                            .push_back(ParticipantEvent::PasswordChecked { admitted }),
                        SeatEvent::State {
                            frame: Frame(frame),
                            state,
                        } => {
                            let jump = s.client.is_spectator();
                            if jump {
                                // The frames held are stale: none runs until the state is
                                // loaded.
                                if !s.client.skip_to(Frame(frame)) {
                                    continue;
                                }
                                s.awaiting_load = Some(Frame(frame));
                            }
                            self.events.push_back(ParticipantEvent::StateReceived {
                                frame: Frame(frame),
                                bytes: state.len(),
                                jump,
                            });
                            self.events
                                .push_back(ParticipantEvent::Core(CoreRequest::Load {
                                    frame: Frame(frame),
                                    state,
                                    sram: Vec::new(),
                                    jump,
                                }));
                        }
                        SeatEvent::StateWanted => {
                            self.events.push_back(ParticipantEvent::StateAsked);
                            self.events
                                .push_back(ParticipantEvent::Core(CoreRequest::SaveState {
                                    for_slots: vec![Slot::Player(s.client.me())],
                                }));
                        }
                        SeatEvent::HostMoved { from, to } => self
                            .events
                            .push_back(ParticipantEvent::HostMoved { from, to }),
                        SeatEvent::Chat(line) => {
                            self.events.push_back(ParticipantEvent::Chat(line))
                        }
                    }
                }
                while let Some(ev) = s.client.poll_event() {
                    match ev {
                        ClientEvent::ServerLost => {
                            lose = Some(format!(
                                "the host stopped answering (nothing for {:.0} s)",
                                s.client.config().timeout.as_secs_f64()
                            ))
                        }
                        ev => self.events.push_back(ParticipantEvent::Game(ev)),
                    }
                }
            }
            JoinPhase::Ended => {}
        }
        if let Some((start, reconnecting)) = seated {
            let session = match std::mem::replace(&mut self.phase, JoinPhase::Ended) {
                JoinPhase::Joining(s) | JoinPhase::Reconnecting { session: s, .. } => s,
                other => {
                    self.phase = other;
                    return;
                }
            };
            if reconnecting {
                tracing::info!(
                    "session: back in the session from frame {} ({})",
                    start.frame.0,
                    start.slot.map_or("watching".to_string(), |p| p.to_string())
                );
                self.events
                    .push_back(ParticipantEvent::Core(CoreRequest::Load {
                        frame: start.frame,
                        state: start.payload.state.clone(),
                        sram: start.payload.sram.clone(),
                        jump: true,
                    }));
                self.events.push_back(ParticipantEvent::Back {
                    frame: start.frame,
                    slot: start.slot,
                });
                self.seat(now, session, &start, true);
            } else {
                self.seat(now, session, &start, false);
                self.events.push_back(ParticipantEvent::Ready(start));
            }
        }
        if let Some(e) = end {
            self.end(e);
        } else if let Some(why) = lose {
            self.lose(now, why);
        }
        self.check_reconnect(now);
    }

    /// A reconnect past its deadline ends; one whose attempt the host left unanswered for
    /// the handshake's timeout starts a new attempt.
    pub(super) fn check_reconnect(&mut self, now: Instant) {
        let JoinPhase::Reconnecting { until, attempt, .. } = &self.phase else {
            return;
        };
        if now >= *until {
            let secs = self.cfg.reconnect.as_secs();
            self.end(SessionError::ReconnectGaveUp { secs });
        } else if now >= *attempt + self.join.timeout {
            let until = *until;
            let session = self.fresh_handshake(now);
            self.phase = JoinPhase::Reconnecting {
                session,
                until,
                attempt: now,
            };
        }
    }

    pub(super) fn join_session_mut(&mut self) -> Option<&mut JoinSession> {
        match &mut self.phase {
            JoinPhase::Joining(s) | JoinPhase::Reconnecting { session: s, .. } => Some(s),
            _ => None,
        }
    }

    pub(super) fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let now = self.clock(now);
        if let Some(route) = &mut self.route {
            if let Some(t) = route.poll_transmit() {
                return Some(t);
            }
        }
        let t = self.session_transmit(now)?;
        Some(match &mut self.route {
            Some(route) => route.route(now, t),
            None => t,
        })
    }

    fn session_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let away = self.frame_loop.away(now);
        let loop_runs = self.frame_loop.started.is_some();
        match &mut self.phase {
            JoinPhase::Joining(session) | JoinPhase::Reconnecting { session, .. } => {
                session.poll_transmit(now)
            }
            JoinPhase::Seated(s) => {
                if away {
                    return None;
                }
                // The lockstep client speaks once the frame loop runs; until the host's
                // server has spoken (the lobby), only once a `LOBBY_KEEPALIVE`.
                let lobby_due = s.keepalive.is_none_or(|t| now >= t + LOBBY_KEEPALIVE);
                if loop_runs && s.awaiting_load.is_none() && (s.contact || lobby_due) {
                    if let Some(Transmit { bytes, .. }) = s.client.poll_transmit(now) {
                        if !s.contact {
                            s.keepalive = Some(now);
                        }
                        if !s.running {
                            // The host hears this player from its CTRLs from now on.
                            s.running = true;
                            s.first_ctrl = Some(now);
                            s.seat.end_loading();
                        }
                        return Some(s.seat.seal(bytes));
                    }
                }
                s.seat.poll_transmit(now)
            }
            JoinPhase::Ended => None,
        }
    }

    fn session_timeout(&self) -> Option<Instant> {
        match &self.phase {
            JoinPhase::Joining(session) => session.poll_timeout(),
            JoinPhase::Reconnecting {
                session,
                until,
                attempt,
            } => [
                session.poll_timeout(),
                Some(*until),
                Some(*attempt + self.join.timeout),
            ]
            .into_iter()
            .flatten()
            .min(),
            JoinPhase::Seated(s) => {
                let client = if s.contact && self.frame_loop.away(self.now) {
                    // Nothing is sent for a frame loop that stopped (`session_transmit`).
                    s.client.poll_timeout_held()
                } else if s.contact {
                    s.client.poll_timeout()
                } else {
                    // The lobby: the next keepalive, and the host's silence.
                    let keepalive = match (self.frame_loop.started, s.keepalive) {
                        (None, _) => None,
                        (Some(_), None) => Some(self.now),
                        (Some(_), Some(t)) => Some(t + LOBBY_KEEPALIVE),
                    };
                    [keepalive, Some(s.heard + LOBBY_SILENCE)]
                        .into_iter()
                        .flatten()
                        .min()
                };
                let frames = s.client.ready_frames() > 0 || s.client.frame() > s.start;
                let notice = s
                    .first_ctrl
                    .filter(|_| !s.told_waiting && !frames)
                    .map(|t| t + WAIT_NOTICE);
                let probe = s.contact.then(|| {
                    (s.heard + PROBE_AFTER).max(s.probed.map_or(s.heard, |t| t + PROBE_AFTER))
                });
                [s.seat.poll_timeout(), client, probe, notice]
                    .into_iter()
                    .flatten()
                    .min()
            }
            JoinPhase::Ended => None,
        }
    }

    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        let route = self.route.as_ref().and_then(JoinRoute::poll_timeout);
        [self.session_timeout(), route].into_iter().flatten().min()
    }
}

/// Whether a reconnect attempt that failed so should be tried again (the host did not
/// answer yet, or is not reachable yet) rather than end the session (it refused).
pub(super) fn retry(e: &SessionError) -> bool {
    matches!(
        e,
        SessionError::NoAnswer { .. }
            | SessionError::HostSilent { .. }
            | SessionError::NotFramelock { .. }
            | SessionError::Dropped(_)
    )
}
