//! How the report words what the participant raised: log lines, chat, and the recording
//! events they make. The one wording for both phases: the lobbies hand it every event but
//! those that end them.

use std::net::SocketAddr;
use std::time::Instant;

use crate::lockstep::{self, own_name, ClientEvent, Frame, PauseRefusal, Slot};
use crate::replay::Event;
use crate::session::direct::PathEvent;
use crate::session::{
    ChatLine, EndpointEvent, Participant, ParticipantEvent, PlayerOutReason, SessionError,
    LOADING_LIMIT,
};

use crate::netplay::{chat, SessionEnd};

use super::{log_path, Report};

impl Report {
    /// Words what the participant raised, and returns the recording events it makes
    /// (`(session frame, event)`).
    pub fn event(
        &mut self,
        now: Instant,
        p: &Participant,
        ev: ParticipantEvent,
        recorded: &mut Vec<(Frame, Event)>,
    ) {
        match ev {
            ParticipantEvent::Session(ev) => self.endpoint_event(p, ev, recorded),
            ParticipantEvent::Game(ev) => self.client_event(now, p, ev, recorded),
            ParticipantEvent::Waiting { ready, want } => tracing::info!(
                "netplay: waiting for the game to start: {ready} of {want} players in"
            ),
            ParticipantEvent::PasswordChecked { admitted } => tracing::info!(
                "netplay: a joiner {} the room's password",
                if admitted { "knew" } else { "got wrong" }
            ),
            ParticipantEvent::StateReceived { frame, bytes, jump } => {
                if jump {
                    tracing::info!(
                        "netplay: fell behind the players; received a fresh state for frame \
                         {} ({} KiB)",
                        frame.0,
                        bytes / 1024
                    );
                } else {
                    tracing::info!(
                        "netplay: received the host's state for frame {} ({} KiB)",
                        frame.0,
                        bytes / 1024
                    );
                }
            }
            ParticipantEvent::StartOverdue { after } => tracing::error!(
                "netplay: still not running {} s after {after}; going silent, so that the other \
                 players drop this one instead of waiting for it",
                LOADING_LIMIT.as_secs()
            ),
            ParticipantEvent::WaitingForStart { late: true } => {
                tracing::info!("netplay: waiting for the host's first frames")
            }
            ParticipantEvent::WaitingForStart { late: false } => tracing::info!(
                "netplay: waiting for every player to start: frame 0 runs once all of them run \
                 (one still loading may take up to {} s)",
                LOADING_LIMIT.as_secs()
            ),
            ParticipantEvent::StateAsked => tracing::info!(
                "netplay: the server asks for this machine's state, to resync a player that \
                 diverged"
            ),
            ParticipantEvent::ConnectionLost { why, until } => {
                self.counters.connections_lost += 1;
                self.counters.lost_at = Some(now);
                tracing::warn!(
                    "netplay: connection lost ({why}); reconnecting for up to {} s",
                    until.saturating_duration_since(now).as_secs_f64().round()
                );
            }
            ParticipantEvent::Back { frame, .. } => tracing::info!(
                "netplay: reconnected; the game goes on from frame {} once its state is loaded",
                frame.0
            ),
            ParticipantEvent::HostMoved { from, to } => {
                tracing::info!("netplay: the host moved from {from} to {to}")
            }
            ParticipantEvent::Ended(cause) => {
                tracing::error!("netplay: {}", self.ending(cause))
            }
            ParticipantEvent::Path { peer, event } => self.path_event(p, peer, event),
            ParticipantEvent::Chat(line) => self.chat_line(now, line, recorded),
            ParticipantEvent::Welcomed { .. }
            | ParticipantEvent::Ready(_)
            | ParticipantEvent::Core(_) => {}
        }
    }

    /// How the end of the session is said: its cause, and how to come back if there is a
    /// way.
    pub fn ending(&self, cause: SessionError) -> SessionEnd {
        SessionEnd {
            cause,
            rejoin: self.rejoin.clone(),
        }
    }

    /// A path of a hosted room went direct or back to the relay.
    fn path_event(&mut self, p: &Participant, peer: Option<SocketAddr>, event: PathEvent) {
        let who = match peer {
            None => "the host".to_string(),
            Some(addr) => p
                .endpoint()
                .and_then(|e| e.players().into_iter().find(|pl| pl.addr == Some(addr)))
                .and_then(|pl| pl.slot.player())
                .map_or(addr.to_string(), |seat| self.name(seat)),
        };
        log_path(&who, &event, self.path);
    }

    /// A chat message (someone else's, or this player's own): recorded at its frame, and
    /// logged and shown unless `--chat` hides it.
    pub fn chat_line(&mut self, now: Instant, line: ChatLine, recorded: &mut Vec<(Frame, Event)>) {
        recorded.push((
            line.frame,
            Event::Chat {
                slot: line.from.number(),
                name: line.name.clone(),
                text: line.text.clone(),
            },
        ));
        chat::show(&self.chat, now, line);
    }

