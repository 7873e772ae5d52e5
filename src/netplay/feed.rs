//! [`NetFeed`]: the frame runner's input feed for netplay. It moves datagrams between the UDP
//! link and the sans-IO state machines (the host's session endpoint, or a joiner's handshake and
//! resync; the lockstep client),
//! hands the local pad to the lockstep client, and returns the next frame the client may run.
//! The host's own player goes through the same lockstep client, with its datagrams passed to
//! the in-process server in memory.
//!
//! Two threads share that state behind one mutex. The frame loop's thread pushes samples and
//! takes frames; a network thread of its own answers datagrams the moment they arrive. The
//! frame loop is busy for most of each frame in a window (drawing, waiting for vsync), and a
//! datagram read only after that comes late twice over: a host's server publishes its
//! joiners' frames that much later, and a client's round trip reads that much longer, so the
//! lead grows by it.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::app::{Feed, FeedPoll};
use crate::input::{Bot, Inputs, Pad};
use crate::lockstep::{Client, ClientEvent, Frame, Mode, PeerId};
use crate::net::{Link, SocketWaiter};
use crate::replay::Event;
use crate::session::{
    is_spectator_slot, Endpoint, EndpointEvent, OutReason, Routed, Seat, SeatEvent, LOADING_LIMIT,
};

use super::status::{PeerStatus, Status};

/// How often a stalled feed wants to be asked again (the network is polled on each call).
const STALL_POLL: Duration = Duration::from_millis(1);

/// Longest the frame loop waits between network polls when no datagram arrives (a datagram
/// ends the wait at once): window events are served within this. The network thread waits
/// for its timers instead (`NetState::next_timer`), and this long when one is overdue.
const SERVICE_INTERVAL: Duration = Duration::from_millis(2);

/// Longest the network thread sleeps with no timer due and no datagram.
const IDLE_WAKE: Duration = Duration::from_millis(50);

/// How long a joiner waits for the server's first frames. The host starts only once the
/// joiner's acknowledgement of the start state reached it, so its first UPDATE arrives a full
/// round trip after the joiner started: the lockstep silence timeout (2 s) alone would end
/// every session over a link slower than that before its first frame.
const FIRST_CONTACT: Duration = crate::session::HANDSHAKE_TIMEOUT;

/// The network thread speaks for the frame loop only while it runs: after this long without
/// a call from it (hung, or stopped in a debugger) the thread falls silent too, so the other
/// peers time this one out as they would a dead process, instead of waiting for its inputs
/// forever. Longer than any draw, shorter than the silence warning (500 ms). Before the
/// frame loop's first call the peer is starting (a joiner loads its content and the start
/// state, either side opens its window): the thread then serves on its own, for at most
/// `LOADING_LIMIT`, and says so (a joiner's `Loading`, the host's own player held in).
const FRAME_LOOP_AWAY: Duration = Duration::from_millis(250);

/// How long a joiner that runs waits for its first frames before it says that it waits for
/// the others to start (on top of its round trip).
const WAIT_NOTICE: Duration = Duration::from_secs(1);

/// What the network side (this feed) and the core side (the frame observer in `netplay`)
/// hand each other: only the observer can touch the core, only the feed the network.
#[derive(Default)]
pub struct Exchange {
    /// observer -> feed: `(frame, checksum)` for the desync check.
    pub checksums: VecDeque<(u32, u64)>,
    /// feed -> observer: slots whose state to serialize at the next frame boundary (a host's
    /// for a diverged joiner; a joiner's own, when a dedicated server asks for it).
    pub serialize_for: Vec<u8>,
    /// observer -> feed: `(slot, frame, state)`: the state as of the start of frame.
    pub states: Vec<(u8, u32, Vec<u8>)>,
    /// feed -> observer (joiner): the host's state as of the start of a frame, to load.
    pub incoming: Option<(u32, Vec<u8>)>,
    /// observer -> feed (joiner): frames at which a resync was loaded.
    pub loaded: Vec<u32>,
    /// feed -> observer: `(frame, event)` for the recording (players leaving, desyncs).
    pub events: Vec<(u32, Event)>,
    /// observer -> feed (spectator): it loaded a fresh state for this frame and goes on
    /// from there.
    pub jumped: Option<u32>,
}

/// Shared by the frame observer (frame loop thread) and the feed (both threads).
pub type Shared = Arc<Mutex<Exchange>>;

/// Locks `m`. A thread that panicked holding it left data that is still whole (every update
/// is a push or a field write), so the other goes on with it.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How log lines name the player in `slot`: "ana (player 2)", its name and its place, since
/// two players may go by the same name; just "player 2" when it has no name of its own.
fn player_label(names: &[(u8, String)], slot: u8) -> String {
    let place = PeerId(slot).to_string();
    let name = names.iter().find(|(s, _)| *s == slot);
    match name.and_then(|(_, name)| own_name(name, slot)) {
        Some(name) => format!("{name} ({place})"),
        None => place,
    }
}

/// The name of the player in `slot` if it has one of its own: not empty, and not the
/// "player N" the host names a nameless joiner after its place (said once is enough).
pub(crate) fn own_name(name: &str, slot: u8) -> Option<&str> {
    (!name.is_empty() && name != PeerId(slot).to_string()).then_some(name)
}

/// Which end of the session this process is.
pub enum Role {
    /// The session's server side, beside this process's own player.
    Host { endpoint: Box<Endpoint> },
    /// A joiner's side of the session; its lockstep client is the feed's.
    Join { seat: Box<Seat> },
}

impl Role {
    pub fn host(endpoint: Endpoint) -> Role {
        Role::Host {
            endpoint: Box::new(endpoint),
        }
    }

