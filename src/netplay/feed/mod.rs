//! [`NetFeed`]: the frame runner's input feed for netplay, and the driver of this process's
//! session participant (`session::Participant`). It moves datagrams between the UDP link and
//! the participant with their receive time, runs its timers, hands it the local pad, passes
//! what it asks of the machine to the frame observer (`netplay::CoreSide`) and back, and
//! returns the frames it allows. It makes no protocol decision: when a silence is a loss, what
//! is sent in a lobby and when a player reconnects are the participant's. It must not import the
//! commands that build it (`start`, `run`) or `cli`.
//!
//! The frame side itself (the pad, the frames, the end, the playout) is [`ParticipantFeed`],
//! with no thread or socket, which the simulated world runs as it is.
//!
//! Two threads share that state behind one mutex. The frame loop's thread pushes samples and
//! takes frames; a network thread of its own answers datagrams the moment they arrive. The
//! frame loop is busy for most of each frame in a window (drawing, waiting for vsync), and a
//! datagram read only after that comes late twice over: a host's server publishes its
//! joiners' frames that much later, and a client's round trip reads that much longer, so the
//! lead grows by it.
mod net_feed;
mod play;

pub use net_feed::NetFeed;
pub use play::{FeedEvent, ParticipantFeed, Polled};

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::app::FeedPoll;
use crate::lockstep::Frame;
use crate::net::{drive, Link};
use crate::replay::Event;
use crate::session::{CoreReply, CoreRequest};

use super::report::{Play, Report};

/// How often a stalled feed wants to be asked again (the network is polled on each call).
const STALL_POLL: Duration = Duration::from_millis(1);

/// Longest the frame loop waits between network polls when no datagram arrives (a datagram
/// ends the wait at once): window events are served within this. The network thread waits
/// for its timers instead (`NetState::next_timer`), and this long when one is overdue.
const SERVICE_INTERVAL: Duration = Duration::from_millis(2);

/// Longest the network thread sleeps with no timer due and no datagram.
const IDLE_WAKE: Duration = Duration::from_millis(50);

/// What the network side (this feed) and the core side (the frame observer in `netplay`)
/// hand each other: only the observer can touch the core, only the feed the participant.
#[derive(Default)]
pub struct CoreWork {
    /// feed -> observer: what the participant asks of the machine, in order.
    pub requests: VecDeque<CoreRequest>,
    /// observer -> feed: the machine's answers.
    pub replies: Vec<CoreReply>,
    /// feed -> observer: `(session frame, event)` for the recording (players leaving,
    /// desyncs).
    pub events: Vec<(Frame, Event)>,
}

/// Shared by the frame observer (frame loop thread) and the feed (both threads).
pub type Shared = Arc<Mutex<CoreWork>>;

/// Locks `m`. A thread that panicked holding it left data that is still whole (every update
/// is a push or a field write), so the other goes on with it.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Everything the feed works on, behind [`Net`]'s mutex.
struct NetState {
    link: Link,
    /// The participant and the frame side over it.
    feed: ParticipantFeed,
    /// The router's port mapping for this socket, if one was asked for.
    port_map: Option<FeedPortMap>,
    /// Test hook: flip these bits of this player's input at this frame, on this peer only.
    inject: Option<(u32, u16)>,
    report: Report,
    /// For the status line's average bandwidth: when the feed was made, then the frame
    /// loop's first call.
    started: Instant,
    created: Instant,
    /// Wire bytes (sent, received) before play began (the handshake, the start state, the
    /// start): a one-time cost, kept apart from the rates.
    lobby_bytes: (u64, u64),
    /// Calls of the network thread that received datagrams (see `NetFeed::wait_io`).
    arrivals: u64,
    /// The frame loop has called.
    loop_called: bool,
    /// Tells the network thread to end.
    stop: bool,
    /// A network thread serves the socket (see `frame_loop_receive`).
    threaded: bool,
    /// Speculation: `--delay`, how far the last picture ran ahead, rollbacks, why it is off.
    spec: super::speculation::Shown,
    /// Chat messages to say at the first frame (`--say`).
    say_at_start: Vec<String>,
    /// `--pause-at FRAME --pause-for SECS`: the frame, how long, and when this player's
    /// pause began once it did.
    scripted: Option<ScriptedPause>,
    /// Test hook: say "ping N" this often, next at, and N.
    chat_every: Option<(Duration, Option<Instant>, u32)>,
    /// A player joiner's saved seat key, and the key it last saved.
    seat_keys: Option<(
        super::seat_keys::SeatKeys,
        Option<[u8; crate::session::msg::SEAT_KEY_LEN]>,
    )>,
}

