//! The libretro C ABI over one global game, drawn with OpenGL through the frontend's
//! SET_HW_RENDER context.
//!
//! libretro callbacks carry no user pointer, so the instance lives in statics. No lock is
//! held while calling the frontend's environment, video, audio or input callbacks. Every
//! export catches panics: unwinding into C would abort.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::draw::{HEIGHT, WIDTH};
use crate::game::{self, pad, State, AUDIO_FRAMES, RAM_SIZE, SAMPLE_RATE, SIDES};
use crate::gl::{Dialect, Renderer};

const API_VERSION: c_uint = 1;
const DEVICE_JOYPAD: c_uint = 1;
const JOYPAD_MASK: c_uint = 256;
const MEMORY_MASK: c_uint = 0xff;
const MEMORY_SYSTEM_RAM: c_uint = 2;
const REGION_NTSC: c_uint = 0;
const EXPERIMENTAL: c_uint = 0x10000;

const ENV_SET_PIXEL_FORMAT: c_uint = 10;
const ENV_SET_INPUT_DESCRIPTORS: c_uint = 11;
const ENV_SET_HW_RENDER: c_uint = 14;
const ENV_GET_VARIABLE: c_uint = 15;
const ENV_SET_VARIABLES: c_uint = 16;
const ENV_GET_VARIABLE_UPDATE: c_uint = 17;
const ENV_SET_SUPPORT_NO_GAME: c_uint = 18;
const ENV_GET_LOG_INTERFACE: c_uint = 27;
const ENV_SET_CONTROLLER_INFO: c_uint = 35;
const ENV_GET_INPUT_BITMASKS: c_uint = 51 | EXPERIMENTAL;

const PIXEL_XRGB8888: c_int = 1;
const HW_FRAME_BUFFER_VALID: *const c_void = usize::MAX as *const c_void;

const LOG_INFO: c_int = 1;
const LOG_ERROR: c_int = 3;

/// Core option keys; values are `"Description; default|other|..."`.
pub const OPT_CONTEXT: &CStr = c"quadpong_context";
pub const OPT_ORIGIN: &CStr = c"quadpong_origin";
pub const OPT_BALLS: &CStr = c"quadpong_balls";

type EnvironmentFn = unsafe extern "C" fn(cmd: c_uint, data: *mut c_void) -> bool;
type VideoRefreshFn = unsafe extern "C" fn(*const c_void, c_uint, c_uint, usize);
type AudioSampleFn = unsafe extern "C" fn(i16, i16);
type AudioSampleBatchFn = unsafe extern "C" fn(*const i16, usize) -> usize;
type InputPollFn = unsafe extern "C" fn();
type InputStateFn = unsafe extern "C" fn(c_uint, c_uint, c_uint, c_uint) -> i16;
type LogPrintfFn = unsafe extern "C" fn(level: c_int, fmt: *const c_char, ...);
type ContextResetFn = unsafe extern "C" fn();
type GetFramebufferFn = unsafe extern "C" fn() -> usize;
type GetProcAddressFn = unsafe extern "C" fn(*const c_char) -> *const c_void;

#[repr(C)]
pub struct SystemInfo {
    library_name: *const c_char,
    library_version: *const c_char,
    valid_extensions: *const c_char,
    need_fullpath: bool,
    block_extract: bool,
}

#[repr(C)]
pub struct SystemAvInfo {
    base_width: c_uint,
    base_height: c_uint,
    max_width: c_uint,
    max_height: c_uint,
    aspect_ratio: f32,
    fps: f64,
    sample_rate: f64,
}

#[repr(C)]
pub struct GameInfo {
    path: *const c_char,
    data: *const c_void,
    size: usize,
    meta: *const c_char,
}

#[repr(C)]
struct Variable {
    key: *const c_char,
    value: *const c_char,
}

#[repr(C)]
struct InputDescriptor {
    port: c_uint,
    device: c_uint,
    index: c_uint,
    id: c_uint,
    description: *const c_char,
}

#[repr(C)]
struct ControllerDescription {
    desc: *const c_char,
    id: c_uint,
}

#[repr(C)]
struct ControllerInfo {
    types: *const ControllerDescription,
    num_types: c_uint,
}

#[repr(C)]
struct LogCallback {
    log: Option<LogPrintfFn>,
}

