//! [`Participant`]: one process's whole end of a netplay session as one sans-IO state
//! machine: the host's side (its [`Endpoint`] with its own player's lockstep [`Client`],
//! talking to it in memory) or a joiner's (its handshake, then its [`Seat`] with its client).
//! The rules about time and silence that span the machines it holds live here (each machine
//! keeps its own: the handshake's, the lobby's, the lockstep's, the transfer's), so a
//! simulation runs hours of them in milliseconds: when a silence is a loss, what a joiner
//! sends while a lobby waits, when the host's own player counts as starting, when a dropped
//! joiner reconnects and for how long, and path checks after an address change. It must not
//! import `serve`, `app` or `netplay`, which drive it.
//!
//! Calling order, as for every state machine here (quinn-proto's): feed each datagram to
//! [`handle_datagram`](Participant::handle_datagram) with the time it was received, call
//! [`handle_timeout`](Participant::handle_timeout) once
//! [`poll_timeout`](Participant::poll_timeout) is reached, then drain
//! [`poll_transmit`](Participant::poll_transmit) and [`poll_event`](Participant::poll_event).
//! The frame loop pushes its pad with [`push_local_input`](Participant::push_local_input),
//! takes frames with [`poll_frame`](Participant::poll_frame), and answers the
//! [`CoreRequest`]s among the events with [`handle_core`](Participant::handle_core) (the
//! machine's work: checksums, states to send, states to load), as ggrs hands its caller
//! `GgrsRequest`s. It never reads a clock and never touches a socket.
//!
//! # Liveness
//! - **Lobby.** A joiner with the start state waits for the game to start for as long as
//!   the host does: it says it is there once every [`LOBBY_KEEPALIVE`] (its lockstep
//!   client's CTRL, held back otherwise), the host answers with a `Lobby` every second,
//!   and either side counts the other as gone after [`LOBBY_SILENCE`]. About 100 bytes a
//!   second each way, and home routers keep their mapping (many forget one after 30 s).
//! - **Game.** Once the host's lockstep server has spoken, its silence counts as the lockstep
//!   client's timeout says (2 s).
//! - **Reconnecting.** A joiner that lost the host, or was told it was dropped for silence,
//!   does not end: it runs the handshake again, from its own address as it is now, until
//!   [`ParticipantConfig::reconnect`] has passed. The host gives the returning player its
//!   seat back (by name) with a fresh state of the running game, as for any rejoin; the
//!   machine jumps to it ([`CoreRequest::Load`] with `jump`). Meanwhile no frame runs.
//! - **Address changes.** A datagram with a peer's valid tag from a new address starts a
//!   path check there (QUIC's path validation); the peer moves once the new address has
//!   echoed the challenge, and until then the new address is sent at most three times the
//!   bytes received from it. A joiner that hears nothing for [`PROBE_AFTER`] sends a `Path`
//!   probe (it carries the session id, which a dedicated server routes by).
//! - **A stopped frame loop.** The frame loop is this process's player: once it has run,
//!   nothing is sent for it while it has not called for [`FRAME_LOOP_AWAY`] (hung, stopped
//!   in a debugger), so the others drop it rather than wait for its input forever.

mod host_routes;
#[cfg(test)]
mod host_routes_tests;
mod host_side;
mod join_route;
mod join_side;

pub use host_routes::HostRoutes;
pub use host_side::HostSide;
pub use join_route::JoinRoute;
use join_side::JoinPhase;
pub use join_side::JoinSide;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::chat::{sanitize, ChatLine, ChatRefused, RateWindow, Speaker};
use super::{
    Dropped, Endpoint, EndpointEvent, Handled, JoinConfig, JoinEvent, JoinSession, Seat, SeatEvent,
    SessionError, StartState, Transmit, LOADING_LIMIT,
};
use crate::input::{Inputs, Pad};
use crate::lockstep::{self, Client, ClientEvent, Frame, PeerId, Roster, Slot};
use crate::session::direct::{PathEvent, PathKind, PathMode};
use crate::wire::keys::Keys;
use crate::wire::link_overhead;

