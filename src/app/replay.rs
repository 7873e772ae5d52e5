//! `framelock replay LOG`: plays an input log (`.flr`) back on the core and content it was
//! recorded with, in a window or headless, and verifies its checksums. Like all of `app` it must
//! not import `netplay`, `session` or `cli`.
//!
//! Order: read the header -> find the core and content (flags, else where they were
//! recorded) and refuse any that differ -> open the core with the log's option values ->
//! load content -> load the start save RAM and state -> feed the frames -> compare every
//! checksum record -> report. Save RAM goes to a scratch directory: a replay never touches
//! the player's saves.

mod feed;

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use serde_json::{json, Map, Value};

pub use feed::{Desync, LogObserver, LogState, ReplayFeed, ReplayMachine, Verification};

use super::options::PlayOptions;
use super::play::{load_content, open_core_only, run_session_quiet, PlayError, PlaySummary};
use super::record::RecordMode;
use super::runner::{EndReason, FrameObserver, ObserverError, Runner};
use super::stats::{self, checksum_hex, StatsError};
use crate::host::{hash_file, Core, CoreSource, HostError};
use crate::input::Inputs;
use crate::replay::{Header, Replay, ReplayError, Start, Status};
use crate::wording::{io_reason, n_frames};

/// Everything `replay` needs, flags already parsed.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    pub log: PathBuf,
    /// `--core`: overrides the core path stored in the log.
    pub core: Option<PathBuf>,
    /// CONTENT: overrides the content path stored in the log.
    pub content: Option<PathBuf>,
    /// Window, headless, pacing and stats settings. Its core, content, core options, save
    /// directory and recording mode are replaced by the log's.
    pub play: PlayOptions,
    /// Speed relative to the recording (1.0 = as recorded); ignored when `play.runner.fast`.
    pub speed: f64,
    /// Fail (non-zero exit) on a checksum mismatch, a truncated log, or a replay stopped
    /// (window closed, Ctrl-C, SIGTERM) before the end of the log or `to_frame`.
    pub verify: bool,
    /// Stop before this log frame.
    pub to_frame: Option<u64>,
    /// Where cores are found by name (`host::catalog`): a log whose core is no longer where
    /// it was recorded is replayed with the core found there of the name and version it names.
    pub core_dirs: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayRunError {
    #[error(transparent)]
    Log(#[from] ReplayError),
    #[error("core differs: log has {log}, given {given}")]
    CoreDiffers { log: String, given: String },
    #[error("the log was recorded with {core}{where_}; pass --core PATH")]
    CoreNeeded { core: String, where_: String },
    #[error("content differs: log has {log}, given {given}")]
    ContentDiffers { log: String, given: String },
    #[error("the log needs content {content}{where_}; pass it: framelock replay LOG CONTENT")]
    ContentNeeded { content: String, where_: String },
    #[error("cannot read content {}: {}", .path.display(), io_reason(.io))]
    Content { path: PathBuf, io: std::io::Error },
    #[error("loading the log's start state: {0}")]
    StartState(HostError),
    #[error(transparent)]
    Play(#[from] PlayError),
    #[error(transparent)]
    Stats(#[from] StatsError),
    #[error(
        "{}: desync at frame {frame}: log has {log:016x}, replay has {replay:016x}",
        .path.display()
    )]
    Desync {
        path: PathBuf,
        frame: u32,
        log: u64,
        replay: u64,
    },
    #[error(
        "{}: log is truncated at byte {at_byte} after {}",
        .path.display(), n_frames(*.frames)
    )]
    Truncated {
        path: PathBuf,
        at_byte: u64,
        frames: u32,
    },
    /// `--verify`, and the replay stopped before the end of the log (or of `--to-frame`).
    #[error(
        "{}: verification incomplete: the replay stopped after {ran} of {} ({matched} of \
         {checked} checksums match so far)",
        .path.display(), n_frames(*.of)
    )]
    VerifyIncomplete {
        path: PathBuf,
        ran: u64,
        of: u64,
        matched: u64,
        checked: u64,
    },
}

