//! The slice of `libretro.h` the host uses, written out by hand.
//!
//! `libretro-sys` 0.1.1 lacks the newer environment commands, declares `retro_serialize`
//! without its `bool` return and models the pixel format as a Rust enum (UB if a core
//! sends an unknown value), so the host keeps its own definitions. Core-provided enums
//! are always read as plain integers.

use std::ffi::{c_char, c_int, c_uint, c_void};

pub const RETRO_API_VERSION: c_uint = 1;

pub const DEVICE_JOYPAD: c_uint = 1;
pub const DEVICE_MASK: c_uint = 0xff;
pub const DEVICE_ID_JOYPAD_MASK: c_uint = 256;

pub const MEMORY_SAVE_RAM: c_uint = 0;
pub const MEMORY_RTC: c_uint = 1;
pub const MEMORY_SYSTEM_RAM: c_uint = 2;
pub const MEMORY_VIDEO_RAM: c_uint = 3;

pub const PIXEL_FORMAT_0RGB1555: c_int = 0;
pub const PIXEL_FORMAT_XRGB8888: c_int = 1;
pub const PIXEL_FORMAT_RGB565: c_int = 2;

pub const LOG_DEBUG: c_int = 0;
pub const LOG_INFO: c_int = 1;
pub const LOG_WARN: c_int = 2;

pub const SAVESTATE_CONTEXT_NORMAL: c_int = 0;
pub const SAVESTATE_CONTEXT_ROLLBACK_NETPLAY: c_int = 3;

/// Environment command numbers (`RETRO_ENVIRONMENT_*`).
pub mod env {
    use std::ffi::c_uint;

    pub const EXPERIMENTAL: c_uint = 0x10000;

    pub const SET_ROTATION: c_uint = 1;
    pub const GET_OVERSCAN: c_uint = 2;
    pub const GET_CAN_DUPE: c_uint = 3;
    pub const SET_MESSAGE: c_uint = 6;
    pub const SHUTDOWN: c_uint = 7;
    pub const SET_PERFORMANCE_LEVEL: c_uint = 8;
    pub const GET_SYSTEM_DIRECTORY: c_uint = 9;
    pub const SET_PIXEL_FORMAT: c_uint = 10;
    pub const SET_INPUT_DESCRIPTORS: c_uint = 11;
    pub const SET_HW_RENDER: c_uint = 14;
    pub const GET_VARIABLE: c_uint = 15;
    pub const SET_VARIABLES: c_uint = 16;
    pub const GET_VARIABLE_UPDATE: c_uint = 17;
    pub const SET_SUPPORT_NO_GAME: c_uint = 18;
    pub const GET_LIBRETRO_PATH: c_uint = 19;
    pub const GET_INPUT_DEVICE_CAPABILITIES: c_uint = 24;
    pub const GET_LOG_INTERFACE: c_uint = 27;
    pub const GET_SAVE_DIRECTORY: c_uint = 31;
    pub const SET_SYSTEM_AV_INFO: c_uint = 32;
    pub const SET_SUBSYSTEM_INFO: c_uint = 34;
    pub const SET_CONTROLLER_INFO: c_uint = 35;
    pub const SET_MEMORY_MAPS: c_uint = 36 | EXPERIMENTAL;
    pub const SET_GEOMETRY: c_uint = 37;
    pub const GET_LANGUAGE: c_uint = 39;
    pub const GET_CURRENT_SOFTWARE_FRAMEBUFFER: c_uint = 40 | EXPERIMENTAL;
    pub const GET_HW_RENDER_INTERFACE: c_uint = 41 | EXPERIMENTAL;
    pub const SET_SUPPORT_ACHIEVEMENTS: c_uint = 42 | EXPERIMENTAL;
    pub const SET_HW_RENDER_CONTEXT_NEGOTIATION_INTERFACE: c_uint = 43 | EXPERIMENTAL;
    pub const SET_SERIALIZATION_QUIRKS: c_uint = 44;
    pub const SET_HW_SHARED_CONTEXT: c_uint = 44 | EXPERIMENTAL;
    pub const GET_AUDIO_VIDEO_ENABLE: c_uint = 47 | EXPERIMENTAL;
    pub const GET_FASTFORWARDING: c_uint = 49 | EXPERIMENTAL;
    pub const GET_INPUT_BITMASKS: c_uint = 51 | EXPERIMENTAL;
    pub const GET_CORE_OPTIONS_VERSION: c_uint = 52;
    pub const GET_PREFERRED_HW_RENDER: c_uint = 56;
    pub const SET_CORE_OPTIONS: c_uint = 53;
    pub const SET_CORE_OPTIONS_INTL: c_uint = 54;
    pub const SET_CORE_OPTIONS_DISPLAY: c_uint = 55;
    pub const GET_MESSAGE_INTERFACE_VERSION: c_uint = 59;
    pub const SET_MESSAGE_EXT: c_uint = 60;
    pub const GET_INPUT_MAX_USERS: c_uint = 61;
    pub const SET_AUDIO_BUFFER_STATUS_CALLBACK: c_uint = 62;
    pub const SET_MINIMUM_AUDIO_LATENCY: c_uint = 63;
    pub const SET_FASTFORWARDING_OVERRIDE: c_uint = 64;
    pub const SET_CONTENT_INFO_OVERRIDE: c_uint = 65;
    pub const GET_GAME_INFO_EXT: c_uint = 66;
    pub const SET_CORE_OPTIONS_V2: c_uint = 67;
    pub const SET_CORE_OPTIONS_V2_INTL: c_uint = 68;
    pub const SET_CORE_OPTIONS_UPDATE_DISPLAY_CALLBACK: c_uint = 69;
    pub const SET_VARIABLE: c_uint = 70;
    pub const GET_SAVESTATE_CONTEXT: c_uint = 72 | EXPERIMENTAL;
    /// Newer headers renumbered SET_SERIALIZATION_QUIRKS; cores built against them send 87.
    pub const SET_SERIALIZATION_QUIRKS_NEW: c_uint = 87;
}

