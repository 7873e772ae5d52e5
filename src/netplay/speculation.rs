//! Speculation (rollback) as netplay runs it: `--speculate` (how far a player's picture may
//! run ahead of the frames everyone agreed on), `--delay` (how many frames later a player's
//! own presses show, for fewer and shorter rollbacks), the rollback check a core passes
//! first (`app::rollback_check`, kept in the cache directory), and what the status bar
//! says of it. Spectators never speculate. Must not import the lobby or the feed.

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::app::rollback_check::{self, Check, CheckKey, Verdict};
use crate::app::sync_test::Checksummed;
use crate::app::Costs;
use crate::host::Core;

/// The most frames `--speculate auto` runs ahead (one second): it goes as far as the lead
/// needs within what a rollback through that many frames costs on this machine.
pub const AUTO_MAX: u32 = 60;
/// The most `--delay` takes.
pub const DELAY_MAX: u32 = 8;

/// `--speculate`: how far ahead of the agreed frames a player's picture runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Speculate {
    Off,
    #[default]
    Auto,
    Frames(u32),
}

impl Speculate {
    /// The most frames to run ahead (0: off).
    pub fn depth(self) -> u32 {
        match self {
            Speculate::Off => 0,
            Speculate::Auto => AUTO_MAX,
            Speculate::Frames(n) => n,
        }
    }
}

impl std::str::FromStr for Speculate {
    type Err = String;

    fn from_str(s: &str) -> Result<Speculate, String> {
        match s {
            "off" | "0" => Ok(Speculate::Off),
            "auto" => Ok(Speculate::Auto),
            n => match n.parse::<u32>() {
                Ok(n) if (1..=AUTO_MAX).contains(&n) => Ok(Speculate::Frames(n)),
                _ => Err(format!(
                    "{n:?}: expected off, auto or a number of frames, 1 to {AUTO_MAX}"
                )),
            },
        }
    }
}

/// `--delay`: frames between a press and the picture that shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delay {
    Frames(u32),
    /// From the link's jitter (see [`Delay::frames`]).
    Auto,
}

impl Default for Delay {
    fn default() -> Self {
        Delay::Frames(0)
    }
}

impl Delay {
    /// The delay in frames now: as given, or for `auto` the round trip's mean deviation in
    /// frame periods, rounded (a jittery link's inputs come late more often, so guesses
    /// about them are wrong more often; each frame of delay is a frame less to guess).
    pub fn frames(self, rtt_var: Duration, fps: f64) -> u32 {
        match self {
            Delay::Frames(n) => n,
            Delay::Auto => {
                let frames = rtt_var.as_secs_f64() * fps.clamp(1.0, 240.0);
                (frames.round() as u32).min(DELAY_MAX)
            }
        }
    }
}

impl std::str::FromStr for Delay {
    type Err = String;

    fn from_str(s: &str) -> Result<Delay, String> {
        match s {
            "auto" => Ok(Delay::Auto),
            n => match n.parse::<u32>() {
                Ok(n) if n <= DELAY_MAX => Ok(Delay::Frames(n)),
                _ => Err(format!(
                    "{n:?}: expected auto or a number of frames, 0 to {DELAY_MAX}"
                )),
            },
        }
    }
}

/// What the session runs with, once the rollback check had its say.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decision {
    /// Frames to run ahead at most (0: plain lockstep).
    pub depth: u32,
    /// What a frame, a save and a load cost, as the check measured.
    pub costs: Option<Costs>,
    /// Why this session plays plain lockstep though speculation was asked for.
    pub off: Option<String>,
}

/// Wall time the check may take per lobby round, so the lobby answers its peers promptly.
const SLICE: Duration = Duration::from_millis(8);

/// The rollback check as a lobby runs it: found in the cache, or run in slices.
pub struct RollbackCheck {
    want: Speculate,
    core_name: String,
    key: Option<(CheckKey, std::path::PathBuf)>,
    check: Option<Check>,
    verdict: Option<Verdict>,
    fps: f64,
}