/// How a replay went.
#[derive(Clone, Debug)]
pub struct ReplaySummary {
    pub run: PlaySummary,
    /// How the log ended; `None` if the replay stopped before its end.
    pub status: Option<Status>,
    pub verification: Verification,
}

/// Replays `opts.log`. With `opts.verify`, a checksum mismatch, a truncated log or a replay
/// stopped early is an error; either way a corrupt log is an error once its intact frames have
/// been replayed.
pub fn replay(opts: &ReplayOptions) -> Result<ReplaySummary, ReplayRunError> {
    let log = Replay::open(&opts.log)?;
    let header = log.header().clone();
    // A quick first pass: the length for the progress bar, and damage known up front.
    let mut scanner = Replay::open(&opts.log)?;
    let scan = scanner.skim();
    if let Some((at, n)) = scanner.bytes_after_end() {
        tracing::warn!(
            "{}: ignoring {n} byte{} after the end record (from byte {at} on)",
            opts.log.display(),
            if n == 1 { "" } else { "s" }
        );
    }
    let total = match &scan {
        Ok(status) => status.frames(),
        Err(ReplayError::CorruptRecord { frames, .. }) => *frames,
        Err(_) => 0,
    };
    match &scan {
        Err(e @ ReplayError::CorruptRecord { frames: 0, .. }) => tracing::warn!("{e}"),
        Err(e) => tracing::warn!("{e}; replaying what comes before it"),
        Ok(_) => {}
    }
    let core = find_core(opts, &header)?;
    let content = find_content(opts, &header)?;

    // Declared before the core so that it is removed after the core saved into it.
    let scratch = Scratch::new();
    let mut play = opts.play.clone();
    play.core = core;
    play.content = content;
    play.host.options = header.core_options.clone();
    play.host.netplay = header.netplay_context;
    if let Some(mode) = &header.netplay_mode {
        // The log holds the inputs every peer applied, whichever way frames were published.
        tracing::info!("replay: recorded in a {mode} netplay session");
    }
    play.host.save_dir = scratch.0.clone();
    play.record = RecordMode::Off;
    play.bot = None;
    play.runner.max_frames = opts
        .to_frame
        .map(|n| n.saturating_sub(u64::from(header.start_frame)));
    if let Some(video) = &mut play.video {
        // `--from-frame` counts the log's frames; the video counts the replay's.
        video.from_frame = video
            .from_frame
            .saturating_sub(u64::from(header.start_frame));
    }
    let mut core = open_checked(&play, &header)?;
    if let Some(sram) = &header.start_sram {
        core.write_sram(sram);
    }
    if let Start::State(state) = &header.start {
        core.unserialize(state)
            .map_err(ReplayRunError::StartState)?;
    }

    let mut feed = ReplayFeed::new(log, opts.speed);
    if let Some(state) = feed.prime() {
        core.unserialize(&state)
            .map_err(ReplayRunError::StartState)?;
    }
    let log_state = feed.state();
    let observer = LogObserver::new(log_state.clone(), header.start_frame);
    let verification = observer.result();
    let mut runner = Runner::new(feed, play.runner.clone());
    runner.observe(Box::new(observer));
    let to_run = play
        .runner
        .max_frames
        .map_or(u64::from(total), |n| n.min(u64::from(total)));
    let fps = core.av_info().fps;
    let bar = (play.runner.fast || play.headless).then(|| progress_bar(to_run, fps, &header, opts));
    if let Some(bar) = &bar {
        runner.observe(Box::new(BarObserver(bar.clone())));
    }
    tracing::info!(
        "replaying {} ({}, {} {}{})",
        opts.log.display(),
        n_frames(total),
        header.core_name,
        header.core_version,
        if header.content_name.is_empty() {
            String::new()
        } else {
            format!(", {}", header.content_name)
        }
    );
    let result = run_session_quiet(
        &play,
        &mut core,
        &mut runner,
        None,
        super::play::EarlyWindow::none(),
    );
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let mut run = result?;
    drop(core);
    drop(scratch);

    let verification = verification.borrow().clone();
    let mut log_state = log_state.borrow_mut();
    let status = log_state.status;
    let progress = Progress {
        ran: run.frames,
        of: to_run,
        end: run.end,
    };
    run.stats.insert(
        "replay".into(),
        replay_stats(opts, total, progress, &log_state, &verification),
    );
    if let Some(path) = &opts.play.stats_json {
        stats::write(path, &run.stats)?;
    }
    report(&opts.log, &verification, status, &log_state, progress);
    if let Some(e) = log_state.error.take() {
        return Err(e.into());
    }
    if opts.verify {
        let path = opts.log.clone();
        if let Some(d) = verification.first_desync {
            return Err(ReplayRunError::Desync {
                path,
                frame: d.frame,
                log: d.log,
                replay: d.replay,
            });
        }
        match status {
            Some(Status::Truncated { frames, at_byte }) => {
                return Err(ReplayRunError::Truncated {
                    path,
                    at_byte,
                    frames,
                })
            }
            Some(Status::Incomplete { frames }) => {
                let at_byte = std::fs::metadata(&opts.log).map_or(0, |m| m.len());
                return Err(ReplayRunError::Truncated {
                    path,
                    at_byte,
                    frames,
                });
            }
            Some(Status::Complete { .. }) => {}
            // Stopped before the end of the log: fine only at the frame asked for.
            None if run.end == EndReason::FrameLimit => {}
            None => {
                return Err(ReplayRunError::VerifyIncomplete {
                    path,
                    ran: run.frames,
                    of: to_run,
                    matched: verification.matched,
                    checked: verification.checked,
                })
            }
        }
    }
    Ok(ReplaySummary {
        run,
        status,
        verification,
    })
}