/// `struct retro_hw_render_callback`.
#[repr(C)]
struct HwRenderCallback {
    context_type: c_int,
    context_reset: Option<ContextResetFn>,
    get_current_framebuffer: Option<GetFramebufferFn>,
    get_proc_address: Option<GetProcAddressFn>,
    depth: bool,
    stencil: bool,
    bottom_left_origin: bool,
    version_major: c_uint,
    version_minor: c_uint,
    cache_context: bool,
    context_destroy: Option<ContextResetFn>,
    debug_context: bool,
}

/// What the frontend gave us through the `retro_set_*` calls and SET_HW_RENDER.
#[derive(Copy, Clone)]
struct Callbacks {
    env: Option<EnvironmentFn>,
    video: Option<VideoRefreshFn>,
    sample: Option<AudioSampleFn>,
    batch: Option<AudioSampleBatchFn>,
    poll: Option<InputPollFn>,
    state: Option<InputStateFn>,
    log: Option<LogPrintfFn>,
    framebuffer: Option<GetFramebufferFn>,
    proc_address: Option<GetProcAddressFn>,
}

static CALLBACKS: Mutex<Callbacks> = Mutex::new(Callbacks {
    env: None,
    video: None,
    sample: None,
    batch: None,
    poll: None,
    state: None,
    log: None,
    framebuffer: None,
    proc_address: None,
});

/// The context the core asks for (`quadpong_context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Context {
    GlCore,
    GlCompat,
    Gles2,
    Gles3,
    /// A Vulkan request, which this core cannot draw with: a frontend's refusal to test.
    Vulkan,
}

impl Context {
    fn from_option(v: Option<&str>) -> Context {
        match v {
            Some("gl") => Context::GlCompat,
            Some("gles2") => Context::Gles2,
            Some("gles3") => Context::Gles3,
            Some("vulkan") => Context::Vulkan,
            _ => Context::GlCore,
        }
    }

    /// (`retro_hw_context_type`, major, minor).
    fn request(self) -> (c_int, c_uint, c_uint) {
        match self {
            Context::GlCompat => (1, 2, 1),
            Context::Gles2 => (2, 2, 0),
            Context::GlCore => (3, 3, 3),
            Context::Gles3 => (4, 3, 0),
            Context::Vulkan => (6, 1, 0),
        }
    }

    fn dialect(self) -> Dialect {
        match self {
            Context::GlCompat => Dialect::Gl2,
            Context::Gles2 => Dialect::Gles2,
            Context::Gles3 => Dialect::Gles3,
            Context::GlCore | Context::Vulkan => Dialect::Gl3,
        }
    }
}

/// A loaded game. Boxed so `ram` never moves (the frontend keeps its address).
struct Core {
    /// The whole game state (`game::State`, encoded).
    ram: [u8; RAM_SIZE],
    context: Context,
    top_left: bool,
    renderer: Option<Renderer>,
    audio: [i16; AUDIO_FRAMES * 2],
    bitmasks: bool,
}

/// The core behind its lock. `Renderer` holds GL function pointers of the frontend's
/// context, used only from the thread the frontend runs the core on.
struct Slot(Option<Box<Core>>);
// SAFETY: see `Slot`: the frontend calls the core from one thread at a time.
unsafe impl Send for Slot {}

static CORE: Mutex<Slot> = Mutex::new(Slot(None));

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn callbacks() -> Callbacks {
    *lock(&CALLBACKS)
}

