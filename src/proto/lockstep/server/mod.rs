//! The lockstep server: collects every client's samples, places them on frames, publishes
//! frames once every player's input for them is known (strict) or on its own clock
//! (optimistic, see [`Mode`](super::Mode)), and sends UPDATEs.
//!
//! This file is the facade, [`Server`], and what crosses its parts: joins and departures,
//! pauses, events, the order of the calls. The state it holds is split by owner:
//! - [`player`]: a player, a [`PeerLink`] with an [`InputQueue`](inputs::InputQueue) and a
//!   [`Stream`](stream::Stream);
//! - [`inputs`]: a player's input queue;
//! - [`stream`]: the published frames, each receiver's stream of them, its UPDATEs;
//! - [`publish`]: the [`Publisher`], strict or optimistic;
//! - [`spectators`]: the spectators, each a link and a stream;
//! - [`checksums`]: checksums and the desync verdict;
//! - [`event`]: the [`ServerEvent`]s for the driver (data only);
//! - [`resume`]: a server that takes over a running game, one more `impl Server`.
//!
//! Of this file, `spectators` uses only [`ServerEvent`] and `unknown_peer`; `resume`
//! extends [`Server`] and sees all of it; the rest import nothing of it. Among them the
//! imports go one way: `publish` uses `player`, `player` uses `inputs` and `stream`,
//! `spectators` uses `stream`; `checksums` stands alone.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::input::{Inputs, MAX_PLAYERS};
use crate::wire::{Dropped, Handled, Header, Transmit};

use super::budget::SendBudget;
use super::frame::{Frame, PeerId, Slot, SpectatorId};
use super::link::{PeerLink, Silence};
use super::msg::{Notice, NoticeName, PauseRequest};
use super::pause::{
    Active, Pauses, Verdict, PAUSED_SILENCE, PAUSE_LIMIT, STOP_SETTLE, STOP_TAINT, STOP_TAINT_OWN,
};
use super::stats::{PeerStats, Placement, ServerStats, SpectatorStats, Traffic};
use super::{Config, LockstepError};

mod checksums;
mod event;
mod inputs;
mod player;
mod publish;
mod resume;
mod spectators;
mod stream;

use checksums::Checksums;
pub use event::{PeerLeftReason, ServerEvent};
use player::Player;
#[cfg(test)]
pub(super) use player::UNCONTACTED_SILENCE;
use publish::{Players, Publisher};
use spectators::Spectators;
pub use spectators::{SPECTATOR_LAG_SECS, SPECTATOR_TIMEOUT};
use stream::{build_round, send_at, History, RoundCtx};

/// Published frames kept beyond what every client holds, in seconds of play: a late
/// joiner's or a spectator's start state is a player's machine at some frame a little
/// behind the frontier, and its stream starts there.
const RETAIN_SECS: f64 = 4.0;
/// A late joiner counts as caught up, and its input enters the game, once its newest
/// sample is within the lead plus this many keyframe intervals of the frontier; or after
/// `player::ACTIVATE_ANYWAY` of CTRLs.
const ACTIVATE_SLACK_K: u32 = 2;
/// After a player left, the input round trips the others report are ignored this long (the
/// window they are measured over, 4 s, and a margin): the frames that waited for the
/// departed player until its timeout made their samples' round trips that long, which is
/// no delay of their links. The lead follows the link round trips meanwhile. Trusted, those
/// reports held everyone's lead at a second for the next 4 s, and a player who rejoined
/// played with that delay.
const FORGET_STALL: Duration = Duration::from_secs(5);

