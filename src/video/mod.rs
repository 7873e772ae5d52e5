//! Video files of what a core shows: `replay LOG --export FILE` and `--video FILE` while
//! playing. Frames and sound go raw through pipes to Debian's `ffmpeg` binary (nothing is
//! linked), which encodes them in the background while the game runs. It imports `frontend` only
//! for the picture's shape (`aspect`, `image`), and nothing from `app`, `netplay` or `cli`.
//!
//! - [`format`](mod@format): the file's extension picks the container and codecs;
//! - [`canvas`]: each frame drawn upright into one fixed picture size, as the window shows it;
//! - [`ffmpeg`]: the encoder process and its pipes;
//! - [`encoder`]: the thread that feeds it, behind a bounded channel.
//!
//! One video frame per emulated frame at the core's own rate, as an exact fraction (NTSC's
//! 59.92 fps stays 59.92); sound at the core's sample rate (rounded to a whole number of
//! Hz), resampled only for a codec that needs it (Opus, AAC at an unusual rate).

pub mod canvas;
pub mod encoder;
pub mod ffmpeg;
pub mod format;

use std::path::PathBuf;

pub use canvas::{pick_scale, Canvas, Geometry};
pub use encoder::{Encoder, Frame, Stream, Summary};
pub use format::Format;

/// Where a video goes and how.
#[derive(Clone, Debug, PartialEq)]
pub struct VideoSettings {
    pub path: PathBuf,
    pub format: Format,
    /// Whole-number scale of the core's base height; `None`: the largest fitting 1080 lines.
    pub scale: Option<u32>,
    /// Replace an existing file.
    pub force: bool,
    /// Recording beside a game being played: a faster encoder preset, and frames the encoder
    /// cannot take at once are shown again later rather than making the game wait.
    pub realtime: bool,
}

impl VideoSettings {
    /// Settings for `path`, its format from its extension.
    pub fn new(
        path: PathBuf,
        lossless: bool,
        scale: Option<u32>,
        force: bool,
    ) -> Result<Self, VideoError> {
        Ok(VideoSettings {
            format: Format::for_path(&path, lossless)?,
            path,
            scale,
            force,
            realtime: false,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VideoError {
    #[error("install ffmpeg (apt install ffmpeg) to export video")]
    FfmpegMissing,
    #[error("unknown video format {ext}: use {}", format::KNOWN)]
    UnknownFormat { ext: String },
    #[error("--lossless needs a .mkv file (lossless H.264 in RGB and FLAC sound)")]
    LosslessNeedsMkv,
    #[error("{} exists; pass --force to overwrite it", .0.display())]
    Exists(PathBuf),
    #[error("cannot write {}: {}", .path.display(), crate::wording::io_reason(.io))]
    Output { path: PathBuf, io: std::io::Error },
    #[error("cannot start ffmpeg: {0}")]
    Spawn(std::io::Error),
    #[error("cannot make a pipe to ffmpeg: {0}")]
    Pipe(std::io::Error),
    #[error("ffmpeg failed writing {}: {message}", .path.display())]
    Ffmpeg { path: PathBuf, message: String },
    #[error("the video encoder stopped")]
    Stopped,
}