/// A pause a test asks for on the command line (`--pause-at`, `--pause-for`).
#[derive(Clone, Copy, Debug)]
struct ScriptedPause {
    at: u32,
    hold: Duration,
    asked: bool,
    since: Option<Instant>,
}

/// A port mapping the feed keeps up (`port_map`): the mapping, its port, and whether this
/// is a host waiting to be joined.
struct FeedPortMap {
    map: crate::net::portmap::PortMap,
    port: u16,
    host: bool,
}

/// The state and the signal the frame loop waits on.
struct Net {
    state: Mutex<NetState>,
    /// Notified when the network thread received datagrams.
    arrived: Condvar,
}

impl NetState {
    /// A call from the frame loop at `now`.
    fn frame_loop_call(&mut self, now: Instant) {
        if !self.loop_called {
            self.loop_called = true;
            // Play begins: the rates count from here, the start was a one-time cost.
            tracing::debug!(
                "netplay: started in {:.2} s",
                now.saturating_duration_since(self.created).as_secs_f64()
            );
            let e = self.link.stats();
            self.lobby_bytes = (e.wire_bytes_sent, e.wire_bytes_received);
            self.started = now;
        }
        self.feed.participant.frame_loop_alive(now);
        self.run_script(now);
    }

    /// `--pause-at`: asks for the pause once this peer ran up to the frame, and for the
    /// resume once it has lasted `--pause-for`.
    fn run_script(&mut self, now: Instant) {
        let Some(mut sp) = self.scripted else {
            return;
        };
        let Some(client) = self.feed.participant.client_mut() else {
            return;
        };
        let mine = client.paused().is_some_and(|(by, _)| by == client.me());
        if !sp.asked && client.frame().0 >= sp.at {
            sp.asked = true;
            client.request_pause(true);
        } else if sp.asked && sp.since.is_none() && mine {
            sp.since = Some(now);
        } else if sp.since.is_some_and(|t| now >= t + sp.hold) {
            client.request_pause(false);
            self.scripted = None;
            return;
        }
        self.scripted = Some(sp);
    }

    /// When the network thread must act without a datagram: the earliest timer of the
    /// participant and the conditioner. One still due after that (a send the budget
    /// holds back) is retried after `SERVICE_INTERVAL`, not at once.
    fn next_timer(&self, now: Instant) -> Instant {
        let timers = [
            self.link.poll_timeout(),
            self.feed.participant.poll_timeout(),
        ];
        match timers.into_iter().flatten().min() {
            Some(t) if t <= now => now + SERVICE_INTERVAL,
            Some(t) => t.min(now + IDLE_WAKE),
            None => now + IDLE_WAKE,
        }
    }

    /// Receives and dispatches every waiting datagram, runs timers and handles events; true
    /// if any datagram came.
    fn receive_and_handle(&mut self, now: Instant) -> bool {
        let came = self.receive(now);
        self.run_timers_and_events(now);
        came
    }

    /// What the frame loop does where `receive_and_handle` would: with a network thread,
    /// which reads the socket the moment a datagram arrives, only the timers and events;
    /// without, all of it.
    fn frame_loop_receive(&mut self, now: Instant) {
        if self.threaded {
            self.run_timers_and_events(now);
        } else {
            self.receive_and_handle(now);
        }
    }

