//! The libretro host: loads a core (a `*_libretro.so` or the built-in game), answers its
//! callbacks, feeds it one frame of input at a time and hands back video, audio, state
//! and a desync checksum. It knows nothing about netplay or windows. A core that draws with
//! OpenGL gets a context of its own, without a window, and its picture comes back through
//! the same [`VideoFrame`] as a software core's (`gl`).
//!
//! **One core per process.** libretro callbacks carry no user pointer and cores keep
//! global state, so only one [`Core`] may be alive at a time; [`Core::open`] returns
//! [`HostError::AlreadyOpen`] otherwise. Run two cores in two processes.

mod api;
pub mod catalog;
mod checksum;
mod environment;
mod fbneo;
mod ffi;
pub mod gl;
mod instance;
mod log;
mod options;
mod sram;
mod state;
mod video;

use std::path::PathBuf;

// The I/O errors below quote the OS's words through `io_reason`, lowercase like every other
// message, and keep the `io::Error` in a field not named `source` so that it is not quoted a
// second time, capitalised, as their cause.
use crate::wording::io_reason;

pub use self::api::CoreSource;
pub use self::instance::{hash_file, Core};
pub use self::options::OptionDef;
pub use self::video::VideoFrame;

fn dir_list(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// How the host presents itself to a core (the netplay host's handshake settings are
/// `session::HostConfig`).
#[derive(Clone, Debug, Default)]
pub struct CoreConfig {
    /// Answer to GET_SYSTEM_DIRECTORY (BIOS files, FBNeo's `fbneo/` folder); created if missing.
    pub system_dir: PathBuf,
    /// Answer to GET_SAVE_DIRECTORY and home of `<content stem>.srm`; created if missing.
    pub save_dir: PathBuf,
    /// Core options (`key`, `value`), applied when the core registers the key.
    pub options: Vec<(String, String)>,
    /// Report the ROLLBACK_NETPLAY savestate context (fixed for the core's lifetime) and
    /// default `fbneo-hiscores` to `disabled` unless `options` sets it.
    pub netplay: bool,
    /// Test hook: `unserialize` reports success and loads nothing, as a core whose states
    /// do not round-trip (`play --test-ignore-loads`, for the sync test's own test).
    pub ignore_loads: bool,
    /// Test hook for the benchmark: wait for the GPU before each hardware frame's read-back
    /// (glFinish), so the read-back's time is its own (`play --test-gl-finish`).
    pub gl_finish: bool,
}

/// What a core says about itself (`retro_get_system_info`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreInfo {
    pub library_name: String,
    pub library_version: String,
    /// Pipe-separated extensions, e.g. `"md|bin|gen"`.
    pub valid_extensions: String,
    /// The core reads content itself from a path (FBNeo: the romset zip).
    pub need_fullpath: bool,
    /// Archives must be passed as-is, not extracted.
    pub block_extract: bool,
    /// The core can start without content (SET_SUPPORT_NO_GAME).
    pub support_no_game: bool,
}

/// Timing and geometry; updated by SET_SYSTEM_AV_INFO and SET_GEOMETRY.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AvInfo {
    pub fps: f64,
    pub sample_rate: f64,
    pub base_width: u32,
    pub base_height: u32,
    pub max_width: u32,
    pub max_height: u32,
    /// Display aspect ratio; `base_width / base_height` when the core gives none.
    pub aspect_ratio: f32,
}

impl AvInfo {
    fn update_from(&mut self, av: &ffi::SystemAvInfo) {
        self.fps = av.timing.fps;
        self.sample_rate = av.timing.sample_rate;
        self.max_width = av.geometry.max_width;
        self.max_height = av.geometry.max_height;
        self.update_geometry(&av.geometry);
    }

    fn update_geometry(&mut self, g: &ffi::GameGeometry) {
        self.base_width = g.base_width;
        self.base_height = g.base_height;
        self.aspect_ratio = if g.aspect_ratio > 0.0 {
            g.aspect_ratio
        } else if g.base_height > 0 {
            g.base_width as f32 / g.base_height as f32
        } else {
            0.0
        };
    }
}

/// A memory region a core may expose (`RETRO_MEMORY_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryRegion {
    SaveRam,
    Rtc,
    SystemRam,
    VideoRam,
}

