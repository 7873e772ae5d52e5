//! The lockstep client: one per player. Sends its local samples in CTRLs, receives
//! everyone's inputs in UPDATEs and hands out frames in order, waiting at the keyframe.
//!
//! This file holds the frames received; its link to the server is a [`PeerLink`], its
//! pacing advice the lockstep `Playout`, and beside it `pausing` (the pause asked for and
//! in force), `outbox` (the samples and checksums to send until acknowledged), `stalls`,
//! `notices` (which were raised), `measure` (input round trip, latency) and `speculate`
//! (what running ahead needs) hold their own state. Must not import the server: both ends stand on `link`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::input::{Inputs, Pad};
use crate::wire::{self, Dropped, Handled, Header, Kind, Transmit, WireError};

use super::frame::{Frame, PeerId};
use super::link::{PeerLink, Silence};
use super::msg::{self, Ctrl, Notice};
use super::pause::{ClientPause, PAUSED_SILENCE, STOP_GAP};

use super::playout::Playout;
use super::stats::ClientStats;
use super::{Config, LockstepError};

mod event;
mod handover;
mod measure;
mod notices;
mod outbox;
mod pausing;
mod speculate;
mod stalls;

pub use event::ClientEvent;
use handover::SampleLog;
use measure::Measures;
use notices::SeenNotices;
use outbox::Outbox;
use speculate::Speculation;
use stalls::Stalls;

/// How long a player still loading (no CTRL sent yet) waits for the server before it counts
/// as lost: as long as a host waits for a loading player (`session::LOADING_LIMIT`).
const LOADING_SILENCE: Duration = Duration::from_secs(30);

/// Samples a client keeps beyond the next frame when the caller pushes changes without
/// polling frames (during a stall); past this, the newest is overwritten.
const MAX_AHEAD: u32 = 256;
/// Samples taken ahead for frame periods spent waiting, at most (2 s at 60 fps, the default
/// timeout after which a silent peer is dropped and the others go on); leaves room under
/// `MAX_AHEAD` for the changes of a long stall.
const MAX_WAITED: u32 = 120;
/// Received frames kept as bases for delta coding (68 s at 60 fps): the server codes against
/// the frame before the oldest one we have not acknowledged, at most a few round trips back.
const HELD_FRAMES: usize = 4096;

/// What a CTRL carried, kept until it is acknowledged (see [`PeerLink`]).
#[derive(Clone, Copy, Debug)]
struct SentCtrl {
    samples_end: u32,
    checks_end: u32,
    /// The pause request it carried.
    pause_id: Option<u8>,
    /// It said the frame loop stood still.
    stopped: bool,
}