/// How often a joiner waiting in the lobby says it is there.
pub const LOBBY_KEEPALIVE: Duration = Duration::from_secs(1);
/// Silence after which a lobby's other side counts as gone (it may come back).
pub const LOBBY_SILENCE: Duration = crate::session::host::READY_TIMEOUT;
/// Silence from the host after which a playing joiner sends `Path` probes, one per this.
pub const PROBE_AFTER: Duration = Duration::from_millis(250);
/// The frame loop speaks for its player only while it runs (see the module docs). Longer
/// than any draw, shorter than the silence warning (500 ms).
pub const FRAME_LOOP_AWAY: Duration = Duration::from_millis(250);
/// How long a joiner that runs waits for the game to start before it says so.
const WAIT_NOTICE: Duration = Duration::from_secs(1);
/// Default [`ParticipantConfig::reconnect`].
pub const DEFAULT_RECONNECT: Duration = Duration::from_secs(60);
/// How often a reconnecting joiner sends its Hello (padded to 1200 bytes: a slower pace
/// than a first join's keeps an outage's traffic low).
const RECONNECT_HELLO: Duration = Duration::from_millis(500);

/// What a participant needs besides its session machine.
#[derive(Clone, Debug)]
pub struct ParticipantConfig {
    /// Frames between desync checksums: the machine's checksum is asked for after every
    /// frame `f` with `(f + 1) % checksum_interval == 0`.
    pub checksum_interval: u32,
    /// How long a joiner whose link dropped tries to come back; zero: it does not.
    pub reconnect: Duration,
    /// `--path`: in a room on a server, whether direct paths are tried.
    pub path: PathMode,
}

impl Default for ParticipantConfig {
    fn default() -> Self {
        ParticipantConfig {
            checksum_interval: 600,
            reconnect: DEFAULT_RECONNECT,
            path: PathMode::Auto,
        }
    }
}

/// Work only the machine can do, asked for between frames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoreRequest {
    /// The machine's checksum after frame `frame` ran (it has just run): reply
    /// [`CoreReply::Checksum`].
    Checksum {
        /// The frame that ran.
        frame: Frame,
    },
    /// The machine's state as of the start of the next frame, for the joiners in `for_slots`
    /// (a late joiner, a resync, a dedicated server asking): reply [`CoreReply::State`].
    SaveState {
        /// Who it is for.
        for_slots: Vec<Slot>,
    },
    /// Load `state` (and `sram`, if not empty), the machine as of the start of `frame`.
    /// Without `jump` it is a desync recovery: the frames from `frame` on that this machine
    /// ran already are run again from its history. With `jump` the machine goes on from
    /// `frame` (a spectator that fell behind, a player back from a lost connection), and no
    /// frame is handed out until the reply [`CoreReply::Loaded`].
    Load {
        /// The frame the state is at the start of.
        frame: Frame,
        /// The state.
        state: Vec<u8>,
        /// Save RAM to write first (empty: none).
        sram: Vec<u8>,
        /// Go on from `frame` instead of running frames again.
        jump: bool,
    },
}

/// The machine's answer to a [`CoreRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoreReply {
    /// See [`CoreRequest::Checksum`].
    Checksum {
        /// The frame that ran.
        frame: Frame,
        /// The machine's checksum after it.
        checksum: u64,
    },
    /// See [`CoreRequest::SaveState`].
    State {
        /// The frame the state is at the start of.
        frame: Frame,
        /// The state.
        state: Vec<u8>,
        /// Who it is for.
        for_slots: Vec<Slot>,
    },
    /// See [`CoreRequest::Load`]: the state at the start of `frame` is loaded.
    Loaded {
        /// The frame.
        frame: Frame,
    },
}