fn guard<R>(fallback: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

fn log(level: c_int, msg: &str) {
    let Some(f) = callbacks().log else { return };
    let Ok(text) = CString::new(msg.replace('\0', " ")) else {
        return;
    };
    // SAFETY: a constant "%s" format with one NUL-terminated string.
    unsafe { f(level, c"[quadpong] %s\n".as_ptr(), text.as_ptr()) };
}

/// # Safety
/// `data` must be what the frontend expects for `cmd` (or null for a probe).
unsafe fn env(cmd: c_uint, data: *mut c_void) -> bool {
    match callbacks().env {
        // SAFETY: forwarded contract.
        Some(f) => unsafe { f(cmd, data) },
        None => false,
    }
}

fn variable(key: &CStr) -> Option<String> {
    let mut var = Variable {
        key: key.as_ptr(),
        value: std::ptr::null(),
    };
    // SAFETY: GET_VARIABLE takes a `retro_variable *`.
    let ok = unsafe { env(ENV_GET_VARIABLE, (&mut var as *mut Variable).cast()) };
    if !ok || var.value.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated answer, copied at once.
    Some(
        unsafe { CStr::from_ptr(var.value) }
            .to_string_lossy()
            .into_owned(),
    )
}

fn balls_option() -> u8 {
    variable(OPT_BALLS)
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
}

/// # Safety
/// `cb` must stay callable until `retro_deinit`.
#[no_mangle]
pub unsafe extern "C" fn retro_set_environment(cb: EnvironmentFn) {
    guard((), || {
        lock(&CALLBACKS).env = Some(cb);
        let vars = [
            Variable {
                key: OPT_CONTEXT.as_ptr(),
                value: c"Context to ask for (vulkan: one this core cannot draw with, to test a frontend's refusal); gl-core|gl|gles2|gles3|vulkan".as_ptr(),
            },
            Variable {
                key: OPT_ORIGIN.as_ptr(),
                value: c"Frame buffer origin; bottom-left|top-left".as_ptr(),
            },
            Variable {
                key: OPT_BALLS.as_ptr(),
                value: c"Balls; 2|1|3|4".as_ptr(),
            },
            Variable {
                key: std::ptr::null(),
                value: std::ptr::null(),
            },
        ];
        let mut no_game = true;
        // SAFETY: a terminated `retro_variable` array (copied by the frontend) and a `bool *`.
        unsafe {
            env(ENV_SET_VARIABLES, vars.as_ptr() as *mut c_void);
            env(ENV_SET_SUPPORT_NO_GAME, (&mut no_game as *mut bool).cast());
        }
    })
}

/// # Safety
/// `cb` must stay callable until `retro_deinit`.
#[no_mangle]
pub unsafe extern "C" fn retro_set_video_refresh(cb: VideoRefreshFn) {
    guard((), || lock(&CALLBACKS).video = Some(cb))
}

/// # Safety
/// `cb` must stay callable until `retro_deinit`.
#[no_mangle]
pub unsafe extern "C" fn retro_set_audio_sample(cb: AudioSampleFn) {
    guard((), || lock(&CALLBACKS).sample = Some(cb))
}

/// # Safety
/// `cb` must stay callable until `retro_deinit`.
#[no_mangle]
pub unsafe extern "C" fn retro_set_audio_sample_batch(cb: AudioSampleBatchFn) {
    guard((), || lock(&CALLBACKS).batch = Some(cb))
}

/// # Safety
/// `cb` must stay callable until `retro_deinit`.
#[no_mangle]
pub unsafe extern "C" fn retro_set_input_poll(cb: InputPollFn) {
    guard((), || lock(&CALLBACKS).poll = Some(cb))
}

/// # Safety
/// `cb` must stay callable until `retro_deinit`.
#[no_mangle]
pub unsafe extern "C" fn retro_set_input_state(cb: InputStateFn) {
    guard((), || lock(&CALLBACKS).state = Some(cb))
}

#[no_mangle]
pub extern "C" fn retro_init() {
    guard((), || {
        let mut cb = LogCallback { log: None };
        // SAFETY: GET_LOG_INTERFACE takes a `retro_log_callback *`.
        if unsafe { env(ENV_GET_LOG_INTERFACE, (&mut cb as *mut LogCallback).cast()) } {
            lock(&CALLBACKS).log = cb.log;
        }
    })
}

#[no_mangle]
pub extern "C" fn retro_deinit() {
    guard((), || {
        lock(&CORE).0 = None;
        let mut cb = lock(&CALLBACKS);
        cb.log = None;
        cb.framebuffer = None;
        cb.proc_address = None;
    })
}

#[no_mangle]
pub extern "C" fn retro_api_version() -> c_uint {
    API_VERSION
}

/// # Safety
/// `info` must be null or point to a writable `retro_system_info`.
#[no_mangle]
pub unsafe extern "C" fn retro_get_system_info(info: *mut SystemInfo) {
    guard((), || {
        if info.is_null() {
            return;
        }
        // SAFETY: non-null and writable; the strings are 'static.
        unsafe {
            info.write(SystemInfo {
                library_name: c"quadpong".as_ptr(),
                library_version: c"0.1.0".as_ptr(),
                valid_extensions: c"".as_ptr(),
                need_fullpath: false,
                block_extract: false,
            })
        };
    })
}

/// # Safety
/// `info` must be null or point to a writable `retro_system_av_info`.
#[no_mangle]
pub unsafe extern "C" fn retro_get_system_av_info(info: *mut SystemAvInfo) {
    guard((), || {
        if info.is_null() {
            return;
        }
        // SAFETY: non-null and writable.
        unsafe {
            info.write(SystemAvInfo {
                base_width: WIDTH,
                base_height: HEIGHT,
                max_width: WIDTH,
                max_height: HEIGHT,
                aspect_ratio: 4.0 / 3.0,
                fps: 60.0,
                sample_rate: f64::from(SAMPLE_RATE),
            })
        };
    })
}

#[no_mangle]
pub extern "C" fn retro_set_controller_port_device(_port: c_uint, _device: c_uint) {}

/// A new game; who has joined is forgotten.
#[no_mangle]
pub extern "C" fn retro_reset() {
    guard((), || {
        let balls = balls_option();
        if let Some(core) = lock(&CORE).0.as_mut() {
            State::new(balls).encode(&mut core.ram);
        }
    })
}

fn read_pads(cb: &Callbacks, bitmasks: bool) -> [u16; SIDES] {
    let mut pads = [0u16; SIDES];
    let Some(state) = cb.state else { return pads };
    for (port, bits) in pads.iter_mut().enumerate() {
        let port = port as c_uint;
        if bitmasks {
            // SAFETY: the frontend's input callback.
            *bits = unsafe { state(port, DEVICE_JOYPAD, 0, JOYPAD_MASK) } as u16;
        } else {
            for id in 0..16 {
                // SAFETY: as above, one button at a time.
                if unsafe { state(port, DEVICE_JOYPAD, 0, id) } != 0 {
                    *bits |= 1 << id;
                }
            }
        }
    }
    pads
}

/// One frame: the pads, a step of the game in RAM, the picture drawn into the frontend's
/// frame buffer, 800 stereo samples.
#[no_mangle]
pub extern "C" fn retro_run() {
    guard((), || {
        let cb = callbacks();
        let Some(bitmasks) = lock(&CORE).0.as_ref().map(|c| c.bitmasks) else {
            return;
        };
        if let Some(poll) = cb.poll {
            // SAFETY: the frontend's input poll callback.
            unsafe { poll() };
        }
        let pads = read_pads(&cb, bitmasks);
        let mut updated = false;
        // SAFETY: GET_VARIABLE_UPDATE takes a `bool *`.
        let asked = unsafe { env(ENV_GET_VARIABLE_UPDATE, (&mut updated as *mut bool).cast()) };
        let balls = (asked && updated).then(balls_option);
        // SAFETY: the frontend's callback, valid after a successful SET_HW_RENDER.
        let fbo = cb.framebuffer.map_or(0, |f| unsafe { f() }) as u32;

        let (drawn, audio) = {
            let mut slot = lock(&CORE);
            let Some(core) = slot.0.as_mut() else { return };
            let mut state = State::decode(&core.ram);
            if let Some(b) = balls {
                state.balls_in_play = b.clamp(1, game::MAX_BALLS as u8);
            }
            state.step(pads);
            state.encode(&mut core.ram);
            game::audio(&state, &mut core.audio);
            let top_left = core.top_left;
            let drawn = match &mut core.renderer {
                Some(r) => {
                    r.draw(&state, fbo, top_left);
                    true
                }
                None => false,
            };
            (drawn, core.audio)
        };
        if let Some(video) = cb.video {
            // SAFETY: a hardware frame (or a duplicate before the context is reset).
            unsafe {
                if drawn {
                    video(HW_FRAME_BUFFER_VALID, WIDTH, HEIGHT, 0);
                } else {
                    video(std::ptr::null(), WIDTH, HEIGHT, 0);
                }
            }
        }
        send_audio(&cb, &audio);
    })
}

fn send_audio(cb: &Callbacks, audio: &[i16]) {
    if let Some(batch) = cb.batch {
        let mut done = 0;
        while done < AUDIO_FRAMES {
            let rest = &audio[done * 2..];
            // SAFETY: `rest` holds `AUDIO_FRAMES - done` stereo frames.
            let n = unsafe { batch(rest.as_ptr(), AUDIO_FRAMES - done) };
            if n == 0 {
                break;
            }
            done += n.min(AUDIO_FRAMES - done);
        }
    } else if let Some(sample) = cb.sample {
        for f in audio.chunks_exact(2) {
            // SAFETY: the frontend's single-sample callback.
            unsafe { sample(f[0], f[1]) };
        }
    }
}

const STATE_MAGIC: &[u8; 4] = b"QPNG";
const STATE_VERSION: u32 = 1;
/// A savestate: magic, version, then RAM.
pub const STATE_SIZE: usize = 8 + RAM_SIZE;

#[no_mangle]
pub extern "C" fn retro_serialize_size() -> usize {
    STATE_SIZE
}

/// # Safety
/// `data` must be null or point to `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn retro_serialize(data: *mut c_void, size: usize) -> bool {
    guard(false, || {
        if data.is_null() || size < STATE_SIZE {
            return false;
        }
        // SAFETY: non-null with `size` writable bytes.
        let out = unsafe { std::slice::from_raw_parts_mut(data.cast::<u8>(), STATE_SIZE) };
        let slot = lock(&CORE);
        let Some(core) = slot.0.as_ref() else {
            return false;
        };
        out[..4].copy_from_slice(STATE_MAGIC);
        out[4..8].copy_from_slice(&STATE_VERSION.to_le_bytes());
        out[8..].copy_from_slice(&core.ram);
        true
    })
}

