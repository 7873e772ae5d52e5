//! [`ParticipantFeed`]: the frame side of a netplay session, with no thread, socket or
//! clock: the participant, the local pad (keys and bot), the mailbox to the machine's
//! observer, when the feed ends, and the playout the frame runner asks for. `NetFeed` wraps
//! it with its link, network thread, wording and test hooks; the simulated world
//! (`netplay::world`) runs it as its runner's feed as it is, so the rules it tests are the
//! ones that ship. It must not import `NetFeed`, the link or the report.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::app::{Feed, FeedPoll};
use crate::input::{Bot, Inputs, Pad};
use crate::lockstep::Frame;
use crate::netplay::speculation::Delay;
use crate::session::{CoreReply, CoreRequest, Participant, ParticipantEvent, SessionError};

use super::{lock, Shared};

/// What the feed hands its owner to word or keep, besides frames.
#[derive(Debug)]
pub enum FeedEvent {
    /// What the participant raised, except the machine's work (`ParticipantEvent::Core`),
    /// which went to the observer.
    Participant(ParticipantEvent),
    /// The machine loaded a state the participant handed it (`jump`: it went on from there
    /// rather than re-running its own frames).
    Loaded { frame: Frame, jump: bool },
}

/// What [`ParticipantFeed::poll`] gives the frame loop.
pub enum Polled {
    /// No more frames: the session ended and its last frames ran, or `--frames` was reached.
    End,
    /// The next frame to run, and everyone's inputs for it.
    Run(Frame, Inputs),
    /// No frame is ready.
    Wait,
}

/// The frame side of this process's participant; see the module head.
pub struct ParticipantFeed {
    pub participant: Participant,
    shared: Shared,
    bot: Option<Bot>,
    /// The local players' pad as last sampled (keyboard, gamepads); the bot's pad is added
    /// to it per frame.
    keys: Pad,
    /// The frame this peer's machine started from (0, or a late start state's).
    first: u32,
    /// The session frame at which this peer stops (`--frames`).
    end_at: Option<u64>,
    /// Why the session ended, once it has.
    end: Option<SessionError>,
    /// States the machine was asked to load and has not yet: (frame, a jump).
    loads: Vec<(Frame, bool)>,
    events: VecDeque<FeedEvent>,
    /// `--delay` for speculation.
    pub delay: Delay,
    /// Rollbacks the runner made (speculation).
    pub rollbacks: u64,
}

impl ParticipantFeed {
    /// The feed of `participant`; its machine starts at the client's frame (a late start
    /// state's), or 0 before it has one.
    pub fn new(participant: Participant, bot: Option<Bot>) -> ParticipantFeed {
        let first = participant.client().map_or(0, |c| c.frame().0);
        ParticipantFeed {
            participant,
            shared: Shared::default(),
            bot,
            keys: Pad::NEUTRAL,
            first,
            end_at: None,
            end: None,
            loads: Vec::new(),
            events: VecDeque::new(),
            delay: Delay::default(),
            rollbacks: 0,
        }
    }

    /// The exchange with the frame observer (the machine's work, recording events).
    pub fn shared(&self) -> Shared {
        self.shared.clone()
    }

    /// The session frame the machine starts from.
    pub fn first(&self) -> u32 {
        self.first
    }

    /// The machine starts from session frame `first` (a joiner's start state, loaded after
    /// the feed was made; the simulated world's joiners).
    #[cfg(test)]
    pub fn set_first(&mut self, first: u32) {
        self.first = first;
    }

    /// Stops before session frame `frame` (`--frames`).
    pub fn end_at(&mut self, frame: u64) {
        self.end_at = Some(frame);
    }

    /// Why the session ended, if it did.
    pub fn end(&self) -> Option<&SessionError> {
        self.end.as_ref()
    }

    /// The local players' pad, as sampled.
    pub fn set_keys(&mut self, keys: Pad) {
        self.keys = keys;
    }

    /// The next thing to word or keep, if any.
    pub fn poll_event(&mut self) -> Option<FeedEvent> {
        self.events.pop_front()
    }

    /// Takes the participant's events: the machine's work goes to the observer, the end is
    /// kept, and everything else waits in [`poll_event`](Self::poll_event).
    pub fn handle_events(&mut self) {
        while let Some(ev) = self.participant.poll_event() {
            match ev {
                ParticipantEvent::Core(req) => {
                    if let CoreRequest::Load { frame, jump, .. } = &req {
                        self.loads.push((*frame, *jump));
                    }
                    lock(&self.shared).requests.push_back(req);
                }
                ev => {
                    if let ParticipantEvent::Ended(e) = &ev {
                        self.end.get_or_insert_with(|| e.clone());
                    }
                    self.events.push_back(FeedEvent::Participant(ev));
                }
            }
        }
    }