/// One player's end of a session.
///
/// Calling order, per displayed frame (the scheduler allows at most 4 frames per displayed
/// frame, see [`ready_frames`](Self::ready_frames)):
/// 1. [`push_local_input`](Self::push_local_input) with this player's pad (one sample per
///    emulated frame; a frame polled without a new sample repeats the previous one);
/// 2. [`poll_frame`](Self::poll_frame) up to the catch-up cap, emulating each frame returned;
///    `None` means the keyframe is reached without its UPDATE: keep the window, audio and
///    network alive and try again later;
/// 3. drain [`poll_transmit`](Self::poll_transmit) (send each datagram to the server) and
///    [`poll_event`](Self::poll_event).
///
/// Feed every datagram from the server to [`handle_datagram`](Self::handle_datagram), call
/// [`handle_timeout`](Self::handle_timeout) when [`poll_timeout`](Self::poll_timeout) is
/// reached, and run frames at [`pace`](Self::pace) times the nominal rate. Never reads a clock.
///
/// As the runner's `Feed`: `sample(now, local)` keeps `local[me]`; `next(now)` pushes it if
/// [`wants_input`](Self::wants_input), then maps `poll_frame` to `Run(inputs)`, `None` to
/// `Wait(poll_timeout())`, and [`is_lost`](Self::is_lost) to `End`; `pace()` is
/// `Some(client.pace())`. The runner's catch-up cap (4) bounds frames per displayed frame.
#[derive(Debug)]
pub struct Client {
    cfg: Config,
    me: PeerId,
    /// Sequence numbers, acks, timestamps, RTT, loss of UPDATEs, budget, traffic, silence.
    link: PeerLink<SentCtrl>,
    /// The samples and checksums the CTRLs carry until acknowledged.
    outbox: Outbox,
    last_pad: Pad,
    newest_pushed_at: Option<Instant>,
    /// The input round trip and latency of this player's samples, and the latency it saw.
    measures: Measures,
    /// When the first frames arrived. Samples pushed before (the sample for frame 0, taps
    /// while waiting) also waited for the session to start, so they do not measure the link.
    first_frames_at: Option<Instant>,
    /// Received frames not handed out yet, from `next_frame`, each with our lead on it and
    /// when it arrived.
    frames: VecDeque<(Inputs, u8, Instant)>,
    /// The newest received frames, handed out or not, up to the last one received: an
    /// UPDATE's first frame is delta-coded against the frame before it, which we acknowledged.
    held: VecDeque<Inputs>,
    next_frame: Frame,
    lead: Option<u32>,
    /// The input round trip last reported to the server.
    irtt_sent: Option<u16>,
    /// The server's word on the loss of our CTRLs.
    up_lossy: bool,
    lost: bool,
    send_due: bool,
    seen: SeenNotices,
    events: VecDeque<ClientEvent>,
    /// The newest `now` the client was given (stamps stalls and auto-filled samples).
    last_now: Instant,
    stalls: Stalls,
    /// How the runner should play the frames: a strict or optimistic session's player, or
    /// a spectator (which pushes no samples, and whose CTRLs carry acks alone).
    playout: Playout,
    /// What speculation needs of this player's samples and the last frame handed out.
    speculation: Speculation,
    pause: ClientPause,
    /// When the frame loop last pushed (or tried to: paused).
    last_push_call: Option<Instant>,
    /// This player's samples until a frame carried them, and the lead on the newest frame
    /// received: what a new authority needs of it (`handover`).
    log: SampleLog,
    recv_lead: u32,
}

/// The lockstep client hears only its server: the driver has routed the datagram (`Addr`
/// is `()`), and seals and addresses what it sends.
impl wire::Machine for Client {
    type Addr = ();
    type Event = ClientEvent;

    fn handle_datagram<'a>(&mut self, now: Instant, (): (), datagram: &'a [u8]) -> Handled<'a> {
        Client::handle_datagram(self, now, datagram)
    }
    fn handle_timeout(&mut self, now: Instant) {
        Client::handle_timeout(self, now)
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<()>> {
        Client::poll_transmit(self, now)
    }
    fn poll_event(&mut self) -> Option<ClientEvent> {
        Client::poll_event(self)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Client::poll_timeout(self)
    }
}

impl Client {
    /// A player that joins a running session (or comes back to it) from the machine's state
    /// at the start of frame `start`; the server adds it with
    /// [`Server::add_late_peer`](super::Server::add_late_peer).
    pub fn new_at(
        now: Instant,
        cfg: Config,
        me: PeerId,
        start: Frame,
    ) -> Result<Client, LockstepError> {
        let mut c = Client::new(now, cfg, me)?;
        c.start_at(start);
        c.playout.start_at(start);
        Ok(c)
    }

    /// A spectator from the state at the start of frame `start`: it is sent every published
    /// frame ([`Server::add_spectator`](super::Server::add_spectator)), pushes no input,
    /// and acknowledges what it got every keyframe interval.
    pub fn spectator(now: Instant, cfg: Config, start: Frame) -> Result<Client, LockstepError> {
        let mut c = Client::new(now, cfg, PeerId(0))?;
        c.start_at(start);
        c.playout.spectate();
        Ok(c)
    }

    fn start_at(&mut self, start: Frame) {
        self.next_frame = start;
        self.outbox.start_at(start.0);
        self.log.start_at(start.0);
        self.measures.start_at(start.0);
        self.frames.clear();
        self.held.clear();
    }

    /// A spectator jumps to a fresh state at the start of `frame` (it fell too far behind):
    /// the frames before it are dropped, and the server's stream restarts there. False (and
    /// nothing done) for a player, or a frame not ahead of the next one.
    pub fn skip_to(&mut self, frame: Frame) -> bool {
        if !self.is_spectator() || frame <= self.next_frame {
            return false;
        }
        self.start_at(frame);
        true
    }

