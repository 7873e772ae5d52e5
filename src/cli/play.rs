//! The flags of every command that runs a game (`play`, and through it `host`, `join` and
//! `replay`: the core, the content, the view, the recording) and how they merge over the
//! config file into [`PlayOptions`]. Imports no other command's flags.
// The field docs are `--help` texts: `[IPV6]:PORT` or `[paths]` there are what the user
// types, not links to items.
#![allow(rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::cores::{core_dirs, core_path};
use super::error::CliError;
use crate::app::video_capture::VideoOutput;
use crate::app::{PlayOptions, RecordMode, RunnerConfig};
use crate::config::Config;
use crate::frontend::audio::AudioSettings;
use crate::host::{catalog, CoreConfig, CoreSource};
use crate::input::{BotSpec, Button};
use crate::video::VideoSettings;

/// `framelock play`: everything `host` and `join` take, plus what only local play does.
#[derive(Debug, Clone, Args)]
pub struct LocalArgs {
    #[command(flatten)]
    pub play: PlayArgs,
    /// Hide N frames of the game's own input lag (0-8): every frame, run N frames ahead
    /// with the pads held as they are, show the last, and go back. Costs about N+1 times
    /// the CPU; the recording and checksums are those of the real frames.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=8))]
    pub run_ahead: Option<u32>,
    /// Check that the core's savestates round-trip (the test a core passes before rollback
    /// can trust it): after every frame, load the state of N frames back, run those N
    /// again and compare each frame's checksum; the first difference ends the run with
    /// the frame and both checksums.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub sync_test: Option<u32>,
    /// Test hook: press BUTTON on port 1 for the one frame FRAME.
    #[arg(long, hide = true, value_name = "FRAME:BUTTON", value_parser = parse_tap)]
    pub tap: Vec<(u64, Button)>,
    /// Test hook: a hash of every image shown from frame FROM on, for COUNT frames, in
    /// --stats-json's `shown`.
    #[arg(long, hide = true, value_name = "FROM:COUNT", value_parser = parse_span)]
    pub hash_shown: Option<(u64, u64)>,
}

impl LocalArgs {
    pub fn to_options(&self, config: &Config) -> Result<PlayOptions, CliError> {
        let mut o = self.play.to_options(config)?;
        o.runner.run_ahead = self.run_ahead.unwrap_or(0);
        o.sync_test = self.sync_test;
        o.taps = self.tap.clone();
        o.hash_shown = self.hash_shown;
        Ok(o)
    }
}

fn parse_tap(s: &str) -> Result<(u64, Button), String> {
    let (frame, button) = s.split_once(':').ok_or("expected FRAME:BUTTON")?;
    let frame = frame
        .parse()
        .map_err(|_| format!("{frame:?} is not a frame"))?;
    let button = Button::from_name(button).ok_or(format!("{button:?} is not a button"))?;
    Ok((frame, button))
}

fn parse_span(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once(':').ok_or("expected FROM:COUNT")?;
    let n = |v: &str| {
        v.parse::<u64>()
            .map_err(|_| format!("{v:?} is not a number"))
    };
    Ok((n(a)?, n(b)?))
}