    /// Hands the machine's answers to the participant.
    pub fn take_replies(&mut self, now: Instant) {
        let replies = std::mem::take(&mut lock(&self.shared).replies);
        for reply in replies {
            if let CoreReply::Loaded { frame } = &reply {
                if let Some(i) = self.loads.iter().position(|(f, _)| f == frame) {
                    let (frame, jump) = self.loads.remove(i);
                    self.events.push_back(FeedEvent::Loaded { frame, jump });
                }
            }
            self.participant.handle_core(now, reply);
        }
    }

    /// The sampled keys plus the bot's pad for the client's current frame (the bot answers
    /// a repeated frame with the same pad). While the client holds samples ahead of its
    /// frames (taken while it waited, see `Client::push_local_input`), the bot keeps its pad,
    /// as a held key does: deciding anew for each frame caught up would add a change sample
    /// per decision and put this player's input further ahead of its frames.
    fn local_pad(&mut self) -> Pad {
        let mut pad = self.keys;
        let Some(client) = self.participant.client() else {
            return pad;
        };
        let (wants, frame) = (client.wants_input(), client.frame());
        if let Some(bot) = &mut self.bot {
            let held = bot.last().filter(|_| !wants);
            pad.0 |= held.unwrap_or_else(|| bot.next(u64::from(frame.0))).0;
        }
        pad
    }

    /// The frame loop asks for the next frame: hands in this player's pad and takes the
    /// next frame the participant allows, then the events that raised (what the frame asked
    /// of the machine, a checksum, goes out with it once the owner sends).
    pub fn poll(&mut self, now: Instant) -> Polled {
        let ready = self.participant.client().map_or(0, |c| c.ready_frames());
        // After the host's goodbye, the frames it sent before are still played: a host that
        // reached its frame limit leaves once every joiner has them.
        if self.end.is_some() && ready == 0 {
            return Polled::End;
        }
        let frame = self.participant.client().map_or(0, |c| c.frame().0);
        if self.end_at.is_some_and(|end| u64::from(frame) >= end) {
            return Polled::End;
        }
        // A bot decides per frame, even when several frames run in one tick.
        let pad = self.local_pad();
        self.participant.push_local_input(now, pad);
        let frame = self.participant.poll_frame();
        self.handle_events();
        match frame {
            Some((frame, inputs)) => Polled::Run(frame, inputs),
            None => Polled::Wait,
        }
    }

    /// Speculation: fills `out` with guesses of up to `max` frames ahead (see
    /// `Client::predict`); the delay it used in frames, if there is a client.
    pub fn predict(&self, max: u32, out: &mut Vec<Inputs>) -> Option<u32> {
        let c = self.participant.client()?;
        let delay = self.delay.frames(c.rtt_var(), c.config().fps);
        c.predict(max, delay, out);
        Some(delay)
    }
}

impl Feed for ParticipantFeed {
    fn sample(&mut self, now: Instant, local: &Inputs) {
        self.participant.frame_loop_alive(now);
        self.keys = local[0];
    }

    fn next(&mut self, now: Instant) -> FeedPoll {
        self.take_replies(now);
        match self.poll(now) {
            Polled::End => FeedPoll::End,
            Polled::Run(_, inputs) => FeedPoll::Run(inputs),
            Polled::Wait => FeedPoll::Wait(None),
        }
    }

    fn pace(&self) -> Option<f64> {
        self.participant.client().map(|c| c.pace())
    }

    fn paused(&self) -> bool {
        self.participant.client().is_some_and(|c| c.at_pause())
    }

    fn pause_in_force(&self) -> bool {
        self.participant
            .client()
            .is_some_and(|c| c.paused().is_some())
    }

    /// A player asks the session's server (see `lockstep::Client::request_pause`); a
    /// spectator cannot pause, and is told so.
    fn request_pause(&mut self, pause: Option<bool>) -> bool {
        let Some(client) = self.participant.client_mut() else {
            return true;
        };
        if client.is_spectator() {
            tracing::info!("netplay: a spectator cannot pause the game");
            return true;
        }
        let pause = pause.unwrap_or(client.paused().is_none());
        client.request_pause(pause);
        true
    }

    fn take_behind(&mut self) -> Option<Duration> {
        // A late starter catches up by its backlog instead (see `backlog`), and a client
        // paced by the frames' arrival has no clock of the host's to keep.
        let first = self.first;
        let client = self.participant.client_mut()?;
        if first > 0 || client.paced_by_arrival() {
            return None;
        }
        client.take_start_delay()
    }

    fn backlog(&mut self) -> u32 {
        self.participant.client_mut().map_or(0, |c| c.backlog())
    }

    fn paced_by_arrival(&self) -> bool {
        self.participant
            .client()
            .is_some_and(|c| c.paced_by_arrival())
    }

    fn predict(&mut self, max: u32, out: &mut Vec<Inputs>) {
        ParticipantFeed::predict(self, max, out);
    }

    fn displayed(&mut self, now: Instant, head: u64, _depth: u32) {
        let head = Frame(self.first.saturating_add(head as u32));
        if let Some(c) = self.participant.client_mut() {
            c.shown(now, head);
        }
    }

    fn rolled_back(&mut self, _frames: u32) {
        self.rollbacks += 1;
    }
}