/// "Genesis Plus GX v1.7.4".
fn core_label(name: &str, version: &str) -> String {
    format!("{name} {version}")
}

/// " (at PATH, not found here)" for a recorded path hint, else "".
fn where_recorded(hint: Option<&str>) -> String {
    match hint {
        Some(p) if !p.is_empty() => format!(" (at {p}, not found here)"),
        _ => String::new(),
    }
}

/// `--core`, else the core the log was recorded with if it is still there.
fn find_core(opts: &ReplayOptions, h: &Header) -> Result<CoreSource, ReplayRunError> {
    if let Some(p) = &opts.core {
        return Ok(CoreSource::Path(p.clone()));
    }
    match h.core_path.as_deref() {
        Some("") => Ok(CoreSource::Builtin),
        Some(p) if Path::new(p).is_file() => Ok(CoreSource::Path(p.into())),
        // A log without the hint: a core that needs no content may be the built-in one
        // (`check_core` refuses it if not).
        None if h.content_hash.is_none() => Ok(CoreSource::Builtin),
        hint => {
            let cores = crate::host::catalog::list(&opts.core_dirs);
            let named = |c: &&crate::host::catalog::FoundCore| c.library_name == h.core_name;
            // The version it was recorded with, else any of that name (`check_core` then
            // says which versions differ).
            let found = cores
                .iter()
                .filter(named)
                .find(|c| c.version == h.core_version)
                .or_else(|| cores.iter().find(named));
            if let Some(c) = found {
                tracing::info!(
                    "replay: the recorded core is gone; using {} ({})",
                    c.path.display(),
                    c.version
                );
                return Ok(CoreSource::Path(c.path.clone()));
            }
            Err(ReplayRunError::CoreNeeded {
                core: core_label(&h.core_name, &h.core_version),
                where_: where_recorded(hint),
            })
        }
    }
}

/// "airstriker.md (xxh3 0123456789abcdef)".
fn content_label(name: &str, hash: u64) -> String {
    format!("{name} (xxh3 {hash:016x})")
}

