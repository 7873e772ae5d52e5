//! The lockstep server: collects every client's samples, places them on frames, publishes
//! frames once every player's input for them is known (strict) or on its own clock
//! (optimistic, see [`Mode`]), and sends UPDATEs.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;
use std::time::{Duration, Instant};

use crate::input::{Inputs, Pad, MAX_PLAYERS};
use crate::wire::{self, Header, Kind, Transmit, WireError};

use super::budget::SendBudget;
use super::frame::{seq_newer, Frame, PeerId};
use super::lead::LeadController;
use super::msg::{self, AckRefs, Echo, FrameRun, Head, Notice, NoticeName, PauseRequest, Update};
use super::pause::{
    across_silence, Pauses, Verdict, LINK_SILENCE, PAUSED_SILENCE, STOP_SETTLE, STOP_TAINT,
    STOP_TAINT_OWN,
};
use super::rtt::{LossMeter, RttEstimator, WindowQuantile};
use super::stats::{PeerStats, Placement, ServerStats, Traffic};
use super::timesync::{pace_for, Phase};
use super::{Config, LockstepError, Mode};

/// Samples a peer may have buffered beyond the frame being published; more are ignored.
const MAX_BUFFERED: usize = 8192;
/// Sent-datagram records kept per peer while unacknowledged.
const MAX_SENT_RECORDS: usize = 1024;
/// Frames whose checksums are kept for comparison.
const MAX_CHECKSUM_FRAMES: usize = 512;
/// Desync notices queued per peer at most (the first ones matter).
const MAX_DESYNC_NOTICES: usize = 8;
/// Published frames kept beyond what every client holds, in seconds of play: a late
/// joiner's or a spectator's start state is a player's machine at some frame a little
/// behind the frontier, and its stream starts there.
const RETAIN_SECS: f64 = 4.0;
/// A spectator further behind the frontier than this (in seconds of play) gets no more
/// frames; its driver sends it a fresh state instead ([`ServerEvent::SpectatorBehind`]).
pub const SPECTATOR_LAG_SECS: f64 = 2.0;
/// How long a spectator just (re)started has to load its state and acknowledge its first
/// frames before lag or silence count against it.
fn spectator_grace() -> Duration {
    Duration::from_secs_f64(2.0 * SPECTATOR_LAG_SECS)
}
/// A player who has not acknowledged anything of this server yet is dropped only after this
/// much silence: until the server's first UPDATE reaches it, a joiner that has the start
/// state speaks at the lobby's pace, once a second (`session::LOBBY_KEEPALIVE`), and its
/// first CTRLs may have reached the lobby before this server was there to hear them; on a
/// slow, lossy link two of those lost in a row are not a player gone. (One that says it is
/// still loading, see `Server::starting`, keeps the 2-s rule: its keepalives come faster.)
pub const UNCONTACTED_SILENCE: Duration = Duration::from_secs(5);
/// A spectator silent this long is dropped: nothing waits for it, so it may be away longer
/// than a player (a closed laptop lid, a Wi-Fi hiccup) and get a fresh state when it is
/// back, as one that fell behind does.
pub const SPECTATOR_TIMEOUT: Duration = Duration::from_secs(10);
/// A late joiner counts as caught up, and its input enters the game, once its newest
/// sample is within the lead plus this many keyframe intervals of the frontier; or after
/// `ACTIVATE_ANYWAY` of CTRLs.
const ACTIVATE_SLACK_K: u32 = 2;
const ACTIVATE_ANYWAY: Duration = Duration::from_secs(3);
/// After a player left, the input round trips the others report are ignored this long (the
/// window they are measured over, 4 s, and a margin): the frames that waited for the
/// departed player until its timeout made their samples' round trips that long, which is
/// no delay of their links. The lead follows the link round trips meanwhile. Trusted, those
/// reports held everyone's lead at a second for the next 4 s, and a player who rejoined
/// played with that delay.
const FORGET_STALL: Duration = Duration::from_secs(5);
/// Optimistic mode: arrival lateness samples kept per player (4 s at 60 fps), the quantile
/// its offset covers, and how many it takes before they replace the handshake's estimate.
const LATENESS_WINDOW: usize = 240;
const LATENESS_QUANTILE: f64 = 0.99;
const LATENESS_MIN_SAMPLES: usize = 60;
/// Optimistic mode: a sample counts as at most this many keyframe intervals later than the
/// newest one that came with it. The older samples of a burst (a link back after an outage)
/// were held up by the outage, not by the link's usual delay, and must not size the offset
/// for the seconds after it.
const LATENESS_SPREAD_K: u32 = 2;
/// Datagrams one UPDATE round may be split into when a peer lacks more frames than fit one
/// (8 players whose input changes every frame fill one with about 60 frames).
const MAX_SEGMENTS: usize = 4;

/// Why a peer left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaveReason {
    /// [`Server::remove_peer`] was called.
    Removed,
    /// Silent for longer than [`Config::timeout`].
    TimedOut,
}

/// What happened, for the driver to act on or log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerEvent {
    /// Nothing heard from `peer` for `silent_for` (>= `warn_after`); raised once per silence.
    PeerSilent {
        /// The player's slot.
        peer: PeerId,
        /// How long nothing has come.
        silent_for: Duration,
    },
    /// `peer`, added after the start ([`Server::add_late_peer`]), caught up: its input
    /// enters the game from `from_frame` on (every client is told).
    PeerJoined {
        /// The player's slot.
        peer: PeerId,
        /// The first frame its input counts.
        from_frame: Frame,
    },
    /// Spectator `id` was silent past the timeout and is out.
    SpectatorLeft {
        /// The spectator.
        id: u8,
    },
    /// Spectator `id` fell more than [`SPECTATOR_LAG_SECS`] behind the frontier: it gets no
    /// frames until [`Server::restart_spectator`] gives it a fresh start.
    SpectatorBehind {
        /// The spectator.
        id: u8,
        /// How far behind the frontier its acks are.
        frames: u32,
    },
    /// `peer` is out of the session; it gets neutral input from `from_frame` on.
    PeerLeft {
        /// The player's slot.
        peer: PeerId,
        /// The first frame of neutral input.
        from_frame: Frame,
        /// Why.
        reason: LeaveReason,
    },
    /// `peer`'s checksum of `frame` differs from the reference player's (slot 0, the host's
    /// player, or the lowest slot still in the session).
    Desync {
        /// The frame compared.
        frame: Frame,
        /// The player whose checksum differs.
        peer: PeerId,
        /// The reference checksum.
        expected: u64,
        /// The player's.
        got: u64,
    },
}

#[derive(Clone, Copy, Debug)]
struct SentUpdate {
    seq: u16,
    /// The ack it carried.
    ack: Option<u16>,
    frames_end: Frame,
    notices_end: u32,
    /// The lead it named, if any.
    lead: Option<u8>,
}