impl RollbackCheck {
    /// The check for `core`'s game, unless `want` is off or this is a spectator; a cached
    /// verdict from `cache_dir` makes it done at once.
    pub fn begin(core: &Core, want: Speculate, spectator: bool, cache_dir: &Path) -> Self {
        let info = core.info();
        let mut version = info.library_version.clone();
        if core.ignores_loads() {
            // A test hook makes it another core: its verdict is not the real one's.
            version.push_str(" (ignoring loads)");
        }
        let key = CheckKey {
            core: info.library_name.clone(),
            version,
            content: core.content_hash(),
        };
        let want = if spectator { Speculate::Off } else { want };
        RollbackCheck::for_key(key, core.av_info().fps, want, cache_dir)
    }

    /// The check for the game `key` names, on a machine running at `fps`.
    pub fn for_key(key: CheckKey, fps: f64, want: Speculate, cache_dir: &Path) -> Self {
        let mut me = RollbackCheck {
            want,
            core_name: key.core.clone(),
            key: None,
            check: None,
            verdict: None,
            fps,
        };
        if me.want == Speculate::Off {
            return me;
        }
        match rollback_check::cached(cache_dir, &key) {
            Some(v) => {
                tracing::debug!(
                    "netplay: {}'s rollback check for this game is in the cache",
                    me.core_name
                );
                me.verdict = Some(v);
            }
            None => {
                tracing::info!(
                    "netplay: checking that {} can roll back with this game (once per core \
                     version and game; {} frames)",
                    me.core_name,
                    rollback_check::FRAMES
                );
                me.check = Some(Check::new(rollback_check::FRAMES));
                me.key = Some((key, cache_dir.to_path_buf()));
            }
        }
        me
    }

    /// Whether the check is still running.
    pub fn running(&self) -> bool {
        self.check.is_some()
    }

    /// Runs a slice of the check (a lobby round's worth).
    pub fn step<M: Checksummed>(&mut self, core: &mut M) {
        self.run(core, SLICE);
    }

    fn run<M: Checksummed>(&mut self, core: &mut M, budget: Duration) {
        let Some(check) = self.check.as_mut() else {
            return;
        };
        if let Some(verdict) = check.step(core, budget) {
            self.check = None;
            if let Some((key, dir)) = self.key.take() {
                rollback_check::store(&dir, &key, &verdict);
            }
            self.verdict = Some(verdict);
        }
    }

    /// A line for the lobby screen.
    pub fn line(&self) -> Option<String> {
        if self.want == Speculate::Off {
            return None;
        }
        Some(match (&self.check, &self.verdict) {
            (Some(_), _) => format!("Rollback: checking {} with this game...", self.core_name),
            (None, Some(Verdict { passed: Ok(()), .. })) => {
                "Rollback: on (your input shows at once)".to_string()
            }
            (None, Some(Verdict { passed: Err(_), .. })) => format!(
                "Rollback: off, {} failed the rollback check: plain lockstep",
                self.core_name
            ),
            (None, None) => return None,
        })
    }

    /// Finishes the check (at once, if the lobby ended first) and decides; said once in
    /// the log.
    pub fn finish<M: Checksummed>(mut self, core: &mut M) -> Decision {
        self.run(core, Duration::from_secs(3600));
        let Some(verdict) = self.verdict else {
            return Decision::default();
        };
        if let Err(why) = verdict.passed {
            tracing::warn!(
                "netplay: {} failed the rollback check ({why}); playing plain lockstep \
                 (this session's input shows a round trip late)",
                self.core_name
            );
            return Decision {
                depth: 0,
                costs: None,
                off: Some(format!("{} failed the rollback check", self.core_name)),
            };
        }
        // The depth is a cap: the runner keeps measuring, and runs as deep as a rollback
        // through that many frames fits a frame's time (the check's costs only start it).
        let depth = self.want.depth();
        let period = Duration::from_secs_f64(1.0 / self.fps.clamp(1.0, 240.0));
        let fits = verdict
            .affordable(period.mul_f64(0.8))
            .map_or(depth, |n| n.clamp(1, depth));
        let ms = |d: Option<Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1e3);
        tracing::info!(
            "netplay: rollback on, up to {depth} frame(s) ahead; about {fits} fit a frame's \
             time here (a frame takes {:.2} ms, a save {:.2} ms, a load {:.2} ms)",
            ms(verdict.costs.run),
            ms(verdict.costs.save),
            ms(verdict.costs.load)
        );
        Decision {
            depth,
            costs: Some(verdict.costs),
            off: None,
        }
    }
}

