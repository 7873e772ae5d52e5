//! Per-instance host state that the core's callbacks reach.
//!
//! libretro callbacks carry no user pointer, so the state of the (single) live core sits
//! in a process-wide static. Discipline: the lock is only ever held for short, self-
//! contained updates, never while calling into the core (the core calls back from
//! `retro_run`, `retro_load_game`, ... and would deadlock).

use std::collections::HashSet;
use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::gl::HwRender;
use super::options::Options;
use super::video::{PixelFormat, RawFrame};
use super::{AvInfo, CoreConfig, HostError};
use crate::input::{Inputs, Pad};

/// Option values that keep peers in step, used in netplay unless the caller sets the key:
/// FBNeo's hiscore files differ between machines, and Genesis Plus GX's emulated 68K
/// address errors do not come back equal from its saved states (`play --sync-test 8`
/// fails on Airstriker with them), which rollback loads every few frames.
pub const NETPLAY_OPTION_DEFAULTS: &[(&str, &str)] = &[
    ("fbneo-hiscores", "disabled"),
    ("genesis_plus_gx_addr_error", "disabled"),
];

pub struct HostState {
    pub system_dir: CString,
    pub save_dir: CString,
    pub libretro_path: Option<CString>,
    pub netplay: bool,
    pub pixel_format: PixelFormat,
    /// The frame copied by the last `video_refresh`, waiting to be taken by `Core`.
    pub frame: RawFrame,
    pub frame_fresh: bool,
    pub audio: Vec<i16>,
    pub inputs: Inputs,
    pub av: AvInfo,
    pub rotation: u32,
    pub options: Options,
    pub shutdown: bool,
    pub support_no_game: bool,
    /// Ports described by SET_CONTROLLER_INFO.
    pub controller_ports: u32,
    pub serialization_quirks: u64,
    pub unknown_commands: HashSet<u32>,
    /// The core's name (`retro_get_system_info`), for messages about it.
    pub core_name: String,
    /// The hardware rendering the core negotiated (SET_HW_RENDER).
    pub hw: Option<HwRender>,
    /// Why the last SET_HW_RENDER was refused, for a load that then fails.
    pub hw_refusal: Option<HostError>,
    /// The size of the hardware frame presented since `Core` last looked (the picture
    /// waits in `hw`).
    pub hw_frame: Option<(u32, u32)>,
    /// `CoreConfig::gl_finish`.
    pub gl_finish: bool,
    /// The buffer handed out by GET_CURRENT_SOFTWARE_FRAMEBUFFER.
    pub soft_framebuffer: Vec<u32>,
}

impl HostState {
    pub fn new(config: &CoreConfig, libretro_path: Option<&Path>) -> HostState {
        let c = |p: &Path| CString::new(p.to_string_lossy().into_owned()).unwrap_or_default();
        HostState {
            system_dir: c(&config.system_dir),
            save_dir: c(&config.save_dir),
            libretro_path: libretro_path.map(c),
            netplay: config.netplay,
            pixel_format: PixelFormat::DEFAULT,
            frame: RawFrame::default(),
            frame_fresh: false,
            audio: Vec::new(),
            inputs: [Pad::NEUTRAL; crate::input::MAX_PLAYERS],
            av: AvInfo::default(),
            rotation: 0,
            options: Options::new(&config.options).with_soft_defaults(if config.netplay {
                NETPLAY_OPTION_DEFAULTS
            } else {
                &[]
            }),
            shutdown: false,
            support_no_game: false,
            controller_ports: 0,
            serialization_quirks: 0,
            unknown_commands: HashSet::new(),
            core_name: String::new(),
            hw: None,
            hw_refusal: None,
            hw_frame: None,
            gl_finish: config.gl_finish,
            soft_framebuffer: Vec::new(),
        }
    }
}

static STATE: Mutex<Option<HostState>> = Mutex::new(None);
static ALIVE: AtomicBool = AtomicBool::new(false);

fn lock() -> MutexGuard<'static, Option<HostState>> {
    // A panic caught at a callback boundary may poison the lock; the state is still usable.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on the live state; `None` if no core is installed.
pub fn with<R>(f: impl FnOnce(&mut HostState) -> R) -> Option<R> {
    lock().as_mut().map(f)
}

pub fn install(state: HostState) {
    *lock() = Some(state);
}

pub fn remove() {
    *lock() = None;
}

/// Claims the process's single core slot; false if a core is already alive.
pub fn claim() -> bool {
    ALIVE
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
}

pub fn release() {
    ALIVE.store(false, Ordering::Release);
}
