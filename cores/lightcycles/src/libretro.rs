//! The libretro C ABI over one global [`Game`].
//!
//! libretro callbacks carry no user pointer, so the instance lives in statics. No lock is
//! held while calling the frontend, so a frontend that calls back into the core from a
//! callback cannot deadlock. Every export catches panics: unwinding into C would abort.

use std::ffi::{c_char, c_uint, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, PoisonError};

use libretro_sys::{
    AudioSampleBatchFn, AudioSampleFn, EnvironmentFn, GameGeometry, GameInfo, InputDescriptor,
    InputPollFn, InputStateFn, SystemAvInfo, SystemInfo, SystemTiming, Variable, VideoRefreshFn,
};

use crate::game::{pad, Game, Settings, MAX_PLAYERS, SCREEN_H, SCREEN_W};
use crate::grid::GRID_CELLS;
use crate::sound::{AUDIO_FRAMES, AUDIO_SAMPLES, SAMPLE_RATE};
use crate::state::{RAM_SIZE, STATE_SIZE};

const API_VERSION: c_uint = 1;
const DEVICE_JOYPAD: c_uint = 1;
/// `RETRO_DEVICE_ID_JOYPAD_MASK`: one query returns every button as a bitmask.
const JOYPAD_MASK: c_uint = 256;
const MEMORY_MASK: c_uint = 0xFF;
const MEMORY_SYSTEM_RAM: c_uint = 2;
const REGION_NTSC: c_uint = 0;

const ENV_SET_PIXEL_FORMAT: c_uint = 10;
const ENV_SET_INPUT_DESCRIPTORS: c_uint = 11;
const ENV_GET_VARIABLE: c_uint = 15;
const ENV_SET_VARIABLES: c_uint = 16;
const ENV_GET_VARIABLE_UPDATE: c_uint = 17;
const ENV_SET_SUPPORT_NO_GAME: c_uint = 18;
const ENV_GET_LOG_INTERFACE: c_uint = 27;
const ENV_GET_INPUT_BITMASKS: c_uint = 51 | 0x10000;

const PIXEL_XRGB8888: c_uint = 1;
const PIXEL_RGB565: c_uint = 2;

const LOG_INFO: c_uint = 1;
const LOG_WARN: c_uint = 2;

/// Core option keys; values are `"Description; default|other|..."`.
pub const OPT_CREDITS: &CStr = c"lightcycles_credits";
pub const OPT_SPEED: &CStr = c"lightcycles_speed";
pub const OPT_POINTS: &CStr = c"lightcycles_points";

/// `retro_log_printf_t` is C-variadic; stable Rust can call (not define) such a function.
type LogPrintfFn = unsafe extern "C" fn(level: c_uint, fmt: *const c_char, ...);

#[repr(C)]
struct LogCallback {
    log: Option<LogPrintfFn>,
}

/// What the frontend gave us through the `retro_set_*` calls.
#[derive(Copy, Clone)]
struct Callbacks {
    env: Option<EnvironmentFn>,
    video: Option<VideoRefreshFn>,
    sample: Option<AudioSampleFn>,
    batch: Option<AudioSampleBatchFn>,
    poll: Option<InputPollFn>,
    state: Option<InputStateFn>,
    log: Option<LogPrintfFn>,
}

static CALLBACKS: Mutex<Callbacks> = Mutex::new(Callbacks {
    env: None,
    video: None,
    sample: None,
    batch: None,
    poll: None,
    state: None,
    log: None,
});

/// The pixel format the frontend accepted.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Format {
    Xrgb8888,
    Rgb565,
    /// libretro's default when SET_PIXEL_FORMAT is refused.
    Rgb1555,
}

/// A loaded game and its output buffers. Boxed so `ram` never moves.
struct Core {
    game: Game,
    /// System RAM as the frontend sees it (`Game::ram_image`). The game keeps its state in
    /// its own fields; this image is refreshed whenever that state changes, and the grid
    /// part is read back before each frame so a frontend's writes change the arena.
    ram: [u8; RAM_SIZE],
    xrgb: Vec<u32>,
    packed: Vec<u16>,
    audio: Vec<i16>,
    format: Format,
    bitmasks: bool,
}

