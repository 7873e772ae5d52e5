//! A node's frame loop: its feed ([`SimFeed`], the participant as `netplay::NetFeed` drives
//! one), the frame observer that does what the participant asks of the toy machine
//! (`CoreSide`, as `netplay::CoreSide`), the work passed between the two, and the runner
//! made of them on the world's clock. Imports the world's clock and the toy; nothing of the
//! world's network, server or rooms.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::app::{Feed, FeedPoll, FrameObserver, Machine, ObserverError, Runner, RunnerConfig};
use crate::input::{Bot, Inputs};
use crate::lockstep::Frame;
use crate::session::{CoreReply, CoreRequest, Participant, ParticipantEvent};

use super::super::world_log::NodeLog;
use super::{Toy, World, WorldClock};

/// Requests and replies between the feed and the machine's observer, as `CoreWork` in the
/// real driver.
#[derive(Default)]
struct Work {
    requests: VecDeque<CoreRequest>,
    replies: Vec<CoreReply>,
    pending: Option<(u32, Vec<u8>)>,
}

/// The frame observer: does what the participant asks of the machine, and records where its
/// state was replaced (before the recording's observer sees the frame, as netplay does).
struct CoreSide {
    work: Rc<RefCell<Work>>,
    log: NodeLog,
    /// `(session frame, inputs)` of the frames that counted lately (a speculating toy also
    /// ran frames that did not).
    history: VecDeque<(u32, Inputs)>,
    /// The session frame of the next frame that counts, once one ran on the machine.
    next: Option<u32>,
}

impl CoreSide {
    /// `next`: the runner's next frame; `ran`: a frame just ran.
    fn work(&mut self, toy: &mut Toy, next: u64, ran: bool) {
        let mut w = self.work.borrow_mut();
        let requests: Vec<_> = w.requests.drain(..).collect();
        for req in requests {
            match req {
                CoreRequest::Checksum { frame } if ran => {
                    let checksum = toy.hash_after(frame.0).unwrap_or(toy.hash);
                    w.replies.push(CoreReply::Checksum { frame, checksum });
                }
                CoreRequest::SaveState { for_slots } => w.replies.push(CoreReply::State {
                    frame: Frame(toy.frame),
                    state: toy.state(),
                    for_slots,
                }),
                CoreRequest::Load {
                    frame,
                    state,
                    jump: true,
                    ..
                } => {
                    if toy.restore(&state) {
                        self.history.clear();
                        self.next = Some(toy.frame);
                        self.log.resync(next, toy);
                        w.replies.push(CoreReply::Loaded { frame });
                    }
                }
                CoreRequest::Load { frame, state, .. } => w.pending = Some((frame.0, state)),
                other => w.requests.push_back(other),
            }
        }
        if let Some((at, state)) = w.pending.take() {
            if at <= toy.frame {
                let rerun: Vec<Inputs> = self
                    .history
                    .iter()
                    .filter(|(f, _)| *f >= at)
                    .map(|(_, i)| *i)
                    .collect();
                let now_at = toy.frame;
                toy.restore(&state);
                for inputs in rerun {
                    toy.run_frame(&inputs);
                }
                debug_assert_eq!(toy.frame, now_at);
                self.log.resync(next, toy);
                w.replies.push(CoreReply::Loaded { frame: Frame(at) });
            } else {
                w.pending = Some((at, state));
            }
        }
    }
}

impl CoreSide {
    /// Anything asked of the machine, as `netplay::CoreSide::has_work`.
    fn has_work(&self, at: u32, ran: bool) -> bool {
        let w = self.work.borrow();
        w.pending.as_ref().is_some_and(|(f, _)| *f <= at)
            || w.requests.iter().any(|r| match r {
                CoreRequest::Checksum { .. } => ran,
                CoreRequest::SaveState { .. } | CoreRequest::Load { .. } => true,
            })
    }

    fn push_history(&mut self, frame: u32, inputs: &Inputs) {
        self.history.push_back((frame, *inputs));
        if self.history.len() > 600 {
            self.history.pop_front();
        }
    }
}

