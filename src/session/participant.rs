//! [`Participant`]: one process's whole end of a netplay session as one sans-IO state
//! machine: the host's side (its [`Endpoint`] with its own player's lockstep [`Client`],
//! talking to it in memory) or a joiner's (its handshake, then its [`Seat`] with its client).
//! Every rule about time and silence lives here, so a simulation runs hours of them in
//! milliseconds: when a silence is a loss, what a joiner sends while a lobby waits, when the
//! host's own player counts as starting, when a dropped joiner reconnects and for how long,
//! and path checks after an address change.
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

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::chat::{sanitize, ChatLine, ChatRefused, RateWindow};
use super::{
    Endpoint, EndpointEvent, JoinConfig, JoinEvent, JoinSession, Seat, SeatEvent, SessionError,
    StartState, Transmit, LOADING_LIMIT,
};
use crate::input::{Inputs, Pad};
use crate::lockstep::{self, Client, ClientEvent, Frame, PeerId};
use crate::wire::link_overhead;

/// How often a joiner waiting in the lobby says it is there.
pub const LOBBY_KEEPALIVE: Duration = Duration::from_secs(1);
/// Silence after which a lobby's other side counts as gone (it may come back).
pub const LOBBY_SILENCE: Duration = super::host::READY_TIMEOUT;
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
}

