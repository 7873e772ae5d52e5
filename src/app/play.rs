//! `framelock play`: load a core and content, then run it in a window or headless.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::driver::run_loop;
use super::headless::Headless;
use super::local::LocalFeed;
use super::options::PlayOptions;
use super::record::{self, RecordError, Recording};
use super::runner::{EndReason, Feed, RunError, Runner};
use super::stats::{self, checksum_hex, StatsError};
use super::sync_test::SyncTest;
use super::video_capture::{self, VideoCapture};
use crate::frontend::chat_board::ChatBoard;
use crate::frontend::keyboard::KeyCode;
use crate::frontend::screenshot::ShotAt;
use crate::frontend::window::{WindowError, WindowFrontend, WindowSettings};
use crate::host::{Core, HostError};

#[derive(Debug, thiserror::Error)]
pub enum PlayError {
    #[error("{}", in_context("loading core", .core, .source))]
    OpenCore { core: String, source: HostError },
    #[error("{}", in_context("loading content", .content, .source))]
    LoadContent { content: String, source: HostError },
    #[error(transparent)]
    Window(#[from] WindowError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Stats(#[from] StatsError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    Video(#[from] crate::video::VideoError),
}

/// "loading core X: why", or just "why" when it names X already ("cannot open core X: ...").
fn in_context(doing: &str, what: &str, why: &HostError) -> String {
    if why.names_its_file() {
        why.to_string()
    } else {
        format!("{doing} {what}: {why}")
    }
}

/// How a run went.
#[derive(Clone, Debug)]
pub struct PlaySummary {
    pub frames: u64,
    pub checksum: u64,
    pub wall_s: f64,
    pub end: EndReason,
    pub stats: serde_json::Map<String, Value>,
}

/// Loads `opts.core` and `opts.content`.
pub fn open_core(opts: &PlayOptions) -> Result<Core, PlayError> {
    let mut core = open_core_only(opts)?;
    load_content(&mut core, opts)?;
    let info = core.info();
    let av = core.av_info();
    tracing::info!(
        "{} {}: {}x{} at {:.2} fps, {} Hz audio",
        info.library_name,
        info.library_version,
        av.base_width,
        av.base_height,
        av.fps,
        av.sample_rate
    );
    Ok(core)
}

/// Loads `opts.core` without content (netplay and replay set options first).
pub fn open_core_only(opts: &PlayOptions) -> Result<Core, PlayError> {
    // Before the core loads (and before any lobby): a video file that cannot be written
    // fails at once.
    if let Some(video) = &opts.video {
        video_capture::check(video)?;
    }
    Core::open(&opts.core, &opts.host).map_err(|source| PlayError::OpenCore {
        core: opts.core.to_string(),
        source,
    })
}

/// Loads `opts.content` (or no content) into an opened core.
pub fn load_content(core: &mut Core, opts: &PlayOptions) -> Result<(), PlayError> {
    core.load_game(opts.content.as_deref())
        .map_err(|source| PlayError::LoadContent {
            content: opts
                .content
                .as_ref()
                .map_or_else(|| "(no content)".into(), |p| p.display().to_string()),
            source,
        })
}

/// Runs a whole `play` session and writes the stats file if asked.
pub fn play(opts: &PlayOptions) -> Result<PlaySummary, PlayError> {
    let mut core = open_core(opts)?;
    let mut feed = LocalFeed::new().with_taps(&opts.taps);
    if let Some(spec) = opts.bot {
        feed = feed.with_bot_spec(0, spec);
        tracing::info!("bot (seed {spec}) plays player 1");
    }
    if opts.runner.run_ahead > 0 {
        tracing::info!(
            "run-ahead: showing every frame {} frame(s) ahead",
            opts.runner.run_ahead
        );
    }
    let mut runner = Runner::new(feed, opts.runner.clone());
    let players = record::local_players(opts);
    let recording = record::start(
        opts,
        &mut core,
        "play",
        &players,
        opts.record_checksum_interval,
    )?;
    if let Some(r) = &recording {
        runner.observe(r.observer());
    }
    let sync = opts.sync_test.map(|depth| {
        tracing::info!("sync test: every frame, {depth} frame(s) re-run from a loaded state");
        let (test, report) = SyncTest::new(depth);
        runner.observe(Box::new(test));
        report
    });
    let result = run_session(
        opts,
        &mut core,
        &mut runner,
        Map::new(),
        recording,
        EarlyWindow::none(),
    );
    if let Some(report) = sync {
        let r = report.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match &result {
            Ok(_) => tracing::info!(
                "sync test passed: {} frames re-run {} deep, every checksum equal",
                r.frames_checked,
                r.depth
            ),
            Err(_) => tracing::info!(
                "sync test: {} frames re-run and equal before the failure",
                r.frames_checked
            ),
        }
    }
    result
}

/// A window opened before its game, showing text (netplay's lobby, what is loading) until
/// `run_session` plays the game in it. Headless there is none and `show` does nothing.
pub struct EarlyWindow(Option<WindowFrontend>);

impl EarlyWindow {
    /// No window: headless, or a frontend that opens its window with the game.
    pub fn none() -> EarlyWindow {
        EarlyWindow(None)
    }