    /// Receives every waiting datagram and hands it to the participant with the time it
    /// was read (the network thread reads as soon as one arrives); true if any came.
    fn receive(&mut self, now: Instant) -> bool {
        match drive::receive(&mut self.link, &mut self.feed.participant, now) {
            Ok(came) => came > 0,
            Err(e) => {
                tracing::warn!("netplay: receiving: {e}");
                false
            }
        }
    }

    /// Runs the participant's timers and handles its events (and the port mapping's).
    fn run_timers_and_events(&mut self, now: Instant) {
        if let Some(pm) = &self.port_map {
            super::port_map::pump(&pm.map, &mut self.feed.participant, pm.port, pm.host);
        }
        self.feed.participant.handle_timeout(now);
        self.handle_events(now);
        self.save_seat_key();
    }

    /// Saves a new seat key (the first Welcome's, then each reconnect's) the moment the
    /// participant has it, so that a process killed at any frame after leaves it on disk.
    fn save_seat_key(&mut self) {
        let Some((store, saved)) = &mut self.seat_keys else {
            return;
        };
        let Some(key) = self
            .feed
            .participant
            .seat_key()
            .filter(|k| Some(*k) != *saved)
        else {
            return;
        };
        *saved = Some(key);
        if let Err(e) = store.save(&key, std::time::SystemTime::now()) {
            tracing::warn!(
                "netplay: could not save your seat key ({e}); if this process ends, a new \
                 join gets your seat back only after a minute"
            );
        }
    }

    /// Says what was typed, then words what the participant raised (the feed already sent
    /// the machine's work to the observer) and passes the recording's events on.
    fn handle_events(&mut self, now: Instant) {
        let mut recorded = Vec::new();
        self.say_typed(now, &mut recorded);
        self.feed.handle_events();
        self.word_events(now, &mut recorded);
        if !recorded.is_empty() {
            lock(&self.feed.shared()).events.extend(recorded);
        }
    }

    /// Words what the feed raised.
    fn word_events(&mut self, now: Instant, recorded: &mut Vec<(Frame, Event)>) {
        while let Some(ev) = self.feed.poll_event() {
            match ev {
                FeedEvent::Participant(ev) => {
                    self.report.event(now, &self.feed.participant, ev, recorded)
                }
                FeedEvent::Loaded { frame, jump } => self.loaded(now, frame, jump),
            }
        }
    }

    /// The machine loaded a state the participant handed it: a spectator's jump, a
    /// player's return, or a resync.
    fn loaded(&mut self, now: Instant, frame: Frame, jump: bool) {
        let spectator = self
            .feed
            .participant
            .client()
            .is_some_and(|c| c.is_spectator());
        match (jump, spectator) {
            (true, true) => {
                self.report.counters.jumps += 1;
                tracing::info!("netplay: watching again from frame {}", frame.0);
            }
            (true, false) => {
                self.report.counters.reconnected(now);
                tracing::info!(
                    "netplay: back in the game from frame {}; your input counts again once \
                     this machine caught up",
                    frame.0
                );
            }
            (false, _) => {
                self.report.counters.resynced(now);
                tracing::info!(
                    "netplay: resynced: continuing from the host's frame {}",
                    frame.0
                );
            }
        }
    }

    /// Says what the player typed (the window's line, standard input, `--say`). A line
    /// typed while the link is down waits for it to come back.
    fn say_typed(&mut self, now: Instant, recorded: &mut Vec<(Frame, Event)>) {
        let board = self.report.chat.clone();
        for line in super::chat::say_typed(&board, &mut self.feed.participant, now) {
            self.report.chat_line(now, line, recorded);
        }
    }

    /// Sends everything the participant wants to send.
    fn send_queued(&mut self, now: Instant) {
        drive::send_queued(&mut self.link, &mut self.feed.participant, now);
    }

