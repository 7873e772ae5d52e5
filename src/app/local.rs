//! The feed for local play: keyboard and gamepads as sampled, plus optional bots.

use std::time::Instant;

use serde_json::{json, Map, Value};

use super::runner::{Feed, FeedPoll};
use crate::input::{Bot, BotSpec, Button, Inputs, Pad, MAX_PLAYERS};

/// Runs every frame at once with the latest local pads; bots press on top (OR) of them.
/// Never stalls and never ends (the runner's frame limit or the user ends the run).
#[derive(Default)]
pub struct LocalFeed {
    latest: Inputs,
    bots: Vec<(usize, Bot)>,
    frame: u64,
    /// The inputs of the last frame run: what run-ahead expects to stay held.
    last: Inputs,
    /// Test hook: buttons pressed on port 1 for one frame each.
    taps: Vec<(u64, Button)>,
}

impl LocalFeed {
    pub fn new() -> LocalFeed {
        LocalFeed::default()
    }

    /// Presses each `(frame, button)` on port 1 for that one frame (the `--tap` test hook).
    pub fn with_taps(mut self, taps: &[(u64, Button)]) -> LocalFeed {
        self.taps = taps.to_vec();
        self
    }

    /// Adds a bot on `port` (0-based). Its pads depend only on its seed, port and the frame
    /// number, so a bot-only run is reproducible.
    pub fn with_bot(self, port: usize, seed: u64) -> LocalFeed {
        self.with_bot_spec(port, BotSpec { seed, human: false })
    }

    /// Adds the bot `spec` on `port` (`--bot SEED[:human]`).
    pub fn with_bot_spec(mut self, port: usize, spec: BotSpec) -> LocalFeed {
        if port < MAX_PLAYERS {
            self.bots.push((port, spec.bot(port)));
        }
        self
    }
}

impl Feed for LocalFeed {
    fn sample(&mut self, _now: Instant, local: &Inputs) {
        self.latest = *local;
    }

    fn next(&mut self, _now: Instant) -> FeedPoll {
        let mut inputs = self.latest;
        for (port, bot) in &mut self.bots {
            let Pad(bits) = bot.next(self.frame);
            inputs[*port].0 |= bits;
        }
        for (_, button) in self.taps.iter().filter(|(f, _)| *f == self.frame) {
            inputs[0] = inputs[0].with(*button);
        }
        self.frame += 1;
        self.last = inputs;
        FeedPoll::Run(inputs)
    }

    /// Run-ahead (`play --run-ahead N`): the pads stay as they are for N more frames.
    fn predict(&mut self, max: u32, out: &mut Vec<Inputs>) {
        out.extend(std::iter::repeat_n(self.last, max as usize));
    }

    fn stats(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("kind".into(), json!("local"));
        m.insert("bots".into(), json!(self.bots.len()));
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bot_and_local_pads_are_merged() {
        let now = Instant::now();
        let mut feed = LocalFeed::new().with_bot(0, 5);
        let mut bot = Bot::new(5);
        let mut local = [Pad::NEUTRAL; MAX_PLAYERS];
        local[0] = Pad::NEUTRAL.with(Button::L2);
        local[1] = Pad::NEUTRAL.with(Button::A);
        for f in 0..100 {
            feed.sample(now, &local);
            let FeedPoll::Run(inputs) = feed.next(now) else {
                panic!("local feed stalled");
            };
            assert_eq!(inputs[0].0, bot.next(f).0 | local[0].0);
            assert_eq!(inputs[1], local[1]);
            assert_eq!(inputs[2], Pad::NEUTRAL);
        }
    }
}