pub type EnvironmentFn = unsafe extern "C" fn(cmd: c_uint, data: *mut c_void) -> bool;
pub type VideoRefreshFn =
    unsafe extern "C" fn(data: *const c_void, width: c_uint, height: c_uint, pitch: usize);
pub type AudioSampleFn = unsafe extern "C" fn(left: i16, right: i16);
pub type AudioSampleBatchFn = unsafe extern "C" fn(data: *const i16, frames: usize) -> usize;
pub type InputPollFn = unsafe extern "C" fn();
pub type InputStateFn =
    unsafe extern "C" fn(port: c_uint, device: c_uint, index: c_uint, id: c_uint) -> i16;
pub type HwContextResetFn = unsafe extern "C" fn();
pub type HwGetCurrentFramebufferFn = unsafe extern "C" fn() -> usize;
/// Returns a function pointer (`retro_proc_address_t`), NULL if there is none.
pub type HwGetProcAddressFn = unsafe extern "C" fn(sym: *const c_char) -> *const c_void;
pub type LogPrintfFn = unsafe extern "C" fn(level: c_int, fmt: *const c_char, ...);

/// `RETRO_HW_FRAME_BUFFER_VALID`: what a hardware-rendered core presents instead of pixels.
pub const HW_FRAME_BUFFER_VALID: usize = usize::MAX;
/// `RETRO_HW_CONTEXT_OPENGL`, the answer to GET_PREFERRED_HW_RENDER.
pub const HW_CONTEXT_OPENGL: c_uint = 1;
pub const MEMORY_TYPE_CACHED: c_uint = 1;

/// `struct retro_hw_render_callback`; `context_type` read as a plain integer.
#[repr(C)]
pub struct HwRenderCallback {
    pub context_type: c_int,
    pub context_reset: Option<HwContextResetFn>,
    pub get_current_framebuffer: Option<HwGetCurrentFramebufferFn>,
    pub get_proc_address: Option<HwGetProcAddressFn>,
    pub depth: bool,
    pub stencil: bool,
    pub bottom_left_origin: bool,
    pub version_major: c_uint,
    pub version_minor: c_uint,
    pub cache_context: bool,
    pub context_destroy: Option<HwContextResetFn>,
    pub debug_context: bool,
}

/// `struct retro_framebuffer` (GET_CURRENT_SOFTWARE_FRAMEBUFFER).
#[repr(C)]
pub struct SoftwareFramebuffer {
    pub data: *mut c_void,
    pub width: c_uint,
    pub height: c_uint,
    pub pitch: usize,
    pub format: c_int,
    pub access_flags: c_uint,
    pub memory_flags: c_uint,
}