    pub fn join(seat: Seat) -> Role {
        Role::Join {
            seat: Box::new(seat),
        }
    }
}

/// Why a netplay session ended before the frame limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetEnd {
    /// The host said goodbye or vanished.
    HostLeft(String),
}

/// Netplay numbers gathered while running.
#[derive(Default)]
struct Counters {
    desyncs: u64,
    /// Frames of the desyncs this peer heard of.
    desync_frames: Vec<u32>,
    /// Recoveries completed (host: states delivered; joiner: states loaded).
    resyncs: u64,
    /// Joiner: ms from hearing of a desync to loading the host's state.
    resync_ms: Vec<f64>,
    desync_heard_at: Option<Instant>,
    players_left: Vec<(u8, u32)>,
    players_joined: Vec<(u8, u32)>,
    /// Spectator: fresh states it jumped to after falling behind.
    jumps: u64,
    /// RTT samples (ms, one per frame run), as a 1 ms histogram capped at 5 s.
    rtt_ms: Vec<u64>,
    rtt_count: u64,
    /// Spectator: its delay behind the players (ms), every 30th frame.
    delay_ms: Vec<f64>,
}

fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

impl Counters {
    fn record_rtt(&mut self, rtt: Duration) {
        if self.rtt_ms.is_empty() {
            self.rtt_ms = vec![0; 5001];
        }
        let ms = (rtt.as_secs_f64() * 1000.0).round().min(5000.0) as usize;
        self.rtt_ms[ms] += 1;
        self.rtt_count += 1;
    }

    fn rtt_median(&self) -> Option<u64> {
        let half = self.rtt_count.div_ceil(2);
        let mut seen = 0;
        for (ms, n) in self.rtt_ms.iter().enumerate() {
            seen += n;
            if seen >= half && *n > 0 {
                return Some(ms as u64);
            }
        }
        None
    }
}

/// Everything the feed works on, behind [`Net`]'s mutex.
struct NetState {
    link: Link,
    role: Role,
    client: Client,
    bot: Option<Bot>,
    /// The local players' pad as last sampled (keyboard, gamepads); the bot's pad is added
    /// to it per frame.
    keys: Pad,
    shared: Shared,
    /// Test hook: flip these bits of this player's input at this frame, on this peer only.
    inject: Option<(u32, u16)>,
    end: Option<NetEnd>,
    counters: Counters,
    names: Vec<(u8, String)>,
    /// The room, when the session runs on a dedicated server.
    room: Option<String>,
    /// For the status line's average bandwidth and `FIRST_CONTACT` (the runner owns the
    /// frame clock): when the feed was made, then the frame loop's first call.
    started: Instant,
    /// When the feed was made: the start state (joiner) or the end of the lobby (host).
    created: Instant,
    /// The start (see `FRAME_LOOP_AWAY`) took longer than `LOADING_LIMIT`: said once.
    start_overdue: bool,
    /// Joiner: when its first CTRL left, and whether it said it waits for the others.
    first_ctrl: Option<Instant>,
    told_waiting: bool,
    /// The lockstep client has had frames from the server (the host's always has).
    contact: bool,
    /// Wire bytes (sent, received) before play began (the handshake, the start state, the
    /// start): a one-time cost, kept apart from the rates.
    lobby_bytes: (u64, u64),
    /// The latest `now` the state machines were given. The threads read their clocks before
    /// taking the lock, so a call can come with an earlier `now` than the one before it.
    latest: Instant,
    /// Calls of the network thread that received datagrams (see `NetFeed::wait_io`).
    arrivals: u64,
    /// The frame loop's latest call (see `FRAME_LOOP_AWAY`); `None` before its first.
    loop_at: Option<Instant>,
    /// Tells the network thread to end.
    stop: bool,
    /// A network thread serves the socket (see `frame_loop_pull`).
    threaded: bool,
    /// The frame this peer's machine started from (0, or a late start state's).
    first: u32,
    /// Spectator: a fresh state for this frame waits to be loaded; no frame runs till then.
    jump: Option<u32>,
    /// The session frame at which this peer stops (`--frames`).
    end_at: Option<u64>,
    /// Frames the last picture was run ahead of the last frame that counts (speculation).
    ahead: Option<u32>,
}

/// The state and the signal the frame loop waits on.
struct Net {
    state: Mutex<NetState>,
    /// Notified when the network thread received datagrams.
    arrived: Condvar,
}

pub struct NetFeed {
    net: Arc<Net>,
    worker: Option<JoinHandle<()>>,
    /// `arrivals` when the frame loop last looked at the state.
    seen: u64,
}

impl NetState {
    /// `now`, or the latest time already given to the state machines if that is later.
    fn clock(&mut self, now: Instant) -> Instant {
        self.latest = self.latest.max(now);
        self.latest
    }

    /// A call from the frame loop at `now`: it is alive (see `FRAME_LOOP_AWAY`). Returns
    /// `now` as the state machines get it.
    fn frame_loop_call(&mut self, now: Instant) -> Instant {
        let now = self.clock(now);
        if self.loop_at.is_none() {
            // Play begins: the rates count from here, the start was a one-time cost.
            tracing::debug!(
                "netplay: started in {:.2} s",
                now.saturating_duration_since(self.created).as_secs_f64()
            );
            let e = self.link.stats();
            self.lobby_bytes = (e.wire_bytes_sent, e.wire_bytes_received);
            self.started = now;
        }
        self.loop_at = Some(now);
        now
    }