/// What happened, for the driver to log, show or act on.
#[derive(Clone, Debug, PartialEq)]
pub enum ParticipantEvent {
    /// Host: its session's server side raised this.
    Session(EndpointEvent),
    /// This player's lockstep client raised this (players leaving and joining, desyncs).
    Game(ClientEvent),
    /// Joiner: admitted; the start state is on its way.
    Welcomed {
        /// The seat to play; `None`: it watches (a spectator).
        slot: Option<PeerId>,
        /// Players in, by seat and name.
        players: Roster,
        /// Bytes of the compressed start state to come.
        packed_len: usize,
        /// The session's lockstep mode and keyframe interval.
        mode: lockstep::Mode,
        /// See `mode`.
        keyframe_interval: u8,
    },
    /// Joiner: the start state is here. The driver loads the host's options, the content,
    /// the save RAM and the state, then starts the frame loop.
    Ready(Box<StartState>),
    /// Joiner: the lobby waits for more players.
    Waiting {
        /// Players with the start state, the host's included.
        ready: u8,
        /// Players the session takes.
        want: u8,
    },
    /// Joiner in a room: this player checked a relayed password.
    PasswordChecked {
        /// The password was right.
        admitted: bool,
    },
    /// The machine has work to do (answer with [`Participant::handle_core`]).
    Core(CoreRequest),
    /// Joiner: a desync recovery's state arrived (it is loaded through a `Core` request).
    StateReceived {
        /// The frame it is at the start of.
        frame: Frame,
        /// Its size.
        bytes: usize,
        /// A spectator that fell behind jumps to it.
        jump: bool,
    },
    /// Joiner: a dedicated server asked for this machine's state, to resync a player.
    StateAsked,
    /// The frame loop has not run `LOADING_LIMIT` after the game could start (a start that
    /// hangs): this player goes silent, so that the others drop it rather than wait.
    StartOverdue {
        /// What it could have started after: the start state (a joiner) or the lobby.
        after: &'static str,
    },
    /// Joiner: it runs, and the game has not started a second after it said so (the others
    /// are still loading, or the lobby waits for more players).
    WaitingForStart {
        /// It joined a running game: it waits for the host's first frames.
        late: bool,
    },
    /// Joiner: the link to the host is gone; it tries to come back until `until`.
    ConnectionLost {
        /// Why it counts as lost.
        why: String,
        /// When it gives up.
        until: Instant,
    },
    /// Joiner: back in the session, from the host's state at `frame`.
    Back {
        /// The frame it goes on from.
        frame: Frame,
        /// Its seat; `None`: it watches (a spectator).
        slot: Option<PeerId>,
    },
    /// Joiner: the host moved to a new address.
    HostMoved {
        /// The address it had.
        from: SocketAddr,
        /// The address it has now.
        to: SocketAddr,
    },
    /// A hosted room: a player's path went direct or back to the relay.
    Path {
        /// Host: the joiner (as the server names it); joiner: `None` (the path to the host).
        peer: Option<SocketAddr>,
        /// What happened.
        event: PathEvent,
    },
    /// Someone else's chat message, in the order everyone hears them.
    Chat(ChatLine),
    /// The session is over for this participant.
    Ended(SessionError),
}

/// One process's end of a session. See the module docs.
#[derive(Debug)]
pub enum Participant {
    /// The session's server side with this process's player beside it.
    Host(Box<HostSide>),
    /// A joiner's side.
    Join(Box<JoinSide>),
}

/// When the frame loop last called, and since when it runs.
#[derive(Debug, Default)]
struct FrameLoop {
    started: Option<Instant>,
    latest: Option<Instant>,
    /// When the game could start (the start state, the lobby's end), and whether the frame
    /// loop was overdue by `LOADING_LIMIT`.
    could_start: Option<Instant>,
    overdue: bool,
}

impl FrameLoop {
    fn call(&mut self, now: Instant) {
        self.started.get_or_insert(now);
        self.latest = Some(self.latest.map_or(now, |t| t.max(now)));
    }

    /// It ran, and has not called for `FRAME_LOOP_AWAY`; or it never ran, `LOADING_LIMIT`
    /// after it could have.
    fn away(&self, now: Instant) -> bool {
        self.overdue
            || self
                .latest
                .is_some_and(|t| now.saturating_duration_since(t) > FRAME_LOOP_AWAY)
    }

    /// Whether it just became overdue.
    fn check_overdue(&mut self, now: Instant) -> bool {
        let late =
            self.started.is_none() && self.could_start.is_some_and(|t| now >= t + LOADING_LIMIT);
        if late && !self.overdue {
            self.overdue = true;
            return true;
        }
        false
    }
}

crate::wire::impl_machine!(Participant, ParticipantEvent);

impl Participant {
    /// The host's side around `endpoint` (its lobby is open). `local` is this player's
    /// lockstep settings; they talk in memory, so its budget and header are zero.
    pub fn host(
        now: Instant,
        endpoint: Endpoint,
        local: lockstep::Config,
        cfg: ParticipantConfig,
    ) -> Participant {
        let local_cfg = lockstep::Config {
            send_budget: 0,
            udp_ip_header: 0,
            session: endpoint.session_id(),
            ..local
        };
        Participant::Host(Box::new(HostSide {
            endpoint,
            local_cfg,
            client: None,
            cfg,
            frame_loop: FrameLoop::default(),
            chat_rate: RateWindow::default(),
            events: VecDeque::new(),
            now,
            routes: None,
        }))
    }

