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
                        toy.history.clear();
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
                let rerun: Vec<Inputs> = toy
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

impl FrameObserver<Toy> for CoreSide {
    fn after_frame(&mut self, frame: u64, _: &Inputs, toy: &mut Toy) -> Result<(), ObserverError> {
        self.work(toy, frame + 1, true);
        Ok(())
    }
    fn idle(&mut self, next: u64, toy: &mut Toy) -> Result<(), ObserverError> {
        self.work(toy, next, false);
        Ok(())
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
        };
        let work = feed.work.clone();
        let cfg = RunnerConfig {
            // A player never drops a backlog (as netplay runs it).
            max_lag: Duration::MAX,
            ..RunnerConfig::default()
        };
        let mut runner = Runner::with_clock(feed, cfg, WorldClock(self.clock.clone()));
        runner.observe(Box::new(CoreSide {
            work,
            log: log.clone(),
        }));
        runner
    }
}