    /// True for a spectator's client (it sends acks only).
    pub fn is_spectator(&self) -> bool {
        self.playout.is_spectator()
    }

    /// The frames come at the server's pace, not at one the client must keep (a spectator,
    /// or any client of an optimistic session): after a wait for one, the scheduler starts
    /// its clock again from the frame that came instead of catching the wait up.
    pub fn paced_by_arrival(&self) -> bool {
        self.playout.paced_by_arrival()
    }

    /// Frames a late starter should run beyond its frame clock, at most 4 per displayed frame
    /// (the scheduler's cap): a spectator keeps a small buffer (the frames of about one
    /// keyframe interval and a frame); a late joiner runs every frame it was sent once, then
    /// plays at its clock as every player does. A joiner that stopped short of the newest
    /// frame would run behind the others' phase, and they would wait for its input at every
    /// keyframe until time sync had caught it up. A player of an optimistic session plays
    /// the stream like a recording: the frames beyond a keyframe interval and a few are run
    /// sooner.
    pub fn backlog(&mut self) -> u32 {
        let started = self.first_frames_at.is_some();
        self.playout.backlog(self.frames.len() as u32, started)
    }

    /// The client of player `me`, at frame 0. Fails if `cfg` is invalid or `me` is no slot of it.
    pub fn new(now: Instant, cfg: Config, me: PeerId) -> Result<Client, LockstepError> {
        cfg.validate()?;
        if me.0 >= cfg.players {
            return Err(LockstepError::NoSuchSlot(me));
        }
        let link = PeerLink::new(now, now, cfg.send_budget, cfg.udp_ip_header);
        let playout = Playout::new(&cfg);
        Ok(Client {
            cfg,
            me,
            link,
            outbox: Outbox::default(),
            last_pad: Pad::NEUTRAL,
            newest_pushed_at: None,
            measures: Measures::default(),
            first_frames_at: None,
            held: VecDeque::new(),
            frames: VecDeque::new(),
            next_frame: Frame::ZERO,
            lead: None,
            irtt_sent: None,
            up_lossy: false,
            lost: false,
            send_due: false,
            seen: SeenNotices::default(),
            events: VecDeque::new(),
            last_now: now,
            stalls: Stalls::default(),
            playout,
            speculation: Speculation::new(me),
            pause: ClientPause::default(),
            last_push_call: None,
            log: SampleLog::default(),
            recv_lead: 0,
        })
    }

    /// The slot this client plays.
    pub fn me(&self) -> PeerId {
        self.me
    }

    /// Index of the next sample to be pushed.
    fn samples_end(&self) -> u32 {
        self.outbox.samples_end()
    }

    /// True when the next frame has no local sample yet (call `push_local_input` first).
    pub fn wants_input(&self) -> bool {
        !self.is_spectator() && self.samples_end() <= self.next_frame.0
    }

    /// This player's pad for the next frame to emulate. Pushing again before that frame is
    /// polled (during a stall) keeps only changes, as extra samples, so no press or release
    /// is lost; and while the stall lasts, one sample per frame period that passed in it
    /// (see `sample_while_waiting`).
    pub fn push_local_input(&mut self, now: Instant, pad: Pad) {
        self.last_now = self.last_now.max(now);
        // The frame loop calls at least once a displayed frame, waiting or not: a gap is
        // a stop (see `pause`), which the server hears of.
        // A pause is no stop: it stood still for everyone.
        let stood_still = self.last_push_call.is_some_and(|t| {
            now.saturating_duration_since(t) >= STOP_GAP
                && self.pause.paused.is_none()
                && self.pause.resumed_at.is_none_or(|r| r < t)
        });
        if stood_still && self.first_frames_at.is_some() {
            self.pause.stopped = true;
            self.send_due = true;
        }
        self.last_push_call = Some(now);
        // Paused at the frame to come: nothing is sampled for it until the game resumes.
        if self.is_spectator() || self.at_pause() {
            return;
        }
        self.sample_while_waiting(pad);
        if !self.wants_input() {
            if pad == self.last_pad {
                return;
            }
            if self.samples_end() - self.next_frame.0 >= MAX_AHEAD {
                // Far more changes than frames: only a caller ignoring the calling order
                // gets here; keep the newest state.
                if self.outbox.replace_newest(pad) {
                    self.log.replace_newest(pad);
                    self.last_pad = pad;
                    return;
                }
            }
        }
        self.append_sample(pad, now);
    }