    /// Whether the network thread speaks for this peer at `now` (see `FRAME_LOOP_AWAY`).
    fn serving(&mut self, now: Instant) -> bool {
        match self.loop_at {
            Some(at) => now.saturating_duration_since(at) <= FRAME_LOOP_AWAY,
            None if now < self.created + LOADING_LIMIT => true,
            None => {
                if !self.start_overdue {
                    self.start_overdue = true;
                    tracing::error!(
                        "netplay: still not running {} s after {}; going silent, so that the \
                         other players drop this one instead of waiting for it",
                        LOADING_LIMIT.as_secs(),
                        match self.role {
                            Role::Host { .. } => "the lobby",
                            Role::Join { .. } => "the start state",
                        }
                    );
                }
                false
            }
        }
    }

    /// When the network thread must act without a datagram: the earliest timer of the state
    /// machines and the conditioner. One still due after a service (a send the budget holds
    /// back, a client's timers before its first frames) is retried after `SERVICE_INTERVAL`,
    /// not at once.
    fn next_timer(&self, now: Instant) -> Instant {
        let mut timers = vec![self.link.poll_timeout(), self.client.poll_timeout()];
        match &self.role {
            Role::Host { endpoint } => timers.push(endpoint.poll_timeout()),
            Role::Join { seat } => timers.push(seat.poll_timeout()),
        }
        match timers.into_iter().flatten().min() {
            Some(t) if t <= now => now + SERVICE_INTERVAL,
            Some(t) => t.min(now + IDLE_WAKE),
            None => now + IDLE_WAKE,
        }
    }

    /// The sampled keys plus the bot's pad for the client's current frame (the bot answers
    /// a repeated frame with the same pad). While the client holds samples ahead of its
    /// frames (taken while it waited, see `Client::push_local_input`), the bot keeps its pad,
    /// as a held key does: deciding anew for each frame caught up would add a change sample
    /// per decision and put this player's input further ahead of its frames.
    fn local_pad(&mut self) -> Pad {
        let mut pad = self.keys;
        if let Some(bot) = &mut self.bot {
            let held = bot.last().filter(|_| !self.client.wants_input());
            pad.0 |= held
                .unwrap_or_else(|| bot.next(u64::from(self.client.frame().0)))
                .0;
        }
        pad
    }

    fn name(&self, slot: u8) -> String {
        player_label(&self.names, slot)
    }

    /// Receives and dispatches every waiting datagram, runs timers and handles events; true
    /// if any datagram came.
    fn pull(&mut self, now: Instant) -> bool {
        let came = self.receive(now);
        self.service(now);
        came
    }

    /// What the frame loop does where `pull` would: with a network thread, which reads the
    /// socket the moment a datagram arrives, only the timers and events; without, all of it.
    fn frame_loop_pull(&mut self, now: Instant) {
        if self.threaded {
            self.service(now);
        } else {
            self.pull(now);
        }
    }