    fn client_event(
        &mut self,
        now: Instant,
        p: &Participant,
        ev: ClientEvent,
        recorded: &mut Vec<(Frame, Event)>,
    ) {
        match ev {
            ClientEvent::ServerSilent { silent_for } => tracing::warn!(
                "netplay: nothing from the host for {} ms",
                silent_for.as_millis()
            ),
            // The participant turns it into a reconnect or an end.
            ClientEvent::ServerLost => {}
            ClientEvent::PlayerLeft { peer, from_frame } => {
                // The host says it once, with why (`PlayerOut`).
                if !p.is_host() {
                    tracing::info!(
                        "netplay: {} left; neutral input from frame {}",
                        self.name(peer),
                        from_frame.0
                    );
                }
                let name = self.names.name(peer).unwrap_or_default().to_string();
                self.gone.set(peer, name);
                self.counters.players_left.push((peer, from_frame));
                recorded.push((from_frame, Event::Left { slot: peer.0 }));
            }
            ClientEvent::PlayerJoined {
                peer,
                from_frame,
                name,
            } => {
                let back = self
                    .gone
                    .name(peer)
                    .is_some_and(|n| n == name || name.is_empty());
                self.set_name(peer, name.clone());
                if back {
                    tracing::info!(
                        "netplay: {} is back from frame {}",
                        self.name(peer),
                        from_frame.0
                    );
                } else {
                    tracing::info!(
                        "netplay: {} joined from frame {}",
                        self.name(peer),
                        from_frame.0
                    );
                }
                self.counters.players_joined.push((peer, from_frame));
                recorded.push((from_frame, Event::Joined { slot: peer.0, name }));
            }
            ClientEvent::Paused { peer, at } => {
                let who = self.name(peer);
                let own = p.client().is_some_and(|c| c.me() == peer);
                tracing::info!(
                    "netplay: {who} paused at frame {}; {} resume{}, or it ends by itself after {} s",
                    at.0,
                    if own { "you" } else { "they" },
                    if own { " (P)" } else { "" },
                    lockstep::PAUSE_LIMIT.as_secs()
                );
                let short = self.names.short_name(peer);
                self.paused = Some((short, now));
                self.pauses.push((peer.0, at.0, 0.0));
                recorded.push((at, Event::Paused { slot: peer.0 }));
            }
            ClientEvent::Resumed { peer, at } => {
                let lasted = self
                    .paused
                    .take()
                    .map_or(0.0, |(_, t)| now.saturating_duration_since(t).as_secs_f64());
                if let Some(last) = self.pauses.last_mut() {
                    last.2 = lasted;
                }
                let limit = lockstep::PAUSE_LIMIT.as_secs_f64();
                if lasted + 0.5 >= limit {
                    tracing::info!(
                        "netplay: {}'s pause ran out after {limit:.0} s: resumed at frame {}",
                        self.name(peer),
                        at.0
                    );
                } else {
                    tracing::info!(
                        "netplay: {} resumed at frame {} after {lasted:.1} s",
                        self.name(peer),
                        at.0
                    );
                }
                recorded.push((at, Event::Resumed { slot: peer.0 }));
            }
            ClientEvent::PauseRefused { why } => match why {
                PauseRefusal::TooMany { wait_secs } => tracing::warn!(
                    "netplay: pause refused: more than {} pauses a minute; allowed again in \
                     {wait_secs} s",
                    lockstep::PAUSES_PER_WINDOW
                ),
                PauseRefusal::NotPlaying => {
                    tracing::warn!("netplay: pause refused: only a player who has played may pause")
                }
                PauseRefusal::TooSoon { wait_secs } => tracing::warn!(
                    "netplay: pause refused: your last pause ran out after {} s; you may pause \
                     again in {wait_secs} s",
                    lockstep::PAUSE_LIMIT.as_secs()
                ),
                PauseRefusal::NotYours { wait_secs } => tracing::warn!(
                    "netplay: resume refused: {} paused, and only they can resume for \
                     {wait_secs} s more",
                    self.paused
                        .as_ref()
                        .map_or("another player", |(n, _)| n.as_str())
                ),
            },
            ClientEvent::Desync { frame, peer } => {
                self.counters.desyncs += 1;
                self.counters.desync_frames.push(frame);
                if p.client().is_some_and(|c| c.me() == peer) {
                    self.counters.desync_heard_at.get_or_insert(now);
                }
                tracing::error!(
                    "netplay: desync detected at frame {}: {} differs from the host",
                    frame.0,
                    self.name(peer)
                );
            }
        }
    }

