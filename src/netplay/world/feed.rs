//! A node's frame loop: the runner over the feed and the core side that ship
//! (`netplay::feed::ParticipantFeed`, `netplay::CoreSide`), on the world's clock and the toy
//! machine. Imports the world's clock and the toy; nothing of the world's network, server or
//! rooms.

use std::time::Duration;

use crate::app::{Runner, RunnerConfig};
use crate::input::Bot;
use crate::netplay::core_side::CoreSide;
use crate::netplay::feed::ParticipantFeed;
use crate::session::Participant;

use super::node_log::NodeLog;
use super::{Toy, World, WorldClock};

/// A node's runner.
pub type NodeRunner = Runner<Toy, ParticipantFeed, WorldClock>;

/// Starts a node's machine at session frame `first` from `state` (`None`: power-on): the
/// observer that does what the participant asks of the machine, then the recording's, as
/// netplay registers them.
pub fn start(runner: &mut NodeRunner, log: &NodeLog, first: u32, state: Option<Vec<u8>>) {
    let recorder = log.begin(first, state);
    runner.feed_mut().set_first(first);
    let shared = runner.feed().shared();
    runner.observe(Box::new(CoreSide::new(
        shared,
        log.recording(),
        u64::from(first),
    )));
    runner.observe(recorder);
}

impl World {
    pub(super) fn runner(&self, participant: Participant, seed: u64) -> NodeRunner {
        let bot = self.bots.then(|| Bot::new(seed));
        let mut feed = ParticipantFeed::new(participant, bot);
        feed.end_at(u64::from(self.frames));
        let cfg = RunnerConfig {
            // A player never drops a backlog (as netplay runs it).
            max_lag: Duration::MAX,
            run_ahead: self.speculate,
            ..RunnerConfig::default()
        };
        Runner::with_clock(feed, cfg, WorldClock(self.clock.clone()))
    }
}