/// The server side of a session. Lives in the hosting process.
///
/// Calling order (like quinn-proto): [`add_peer`](Self::add_peer) for every player before
/// the session starts; then, in any order as things happen, feed each lockstep datagram
/// to [`handle_datagram`](Self::handle_datagram) and call
/// [`handle_timeout`](Self::handle_timeout) when [`poll_timeout`](Self::poll_timeout) is
/// reached; after each of those drain [`poll_transmit`](Self::poll_transmit) (send every
/// datagram to its peer) and [`poll_event`](Self::poll_event). Never reads a clock.
#[derive(Debug)]
pub struct Server {
    cfg: Config,
    epoch: Instant,
    peers: Players,
    /// Published frames some client still lacks.
    history: History,
    publisher: Publisher,
    /// A sample has been placed on a frame: no more joins.
    started: bool,
    checksums: Checksums,
    events: VecDeque<ServerEvent>,
    traffic: Traffic,
    /// Where `poll_transmit` looks first, so no peer starves.
    next_peer: usize,
    /// Watchers: they get every published frame and send nothing but acks. Nothing of the
    /// players' waits for them (see [`Server::add_spectator`]).
    spectators: Spectators,
    /// Published frames kept at least (see `RETAIN_SECS`).
    retain: usize,
    /// Frames kept from a state handed out for a stream that has not started yet (see
    /// [`Server::keep_from`]), by whom it is for.
    kept: Vec<(Slot, Frame)>,
    /// Input round-trip reports are ignored until then (see `FORGET_STALL`).
    ignore_input_rtt_until: Option<Instant>,
    /// Placement counts of players who left, by slot (their stats outlive them).
    departed: [Option<Placement>; MAX_PLAYERS],
    pauses: Pauses,
    /// Input round-trip reports are not taken until then: a player stopped (see `pause`).
    stop_taint_until: Option<Instant>,
}

/// The lockstep server's peers are slots; the driver knows their addresses.
impl crate::wire::Machine for Server {
    type Addr = Slot;
    type Event = ServerEvent;

    fn handle_datagram<'a>(&mut self, now: Instant, from: Slot, datagram: &'a [u8]) -> Handled<'a> {
        Server::handle_datagram(self, now, from, datagram)
    }
    fn handle_timeout(&mut self, now: Instant) {
        Server::handle_timeout(self, now)
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<Slot>> {
        Server::poll_transmit(self, now)
    }
    fn poll_event(&mut self) -> Option<ServerEvent> {
        Server::poll_event(self)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Server::poll_timeout(self)
    }
}

impl Server {
    /// A server with no players yet (add them with `add_peer`). Fails if `cfg` is invalid.
    pub fn new(now: Instant, cfg: Config) -> Result<Server, LockstepError> {
        cfg.validate()?;
        Ok(Server {
            epoch: now,
            peers: Default::default(),
            history: History::new(),
            publisher: Publisher::new(&cfg),
            started: false,
            checksums: Checksums::default(),
            events: VecDeque::new(),
            traffic: Traffic::default(),
            next_peer: 0,
            spectators: Spectators::default(),
            retain: (RETAIN_SECS * cfg.fps).ceil() as usize,
            kept: Vec::new(),
            ignore_input_rtt_until: None,
            departed: Default::default(),
            pauses: Pauses::default(),
            stop_taint_until: None,
            cfg,
        })
    }

    /// Adds a player. Only before the session starts (before any sample was placed on a
    /// frame): every client starts at frame 0.
    pub fn add_peer(&mut self, now: Instant, peer: PeerId) -> Result<(), LockstepError> {
        if peer.0 >= self.cfg.players {
            return Err(LockstepError::NoSuchSlot(peer));
        }
        if self.peers[peer.index()].is_some() {
            return Err(LockstepError::AlreadyPresent(peer));
        }
        if self.started || self.history.base > Frame::ZERO {
            return Err(LockstepError::Started);
        }
        self.seat(self.new_peer(peer, now, Frame::ZERO));
        self.publish(now);
        Ok(())
    }

    fn new_peer(&self, peer: PeerId, now: Instant, first: Frame) -> Player {
        // An UPDATE carries every player's input: the budget is for two players, more get
        // proportionally more.
        let budget = self.cfg.send_budget * u32::from(self.cfg.players.max(2)) / 2;
        let link = PeerLink::new(self.epoch, now, budget, self.cfg.udp_ip_header);
        Player::new(peer, link, now, first)
    }

    fn seat(&mut self, p: Player) {
        self.publisher.seat(&self.cfg, p.id);
        let idx = p.id.index();
        self.peers[idx] = Some(p);
    }

    /// Checks that a stream can start at `start`: a frame published and still kept.
    fn check_start(&self, start: Frame) -> Result<(), LockstepError> {
        if start < self.history.base || start > self.frontier() {
            return Err(LockstepError::StartOutOfRange {
                start,
                oldest: self.history.base,
                frontier: self.frontier(),
            });
        }
        Ok(())
    }