impl Core {
    fn refresh_ram(&mut self) {
        self.game.ram_image(&mut self.ram);
    }
}

static CORE: Mutex<Option<Box<Core>>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic caught mid-call leaves data that is still consistent enough to continue.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn callbacks() -> Callbacks {
    *lock(&CALLBACKS)
}

/// Runs `f`, turning a panic into `fallback` so it never unwinds into C.
fn guard<R>(fallback: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

fn log(level: c_uint, msg: &str) {
    let Some(f) = callbacks().log else { return };
    let Ok(text) = CString::new(msg.replace('\0', " ")) else {
        return;
    };
    // SAFETY: the frontend's printf-style logger gets a constant "%s\n" format and one
    // NUL-terminated string, matching the format.
    unsafe { f(level, c"[lightcycles] %s\n".as_ptr(), text.as_ptr()) };
}

/// Calls the environment callback; false when there is none.
///
/// # Safety
/// `data` must be what the frontend expects for `cmd` (or null for a probe).
unsafe fn env(cmd: c_uint, data: *mut c_void) -> bool {
    match callbacks().env {
        // SAFETY: forwarded contract of this function.
        Some(f) => unsafe { f(cmd, data) },
        None => false,
    }
}

/// The frontend's value for a core option, if it gave one.
fn variable(key: &CStr) -> Option<String> {
    let mut var = Variable {
        key: key.as_ptr(),
        value: std::ptr::null(),
    };
    // SAFETY: GET_VARIABLE takes a `retro_variable *`; the key outlives the call.
    let ok = unsafe { env(ENV_GET_VARIABLE, (&mut var as *mut Variable).cast()) };
    if !ok || var.value.is_null() {
        return None;
    }
    // SAFETY: a non-null answer is a NUL-terminated string valid at least until the next
    // environment call; it is copied right away.
    let value = unsafe { CStr::from_ptr(var.value) };
    Some(value.to_string_lossy().into_owned())
}

/// Reads all core options; a missing or unknown value means the default.
fn read_settings() -> Settings {
    let d = Settings::default();
    Settings {
        freeplay: variable(OPT_CREDITS).is_some_and(|v| v == "freeplay"),
        fast: variable(OPT_SPEED).is_some_and(|v| v == "fast"),
        points_to_win: variable(OPT_POINTS)
            .and_then(|v| v.parse().ok())
            .unwrap_or(d.points_to_win),
    }
}

fn settings_changed() -> bool {
    let mut updated = false;
    // SAFETY: GET_VARIABLE_UPDATE takes a `bool *`.
    let ok = unsafe { env(ENV_GET_VARIABLE_UPDATE, (&mut updated as *mut bool).cast()) };
    ok && updated
}

fn read_pads(cb: &Callbacks, bitmasks: bool) -> [u16; MAX_PLAYERS] {
    let mut pads = [0u16; MAX_PLAYERS];
    let Some(state) = cb.state else { return pads };
    for (port, bits) in pads.iter_mut().enumerate() {
        let port = port as c_uint;
        if bitmasks {
            // SAFETY: the frontend's input callback, called with valid arguments.
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

fn pack_565(c: u32) -> u16 {
    (((c >> 8) & 0xF800) | ((c >> 5) & 0x07E0) | ((c >> 3) & 0x001F)) as u16
}

fn pack_1555(c: u32) -> u16 {
    (((c >> 9) & 0x7C00) | ((c >> 6) & 0x03E0) | ((c >> 3) & 0x001F)) as u16
}

/// # Safety
/// `cb` must stay callable until `retro_deinit`.
#[no_mangle]
pub unsafe extern "C" fn retro_set_environment(cb: EnvironmentFn) {
    guard((), || {
        lock(&CALLBACKS).env = Some(cb);
        let vars = [
            Variable {
                key: OPT_CREDITS.as_ptr(),
                value: c"Credits; coin|freeplay".as_ptr(),
            },
            Variable {
                key: OPT_SPEED.as_ptr(),
                value: c"Speed; normal|fast".as_ptr(),
            },
            Variable {
                key: OPT_POINTS.as_ptr(),
                value: c"Points to win a match; 5|3|7|10".as_ptr(),
            },
            Variable {
                key: std::ptr::null(),
                value: std::ptr::null(),
            },
        ];
        let mut no_game = true;
        // SAFETY: SET_VARIABLES takes a null-terminated `retro_variable` array (the frontend
        // copies it); SET_SUPPORT_NO_GAME takes a `bool *`.
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
        *lock(&CORE) = None;
        lock(&CALLBACKS).log = None;
    })
}

#[no_mangle]
pub extern "C" fn retro_api_version() -> c_uint {
    guard(API_VERSION, || API_VERSION)
}

/// # Safety
/// `info` must be null or point to a writable `retro_system_info`.
#[no_mangle]
pub unsafe extern "C" fn retro_get_system_info(info: *mut SystemInfo) {
    guard((), || {
        if info.is_null() {
            return;
        }
        let value = SystemInfo {
            library_name: c"lightcycles".as_ptr(),
            library_version: c"0.1.0".as_ptr(),
            valid_extensions: c"".as_ptr(),
            need_fullpath: false,
            block_extract: false,
        };
        // SAFETY: non-null and writable per the contract; the strings are 'static.
        unsafe { info.write(value) };
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
        let value = SystemAvInfo {
            geometry: GameGeometry {
                base_width: SCREEN_W as c_uint,
                base_height: SCREEN_H as c_uint,
                max_width: SCREEN_W as c_uint,
                max_height: SCREEN_H as c_uint,
                aspect_ratio: 4.0 / 3.0,
            },
            timing: SystemTiming {
                fps: 60.0,
                sample_rate: f64::from(SAMPLE_RATE),
            },
        };
        // SAFETY: non-null and writable per the contract.
        unsafe { info.write(value) };
    })
}

/// Every port is a RetroPad; other devices are accepted and read as RetroPads.
#[no_mangle]
pub extern "C" fn retro_set_controller_port_device(_port: c_uint, _device: c_uint) {
    guard((), || ())
}

/// Power-cycles the machine: credits and the session high score are cleared.
#[no_mangle]
pub extern "C" fn retro_reset() {
    guard((), || {
        if let Some(core) = lock(&CORE).as_mut() {
            core.game.reset();
            core.refresh_ram();
        }
    })
}

/// Advances one frame: reads all 8 pads, steps, then sends one video frame and 800 stereo
/// audio frames.
#[no_mangle]
pub extern "C" fn retro_run() {
    guard((), || {
        let cb = callbacks();
        let Some(bitmasks) = lock(&CORE).as_ref().map(|c| c.bitmasks) else {
            return; // No game loaded.
        };
        if let Some(poll) = cb.poll {
            // SAFETY: the frontend's input poll callback.
            unsafe { poll() };
        }
        let pads = read_pads(&cb, bitmasks);
        let settings = settings_changed().then(read_settings);

        // Take the buffers out so no lock is held while the frontend runs.
        let (format, mut xrgb, mut packed, mut audio) = {
            let mut guard = lock(&CORE);
            let Some(core) = guard.as_mut() else { return };
            if let Some(s) = settings {
                core.game.set_settings(s);
            }
            core.game
                .grid_mut()
                .copy_from_slice(&core.ram[..GRID_CELLS]);
            core.game.step(pads);
            core.refresh_ram();
            crate::render::draw(&core.game, &mut core.xrgb);
            core.game.audio(&mut core.audio);
            match core.format {
                Format::Xrgb8888 => {}
                Format::Rgb565 => {
                    for (o, &c) in core.packed.iter_mut().zip(core.xrgb.iter()) {
                        *o = pack_565(c);
                    }
                }
                Format::Rgb1555 => {
                    for (o, &c) in core.packed.iter_mut().zip(core.xrgb.iter()) {
                        *o = pack_1555(c);
                    }
                }
            }
            (
                core.format,
                std::mem::take(&mut core.xrgb),
                std::mem::take(&mut core.packed),
                std::mem::take(&mut core.audio),
            )
        };

        if let Some(video) = cb.video {
            let (ptr, pitch) = match format {
                Format::Xrgb8888 => (xrgb.as_ptr().cast::<c_void>(), SCREEN_W * 4),
                _ => (packed.as_ptr().cast::<c_void>(), SCREEN_W * 2),
            };
            // SAFETY: the buffer holds SCREEN_W * SCREEN_H pixels of the announced format
            // and outlives the call.
            unsafe { video(ptr, SCREEN_W as c_uint, SCREEN_H as c_uint, pitch) };
        }
        send_audio(&cb, &audio);

        let mut guard = lock(&CORE);
        if let Some(core) = guard.as_mut() {
            std::mem::swap(&mut core.xrgb, &mut xrgb);
            std::mem::swap(&mut core.packed, &mut packed);
            std::mem::swap(&mut core.audio, &mut audio);
        }
    })
}

fn send_audio(cb: &Callbacks, audio: &[i16]) {
    if let Some(batch) = cb.batch {
        let mut done = 0;
        while done < AUDIO_FRAMES {
            let rest = &audio[done * 2..AUDIO_FRAMES * 2];
            // SAFETY: `rest` holds `AUDIO_FRAMES - done` interleaved stereo frames.
            let n = unsafe { batch(rest.as_ptr(), AUDIO_FRAMES - done) };
            if n == 0 {
                break; // A frontend that takes nothing would loop forever.
            }
            done += n.min(AUDIO_FRAMES - done);
        }
    } else if let Some(sample) = cb.sample {
        for f in audio.chunks_exact(2) {
            // SAFETY: the frontend's single-sample audio callback.
            unsafe { sample(f[0], f[1]) };
        }
    }
}

#[no_mangle]
pub extern "C" fn retro_serialize_size() -> usize {
    guard(STATE_SIZE, || STATE_SIZE)
}

/// # Safety
/// `data` must be null or point to `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn retro_serialize(data: *mut c_void, size: usize) -> bool {
    guard(false, || {
        if data.is_null() || size < STATE_SIZE {
            return false;
        }
        // SAFETY: non-null with `size` writable bytes per the contract.
        let out = unsafe { std::slice::from_raw_parts_mut(data.cast::<u8>(), size) };
        match lock(&CORE).as_ref() {
            Some(core) => core.game.save_into(out).is_ok(),
            None => false,
        }
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
        // SAFETY: non-null with `size` readable bytes per the contract.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), STATE_SIZE) };
        let result = match lock(&CORE).as_mut() {
            Some(core) => core.game.load(bytes).inspect(|_| core.refresh_ram()),
            None => return false,
        };
        match result {
            Ok(()) => true,
            Err(e) => {
                log(LOG_WARN, &format!("refused savestate: {e}"));
                false
            }
        }
    })
}

/// Cheats are not supported.
#[no_mangle]
pub extern "C" fn retro_cheat_reset() {
    guard((), || ())
}

/// Cheats are not supported; the code is ignored.
///
/// # Safety
/// No requirements: `code` is never read.
#[no_mangle]
pub unsafe extern "C" fn retro_cheat_set(_index: c_uint, _enabled: bool, _code: *const c_char) {
    guard((), || ())
}

/// Starts the game. Content is optional and ignored (the game is built in).
///
/// # Safety
/// `_info` may be null; it is never read.
#[no_mangle]
pub unsafe extern "C" fn retro_load_game(_info: *const GameInfo) -> bool {
    guard(false, || {
        let format = negotiate_format();
        // SAFETY: a probe with null data: only the answer matters.
        let bitmasks = unsafe { env(ENV_GET_INPUT_BITMASKS, std::ptr::null_mut()) };
        announce_inputs();
        let settings = read_settings();
        let mut core = Box::new(Core {
            game: Game::new(settings),
            ram: [0; RAM_SIZE],
            xrgb: vec![0; SCREEN_W * SCREEN_H],
            packed: vec![0; SCREEN_W * SCREEN_H],
            audio: vec![0; AUDIO_SAMPLES],
            format,
            bitmasks,
        });
        core.refresh_ram();
        *lock(&CORE) = Some(core);
        log(
            LOG_INFO,
            &format!(
                "lightcycles 0.1.0 loaded: pixel format {format:?}, input bitmasks {bitmasks}, \
                 {settings:?}"
            ),
        );
        true
    })
}

fn negotiate_format() -> Format {
    for (value, format) in [
        (PIXEL_XRGB8888, Format::Xrgb8888),
        (PIXEL_RGB565, Format::Rgb565),
    ] {
        let mut v = value;
        // SAFETY: SET_PIXEL_FORMAT takes an `enum retro_pixel_format *` (a C int).
        if unsafe { env(ENV_SET_PIXEL_FORMAT, (&mut v as *mut c_uint).cast()) } {
            return format;
        }
    }
    Format::Rgb1555
}

/// Tells the frontend what each port's buttons do.
fn announce_inputs() {
    const BUTTONS: [(u16, &CStr); 6] = [
        (pad::UP, c"Turn up"),
        (pad::DOWN, c"Turn down"),
        (pad::LEFT, c"Turn left"),
        (pad::RIGHT, c"Turn right"),
        (pad::SELECT, c"Insert coin"),
        (pad::START, c"Join"),
    ];
    let mut descs = Vec::with_capacity(MAX_PLAYERS * BUTTONS.len() + 1);
    for port in 0..MAX_PLAYERS as c_uint {
        for (bit, text) in BUTTONS {
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
    // SAFETY: a terminated descriptor array; the descriptions are 'static strings.
    unsafe { env(ENV_SET_INPUT_DESCRIPTORS, descs.as_mut_ptr().cast()) };
}

/// Subsystems are not supported.
///
/// # Safety
/// No requirements: `_info` is never read.
#[no_mangle]
pub unsafe extern "C" fn retro_load_game_special(
    _game_type: c_uint,
    _info: *const GameInfo,
    _num_info: usize,
) -> bool {
    guard(false, || false)
}

#[no_mangle]
pub extern "C" fn retro_unload_game() {
    guard((), || *lock(&CORE) = None)
}

#[no_mangle]
pub extern "C" fn retro_get_region() -> c_uint {
    guard(REGION_NTSC, || REGION_NTSC)
}

/// System RAM is the whole machine: the trail grid (one byte per cell, row-major, 0 = empty,
/// seat + 1 = trail; writable), then the other registers (read-only: rewritten every
/// frame). Netplay frontends checksum this RAM to catch desyncs, so it must hold all the state.
/// The pointer stays valid until `retro_unload_game`.
#[no_mangle]
pub extern "C" fn retro_get_memory_data(id: c_uint) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        if id & MEMORY_MASK != MEMORY_SYSTEM_RAM {
            return std::ptr::null_mut();
        }
        match lock(&CORE).as_mut() {
            Some(core) => core.ram.as_mut_ptr().cast(),
            None => std::ptr::null_mut(),
        }
    })
}

#[no_mangle]
pub extern "C" fn retro_get_memory_size(id: c_uint) -> usize {
    guard(0, || {
        if id & MEMORY_MASK != MEMORY_SYSTEM_RAM {
            return 0;
        }
        match lock(&CORE).as_mut() {
            Some(core) => core.ram.len(),
            None => 0,
        }
    })
}
