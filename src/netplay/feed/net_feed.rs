//! [`NetFeed`]: the handle the frame loop holds on the shared `NetState`, the network
//! thread it starts, and its `Feed` calls.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::app::{Feed, FeedPoll};
use crate::frontend::chat_board::ChatBoard;
use crate::input::{Bot, Inputs};
use crate::lockstep::{Mode, Roster};
use crate::net::{Link, SocketWaiter};
use crate::netplay::report::Report;
use crate::session::Participant;

use super::{
    lock, FeedPortMap, Net, NetState, ParticipantFeed, ScriptedPause, Shared, SERVICE_INTERVAL,
};
use crate::net::portmap::PortMap;
use crate::netplay::SessionEnd;

pub struct NetFeed {
    net: Arc<Net>,
    worker: Option<JoinHandle<()>>,
    /// `arrivals` when the frame loop last looked at the state.
    seen: u64,
}

/// The network thread: receives and answers datagrams as they come, while the frame loop's
/// thread runs, draws and waits.
fn network_thread(net: Arc<Net>, waiter: SocketWaiter) {
    loop {
        let until = {
            let mut s = lock(&net.state);
            if s.stop {
                return;
            }
            let now = Instant::now();
            if s.receive_and_handle(now) {
                s.arrivals += 1;
                net.arrived.notify_all();
            }
            s.send_queued(now);
            if s.feed.end().is_some() {
                // The frame loop may be waiting for a frame that never comes.
                net.arrived.notify_all();
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
    /// The feed for `participant`, whose handshake and lobby are over (a joiner has its
    /// start state, a host's game has started).
    pub fn new(link: Link, participant: Participant, bot: Option<Bot>) -> NetFeed {
        let e = link.stats();
        let waiter = link.waiter();
        let now = Instant::now();
        let net = Arc::new(Net {
            state: Mutex::new(NetState {
                lobby_bytes: (e.wire_bytes_sent, e.wire_bytes_received),
                link,
                feed: ParticipantFeed::new(participant, bot),
                port_map: None,
                inject: None,
                report: Report::default(),
                started: now,
                created: now,
                arrivals: 0,
                loop_called: false,
                stop: false,
                threaded: false,
                spec: Default::default(),
                say_at_start: Vec::new(),
                scripted: None,
                chat_every: None,
                seat_keys: None,
            }),
            arrived: Condvar::new(),
        });
        let worker = match waiter {
            Ok(waiter) => {
                let net = net.clone();
                std::thread::Builder::new()
                    .name("netplay".into())
                    .spawn(move || network_thread(net, waiter))
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

    /// Where chat is shown and typed, what to say once the game runs (`--say`), and how
    /// often to say a numbered ping (a test hook).
    pub fn with_chat(self, board: ChatBoard, say: Vec<String>, every: Option<Duration>) -> NetFeed {
        {
            let mut s = self.state();
            s.report.chat = board;
            s.say_at_start = say;
            s.chat_every = every.map(|d| (d, None, 0));
        }
        self
    }

    /// Player names by seat, for log lines.
    pub fn with_names(self, names: Roster) -> NetFeed {
        self.state().report.names = names;
        self
    }

    /// The command that brings this joiner back into the session, said if it gives up
    /// reconnecting.
    pub fn with_rejoin(self, command: String) -> NetFeed {
        self.state().report.rejoin = Some(command);
        self
    }

    /// `--path`, for how a path that stays relayed is worded.
    pub fn with_path(self, path: crate::session::direct::PathMode) -> NetFeed {
        self.state().report.path = path;
        self
    }

    /// The router's port mapping of this socket (`port`), kept up while the session runs
    /// and removed when it ends; `host`: a host waiting to be joined.
    pub fn with_port_map(self, map: Option<PortMap>, port: u16, host: bool) -> NetFeed {
        self.state().port_map = map.map(|map| FeedPortMap { map, port, host });
        self
    }

    /// Where this player joiner keeps its seat key (`seat_keys`), saved whenever a Welcome
    /// gives it a new one.
    pub fn with_seat_keys(self, keys: Option<crate::netplay::seat_keys::SeatKeys>) -> NetFeed {
        self.state().seat_keys = keys.map(|k| (k, None));
        self
    }

    /// The room on a dedicated server this session runs in (status bar, stats).
    pub fn with_room(self, room: Option<String>) -> NetFeed {
        self.state().report.room = room;
        self
    }

    /// Speculation as decided for this session (`--speculate`, the rollback check) and
    /// `--delay`, for the picture and the status bar.
    pub fn with_speculation(
        self,
        delay: crate::netplay::speculation::Delay,
        d: &crate::netplay::speculation::Decision,
    ) -> NetFeed {
        {
            let mut s = self.state();
            s.spec.delay = delay;
            s.feed.delay = delay;
            s.spec.on = d.depth > 0;
            s.spec.off = d.off.clone();
        }
        self
    }

    /// Test hook for desync recovery: at `frame`, XOR this peer's own input with `mask`
    /// (locally only), which makes this peer diverge.
    pub fn with_injected_desync(self, frame: u32, mask: u16) -> NetFeed {
        self.state().inject = Some((frame, mask));
        self
    }

    /// Test hook (`--pause-at`, `--pause-for`): this player pauses the game for everyone
    /// once it reached session frame `at`, and resumes it `hold` later.
    pub fn with_pause_at(self, at: u32, hold: Duration) -> NetFeed {
        self.state().scripted = Some(ScriptedPause {
            at,
            hold,
            asked: false,
            since: None,
        });
        self
    }

    /// The exchange with the frame observer (the machine's work, recording events).
    pub fn shared(&self) -> Shared {
        self.state().feed.shared()
    }

    /// Why the session ended, if it did, with how to come back.
    pub fn end(&self) -> Option<SessionEnd> {
        let s = self.state();
        s.feed.end().map(|cause| s.report.ending(cause.clone()))
    }

    pub fn is_host(&self) -> bool {
        self.state().feed.participant.is_host()
    }

    pub fn is_spectator(&self) -> bool {
        self.state()
            .feed
            .participant
            .client()
            .is_some_and(|c| c.is_spectator())
    }

    /// The session's lockstep mode.
    pub fn mode(&self) -> Mode {
        self.state()
            .feed
            .participant
            .client()
            .map_or_else(Mode::default, |c| c.config().mode)
    }

    /// The session frame the machine starts from.
    pub fn first_frame(&self) -> u32 {
        self.state().feed.first()
    }

    /// Stops before session frame `frame` (`--frames`).
    pub fn end_at(&mut self, frame: u64) {
        self.state().feed.end_at(frame);
    }

    pub fn names(&self) -> Roster {
        self.state().report.names.clone()
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

    /// Removes the router's port mapping, if any (`close` does too).
    pub fn close_port_map(&mut self) {
        self.stop_worker();
        self.state().close_port_map();
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
        s.frame_loop_call(now);
        s.feed.set_keys(local[0]);
        s.frame_loop_receive(now);
        s.send_queued(now);
        self.seen = s.arrivals;
    }

    fn next(&mut self, now: Instant) -> FeedPoll {
        let mut s = lock(&self.net.state);
        self.seen = s.arrivals;
        s.next(now)
    }

    fn pace(&self) -> Option<f64> {
        self.state().feed.pace()
    }

    fn paused(&self) -> bool {
        self.state().feed.paused()
    }

    fn pause_in_force(&self) -> bool {
        self.state().feed.pause_in_force()
    }

    fn request_pause(&mut self, pause: Option<bool>) -> bool {
        self.state().feed.request_pause(pause)
    }

    fn status_line(&self) -> Option<String> {
        let s = self.state();
        let link = s.link.stats();
        Some(
            s.report
                .status(Instant::now(), &s.feed.participant, &link, s.play())
                .to_string(),
        )
    }

    fn take_behind(&mut self) -> Option<Duration> {
        self.state().feed.take_behind()
    }

    fn backlog(&mut self) -> u32 {
        self.state().feed.backlog()
    }

    fn paced_by_arrival(&self) -> bool {
        self.state().feed.paced_by_arrival()
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
                .wait_timeout_while(s, timeout, |s| s.arrivals == seen && s.feed.end().is_none())
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
        let s = self.state();
        let link = s.link.stats();
        let mut map = s
            .report
            .stats_map(Instant::now(), &s.feed.participant, &link, s.play());
        let pm = s.port_map.as_ref().map(|p| &p.map);
        map.insert("port_map".into(), crate::netplay::port_map::stats(pm));
        map
    }

    /// Speculation (`--speculate`, `--delay`): see `Client::predict`.
    fn predict(&mut self, max: u32, out: &mut Vec<Inputs>) {
        let mut s = self.state();
        if let Some(delay) = s.feed.predict(max, out) {
            s.spec.delay_now = delay;
        }
    }

    fn displayed(&mut self, now: Instant, head: u64, depth: u32) {
        let mut s = self.state();
        s.feed.displayed(now, head, depth);
        if s.spec.on {
            s.spec.ahead = Some(depth);
        }
    }

    fn rolled_back(&mut self, frames: u32) {
        let mut s = self.state();
        s.feed.rolled_back(frames);
        s.spec.rolled_back(Instant::now());
    }

    fn speculation_stopped(&mut self, why: &str) {
        let mut s = self.state();
        s.spec.on = false;
        s.spec.ahead = None;
        s.spec.off = Some(format!("rollback stopped: {why}"));
    }
}
