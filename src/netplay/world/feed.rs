//! A node's frame loop: the frame observer that does what the participant asks of the toy
//! machine (`CoreSide`, as `netplay::CoreSide`), and the runner made of it and the feed that
//! ships (`netplay::feed::ParticipantFeed`) on the world's clock. Imports the world's clock
//! and the toy; nothing of the world's network, server or rooms.

use std::collections::VecDeque;
use std::time::Duration;

use crate::app::{FrameObserver, Machine, ObserverError, Runner, RunnerConfig};
use crate::input::{Bot, Inputs};
use crate::lockstep::Frame;
use crate::netplay::feed::{lock, CoreWork, ParticipantFeed, Shared};
use crate::session::{CoreReply, CoreRequest, Participant};

use super::super::world_log::NodeLog;
use super::{Toy, World, WorldClock};

/// Frames kept to replay after loading an older state, as `netplay::CoreSide` keeps.
const HISTORY: usize = 600;

/// The frame observer: does what the participant asks of the machine, and records where its
/// state was replaced (before the recording's observer sees the frame, as netplay does).
/// Its rules are `netplay::CoreSide`'s: a state is saved right after a frame ran (or at
/// once for a joiner that waits for it), and a state older than the input history is
/// refused.
struct CoreSide {
    shared: Shared,
    log: NodeLog,
    /// `(session frame, inputs)` of the frames that counted lately (a speculating toy also
    /// ran frames that did not).
    history: VecDeque<(u32, Inputs)>,
    /// The session frame of the next frame that counts, once one ran on the machine.
    next: Option<u32>,
    /// A desync recovery's state for a frame this machine has not reached yet.
    pending: Option<(u32, Vec<u8>)>,
}

impl CoreSide {
    /// `next`: the runner's next frame; `ran`: a frame just ran.
    fn work(&mut self, toy: &mut Toy, next: u64, ran: bool) {
        let requests: Vec<_> = lock(&self.shared).requests.drain(..).collect();
        let mut keep = VecDeque::new();
        let mut replies = Vec::new();
        for req in requests {
            match req {
                CoreRequest::Checksum { frame } if ran => {
                    let checksum = toy.hash_after(frame.0).unwrap_or(toy.hash);
                    replies.push(CoreReply::Checksum { frame, checksum });
                }
                CoreRequest::SaveState { for_slots } if ran || !for_slots.is_empty() => replies
                    .push(CoreReply::State {
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
                        replies.push(CoreReply::Loaded { frame });
                    }
                }
                CoreRequest::Load { frame, state, .. } => self.pending = Some((frame.0, state)),
                other => keep.push_back(other),
            }
        }
        if let Some((at, state)) = self.pending.take() {
            if at <= toy.frame {
                if self.load(toy, at, &state) {
                    self.log.resync(next, toy);
                    replies.push(CoreReply::Loaded { frame: Frame(at) });
                }
            } else {
                self.pending = Some((at, state));
            }
        }
        let mut shared = lock(&self.shared);
        shared.requests.extend(keep);
        shared.replies.extend(replies);
    }

    /// Loads the state at the start of session frame `at` and runs the toy's frames since
    /// again; false if the history does not reach back that far.
    fn load(&mut self, toy: &mut Toy, at: u32, state: &[u8]) -> bool {
        let oldest = self.history.front().map_or(toy.frame, |(f, _)| *f);
        if at < oldest {
            return false;
        }
        let rerun: Vec<Inputs> = self
            .history
            .iter()
            .filter(|(f, _)| *f >= at)
            .map(|(_, i)| *i)
            .collect();
        let now_at = toy.frame;
        toy.restore(state);
        for inputs in rerun {
            toy.run_frame(&inputs);
        }
        debug_assert_eq!(toy.frame, now_at);
        true
    }

    /// Anything asked of the machine, as `netplay::CoreSide::has_work`.
    fn has_work(&self, ran: bool) -> bool {
        let w: &CoreWork = &lock(&self.shared);
        self.pending.is_some()
            || w.requests.iter().any(|r| match r {
                CoreRequest::Checksum { .. } => ran,
                CoreRequest::SaveState { for_slots } => ran || !for_slots.is_empty(),
                CoreRequest::Load { .. } => true,
            })
    }

    fn push_history(&mut self, frame: u32, inputs: &Inputs) {
        self.history.push_back((frame, *inputs));
        if self.history.len() > HISTORY {
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
        self.has_work(true)
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
        self.has_work(false)
    }
}

impl World {
    pub(super) fn runner(
        &self,
        participant: Participant,
        seed: u64,
        log: &NodeLog,
    ) -> Runner<Toy, ParticipantFeed, WorldClock> {
        let bot = self.bots.then(|| Bot::new(seed));
        let mut feed = ParticipantFeed::new(participant, bot);
        feed.end_at(u64::from(self.frames));
        let shared = feed.shared();
        let cfg = RunnerConfig {
            // A player never drops a backlog (as netplay runs it).
            max_lag: Duration::MAX,
            run_ahead: self.speculate,
            ..RunnerConfig::default()
        };
        let mut runner = Runner::with_clock(feed, cfg, WorldClock(self.clock.clone()));
        runner.observe(Box::new(CoreSide {
            shared,
            log: log.clone(),
            history: VecDeque::new(),
            next: None,
            pending: None,
        }));
        runner
    }
}
