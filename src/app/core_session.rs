//! A session on a core that another layer drives: [`run_driven`] owns the sequence (the
//! early window, the core, the recording, the runner and its observers, the session's
//! numbers) and a [`SessionDriver`] fills in what is its own (a lobby and a handshake, the
//! feed and its rules, the goodbye). netplay's `host`, `join` and `spectate` are its drivers:
//! each calls `run_driven` once. It must not import `netplay`, `session` or `serve`.

use serde_json::{Map, Value};

use super::options::PlayOptions;
use super::play::{load_content, open_core, open_core_only, run_session_quiet, EarlyWindow};
use super::play::{PlayError, PlaySummary};
use super::record::{begin_netplay, reserve, RecordMode, Recording};
use super::runner::{EndReason, Feed, FrameObserver, Runner, RunnerConfig};
use crate::host::Core;
use crate::lockstep::Roster;

/// When the content goes into the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    /// Before the driver starts (a host's game is the session's).
    Now,
    /// By the driver, through [`Stage::load_content`] (a joiner sets the host's option values
    /// first).
    Later,
}

/// What a driver tells before the core opens.
pub struct Plan {
    /// The role a recording's default name carries ("host", "join", "spectate").
    pub role: &'static str,
    pub content: Content,
}

/// The loaded core and the early window, lent to the driver until the first frame.
pub struct Stage<'a> {
    pub core: &'a mut Core,
    pub window: &'a mut EarlyWindow,
    play: &'a PlayOptions,
}

impl Stage<'_> {
    /// Loads the play options' content into the core (with [`Content::Later`]).
    pub fn load_content(&mut self) -> Result<(), PlayError> {
        load_content(self.core, self.play)
    }
}

/// What the driver hands over for the frames: its feed, the runner's settings (the play
/// options' with the driver's rules applied) and what the recording's header holds.
pub struct Started<F> {
    pub feed: F,
    pub runner: RunnerConfig,
    /// Frames to run ahead at most (0: none), as the driver decided (its core passed the
    /// rollback check), and what a frame, a save and a load cost as the check measured.
    pub speculate: u32,
    pub speculation_costs: Option<super::runner::Costs>,
    /// The players' ports and names, for the recording.
    pub players: Roster,
    /// The session frame the core is at (a late joiner's or a spectator's start state).
    pub first_frame: u32,
    pub checksum_interval: u32,
    /// The recording header's session mode.
    pub mode: &'static str,
}

/// The parts of a session on a core that are not the app's.
pub trait SessionDriver {
    type Feed: Feed;
    type Error: From<PlayError>;

    /// With the early window open, before the core opens: what to show meanwhile, and the
    /// plan.
    fn prepare(&mut self, window: &mut EarlyWindow) -> Result<Plan, Self::Error>;
    /// From the opened core to the first frame (the lobby, the handshake, the start state).
    /// The recording's file is reserved already.
    fn start(&mut self, stage: Stage<'_>) -> Result<Started<Self::Feed>, Self::Error>;
    /// The observer that serves the feed on the core, registered before the recording's.
    fn observer(
        &mut self,
        feed: &Self::Feed,
        recording: Option<Recording>,
    ) -> Box<dyn FrameObserver<Core>>;
    /// After the last frame (`quit`: the player quit): goodbyes. Returns the numbers to add
    /// to the session's.
    fn finish(&mut self, feed: &mut Self::Feed, quit: bool) -> Map<String, Value>;
    /// The command's result once the numbers are written (`interrupted`: by a signal).
    fn outcome(
        &mut self,
        summary: PlaySummary,
        interrupted: bool,
    ) -> Result<PlaySummary, Self::Error>;
}

/// Runs a session on a core that `driver` drives (see the module's comment), in a window
/// or headless as `play` says, and writes `--stats-json` with the driver's numbers.
pub fn run_driven<D: SessionDriver>(
    play: &PlayOptions,
    driver: &mut D,
) -> Result<PlaySummary, D::Error> {
    check_display(play)?;
    let mut window = EarlyWindow::open(play)?;
    let plan = driver.prepare(&mut window)?;
    let mut core = match plan.content {
        Content::Now => open_core(play)?,
        Content::Later => open_core_only(play)?,
    };
    let recording = reserve_recording(play, plan.role)?;
    let stage = Stage {
        core: &mut core,
        window: &mut window,
        play,
    };
    let started = driver.start(stage)?;
    let mut runner_cfg = started.runner;
    runner_cfg.run_ahead = started.speculate;
    runner_cfg.speculation_costs = started.speculation_costs;
    let recording = begin_netplay(
        recording,
        play,
        &mut core,
        &started.players,
        started.checksum_interval,
        started.first_frame,
        started.mode,
    );
    let mut runner = Runner::new(started.feed, runner_cfg);
    runner.observe(driver.observer(runner.feed(), recording.clone()));
    if let Some(r) = &recording {
        runner.observe(r.observer());
    }
    // Stats are written below, once the driver's numbers are in.
    let result = run_session_quiet(play, &mut core, &mut runner, recording, window);
    let quit = matches!(
        result,
        Ok(PlaySummary {
            end: EndReason::Quit,
            ..
        })
    );
    let extra = driver.finish(runner.feed_mut(), quit);
    let mut summary = result?;
    summary.stats.extend(extra);
    if let Some(path) = &play.stats_json {
        super::stats::write(path, &summary.stats).map_err(PlayError::from)?;
    }
    driver.outcome(summary, super::interrupt::requested())
}

/// Makes the recording's file before the lobby, so nobody waits for a session that cannot
/// be recorded where asked: a `--record FILE` that cannot be written ends the command as it
/// does `play`'s; the default recording (into `recordings_dir`) is logged and skipped.
fn reserve_recording(
    play: &PlayOptions,
    role: &str,
) -> Result<Option<super::record::Reserved>, PlayError> {
    match reserve(&play.record, role) {
        Ok(r) => Ok(r),
        Err(e) if matches!(play.record, RecordMode::File(_)) => Err(PlayError::from(e)),
        Err(e) => {
            tracing::error!("not recording this session: {e}");
            Ok(None)
        }
    }
}

/// A window needs a display: say so before the players wait for us, not after.
fn check_display(play: &PlayOptions) -> Result<(), PlayError> {
    if play.headless {
        return Ok(());
    }
    crate::frontend::window::check_display().map_err(PlayError::Window)
}