impl Default for ParticipantConfig {
    fn default() -> Self {
        ParticipantConfig {
            checksum_interval: 600,
            reconnect: DEFAULT_RECONNECT,
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
        for_slots: Vec<u8>,
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
        for_slots: Vec<u8>,
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
        /// The slot to play (0xff: a spectator).
        slot: u8,
        /// Players in, by slot and name.
        players: Vec<(u8, String)>,
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
        /// Its slot (0xff: a spectator).
        slot: u8,
    },
    /// Joiner: the host moved to a new address.
    HostMoved {
        /// The address it had.
        from: SocketAddr,
        /// The address it has now.
        to: SocketAddr,
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

/// The host's side: its endpoint and, once the game runs, its own player's client.
#[derive(Debug)]
pub struct HostSide {
    endpoint: Endpoint,
    /// The own player's lockstep settings (in memory: no wire, no budget).
    local_cfg: lockstep::Config,
    client: Option<Client>,
    cfg: ParticipantConfig,
    frame_loop: FrameLoop,
    chat_rate: RateWindow,
    events: VecDeque<ParticipantEvent>,
    now: Instant,
}

/// What a joiner is doing.
#[derive(Debug)]
enum JoinPhase {
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
struct Seated {
    seat: Seat,
    client: Client,
    /// The host's lockstep server has spoken (the game started): its silence is the
    /// client's timeout's business from now on.
    contact: bool,
    /// The first CTRL left (the host hears this player from its CTRLs).
    running: bool,
    /// When a CTRL last left while the lobby waits (see `LOBBY_KEEPALIVE`).
    keepalive: Option<Instant>,
    /// When the first CTRL left, and whether `WaitingForStart` was said.
    first_ctrl: Option<Instant>,
    told_waiting: bool,
    /// The frame its machine started from.
    start: Frame,
    /// When the host was last heard from at all.
    heard: Instant,
    /// When the last probe left.
    probed: Option<Instant>,
    /// A state to load before any frame runs (a jump).
    awaiting_load: Option<Frame>,
}

/// A joiner's side.
#[derive(Debug)]
pub struct JoinSide {
    join: JoinConfig,
    /// This end's own lockstep settings (budget, header, timeouts); the session's come
    /// from the start state.
    base: lockstep::Config,
    cfg: ParticipantConfig,
    rng: StdRng,
    phase: JoinPhase,
    frame_loop: FrameLoop,
    chat_rate: RateWindow,
    /// Frames handed out, for the checksum requests.
    events: VecDeque<ParticipantEvent>,
    now: Instant,
    /// This player said goodbye: a link that goes quiet afterwards is not reconnected.
    closed: bool,
}

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
        }))
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
        }))
    }

    /// A datagram from `from`, received at `at`.
    pub fn handle_datagram(&mut self, at: Instant, from: SocketAddr, datagram: &[u8]) {
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

    /// The next datagram to send.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        match self {
            Participant::Host(h) => h.poll_transmit(now),
            Participant::Join(j) => j.poll_transmit(now),
        }
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<ParticipantEvent> {
        match self {
            Participant::Host(h) => h.events.pop_front(),
            Participant::Join(j) => j.events.pop_front(),
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) (or `poll_transmit`) has work next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Participant::Host(h) => h.poll_timeout(),
            Participant::Join(j) => j.poll_timeout(),
        }
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
        let frame = self.client().map_or(0, |c| c.frame().0);
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
                let slot = s.client.me().0;
                let slot = if s.client.is_spectator() {
                    super::msg::SPECTATOR
                } else {
                    slot
                };
                // The name the host gives a player who has none of its own.
                let name = match (j.join.info.player_name.as_str(), s.client.is_spectator()) {
                    ("", true) => "spectator".into(),
                    ("", false) => format!("player {}", slot + 1),
                    (name, _) => name.to_string(),
                };
                Ok(ChatLine {
                    slot,
                    name,
                    frame,
                    text,
                })
            }
        }
    }

    /// A modified client: `text` goes out with no local limit (tests of the relay's).
    #[cfg(test)]
    pub(crate) fn say_unlimited(&mut self, text: &str) {
        if let Participant::Join(j) = self {
            if let JoinPhase::Seated(s) = &mut j.phase {
                s.seat.say(0, text.into());
            }
        }
    }

    /// Says goodbye (the host to everyone, a joiner to the host); drain `poll_transmit`.
    pub fn close(&mut self, reason: &str) {
        match self {
            Participant::Host(h) => h.endpoint.shutdown(reason),
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

impl HostSide {
    fn clock(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        self.now
    }

    fn handle_datagram(&mut self, at: Instant, from: SocketAddr, datagram: &[u8]) {
        let at = self.clock(at);
        self.endpoint.handle_datagram(at, from, datagram);
        self.after(at);
    }

    fn handle_timeout(&mut self, now: Instant) {
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
        self.after(now);
    }

    fn handle_core(&mut self, now: Instant, reply: CoreReply) {
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
            } => self.endpoint.handle_state(now, frame.0, state, &for_slots),
            CoreReply::Loaded { .. } => {}
        }
        self.after(now);
    }

    /// Moves what the endpoint raised into events and the in-memory link's datagrams both
    /// ways (a handful of rounds settles it: a reply can only trigger acks).
    fn after(&mut self, now: Instant) {
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
                        for_slots: vec![*slot],
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
                    while let Some(bytes) = client.poll_transmit(now) {
                        self.endpoint.handle_local(now, &bytes);
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

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let now = self.clock(now);
        if self.frame_loop.away(now) {
            return None;
        }
        self.after(now);
        self.endpoint.poll_transmit(now)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let client = self.client.as_ref().and_then(Client::poll_timeout);
        [self.endpoint.poll_timeout(), client]
            .into_iter()
            .flatten()
            .min()
    }
}

impl JoinSide {
    fn clock(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        self.now
    }

    fn handle_datagram(&mut self, at: Instant, from: SocketAddr, datagram: &[u8]) {
        let at = self.clock(at);
        match &mut self.phase {
            JoinPhase::Joining(session) | JoinPhase::Reconnecting { session, .. } => {
                // Only the host talks to a joiner (counted by the session).
                let _ = session.handle_datagram(at, from, datagram);
            }
            JoinPhase::Seated(s) => match s.seat.handle_datagram(at, from, datagram) {
                super::Routed::Lockstep(body) => {
                    s.client.handle_datagram(at, body);
                    s.contact = true;
                    s.heard = at;
                }
                super::Routed::Taken => s.heard = at,
                super::Routed::Dropped | super::Routed::Unauthentic => {}
            },
            JoinPhase::Ended => {}
        }
        self.after(at);
    }

    fn handle_timeout(&mut self, now: Instant) {
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
        self.after(now);
    }

    fn handle_core(&mut self, now: Instant, reply: CoreReply) {
        let now = self.clock(now);
        if let JoinPhase::Seated(s) = &mut self.phase {
            match reply {
                CoreReply::Checksum { frame, checksum } => {
                    s.client.report_checksum(frame, checksum)
                }
                CoreReply::State { frame, state, .. } => s.seat.handle_state(now, frame.0, state),
                CoreReply::Loaded { frame } => {
                    if s.awaiting_load == Some(frame) {
                        s.awaiting_load = None;
                    }
                }
            }
        }
        self.after(now);
    }

    /// The link to the host is gone: reconnect, or end.
    fn lose(&mut self, now: Instant, why: String) {
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
    fn fresh_handshake(&mut self, now: Instant) -> JoinSession {
        let cfg = JoinConfig {
            entropy: self.rng.gen(),
            hello_interval: RECONNECT_HELLO,
            // The reconnect deadline bounds it; a silent host restarts the attempt.
            timeout: self.join.timeout,
            ..self.join.clone()
        };
        JoinSession::new(now, cfg)
    }

    fn end(&mut self, e: SessionError) {
        if !matches!(self.phase, JoinPhase::Ended) {
            self.phase = JoinPhase::Ended;
            self.events.push_back(ParticipantEvent::Ended(e));
        }
    }

    fn close(&mut self, reason: &str) {
        self.closed = true;
        match &mut self.phase {
            JoinPhase::Joining(s) | JoinPhase::Reconnecting { session: s, .. } => s.leave(reason),
            JoinPhase::Seated(s) => s.seat.leave(reason),
            JoinPhase::Ended => {}
        }
    }

    /// Seated with the start state: a seat and a lockstep client from its frame.
    fn seat(&mut self, now: Instant, session: JoinSession, start: &StartState, jump: bool) {
        let host = session.host();
        let lcfg = start.lockstep(lockstep::Config {
            // Its one link is to the host: the host's address family sets the header size.
            udp_ip_header: link_overhead(host),
            ..self.base.clone()
        });
        let first = Frame(start.frame);
        let client = if start.slot == super::msg::SPECTATOR {
            // The host keeps a spectator that long, too: one back from a pause gets a fresh
            // state.
            let lcfg = lockstep::Config {
                timeout: lockstep::SPECTATOR_TIMEOUT,
                ..lcfg
            };
            Client::spectator(now, lcfg, first)
        } else {
            Client::new_at(now, lcfg, PeerId(start.slot), first)
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
            seat.running();
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
    fn after(&mut self, now: Instant) {
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
                        SeatEvent::State { frame, state } => {
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
                                    for_slots: vec![s.client.me().0],
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
                    "session: back in the session from frame {} (slot {})",
                    start.frame,
                    start.slot
                );
                self.events
                    .push_back(ParticipantEvent::Core(CoreRequest::Load {
                        frame: Frame(start.frame),
                        state: start.payload.state.clone(),
                        sram: start.payload.sram.clone(),
                        jump: true,
                    }));
                self.events.push_back(ParticipantEvent::Back {
                    frame: Frame(start.frame),
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
    fn check_reconnect(&mut self, now: Instant) {
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

    fn join_session_mut(&mut self) -> Option<&mut JoinSession> {
        match &mut self.phase {
            JoinPhase::Joining(s) | JoinPhase::Reconnecting { session: s, .. } => Some(s),
            _ => None,
        }
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let now = self.clock(now);
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
                    if let Some(bytes) = s.client.poll_transmit(now) {
                        if !s.contact {
                            s.keepalive = Some(now);
                        }
                        if !s.running {
                            // The host hears this player from its CTRLs from now on.
                            s.running = true;
                            s.first_ctrl = Some(now);
                            s.seat.running();
                        }
                        return Some(s.seat.seal(bytes));
                    }
                }
                s.seat.poll_transmit(now)
            }
            JoinPhase::Ended => None,
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
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
                let client = if s.contact {
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
}

/// Whether a reconnect attempt that failed so should be tried again (the host did not
/// answer yet, or is not reachable yet) rather than end the session (it refused).
fn retry(e: &SessionError) -> bool {
    matches!(
        e,
        SessionError::NoAnswer { .. }
            | SessionError::HostSilent { .. }
            | SessionError::NotFramelock { .. }
            | SessionError::Dropped(_)
    )
}