impl MemoryRegion {
    fn id(self) -> std::ffi::c_uint {
        match self {
            MemoryRegion::SaveRam => ffi::MEMORY_SAVE_RAM,
            MemoryRegion::Rtc => ffi::MEMORY_RTC,
            MemoryRegion::SystemRam => ffi::MEMORY_SYSTEM_RAM,
            MemoryRegion::VideoRam => ffi::MEMORY_VIDEO_RAM,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// `--core NAME` is in none of the search directories.
    #[error("no core named {name}: looked for {name}{} in {} (set [paths] cores_dir in the config, or pass --core PATH)", catalog::SUFFIX, dir_list(.looked))]
    CoreNotFound { name: String, looked: Vec<PathBuf> },
    /// CONTENT without `--core`, and no core found takes its extension.
    #[error("no core found takes {}: looked in {} (pass --core NAME or --core PATH)", .content.display(), dir_list(.looked))]
    NoCoreFor {
        content: PathBuf,
        looked: Vec<PathBuf>,
    },
    /// CONTENT without `--core`, and more than one core takes its extension.
    #[error("several cores take {}: {}; pick one with --core NAME", .content.display(), .names.join(", "))]
    SeveralCoresFor {
        content: PathBuf,
        names: Vec<String>,
    },
    /// The core file is missing, unreadable or a directory.
    #[error("cannot open core {}: {}", .path.display(), io_reason(.io))]
    OpenCore { path: PathBuf, io: std::io::Error },
    #[error("{path} is not a libretro core: {reason}")]
    NotACore { path: PathBuf, reason: String },
    #[error("{path} is not a libretro core: missing symbol {symbol}")]
    MissingSymbol { path: PathBuf, symbol: &'static str },
    #[error("core speaks libretro api version {found}, framelock speaks {expected}")]
    ApiVersion { found: u32, expected: u32 },
    #[error("a core is already open in this process (only one core per process)")]
    AlreadyOpen,
    #[error("cannot create directory {}: {}", .path.display(), io_reason(.io))]
    CreateDir { path: PathBuf, io: std::io::Error },
    /// The content file is missing, unreadable, a directory or not a regular file.
    #[error("cannot read content {}: {}", .path.display(), io_reason(.io))]
    ReadContent { path: PathBuf, io: std::io::Error },
    #[error("content path {} cannot be given to a core (it holds a NUL byte)", .0.display())]
    ContentPathNul(PathBuf),
    #[error("{}{}", refused(.path), last_line(.log))]
    ContentRefused { path: PathBuf, log: Option<String> },
    #[error("{core} needs content to start (give a game file)")]
    ContentRequired { core: String },
    #[error("core requested shutdown while loading {content}{}", last_line(.log))]
    ShutdownDuringLoad {
        content: String,
        log: Option<String>,
    },
    #[error("{}", romset_message(.set, .missing))]
    MissingRomset { set: String, missing: Vec<String> },
    #[error("content is already loaded")]
    AlreadyLoaded,
    #[error("no content is loaded")]
    NotLoaded,
    #[error("invalid value {value:?} for core option {key} (allowed: {allowed})")]
    InvalidOption {
        key: String,
        value: String,
        allowed: String,
    },
    #[error("unknown core option {0}")]
    UnknownOption(String),
    #[error("core does not support savestates")]
    SerializeUnsupported,
    #[error("core failed to write its state")]
    SerializeFailed,
    #[error("core rejected a state of {len} bytes")]
    UnserializeFailed { len: usize },
    /// SET_HW_RENDER for an API framelock does not draw with.
    #[error("{core} asks for {asked} rendering; framelock runs OpenGL and OpenGL ES cores only")]
    HwUnsupported { core: String, asked: String },
    /// SET_HW_RENDER for OpenGL, but no such context can be made here.
    #[error("{core} asks for an {asked} context, and none can be made: {reason}")]
    HwContext {
        core: String,
        asked: String,
        reason: String,
    },
    #[error("cannot write save ram {}: {}", .path.display(), io_reason(.io))]
    WriteSram { path: PathBuf, io: std::io::Error },
}

impl HostError {
    /// Whether the message names the core or content file it is about: a caller that would
    /// add "loading core X: " should not say X twice. (A hardware context's refusal names
    /// the core, and happens with or without content.)
    pub fn names_its_file(&self) -> bool {
        matches!(
            self,
            HostError::OpenCore { .. }
                | HostError::NotACore { .. }
                | HostError::MissingSymbol { .. }
                | HostError::ReadContent { .. }
                | HostError::ContentPathNul(_)
                | HostError::ContentRefused { .. }
                | HostError::ShutdownDuringLoad { .. }
                | HostError::HwUnsupported { .. }
                | HostError::HwContext { .. }
        )
    }
}

/// What a core refused: content, or (empty `path`) to start without any.
fn refused(path: &std::path::Path) -> String {
    if path.as_os_str().is_empty() {
        "core refused to start without content".into()
    } else {
        format!("core refused content {}", path.display())
    }
}

fn last_line(log: &Option<String>) -> String {
    log.as_ref()
        .map(|l| format!(" (core log: {l})"))
        .unwrap_or_default()
}

fn romset_message(set: &str, missing: &[String]) -> String {
    if missing.is_empty() {
        format!(
            "romset {set} not found or unusable (looked beside the content, in SYSTEM/fbneo and SYSTEM)"
        )
    } else {
        format!("romset {set} is incomplete: missing {}", missing.join(", "))
    }
}