#[derive(Debug, Clone, Args)]
pub struct PlayArgs {
    /// Game file (ROM, or an FBNeo romset zip). Without --core, the one core found that
    /// takes its extension runs it.
    #[arg(value_name = "CONTENT")]
    pub content: Option<PathBuf>,
    /// libretro core: a name (genesis_plus_gx, fbneo, snes9x: NAME_libretro.so in [paths]
    /// cores_dir, ~/.config/retroarch/cores, /usr/lib/x86_64-linux-gnu/libretro or
    /// /usr/lib/libretro; `framelock cores` lists them) or a path. Default: the built-in
    /// game, or with CONTENT the core that takes it.
    #[arg(long, value_name = "NAME|PATH")]
    pub core: Option<PathBuf>,
    /// No window, no audio device, no input devices (tests, CI, servers).
    #[arg(long)]
    pub headless: bool,
    /// Exit after N frames.
    #[arg(long, value_name = "N")]
    pub frames: Option<u64>,
    /// Run as fast as possible instead of at the core's frame rate.
    #[arg(long)]
    pub fast: bool,
    /// A synthetic player pressing random but plausible buttons, the same for a SEED: player
    /// 1 in `play` and `host`, a joiner's own player in `join`. SEED:human changes the pad
    /// about 10 times a second, as a busy player does.
    #[arg(long, value_name = "SEED[:human]")]
    pub bot: Option<BotSpec>,
    /// Write run statistics (frames, checksum, fps, wall_s, core, content) as JSON at exit.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,
    /// Core option, repeatable; overrides [core_options] in the config file.
    #[arg(long = "option", value_name = "KEY=VALUE", value_parser = parse_option)]
    pub options: Vec<(String, String)>,
    /// Directory for save RAM (.srm).
    #[arg(long, value_name = "DIR")]
    pub save_dir: Option<PathBuf>,
    #[command(flatten)]
    pub view: ViewArgs,
    /// Record the session's inputs to FILE (an input log; watch it with `framelock replay`).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Don't record (netplay records every session into [paths] recordings_dir by default).
    #[arg(long, conflicts_with = "record")]
    pub no_record: bool,
    /// Test hook: the core ignores every state loaded into it (a core whose savestates do
    /// not round-trip).
    #[arg(long, hide = true)]
    pub test_ignore_loads: bool,
    /// Test hook: frames between the recording's checksums (default 60), so a test can
    /// compare the machine's state often.
    #[arg(long, hide = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub test_checksum_interval: Option<u32>,
    /// Test hook (the benchmark): wait for the GPU before each read-back of an OpenGL
    /// core's frame, so --stats-json's gl numbers time the read-back alone.
    #[arg(long, hide = true)]
    pub test_gl_finish: bool,
    #[command(flatten)]
    pub video: VideoArgs,
}

/// Recording a video while playing.
#[derive(Debug, Clone, Args, Default)]
pub struct VideoArgs {
    /// Record the game as it is shown to a video file, in the background: .mp4 (H.264 +
    /// AAC), .webm (VP9 + Opus), .mkv, or .gif (no sound).
    #[arg(long, value_name = "FILE")]
    pub video: Option<PathBuf>,
    /// The --video file keeps every pixel and sample exact (.mkv: lossless H.264 in RGB + FLAC).
    #[arg(long, requires = "video")]
    pub lossless: bool,
    /// Overwrite the --video file if it exists.
    #[arg(long, requires = "video")]
    pub force: bool,
}

impl VideoArgs {
    /// The video to record while playing, if asked; `scale` is `--scale` as given (the
    /// video is that many times the game, as the window; without it, the most that fits
    /// 1080 lines).
    pub(super) fn to_output(&self, scale: Option<u32>) -> Result<Option<VideoOutput>, CliError> {
        let Some(path) = &self.video else {
            return Ok(None);
        };
        let mut settings = VideoSettings::new(path.clone(), self.lossless, scale, self.force)?;
        settings.realtime = true;
        Ok(Some(VideoOutput {
            settings,
            from_frame: 0,
        }))
    }
}
/// How a run is shown: flags shared by `play` (and so `host`/`join`) and `replay`.
#[derive(Debug, Clone, Args)]
pub struct ViewArgs {
    /// Directory for BIOS files and FBNeo support files.
    #[arg(long, value_name = "DIR")]
    pub system_dir: Option<PathBuf>,
    /// Start fullscreen.
    #[arg(long)]
    pub fullscreen: bool,
    /// Initial window size as a multiple of the game's resolution.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub scale: Option<u32>,
    /// Run without sound.
    #[arg(long)]
    pub no_audio: bool,
    /// Test hook: save the displayed frame as PNG once FRAME frames have run.
    #[arg(long, hide = true, num_args = 2, value_names = ["FRAME", "PATH"])]
    pub screenshot_at: Option<Vec<String>>,
    /// Test hook: headless, stay busy MS milliseconds after each displayed frame, as a
    /// window's drawing and vsync wait keep the frame loop busy.
    #[arg(long, hide = true, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub busy_frame_ms: Option<u64>,
}