#[repr(C)]
pub struct SystemInfo {
    pub library_name: *const c_char,
    pub library_version: *const c_char,
    pub valid_extensions: *const c_char,
    pub need_fullpath: bool,
    pub block_extract: bool,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct GameGeometry {
    pub base_width: c_uint,
    pub base_height: c_uint,
    pub max_width: c_uint,
    pub max_height: c_uint,
    pub aspect_ratio: f32,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct SystemTiming {
    pub fps: f64,
    pub sample_rate: f64,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct SystemAvInfo {
    pub geometry: GameGeometry,
    pub timing: SystemTiming,
}

#[repr(C)]
pub struct GameInfo {
    pub path: *const c_char,
    pub data: *const c_void,
    pub size: usize,
    pub meta: *const c_char,
}

#[repr(C)]
pub struct Variable {
    pub key: *const c_char,
    pub value: *const c_char,
}

#[repr(C)]
pub struct Message {
    pub msg: *const c_char,
    pub frames: c_uint,
}

#[repr(C)]
pub struct MessageExt {
    pub msg: *const c_char,
    pub duration: c_uint,
    pub priority: c_uint,
    pub level: c_int,
    pub target: c_int,
    pub kind: c_int,
    pub progress: i8,
}

#[repr(C)]
pub struct LogCallback {
    pub log: Option<LogPrintfFn>,
}

pub const NUM_CORE_OPTION_VALUES_MAX: usize = 128;

#[repr(C)]
pub struct CoreOptionValue {
    pub value: *const c_char,
    pub label: *const c_char,
}

#[repr(C)]
pub struct CoreOptionDefinition {
    pub key: *const c_char,
    pub desc: *const c_char,
    pub info: *const c_char,
    pub values: [CoreOptionValue; NUM_CORE_OPTION_VALUES_MAX],
    pub default_value: *const c_char,
}

#[repr(C)]
pub struct CoreOptionsIntl {
    pub us: *const CoreOptionDefinition,
    pub local: *const CoreOptionDefinition,
}

#[repr(C)]
pub struct CoreOptionV2Definition {
    pub key: *const c_char,
    pub desc: *const c_char,
    pub desc_categorized: *const c_char,
    pub info: *const c_char,
    pub info_categorized: *const c_char,
    pub category_key: *const c_char,
    pub values: [CoreOptionValue; NUM_CORE_OPTION_VALUES_MAX],
    pub default_value: *const c_char,
}

#[repr(C)]
pub struct CoreOptionsV2 {
    pub categories: *const c_void,
    pub definitions: *const CoreOptionV2Definition,
}

#[repr(C)]
pub struct CoreOptionsV2Intl {
    pub us: *const CoreOptionsV2,
    pub local: *const CoreOptionsV2,
}

#[repr(C)]
pub struct InputDescriptor {
    pub port: c_uint,
    pub device: c_uint,
    pub index: c_uint,
    pub id: c_uint,
    pub description: *const c_char,
}

#[repr(C)]
pub struct ControllerDescription {
    pub desc: *const c_char,
    pub id: c_uint,
}

#[repr(C)]
pub struct ControllerInfo {
    pub types: *const ControllerDescription,
    pub num_types: c_uint,
}

#[repr(C)]
pub struct MemoryMap {
    pub descriptors: *const c_void,
    pub num_descriptors: c_uint,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    // Offsets as laid out by the C compiler for x86_64 / aarch64 (LP64).
    #[test]
    fn layouts_match_libretro_h() {
        assert_eq!(size_of::<SystemInfo>(), 32);
        assert_eq!(offset_of!(SystemInfo, block_extract), 25);
        assert_eq!(size_of::<SystemAvInfo>(), 40);
        assert_eq!(offset_of!(SystemAvInfo, timing), 24);
        assert_eq!(size_of::<GameInfo>(), 32);
        assert_eq!(size_of::<CoreOptionDefinition>(), 8 * 3 + 16 * 128 + 8);
        assert_eq!(
            offset_of!(CoreOptionV2Definition, default_value),
            8 * 6 + 16 * 128
        );
        assert_eq!(offset_of!(MessageExt, progress), 28);
        assert_eq!(size_of::<InputDescriptor>(), 24);
        assert_eq!(offset_of!(HwRenderCallback, depth), 32);
        assert_eq!(offset_of!(HwRenderCallback, version_major), 36);
        assert_eq!(offset_of!(HwRenderCallback, cache_context), 44);
        assert_eq!(offset_of!(HwRenderCallback, context_destroy), 48);
        assert_eq!(size_of::<HwRenderCallback>(), 64);
        assert_eq!(offset_of!(SoftwareFramebuffer, pitch), 16);
        assert_eq!(offset_of!(SoftwareFramebuffer, memory_flags), 32);
        assert_eq!(size_of::<SoftwareFramebuffer>(), 40);
    }
}