    /// Host: logs what the endpoint raised; a player leaving is said once, by `PlayerOut`
    /// once the game runs (with the frame its input stops), by `Left` in the lobby.
    fn endpoint_event(
        &mut self,
        p: &Participant,
        ev: EndpointEvent,
        recorded: &mut Vec<(Frame, Event)>,
    ) {
        let endpoint = p.endpoint();
        let running = endpoint.is_some_and(|e| e.game_started());
        match ev {
            EndpointEvent::Admitted {
                slot: Slot::Spectator(_),
                name,
                addr,
            } => {
                tracing::info!("netplay: {name} ({addr}) asks to watch")
            }
            EndpointEvent::Admitted {
                slot: Slot::Player(slot),
                name,
                addr,
            } => {
                match own_name(&name, Slot::Player(slot)) {
                    _ if running => tracing::info!(
                        "netplay: {name} ({addr}) takes seat {} of the running game",
                        slot.0 + 1
                    ),
                    Some(own) => tracing::info!("netplay: {own} ({addr}) joined as {slot}"),
                    // Named after its place: not said twice.
                    None => tracing::info!("netplay: {slot} ({addr}) joined"),
                }
                self.set_name(slot, name);
            }
            EndpointEvent::Ready { slot, ready, want } => {
                tracing::info!("netplay: {slot} has the start state");
                tracing::info!("netplay: {ready}/{want} players ready");
            }
            EndpointEvent::Watching { slot, frame } => {
                let n = endpoint.map_or(0, |e| e.spectator_count());
                tracing::info!(
                    "netplay: {slot} watches from frame {} ({n} watching)",
                    frame.0
                )
            }
            EndpointEvent::SpectatorLeft { slot, reason } => {
                tracing::info!("netplay: {slot} {reason}")
            }
            EndpointEvent::NoState { slot } => tracing::warn!(
                "netplay: no state could be sent to the joiner in slot {}; it was sent away",
                slot.number()
            ),
            // The host's own client raises it too, with the name: said there.
            EndpointEvent::PlayerJoined { .. } => {}
            // In the game `PlayerOut` says it, with the frame its input stops at.
            EndpointEvent::Left { slot, reason } if running => {
                self.left_why.retain(|(s, _)| *s != slot);
                self.left_why.push((slot, reason.to_string()));
            }
            // Before the game, by its place, as the lobby has always said it.
            EndpointEvent::Left { slot, reason } => {
                tracing::warn!("netplay: {slot} {reason}")
            }
            EndpointEvent::Refused { addr, reason } => {
                tracing::warn!("netplay: refused {addr}: {reason}")
            }
            EndpointEvent::PlayerSilent { slot, silent_for } => tracing::warn!(
                "netplay: nothing from {} for {} ms",
                self.name(slot),
                silent_for.as_millis()
            ),
            EndpointEvent::PlayerOut {
                slot,
                reason,
                from_frame,
            } => {
                let who = self.name(slot);
                let bye = self.left_why.iter().find(|(s, _)| *s == slot);
                match (&reason, bye) {
                    (PlayerOutReason::Left, Some((_, why))) => tracing::info!(
                        "netplay: {who} {why}; neutral input from frame {}",
                        from_frame.0
                    ),
                    (PlayerOutReason::Left, None) => tracing::info!(
                        "netplay: {who} is out (left); neutral input from frame {}",
                        from_frame.0
                    ),
                    (PlayerOutReason::TimedOut | PlayerOutReason::TimedOutLoading, _) => {
                        tracing::warn!(
                        "netplay: {who} is out ({reason}); neutral input from frame {}; it may \
                         come back",
                        from_frame.0
                    )
                    }
                    (PlayerOutReason::SlowStart, _) => tracing::warn!(
                        "netplay: {who} is out ({reason}); neutral input from frame {}",
                        from_frame.0
                    ),
                }
                self.left_why.retain(|(s, _)| *s != slot);
            }
            EndpointEvent::Desync {
                frame,
                slot,
                expected,
                got,
                send_state,
                ..
            } => {
                tracing::error!(
                    "netplay: desync at frame {}: {} has {got:016x}, host has {expected:016x}{}",
                    frame.0,
                    self.name(slot),
                    if send_state {
                        "; sending the host's state"
                    } else {
                        " (recovery under way)"
                    }
                );
                // The host's log: its own checksum and the player's.
                let desync = Event::Desync {
                    local: expected,
                    remote: got,
                };
                recorded.push((frame, desync));
            }
            EndpointEvent::StillLoading {
                slot,
                waited,
                again: false,
            } => tracing::info!(
                "netplay: {} is still loading ({:.1} s since it had the start state); the \
                 game starts when it runs (waiting up to {} s)",
                self.name(slot),
                waited.as_secs_f64(),
                LOADING_LIMIT.as_secs()
            ),
            EndpointEvent::StillLoading { slot, waited, .. } => tracing::info!(
                "netplay: still waiting for {} to load ({:.0} s)",
                self.name(slot),
                waited.as_secs_f64()
            ),
            EndpointEvent::Running { slot, waited } => tracing::info!(
                "netplay: {} is running, {:.1} s after it had the start state",
                self.name(slot),
                waited.as_secs_f64()
            ),
            EndpointEvent::Resynced { slot, frame } => {
                tracing::info!(
                    "netplay: {} has the host's state for frame {}",
                    self.who(slot),
                    frame.0
                );
                self.counters.resyncs += 1;
            }
            EndpointEvent::PathChanged { slot, from, to } => {
                tracing::info!("netplay: {} moved from {from} to {to}", self.who(slot))
            }
            other => tracing::debug!("netplay: {other:?}"),
        }
    }
}