/// CONTENT, else the content the log was recorded with if it is still there; its hash must
/// match the log's.
fn find_content(opts: &ReplayOptions, h: &Header) -> Result<Option<PathBuf>, ReplayRunError> {
    let Some(want) = h.content_hash else {
        return match &opts.content {
            None => Ok(None),
            Some(given) => Err(ReplayRunError::ContentDiffers {
                log: "no content".into(),
                given: match hash_file(given) {
                    Ok(got) => content_label(&file_name(given), got),
                    Err(_) => given.display().to_string(),
                },
            }),
        };
    };
    let path = match (&opts.content, h.content_path.as_deref()) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) if Path::new(p).is_file() => PathBuf::from(p),
        (None, hint) => match beside_by_name(opts, h, want) {
            Some(p) => p,
            None => {
                return Err(ReplayRunError::ContentNeeded {
                    content: content_label(&h.content_name, want),
                    where_: where_recorded(hint),
                })
            }
        },
    };
    let got = hash_file(&path).map_err(|io| ReplayRunError::Content {
        path: path.clone(),
        io,
    })?;
    if got != want {
        return Err(ReplayRunError::ContentDiffers {
            log: content_label(&h.content_name, want),
            given: content_label(&file_name(&path), got),
        });
    }
    Ok(Some(path))
}

/// The recorded content by its file name beside the log, then in the working directory,
/// if its hash is the log's: a log made on another machine (or system: `C:\roms\x.md` is
/// no path on Linux) plays where it and its game were copied together.
fn beside_by_name(opts: &ReplayOptions, h: &Header, want: u64) -> Option<PathBuf> {
    let name = Path::new(&h.content_name);
    // The name is a bare file name; anything else is not looked up.
    if h.content_name.is_empty() || name.file_name() != Some(name.as_os_str()) {
        return None;
    }
    let beside_log = opts.log.parent().map(|d| d.join(name));
    let found = beside_log
        .into_iter()
        .chain([name.to_path_buf()])
        .find(|p| p.is_file() && hash_file(p).is_ok_and(|got| got == want))?;
    tracing::info!("replay: the recorded content is {}", found.display());
    Some(found)
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    )
}

/// Opens the core, refuses it unless it is the log's, then loads the content (with the
/// log's option values, which `play.host` carries).
fn open_checked(play: &PlayOptions, h: &Header) -> Result<Core, ReplayRunError> {
    let mut core = open_core_only(play)?;
    let info = core.info();
    if info.library_name != h.core_name || info.library_version != h.core_version {
        return Err(ReplayRunError::CoreDiffers {
            log: core_label(&h.core_name, &h.core_version),
            given: format!(
                "{} ({})",
                core_label(&info.library_name, &info.library_version),
                play.core
            ),
        });
    }
    load_content(&mut core, play)?;
    Ok(core)
}

/// A save directory of our own for the replay's core, removed afterwards.
struct Scratch(PathBuf);

impl Scratch {
    /// The host creates the directory when the core opens; a leftover of a crashed run with
    /// the same process id is reused.
    fn new() -> Scratch {
        Scratch(std::env::temp_dir().join(format!("framelock-replay-{}", std::process::id())))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A bar on stderr; indicatif hides it when stderr is not a terminal. Speed is in times
/// real time (the core's `fps` frames a second is 1x).
fn progress_bar(frames: u64, fps: f64, h: &Header, opts: &ReplayOptions) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(frames), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(
        "{msg} [{bar:30}] {pos}/{len} frames, {fps}, eta {eta}",
    )
    .map(|s| {
        s.progress_chars("=> ").with_key(
            "fps",
            move |st: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(
                    w,
                    "{:.0} fps ({:.1}x real time)",
                    st.per_sec(),
                    st.per_sec() / fps.max(1.0)
                );
            },
        )
    });
    if let Ok(style) = style {
        bar.set_style(style);
    }
    let name = opts
        .log
        .file_name()
        .map_or_else(|| h.core_name.clone(), |n| n.to_string_lossy().into_owned());
    bar.set_message(name);
    bar
}