    /// Adds a player to a running session (a late joiner, or one back after a drop) whose
    /// machine starts from the state at the start of frame `start` (its client: see
    /// [`Client::new_at`](super::Client::new_at)). It is sent every frame from `start` on,
    /// with neutral input on its slot, and nobody waits for it until it has caught up; then
    /// its samples go on frames from the frontier on, which every client is told
    /// ([`ServerEvent::PeerJoined`]). Before the first frame is published this is
    /// [`add_peer`](Self::add_peer).
    pub fn add_late_peer(
        &mut self,
        now: Instant,
        peer: PeerId,
        start: Frame,
        name: &str,
    ) -> Result<(), LockstepError> {
        if !self.started && self.history.base == Frame::ZERO && self.history.frames.is_empty() {
            return self.add_peer(now, peer);
        }
        if peer.0 >= self.cfg.players {
            return Err(LockstepError::NoSuchSlot(peer));
        }
        if self.peers[peer.index()].is_some() {
            return Err(LockstepError::AlreadyPresent(peer));
        }
        self.check_start(start)?;
        self.keep_from(Slot::Player(peer), None);
        let mut p = self.new_peer(peer, now, start);
        p.pending = true;
        p.name = NoticeName::new(name);
        self.seat(p);
        self.publish(now);
        Ok(())
    }

    /// True while a late joiner has not caught up (its input is neutral).
    pub fn is_pending(&self, peer: PeerId) -> bool {
        self.peer(peer).is_some_and(|p| p.pending)
    }

    /// Adds a spectator: from `start` on it is sent every published frame, under its own
    /// send budget (`Config::send_budget`, not scaled by the players), and it sends only
    /// acks ([`Client::spectator`](super::Client::spectator)). No frame waits for it, its
    /// acks pin no more history than `SPECTATOR_LAG_SECS` of frames, and its timeout only
    /// removes it.
    pub fn add_spectator(
        &mut self,
        now: Instant,
        id: SpectatorId,
        start: Frame,
        header: usize,
    ) -> Result<(), LockstepError> {
        if self.spectators.contains(id) {
            return Err(LockstepError::SpectatorPresent(id.0));
        }
        self.check_start(start)?;
        self.keep_from(Slot::Spectator(id), None);
        let link = PeerLink::new(self.epoch, now, self.cfg.send_budget, header);
        self.spectators.add(link, id, start, now);
        Ok(())
    }

    /// Starts spectator `id`'s stream again at `start` (a fresh state after it fell behind).
    pub fn restart_spectator(
        &mut self,
        now: Instant,
        id: SpectatorId,
        start: Frame,
    ) -> Result<(), LockstepError> {
        self.check_start(start)?;
        if !self.spectators.restart(now, id, start) {
            return Err(LockstepError::NoSpectator(id.0));
        }
        Ok(())
    }

    /// Drops spectator `id`; false if there was none.
    pub fn remove_spectator(&mut self, id: SpectatorId) -> bool {
        self.spectators.remove(id)
    }

    /// Shortest time between two UPDATEs to a spectator: it needs no frame the moment it is
    /// published, so its frames go out a keyframe interval's worth at a time, which halves
    /// its traffic where a lossy player's CTRLs publish a frame at a time.
    fn spectator_batch(&self) -> Duration {
        self.cfg.frame_duration() * self.cfg.keyframe_interval
    }

    /// Spectators watching.
    pub fn spectator_count(&self) -> usize {
        self.spectators.len()
    }

    /// Spectator `id`'s link.
    pub fn spectator(&self, id: SpectatorId) -> Option<SpectatorStats> {
        self.spectators.get(id)
    }

    /// The oldest frame a late stream can start at (see `RETAIN_SECS`).
    pub fn oldest_frame(&self) -> Frame {
        self.history.base
    }

    /// Keeps every published frame from `from` on (`None`: stops keeping them) until the
    /// stream of `slot` starts: a state at `from` was handed out for it, and however long
    /// its path takes to be tried and the state to cross, its stream can start there. The
    /// cost is the inputs of the frames meanwhile, a few bytes each. Adding the player or
    /// spectator in `slot` stops keeping them.
    pub fn keep_from(&mut self, slot: Slot, from: Option<Frame>) {
        self.kept.retain(|(s, _)| *s != slot);
        if let Some(f) = from {
            self.kept.push((slot, f.max(self.history.base)));
        }
    }