/// # Safety
/// `data` must be null or point to `size` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn retro_unserialize(data: *const c_void, size: usize) -> bool {
    guard(false, || {
        if data.is_null() || size < STATE_SIZE {
            return false;
        }
        // SAFETY: non-null with `size` readable bytes.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), STATE_SIZE) };
        if &bytes[..4] != STATE_MAGIC || bytes[4..8] != STATE_VERSION.to_le_bytes() {
            log(LOG_ERROR, "refused a savestate that is not quadpong's");
            return false;
        }
        let mut slot = lock(&CORE);
        let Some(core) = slot.0.as_mut() else {
            return false;
        };
        core.ram.copy_from_slice(&bytes[8..]);
        true
    })
}

#[no_mangle]
pub extern "C" fn retro_cheat_reset() {}

/// # Safety
/// No requirements: `_code` is never read.
#[no_mangle]
pub unsafe extern "C" fn retro_cheat_set(_index: c_uint, _enabled: bool, _code: *const c_char) {}

/// The frontend made or remade the context: (re)builds the GL objects.
unsafe extern "C" fn context_reset() {
    guard((), || {
        let cb = callbacks();
        let Some(gpa) = cb.proc_address else { return };
        let Some(dialect) = lock(&CORE).0.as_ref().map(|c| c.context.dialect()) else {
            return;
        };
        // SAFETY: called by the frontend with its context current; `gpa` is its loader.
        let made = unsafe { Renderer::new(|name| gpa(name.as_ptr()), dialect) };
        match made {
            Ok(r) => {
                if let Some(core) = lock(&CORE).0.as_mut() {
                    // A reset without a destroy means the old context is gone: forget it.
                    if let Some(old) = core.renderer.replace(r) {
                        std::mem::forget(old);
                    }
                }
                log(LOG_INFO, &format!("GL objects made ({dialect:?})"));
            }
            Err(e) => log(LOG_ERROR, &format!("cannot draw: {e}")),
        }
    })
}