    /// The host's side of a room it hosts on `server` (`framelock host --server`): the
    /// server relays its joiners and introduces them for direct paths (`session::direct`).
    /// `room_key` is the secret the server's `Opened` gave (`RoomOpener::room_key`).
    pub fn host_room(
        now: Instant,
        endpoint: Endpoint,
        local: lockstep::Config,
        cfg: ParticipantConfig,
        server: SocketAddr,
        room_key: &[u8; crate::session::msg::ROOM_KEY_LEN],
    ) -> Participant {
        let seed = u64::from(endpoint.session_id()) ^ 0x9e37_79b9_7f4a_7c15;
        let routes = HostRoutes::new(now, server, cfg.path, seed, room_key);
        let mut p = Participant::host(now, endpoint, local, cfg);
        if let Participant::Host(h) = &mut p {
            h.routes = Some(routes);
        }
        p
    }

    /// A joiner's side: its handshake starts at once. `base` holds this end's own lockstep
    /// settings (send budget, timeouts); the session's come with the start state.
    pub fn join(
        now: Instant,
        join: JoinConfig,
        base: lockstep::Config,
        cfg: ParticipantConfig,
    ) -> Participant {
        // Its own stream, apart from the first handshake's: each reconnect gets fresh keys.
        let rng = StdRng::from_seed(blake3::derive_key(
            "framelock reconnect keys",
            &join.entropy,
        ));
        let session = JoinSession::new(now, join.clone());
        let route = (!join.room.is_empty()).then(|| {
            let seed = u64::from_le_bytes(join.entropy[..8].try_into().expect("8 bytes"));
            JoinRoute::new(join.host, cfg.path, seed ^ 0x5851_f42d_4c95_7f2d)
        });
        Participant::Join(Box::new(JoinSide {
            join,
            base,
            cfg,
            rng,
            phase: JoinPhase::Joining(session),
            frame_loop: FrameLoop::default(),
            chat_rate: RateWindow::default(),
            events: VecDeque::new(),
            now,
            closed: false,
            route,
        }))
    }

    /// A datagram from `from`, received at `at`: what the machine it was for did with it.
    pub fn handle_datagram(
        &mut self,
        at: Instant,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Handled<'static> {
        match self {
            Participant::Host(h) => h.handle_datagram(at, from, datagram),
            Participant::Join(j) => j.handle_datagram(at, from, datagram),
        }
    }