    /// A stalled player's frame clock runs on (the runner catches the frames up afterwards),
    /// so its pad is sampled on that clock, not on the frames it manages to run: one sample
    /// per frame period spent waiting. Pushed only when the frames are caught up, those
    /// samples would reach the server late and stall the game again, every peer's at once
    /// after a common stall (a round trip that jumps), the frames they go on being due
    /// already. The session's start is no stall: nothing is sampled ahead before the first
    /// frames.
    fn sample_while_waiting(&mut self, pad: Pad) {
        let Some(since) = self.stalls.since.filter(|_| !self.paced_by_arrival()) else {
            return;
        };
        let waited = self.last_now.saturating_duration_since(since);
        let periods = (waited.as_secs_f64() * self.cfg.fps) as u32;
        while self.stalls.waited_samples < periods.min(MAX_WAITED) {
            self.stalls.waited_samples += 1;
            // The period after the newest sample's (ahead already if caught up on before).
            let newest = self.measures.newest_frame().unwrap_or(0);
            let frame = newest.max(self.next_frame.0) + 1;
            self.append_sample_for(pad, self.last_now, frame);
        }
    }

    fn append_sample(&mut self, pad: Pad, at: Instant) {
        self.append_sample_for(pad, at, self.next_frame.0);
    }

    /// Appends a sample taken at `at` on the frame clock's `frame`.
    fn append_sample_for(&mut self, pad: Pad, at: Instant, frame: u32) {
        let index = self.outbox.push(pad);
        self.log.push(pad);
        self.measures.pushed(at, frame);
        self.speculation.pushed(index, pad, at);
        self.last_pad = pad;
        self.newest_pushed_at = Some(at);
        if self.every_sample() || (index + 1).is_multiple_of(self.cfg.keyframe_interval) {
            self.send_due = true;
        }
    }

    /// The next frame to emulate and everyone's inputs for it, in order, each exactly once;
    /// `None` at a keyframe whose UPDATE has not arrived (a stall).
    pub fn poll_frame(&mut self) -> Option<(Frame, Inputs)> {
        let Some((inputs, lead, arrived)) = self.frames.pop_front() else {
            // Waiting for the first frames is the session starting (every player getting
            // ready: see the server's `publish`), not a stall, as in `app::runner`; nor is
            // waiting at a pause.
            if self.stalls.since.is_none() && self.first_frames_at.is_some() && !self.at_pause() {
                self.stalls.begin(self.last_now);
            }
            return None;
        };
        let frame = self.next_frame;
        if self.wants_input() {
            // No sample pushed for this frame: the pad did not change.
            self.append_sample(self.last_pad, self.last_now);
        }
        self.measures.record_latency(frame, u32::from(lead));
        self.speculation.handed_out(inputs);
        let wait = self.last_now.saturating_duration_since(arrived);
        self.playout.waited(wait);
        self.next_frame = frame.next();
        Some((frame, inputs))
    }

    /// The inputs to run ahead with (speculation), up to `max` frames after the last one
    /// handed out: the frames received and not handed out yet as they are, then frames
    /// through the one this player's newest sample lands on (sample `i` goes on frame
    /// `i + lead`) less `delay` (the player's own press then shows `delay` frames late, and
    /// fewer frames are guessed), with this player's samples where the server will place
    /// them and every other player's input of the last frame repeated. Nothing for a
    /// spectator.
    pub fn predict(&self, max: u32, delay: u32, out: &mut Vec<Inputs>) {
        if self.is_spectator() || max == 0 {
            return;
        }
        let max = max as usize;
        out.extend(self.frames.iter().take(max).map(|(inputs, _, _)| *inputs));
        let Some(lead) = self.lead else {
            return;
        };
        let received = self.frames.back().map(|f| f.0);
        let frame = self.next_frame.0 + self.frames.len() as u32;
        let last = (self.samples_end() + lead).saturating_sub(1 + delay);
        self.speculation
            .extend(out, max, received, frame..=last, lead, self.last_pad);
    }