/// The frontend is about to destroy the context: frees the GL objects.
unsafe extern "C" fn context_destroy() {
    guard((), || {
        let r = lock(&CORE).0.as_mut().and_then(|c| c.renderer.take());
        if let Some(r) = r {
            r.delete();
        }
    })
}

/// Starts the game (content is optional and ignored) and asks for its context.
///
/// # Safety
/// `_info` may be null; it is never read.
#[no_mangle]
pub unsafe extern "C" fn retro_load_game(_info: *const GameInfo) -> bool {
    guard(false, || {
        let mut format = PIXEL_XRGB8888;
        // SAFETY: SET_PIXEL_FORMAT takes an `enum retro_pixel_format *`.
        unsafe { env(ENV_SET_PIXEL_FORMAT, (&mut format as *mut c_int).cast()) };
        // SAFETY: a probe with null data.
        let bitmasks = unsafe { env(ENV_GET_INPUT_BITMASKS, std::ptr::null_mut()) };
        announce_inputs();
        let context = Context::from_option(variable(OPT_CONTEXT).as_deref());
        let top_left = variable(OPT_ORIGIN).as_deref() == Some("top-left");
        let (ty, major, minor) = context.request();
        let mut hw = HwRenderCallback {
            context_type: ty,
            context_reset: Some(context_reset),
            get_current_framebuffer: None,
            get_proc_address: None,
            depth: true,
            stencil: true,
            bottom_left_origin: !top_left,
            version_major: major,
            version_minor: minor,
            cache_context: false,
            context_destroy: Some(context_destroy),
            debug_context: false,
        };
        // SAFETY: SET_HW_RENDER takes a `retro_hw_render_callback *`, filled in by the
        // frontend.
        if !unsafe { env(ENV_SET_HW_RENDER, (&mut hw as *mut HwRenderCallback).cast()) } {
            log(
                LOG_ERROR,
                &format!("the frontend has no {context:?} context for us"),
            );
            return false;
        }
        if context == Context::Vulkan {
            // Asked for to test the frontend; there is nothing to draw Vulkan with here.
            log(
                LOG_ERROR,
                "the frontend gave a Vulkan context, which quadpong cannot use",
            );
            return false;
        }
        {
            let mut cb = lock(&CALLBACKS);
            cb.framebuffer = hw.get_current_framebuffer;
            cb.proc_address = hw.get_proc_address;
        }
        let mut core = Box::new(Core {
            ram: [0; RAM_SIZE],
            context,
            top_left,
            renderer: None,
            audio: [0; AUDIO_FRAMES * 2],
            bitmasks,
        });
        State::new(balls_option()).encode(&mut core.ram);
        lock(&CORE).0 = Some(core);
        log(
            LOG_INFO,
            &format!(
                "quadpong 0.1.0 loaded: {context:?} context, {} origin",
                if top_left { "top-left" } else { "bottom-left" }
            ),
        );
        true
    })
}