    /// Sets the send budget toward `peer` (bytes per second, UDP/IP headers included; 0 = no
    /// limit). The host's own client lives in the same process: no wire, so no budget.
    pub fn set_send_budget(
        &mut self,
        peer: PeerId,
        bytes_per_sec: u32,
    ) -> Result<(), LockstepError> {
        let link = &mut self.peer_mut(peer)?.link;
        link.budget = SendBudget::new(bytes_per_sec, link.header);
        Ok(())
    }

    /// Sets the UDP/IP header bytes each datagram to or from `peer` costs on its link (48
    /// over IPv6 where the config says 28; 0 in memory), for its send budget and traffic.
    pub fn set_udp_ip_header(&mut self, peer: PeerId, header: usize) -> Result<(), LockstepError> {
        let link = &mut self.peer_mut(peer)?.link;
        link.header = header;
        link.budget.set_header(header);
        Ok(())
    }

    /// Gives the server a round trip to `peer` measured before the session (the handshake's
    /// start-state transfer), so the first lead covers it already: without one the lead
    /// starts at `min_lead` and every client stalls for about a round trip right after
    /// frame 0. Ignored once the peer's own timestamps gave a sample.
    pub fn seed_rtt(
        &mut self,
        now: Instant,
        peer: PeerId,
        rtt: Duration,
    ) -> Result<(), LockstepError> {
        let p = self.peer_mut(peer)?;
        if p.link.rtt.srtt().is_none() {
            p.link.rtt.update(rtt);
        }
        self.publish(now);
        Ok(())
    }

    /// Judges desyncs by majority: once every player reported a frame's checksum, those that
    /// differ from most of the others (on a tie, from the lowest slot) are out of sync. For a
    /// server with no machine of its own; by default the reference is player 1's (or the
    /// lowest slot still in the session).
    pub fn set_majority_checksums(&mut self, on: bool) {
        self.checksums.majority = on;
    }

    /// The lowest slot other than `except` that reported `value` for `frame`: a player whose
    /// machine can be trusted for a resync.
    pub fn checksum_holder(&self, frame: Frame, value: u64, except: PeerId) -> Option<PeerId> {
        self.checksums.holder(frame, value, except)
    }

    /// Takes a player out: it gets neutral input from the next unpublished frame on, which
    /// every remaining client is told. Raises [`ServerEvent::PeerLeft`].
    pub fn remove_peer(&mut self, now: Instant, peer: PeerId) -> Result<(), LockstepError> {
        self.peer_mut(peer)?;
        self.drop_peer(peer, now, PeerLeftReason::Removed);
        Ok(())
    }

    /// `peer` has sent no CTRL yet but says it is on its way (it loads its content, unserializes
    /// the start state, opens its window; the session layer's `Loading`): it counts as heard,
    /// so the silence timeout drops it only once that stops. Frame 0 waits for it as for any
    /// player not running yet. Ignored once its first CTRL came: from then on only CTRLs keep
    /// a player in. False if ignored (or no such peer).
    pub fn starting(&mut self, now: Instant, peer: PeerId) -> bool {
        match self.peers.get_mut(peer.index()).and_then(Option::as_mut) {
            Some(p) if p.link.recv_seq.is_none() => {
                p.link.last_heard = p.link.last_heard.max(now);
                p.loading = true;
                p.link.warned = false;
                true
            }
            _ => false,
        }
    }

    /// `peer` runs: its first CTRL has come.
    pub fn has_sent_ctrl(&self, peer: PeerId) -> bool {
        self.peer(peer).is_some_and(|p| p.link.recv_seq.is_some())
    }