fn parse_option(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

impl PlayArgs {
    /// `to_options` for host and join: they record into the recordings directory unless
    /// told otherwise.
    pub fn to_netplay_options(&self, config: &Config) -> Result<PlayOptions, CliError> {
        let mut o = self.to_options(config)?;
        if self.record.is_none() && !self.no_record {
            o.record = RecordMode::Dir(config.resolved_paths().recordings_dir);
        }
        Ok(o)
    }

    /// Merges flags over the config file (flags win).
    pub fn to_options(&self, config: &Config) -> Result<PlayOptions, CliError> {
        let dirs = core_dirs(config);
        let core = match (&self.core, &self.content) {
            (Some(p), _) => CoreSource::Path(core_path(p, &dirs)?),
            (None, None) => CoreSource::Builtin,
            (None, Some(c)) => {
                let cores = catalog::list(&dirs);
                CoreSource::Path(catalog::for_content(c, &cores, &dirs)?.path.clone())
            }
        };
        let paths = config.resolved_paths();
        let mut options: Vec<(String, String)> = Vec::new();
        let all = config
            .core_options
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .chain(self.options.iter().cloned());
        for (k, v) in all {
            options.retain(|(key, _)| *key != k);
            options.push((k, v));
        }
        let screenshot_at = match self.view.screenshot_at.as_deref() {
            Some([frame, path]) => Some((
                frame
                    .parse()
                    .map_err(|_| CliError::ScreenshotFrame(frame.clone()))?,
                PathBuf::from(path),
            )),
            _ => None,
        };
        let runner = RunnerConfig {
            fast: self.fast,
            max_frames: self.frames,
            // A window shows one frame per refresh even when fast-forwarding.
            fast_budget: if self.headless {
                Duration::from_millis(2)
            } else {
                Duration::from_millis(16)
            },
            ..RunnerConfig::default()
        };
        Ok(PlayOptions {
            core,
            content: self.content.clone(),
            host: CoreConfig {
                system_dir: self.view.system_dir.clone().unwrap_or(paths.system_dir),
                save_dir: self.save_dir.clone().unwrap_or(paths.save_dir),
                options,
                netplay: false,
                ignore_loads: self.test_ignore_loads,
                gl_finish: self.test_gl_finish,
            },
            headless: self.headless,
            runner,
            bot: self.bot,
            stats_json: self.stats_json.clone(),
            screenshot_at,
            busy_frame: self.view.busy_frame_ms.map(Duration::from_millis),
            scale: self.view.scale.unwrap_or(config.video.scale).clamp(1, 16),
            fullscreen: self.view.fullscreen || config.video.fullscreen,
            vsync: config.video.vsync,
            screenshots_dir: paths.screenshots_dir,
            audio: AudioSettings {
                enabled: config.audio.enabled && !self.view.no_audio && !self.headless,
                latency_ms: config.audio.latency_ms,
            },
            keymaps: config.keymaps(),
            record: self
                .record
                .clone()
                .map_or(RecordMode::Off, RecordMode::File),
            sync_test: None,
            record_checksum_interval: self
                .test_checksum_interval
                .unwrap_or(crate::app::record::DEFAULT_CHECKSUM_INTERVAL),
            taps: Vec::new(),
            hash_shown: None,
            video: self.video.to_output(self.view.scale)?,
            chat: None,
            chat_key: config.input.chat.get_ref().clone(),
        })
    }
}
