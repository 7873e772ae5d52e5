//! The flags of `framelock replay` and how they become [`ReplayOptions`]: a replay is a
//! `play` run whose inputs come from the log. Imports `play`'s flags, no netplay's.
// The field docs are `--help` texts: `[IPV6]:PORT` or `[paths]` there are what the user
// types, not links to items.
#![allow(rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;

use clap::Args;

use super::cores::{core_dirs, core_path};
use super::error::CliError;
use super::play::{PlayArgs, VideoArgs, ViewArgs};
use crate::app::replay::ReplayOptions;
use crate::app::video_capture::VideoOutput;
use crate::config::Config;
use crate::video::VideoSettings;

#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// The input log (.flr) to replay, or a server's replay as its link
    /// (framelock://HOST/replay/ID), fetched first.
    #[arg(value_name = "LOG|LINK")]
    pub log: PathBuf,
    /// Game file, if it is no longer where the log was recorded.
    #[arg(value_name = "CONTENT")]
    pub content: Option<PathBuf>,
    /// libretro core (a name, as `framelock cores` lists them, or a path), if it is no longer
    /// where the log was recorded; without it, a core found by name of the name and version
    /// the log names runs it.
    #[arg(long, value_name = "NAME|PATH")]
    pub core: Option<PathBuf>,
    /// No window, no audio device (tests, CI, servers).
    #[arg(long)]
    pub headless: bool,
    /// Run as fast as possible.
    #[arg(long, conflicts_with = "speed")]
    pub fast: bool,
    /// Playback speed relative to the recording, from 0.5 to 2.
    #[arg(long, value_name = "X", default_value_t = 1.0, value_parser = parse_speed)]
    pub speed: f64,
    /// Stop before frame N.
    #[arg(long, value_name = "N")]
    pub to_frame: Option<u64>,
    /// Check every recorded checksum: exit non-zero naming the first frame that differs, if
    /// the log is truncated, or if the replay stops before the end of the log (or --to-frame).
    #[arg(long)]
    pub verify: bool,
    /// Write run statistics (frames, checksum, fps, wall_s, verify results) as JSON at exit.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,
    /// Write the replay as a video file with its sound, headless and as fast as it goes: the
    /// extension picks .mp4 (H.264 + AAC), .webm (VP9 + Opus), .mkv or .gif (no sound).
    /// --scale N scales by N (default: the largest that fits 1080 lines).
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
    /// The exported .mkv keeps every pixel and sample exact (lossless H.264 in RGB + FLAC).
    #[arg(long, requires = "export")]
    pub lossless: bool,
    /// Overwrite the --export file if it exists.
    #[arg(long, requires = "export")]
    pub force: bool,
    /// Start the exported video at frame N (the frames before run without being encoded).
    #[arg(long, value_name = "N", requires = "export")]
    pub from_frame: Option<u64>,
    #[command(flatten)]
    pub view: ViewArgs,
}

impl ReplayArgs {
    /// Watching `log` in a window (headless if `play` says so), as `framelock open` does
    /// with a replay's link.
    pub fn watch(log: PathBuf, play: &PlayArgs) -> ReplayArgs {
        ReplayArgs {
            log,
            content: play.content.clone(),
            core: play.core.clone(),
            headless: play.headless,
            fast: play.fast,
            speed: 1.0,
            to_frame: None,
            verify: false,
            stats_json: play.stats_json.clone(),
            export: None,
            lossless: false,
            force: false,
            from_frame: None,
            view: play.view.clone(),
        }
    }
}

fn parse_speed(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        // The frame runner paces feeds between half and double speed.
        Ok(x) if (0.5..=2.0).contains(&x) => Ok(x),
        _ => Err(format!("expected a speed from 0.5 to 2, got {s:?}")),
    }
}

impl ReplayArgs {
    pub fn to_options(&self, config: &Config) -> Result<ReplayOptions, CliError> {
        let play = PlayArgs {
            content: None,
            core: None,
            headless: self.headless,
            frames: None,
            fast: self.fast,
            bot: None,
            stats_json: self.stats_json.clone(),
            options: Vec::new(),
            save_dir: None,
            view: self.view.clone(),
            record: None,
            no_record: true,
            test_ignore_loads: false,
            test_checksum_interval: None,
            test_gl_finish: false,
            video: VideoArgs::default(),
        }
        .to_options(config)?;
        let mut play = play;
        if let Some(path) = &self.export {
            if let (Some(from), Some(to)) = (self.from_frame, self.to_frame) {
                if from >= to {
                    return Err(CliError::Invalid(format!(
                        "--from-frame {from} is not before --to-frame {to}"
                    )));
                }
            }
            // An export runs headless and as fast as the machine allows.
            play.headless = true;
            play.runner.fast = true;
            play.audio.enabled = false;
            play.video = Some(VideoOutput {
                settings: VideoSettings::new(
                    path.clone(),
                    self.lossless,
                    self.view.scale,
                    self.force,
                )?,
                // A log frame: `replay` turns it into one of the session's.
                from_frame: self.from_frame.unwrap_or(0),
            });
        }
        let core_dirs = core_dirs(config);
        Ok(ReplayOptions {
            log: self.log.clone(),
            core: self
                .core
                .as_deref()
                .map(|c| core_path(c, &core_dirs))
                .transpose()?,
            core_dirs,
            content: self.content.clone(),
            play,
            speed: self.speed,
            verify: self.verify,
            to_frame: self.to_frame,
        })
    }
}