/// One client as the server sees it: its input stream and its link.
#[derive(Debug)]
struct Peer {
    id: PeerId,
    /// Received samples not yet placed on a frame: indices `next..next + samples.len()`.
    samples: VecDeque<Pad>,
    next: u32,
    /// Samples `used_base..next`, placed on frames already but kept: a CTRL's first sample
    /// is delta-coded against the one before it, and the client's oldest unacknowledged
    /// sample trails what we placed by up to a round trip.
    used: VecDeque<Pad>,
    used_base: u32,
    /// The input this player had on the newest published frame.
    last: Pad,
    /// A sample was dropped since the last published frame.
    dropped: bool,
    rtt: RttEstimator,
    /// The client's reported input round trip (see `lead`).
    input_rtt: Option<Duration>,
    /// Loss of its CTRLs, told to it so it sends redundantly.
    up_loss: LossMeter,
    phase: Phase,
    last_heard: Instant,
    warned: bool,
    /// Newest CTRL seq received (`None` until a valid CTRL came: the peer is not running
    /// yet, see `publish`), and its timestamp with its arrival (echoed back).
    recv_seq: Option<u16>,
    echo: Option<(u16, Instant)>,
    /// For writing our acks short and reading the other side's.
    acks: AckRefs,
    /// The advance last told to it.
    advance_sent: Option<i8>,
    send_seq: u16,
    sent: VecDeque<SentUpdate>,
    /// The client holds every frame before this one.
    acked: Frame,
    /// End of the frames sent to it so far: it holds at most these.
    sent_end: Frame,
    /// The lead named in the newest UPDATE it acknowledged (it knows that one).
    lead_acked: Option<u8>,
    notices: VecDeque<(u32, Notice)>,
    next_notice: u32,
    last_send: Option<Instant>,
    /// Something new to tell it (frames, notices): send without waiting for the timer.
    dirty: bool,
    /// Further segments of the current round, sent before anything else.
    queued: VecDeque<Vec<u8>>,
    budget: SendBudget,
    /// UDP/IP header bytes of a datagram on its link (see `Server::set_udp_ip_header`).
    header: usize,
    traffic: Traffic,
    /// The first frame of its stream (0, or where a late joiner's or spectator's start
    /// state is): the UPDATE that starts there carries its first frame in full.
    first: Frame,
    /// Added after the start and not caught up yet: neutral input, not waited for.
    pending: bool,
    /// When it was added (or restarted).
    added: Instant,
    /// A spectator too far behind: sent no frames until restarted.
    behind: bool,
    /// It acknowledged a datagram of ours: it hears us, and speaks at the game's pace.
    contact: bool,
    /// It said it is still loading (see `Server::starting`) and sent no CTRL since.
    loading: bool,
    /// A late joiner's name, for the notice that it plays.
    name: NoticeName,
    /// Optimistic mode: its own offset (sample to frame), sized by `lateness`.
    placement: LeadController,
    /// Optimistic mode: how late each of its samples arrived, in frames after the tick of
    /// the frame with its own index (as a duration at the nominal rate).
    lateness: WindowQuantile,
    placed: Placement,
    /// When its last silence of `pause::LINK_SILENCE` ended (see `pause`).
    silence_end: Option<Instant>,
    /// After a stop its samples say nothing of its clock's phase until then, and its input
    /// round trips nothing of the link (see `pause`).
    settle_until: Option<Instant>,
    taint_until: Option<Instant>,
}

impl Peer {
    /// A spectator is streamed frames until it has been silent `warn_after` (and through
    /// the grace after it was (re)started, while it loads its state).
    fn listening_until(&self, warn_after: Duration, grace: Duration) -> Instant {
        (self.last_heard + warn_after).max(self.added + grace)
    }

    fn new(
        cfg: &Config,
        id: PeerId,
        now: Instant,
        send_budget: u32,
        header: usize,
        first: Frame,
    ) -> Peer {
        Peer {
            id,
            samples: VecDeque::new(),
            next: first.0,
            used: VecDeque::new(),
            used_base: first.0,
            last: Pad::NEUTRAL,
            dropped: false,
            rtt: RttEstimator::default(),
            input_rtt: None,
            up_loss: LossMeter::default(),
            phase: Phase::default(),
            last_heard: now,
            warned: false,
            recv_seq: None,
            echo: None,
            acks: AckRefs::default(),
            advance_sent: None,
            send_seq: 0,
            sent: VecDeque::new(),
            acked: first,
            sent_end: first,
            lead_acked: None,
            notices: VecDeque::new(),
            next_notice: 0,
            last_send: None,
            dirty: true,
            queued: VecDeque::new(),
            budget: SendBudget::new(send_budget, header),
            header,
            traffic: Traffic::default(),
            silence_end: None,
            settle_until: None,
            taint_until: None,
            first,
            pending: false,
            added: now,
            behind: false,
            contact: false,
            loading: false,
            name: NoticeName::default(),
            placement: LeadController::new(cfg.min_lead, cfg.max_lead, cfg.frame_duration()),
            lateness: WindowQuantile::new(LATENESS_WINDOW),
            placed: Placement::default(),
        }
    }

    fn recv_end(&self) -> u32 {
        self.next + self.samples.len() as u32
    }

    /// Sample `i`, if still held.
    fn sample(&self, i: u32) -> Option<Pad> {
        match i.checked_sub(self.next) {
            Some(k) => self.samples.get(k as usize).copied(),
            None => self
                .used
                .get(i.checked_sub(self.used_base)? as usize)
                .copied(),
        }
    }

    /// Takes the next sample off the queue to place it on a frame (or drop it).
    fn take_sample(&mut self) -> Option<Pad> {
        let s = self.samples.pop_front()?;
        self.next += 1;
        self.used.push_back(s);
        // The client never asks for more than a buffer's worth back (see `MAX_BUFFERED`).
        if self.used.len() > MAX_BUFFERED {
            self.used.pop_front();
            self.used_base += 1;
        }
        Some(s)
    }

    fn notify(&mut self, n: Notice) {
        let desyncs = self
            .notices
            .iter()
            .filter(|(_, n)| matches!(n, Notice::Desync { .. }))
            .count();
        if matches!(n, Notice::Desync { .. }) && desyncs >= MAX_DESYNC_NOTICES {
            return;
        }
        self.notices.push_back((self.next_notice, n));
        self.next_notice += 1;
        self.dirty = true;
    }

    /// A valid CTRL with `head` arrived: the peer is heard; if it is the newest datagram,
    /// its sequence number (loss), timestamp, echo (RTT) and ack count. True if newest.
    /// How long this player may be silent before it is dropped: `base`, or
    /// `UNCONTACTED_SILENCE` while it has not heard us yet (unless it says it is loading).
    fn silence_limit(&self, base: Duration) -> Duration {
        if !self.contact && !self.loading {
            base.max(UNCONTACTED_SILENCE)
        } else {
            base
        }
    }

    fn heard(&mut self, now: Instant, head: &Head, epoch: Instant) -> bool {
        // The first datagram ends no silence: before it the client was not running yet.
        let gap = now.saturating_duration_since(self.last_heard) >= LINK_SILENCE;
        if gap && self.recv_seq.is_some() {
            self.silence_end = Some(now);
        }
        self.last_heard = now;
        self.warned = false;
        self.loading = false;
        let newest = self.recv_seq.is_none_or(|r| seq_newer(head.seq, r));
        if !newest {
            return false;
        }
        if let Some(prev) = self.recv_seq {
            self.up_loss.arrived(head.seq.wrapping_sub(prev));
        }
        self.recv_seq = Some(head.seq);
        if let Some(ts) = head.ts {
            self.echo = Some((ts, now));
        }
        // Only the newest datagram gives an RTT sample: a late duplicate would inflate it.
        if let Some(e) = head.echo {
            if let Some(rtt) = rtt_sample(epoch, now, e, self.silence_end) {
                self.rtt.update(rtt);
            }
        }
        // Only the newest datagram's ack (see `Client::handle_datagram`).
        if let Some(ack) = head.ack {
            self.contact = true;
            self.handle_ack(ack);
        }
        true
    }

    fn handle_ack(&mut self, ack: u16) {
        self.acks.received(ack);
        while let Some(rec) = self.sent.front().copied() {
            if rec.seq == ack {
                self.acks.acknowledged(rec.ack);
                self.acked = self.acked.max(rec.frames_end);
                if rec.lead.is_some() {
                    self.lead_acked = rec.lead;
                }
                while self
                    .notices
                    .front()
                    .is_some_and(|(id, _)| *id < rec.notices_end)
                {
                    self.notices.pop_front();
                }
                self.sent.pop_front();
                return;
            }
            if !seq_newer(ack, rec.seq) {
                return; // an old ack
            }
            self.sent.pop_front();
        }
    }
}

/// Checksums per frame and player, compared against the reference player's, or (with no
/// host's machine to trust, on a dedicated server) with each other.
#[derive(Debug, Default)]
struct Checksums {
    frames: BTreeMap<u32, [Option<u64>; MAX_PLAYERS]>,
    /// Majority mode: frames already judged.
    decided: BTreeSet<u32>,
}