    /// Feeds a datagram that arrived from `from`, a player or a spectator (a spectator's may
    /// only be a CTRL with acks and the link's timestamps). Malformed ones, other sessions or
    /// kinds, and unknown peers are dropped and counted.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: impl Into<Slot>,
        datagram: &[u8],
    ) -> Handled<'static> {
        match from.into() {
            Slot::Player(p) => self.handle_player_datagram(now, p, datagram),
            Slot::Spectator(s) => {
                self.spectators
                    .handle_datagram(now, s, datagram, &mut self.traffic)
            }
        }
    }

    fn handle_player_datagram(
        &mut self,
        now: Instant,
        from: PeerId,
        datagram: &[u8],
    ) -> Handled<'static> {
        let frontier = self.frontier();
        let Some(peer) = self.peers.get_mut(from.index()).and_then(|p| p.as_mut()) else {
            self.traffic
                .received(datagram.len(), self.cfg.udp_ip_header);
            self.traffic.packets_dropped_invalid += 1;
            return Handled::Dropped(unknown_peer(datagram));
        };
        let ctrl = match peer.read_ctrl(datagram, frontier, &mut self.traffic) {
            Ok(ctrl) => ctrl,
            Err(None) => return Handled::Taken,
            Err(Some(why)) => return Handled::Dropped(why),
        };
        let newest = peer.heard(now, &ctrl.head);
        // Its frame loop stood still: the frames that waited for it held the others'
        // samples back (see `pause`).
        if ctrl.stopped && newest && !peer.pending {
            if peer.settle_until.is_none_or(|t| now >= t) {
                tracing::debug!("lockstep: {from} stood still: input round trips held");
                peer.settle_until = Some(now + STOP_SETTLE);
            }
            self.stop_taint_until = Some(now + STOP_TAINT);
            peer.taint_until = Some(now + STOP_TAINT_OWN);
        }
        let trusted = self.ignore_input_rtt_until.is_none_or(|t| now >= t)
            && self.stop_taint_until.is_none_or(|t| now >= t)
            && peer.taint_until.is_none_or(|t| now >= t);
        if let Some(ms) = ctrl.input_rtt_ms.filter(|_| newest && trusted) {
            peer.input_rtt = Some(Duration::from_millis(u64::from(ms)));
        }
        // Only the newest datagram's samples: a late one (overtaken on the way) was coded
        // against what the client thought we held then, so read against where we are now
        // its sample numbers can be wrong; and the newer one repeated every sample of it
        // that we had not acknowledged.
        if let Some(run) = ctrl.samples.filter(|_| newest) {
            let skip = peer.input.extend(&run);
            let end = run.first + run.pads.len() as u32;
            if !peer.pending {
                self.publisher
                    .samples_arrived(&self.cfg, from, now, run.first + skip, end);
            }
            let settling = peer.settle_until.is_some_and(|t| now < t);
            if let Some(age_ms) = run.age_ms.filter(|_| !settling) {
                // When the client pushed its newest sample, on our clock (see `timesync`).
                let one_way = peer.link.rtt.srtt().unwrap_or_default() / 2;
                let pushed = now.saturating_duration_since(self.epoch).as_secs_f64()
                    - one_way.as_secs_f64()
                    - f64::from(age_ms) / 1000.0;
                peer.phase
                    .observe(end - 1, pushed, self.cfg.frame_duration().as_secs_f64());
            }
        }
        for (frame, value) in ctrl.checksums {
            self.record_checksum(frame, from, value);
        }
        if let Some(req) = ctrl.pause.filter(|_| newest) {
            self.pause_request(now, from, req);
        }
        self.maybe_activate(now, from);
        self.publish(now);
        Handled::Taken
    }

    /// A late joiner whose newest sample is about where a caught-up player's would be (or
    /// that has sent for `ACTIVATE_ANYWAY`) plays from the frontier on: the samples it
    /// pushed while it caught up are dropped but the newest, which goes on the frontier.
    fn maybe_activate(&mut self, now: Instant, peer: PeerId) {
        let frontier = self.frontier();
        let slack = ACTIVATE_SLACK_K * self.cfg.keyframe_interval;
        let lead = self.publisher.lead_of(peer);
        let Some(p) = self.peers[peer.index()].as_mut() else {
            return;
        };
        let Some(newest) = p.try_activate(now, frontier, lead + slack) else {
            return;
        };
        tracing::debug!(
            "{peer}: caught up at sample {newest}; plays from {frontier} (lead {lead})"
        );
        let name = p.name;
        self.notify_all(Notice::Joined {
            peer,
            from: frontier,
            name,
        });
        self.events.push_back(ServerEvent::PeerJoined {
            peer,
            from_frame: frontier,
        });
    }

    /// Datagrams to send, one at a time, with the player or spectator each goes to (the
    /// players' first). Call until `None`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<Slot>> {
        if let Some(t) = self.poll_player_transmit(now) {
            let to = Slot::Player(t.to);
            return Some(t.with_to(to));
        }
        let batch = self.spectator_batch();
        let t = (self.spectators).poll_transmit(
            now,
            &self.cfg,
            batch,
            &self.history,
            &mut self.traffic,
        )?;
        let to = Slot::Spectator(t.to);
        Some(t.with_to(to))
    }

    fn poll_player_transmit(&mut self, now: Instant) -> Option<Transmit<PeerId>> {
        let resend = self.cfg.resend_interval();
        for i in 0..MAX_PLAYERS {
            let idx = (self.next_peer + i) % MAX_PLAYERS;
            let Some(p) = self.peers[idx].as_mut() else {
                continue;
            };
            if let Some(bytes) = p.stream.queued.pop_front() {
                return Some(Transmit::new(p.id, bytes));
            }
            let batch = self.publisher.batch(&self.cfg, p.link.header);
            let last_send = p.link.last_send;
            let dirty = p.stream.dirty && last_send.is_none_or(|t| now >= t + batch);
            if (dirty || last_send.is_none_or(|t| now >= t + resend)) && p.link.budget.allows(now) {
                self.next_peer = (idx + 1) % MAX_PLAYERS;
                let id = p.id;
                self.build_round(id, now);
                let p = self.peers[idx].as_mut()?;
                return p
                    .stream
                    .queued
                    .pop_front()
                    .map(|bytes| Transmit::new(p.id, bytes));
            }
        }
        None
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) (and `poll_transmit`) should run next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let resend = self.cfg.resend_interval();
        let base = self.silence_limit();
        let paused = self.pauses.active().is_some();
        self.peers
            .iter()
            .flatten()
            .flat_map(|p| {
                let batch = self.publisher.batch(&self.cfg, p.link.header);
                [
                    send_at(&p.link, &p.stream, batch, resend, None),
                    p.link.warn_at(self.cfg.warn_after),
                    Some(p.link.last_heard + p.silence_limit(base)),
                ]
            })
            .chain(self.spectators.timers(&self.cfg, self.spectator_batch()))
            .chain([
                self.publisher
                    .next_tick(&self.cfg, &self.peers, paused, self.frontier()),
                self.pauses.runs_out_at(),
            ])
            .flatten()
            .min()
    }

    /// Raises silence warnings, drops peers past the timeout, and lets the lead step down.
    pub fn handle_timeout(&mut self, now: Instant) {
        let base = self.silence_limit();
        for idx in 0..MAX_PLAYERS {
            let Some(p) = self.peers[idx].as_mut() else {
                continue;
            };
            let limit = p.silence_limit(base);
            match p.link.silence(now, limit, self.cfg.warn_after) {
                Silence::Gone(silent) => {
                    tracing::info!("{}: silent for {} ms, dropped", p.id, silent.as_millis());
                    let id = p.id;
                    self.drop_peer(id, now, PeerLeftReason::TimedOut);
                }
                Silence::Warn(silent) => self.events.push_back(ServerEvent::PeerSilent {
                    peer: p.id,
                    silent_for: silent,
                }),
                Silence::Heard => {}
            }
        }
        self.spectators
            .drop_silent(now, &self.cfg, &mut self.events);
        if let Some(a) = self.pauses.run_out(now) {
            tracing::info!(
                "lockstep: {}'s pause at {} ran out after {} s",
                a.by,
                a.at,
                PAUSE_LIMIT.as_secs()
            );
            self.resumed(now, a.by, a);
        }
        self.publish(now);
    }

    /// The current lead target in frames (each player's own offset converges to it).
    pub fn lead(&self) -> u32 {
        self.publisher.lead(&self.cfg)
    }

    /// The next keyframe: every frame before it is published.
    pub fn frontier(&self) -> Frame {
        self.history.frontier()
    }

    /// The published frames from `from` on that are still kept, and the frame the first of
    /// them is (later than `from` when older ones were forgotten). At least `RETAIN_SECS`
    /// of frames are kept, so a reader that asks more often than that sees every frame (a
    /// dedicated server's recording of a room, `serve --archive`).
    pub fn published_since(&self, from: Frame) -> (Frame, impl Iterator<Item = &Inputs> + '_) {
        let first = from.max(self.history.base);
        let skip = first.since(self.history.base) as usize;
        (first, self.history.frames.iter().skip(skip))
    }

    /// The checksum of `frame` that most players who reported one agree on (`None` when
    /// none did, they are split evenly, or the frame is no longer kept).
    pub fn agreed_checksum(&self, frame: Frame) -> Option<u64> {
        self.checksums.agreed(frame)
    }

    /// The frames `peer` has acknowledged: it holds every frame before this one.
    pub fn delivered(&self, peer: PeerId) -> Option<Frame> {
        self.peer(peer).map(|p| p.stream.acked)
    }

    /// The newest sequence number received from `peer`.
    #[cfg(test)]
    pub(crate) fn newest_seq_from(&self, peer: PeerId) -> Option<u16> {
        self.peer(peer).and_then(|p| p.link.recv_seq)
    }

    /// Smoothed RTT to `peer`.
    pub fn rtt(&self, peer: PeerId) -> Option<Duration> {
        self.peer(peer).and_then(|p| p.link.rtt.srtt())
    }

    /// Players currently in the session.
    pub fn peers(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.peers.iter().flatten().map(|p| p.id)
    }

    /// The server's numbers as of now.
    pub fn stats(&self) -> ServerStats {
        let advances = publish::advances(&self.cfg, &self.peers);
        ServerStats {
            lead: self.lead(),
            keyframe_interval: self.cfg.keyframe_interval,
            frontier: self.frontier(),
            traffic: self.traffic,
            peers: self
                .peers
                .iter()
                .flatten()
                .map(|p| PeerStats {
                    peer: p.id,
                    rtt: p.link.rtt.srtt(),
                    rtt_var: p.link.rtt.rttvar(),
                    input_rtt: p.input_rtt,
                    lead: self.frontier().0.saturating_sub(p.input.next),
                    advance_frames: advances[p.id.index()],
                    buffered_samples: p.input.samples.len(),
                    traffic: p.link.traffic,
                    placement: p.placed.clone(),
                })
                .collect(),
            placements: (0..MAX_PLAYERS)
                .filter_map(|i| {
                    let now = self.peers[i].as_ref().map(|p| &p.placed);
                    let before = self.departed[i].as_ref();
                    if now.is_none() && before.is_none() {
                        return None;
                    }
                    let mut all = before.cloned().unwrap_or_default();
                    if let Some(now) = now {
                        all.merge(now);
                    }
                    Some((PeerId(i as u8), all))
                })
                .collect(),
        }
    }

    fn peer(&self, peer: PeerId) -> Option<&Player> {
        self.peers.get(peer.index()).and_then(|p| p.as_ref())
    }

    fn peer_mut(&mut self, peer: PeerId) -> Result<&mut Player, LockstepError> {
        self.peers
            .get_mut(peer.index())
            .and_then(Option::as_mut)
            .ok_or(LockstepError::NotPresent(peer))
    }

    fn drop_peer(&mut self, peer: PeerId, now: Instant, reason: PeerLeftReason) {
        let Some(gone) = self.peers[peer.index()].take() else {
            return;
        };
        self.departed[peer.index()]
            .get_or_insert_with(Placement::default)
            .merge(&gone.placed);
        // The others waited for it if it had gone silent (see `FORGET_STALL`).
        let waited_for = reason == PeerLeftReason::TimedOut || (gone.link.warned && !gone.pending);
        let from = self.frontier();
        self.notify_all(Notice::Left { peer, from });
        if waited_for {
            self.ignore_input_rtt_until = Some(now + FORGET_STALL);
            for p in self.peers.iter_mut().flatten() {
                p.input_rtt = None;
            }
        }
        self.events.push_back(ServerEvent::PeerLeft {
            peer,
            from_frame: from,
            reason,
        });
        self.publish(now);
    }

    fn record_checksum(&mut self, frame: Frame, from: PeerId, value: u64) {
        let present: Vec<PeerId> = self.peers().collect();
        let mismatches = self.checksums.record(frame, from, value, &present);
        for (peer, expected, got) in mismatches {
            tracing::warn!("desync at {frame}: {peer} has {got:08x}, expected {expected:08x}");
            self.events.push_back(ServerEvent::Desync {
                frame,
                peer,
                expected,
                got,
            });
            self.notify_all(Notice::Desync { peer, frame });
        }
    }

    /// Publishes what can be (see [`Publisher::publish`]); then marks the streams to send
    /// and forgets the history nobody needs.
    fn publish(&mut self, now: Instant) {
        let published = self.publisher.publish(
            &self.cfg,
            now,
            &mut self.peers,
            &mut self.history,
            &mut self.pauses,
        );
        self.started |= published.placed;
        if let Some(a) = published.paused {
            self.announce_pause(a.by, a.at);
        }
        if published.any {
            for p in self.peers.iter_mut().flatten() {
                p.stream.dirty = true;
            }
            self.spectators.published();
            let frontier = self.frontier();
            self.spectators
                .check_behind(now, &self.cfg, frontier, &mut self.events);
        }
        // Forget frames every client holds, but the newest of them (the next UPDATE's first
        // frame is delta-coded against it), and keep `retain` for late streams.
        let players = self.peers.iter().flatten().map(|p| p.stream.acked).min();
        let kept = self.kept.iter().map(|(_, f)| *f).min();
        let oldest = [players, self.spectators.oldest_acked(), kept]
            .into_iter()
            .flatten()
            .min();
        if let Some(oldest) = oldest {
            self.history.forget(oldest, self.retain);
        }
    }

    /// Queues this round's UPDATE for player `peer` (see [`build_round`]).
    fn build_round(&mut self, peer: PeerId, now: Instant) {
        let ctx = RoundCtx {
            frontier: self.frontier(),
            history: &self.history,
            advance: self.publisher.advance(&self.cfg, &self.peers, peer),
            session: self.cfg.session,
            players: self.cfg.players,
            frames: true,
        };
        if let Some(p) = self.peers[peer.index()].as_mut() {
            let next = p.input.next;
            build_round(
                &mut p.link,
                &mut p.stream,
                next,
                &ctx,
                now,
                &mut self.traffic,
            );
        }
    }

    /// Notices go to every player and spectator.
    fn notify_all(&mut self, n: Notice) {
        for p in self.peers.iter_mut().flatten() {
            p.stream.notify(n);
        }
        self.spectators.notify(n);
    }

    /// How long a player may be silent before it is dropped: longer while the game is
    /// paused, when one suspended with Ctrl-Z is stopped (see `pause`).
    fn silence_limit(&self) -> Duration {
        match self.pauses.active() {
            Some(_) => self.cfg.timeout.max(PAUSED_SILENCE),
            None => self.cfg.timeout,
        }
    }

    /// The pause in force: who paused, and the first frame not published.
    pub fn paused(&self) -> Option<(PeerId, Frame)> {
        self.pauses.active().map(|a| (a.by, a.at))
    }

    /// Acts on a player's pause request (see `pause`).
    fn pause_request(&mut self, now: Instant, from: PeerId, req: PauseRequest) {
        let peers = &self.peers;
        let present = |p: PeerId| peers.get(p.index()).is_some_and(Option::is_some);
        let played = peers[from.index()]
            .as_ref()
            .is_some_and(|p| !p.pending && p.input.received_any());
        match self.pauses.judge(now, from, req, present, played) {
            Verdict::Pause => {
                let frontier = self.frontier();
                if let Some(a) = self.pauses.pause(now, from, frontier) {
                    self.announce_pause(a.by, a.at);
                }
            }
            Verdict::Resume => {
                if let Some(a) = self.pauses.resume() {
                    tracing::info!("lockstep: {from} resumed at {}", a.at);
                    self.resumed(now, from, a);
                }
            }
            Verdict::Refuse(why) => {
                if let Some(p) = self.peers[from.index()].as_mut() {
                    p.stream.notify(Notice::PauseRefused { peer: from, why });
                }
            }
            Verdict::Ignore => {}
        }
    }

    /// The pause `a` ended at `now`, by `by`'s hand or (`by` its own player) by itself.
    fn resumed(&mut self, now: Instant, by: PeerId, a: Active) {
        // Nothing of the pause is the link's or a clock's: time sync and the optimistic
        // frame clock start again from here, and the gap in everyone's samples is no stop.
        let paused_for = now.saturating_duration_since(a.since);
        self.publisher.resumed(paused_for);
        for p in self.peers.iter_mut().flatten() {
            p.phase = Default::default();
        }
        self.notify_all(Notice::Resumed { peer: by, at: a.at });
    }

    fn announce_pause(&mut self, by: PeerId, at: Frame) {
        tracing::info!("lockstep: {by} paused at {at}");
        self.notify_all(Notice::Paused { peer: by, at });
    }
}

/// Why a datagram from a peer the server does not know was dropped.
pub(super) fn unknown_peer(datagram: &[u8]) -> Dropped {
    match Header::parse(datagram) {
        Ok((h, _)) => Dropped::UnknownPeer(h.kind),
        Err(e) => e.into(),
    }
}
