//! Command-line interface (clap derive) and its layering over the config file.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::app::{PlayOptions, RunnerConfig};
use crate::config::Config;
use crate::frontend::audio::AudioSettings;
use crate::host::{CoreSource, HostConfig};

const AFTER_HELP: &str = "\
Examples:
  framelock play                                   play the built-in game (lightcycles)
  framelock play game.md --core genesis_plus_gx_libretro.so
  framelock play sf2.zip --core fbneo_libretro.so --option fbneo-hiscores=disabled
  framelock play --headless --fast --frames 6000 --bot 1 --stats-json stats.json

Keys: arrows/Z/X/A/S/Q/W/Enter/RShift = player 1, I/J/K/L/V/B/F/G/R/T/6/5 = player 2,
P pause, F11 or Alt+Enter fullscreen, F12 screenshot, Esc quit.
Config: ~/.config/framelock/config.toml (see README). Logging: RUST_LOG=debug.";

#[derive(Debug, Parser)]
#[command(name = "framelock", version, about = "Libretro frontend for playing arcade games with friends over keyframe lockstep netplay", after_help = AFTER_HELP)]
pub struct Cli {
    /// Config file to use instead of ~/.config/framelock/config.toml.
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play a game locally (the built-in game without CONTENT and --core).
    #[command(after_help = AFTER_HELP)]
    Play(PlayArgs),
}

#[derive(Debug, Clone, Args)]
pub struct PlayArgs {
    /// Game file (ROM, or an FBNeo romset zip). Needs --core.
    #[arg(value_name = "CONTENT")]
    pub content: Option<PathBuf>,
    /// libretro core (*_libretro.so). Default: the built-in game.
    #[arg(long, value_name = "PATH")]
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
    /// A synthetic player 1 pressing random but plausible buttons, the same for a SEED.
    #[arg(long, value_name = "SEED")]
    pub bot: Option<u64>,
    /// Write run statistics (frames, checksum, fps, wall_s, core, content) as JSON at exit.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,
    /// Core option, repeatable; overrides [core_options] in the config file.
    #[arg(long = "option", value_name = "KEY=VALUE", value_parser = parse_option)]
    pub options: Vec<(String, String)>,
    /// Directory for BIOS files and FBNeo support files.
    #[arg(long, value_name = "DIR")]
    pub system_dir: Option<PathBuf>,
    /// Directory for save RAM (.srm).
    #[arg(long, value_name = "DIR")]
    pub save_dir: Option<PathBuf>,
    /// Start fullscreen.
    #[arg(long)]
    pub fullscreen: bool,
    /// Initial window size as a multiple of the game's resolution.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub scale: Option<u32>,
    /// Play without sound.
    #[arg(long)]
    pub no_audio: bool,
    /// Test hook: save the displayed frame as PNG once FRAME frames have run.
    #[arg(long, hide = true, num_args = 2, value_names = ["FRAME", "PATH"])]
    pub screenshot_at: Option<Vec<String>>,
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("which core should run {}? pass --core PATH (without CONTENT and --core the built-in game runs)", .0.display())]
    ContentWithoutCore(PathBuf),
    #[error("--screenshot-at FRAME PATH: {0:?} is not a frame number")]
    ScreenshotFrame(String),
}

fn parse_option(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

impl PlayArgs {
    /// Merges flags over the config file (flags win).
    pub fn to_options(&self, config: &Config) -> Result<PlayOptions, CliError> {
        let core = match (&self.core, &self.content) {
            (Some(p), _) => CoreSource::Path(p.clone()),
            (None, None) => CoreSource::Builtin,
            (None, Some(c)) => return Err(CliError::ContentWithoutCore(c.clone())),
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
        let screenshot_at = match self.screenshot_at.as_deref() {
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
            host: HostConfig {
                system_dir: self.system_dir.clone().unwrap_or(paths.system_dir),
                save_dir: self.save_dir.clone().unwrap_or(paths.save_dir),
                options,
                netplay: false,
            },
            headless: self.headless,
            runner,
            bot: self.bot,
            stats_json: self.stats_json.clone(),
            screenshot_at,
            scale: self.scale.unwrap_or(config.video.scale).clamp(1, 16),
            fullscreen: self.fullscreen || config.video.fullscreen,
            vsync: config.video.vsync,
            screenshots_dir: paths.screenshots_dir,
            audio: AudioSettings {
                enabled: config.audio.enabled && !self.no_audio && !self.headless,
                latency_ms: config.audio.latency_ms,
            },
            keymaps: config.keymaps(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn play(args: &[&str]) -> PlayArgs {
        let mut argv = vec!["framelock", "play"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Play(p) => p,
        }
    }

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults_to_the_builtin_game() {
        let o = play(&[]).to_options(&Config::default()).unwrap();
        assert_eq!(o.core, CoreSource::Builtin);
        assert!(o.content.is_none());
        assert!(!o.headless && !o.runner.fast && o.runner.max_frames.is_none());
        assert!(o.audio.enabled);
    }

    #[test]
    fn flags_override_the_config_file() {
        let config = Config::parse(
            "[video]\nscale = 2\n[core_options]\na = \"1\"\nb = \"2\"\n[paths]\nsave_dir = \"/cfg/saves\"\n",
            std::path::Path::new("c.toml"),
        )
        .unwrap();
        let o = play(&[
            "rom.md",
            "--core",
            "x.so",
            "--option",
            "b=3",
            "--option",
            "c=4=5",
            "--scale",
            "4",
            "--headless",
            "--fast",
            "--frames",
            "60",
            "--bot",
            "9",
            "--system-dir",
            "/sys",
        ])
        .to_options(&config)
        .unwrap();
        assert_eq!(o.core, CoreSource::Path("x.so".into()));
        assert_eq!(o.scale, 4);
        assert_eq!(
            o.host.options,
            vec![
                ("a".to_string(), "1".to_string()),
                ("b".to_string(), "3".to_string()),
                ("c".to_string(), "4=5".to_string())
            ]
        );
        assert_eq!(o.host.save_dir, PathBuf::from("/cfg/saves"));
        assert_eq!(o.host.system_dir, PathBuf::from("/sys"));
        assert_eq!(o.runner.max_frames, Some(60));
        assert!(o.runner.fast && o.headless && !o.audio.enabled);
        assert_eq!(o.bot, Some(9));
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(matches!(
            play(&["rom.md"]).to_options(&Config::default()),
            Err(CliError::ContentWithoutCore(_))
        ));
        assert!(Cli::try_parse_from(["framelock", "play", "--option", "novalue"]).is_err());
        assert!(Cli::try_parse_from(["framelock", "play", "--scale", "0"]).is_err());
        let p = play(&["--screenshot-at", "x", "out.png"]);
        assert!(p.to_options(&Config::default()).is_err());
        let p = play(&["--screenshot-at", "30", "out.png"]);
        let o = p.to_options(&Config::default()).unwrap();
        assert_eq!(o.screenshot_at, Some((30, PathBuf::from("out.png"))));
    }
}