    /// Keeps the network going without running frames: the host serves its peers until they
    /// have left or hold every frame it published (or `grace` ran out), so that they can
    /// finish the frames already published. One that plays longer than the host stalls at
    /// the last of them: the goodbye then tells it at once, not after the grace.
    fn linger(&mut self, grace: Duration) {
        let start = Instant::now();
        loop {
            let now = Instant::now();
            self.receive_and_handle(now);
            self.send_queued(now);
            let remaining = self
                .feed
                .participant
                .endpoint()
                .map_or(0, |e| e.undelivered());
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
        let now = Instant::now();
        self.feed.participant.close(reason);
        self.send_queued(now);
        self.link.drain(super::GOODBYE_DRAIN);
        self.close_port_map();
    }

    /// The router forwards nothing to a session that is over.
    fn close_port_map(&mut self) {
        if let Some(pm) = &mut self.port_map {
            super::port_map::close(&mut pm.map, &mut self.feed.participant, pm.port);
        }
    }

    /// Hands the machine's answers to the participant, and words the loads among them.
    fn take_from_observer(&mut self, now: Instant) {
        self.feed.take_replies(now);
        let mut recorded = Vec::new();
        self.word_events(now, &mut recorded);
        if !recorded.is_empty() {
            lock(&self.feed.shared()).events.extend(recorded);
        }
    }

    fn play(&self) -> Play<'_> {
        Play {
            started: self.started,
            lobby_bytes: self.lobby_bytes,
            first: self.feed.first(),
            spec: &self.spec,
        }
    }

    /// The frame loop asks for the next frame: see [`Feed::next`].
    fn next(&mut self, now: Instant) -> FeedPoll {
        self.frame_loop_call(now);
        self.take_from_observer(now);
        self.frame_loop_receive(now);
        let polled = self.feed.poll(now);
        if let Polled::End = polled {
            return FeedPoll::End;
        }
        // What the frame asked of the machine (a checksum) goes out with it.
        self.handle_events(now);
        self.send_queued(now);
        match polled {
            Polled::End => FeedPoll::End,
            Polled::Run(frame, mut inputs) => {
                // `--say`: once the game runs, when everyone in it can hear.
                for text in self.say_at_start.drain(..) {
                    self.report.chat.type_line(text);
                }
                if let Some((every, next, n)) = &mut self.chat_every {
                    if next.is_none_or(|t| now >= t) {
                        *next = Some(now + *every);
                        self.report.chat.type_line(format!("ping {n}"));
                        *n += 1;
                    }
                }
                if let Some((at, mask)) = self.inject {
                    if at == frame.0 {
                        if let Some(me) = self.feed.participant.client().map(|c| c.me().0) {
                            inputs[usize::from(me)].0 ^= mask;
                            tracing::warn!("netplay: injected a desync at frame {at} (test hook)");
                        }
                    }
                }
                if let Some(rtt) = self.rtt() {
                    self.report.counters.record_rtt(rtt);
                }
                let spectator = self
                    .feed
                    .participant
                    .client()
                    .is_some_and(|c| c.is_spectator());
                if spectator && frame.0.is_multiple_of(30) {
                    let link = self.link.stats();
                    if let Some(d) = self
                        .report
                        .status(now, &self.feed.participant, &link, self.play())
                        .watching
                    {
                        self.report.counters.delay_ms.push(d.as_secs_f64() * 1000.0);
                    }
                }
                FeedPoll::Run(inputs)
            }
            // The network thread wakes the frame loop when a datagram comes (`wait_io`), so a
            // stall waits for that or the next display slot; without it the frame loop must
            // look at the socket itself, soon.
            Polled::Wait if self.threaded => FeedPoll::Wait(None),
            Polled::Wait => FeedPoll::Wait(Some(now + STALL_POLL)),
        }
    }

    /// The largest RTT this peer sees: the host's own client talks in memory, so the host
    /// reports its slowest peer.
    fn rtt(&self) -> Option<Duration> {
        match self.feed.participant.endpoint() {
            Some(endpoint) => endpoint.max_rtt(),
            None => self.feed.participant.client().and_then(|c| c.rtt()),
        }
    }
}