    /// Receives and dispatches every waiting datagram; true if any came.
    fn receive(&mut self, now: Instant) -> bool {
        let datagrams = match self.link.recv(now) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!("netplay: receiving: {e}");
                Vec::new()
            }
        };
        let came = !datagrams.is_empty();
        for (from, bytes) in datagrams {
            let valid = match &mut self.role {
                // The endpoint counts what it rejects itself.
                Role::Host { endpoint } => {
                    endpoint.handle_datagram(now, from, &bytes);
                    true
                }
                Role::Join { seat } => match seat.handle_datagram(now, from, &bytes) {
                    Routed::Lockstep(body) => {
                        self.client.handle_datagram(now, body);
                        true
                    }
                    // Counted by the seat (`packets_dropped_auth`).
                    Routed::Taken | Routed::Unauthentic => true,
                    Routed::Dropped => false,
                },
            };
            if !valid {
                self.link.note_invalid();
            }
        }
        came
    }

    /// Runs the state machines' timers and handles their events.
    fn service(&mut self, now: Instant) {
        match &mut self.role {
            Role::Host { endpoint } => {
                if self.loop_at.is_none() {
                    // The host's own player is starting too (its window opens): the server
                    // hears it in memory only once it runs.
                    endpoint.local_starting(now);
                }
                endpoint.handle_timeout(now);
            }
            Role::Join { seat } => seat.handle_timeout(now),
        }
        if !self.contact {
            self.contact = matches!(self.role, Role::Host { .. })
                || self.client.ready_frames() > 0
                || self.client.frame().0 > self.first;
        }
        // Before the first frames the silence is the start-up round trip (or the host's
        // lobby waiting for other players, which says so every `LOBBY_INTERVAL`), not a
        // lost host.
        let heard = match &self.role {
            Role::Join { seat } => seat
                .last_heard()
                .map_or(self.started, |t| t.max(self.started)),
            Role::Host { .. } => self.started,
        };
        if self.contact || now.saturating_duration_since(heard) >= FIRST_CONTACT {
            self.client.handle_timeout(now);
        }
        if let Some(sent) = self
            .first_ctrl
            .filter(|_| !self.contact && !self.told_waiting)
        {
            if now >= sent + WAIT_NOTICE + self.client.rtt().unwrap_or_default() {
                self.told_waiting = true;
                if self.first > 0 {
                    tracing::info!("netplay: waiting for the host's first frames");
                } else {
                    tracing::info!(
                        "netplay: waiting for every player to start: frame 0 runs once all of \
                         them run (one still loading may take up to {} s)",
                        LOADING_LIMIT.as_secs()
                    );
                }
            }
        }
        self.handle_events(now);
    }

    fn handle_events(&mut self, now: Instant) {
        let mut events = Vec::new();
        if let Role::Host { endpoint } = &mut self.role {
            events.extend(std::iter::from_fn(|| endpoint.poll_event()));
        }
        for ev in events {
            self.handle_endpoint_event(ev);
        }
        let mut events = Vec::new();
        if let Role::Join { seat } = &mut self.role {
            events.extend(std::iter::from_fn(|| seat.poll_event()));
        }
        for ev in events {
            self.handle_seat_event(ev);
        }
        while let Some(ev) = self.client.poll_event() {
            match ev {
                ClientEvent::ServerSilent { silent_for } => tracing::warn!(
                    "netplay: nothing from the host for {} ms",
                    silent_for.as_millis()
                ),
                ClientEvent::ServerLost => {
                    let msg = format!(
                        "the host stopped answering (nothing for {:.0} s)",
                        self.client.config().timeout.as_secs_f64()
                    );
                    tracing::error!("netplay: {msg}");
                    self.end.get_or_insert(NetEnd::HostLeft(msg));
                }
                ClientEvent::PlayerLeft { peer, from_frame } => {
                    tracing::info!(
                        "netplay: {} left; neutral input from frame {}",
                        self.name(peer.0),
                        from_frame.0
                    );
                    self.counters.players_left.push((peer.0, from_frame.0));
                    let left = Event::Left { slot: peer.0 };
                    lock(&self.shared).events.push((from_frame.0, left));
                }
                ClientEvent::PlayerJoined {
                    peer,
                    from_frame,
                    name,
                } => {
                    if !name.is_empty() {
                        self.names.retain(|(s, _)| *s != peer.0);
                        self.names.push((peer.0, name.clone()));
                    }
                    tracing::info!(
                        "netplay: {} joined from frame {}",
                        self.name(peer.0),
                        from_frame.0
                    );
                    self.counters.players_joined.push((peer.0, from_frame.0));
                    let joined = Event::Joined { slot: peer.0, name };
                    lock(&self.shared).events.push((from_frame.0, joined));
                }
                ClientEvent::Desync { frame, peer } => {
                    self.counters.desyncs += 1;
                    self.counters.desync_frames.push(frame.0);
                    if peer == self.client.me() {
                        self.counters.desync_heard_at.get_or_insert(now);
                    }
                    tracing::error!(
                        "netplay: desync detected at frame {}: {} differs from the host",
                        frame.0,
                        self.name(peer.0)
                    );
                }
            }
        }
    }

    /// Joiner: logs what the seat raised, and passes states to and from the frame observer.
    fn handle_seat_event(&mut self, ev: SeatEvent) {
        match ev {
            SeatEvent::Failed(e) => {
                tracing::error!("netplay: {e}");
                self.end.get_or_insert(NetEnd::HostLeft(e.to_string()));
            }
            SeatEvent::Waiting { ready, want } => tracing::info!(
                "netplay: waiting for the game to start: {ready} of {want} players in"
            ),
            SeatEvent::PasswordChecked { admitted } => tracing::info!(
                "netplay: a joiner {} the room's password",
                if admitted { "knew" } else { "got wrong" }
            ),
            SeatEvent::State { frame, state } => {
                if self.client.is_spectator() {
                    tracing::info!(
                        "netplay: fell behind the players; received a fresh state for frame \
                         {frame} ({} KiB)",
                        state.len() / 1024
                    );
                    // The frames held are stale: none runs until the state is loaded (the
                    // frame observer does it as soon as the runner waits, see `next`).
                    if self.client.skip_to(Frame(frame)) {
                        self.jump = Some(frame);
                    }
                } else {
                    tracing::info!(
                        "netplay: received the host's state for frame {frame} ({} KiB)",
                        state.len() / 1024
                    );
                }
                lock(&self.shared).incoming = Some((frame, state));
            }
            SeatEvent::StateWanted => {
                tracing::info!(
                    "netplay: the server asks for this machine's state, to resync a player \
                     that diverged"
                );
                lock(&self.shared).serialize_for.push(self.client.me().0);
            }
        }
    }

    /// Host: logs what the endpoint raised, and passes desyncs to the frame observer (the
    /// recording, and the state to send).
    fn handle_endpoint_event(&mut self, ev: EndpointEvent) {
        match ev {
            EndpointEvent::Joined { slot, name, addr } if is_spectator_slot(slot) => {
                tracing::info!("netplay: {name} ({addr}) asks to watch")
            }
            EndpointEvent::Joined { slot, name, addr } => {
                tracing::info!(
                    "netplay: {name} ({addr}) takes seat {} of the running game",
                    slot + 1
                );
                self.names.retain(|(s, _)| *s != slot);
                self.names.push((slot, name));
            }
            EndpointEvent::StateWanted { slots } => {
                lock(&self.shared).serialize_for.extend(slots);
            }
            EndpointEvent::Watching { slot, frame } => {
                let n = match &self.role {
                    Role::Host { endpoint } => endpoint.spectator_count(),
                    Role::Join { .. } => 0,
                };
                tracing::info!(
                    "netplay: spectator {} watches from frame {frame} ({n} watching)",
                    slot - crate::session::FIRST_SPECTATOR_SLOT + 1
                )
            }
            EndpointEvent::SpectatorLeft { slot, reason } => tracing::info!(
                "netplay: spectator {} {reason}",
                slot - crate::session::FIRST_SPECTATOR_SLOT + 1
            ),
            EndpointEvent::NoState { slot } => tracing::warn!(
                "netplay: no state could be sent to the joiner in slot {slot}; it was sent away"
            ),
            // The host's own client raises it too, with the name: logged there.
            EndpointEvent::PlayerJoined { .. } => {}
            EndpointEvent::Left { slot, reason } if is_spectator_slot(slot) => {
                tracing::info!("netplay: a spectator {reason}")
            }
            EndpointEvent::Left { slot, reason } => {
                tracing::info!("netplay: {} {reason}", self.name(slot))
            }
            EndpointEvent::Refused { addr, reason } => {
                tracing::info!("netplay: refused {addr}: {reason}")
            }
            EndpointEvent::PlayerSilent { slot, silent_for } => tracing::warn!(
                "netplay: nothing from player {} for {} ms",
                slot + 1,
                silent_for.as_millis()
            ),
            EndpointEvent::PlayerOut {
                slot,
                from_frame,
                reason,
            } => {
                let msg = format!(
                    "netplay: player {} is out ({reason}); neutral input from frame {}",
                    slot + 1,
                    from_frame.0
                );
                if reason == OutReason::Left {
                    tracing::info!("{msg}");
                } else {
                    tracing::warn!("{msg}");
                }
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
                    "netplay: desync at frame {}: player {} has {got:016x}, host has {expected:016x}{}",
                    frame.0,
                    slot + 1,
                    if send_state { "; sending the host's state" } else { " (recovery under way)" }
                );
                let mut shared = lock(&self.shared);
                // The host's log: its own checksum and the player's.
                let desync = Event::Desync {
                    local: expected,
                    remote: got,
                };
                shared.events.push((frame.0, desync));
                if send_state {
                    shared.serialize_for.push(slot);
                }
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
                    "netplay: player {} has the host's state for frame {frame}",
                    slot + 1
                );
                self.counters.resyncs += 1;
            }
            other => tracing::debug!("netplay: {other:?}"),
        }
    }

    /// Sends everything the state machines want to send; the host's client and server talk
    /// in memory.
    fn push(&mut self, now: Instant) {
        match &mut self.role {
            Role::Host { endpoint } => {
                // A handful of rounds settles it: a reply can only trigger acks.
                for _ in 0..4 {
                    let mut moved = false;
                    while let Some(bytes) = self.client.poll_transmit(now) {
                        endpoint.handle_local(now, &bytes);
                        moved = true;
                    }
                    while let Some(bytes) = endpoint.poll_local(now) {
                        self.client.handle_datagram(now, &bytes);
                        moved = true;
                    }
                    if !moved {
                        break;
                    }
                }
                while let Some(t) = endpoint.poll_transmit(now) {
                    self.link.send(now, t.to, t.bytes);
                }
            }
            Role::Join { seat } => {
                while let Some(bytes) = self.client.poll_transmit(now) {
                    let t = seat.seal(bytes);
                    self.link.send(now, t.to, t.bytes);
                    if self.first_ctrl.is_none() {
                        // The host hears this player from its CTRLs from now on.
                        self.first_ctrl = Some(now);
                        seat.running();
                    }
                }
                while let Some(t) = seat.poll_transmit(now) {
                    self.link.send(now, t.to, t.bytes);
                }
            }
        }
        self.link.flush_due(now);
    }

    /// Keeps the network going without running frames: the host serves its peers until they
    /// have left or hold every frame it published (or `grace` ran out), so that they can
    /// finish the frames already published. One that plays longer than the host stalls at
    /// the last of them: the goodbye then tells it at once, not after the grace.
    fn linger(&mut self, grace: Duration) {
        let start = Instant::now();
        loop {
            let now = self.clock(Instant::now());
            self.pull(now);
            self.push(now);
            let remaining = match &self.role {
                Role::Host { endpoint } => endpoint.undelivered(),
                Role::Join { .. } => 0,
            };
            if remaining == 0 || now.duration_since(start) >= grace {
                return;
            }
            let _ = self
                .link
                .wait_until(now, Some(now + Duration::from_millis(5)));
        }
    }

    /// Says goodbye (the host to everyone, a joiner to the host) and flushes it out,
    /// including datagrams the network conditioner still holds.
    fn close(&mut self, reason: &str) {
        let now = self.clock(Instant::now());
        match &mut self.role {
            Role::Host { endpoint } => endpoint.shutdown(reason),
            Role::Join { seat } => seat.leave(reason),
        }
        self.push(now);
        self.link.drain(super::GOODBYE_DRAIN);
    }

    /// Takes what the frame observer produced: checksums to report, states to send.
    fn take_from_observer(&mut self, now: Instant) {
        let mut shared = lock(&self.shared);
        while let Some((frame, sum)) = shared.checksums.pop_front() {
            self.client.report_checksum(Frame(frame), sum);
        }
        if let Some(at) = shared.jumped.take() {
            self.jump = None;
            self.counters.jumps += 1;
            tracing::info!("netplay: watching again from frame {at}");
        }
        for frame in shared.loaded.drain(..) {
            self.counters.resyncs += 1;
            if let Some(heard) = self.counters.desync_heard_at.take() {
                let ms = now.saturating_duration_since(heard).as_secs_f64() * 1000.0;
                self.counters.resync_ms.push(ms);
            }
            tracing::info!("netplay: resynced: continuing from the host's frame {frame}");
        }
        match &mut self.role {
            Role::Host { endpoint } => {
                for (slot, frame, state) in shared.states.drain(..) {
                    endpoint.handle_state(now, frame, state, &[slot]);
                }
            }
            Role::Join { seat } => {
                for (_, frame, state) in shared.states.drain(..) {
                    seat.handle_state(now, frame, state);
                }
            }
        }
    }

    /// The largest RTT this peer sees: the host's own client talks in memory, so the host
    /// reports its slowest peer.
    fn rtt(&self) -> Option<Duration> {
        match &self.role {
            Role::Host { endpoint } => endpoint.max_rtt(),
            Role::Join { .. } => self.client.rtt(),
        }
    }

    /// What the window's status bar shows (see `super::status`).
    fn status(&self) -> Status {
        let s = self.client.stats();
        let e = self.link.stats();
        let peers = match &self.role {
            Role::Host { endpoint } => endpoint
                .server_stats()
                .map(|s| s.peers)
                .unwrap_or_default()
                .into_iter()
                .filter(|p| p.peer != self.client.me())
                .map(|p| PeerStatus {
                    player: Some(p.peer.0 + 1),
                    rtt: p.rtt,
                    traffic: Some(p.traffic),
                })
                .collect(),
            Role::Join { .. } => vec![PeerStatus {
                player: None,
                rtt: s.rtt,
                traffic: None,
            }],
        };
        let spectators = match &self.role {
            Role::Host { endpoint } => Some(endpoint.spectator_count()),
            Role::Join { .. } => None,
        };
        let watching = self.client.is_spectator().then(|| {
            let buffered = Duration::from_secs_f64(
                self.client.ready_frames() as f64 / self.client.config().fps,
            );
            buffered + self.client.rtt().unwrap_or_default() / 2
        });
        Status {
            spectators,
            mode: self.client.config().mode,
            keyframe_interval: s.keyframe_interval,
            // A spectator has no lead of its own.
            lead: s.lead.filter(|_| watching.is_none()),
            watching,
            stalls: s.stalls,
            wire_out: e.wire_bytes_sent - self.lobby_bytes.0,
            wire_in: e.wire_bytes_received - self.lobby_bytes.1,
            secs: self.started.elapsed().as_secs_f64(),
            peers,
            room: self.room.clone(),
            ahead: self.ahead,
        }
    }

    /// The frame loop asks for the next frame: see [`Feed::next`].
    fn next(&mut self, now: Instant) -> FeedPoll {
        let now = self.frame_loop_call(now);
        self.frame_loop_pull(now);
        self.take_from_observer(now);
        // After the host's goodbye, the frames it sent before are still played: a host that
        // reached its frame limit leaves once every joiner has them.
        if self.end.is_some() && self.client.ready_frames() == 0 {
            return FeedPoll::End;
        }
        if self
            .end_at
            .is_some_and(|end| u64::from(self.client.frame().0) >= end)
        {
            return FeedPoll::End;
        }
        if self.jump.is_some() {
            // The runner waits, and its frame observer loads the fresh state meanwhile.
            self.push(now);
            return FeedPoll::Wait(None);
        }
        // A bot decides per frame, even when several frames run in one tick.
        let pad = self.local_pad();
        self.client.push_local_input(now, pad);
        let frame = self.client.poll_frame();
        self.push(now);
        match frame {
            Some((frame, mut inputs)) => {
                if let Some((at, mask)) = self.inject {
                    if at == frame.0 {
                        let me = usize::from(self.client.me().0);
                        inputs[me].0 ^= mask;
                        tracing::warn!("netplay: injected a desync at frame {at} (test hook)");
                    }
                }
                if let Some(rtt) = self.rtt() {
                    self.counters.record_rtt(rtt);
                }
                if self.client.is_spectator() && frame.0.is_multiple_of(30) {
                    if let Some(d) = self.status().watching {
                        self.counters.delay_ms.push(d.as_secs_f64() * 1000.0);
                    }
                }
                FeedPoll::Run(inputs)
            }
            // The network thread wakes the frame loop when a datagram comes (`wait_io`), so a
            // stall waits for that or the next display slot; without it the frame loop must
            // look at the socket itself, soon.
            None if self.threaded => FeedPoll::Wait(None),
            None => FeedPoll::Wait(Some(now + STALL_POLL)),
        }
    }

    fn stats_map(&self) -> Map<String, Value> {
        let s = self.client.stats();
        let e = self.link.stats();
        let mut m = Map::new();
        m.insert(
            "kind".into(),
            json!(match self.role {
                Role::Host { .. } => "host",
                Role::Join { .. } if self.client.is_spectator() => "spectate",
                Role::Join { .. } => "join",
            }),
        );
        m.insert("first_frame".into(), json!(self.first));
        m.insert("spectator".into(), json!(self.client.is_spectator()));
        if let Role::Host { endpoint } = &self.role {
            m.insert("spectators".into(), json!(endpoint.spectator_count()));
        }
        if self.client.is_spectator() {
            m.insert("jumps".into(), json!(self.counters.jumps));
            let delay = self.counters.delay_ms.clone();
            m.insert(
                "delay_ms".into(),
                json!({ "median": median(&delay), "max": delay.iter().copied().fold(0.0, f64::max) }),
            );
        }
        m.insert(
            "players_joined".into(),
            json!(self
                .counters
                .players_joined
                .iter()
                .map(|(slot, frame)| json!({"slot": slot, "from_frame": frame}))
                .collect::<Vec<_>>()),
        );
        m.insert("slot".into(), json!(self.client.me().0));
        if let Some(room) = &self.room {
            m.insert("room".into(), json!(room));
        }
        m.insert("stalls".into(), json!(s.stalls));
        m.insert("stall_ms".into(), json!(s.stalled.as_secs_f64() * 1000.0));
        m.insert(
            "input_latency_frames".into(),
            json!({ "median": s.latency.median(), "p95": s.latency.p95() }),
        );
        m.insert(
            "perceived_latency_frames".into(),
            json!({ "median": s.perceived.median(), "p95": s.perceived.p95() }),
        );
        m.insert("rtt_ms".into(), json!(self.counters.rtt_median()));
        m.insert("mode".into(), json!(self.client.config().mode.as_str()));
        if let Role::Host { endpoint } = &self.role {
            let stats = endpoint.server_stats();
            m.insert("placement".into(), super::placement_json(stats.as_ref()));
        }
        m.insert("keyframe_interval".into(), json!(s.keyframe_interval));
        m.insert("lead".into(), json!(s.lead));
        m.insert("pace".into(), json!(s.pace));
        let dropped = e.packets_dropped_invalid
            + s.traffic.packets_dropped_invalid
            + match &self.role {
                Role::Host { endpoint } => {
                    endpoint.stats().dropped_invalid
                        + endpoint
                            .server_stats()
                            .map_or(0, |s| s.traffic.packets_dropped_invalid)
                }
                Role::Join { .. } => 0,
            };
        m.insert("bytes_sent".into(), json!(e.wire_bytes_sent));
        m.insert("bytes_received".into(), json!(e.wire_bytes_received));
        // The span the bytes after the lobby were counted over: play, the wait for the first
        // frames and the goodbye (wall_s covers play only).
        m.insert(
            "session_s".into(),
            json!(self.started.elapsed().as_secs_f64()),
        );
        m.insert("lobby_bytes_sent".into(), json!(self.lobby_bytes.0));
        m.insert("lobby_bytes_received".into(), json!(self.lobby_bytes.1));
        m.insert("payload_bytes_sent".into(), json!(e.bytes_sent));
        m.insert("payload_bytes_received".into(), json!(e.bytes_received));
        m.insert("packets_sent".into(), json!(e.packets_sent));
        m.insert("packets_received".into(), json!(e.packets_received));
        m.insert("packets_dropped_invalid".into(), json!(dropped));
        let dropped_auth = match &self.role {
            Role::Host { endpoint } => endpoint.stats().dropped_auth,
            Role::Join { seat } => seat.stats().dropped_auth,
        };
        m.insert("packets_dropped_auth".into(), json!(dropped_auth));
        if let Some(n) = e.netsim {
            m.insert(
                "netsim".into(),
                json!({
                    "pushed": n.pushed,
                    "dropped": n.dropped,
                    "duplicated": n.duplicated,
                    "reordered": n.reordered,
                    "corrupted": n.corrupted,
                    "released": n.released,
                    "released_late": n.released_late,
                    "late_max_ms": n.late_max.as_secs_f64() * 1000.0,
                }),
            );
        }
        m.insert("desyncs_detected".into(), json!(self.counters.desyncs));
        m.insert("desync_frames".into(), json!(self.counters.desync_frames));
        m.insert("resyncs".into(), json!(self.counters.resyncs));
        m.insert("resync_ms".into(), json!(self.counters.resync_ms));
        m.insert(
            "players_left".into(),
            json!(self
                .counters
                .players_left
                .iter()
                // A player who left after this peer's last frame (it reached its frame
                // limit first and said goodbye) ended with the session: none of this peer's
                // frames ran with its input neutral.
                .filter(|&&(_, frame)| frame < self.client.frame().0)
                .map(|(slot, frame)| json!({"slot": slot, "from_frame": frame}))
                .collect::<Vec<_>>()),
        );
        m
    }
}