    /// Runs the timers due by `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        match self {
            Participant::Host(h) => h.handle_timeout(now),
            Participant::Join(j) => j.handle_timeout(now),
        }
    }

    /// This player's pad for its next frame (the frame loop calls it once per frame it
    /// may run, and so shows that it runs).
    pub fn push_local_input(&mut self, now: Instant, pad: Pad) {
        let (frame_loop, client) = match self {
            Participant::Host(h) => (&mut h.frame_loop, h.client.as_mut()),
            Participant::Join(j) => {
                let client = match &mut j.phase {
                    JoinPhase::Seated(s) if s.awaiting_load.is_none() => Some(&mut s.client),
                    _ => None,
                };
                (&mut j.frame_loop, client)
            }
        };
        frame_loop.call(now);
        if let Some(c) = client {
            c.push_local_input(now, pad);
        }
    }

    /// The frame loop calls without a pad to push (it waits, draws): it is alive.
    pub fn frame_loop_alive(&mut self, now: Instant) {
        match self {
            Participant::Host(h) => h.frame_loop.call(now),
            Participant::Join(j) => j.frame_loop.call(now),
        }
    }

    /// The next frame to run and everyone's inputs for it, if it may run.
    pub fn poll_frame(&mut self) -> Option<(Frame, Inputs)> {
        let (client, interval, events) = match self {
            Participant::Host(h) => (h.client.as_mut()?, h.cfg.checksum_interval, &mut h.events),
            Participant::Join(j) => match &mut j.phase {
                JoinPhase::Seated(s) if s.awaiting_load.is_none() => {
                    (&mut s.client, j.cfg.checksum_interval, &mut j.events)
                }
                _ => return None,
            },
        };
        let (frame, inputs) = client.poll_frame()?;
        if (frame.0 + 1).is_multiple_of(interval.max(1)) {
            events.push_back(ParticipantEvent::Core(CoreRequest::Checksum { frame }));
        }
        Some((frame, inputs))
    }

    /// The machine's answer to a [`CoreRequest`].
    pub fn handle_core(&mut self, now: Instant, reply: CoreReply) {
        match self {
            Participant::Host(h) => h.handle_core(now, reply),
            Participant::Join(j) => j.handle_core(now, reply),
        }
    }

    /// The next datagram to send, with the IP TTL it asks for (a direct path's first punch
    /// asks for a low one, see `session::direct`).
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        match self {
            Participant::Host(h) => h.poll_transmit(now),
            Participant::Join(j) => j.poll_transmit(now),
        }
    }

    /// A room hosted by a player: how long its first direct path took to prove from the
    /// server's introduction (the host: its quickest joiner's).
    pub fn first_direct(&self) -> Option<Duration> {
        match self {
            Participant::Host(h) => h.routes.as_ref()?.first_direct(),
            Participant::Join(j) => j.route.as_ref()?.first_direct(),
        }
    }

    /// This process's router forwards `addr` to it (`portmap`), or no longer does
    /// (`None`). In a room hosted by a player, the other side of each direct path hears of
    /// it over the relay and punches it too; elsewhere it changes nothing.
    pub fn handle_mapped(&mut self, addr: Option<SocketAddr>) {
        match self {
            Participant::Host(h) => {
                if let Some(routes) = &mut h.routes {
                    routes.set_mapped(addr, &mut h.endpoint);
                }
            }
            Participant::Join(j) => j.set_mapped(addr),
        }
    }

    /// In a room this process hosts: the outside addresses the joiners' routers forward to
    /// them, by seat, as each told. Where a player could be reached if the game moved to
    /// it (a new host).
    pub fn mapped_players(&self) -> Vec<(PeerId, Vec<SocketAddr>)> {
        match self {
            Participant::Host(h) => h
                .routes
                .as_ref()
                .map(|r| r.advertised())
                .unwrap_or_default(),
            Participant::Join(_) => Vec::new(),
        }
    }

    /// This process hosts a room on a server (`host_room`).
    pub fn hosts_room(&self) -> bool {
        matches!(self, Participant::Host(h) if h.routes.is_some())
    }

    /// How each joiner of a room this process hosts is reached, by slot (one who left: as
    /// when it was last in; empty for a direct host); a joiner's own path to its host as
    /// slot `None`.
    pub fn paths(&self) -> Vec<(Option<PeerId>, PathKind)> {
        match self {
            Participant::Host(h) => match &h.routes {
                Some(routes) => routes
                    .paths(&h.endpoint)
                    .into_iter()
                    .map(|(slot, kind)| (Some(slot), kind))
                    .collect(),
                None => Vec::new(),
            },
            Participant::Join(j) => j
                .route
                .iter()
                .filter_map(|r| Some((None, r.kind()?)))
                .collect(),
        }
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<ParticipantEvent> {
        match self {
            Participant::Host(h) => h.events.pop_front(),
            Participant::Join(j) => j.events.pop_front(),
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) (or `poll_transmit`) has work next;
    /// never before the latest `now` handed in. A joiner whose frame loop stopped leaves its
    /// held sends out; a host's endpoint may still have one due that `poll_transmit` holds
    /// back, and that is due now, not in the past.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let (t, now) = match self {
            Participant::Host(h) => (h.poll_timeout(), h.now),
            Participant::Join(j) => (j.poll_timeout(), j.now),
        };
        t.map(|t| t.max(now))
    }

    /// Says `text` to everyone in the session: sanitised (see [`chat::sanitize`]), within
    /// this sender's rate, tagged at the frame this player is at. Returns the line as the
    /// others will see it (to show it here too), or why it was not sent. Drain
    /// `poll_transmit` afterwards.
    ///
    /// [`chat::sanitize`]: super::chat::sanitize
    pub fn say(&mut self, now: Instant, text: &str) -> Result<ChatLine, ChatRefused> {
        let text = sanitize(text);
        if text.is_empty() {
            return Err(ChatRefused::Empty);
        }
        let frame = self.client().map_or(Frame::ZERO, |c| c.frame());
        match self {
            Participant::Host(h) => {
                let now = h.clock(now);
                h.chat_rate.take(now)?;
                Ok(h.endpoint.say_local(now, frame, text))
            }
            Participant::Join(j) => {
                let now = j.clock(now);
                let JoinPhase::Seated(s) = &mut j.phase else {
                    return Err(ChatRefused::NotConnected);
                };
                j.chat_rate.take(now)?;
                s.seat.say(frame, text.clone());
                let from = if s.client.is_spectator() {
                    Speaker::OwnWatching
                } else {
                    Speaker::In(Slot::Player(s.client.me()))
                };
                // The name the host gives a player who has none of its own.
                let name = match (j.join.info.player_name.as_str(), from.player()) {
                    ("", None) => "spectator".into(),
                    ("", Some(me)) => me.to_string(),
                    (name, _) => name.to_string(),
                };
                Ok(ChatLine {
                    from,
                    name,
                    frame,
                    text,
                })
            }
        }
    }

    /// A modified client: `text` goes out with no local limit (tests of the relay's, here
    /// and in the framelock crate, which turns on the `testkit` feature).
    #[cfg(any(test, feature = "testkit"))]
    #[doc(hidden)]
    pub fn say_unlimited(&mut self, text: &str) {
        if let Participant::Join(j) = self {
            if let JoinPhase::Seated(s) = &mut j.phase {
                s.seat.say(Frame::ZERO, text.into());
            }
        }
    }

    /// Says goodbye (the host to everyone, a joiner to the host); drain `poll_transmit`.
    pub fn close(&mut self, reason: &str) {
        match self {
            Participant::Host(h) => {
                h.endpoint.shutdown(reason);
                if let Some(routes) = &mut h.routes {
                    routes.close(h.now, &mut h.endpoint);
                }
            }
            Participant::Join(j) => j.close(reason),
        }
    }

    /// This player's lockstep client, once it has one.
    pub fn client(&self) -> Option<&Client> {
        match self {
            Participant::Host(h) => h.client.as_ref(),
            Participant::Join(j) => match &j.phase {
                JoinPhase::Seated(s) => Some(&s.client),
                _ => None,
            },
        }
    }

    /// See [`client`](Self::client).
    pub fn client_mut(&mut self) -> Option<&mut Client> {
        match self {
            Participant::Host(h) => h.client.as_mut(),
            Participant::Join(j) => match &mut j.phase {
                JoinPhase::Seated(s) => Some(&mut s.client),
                _ => None,
            },
        }
    }

    /// The host's endpoint.
    pub fn endpoint(&self) -> Option<&Endpoint> {
        match self {
            Participant::Host(h) => Some(&h.endpoint),
            Participant::Join(_) => None,
        }
    }

    /// A joiner's handshake, while it runs (first join or reconnect).
    pub fn join_session(&self) -> Option<&JoinSession> {
        match self {
            Participant::Join(j) => match &j.phase {
                JoinPhase::Joining(s) | JoinPhase::Reconnecting { session: s, .. } => Some(s),
                _ => None,
            },
            Participant::Host(_) => None,
        }
    }

    /// A joiner's seat, while it has one.
    pub fn seat(&self) -> Option<&Seat> {
        match self {
            Participant::Join(j) => match &j.phase {
                JoinPhase::Seated(s) => Some(&s.seat),
                _ => None,
            },
            Participant::Host(_) => None,
        }
    }

    /// A player joiner's seat key (`Welcome::seat_key`): the newest Welcome's, which a
    /// reconnect or a fresh `join` shows to get the seat back. `None` before the Welcome,
    /// for a spectator and for the host.
    pub fn seat_key(&self) -> Option<[u8; crate::session::msg::SEAT_KEY_LEN]> {
        let key = match self {
            Participant::Join(j) => match &j.phase {
                JoinPhase::Joining(s) | JoinPhase::Reconnecting { session: s, .. } => s.seat_key(),
                JoinPhase::Seated(_) => j.join.seat_key,
                JoinPhase::Ended => return None,
            },
            Participant::Host(_) => return None,
        };
        Some(key).filter(|k| *k != [0; crate::session::msg::SEAT_KEY_LEN])
    }

    /// A joiner that lost the host tries to come back until this.
    pub fn reconnecting_until(&self) -> Option<Instant> {
        match self {
            Participant::Join(j) => match &j.phase {
                JoinPhase::Reconnecting { until, .. } => Some(*until),
                _ => None,
            },
            Participant::Host(_) => None,
        }
    }

    /// The session is over for this participant.
    pub fn is_ended(&self) -> bool {
        matches!(self, Participant::Join(j) if matches!(j.phase, JoinPhase::Ended))
    }

    /// True on the host's side.
    pub fn is_host(&self) -> bool {
        matches!(self, Participant::Host(_))
    }
}