    /// The picture of frame `head` (speculative or not) was shown at `now`: each of this
    /// player's samples that lands on or before it was seen, after how many frame periods
    /// ([`ClientStats::perceived`]).
    pub fn shown(&mut self, now: Instant, head: Frame) {
        let Some(lead) = self.lead else {
            return;
        };
        let first = self.first_frames_at;
        // Samples from before the first frames waited for the session to start.
        let in_session = |t| first.is_some_and(|f| t >= f);
        let perceived = &mut self.measures.perceived;
        self.speculation
            .shown(now, head, lead, self.cfg.fps, in_session, perceived);
    }

    /// Frames that [`poll_frame`](Self::poll_frame) can hand out right now.
    pub fn ready_frames(&self) -> usize {
        self.frames.len()
    }

    /// The next frame `poll_frame` returns.
    pub fn frame(&self) -> Frame {
        self.next_frame
    }

    /// A sample pushed at `at` was taken on the running frame clock: samples pushed before
    /// the first frames arrived (the frame-0 sample, taps while waiting) waited for the
    /// session to start, so they measure neither the link nor the client's phase.
    fn pushed_in_session(&self, at: Instant) -> bool {
        self.first_frames_at.is_some_and(|f| at >= f)
    }

    /// Queues the checksum of `frame` (e.g. of the state after it) for the server, which
    /// compares it with the other players'. Rides in CTRLs until acknowledged.
    pub fn report_checksum(&mut self, frame: Frame, checksum: u64) {
        self.outbox.report_checksum(frame, checksum);
    }