/// The network thread: receives and answers datagrams as they come, while the frame loop's
/// thread runs, draws and waits.
fn serve(net: Arc<Net>, waiter: SocketWaiter) {
    loop {
        let until = {
            let mut s = lock(&net.state);
            if s.stop {
                return;
            }
            let now = s.clock(Instant::now());
            if s.serving(now) {
                if s.pull(now) {
                    s.arrivals += 1;
                    net.arrived.notify_all();
                }
                s.push(now);
            }
            s.next_timer(now)
        };
        let timeout = until.saturating_duration_since(Instant::now());
        if let Err(e) = waiter.wait(timeout) {
            // The next receive reports it; until then sleep to the next timer (the frame
            // loop still reads the socket at each of its calls).
            tracing::debug!("netplay: waiting on the socket failed: {e}");
            std::thread::sleep(timeout);
        }
    }
}

impl NetFeed {
    pub fn new(link: Link, role: Role, client: Client, bot: Option<Bot>) -> NetFeed {
        let e = link.stats();
        let waiter = link.waiter();
        let now = Instant::now();
        let first = client.frame().0;
        let net = Arc::new(Net {
            state: Mutex::new(NetState {
                lobby_bytes: (e.wire_bytes_sent, e.wire_bytes_received),
                link,
                role,
                client,
                bot,
                keys: Pad::NEUTRAL,
                shared: Shared::default(),
                inject: None,
                end: None,
                counters: Counters::default(),
                names: Vec::new(),
                room: None,
                started: now,
                created: now,
                start_overdue: false,
                first_ctrl: None,
                told_waiting: false,
                contact: false,
                latest: now,
                arrivals: 0,
                loop_at: None,
                stop: false,
                threaded: false,
                first,
                jump: None,
                end_at: None,
                ahead: None,
            }),
            arrived: Condvar::new(),
        });
        let worker = match waiter {
            Ok(waiter) => {
                let net = net.clone();
                std::thread::Builder::new()
                    .name("netplay".into())
                    .spawn(move || serve(net, waiter))
                    .map_err(|e| tracing::warn!("netplay: no network thread: {e}"))
                    .ok()
            }
            Err(e) => {
                tracing::warn!("netplay: no network thread (cannot clone the socket: {e})");
                None
            }
        };
        match worker {
            Some(_) => lock(&net.state).threaded = true,
            None => tracing::warn!("netplay: the frame loop serves the network between frames"),
        }
        NetFeed {
            net,
            worker,
            seen: 0,
        }
    }

