//! [`Seat`]: a joiner's side of a running session, sans-IO. After the handshake it keeps the
//! session layer going (goodbyes, lobby notices, `Loading`), receives the states a desync
//! recovery sends, sends this machine's state when a dedicated server asks for it, and tells
//! its driver which datagrams are the lockstep client's. The counterpart of [`Endpoint`]
//! (the server side), with the lockstep client beside it, as the host's own player is
//! beside its endpoint.
//!
//! [`Endpoint`]: super::Endpoint

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Instant;

use super::chat::{ChatLine, ChatLink};
use super::{
    is_session_datagram, resync_part, Dropped, Handled, JoinEvent, JoinSession, ResyncPart,
    ResyncRecv, ResyncSend, SessionError, Transmit,
};
use crate::lockstep::Frame;
use crate::wire::{Header, Kind, HEADER_LEN};

/// What happened, for the driver to act on or log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeatEvent {
    /// The host (or server) left, or the session failed.
    Failed(SessionError),
    /// The lobby waits for more players: `ready` of `want` are in.
    Waiting {
        /// Players with the start state, the host's included.
        ready: u8,
        /// Players the session takes.
        want: u8,
    },
    /// This player, a room's creator, checked a joiner's password.
    PasswordChecked {
        /// The password was right.
        admitted: bool,
    },
    /// A desync recovery's state as of the start of `frame`: load it.
    State {
        /// The frame the state is at the start of.
        frame: Frame,
        /// The state.
        state: Vec<u8>,
    },
    /// A dedicated server asks for this machine's state: hand it to
    /// [`Seat::handle_state`] at the next frame boundary.
    StateWanted,
    /// The host moved to a new address (it answered a challenge there).
    HostMoved {
        /// The address it had.
        from: SocketAddr,
        /// The address it has now.
        to: SocketAddr,
    },
    /// Someone else's chat message, in the relay's order.
    Chat(ChatLine),
}

/// A joiner's side of a running session. Calling order as for the other session machines.
#[derive(Debug)]
pub struct Seat {
    session: JoinSession,
    resync: ResyncRecv,
    /// The transfer id of a state the server asked for, until it is handed in.
    asked: Option<u32>,
    upload: Option<Box<ResyncSend>>,
    chat: ChatLink,
    events: VecDeque<SeatEvent>,
}

crate::wire::impl_machine!(Seat, SeatEvent);

impl Seat {
    /// `session` has finished its handshake (it gave its start state).
    pub fn new(session: JoinSession) -> Seat {
        let chat = ChatLink::new(session.chat_stream());
        Seat {
            session,
            resync: ResyncRecv::default(),
            asked: None,
            upload: None,
            chat,
            events: VecDeque::new(),
        }
    }

    /// The host (or server) it plays with.
    pub fn host(&self) -> SocketAddr {
        self.session.host()
    }

    /// Tells the host where this player is now (see [`JoinSession::probe`]).
    pub fn probe(&mut self) {
        self.session.probe();
    }

    /// The session id.
    pub fn session_id(&self) -> u32 {
        self.session.session_id()
    }

    /// When the host was last heard from by the session layer.
    pub fn last_heard(&self) -> Option<Instant> {
        self.session.last_heard()
    }

    /// The lockstep client speaks for this player now (its first CTRL left): no more
    /// `Loading`.
    pub fn end_loading(&mut self) {
        self.session.end_loading();
    }

    /// Says goodbye (drain `poll_transmit` afterwards).
    pub fn leave(&mut self, reason: &str) {
        self.session.leave(reason);
    }