/// Tells the frontend what each of the four ports' buttons do.
fn announce_inputs() {
    let mut descs = Vec::new();
    for port in 0..SIDES as c_uint {
        let (minus, plus, text_minus, text_plus) = if port < 2 {
            (pad::LEFT, pad::RIGHT, c"Paddle left", c"Paddle right")
        } else {
            (pad::UP, pad::DOWN, c"Paddle up", c"Paddle down")
        };
        for (bit, text) in [
            (minus, text_minus),
            (plus, text_plus),
            (pad::START, c"Join"),
        ] {
            descs.push(InputDescriptor {
                port,
                device: DEVICE_JOYPAD,
                index: 0,
                id: bit.trailing_zeros(),
                description: text.as_ptr(),
            });
        }
    }
    descs.push(InputDescriptor {
        port: 0,
        device: 0,
        index: 0,
        id: 0,
        description: std::ptr::null(),
    });
    let pad_type = [ControllerDescription {
        desc: c"RetroPad".as_ptr(),
        id: DEVICE_JOYPAD,
    }];
    let mut ports: Vec<ControllerInfo> = (0..SIDES)
        .map(|_| ControllerInfo {
            types: pad_type.as_ptr(),
            num_types: 1,
        })
        .collect();
    ports.push(ControllerInfo {
        types: std::ptr::null(),
        num_types: 0,
    });
    // SAFETY: terminated arrays of 'static strings, alive for the calls.
    unsafe {
        env(ENV_SET_INPUT_DESCRIPTORS, descs.as_mut_ptr().cast());
        env(ENV_SET_CONTROLLER_INFO, ports.as_mut_ptr().cast());
    }
}

/// # Safety
/// No requirements: `_info` is never read.
#[no_mangle]
pub unsafe extern "C" fn retro_load_game_special(
    _game_type: c_uint,
    _info: *const GameInfo,
    _num_info: usize,
) -> bool {
    false
}

#[no_mangle]
pub extern "C" fn retro_unload_game() {
    guard((), || {
        // The GL objects went with context_destroy, or go with the context.
        if let Some(mut core) = lock(&CORE).0.take() {
            if let Some(r) = core.renderer.take() {
                std::mem::forget(r);
            }
        }
    })
}

#[no_mangle]
pub extern "C" fn retro_get_region() -> c_uint {
    REGION_NTSC
}

/// System RAM is the whole game (`game::State`, encoded); writes to it change the game.
/// The pointer stays valid until `retro_unload_game`.
#[no_mangle]
pub extern "C" fn retro_get_memory_data(id: c_uint) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        if id & MEMORY_MASK != MEMORY_SYSTEM_RAM {
            return std::ptr::null_mut();
        }
        match lock(&CORE).0.as_mut() {
            Some(core) => core.ram.as_mut_ptr().cast(),
            None => std::ptr::null_mut(),
        }
    })
}

#[no_mangle]
pub extern "C" fn retro_get_memory_size(id: c_uint) -> usize {
    guard(0, || {
        if id & MEMORY_MASK != MEMORY_SYSTEM_RAM || lock(&CORE).0.is_none() {
            return 0;
        }
        RAM_SIZE
    })
}