impl Checksums {
    /// Stores `peer`'s checksum of `frame`; `None` if it was there already or the frame is
    /// older than every one kept.
    fn store(
        &mut self,
        frame: Frame,
        peer: PeerId,
        value: u64,
    ) -> Option<&[Option<u64>; MAX_PLAYERS]> {
        if !self.frames.contains_key(&frame.0) && self.frames.len() >= MAX_CHECKSUM_FRAMES {
            // Keep the newest frames; a frame older than all kept ones is not worth it.
            match self.frames.keys().next() {
                Some(&oldest) if oldest < frame.0 => {
                    self.frames.remove(&oldest);
                    self.decided.remove(&oldest);
                }
                _ => return None,
            }
        }
        let entry = self.frames.entry(frame.0).or_default();
        if entry[peer.index()].is_some() {
            return None;
        }
        entry[peer.index()] = Some(value);
        Some(entry)
    }

    /// Stores `peer`'s checksum; returns the `(peer, expected, got)` mismatches it reveals
    /// against the reference player's.
    fn insert(
        &mut self,
        frame: Frame,
        peer: PeerId,
        value: u64,
        reference: PeerId,
    ) -> Vec<(PeerId, u64, u64)> {
        let Some(entry) = self.store(frame, peer, value) else {
            return Vec::new();
        };
        let Some(expected) = entry[reference.index()] else {
            return Vec::new();
        };
        if peer == reference {
            (0..MAX_PLAYERS)
                .filter(|&p| p != reference.index())
                .filter_map(|p| entry[p].map(|got| (PeerId(p as u8), got)))
                .filter(|&(_, got)| got != expected)
                .map(|(p, got)| (p, expected, got))
                .collect()
        } else if value != expected {
            vec![(peer, expected, value)]
        } else {
            Vec::new()
        }
    }

    /// Stores `peer`'s checksum; once every player in `present` reported `frame`, the value
    /// most of them have is the truth (on a tie, the lowest present slot's: player 1's while
    /// it plays), and the players that differ from it are returned.
    fn insert_majority(
        &mut self,
        frame: Frame,
        peer: PeerId,
        value: u64,
        present: &[PeerId],
    ) -> Vec<(PeerId, u64, u64)> {
        let Some(entry) = self.store(frame, peer, value) else {
            return Vec::new();
        };
        let values: Vec<(PeerId, u64)> = present
            .iter()
            .filter_map(|p| entry[p.index()].map(|v| (*p, v)))
            .collect();
        if values.len() < present.len() || present.is_empty() {
            return Vec::new();
        }
        if !self.decided.insert(frame.0) {
            return Vec::new();
        }
        let count = |v: u64| values.iter().filter(|(_, x)| *x == v).count();
        let most = values.iter().map(|(_, v)| count(*v)).max().unwrap_or(0);
        let leaders: Vec<u64> = values
            .iter()
            .filter(|(_, v)| count(*v) == most)
            .map(|(_, v)| *v)
            .collect();
        // A strict majority, or on a tie the lowest slot's (`present` is in slot order).
        let truth = if most * 2 > values.len() || leaders.iter().all(|v| *v == leaders[0]) {
            leaders[0]
        } else {
            values[0].1
        };
        values
            .into_iter()
            .filter(|(_, v)| *v != truth)
            .map(|(p, v)| (p, truth, v))
            .collect()
    }

    /// The lowest slot, other than `except`, whose checksum of `frame` was `value`.
    fn holder(&self, frame: Frame, value: u64, except: PeerId) -> Option<PeerId> {
        let entry = self.frames.get(&frame.0)?;
        (0..MAX_PLAYERS)
            .filter(|&p| p != except.index())
            .find(|&p| entry[p] == Some(value))
            .map(|p| PeerId(p as u8))
    }
}

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
    peers: [Option<Peer>; MAX_PLAYERS],
    /// Published frames `hist_base..frontier` that some client still lacks, and the one
    /// before them (the base their delta coding starts from).
    history: VecDeque<Inputs>,
    hist_base: Frame,
    lead: LeadController,
    /// A sample has been placed on a frame: no more joins.
    started: bool,
    checksums: Checksums,
    /// Checksums are compared with each other, not with a reference player's (see
    /// [`Server::set_majority_checksums`]).
    majority: bool,
    events: VecDeque<ServerEvent>,
    traffic: Traffic,
    /// Where `poll_transmit` looks first, so no peer starves.
    next_peer: usize,
    /// Watchers by id: they get every published frame and send nothing but acks. Nothing
    /// of the players' waits for them (see [`Server::add_spectator`]).
    spectators: BTreeMap<u8, Peer>,
    /// Where `poll_spectator_transmit` looks first.
    next_spectator: u8,
    /// Published frames kept at least (see `RETAIN_SECS`).
    retain: usize,
    /// Input round-trip reports are ignored until then (see `FORGET_STALL`).
    ignore_input_rtt_until: Option<Instant>,
    /// Optimistic mode: when frame 0 was published; frame `f` is published at
    /// `clock + f` frame durations.
    clock: Option<Instant>,
    /// Placement counts of players who left, by slot (their stats outlive them).
    departed: [Option<Placement>; MAX_PLAYERS],
    pauses: Pauses,
    /// Input round-trip reports are not taken until then: a player stopped (see `pause`).
    stop_taint_until: Option<Instant>,
}