    fn state(&self) -> MutexGuard<'_, NetState> {
        lock(&self.net.state)
    }

    /// Player names by slot, for log lines.
    pub fn with_names(self, names: Vec<(u8, String)>) -> NetFeed {
        self.state().names = names;
        self
    }

    /// The room on a dedicated server this session runs in (status bar, stats).
    pub fn with_room(self, room: Option<String>) -> NetFeed {
        self.state().room = room;
        self
    }

    /// Test hook for desync recovery: at `frame`, XOR this peer's own input with `mask`
    /// (locally only), which makes this peer diverge.
    pub fn with_injected_desync(self, frame: u32, mask: u16) -> NetFeed {
        self.state().inject = Some((frame, mask));
        self
    }

    /// The exchange with the frame observer (checksums, resync states).
    pub fn shared(&self) -> Shared {
        self.state().shared.clone()
    }

    pub fn end(&self) -> Option<NetEnd> {
        self.state().end.clone()
    }

    pub fn is_host(&self) -> bool {
        matches!(self.state().role, Role::Host { .. })
    }

    pub fn is_spectator(&self) -> bool {
        self.state().client.is_spectator()
    }

    /// The session's lockstep mode.
    pub fn mode(&self) -> Mode {
        self.state().client.config().mode
    }

    /// The session frame the machine starts from.
    pub fn first_frame(&self) -> u32 {
        self.state().first
    }

    /// Stops before session frame `frame` (`--frames`).
    pub fn end_at(&mut self, frame: u64) {
        self.state().end_at = Some(frame);
    }

    pub fn names(&self) -> Vec<(u8, String)> {
        self.state().names.clone()
    }

    /// Ends the network thread; the caller's thread serves the network from then on.
    fn stop_worker(&mut self) {
        let Some(worker) = self.worker.take() else {
            return;
        };
        {
            let mut s = self.state();
            s.stop = true;
            s.threaded = false;
        }
        if worker.join().is_err() {
            tracing::error!("netplay: the network thread panicked");
        }
    }

    /// Keeps the network going without running frames: the host serves its peers until they
    /// have left (or `grace` ran out), so that they can finish the frames already published.
    pub fn linger(&mut self, grace: Duration) {
        self.stop_worker();
        self.state().linger(grace);
    }

    /// Says goodbye (the host to everyone, a joiner to the host) and flushes it out,
    /// including datagrams the network conditioner still holds.
    pub fn close(&mut self, reason: &str) {
        self.stop_worker();
        self.state().close(reason);
    }
}