/// What the status bar shows of speculation, kept by the feed.
#[derive(Clone, Debug, Default)]
pub struct Shown {
    /// `--delay`, and the frames it means now.
    pub delay: Delay,
    pub delay_now: u32,
    /// Speculation runs (a player, a core that passed).
    pub on: bool,
    /// Frames the last picture ran ahead of the last frame that counts.
    pub ahead: Option<u32>,
    /// When each rollback of the last few seconds happened.
    rollbacks: VecDeque<Instant>,
    /// Why speculation is off for this session, if it was asked for and is not on.
    pub off: Option<String>,
}

/// Rollbacks are counted over this window for the status bar.
const RATE_WINDOW: Duration = Duration::from_secs(5);

impl Shown {
    pub fn rolled_back(&mut self, now: Instant) {
        self.rollbacks.push_back(now);
        while self
            .rollbacks
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) > RATE_WINDOW)
        {
            self.rollbacks.pop_front();
        }
    }

    /// Rollbacks a second over the last few seconds.
    pub fn rollbacks_per_s(&self, now: Instant) -> f64 {
        let n = self
            .rollbacks
            .iter()
            .filter(|t| now.saturating_duration_since(**t) <= RATE_WINDOW)
            .count();
        n as f64 / RATE_WINDOW.as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_with_errors_that_say_what_is_expected() {
        assert_eq!("auto".parse(), Ok(Speculate::Auto));
        assert_eq!("off".parse(), Ok(Speculate::Off));
        assert_eq!("24".parse(), Ok(Speculate::Frames(24)));
        let e = "61".parse::<Speculate>().unwrap_err();
        assert!(e.contains("1 to 60"), "{e}");
        assert_eq!("3".parse(), Ok(Delay::Frames(3)));
        assert_eq!("auto".parse(), Ok(Delay::Auto));
        let e = "9".parse::<Delay>().unwrap_err();
        assert!(e.contains("0 to 8"), "{e}");
        assert_eq!(Speculate::default(), Speculate::Auto);
        assert_eq!(Delay::default(), Delay::Frames(0));
    }

    #[test]
    fn auto_delay_follows_the_jitter() {
        let ms = Duration::from_millis;
        assert_eq!(Delay::Auto.frames(ms(2), 60.0), 0);
        assert_eq!(Delay::Auto.frames(ms(13), 60.0), 1);
        assert_eq!(Delay::Auto.frames(ms(40), 60.0), 2);
        assert_eq!(Delay::Auto.frames(ms(900), 60.0), DELAY_MAX);
        assert_eq!(Delay::Frames(3).frames(ms(900), 60.0), 3);
    }

    #[test]
    fn rollbacks_are_counted_per_second_over_a_few_seconds() {
        let t0 = Instant::now();
        let mut s = Shown::default();
        for i in 0..20 {
            s.rolled_back(t0 + Duration::from_millis(100 * i));
        }
        let now = t0 + Duration::from_secs(2);
        assert!((s.rollbacks_per_s(now) - 4.0).abs() < 1e-9);
        assert_eq!(s.rollbacks_per_s(t0 + Duration::from_secs(20)), 0.0);
    }
}