impl Server {
    /// A server with no players yet (add them with `add_peer`). Fails if `cfg` is invalid.
    pub fn new(now: Instant, cfg: Config) -> Result<Server, LockstepError> {
        cfg.validate()?;
        let lead = LeadController::new(cfg.min_lead, cfg.max_lead, cfg.frame_duration());
        Ok(Server {
            epoch: now,
            peers: Default::default(),
            history: VecDeque::new(),
            hist_base: Frame::ZERO,
            lead,
            started: false,
            checksums: Checksums::default(),
            majority: false,
            events: VecDeque::new(),
            traffic: Traffic::default(),
            next_peer: 0,
            spectators: BTreeMap::new(),
            next_spectator: 0,
            retain: (RETAIN_SECS * cfg.fps).ceil() as usize,
            ignore_input_rtt_until: None,
            clock: None,
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
        if self.started || self.hist_base > Frame::ZERO {
            return Err(LockstepError::Started);
        }
        // An UPDATE carries every player's input: the budget is for two players, more get
        // proportionally more.
        self.peers[peer.index()] = Some(self.new_peer(peer, now, Frame::ZERO));
        self.publish(now);
        Ok(())
    }

    fn new_peer(&self, peer: PeerId, now: Instant, first: Frame) -> Peer {
        // An UPDATE carries every player's input: the budget is for two players, more get
        // proportionally more.
        let budget = self.cfg.send_budget * u32::from(self.cfg.players.max(2)) / 2;
        Peer::new(&self.cfg, peer, now, budget, self.cfg.udp_ip_header, first)
    }

    /// Checks that a stream can start at `start`: a frame published and still kept.
    fn check_start(&self, start: Frame) -> Result<(), LockstepError> {
        if start < self.hist_base || start > self.frontier() {
            return Err(LockstepError::StartOutOfRange {
                start,
                oldest: self.hist_base,
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
        if !self.started && self.hist_base == Frame::ZERO && self.history.is_empty() {
            return self.add_peer(now, peer);
        }
        if peer.0 >= self.cfg.players {
            return Err(LockstepError::NoSuchSlot(peer));
        }
        if self.peers[peer.index()].is_some() {
            return Err(LockstepError::AlreadyPresent(peer));
        }
        self.check_start(start)?;
        let mut p = self.new_peer(peer, now, start);
        p.pending = true;
        p.name = NoticeName::new(name);
        self.peers[peer.index()] = Some(p);
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
        id: u8,
        start: Frame,
        header: usize,
    ) -> Result<(), LockstepError> {
        if self.spectators.contains_key(&id) {
            return Err(LockstepError::SpectatorPresent(id));
        }
        self.check_start(start)?;
        let mut p = Peer::new(
            &self.cfg,
            PeerId(0),
            now,
            self.cfg.send_budget,
            header,
            start,
        );
        p.dirty = true;
        self.spectators.insert(id, p);
        Ok(())
    }

    /// Starts spectator `id`'s stream again at `start` (a fresh state after it fell behind).
    pub fn restart_spectator(
        &mut self,
        now: Instant,
        id: u8,
        start: Frame,
    ) -> Result<(), LockstepError> {
        self.check_start(start)?;
        let p = self
            .spectators
            .get_mut(&id)
            .ok_or(LockstepError::NoSpectator(id))?;
        p.acked = start;
        p.sent_end = start;
        p.first = start;
        p.behind = false;
        p.added = now;
        p.lead_acked = None;
        p.queued.clear();
        p.dirty = true;
        Ok(())
    }

    /// Drops spectator `id`; false if there was none.
    pub fn remove_spectator(&mut self, id: u8) -> bool {
        self.spectators.remove(&id).is_some()
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

    /// Spectator `id`'s link: (round trip, frames it holds all before, traffic).
    pub fn spectator(&self, id: u8) -> Option<(Option<Duration>, Frame, Traffic)> {
        self.spectators
            .get(&id)
            .map(|p| (p.rtt.srtt(), p.acked, p.traffic))
    }

    /// The oldest frame a late stream can start at (see `RETAIN_SECS`).
    pub fn oldest_frame(&self) -> Frame {
        self.hist_base
    }

    /// Feeds a datagram from spectator `id`: a CTRL with acks (and the link's timestamps)
    /// only. Anything else is dropped and counted.
    pub fn handle_spectator_datagram(&mut self, now: Instant, id: u8, datagram: &[u8]) {
        let Some(p) = self.spectators.get_mut(&id) else {
            self.traffic.packets_dropped_invalid += 1;
            return;
        };
        self.traffic.received(datagram.len(), p.header);
        p.traffic.received(datagram.len(), p.header);
        let ctrl = match Header::parse(datagram) {
            Ok((h, body)) if h.kind == Kind::Ctrl => {
                let ack_ref = p.acks.reference(p.send_seq);
                msg::decode_ctrl(
                    body,
                    wire::is_short(datagram),
                    p.recv_end(),
                    ack_ref,
                    |_| None,
                )
            }
            Ok((h, _)) => Err(WireError::Malformed(h.kind)),
            Err(e) => Err(e),
        };
        let ctrl = match ctrl {
            Ok(c)
                if c.samples.is_none()
                    && c.head
                        .plausible(p.recv_seq, p.send_seq, p.last_send.is_some()) =>
            {
                c
            }
            _ => {
                self.traffic.packets_dropped_invalid += 1;
                p.traffic.packets_dropped_invalid += 1;
                return;
            }
        };
        p.heard(now, &ctrl.head, self.epoch);
    }

    /// Datagrams to spectators, one at a time, with the spectator's id. Call until `None`,
    /// after the players' [`poll_transmit`](Self::poll_transmit).
    pub fn poll_spectator_transmit(&mut self, now: Instant) -> Option<Transmit<u8>> {
        let resend = self.cfg.resend_interval();
        let batch = self.spectator_batch();
        let frontier = self.frontier();
        let (warn_after, grace) = (self.cfg.warn_after, spectator_grace());
        let ids: Vec<u8> = self
            .spectators
            .range((Bound::Included(self.next_spectator), Bound::Unbounded))
            .chain(self.spectators.range(..self.next_spectator))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            let p = self.spectators.get_mut(&id)?;
            if let Some(bytes) = p.queued.pop_front() {
                return Some(Transmit { to: id, bytes });
            }
            // A silent one (a closed lid) is sent acks only, at the resend interval: back
            // within `SPECTATOR_LAG_SECS` it is streamed from its ack, later it gets a fresh
            // state, rather than a socket buffer full of stale frames.
            let listening = now < p.listening_until(warn_after, grace);
            // Its frames wait until it is heard again, and so does the batch timer.
            p.dirty &= listening;
            let due = p
                .last_send
                .is_none_or(|t| now >= t + resend || (p.dirty && listening && now >= t + batch));
            if due && p.budget.allows(now) {
                self.next_spectator = id.wrapping_add(1);
                let ctx = RoundCtx {
                    epoch: self.epoch,
                    frontier,
                    hist_base: self.hist_base,
                    history: &self.history,
                    advance: 0.0,
                    session: self.cfg.session,
                    players: self.cfg.players,
                    frames: !p.behind && listening,
                };
                build_round(p, &ctx, now, &mut self.traffic);
                return p.queued.pop_front().map(|bytes| Transmit { to: id, bytes });
            }
        }
        None
    }

    /// Sets the send budget toward `peer` (bytes per second, UDP/IP headers included; 0 = no
    /// limit). The host's own client lives in the same process: no wire, so no budget.
    pub fn set_send_budget(
        &mut self,
        peer: PeerId,
        bytes_per_sec: u32,
    ) -> Result<(), LockstepError> {
        let p = self.peer_mut(peer)?;
        p.budget = SendBudget::new(bytes_per_sec, p.header);
        Ok(())
    }

    /// Sets the UDP/IP header bytes each datagram to or from `peer` costs on its link (48
    /// over IPv6 where the config says 28; 0 in memory), for its send budget and traffic.
    pub fn set_udp_ip_header(&mut self, peer: PeerId, header: usize) -> Result<(), LockstepError> {
        let p = self.peer_mut(peer)?;
        p.header = header;
        p.budget.set_header(header);
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
        if p.rtt.srtt().is_none() {
            p.rtt.update(rtt);
        }
        self.publish(now);
        Ok(())
    }

    /// Judges desyncs by majority: once every player reported a frame's checksum, those that
    /// differ from most of the others (on a tie, from the lowest slot) are out of sync. For a
    /// server with no machine of its own; by default the reference is player 1's (or the
    /// lowest slot still in the session).
    pub fn set_majority_checksums(&mut self, on: bool) {
        self.majority = on;
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
        self.drop_peer(peer, now, LeaveReason::Removed);
        Ok(())
    }

    /// `peer` has sent no CTRL yet but says it is on its way (it loads its content, unserializes
    /// the start state, opens its window; the session layer's `Loading`): it counts as heard,
    /// so the silence timeout drops it only once that stops. Frame 0 waits for it as for any
    /// player not running yet. Ignored once its first CTRL came: from then on only CTRLs keep
    /// a player in. False if ignored (or no such peer).
    pub fn starting(&mut self, now: Instant, peer: PeerId) -> bool {
        match self.peers.get_mut(peer.index()).and_then(Option::as_mut) {
            Some(p) if p.recv_seq.is_none() => {
                p.last_heard = p.last_heard.max(now);
                p.loading = true;
                p.warned = false;
                true
            }
            _ => false,
        }
    }

    /// `peer` runs: its first CTRL has come.
    pub fn is_running(&self, peer: PeerId) -> bool {
        self.peer(peer).is_some_and(|p| p.recv_seq.is_some())
    }

    /// Feeds a datagram that arrived from `from`. Malformed ones, other sessions or kinds, and
    /// unknown peers are dropped and counted.
    pub fn handle_datagram(&mut self, now: Instant, from: PeerId, datagram: &[u8]) {
        let frontier = self.frontier();
        let Some(peer) = self.peers.get_mut(from.index()).and_then(|p| p.as_mut()) else {
            self.traffic
                .received(datagram.len(), self.cfg.udp_ip_header);
            self.traffic.packets_dropped_invalid += 1;
            return;
        };
        self.traffic.received(datagram.len(), peer.header);
        peer.traffic.received(datagram.len(), peer.header);
        let ctrl = match Header::parse(datagram) {
            Ok((h, body)) if h.kind == Kind::Ctrl => {
                let ack_ref = peer.acks.reference(peer.send_seq);
                msg::decode_ctrl(
                    body,
                    wire::is_short(datagram),
                    peer.recv_end(),
                    ack_ref,
                    |i| peer.sample(i),
                )
            }
            Ok((h, _)) => {
                tracing::debug!("{from}: dropped a {:?} datagram", h.kind);
                self.traffic.packets_dropped_invalid += 1;
                peer.traffic.packets_dropped_invalid += 1;
                return;
            }
            Err(e) => Err(e),
        };
        // A run must continue the samples we hold and fit the buffer; otherwise acking
        // this datagram would make the client forget samples we never stored. Its head must
        // be one the client can have sent, and its checksums of frames it can have run
        // (published ones): a checksum of a frame to come would be a desync when it comes.
        let ctrl = ctrl.and_then(|c| {
            let fits = c.samples.as_ref().is_none_or(|run| {
                let end = peer.recv_end();
                let new = (run.first + run.pads.len() as u32).saturating_sub(end) as usize;
                run.first <= end && peer.samples.len() + new <= MAX_BUFFERED
            });
            let plausible =
                c.head
                    .plausible(peer.recv_seq, peer.send_seq, peer.last_send.is_some())
                    && c.checksums.iter().all(|(f, _)| *f < frontier);
            if fits && plausible {
                Ok(c)
            } else {
                Err(WireError::Malformed(Kind::Ctrl))
            }
        });
        let ctrl = match ctrl {
            Ok(c) => c,
            Err(WireError::MissingBase(_, i)) if i < peer.used_base => {
                // Coded against a sample we let go of after a newer CTRL: this one is late
                // and carries nothing new.
                tracing::trace!("{from}: dropped a late CTRL");
                return;
            }
            Err(e) => {
                tracing::debug!("{from}: dropped datagram: {e}");
                self.traffic.packets_dropped_invalid += 1;
                peer.traffic.packets_dropped_invalid += 1;
                return;
            }
        };
        let newest = peer.heard(now, &ctrl.head, self.epoch);
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
            let skip = (peer.recv_end() - run.first) as usize;
            peer.samples.extend(run.pads.iter().skip(skip).copied());
            // The client holds everything before `first` acknowledged: later CTRLs start
            // there or later, so older samples are no base any more.
            while peer.used_base + 1 < run.first && peer.used.pop_front().is_some() {
                peer.used_base += 1;
            }
            if let (Some(clock), false) = (self.clock, peer.pending) {
                record_lateness(
                    peer,
                    &self.cfg,
                    clock,
                    now,
                    run.first + skip as u32,
                    run.first + run.pads.len() as u32,
                );
            }
            let settling = peer.settle_until.is_some_and(|t| now < t);
            if let Some(age_ms) = run.age_ms.filter(|_| !settling) {
                // When the client pushed its newest sample, on our clock (see `timesync`).
                let one_way = peer.rtt.srtt().unwrap_or_default() / 2;
                let pushed = now.saturating_duration_since(self.epoch).as_secs_f64()
                    - one_way.as_secs_f64()
                    - f64::from(age_ms) / 1000.0;
                let newest = run.first + run.pads.len() as u32 - 1;
                peer.phase
                    .observe(newest, pushed, self.cfg.frame_duration().as_secs_f64());
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
    }

    /// A late joiner whose newest sample is about where a caught-up player's would be (or
    /// that has sent for `ACTIVATE_ANYWAY`) plays from the frontier on: the samples it
    /// pushed while it caught up are dropped but the newest, which goes on the frontier.
    fn maybe_activate(&mut self, now: Instant, peer: PeerId) {
        let frontier = self.frontier();
        let slack = ACTIVATE_SLACK_K * self.cfg.keyframe_interval;
        let optimistic = self.cfg.mode == Mode::Optimistic;
        let global = self.lead.lead();
        let Some(p) = self.peers[peer.index()].as_mut().filter(|p| p.pending) else {
            return;
        };
        let lead = if optimistic {
            p.placement.lead()
        } else {
            global
        };
        let Some(newest) = p.recv_end().checked_sub(1).filter(|n| *n >= p.next) else {
            return;
        };
        let caught_up = newest + lead + slack >= frontier.0;
        if !caught_up && now < p.added + ACTIVATE_ANYWAY {
            return;
        }
        while p.samples.len() > 1 {
            p.take_sample();
        }
        p.pending = false;
        p.last = Pad::NEUTRAL;
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

    /// Datagrams to send, one at a time, with the peer each goes to. Call until `None`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<PeerId>> {
        let resend = self.cfg.resend_interval();
        for i in 0..MAX_PLAYERS {
            let idx = (self.next_peer + i) % MAX_PLAYERS;
            let Some(p) = self.peers[idx].as_mut() else {
                continue;
            };
            if let Some(bytes) = p.queued.pop_front() {
                return Some(Transmit { to: p.id, bytes });
            }
            let batch = batch_for(&self.cfg, p);
            let dirty = p.dirty && p.last_send.is_none_or(|t| now >= t + batch);
            if (dirty || p.last_send.is_none_or(|t| now >= t + resend)) && p.budget.allows(now) {
                self.next_peer = (idx + 1) % MAX_PLAYERS;
                self.build_round(idx, now);
                let p = self.peers[idx].as_mut()?;
                return p
                    .queued
                    .pop_front()
                    .map(|bytes| Transmit { to: p.id, bytes });
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
        self.peers
            .iter()
            .flatten()
            .flat_map(|p| {
                let send = if !p.queued.is_empty() {
                    Some(p.last_send.unwrap_or(p.last_heard))
                } else if p.dirty {
                    let at = p
                        .last_send
                        .map_or(p.last_heard, |t| t + batch_for(&self.cfg, p));
                    Some(p.budget.ready_at(at))
                } else {
                    p.last_send.map(|t| p.budget.ready_at(t + resend))
                };
                let warn = (!p.warned).then(|| p.last_heard + self.cfg.warn_after);
                [
                    send,
                    warn,
                    Some(p.last_heard + p.silence_limit(self.silence_limit())),
                ]
            })
            .chain(self.spectators.values().flat_map(|p| {
                let send = if !p.queued.is_empty() {
                    Some(p.last_send.unwrap_or(p.last_heard))
                } else if p.dirty {
                    let at = p
                        .last_send
                        .map_or(p.last_heard, |t| t + self.spectator_batch());
                    let until = p.listening_until(self.cfg.warn_after, spectator_grace());
                    let at = match p.last_send {
                        Some(t) if at >= until => t + resend,
                        _ => at,
                    };
                    Some(p.budget.ready_at(at))
                } else {
                    p.last_send.map(|t| p.budget.ready_at(t + resend))
                };
                [
                    send,
                    Some(p.last_heard + self.cfg.timeout.max(SPECTATOR_TIMEOUT)),
                ]
            }))
            .chain(self.next_tick())
            .flatten()
            .min()
    }

    /// Optimistic mode: when the next frame is due.
    fn next_tick(&self) -> Option<Option<Instant>> {
        let clock = self.clock?;
        if self.peers.iter().all(Option::is_none) || self.pauses.active().is_some() {
            return None;
        }
        Some(Some(clock + self.tick_offset(self.frontier())))
    }

    /// Optimistic mode: time from frame 0's publication to `frame`'s.
    fn tick_offset(&self, frame: Frame) -> Duration {
        Duration::from_secs_f64(f64::from(frame.0) / self.cfg.fps)
    }

    /// Raises silence warnings, drops peers past the timeout, and lets the lead step down.
    pub fn handle_timeout(&mut self, now: Instant) {
        let base = self.silence_limit();
        for idx in 0..MAX_PLAYERS {
            let Some(p) = self.peers[idx].as_mut() else {
                continue;
            };
            let silent = now.saturating_duration_since(p.last_heard);
            if silent >= p.silence_limit(base) {
                tracing::info!("{}: silent for {} ms, dropped", p.id, silent.as_millis());
                let id = p.id;
                self.drop_peer(id, now, LeaveReason::TimedOut);
            } else if silent >= self.cfg.warn_after && !p.warned {
                p.warned = true;
                self.events.push_back(ServerEvent::PeerSilent {
                    peer: p.id,
                    silent_for: silent,
                });
            }
        }
        let timeout = self.cfg.timeout.max(SPECTATOR_TIMEOUT);
        let gone: Vec<u8> = self
            .spectators
            .iter()
            .filter(|(_, p)| now.saturating_duration_since(p.last_heard) >= timeout)
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            tracing::info!("spectator {id}: silent, dropped");
            self.spectators.remove(&id);
            self.events.push_back(ServerEvent::SpectatorLeft { id });
        }
        self.publish(now);
    }

    /// The current lead target in frames (each player's own offset converges to it).
    pub fn lead(&self) -> u32 {
        self.lead.lead()
    }

    /// The next keyframe: every frame before it is published.
    pub fn frontier(&self) -> Frame {
        self.hist_base.plus(self.history.len() as u32)
    }

    /// The frames `peer` has acknowledged: it holds every frame before this one.
    pub fn delivered(&self, peer: PeerId) -> Option<Frame> {
        self.peer(peer).map(|p| p.acked)
    }

    /// The newest sequence number received from `peer`.
    #[cfg(test)]
    pub(crate) fn newest_seq_from(&self, peer: PeerId) -> Option<u16> {
        self.peer(peer).and_then(|p| p.recv_seq)
    }

    /// Smoothed RTT to `peer`.
    pub fn rtt(&self, peer: PeerId) -> Option<Duration> {
        self.peer(peer).and_then(|p| p.rtt.srtt())
    }

    /// Players currently in the session.
    pub fn peers(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.peers.iter().flatten().map(|p| p.id)
    }

    /// The server's numbers as of now.
    pub fn stats(&self) -> ServerStats {
        let advances = self.advances();
        ServerStats {
            lead: self.lead.lead(),
            keyframe_interval: self.cfg.keyframe_interval,
            frontier: self.frontier(),
            traffic: self.traffic,
            peers: self
                .peers
                .iter()
                .flatten()
                .map(|p| PeerStats {
                    peer: p.id,
                    rtt: p.rtt.srtt(),
                    rtt_var: p.rtt.rttvar(),
                    input_rtt: p.input_rtt,
                    lead: self.frontier().0.saturating_sub(p.next),
                    advance_frames: advances[p.id.index()],
                    buffered_samples: p.samples.len(),
                    traffic: p.traffic,
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

    fn peer(&self, peer: PeerId) -> Option<&Peer> {
        self.peers.get(peer.index()).and_then(|p| p.as_ref())
    }

    fn peer_mut(&mut self, peer: PeerId) -> Result<&mut Peer, LockstepError> {
        self.peers
            .get_mut(peer.index())
            .and_then(Option::as_mut)
            .ok_or(LockstepError::NotPresent(peer))
    }

    fn drop_peer(&mut self, peer: PeerId, now: Instant, reason: LeaveReason) {
        let Some(gone) = self.peers[peer.index()].take() else {
            return;
        };
        self.departed[peer.index()]
            .get_or_insert_with(Placement::default)
            .merge(&gone.placed);
        // The others waited for it if it had gone silent (see `FORGET_STALL`).
        let waited_for = reason == LeaveReason::TimedOut || (gone.warned && !gone.pending);
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
        let Some(reference) = self.peers().next() else {
            return;
        };
        let mismatches = if self.majority {
            let present: Vec<PeerId> = self.peers().collect();
            self.checksums.insert_majority(frame, from, value, &present)
        } else {
            self.checksums.insert(frame, from, value, reference)
        };
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

    /// Each peer's phase advance in frames (> 0: ahead of the mean of the players in the
    /// game; a late joiner still catching up is measured against them, not counted in
    /// their mean); 0 when unknown.
    fn advances(&self) -> [f64; MAX_PLAYERS] {
        let mut out = [0.0; MAX_PLAYERS];
        let origins: Vec<(usize, f64, bool)> = self
            .peers
            .iter()
            .flatten()
            .filter_map(|p| p.phase.origin().map(|o| (p.id.index(), o, p.pending)))
            .collect();
        let playing: Vec<f64> = origins
            .iter()
            .filter(|(_, _, pending)| !pending)
            .map(|(_, o, _)| *o)
            .collect();
        if origins.len() < 2 || playing.is_empty() {
            return out;
        }
        let mean = playing.iter().sum::<f64>() / playing.len() as f64;
        let frame = self.cfg.frame_duration().as_secs_f64();
        for (i, o, _) in origins {
            out[i] = (mean - o) / frame;
        }
        out
    }

    /// Publishes what can be: every frame whose inputs are all known (strict), or every
    /// frame whose time has come (optimistic); then marks the streams to send and forgets
    /// the history nobody needs.
    fn publish(&mut self, now: Instant) {
        let published = match self.cfg.mode {
            Mode::Strict => self.publish_strict(now),
            Mode::Optimistic => self.publish_optimistic(now),
        };
        if published {
            for p in self.peers.iter_mut().flatten() {
                p.dirty = true;
            }
            for p in self.spectators.values_mut() {
                p.dirty = true;
            }
            self.check_spectators(now);
        }
        // Forget frames every client holds, but the newest of them (the next UPDATE's first
        // frame is delta-coded against it), and keep `retain` for late streams.
        let oldest = self
            .peers
            .iter()
            .flatten()
            .chain(self.spectators.values().filter(|p| !p.behind))
            .map(|p| p.acked)
            .min();
        if let Some(oldest) = oldest {
            while self.hist_base.next() < oldest && self.history.len() > self.retain {
                self.history.pop_front();
                self.hist_base = self.hist_base.next();
            }
        }
    }

    /// Frame 0 waits for every player's first CTRL: each is running then (state loaded,
    /// window open). Started at once, a peer that took longer to get there (a window opening
    /// after the lobby) ran behind the others by that much, and (strict) they waited for its
    /// inputs at every keyframe until time sync (2%) had caught it up.
    fn everyone_running(&self) -> bool {
        self.frontier() > Frame::ZERO || self.peers.iter().flatten().all(|p| p.recv_seq.is_some())
    }

    /// Optimistic mode: moves each player's offset toward what its samples' lateness needs,
    /// then publishes every frame whose tick has come, each player's next sample on it
    /// (see [`Mode::Optimistic`]). True if any was published.
    fn publish_optimistic(&mut self, now: Instant) -> bool {
        let batching = self
            .cfg
            .frame_duration()
            .mul_f64(f64::from(self.cfg.keyframe_interval - 1));
        let frontier = self.frontier();
        for p in self.peers.iter_mut().flatten().filter(|p| !p.pending) {
            let measured = p.lateness.len() >= LATENESS_MIN_SAMPLES;
            let need = if measured {
                p.lateness.quantile(LATENESS_QUANTILE)
            } else {
                p.rtt.conservative().map(|r| r + batching)
            };
            let before = p.placement.lead();
            let lead = p.placement.update(now, need, measured);
            if lead != before {
                tracing::debug!(
                    "lockstep: {} offset {before} -> {lead} frames at {frontier} ({})",
                    p.id,
                    if measured { "measured" } else { "estimated" }
                );
            }
        }
        if self.peers.iter().all(|p| p.is_none()) || !self.everyone_running() {
            return false;
        }
        let mut published = false;
        while self.pauses.active().is_none()
            && *self.clock.get_or_insert(now) + self.tick_offset(self.frontier()) <= now
        {
            let frame = self.frontier().0;
            let mut inputs = [Pad::NEUTRAL; MAX_PLAYERS];
            for p in self.peers.iter_mut().flatten().filter(|p| !p.pending) {
                let target = p.placement.lead();
                let mut offset = frame.saturating_sub(p.next);
                // Below its offset the player's input is repeated (the offset grows).
                if offset >= target {
                    // A backlog drains by merging samples equal to the input before them;
                    // a change is never merged away, so a tap keeps its frame.
                    while offset > target && p.samples.front() == Some(&p.last) {
                        p.take_sample();
                        p.placed.merged += 1;
                        offset -= 1;
                    }
                    // Nothing buffered: the player keeps its last input, and its next
                    // sample goes on the first frame after it arrives.
                    if let Some(s) = p.take_sample() {
                        p.last = s;
                        self.started = true;
                        if offset > target {
                            p.placed.late += 1;
                            p.placed.late_frames.record(offset - target);
                        }
                    }
                }
                inputs[p.id.index()] = p.last;
            }
            self.history.push_back(inputs);
            published = true;
            self.after_published(now);
        }
        published
    }

    /// Strict mode: updates the lead and publishes every frame whose inputs are all known.
    /// True if any was published.
    fn publish_strict(&mut self, now: Instant) -> bool {
        let batching = self
            .cfg
            .frame_duration()
            .mul_f64(f64::from(self.cfg.keyframe_interval - 1));
        let advances = self.advances();
        let worst = self
            .peers
            .iter()
            .flatten()
            .filter(|p| !p.pending)
            .filter_map(|p| {
                let rtt = p.input_rtt.or(p.rtt.conservative().map(|r| r + batching))?;
                // A client that time sync speeds up (it runs behind) reaches its keyframe
                // that much sooner; one at its nominal rate or slowed down does not.
                Some(rtt.mul_f64(pace_for(advances[p.id.index()]).max(1.0)))
            })
            .max();
        let mut peers = self
            .peers
            .iter()
            .flatten()
            .filter(|p| !p.pending)
            .peekable();
        let measured = peers.peek().is_some() && peers.all(|p| p.input_rtt.is_some());
        let before = self.lead.lead();
        let lead = self.lead.update(now, worst, measured);
        if lead != before {
            tracing::debug!(
                "lockstep: lead {before} -> {lead} frames at {} (worst input round trip {:?}, {})",
                self.frontier(),
                worst.unwrap_or_default(),
                if measured { "measured" } else { "estimated" }
            );
        }
        if self.peers.iter().all(|p| p.is_none()) || !self.everyone_running() {
            return false;
        }
        let mut published = false;
        while self.pauses.active().is_none() {
            let frame = self.frontier().0;
            // Shrink: a player ahead of the lead drops one sample equal to the input before
            // it (at most one per published frame), so its lead falls without losing a change.
            // Only players with the largest offset drop: a frame waits for the newest sample
            // it carries, so a player whose offset fell below another's would hold the
            // other's samples back, and their measured round trips (and so the lead) with them.
            let largest = self
                .peers
                .iter()
                .flatten()
                .filter(|p| !p.pending)
                .map(|p| frame.saturating_sub(p.next))
                .max()
                .unwrap_or(0);
            for p in self.peers.iter_mut().flatten().filter(|p| !p.pending) {
                let offset = frame.saturating_sub(p.next);
                if !p.dropped
                    && offset > lead
                    && offset == largest
                    && p.samples.front() == Some(&p.last)
                {
                    p.take_sample();
                    p.dropped = true;
                }
            }
            // A player is ready if its lead must grow (repeat its input) or its next sample is here.
            let ready = self
                .peers
                .iter()
                .flatten()
                .filter(|p| !p.pending)
                .all(|p| frame.saturating_sub(p.next) < lead || !p.samples.is_empty());
            if !ready {
                break;
            }
            let mut inputs = [Pad::NEUTRAL; MAX_PLAYERS];
            for p in self.peers.iter_mut().flatten().filter(|p| !p.pending) {
                if frame.saturating_sub(p.next) >= lead {
                    if let Some(s) = p.take_sample() {
                        p.last = s;
                        self.started = true;
                    }
                }
                // else grow: this frame repeats the player's input, no sample consumed.
                p.dropped = false;
                inputs[p.id.index()] = p.last;
            }
            self.history.push_back(inputs);
            published = true;
            self.after_published(now);
        }
        published
    }

    /// Marks spectators that fell more than `SPECTATOR_LAG_SECS` behind. One just (re)started
    /// gets twice that to load its state and acknowledge its first frames.
    fn check_spectators(&mut self, now: Instant) {
        let frontier = self.frontier();
        let limit = (SPECTATOR_LAG_SECS * self.cfg.fps) as u32;
        let grace = spectator_grace();
        for (id, p) in &mut self.spectators {
            let lag = frontier.since(p.acked);
            // One that went silent is away, not behind: it times out, or is sent a fresh
            // state once it is heard again.
            let heard = now < p.last_heard + self.cfg.warn_after;
            if !p.behind && lag > limit && now >= p.added + grace && heard {
                p.behind = true;
                tracing::info!("spectator {id}: {lag} frames behind; it needs a fresh state");
                self.events.push_back(ServerEvent::SpectatorBehind {
                    id: *id,
                    frames: lag,
                });
            }
        }
    }

    /// Queues this round's UPDATE for player `idx` (see [`build_round`]).
    fn build_round(&mut self, idx: usize, now: Instant) {
        let ctx = RoundCtx {
            epoch: self.epoch,
            frontier: self.frontier(),
            hist_base: self.hist_base,
            history: &self.history,
            advance: match self.cfg.mode {
                Mode::Strict => self.advances()[idx],
                // Clients pace themselves by the frames' arrival (see `Client::pace`).
                Mode::Optimistic => 0.0,
            },
            session: self.cfg.session,
            players: self.cfg.players,
            frames: true,
        };
        if let Some(p) = self.peers[idx].as_mut() {
            build_round(p, &ctx, now, &mut self.traffic);
        }
    }

    /// Notices go to every player and spectator.
    fn notify_all(&mut self, n: Notice) {
        for p in self.peers.iter_mut().flatten() {
            p.notify(n);
        }
        for p in self.spectators.values_mut() {
            p.notify(n);
        }
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
        match self.pauses.judge(now, from, req, present) {
            Verdict::Pause => {
                let frontier = self.frontier();
                if let Some(a) = self.pauses.pause(now, from, frontier) {
                    self.announce_pause(a.by, a.at);
                }
            }
            Verdict::Resume => {
                if let Some(a) = self.pauses.resume() {
                    tracing::info!("lockstep: {from} resumed at {}", a.at);
                    // Nothing of the pause is the link's or a clock's: time sync and the
                    // optimistic frame clock start again from here, and the gap in
                    // everyone's samples is no stop.
                    let paused_for = now.saturating_duration_since(a.since);
                    if let Some(c) = &mut self.clock {
                        *c += paused_for;
                    }
                    for p in self.peers.iter_mut().flatten() {
                        p.phase = Phase::default();
                    }
                    self.notify_all(Notice::Resumed {
                        peer: from,
                        at: a.at,
                    });
                }
            }
            Verdict::Refuse(why) => {
                if let Some(p) = self.peers[from.index()].as_mut() {
                    p.notify(Notice::PauseRefused { peer: from, why });
                }
            }
            Verdict::Ignore => {}
        }
    }

    fn announce_pause(&mut self, by: PeerId, at: Frame) {
        tracing::info!("lockstep: {by} paused at {at}");
        self.notify_all(Notice::Paused { peer: by, at });
    }

    /// A frame was published: a pause asked for at the frame before takes effect now.
    fn after_published(&mut self, now: Instant) {
        if let Some(a) = self.pauses.frame_published(now, self.frontier()) {
            self.announce_pause(a.by, a.at);
        }
    }
}

/// Shortest time between two UPDATEs with new frames to `p`. Strict: none, a frame is
/// published when a CTRL brings its last input, about once per keyframe interval. Optimistic:
/// a frame is published every tick, and sending each at once would double the traffic, so
/// they go out a keyframe interval's worth at a time (half a frame early, so a send is not
/// put off to the tick after); a player in memory gets each at once.
fn batch_for(cfg: &Config, p: &Peer) -> Duration {
    match cfg.mode {
        Mode::Optimistic if p.header > 0 => cfg
            .frame_duration()
            .mul_f64(f64::from(cfg.keyframe_interval) - 0.5),
        _ => Duration::ZERO,
    }
}

/// Optimistic mode: records how late samples `from..end` of `p` (just received, at `now`)
/// came: in frames after the tick of the frame with their own index. The offset that covers
/// that puts a sample on a frame not yet published.
fn record_lateness(p: &mut Peer, cfg: &Config, clock: Instant, now: Instant, from: u32, end: u32) {
    let Some(newest) = end.checked_sub(1) else {
        return;
    };
    let ticks = now.saturating_duration_since(clock).as_secs_f64() * cfg.fps;
    let cap = ticks - f64::from(newest) + f64::from(LATENESS_SPREAD_K * cfg.keyframe_interval);
    for i in from..end {
        let late = (ticks - f64::from(i)).min(cap).max(0.0);
        p.lateness.record(Duration::from_secs_f64(late / cfg.fps));
    }
}

/// What a round's UPDATE is built from.
struct RoundCtx<'a> {
    epoch: Instant,
    frontier: Frame,
    hist_base: Frame,
    history: &'a VecDeque<Inputs>,
    advance: f64,
    session: u32,
    players: u8,
    /// False for a spectator too far behind: acks and notices only.
    frames: bool,
}

/// Queues this round's UPDATE for `p`: every frame it lacks, in up to `MAX_SEGMENTS`
/// consecutive datagrams, each carrying the unacknowledged notices.
fn build_round(p: &mut Peer, ctx: &RoundCtx, now: Instant, total: &mut Traffic) {
    let frontier = ctx.frontier;
    // In order, up to MAX_NOTICES, and up to MAX_NAMED_NOTICES of the named ones.
    let mut named = 0;
    let carried = p
        .notices
        .iter()
        .take(msg::MAX_NOTICES)
        .take_while(|(_, n)| {
            named += usize::from(matches!(n, Notice::Joined { .. }));
            named <= msg::MAX_NAMED_NOTICES
        })
        .count();
    let notices: Vec<Notice> = p.notices.iter().take(carried).map(|(_, n)| *n).collect();
    // Id after the last notice carried: acknowledging a segment covers those.
    let notices_end = match carried {
        0 => p.next_notice,
        n => p.notices[n - 1].0 + 1,
    };
    let mut from = p.acked.max(ctx.hist_base);
    for _ in 0..MAX_SEGMENTS {
        let start = (from.since(ctx.hist_base) as usize).min(ctx.history.len());
        let avail: Vec<Inputs> = if ctx.frames {
            ctx.history.range(start..).copied().collect()
        } else {
            Vec::new()
        };
        // The client holds frame `from - 1` (it acknowledged it, or it is the end of the
        // previous segment, which it must take before this one); one whose stream starts
        // at `from` holds nothing yet.
        let base = start
            .checked_sub(1)
            .filter(|_| from > p.first)
            .map(|i| ctx.history[i]);
        let n = msg::frames_fitting(&avail, msg::UPDATE_BIT_BUDGET);
        let seq = p.send_seq;
        p.send_seq = p.send_seq.wrapping_add(1);
        let advance = msg::refresh(
            (ctx.advance * 16.0).round().clamp(-127.0, 127.0) as i8,
            &mut p.advance_sent,
            seq,
        );
        // The lead rides until the client acknowledges a datagram that names it.
        let lead = frontier.0.saturating_sub(p.next).min(255) as u8;
        let lead = (n > 0 && p.lead_acked != Some(lead)).then_some(lead);
        let update = Update {
            head: head(
                seq,
                p.recv_seq,
                ctx.epoch,
                now,
                &mut p.echo,
                p.rtt.srtt().is_some(),
            ),
            up_lossy: p.up_loss.lossy(),
            advance,
            frames: (n > 0).then(|| FrameRun {
                from,
                base,
                frames: avail[..n].to_vec(),
                lead,
            }),
            notices: notices.clone(),
        };
        // The client holds frames up to somewhere between what it acknowledged and the
        // end of all we sent (this round's earlier segments included).
        let refs = p.acked.0..=p.sent_end.0.max(from.0);
        from = from.plus(n as u32);
        p.sent_end = p.sent_end.max(from);
        p.sent.push_back(SentUpdate {
            seq,
            ack: update.head.ack,
            frames_end: from,
            notices_end,
            lead,
        });
        if p.sent.len() > MAX_SENT_RECORDS {
            p.sent.pop_front();
        }
        let bytes = msg::encode_update(ctx.session, ctx.players, &update, refs, p.acks.held());
        p.budget.spend(now, bytes.len());
        p.traffic.sent(bytes.len(), p.header);
        total.sent(bytes.len(), p.header);
        p.queued.push_back(bytes);
        if n == 0 || from >= frontier {
            break;
        }
    }
    p.last_send = Some(now);
    p.dirty = false;
}

/// The head of datagram `seq`: the ack, a timestamp in every `TS_EVERY`-th datagram (in
/// every one while the sender has no round trip yet: its first echo may be lost, or read
/// too late to count), and the echo of the newest timestamp received, which is taken (each
/// is echoed once).
pub(crate) fn head(
    seq: u16,
    ack: Option<u16>,
    epoch: Instant,
    now: Instant,
    pending_echo: &mut Option<(u16, Instant)>,
    rtt_known: bool,
) -> Head {
    Head {
        seq,
        ack,
        ts: (!rtt_known || seq.is_multiple_of(msg::TS_EVERY)).then(|| ms16(epoch, now)),
        echo: pending_echo.take().and_then(|(ts, at)| echo(ts, at, now)),
    }
}

/// Milliseconds since `epoch`, wrapping at 16 bits (the wire timestamp).
pub(crate) fn ms16(epoch: Instant, now: Instant) -> u16 {
    now.saturating_duration_since(epoch).as_millis() as u16
}

/// The echo of a timestamp received at `at`, if it was held short enough to fit a byte.
pub(crate) fn echo(ts: u16, at: Instant, now: Instant) -> Option<Echo> {
    let hold = now.saturating_duration_since(at).as_millis();
    u8::try_from(hold)
        .ok()
        .filter(|&h| h < u8::MAX)
        .map(|hold_ms| Echo { ts, hold_ms })
}

/// The RTT an echo reveals: now - echoed timestamp - hold time. `None` if implausible, or
/// if the timestamp was sent before the peer's last silence ended at `silence_end` (either
/// side may have been stopped meanwhile: see `pause`).
pub(crate) fn rtt_sample(
    epoch: Instant,
    now: Instant,
    e: Echo,
    silence_end: Option<Instant>,
) -> Option<Duration> {
    let ms = ms16(epoch, now)
        .wrapping_sub(e.ts)
        .wrapping_sub(u16::from(e.hold_ms));
    let rtt = Duration::from_millis(u64::from(ms));
    let sent_ago = rtt + Duration::from_millis(u64::from(e.hold_ms));
    (ms < 30_000 && !across_silence(now, sent_ago, silence_end)).then_some(rtt)
}

#[cfg(test)]
mod majority_tests {
    use super::*;

    fn judge(values: &[(u8, u64)]) -> Vec<(PeerId, u64, u64)> {
        let mut c = Checksums::default();
        let present: Vec<PeerId> = values.iter().map(|(p, _)| PeerId(*p)).collect();
        let mut out = Vec::new();
        for (p, v) in values {
            out.extend(c.insert_majority(Frame(59), PeerId(*p), *v, &present));
        }
        out
    }

    #[test]
    fn the_odd_one_out_is_the_desynced_one_and_player_1_breaks_ties() {
        // Nothing is judged before every player reported.
        let mut c = Checksums::default();
        let all = [PeerId(0), PeerId(1), PeerId(2)];
        assert!(c.insert_majority(Frame(9), PeerId(1), 7, &all).is_empty());
        assert!(c.insert_majority(Frame(9), PeerId(2), 8, &all).is_empty());
        assert_eq!(
            c.insert_majority(Frame(9), PeerId(0), 7, &all),
            [(PeerId(2), 7, 8)]
        );
        // A late duplicate judges nothing again.
        assert!(c.insert_majority(Frame(9), PeerId(2), 8, &all).is_empty());
        assert_eq!(c.holder(Frame(9), 7, PeerId(2)), Some(PeerId(0)));
        assert_eq!(c.holder(Frame(9), 7, PeerId(0)), Some(PeerId(1)));
        // Player 1 can be the odd one out too: no player is trusted over a majority.
        assert_eq!(judge(&[(0, 5), (1, 6), (2, 6)]), [(PeerId(0), 6, 5)]);
        // Two against two, or one against one: player 1's value wins.
        assert_eq!(judge(&[(0, 1), (1, 2)]), [(PeerId(1), 1, 2)]);
        assert_eq!(
            judge(&[(0, 1), (1, 2), (2, 1), (3, 2)]),
            [(PeerId(1), 1, 2), (PeerId(3), 1, 2)]
        );
        // Without player 1, the lowest slot present breaks the tie.
        assert_eq!(judge(&[(2, 4), (5, 3)]), [(PeerId(5), 4, 3)]);
        // A plurality is no tie: 2 of 4 agree, the other two each differ.
        assert_eq!(
            judge(&[(0, 9), (1, 8), (2, 8), (3, 7)]),
            [(PeerId(0), 8, 9), (PeerId(3), 8, 7)]
        );
        assert!(judge(&[(0, 3), (1, 3), (2, 3)]).is_empty());
    }
}