impl Drop for NetFeed {
    fn drop(&mut self) {
        self.stop_worker();
    }
}

impl Feed for NetFeed {
    fn sample(&mut self, now: Instant, local: &Inputs) {
        let mut s = lock(&self.net.state);
        let now = s.frame_loop_call(now);
        s.keys = local[0];
        s.frame_loop_pull(now);
        s.push(now);
        self.seen = s.arrivals;
    }

    fn next(&mut self, now: Instant) -> FeedPoll {
        let mut s = lock(&self.net.state);
        self.seen = s.arrivals;
        s.next(now)
    }

    fn pace(&self) -> Option<f64> {
        Some(self.state().client.pace())
    }

    fn status_line(&self) -> Option<String> {
        Some(self.state().status().to_string())
    }

    fn take_behind(&mut self) -> Option<Duration> {
        let mut s = self.state();
        // A late starter catches up by its backlog instead (see `backlog`), and a client
        // paced by the frames' arrival has no clock of the host's to keep.
        if s.first > 0 || s.client.paced_by_arrival() {
            return None;
        }
        s.client.take_start_delay()
    }

    fn backlog(&mut self) -> u32 {
        self.state().client.backlog()
    }

    fn paced_by_arrival(&self) -> bool {
        self.state().client.paced_by_arrival()
    }