    /// Opens the window now unless `opts.headless`.
    pub fn open(opts: &PlayOptions) -> Result<EarlyWindow, PlayError> {
        if opts.headless {
            return Ok(EarlyWindow(None));
        }
        let name = opts
            .content
            .as_ref()
            .and_then(|p| p.file_stem())
            .map_or_else(
                || String::from("netplay"),
                |s| s.to_string_lossy().into_owned(),
            );
        let settings = window_settings(opts, name, None);
        Ok(EarlyWindow(Some(WindowFrontend::open_for_text(
            settings,
            &opts.keymaps,
        )?)))
    }

    /// A window is open.
    pub fn is_open(&self) -> bool {
        self.0.is_some()
    }

    /// Asks for a secret (a password) below `rows`; `None` when the player left, or
    /// headless.
    pub fn ask_secret(
        &mut self,
        rows: &[String],
        prompt: &str,
    ) -> Result<Option<String>, PlayError> {
        match &mut self.0 {
            Some(window) => Ok(window.ask_secret(rows, prompt)?),
            None => Ok(None),
        }
    }

    /// Shows `rows` and handles the window's events for at most `timeout` (headless:
    /// returns at once). True when the player asked to leave (Esc, closing the window).
    pub fn show(&mut self, rows: &[String], timeout: Duration) -> Result<bool, PlayError> {
        match &mut self.0 {
            Some(window) => Ok(window.show_text(rows, timeout)?),
            None => Ok(false),
        }
    }
}

fn window_settings(opts: &PlayOptions, name: String, status: Option<String>) -> WindowSettings {
    WindowSettings {
        title: format!("framelock - {name}"),
        scale: opts.scale,
        fullscreen: opts.fullscreen,
        vsync: opts.vsync,
        screenshots_dir: opts.screenshots_dir.clone(),
        shot_name: name,
        status,
        chat: chat_of(opts),
    }
}

/// The chat a netplay window shows, and the key that opens its input line.
#[cfg(feature = "gui")]
fn chat_of(opts: &PlayOptions) -> Option<(ChatBoard, KeyCode)> {
    let key = crate::frontend::keyboard::key_code(&opts.chat_key).unwrap_or(KeyCode::KeyT);
    opts.chat.clone().map(|board| (board, key))
}

/// No window shows a chat in a build without one.
#[cfg(not(feature = "gui"))]
fn chat_of(_opts: &PlayOptions) -> Option<(ChatBoard, KeyCode)> {
    None
}

/// Runs `runner` on a loaded `core` in a window or headless until it ends, saves SRAM,
/// finishes `recording` (whose observer the caller registered) and writes `--stats-json`
/// (with `extra` and the recording's outcome merged in). Shared by play, netplay and replay.
/// The game plays in `early`'s window if one is open, else in a new one.
pub fn run_session<F: Feed>(
    opts: &PlayOptions,
    core: &mut Core,
    runner: &mut Runner<Core, F>,
    mut extra: Map<String, Value>,
    recording: Option<Recording>,
    early: EarlyWindow,
) -> Result<PlaySummary, PlayError> {
    let shot = opts
        .screenshot_at
        .as_ref()
        .map(|(f, p)| ShotAt::new(*f, p.clone()));

    let capture = opts.video.as_ref().map(|v| {
        let capture = VideoCapture::new(v);
        runner.observe(capture.observer());
        capture
    });
    let end = if opts.headless {
        let mut headless = Headless::new(shot, opts.busy_frame).with_hash_shown(opts.hash_shown);
        let end = run_loop(runner, core, &mut headless);
        if opts.hash_shown.is_some() {
            extra.insert("shown".into(), json!(headless.shown()));
        }
        end
    } else {
        let status = runner.feed().status_line();
        let mut window = match early.0 {
            Some(mut window) => {
                window.start_game(core, &opts.audio, shot, status, chat_of(opts));
                window
            }
            None => {
                let settings = window_settings(opts, content_name(opts, core), status);
                WindowFrontend::open(settings, core, &opts.keymaps, &opts.audio, shot)?
            }
        };
        let end = run_loop(runner, core, &mut window);
        let a = window.audio_stats();
        extra.insert(
            "audio".into(),
            json!({
                "live": a.live,
                "callbacks": a.callbacks,
                "underruns": a.underruns,
                "underruns_after_1s": a.underruns_after_1s,
                "fill_min": a.fill_min,
                "fill_max": a.fill_max,
                "dropped": a.dropped,
            }),
        );
        end
    };
    // Save RAM and the recording even if the loop failed: the player's progress matters
    // more than the error.
    if let Err(e) = core.save_sram() {
        tracing::warn!("{e}");
    }
    let recorded = recording.map(Recording::finish);
    let video = capture.map(|c| c.finish(end.as_ref().ok().copied()));
    let end = end?;
    if let Some(r) = recorded {
        extra.insert("recording".into(), r.to_json());
    }
    if let Some(v) = video {
        extra.insert("video".into(), v.to_json());
        // An export exists for its video; a recording made while playing only warns.
        if let Some(e) = v
            .error
            .filter(|_| opts.video.as_ref().is_some_and(|o| !o.settings.realtime))
        {
            return Err(e.into());
        }
    }
    summarize(opts, core, runner, end, extra)
}

/// [`run_session`] with `--stats-json` held back and nothing extra: for a caller that adds
/// numbers of its own to the summary's stats and writes them itself (netplay, replay).
pub(crate) fn run_session_quiet<F: Feed>(
    opts: &PlayOptions,
    core: &mut Core,
    runner: &mut Runner<Core, F>,
    recording: Option<Recording>,
    early: EarlyWindow,
) -> Result<PlaySummary, PlayError> {
    let quiet = PlayOptions {
        stats_json: None,
        ..opts.clone()
    };
    run_session(&quiet, core, runner, Map::new(), recording, early)
}

/// Final numbers of a run: logged, written to `--stats-json`, returned.
fn summarize<F: Feed>(
    opts: &PlayOptions,
    core: &mut Core,
    runner: &mut Runner<Core, F>,
    end: EndReason,
    extra: Map<String, Value>,
) -> Result<PlaySummary, PlayError> {
    let checksum = core.checksum();
    let mut stats = runner.stats_json();
    let info = core.info();
    stats.insert("checksum".into(), json!(checksum_hex(checksum)));
    stats.insert("core".into(), json!(info.library_name));
    stats.insert("core_version".into(), json!(info.library_version));
    stats.insert("core_path".into(), json!(opts.core.to_string()));
    // The rate the core asks for (NTSC 60, PAL 50): what `fps` is paced to.
    stats.insert("core_fps".into(), json!(core.av_info().fps));
    stats.insert(
        "content".into(),
        opts.content
            .as_ref()
            .map_or(Value::Null, |p| json!(p.display().to_string())),
    );
    stats.insert("headless".into(), json!(opts.headless));
    stats.insert("fast".into(), json!(opts.runner.fast));
    stats.insert("bot_seed".into(), json!(opts.bot.map(|b| b.seed)));
    stats.insert("bot_human".into(), json!(opts.bot.is_some_and(|b| b.human)));
    stats.insert("end".into(), json!(format!("{end:?}").to_lowercase()));
    if let Some(gl) = core.gl_report() {
        stats.insert("gl".into(), gl_json(&gl));
    }
    stats.extend(extra);
    let frames = runner.frame();
    let wall_s = stats["wall_s"].as_f64().unwrap_or(0.0);
    tracing::info!(
        "{} in {wall_s:.2} s ({:.0} fps), checksum {}",
        crate::wording::n_frames(frames),
        stats["fps"].as_f64().unwrap_or(0.0),
        checksum_hex(checksum)
    );
    if let Some(path) = &opts.stats_json {
        stats::write(path, &stats)?;
    }
    Ok(PlaySummary {
        frames,
        checksum,
        wall_s,
        end,
        stats,
    })
}

/// An OpenGL core's context and read-back numbers (milliseconds in all): copying frames
/// out of its frame buffer (`capture`), taking the copies looked at (`read`), and with
/// `--test-gl-finish` the wait for the GPU before each copy (`finish`).
fn gl_json(gl: &crate::host::gl::GlReport) -> Value {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let s = &gl.stats;
    json!({
        "asked": gl.asked,
        "version": gl.version,
        "renderer": gl.renderer,
        "frames_captured": s.captures,
        "capture_ms": ms(s.capture),
        "frames_read": s.reads,
        "read_ms": ms(s.read),
        "finish_ms": ms(s.finish),
    })
}

/// A short name for titles and screenshot files: the content's stem, else the core's name.
fn content_name(opts: &PlayOptions, core: &Core) -> String {
    opts.content
        .as_ref()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| core.info().library_name.to_lowercase().replace(' ', "-"))
}