    /// Feeds a datagram from the server. Malformed ones and other sessions are dropped and
    /// counted.
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Handled<'static> {
        self.last_now = self.last_now.max(now);
        self.link.count_received(datagram.len());
        let known_end = self.next_frame.0 + self.frames.len() as u32;
        // `held` ends where the received frames end.
        let (held, held_from) = (&self.held, known_end - self.held.len() as u32);
        let update = match Header::parse(datagram) {
            Ok((h, body)) if h.kind == Kind::Update => {
                let ack_ref = self.link.ack_reference();
                msg::decode_update(
                    body,
                    wire::is_short(datagram),
                    known_end,
                    ack_ref,
                    self.cfg.players,
                    |f| held.get(f.0.checked_sub(held_from)? as usize).copied(),
                )
            }
            Ok((h, _)) => {
                tracing::debug!("dropped a {:?} datagram", h.kind);
                self.link.traffic.packets_dropped_invalid += 1;
                return Handled::Dropped(Dropped::Unexpected(h.kind));
            }
            Err(e) => Err(e),
        };
        let update = update.and_then(|u| {
            if self.link.plausible(&u.head) {
                Ok(u)
            } else {
                Err(WireError::Malformed(Kind::Update))
            }
        });
        let update = match update {
            Ok(u) => u,
            Err(WireError::MissingBase(_, f)) if f >= known_end => {
                // A later segment whose predecessor is missing (see below): it comes again.
                return Handled::Taken;
            }
            Err(e) => {
                tracing::debug!("dropped datagram: {e}");
                self.link.traffic.packets_dropped_invalid += 1;
                return Handled::Dropped(e.into());
            }
        };
        if self.lost {
            return Handled::Taken;
        }
        self.link.heard(now);
        if update.frames.as_ref().is_some_and(|r| r.from.0 > known_end) {
            // A later segment whose predecessor is missing: ignore it all, so our ack
            // never claims frames we lack; it comes again with the next round.
            return Handled::Taken;
        }
        if self.lead.is_none() && update.frames.as_ref().is_some_and(|r| r.lead.is_none()) {
            // The server names our lead until we acknowledge it: frames without one before
            // we know it are not from a server that follows the protocol.
            tracing::debug!("dropped an UPDATE without the lead we have not learnt yet");
            self.link.traffic.packets_dropped_invalid += 1;
            return Handled::Dropped(WireError::Malformed(Kind::Update).into());
        }
        let newest = self.link.received(now, &update.head);
        if newest {
            self.up_lossy = update.up_lossy;
            if let Some(a) = update.advance {
                self.playout.advance = f64::from(a) / 16.0;
            }
            // The lead rides only until we acknowledge it: keep the newest.
            if let Some(lead) = update.frames.as_ref().and_then(|r| r.lead) {
                self.lead = Some(u32::from(lead));
            }
        }
        // Only the newest datagram's ack: it is written short against the newest ack we
        // took (`codec::put_seq`), so a late one's can read as a newer ack than the server
        // sent, and the newer datagram carried a newer ack anyway.
        if let Some(ack) = update.head.ack.filter(|_| newest) {
            self.handle_ack(ack);
        }
        // A resume before the frames it lets through: samples pushed before it waited for
        // the pause, not for the link (see `Measures::record_input_rtt`).
        if update
            .notices
            .iter()
            .any(|n| matches!(n, Notice::Resumed { .. }) && !self.seen.contains(n))
        {
            self.pause.refill = self.at_pause();
            self.pause.resumed_at = Some(now);
        }
        // Only the newest datagram's frames: its frame numbers are coded against what the
        // server thought we held when it sent it, so read against where we are now, a
        // late one (overtaken on the way) can name the wrong frames; and the newer one
        // repeated everything it had that we had not acknowledged.
        if let Some(run) = update.frames.filter(|_| newest) {
            // A late datagram's own lead, else the newest (checked above: known by now).
            let lead = run.lead.map(u32::from).or(self.lead).unwrap_or(0);
            if run.from.0 <= known_end && run.to().0 > known_end {
                let skip = (known_end - run.from.0) as usize;
                self.frames
                    .extend(run.frames[skip..].iter().map(|f| (*f, lead as u8, now)));
                self.held.extend(&run.frames[skip..]);
                let excess = self.held.len().saturating_sub(HELD_FRAMES);
                self.held.drain(..excess);
                self.recv_lead = lead;
                self.log.placed_before(run.to().0.saturating_sub(lead));
                self.first_frames_at.get_or_insert(now);
                let (first, pause) = (self.first_frames_at, &self.pause);
                let counts = |t| first.is_some_and(|f| t >= f) && pause.pushed_since_resume(t);
                self.measures
                    .record_input_rtt(now, known_end, run.to().0, lead, counts);
                if let Some(waited) = self.stalls.end(now) {
                    tracing::debug!(
                        frame = self.next_frame.0,
                        lead,
                        ms = waited.as_millis() as u64,
                        "lockstep: waited at a keyframe"
                    );
                }
            }
        }
        for n in update.notices {
            if !self.seen.first_time(n) {
                continue;
            }
            let ev = match n {
                Notice::Paused { peer, at } => Some(self.paused_at(peer, at)),
                Notice::Resumed { peer, at } => {
                    self.pause.paused = None;
                    self.pause.resumed_at = Some(now);
                    Some(ClientEvent::Resumed { peer, at })
                }
                Notice::PauseRefused { peer, why } => {
                    (peer == self.me).then_some(ClientEvent::PauseRefused { why })
                }
                other => notices::event(other),
            };
            self.events.extend(ev);
        }
        Handled::Taken
    }

    fn handle_ack(&mut self, ack: u16) {
        let Some(rec) = self.link.acked(ack) else {
            return;
        };
        self.outbox.acked(rec.samples_end, rec.checks_end);
        if let Some(id) = rec.pause_id {
            self.pause.acknowledged(id);
        }
        if rec.stopped {
            self.pause.stopped = false;
        }
    }

    /// True when every sample asks for a CTRL (K = 1, or a lossy link), not every K-th.
    fn every_sample(&self) -> bool {
        self.cfg.keyframe_interval == 1 || self.redundant()
    }

    /// The first CTRL leaves with the first sample, not before: the server reads a player's
    /// first CTRL as that player running (frame 0 waits for it), and a network thread would
    /// otherwise send one while the window is still opening.
    fn first_send_due(&self) -> bool {
        self.link.last_send.is_none() && (self.is_spectator() || self.outbox.has_samples())
    }

    /// When a CTRL goes out without a new sample (retransmission and keepalive while
    /// stalled): a keyframe interval after the last one and after the newest sample. While
    /// samples flow they trigger the CTRLs, at the moment each is pushed.
    fn resend_at(&self) -> Option<Instant> {
        let last = self.link.last_send?;
        Some(last.max(self.newest_pushed_at.unwrap_or(last)) + self.cfg.resend_interval())
    }

    /// The next CTRL, when one is due: after every K-th sample (every sample on a lossy
    /// link), or at the resend timer (see `resend_at`). Call right after pushing a sample.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<()>> {
        self.last_now = self.last_now.max(now);
        if self.lost {
            return None;
        }
        let timer = self.first_send_due() || self.resend_at().is_some_and(|t| now >= t);
        if !(self.send_due || timer) {
            return None;
        }
        if !self.link.budget.allows(now) {
            if !timer && self.every_sample() {
                // A CTRL is worth most right after the sample it carries. Out of budget now, it
                // waits for the next sample instead of leaving as soon as the bucket refills:
                // mid-frame sends keep the bucket empty at every push, so every sample would
                // wait for tokens (12 ms on average over real UDP at 2.4 KB/s) instead of
                // one in four waiting a frame (4 ms on average).
                self.send_due = false;
            }
            return None;
        }
        let head = self.link.next_head(now);
        let seq = head.seq;
        let n = self.outbox.fitting();
        let samples = (n > 0).then(|| {
            let age = self
                .newest_pushed_at
                .filter(|_| self.outbox.all_fit(n))
                // Pushed before the first frames, it waited for the session to start, not on
                // the frame clock the server's phase estimate reads from it.
                .filter(|t| self.pushed_in_session(*t))
                // Older than a u8 holds: no use for the phase estimate, left out (255 goes
                // out as "not known" too: `msg`).
                .and_then(|t| u8::try_from(now.saturating_duration_since(t).as_millis()).ok());
            self.outbox.sample_run(n, age)
        });
        let (checksums, checks_end) = self.outbox.checksums();
        let input_rtt_ms = self
            .measures
            .input_rtt_report()
            .map(|d| d.as_millis().min(u128::from(u16::MAX)) as u16)
            .and_then(|v| msg::refresh(v, &mut self.irtt_sent, seq));
        let ctrl = Ctrl {
            input_rtt_ms,
            head,
            samples,
            checksums,
            pause: self.pause.pending,
            stopped: self.pause.stopped,
        };
        let record = SentCtrl {
            samples_end: self.outbox.end_of(n),
            checks_end,
            pause_id: ctrl.pause.map(|p| p.id),
            stopped: ctrl.stopped,
        };
        self.send_due = false;
        self.link.last_send = Some(now);
        let refs = self.outbox.sent(n);
        let bytes = msg::encode_ctrl(self.cfg.session, &ctrl, refs, self.link.acks.held());
        self.link.sent(now, &ctrl.head, record, bytes.len());
        Some(Transmit::new((), bytes))
    }

    /// How long the server may be silent before it counts as lost: longer while the game is
    /// paused (a host suspended with Ctrl-Z is stopped; see `pause`).
    fn silence_limit(&self) -> Duration {
        let base = if self.loading() {
            self.cfg.timeout.max(LOADING_SILENCE)
        } else {
            self.cfg.timeout
        };
        match self.pause.paused {
            Some(_) => base.max(PAUSED_SILENCE),
            None => base,
        }
    }

    /// When a silence is worth a warning: not while this player still loads.
    fn warn_after(&self) -> Duration {
        if self.loading() {
            self.silence_limit()
        } else {
            self.cfg.warn_after
        }
    }

    /// A player that has sent no CTRL yet still loads its game (and may run the rollback
    /// check, seconds on a slow core): the server has nothing to send it until it runs, so
    /// its silence then says nothing about the link. Spectators send at once.
    fn loading(&self) -> bool {
        self.link.last_send.is_none() && !self.is_spectator()
    }

    /// The settings it was made with.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) (and `poll_transmit`) should run next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timeout(true)
    }

    /// [`poll_timeout`](Self::poll_timeout) for a caller that holds this client's sends
    /// back for now (its frame loop stopped): only the server's silence counts, since a
    /// send that is due would stay due, in the past.
    pub fn poll_timeout_held(&self) -> Option<Instant> {
        self.timeout(false)
    }

    fn timeout(&self, sends: bool) -> Option<Instant> {
        if self.lost {
            return None;
        }
        let send = if !sends {
            None
        } else if self.send_due || self.first_send_due() {
            Some(self.last_now)
        } else {
            self.resend_at()
        };
        let send = send.map(|t| self.link.budget.ready_at(t));
        let warn = self.link.warn_at(self.warn_after());
        [
            send,
            warn,
            Some(self.link.last_heard + self.silence_limit()),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Raises `ServerSilent` and `ServerLost` when the server has been quiet too long.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.last_now = self.last_now.max(now);
        if self.lost {
            return;
        }
        match self
            .link
            .silence(now, self.silence_limit(), self.warn_after())
        {
            Silence::Gone(silent) => {
                tracing::info!("server silent for {} ms: lost", silent.as_millis());
                self.lost = true;
                self.events.push_back(ClientEvent::ServerLost);
            }
            Silence::Warn(silent) => {
                self.events
                    .push_back(ClientEvent::ServerSilent { silent_for: silent });
            }
            Silence::Heard => {}
        }
    }

    /// True while a direction of the link loses datagrams: a CTRL then goes out with every
    /// sample instead of every K-th, so a loss costs one frame instead of K.
    pub fn redundant(&self) -> bool {
        self.link.loss.lossy() || self.up_lossy
    }

    /// True once the server has been lost.
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// Speed factor for the scheduler, about 0.98..=1.02: below 1 when this client runs
    /// ahead of the others (drift correction). A late joiner a frame or more out of phase
    /// (it caught up to the newest frame, and so runs ahead of players who keep a lead of
    /// frames in hand; or the others were catching up a stall of their own) corrects it
    /// faster, up to 10%: at 2% a two-frame lead takes two seconds, stalling every keyframe.
    pub fn pace(&self) -> f64 {
        self.playout.pace()
    }

    /// Smoothed RTT to the server.
    pub fn rtt(&self) -> Option<Duration> {
        self.link.rtt.srtt()
    }

    /// How far this client's frame clock is behind the host's, to catch up once: its first
    /// frames left the server as the host ran frame 0 and took a one-way trip (half the
    /// smoothed round trip) to arrive. `Some` once, when both the first frames and a round
    /// trip are known (the first CTRL's echo comes back a round trip after the client
    /// started, some frames into the session). A scheduler that starts frame 0 on arrival
    /// and never catches this up runs a one-way trip behind the host, which time sync, at
    /// 2 %, takes 25 s to undo at 2 s RTT, stalling meanwhile.
    pub fn take_start_delay(&mut self) -> Option<Duration> {
        let started = self.first_frames_at.is_some();
        self.playout.take_start_delay(started, self.link.rtt.srtt())
    }

    /// The smoothed round trip's mean deviation: the link's jitter.
    pub fn rtt_var(&self) -> Duration {
        self.link.rtt.rttvar()
    }

    /// The client's numbers as of now.
    pub fn stats(&self) -> ClientStats {
        ClientStats {
            rtt: self.link.rtt.srtt(),
            rtt_var: self.link.rtt.rttvar(),
            input_rtt: self.measures.input_rtt(),
            keyframe_interval: self.cfg.keyframe_interval,
            redundant: self.redundant(),
            down_loss: self.link.loss.rate(),
            lead: self.lead,
            frame: self.next_frame,
            ready_frames: self.frames.len(),
            stalls: self.stalls.count,
            stalled: self.stalls.total,
            stalled_frames: self.stalls.total.as_secs_f64() * self.cfg.fps,
            pace: self.pace(),
            advance_frames: self.playout.advance,
            traffic: self.link.traffic,
            latency: self.measures.latency.clone(),
            perceived: self.measures.perceived.clone(),
        }
    }

    /// Forgets latency samples and stall counts (e.g. after a warm-up).
    pub fn reset_measurements(&mut self) {
        self.measures.clear();
        self.stalls.clear_totals();
    }
}
