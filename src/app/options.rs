//! What `play` and the commands built on it (recording, replay, netplay) are told: the
//! config file and the flags, merged. Nothing here runs anything; it must not import the
//! commands that read it.

use std::path::PathBuf;
use std::time::Duration;

use super::runner::RunnerConfig;
use super::video_capture::VideoOutput;
use crate::frontend::audio::AudioSettings;
use crate::host::{CoreConfig, CoreSource};
use crate::input::KeyMap;

/// Everything `play` needs, config file and flags already merged.
#[derive(Clone, Debug)]
pub struct PlayOptions {
    pub core: CoreSource,
    pub content: Option<PathBuf>,
    pub host: CoreConfig,
    /// No window, no audio device, no event loop.
    pub headless: bool,
    pub runner: RunnerConfig,
    /// Seed of a bot playing port 1.
    pub bot: Option<crate::input::BotSpec>,
    pub stats_json: Option<PathBuf>,
    pub screenshot_at: Option<(u64, PathBuf)>,
    /// Test hook (`--busy-frame-ms`): headless, the loop stays busy this long after each
    /// displayed frame, as it does in a window while drawing.
    pub busy_frame: Option<Duration>,
    pub scale: u32,
    pub fullscreen: bool,
    pub vsync: bool,
    pub screenshots_dir: PathBuf,
    pub audio: AudioSettings,
    pub keymaps: Vec<KeyMap>,
    /// Record the session to an input log (`--record`; netplay records by default).
    pub record: RecordMode,
    /// `play --sync-test N`: check the core's savestates round-trip, N frames deep.
    pub sync_test: Option<u32>,
    /// Frames between a `play` recording's checksums.
    pub record_checksum_interval: u32,
    /// Test hook (`--tap`): buttons pressed on port 1 for one frame each.
    pub taps: Vec<(u64, crate::input::Button)>,
    /// Test hook (`--hash-shown FROM:COUNT`): hashes of the images shown.
    pub hash_shown: Option<(u64, u64)>,
    /// Write the game as shown to a video file (`--video`, `replay --export`).
    pub video: Option<VideoOutput>,
    /// Netplay: the chat the window shows and takes typed lines for.
    pub chat: Option<crate::frontend::chat_board::ChatBoard>,
    /// The key (a `[input]` key name) that opens the window's chat line.
    pub chat_key: String,
}

/// Whether and where a session is recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RecordMode {
    #[default]
    Off,
    /// Into this file (refusing to overwrite it).
    File(PathBuf),
    /// Into a new dated file in this directory (`replay::default_recording_path`).
    Dir(PathBuf),
}