/// Moves the progress bar (a few times per displayed frame at most).
struct BarObserver(ProgressBar);

impl<M> FrameObserver<M> for BarObserver {
    fn after_frame(&mut self, frame: u64, _: &Inputs, _: &mut M) -> Result<(), ObserverError> {
        if (frame + 1).is_multiple_of(16) {
            self.0.set_position(frame + 1);
        }
        Ok(())
    }
}

/// How far a replay got: `ran` of the `of` frames it set out to replay, and why it ended.
#[derive(Clone, Copy)]
struct Progress {
    ran: u64,
    of: u64,
    end: EndReason,
}

fn replay_stats(
    opts: &ReplayOptions,
    total: u32,
    progress: Progress,
    log: &LogState,
    v: &Verification,
) -> Value {
    let status = match (&log.error, log.status) {
        (Some(_), _) => "corrupt",
        (None, Some(Status::Complete { .. })) => "complete",
        (None, Some(Status::Incomplete { .. })) => "incomplete",
        (None, Some(Status::Truncated { .. })) => "truncated",
        // Stopped where --to-frame asked: the rest of the log was not wanted.
        (None, None) if progress.end == EndReason::FrameLimit => "not reached",
        // Window closed, Ctrl-C, SIGTERM or a core shutdown before the end.
        (None, None) => "stopped early",
    };
    let mut m = Map::new();
    m.insert("log".into(), json!(opts.log.display().to_string()));
    m.insert("log_frames".into(), json!(total));
    m.insert("log_status".into(), json!(status));
    m.insert("frames_replayed".into(), json!(progress.ran));
    m.insert("frames_to_replay".into(), json!(progress.of));
    m.insert("verify".into(), json!(opts.verify));
    m.insert("speed".into(), json!(opts.speed));
    m.insert("checksums_checked".into(), json!(v.checked));
    m.insert("checksums_matched".into(), json!(v.matched));
    m.insert("checksums_skipped".into(), json!(v.skipped));
    m.insert(
        "first_desync".into(),
        v.first_desync.map_or(Value::Null, |d| {
            json!({"frame": d.frame, "log": checksum_hex(d.log), "replay": checksum_hex(d.replay)})
        }),
    );
    m.insert("recorded_desyncs".into(), json!(log.recorded_desyncs.len()));
    Value::Object(m)
}

/// One summary line: what was checked and how the log ended.
fn report(path: &Path, v: &Verification, status: Option<Status>, log: &LogState, p: Progress) {
    let checks = format!("{} of {} checksums match", v.matched, v.checked);
    let path = path.display();
    match status {
        Some(Status::Complete { .. }) => {
            tracing::info!("replayed {}; {checks}", n_frames(p.ran))
        }
        Some(Status::Truncated { at_byte, frames: n }) => tracing::warn!(
            "{path}: log is truncated at byte {at_byte} after {}; {checks}",
            n_frames(n)
        ),
        Some(Status::Incomplete { frames: n }) => tracing::warn!(
            "{path}: log ends after {} without an end record; {checks}",
            n_frames(n)
        ),
        // As the stats' log_status says: "not reached" or "stopped early".
        None if log.error.is_none() && p.end == EndReason::FrameLimit => {
            tracing::info!(
                "replayed {} (as far as --to-frame); {checks}",
                n_frames(p.ran)
            )
        }
        None if log.error.is_none() => tracing::info!(
            "replayed {} of {} (stopped early); {checks}",
            p.ran,
            n_frames(p.of)
        ),
        None => {}
    }
    for (frame, local, remote) in &log.recorded_desyncs {
        tracing::info!(
            "the recorded session reported a desync at frame {frame} \
             ({local:016x} here, {remote:016x} remote)"
        );
    }
}