    /// With a network thread the frame loop need not wake to serve the network: a datagram
    /// ends its wait at once (`wait_io`), and otherwise it sleeps to its next frame.
    fn max_wait(&self) -> Option<Duration> {
        self.worker.is_none().then_some(SERVICE_INTERVAL)
    }

    /// Waits until the network thread received datagrams (a frame may have come) or
    /// `timeout` passed; without that thread, on the socket.
    fn wait_io(&mut self, timeout: Duration) -> bool {
        let s = lock(&self.net.state);
        if self.worker.is_some() {
            let seen = self.seen;
            let (s, _) = self
                .net
                .arrived
                .wait_timeout_while(s, timeout, |s| s.arrivals == seen)
                .unwrap_or_else(PoisonError::into_inner);
            self.seen = s.arrivals;
            return true;
        }
        let now = Instant::now();
        match s.link.wait_until(now, Some(now + timeout)) {
            Ok(_) => true,
            Err(e) => {
                // The next receive reports it; until then the frontend sleeps instead.
                tracing::debug!("netplay: waiting on the socket failed: {e}");
                false
            }
        }
    }

    fn stats(&self) -> Map<String, Value> {
        self.state().stats_map()
    }

    /// Speculation (`--speculate`): see [`Client::predict`].
    fn predict(&mut self, max: u32, out: &mut Vec<Inputs>) {
        self.state().client.predict(max, out);
    }

    fn displayed(&mut self, now: Instant, head: u64, depth: u32) {
        let mut s = self.state();
        let head = crate::lockstep::Frame(s.first.saturating_add(head as u32));
        s.client.shown(now, head);
        if depth > 0 || s.ahead.is_some() {
            s.ahead = Some(depth);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::player_label;

    #[test]
    fn players_are_named_with_their_place() {
        let names = [
            (0, "ana".to_string()),
            (1, "ana".into()),
            (2, "player 3".into()),
        ];
        // Two players called ana are told apart.
        assert_eq!(player_label(&names, 0), "ana (player 1)");
        assert_eq!(player_label(&names, 1), "ana (player 2)");
        // A player the host named by its slot, or not at all, is not named twice.
        assert_eq!(player_label(&names, 2), "player 3");
        assert_eq!(player_label(&[(3, String::new())], 3), "player 4");
        assert_eq!(player_label(&names, 5), "player 6");
    }
}