impl FrameObserver<Toy> for CoreSide {
    fn after_frame(
        &mut self,
        frame: u64,
        inputs: &Inputs,
        toy: &mut Toy,
    ) -> Result<(), ObserverError> {
        self.push_history(toy.frame - 1, inputs);
        self.next = Some(toy.frame);
        self.work(toy, frame + 1, true);
        Ok(())
    }
    fn needs_machine(&mut self, _frame: u64) -> bool {
        self.has_work(u32::MAX, true)
    }
    fn after_frame_ahead(&mut self, _frame: u64, inputs: &Inputs) -> Result<(), ObserverError> {
        if let Some(at) = self.next {
            self.push_history(at, inputs);
            self.next = Some(at + 1);
        }
        Ok(())
    }
    fn idle(&mut self, next: u64, toy: &mut Toy) -> Result<(), ObserverError> {
        self.work(toy, next, false);
        Ok(())
    }
    fn idle_needs_machine(&mut self, _next: u64) -> bool {
        self.has_work(u32::MAX, false)
    }
}

/// The feed of a simulated player: its participant, as `netplay::NetFeed` drives one.
pub struct SimFeed {
    pub participant: Participant,
    bot: Bot,
    work: Rc<RefCell<Work>>,
    /// Every event the participant raised, with when.
    pub events: Vec<(Instant, ParticipantEvent)>,
    pub ended: bool,
    /// The frame to stop before.
    pub end_at: u32,
    /// Its bot presses buttons (else the pad rests).
    plays: bool,
    /// The session frame its machine started at (runner frame 0).
    pub first: u32,
    /// Rollbacks, and the frames they ran again (speculation).
    pub rollbacks: Vec<u32>,
}

impl SimFeed {
    pub(super) fn take_events(&mut self, now: Instant) {
        while let Some(ev) = self.participant.poll_event() {
            match ev {
                ParticipantEvent::Core(req) => self.work.borrow_mut().requests.push_back(req),
                ParticipantEvent::Ended(_) => {
                    self.ended = true;
                    self.events.push((now, ev));
                }
                ev => self.events.push((now, ev)),
            }
        }
    }
}

impl Feed for SimFeed {
    fn sample(&mut self, now: Instant, _: &Inputs) {
        self.participant.frame_loop_alive(now);
    }

    fn next(&mut self, now: Instant) -> FeedPoll {
        for reply in std::mem::take(&mut self.work.borrow_mut().replies) {
            self.participant.handle_core(now, reply);
        }
        let Some(client) = self.participant.client() else {
            return FeedPoll::Wait(None);
        };
        if self.ended && client.ready_frames() == 0 || client.frame().0 >= self.end_at {
            return FeedPoll::End;
        }
        let (wants, frame) = (client.wants_input(), client.frame());
        let pad = match self.bot.last().filter(|_| !wants) {
            _ if !self.plays => crate::input::Pad::NEUTRAL,
            Some(p) => p,
            None => self.bot.next(u64::from(frame.0)),
        };
        self.participant.push_local_input(now, pad);
        let polled = self.participant.poll_frame();
        self.take_events(now);
        match polled {
            Some((_, inputs)) => FeedPoll::Run(inputs),
            None => FeedPoll::Wait(None),
        }
    }

    fn pace(&self) -> Option<f64> {
        self.participant.client().map(|c| c.pace())
    }

    fn take_behind(&mut self) -> Option<Duration> {
        let client = self.participant.client_mut()?;
        if client.frame().0 > 0 && client.paced_by_arrival() {
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

    fn paused(&self) -> bool {
        self.participant.client().is_some_and(|c| c.at_pause())
    }

    fn predict(&mut self, max: u32, out: &mut Vec<Inputs>) {
        if let Some(c) = self.participant.client() {
            c.predict(max, 0, out);
        }
    }

    fn displayed(&mut self, now: Instant, head: u64, _depth: u32) {
        let first = self.first;
        if let Some(c) = self.participant.client_mut() {
            c.shown(now, Frame(first + head as u32));
        }
    }

    fn rolled_back(&mut self, frames: u32) {
        self.rollbacks.push(frames);
    }
}

impl World {
    pub(super) fn runner(
        &self,
        participant: Participant,
        seed: u64,
        log: &NodeLog,
    ) -> Runner<Toy, SimFeed, WorldClock> {
        let feed = SimFeed {
            participant,
            bot: Bot::new(seed),
            work: Rc::default(),
            events: Vec::new(),
            ended: false,
            end_at: self.frames,
            plays: self.bots,
            rollbacks: Vec::new(),
            first: 0,
        };
        let work = feed.work.clone();
        let cfg = RunnerConfig {
            // A player never drops a backlog (as netplay runs it).
            max_lag: Duration::MAX,
            run_ahead: self.speculate,
            ..RunnerConfig::default()
        };
        let mut runner = Runner::with_clock(feed, cfg, WorldClock(self.clock.clone()));
        runner.observe(Box::new(CoreSide {
            work,
            log: log.clone(),
            history: VecDeque::new(),
            next: None,
        }));
        runner
    }
}