    /// A datagram from `from`: its tag is checked, then it is taken, or passed back without
    /// its tag when it is the lockstep client's (give it to the client).
    pub fn handle_datagram<'a>(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &'a [u8],
    ) -> Handled<'a> {
        let datagram = if from == self.session.host() {
            let Some(datagram) = self.session.open(datagram) else {
                self.session.note_unauthentic();
                return Handled::Dropped(Dropped::Unauthentic);
            };
            datagram
        } else {
            // The host's tag from elsewhere: it moved (see `JoinSession::open_other`).
            let Some(datagram) = self.session.open_other(now, from, datagram) else {
                return Handled::Dropped(Dropped::NotFromHost(from));
            };
            datagram
        };
        let kind = Header::parse(datagram).ok().map(|(h, _)| h.kind);
        if kind == Some(Kind::Chat) {
            let handled = self.chat.handle(now, &datagram[HEADER_LEN..]);
            while let Some(line) = self.chat.poll_line() {
                self.events.push_back(SeatEvent::Chat(line));
            }
            return handled;
        }
        if kind != Some(Kind::Resync) {
            if !is_session_datagram(datagram) {
                return Handled::Passed(datagram);
            }
            let handled = self.session.handle_opened(now, from, datagram).into();
            self.take_session_events();
            return handled;
        }
        let body = &datagram[HEADER_LEN..];
        match resync_part(body) {
            Some(ResyncPart::Request { id }) => {
                let busy = self.upload.as_ref().is_some_and(|u| !u.is_complete());
                if self.asked.is_none() && !busy {
                    self.asked = Some(id);
                    self.events.push_back(SeatEvent::StateWanted);
                }
                Handled::Taken
            }
            Some(ResyncPart::Ack) => {
                match self.upload.as_mut().map(|tx| tx.handle_datagram(now, body)) {
                    Some(Handled::Taken) => Handled::Taken,
                    Some(Handled::Dropped(why)) => Handled::Dropped(why),
                    // Another transfer's ack, or no upload.
                    Some(Handled::Passed(_)) | None => {
                        Handled::Dropped(Dropped::Unexpected(Kind::Resync))
                    }
                }
            }
            _ => {
                let handled = self.resync.handle_datagram(now, body);
                if let Some((frame, state)) = self.resync.poll_state() {
                    self.events.push_back(SeatEvent::State {
                        frame: Frame(frame),
                        state,
                    });
                }
                handled
            }
        }
    }

    /// Queues a chat message (sanitised, within the rate) said at `frame`.
    pub fn say(&mut self, frame: Frame, text: String) {
        self.chat.say(frame, text);
    }

    /// Chat messages said and not yet acknowledged by the host.
    pub fn chat_unacked(&self) -> usize {
        self.chat.unacked()
    }

    /// This machine's state as of the start of `frame`, asked for by `StateWanted`.
    pub fn handle_state(&mut self, now: Instant, frame: Frame, state: Vec<u8>) {
        let Some(id) = self.asked.take() else {
            return;
        };
        match ResyncSend::new(now, id, frame.0, state) {
            Ok(tx) => self.upload = Some(Box::new(tx)),
            Err(e) => tracing::error!("cannot send this machine's state: {e}"),
        }
    }

    /// Resends and timeouts due by `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.session.handle_timeout(now);
        self.take_session_events();
    }

    /// The handshake's session, which holds the keys.
    pub fn join_session(&self) -> &JoinSession {
        &self.session
    }

    /// Tags a datagram of this player's lockstep client for the host.
    pub fn seal(&self, mut bytes: Vec<u8>) -> Transmit {
        self.session.seal(&mut bytes);
        Transmit::new(self.session.host(), bytes)
    }

    /// The session layer's counters (`dropped_auth` among them).
    pub fn stats(&self) -> super::SessionStats {
        self.session.stats()
    }

    /// The next session-layer datagram to send, tagged.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if let Some(t) = self.session.poll_transmit(now) {
            return Some(t);
        }
        let id = self.session.session_id();
        if let Some(t) = self.chat.poll_transmit(now, id) {
            return Some(self.seal(t.bytes));
        }
        if let Some(t) = self.resync.poll_transmit(now, id) {
            return Some(self.seal(t.bytes));
        }
        let tx = self.upload.as_mut()?;
        let t = tx.poll_transmit(now, id);
        if tx.is_complete() {
            tracing::info!("sent this machine's state for frame {}", tx.frame());
            self.upload = None;
        }
        t.map(|t| self.seal(t.bytes))
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<SeatEvent> {
        self.events.pop_front()
    }

    /// When `handle_timeout` or `poll_transmit` has work next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            self.session.poll_timeout(),
            self.chat.poll_timeout(),
            self.resync.poll_timeout(),
            self.upload.as_ref().and_then(|tx| tx.poll_timeout()),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn take_session_events(&mut self) {
        while let Some(ev) = self.session.poll_event() {
            let ev = match ev {
                JoinEvent::Failed(e) => SeatEvent::Failed(e),
                JoinEvent::Waiting { ready, want } => SeatEvent::Waiting { ready, want },
                JoinEvent::PasswordChecked { admitted } => SeatEvent::PasswordChecked { admitted },
                JoinEvent::HostMoved { from, to } => SeatEvent::HostMoved { from, to },
                JoinEvent::Welcomed { .. } | JoinEvent::Ready(_) => continue,
            };
            self.events.push_back(ev);
        }
    }
}
