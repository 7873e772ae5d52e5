//! The C layer driven by a fake frontend. The core is one global instance per process, so
//! everything lives in this single test.

use std::ffi::{c_uint, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

use libretro_sys::{SystemAvInfo, SystemInfo, Variable};

use crate::game::{
    pad, Game, Mode, SeatKind, Settings, JOIN_FRAMES, READY_FRAMES, SCREEN_H, SCREEN_W,
};
use crate::grid::GRID_CELLS;
use crate::libretro::*;
use crate::sound::AUDIO_FRAMES;
use crate::state::{RAM_SIZE, STATE_SIZE};

static PIXEL_FORMAT: AtomicU32 = AtomicU32::new(u32::MAX);
static NO_GAME: AtomicBool = AtomicBool::new(false);
static REGISTERED: Mutex<Vec<String>> = Mutex::new(Vec::new());
static VIDEO_FRAMES: AtomicUsize = AtomicUsize::new(0);
static LIT_PIXELS: AtomicUsize = AtomicUsize::new(0);
static AUDIO_SENT: AtomicUsize = AtomicUsize::new(0);
static POLLS: AtomicUsize = AtomicUsize::new(0);
static MASK_QUERIES: AtomicUsize = AtomicUsize::new(0);
/// Calls that break the expectations below; panicking inside a callback would abort.
static ODD_CALLS: AtomicUsize = AtomicUsize::new(0);
/// Bits the fake pad on port 2 reports.
static PORT2: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn env(cmd: c_uint, data: *mut c_void) -> bool {
    match cmd {
        10 => {
            // SAFETY: SET_PIXEL_FORMAT passes an `enum retro_pixel_format *`.
            PIXEL_FORMAT.store(unsafe { *(data as *const c_uint) }, SeqCst);
            true
        }
        11 => true,
        15 => {
            // SAFETY: GET_VARIABLE passes a `retro_variable *`.
            let var = unsafe { &mut *(data as *mut Variable) };
            // SAFETY: the key is a NUL-terminated string from the core.
            let key = unsafe { CStr::from_ptr(var.key) };
            if key == OPT_SPEED {
                var.value = c"fast".as_ptr();
                true
            } else {
                // Unanswered options: the core must fall back to its defaults.
                var.value = std::ptr::null();
                false
            }
        }
        16 => {
            let mut list = REGISTERED.lock().unwrap();
            let mut p = data as *const Variable;
            // SAFETY: SET_VARIABLES passes an array ending with a null key.
            unsafe {
                while !(*p).key.is_null() {
                    let key = CStr::from_ptr((*p).key).to_string_lossy();
                    let value = CStr::from_ptr((*p).value).to_string_lossy();
                    list.push(format!("{key}={value}"));
                    p = p.add(1);
                }
            }
            true
        }
        17 => {
            // SAFETY: GET_VARIABLE_UPDATE passes a `bool *`.
            unsafe { *(data as *mut bool) = false };
            true
        }
        18 => {
            // SAFETY: SET_SUPPORT_NO_GAME passes a `const bool *`.
            NO_GAME.store(unsafe { *(data as *const bool) }, SeqCst);
            true
        }
        c if c == 51 | 0x10000 => data.is_null(),
        _ => false,
    }
}

unsafe extern "C" fn video(data: *const c_void, w: c_uint, h: c_uint, pitch: usize) {
    if (w as usize, h as usize, pitch) != (SCREEN_W, SCREEN_H, SCREEN_W * 4) || data.is_null() {
        ODD_CALLS.fetch_add(1, SeqCst);
        return;
    }
    // SAFETY: XRGB8888 frames of w*h pixels with a pitch of w*4 bytes.
    let px = unsafe { std::slice::from_raw_parts(data as *const u32, SCREEN_W * SCREEN_H) };
    LIT_PIXELS.store(px.iter().filter(|&&p| p & 0xFFFFFF != 0).count(), SeqCst);
    VIDEO_FRAMES.fetch_add(1, SeqCst);
}

unsafe extern "C" fn audio_sample(_l: i16, _r: i16) {
    // The core must use the batch callback.
    ODD_CALLS.fetch_add(1, SeqCst);
}

unsafe extern "C" fn audio_batch(_data: *const i16, frames: usize) -> usize {
    // Take at most 300 frames per call: the core must loop until all are taken.
    let n = frames.min(300);
    AUDIO_SENT.fetch_add(n, SeqCst);
    n
}

unsafe extern "C" fn poll() {
    POLLS.fetch_add(1, SeqCst);
}

unsafe extern "C" fn input(port: c_uint, device: c_uint, _index: c_uint, id: c_uint) -> i16 {
    // RetroPad bitmask queries only, since this frontend supports them.
    if device != 1 || id != 256 {
        ODD_CALLS.fetch_add(1, SeqCst);
    }
    MASK_QUERIES.fetch_add(1, SeqCst);
    if port == 2 {
        PORT2.load(SeqCst) as i16
    } else {
        0
    }
}

fn serialize() -> Vec<u8> {
    let mut buf = vec![0u8; retro_serialize_size()];
    // SAFETY: the buffer has the announced size.
    assert!(unsafe { retro_serialize(buf.as_mut_ptr().cast(), buf.len()) });
    buf
}

fn unserialize(bytes: &[u8]) -> bool {
    // SAFETY: a readable buffer of `bytes.len()` bytes.
    unsafe { retro_unserialize(bytes.as_ptr().cast(), bytes.len()) }
}

fn run(frames: usize) {
    for _ in 0..frames {
        retro_run();
    }
}

#[test]
fn fake_frontend_drives_the_c_api() {
    // SAFETY: all callbacks are 'static functions with the libretro signatures.
    unsafe {
        retro_set_environment(env);
        retro_set_video_refresh(video);
        retro_set_audio_sample(audio_sample);
        retro_set_audio_sample_batch(audio_batch);
        retro_set_input_poll(poll);
        retro_set_input_state(input);
    }
    assert!(NO_GAME.load(SeqCst));
    let registered = REGISTERED.lock().unwrap().clone();
    assert!(registered.contains(&"lightcycles_credits=Credits; coin|freeplay".to_string()));
    assert!(registered
        .iter()
        .any(|v| v.starts_with("lightcycles_speed=")));
    assert_eq!(retro_api_version(), 1);

    let mut info = SystemInfo {
        library_name: std::ptr::null(),
        library_version: std::ptr::null(),
        valid_extensions: std::ptr::null(),
        need_fullpath: true,
        block_extract: true,
    };
    // SAFETY: a writable struct.
    unsafe { retro_get_system_info(&mut info) };
    // SAFETY: the core returns static NUL-terminated strings.
    unsafe {
        assert_eq!(CStr::from_ptr(info.library_name), c"lightcycles");
        assert_eq!(CStr::from_ptr(info.library_version), c"0.1.0");
        assert_eq!(CStr::from_ptr(info.valid_extensions), c"");
    }
    assert!(!info.need_fullpath);

    retro_init();
    // Nothing loaded yet: running and serialising are harmless no-ops.
    retro_run();
    assert_eq!(VIDEO_FRAMES.load(SeqCst), 0);
    // SAFETY: no content: load_game(NULL) is how no-game cores start.
    assert!(unsafe { retro_load_game(std::ptr::null()) });
    assert_eq!(PIXEL_FORMAT.load(SeqCst), 1, "XRGB8888 requested first");

    // SAFETY: a zeroed plain-data struct that the core overwrites.
    let mut av: SystemAvInfo = unsafe { std::mem::zeroed() };
    // SAFETY: a writable struct.
    unsafe { retro_get_system_av_info(&mut av) };
    assert_eq!(
        (av.geometry.base_width, av.geometry.base_height),
        (320, 240)
    );
    assert_eq!(av.timing.fps, 60.0);
    assert_eq!(av.timing.sample_rate, 48_000.0);

    run(10);
    assert_eq!(VIDEO_FRAMES.load(SeqCst), 10);
    assert_eq!(POLLS.load(SeqCst), 10);
    assert_eq!(
        MASK_QUERIES.load(SeqCst),
        10 * 8,
        "one query per port per frame"
    );
    assert_eq!(AUDIO_SENT.load(SeqCst), 10 * AUDIO_FRAMES);
    assert!(LIT_PIXELS.load(SeqCst) > SCREEN_W * SCREEN_H / 2);

    // Inputs reach the game: a coin on port 2.
    PORT2.store(u32::from(pad::SELECT), SeqCst);
    run(1);
    PORT2.store(0, SeqCst);
    run(1);
    let mut game = Game::default();
    game.load(&serialize()).unwrap();
    assert_eq!(game.credits(), 1);

    // Port 2 starts a match against a CPU rider.
    PORT2.store(u32::from(pad::START), SeqCst);
    run(1);
    PORT2.store(0, SeqCst);
    run(usize::from(JOIN_FRAMES + READY_FRAMES) + 5);
    game.load(&serialize()).unwrap();
    assert_eq!(game.mode(), Mode::Match);
    assert_eq!(game.seats()[2].kind, SeatKind::Human);

    // The option the frontend answered ("fast") applies; unanswered ones keep their
    // defaults. Settings are not in the state, so compare against both speeds.
    let start = serialize();
    let mut fast = Game::new(Settings {
        fast: true,
        ..Settings::default()
    });
    let mut normal = Game::default();
    fast.load(&start).unwrap();
    normal.load(&start).unwrap();
    run(30);
    for _ in 0..30 {
        fast.step([0; 8]);
        normal.step([0; 8]);
    }
    assert!(serialize() == fast.save());
    assert!(serialize() != normal.save());

    // Savestate round trip: the same frames after a load give the same bytes.
    assert_eq!(retro_serialize_size(), STATE_SIZE);
    let saved = serialize();
    run(30);
    let after = serialize();
    assert!(saved != after, "the game advanced");
    assert!(unserialize(&saved));
    assert!(serialize() == saved);
    run(30);
    assert!(serialize() == after);
    // Bad states are refused and leave the game as it was.
    assert!(!unserialize(&saved[..100]));
    let mut bad = saved.clone();
    bad[0] ^= 0xFF;
    assert!(!unserialize(&bad));
    assert!(serialize() == after);
    let mut small = vec![0u8; 8];
    // SAFETY: a writable buffer, too small for a state.
    assert!(!unsafe { retro_serialize(small.as_mut_ptr().cast(), small.len()) });

    // System RAM is the whole machine: the grid, then the other registers.
    assert_eq!(retro_get_memory_size(2), RAM_SIZE);
    let ram = || {
        // SAFETY: the core's RAM, RAM_SIZE bytes, valid while the game is loaded.
        unsafe { std::slice::from_raw_parts(retro_get_memory_data(2).cast::<u8>(), RAM_SIZE) }
    };
    let mut game = Game::default();
    game.load(&serialize()).unwrap();
    let mut image = [0u8; RAM_SIZE];
    game.ram_image(&mut image);
    assert!(ram() == image, "RAM mirrors the loaded state");
    // The registers are in RAM, not only the grid: a coin during a match changes it.
    PORT2.store(u32::from(pad::SELECT), SeqCst);
    run(1);
    PORT2.store(0, SeqCst);
    game.load(&serialize()).unwrap();
    game.ram_image(&mut image);
    assert!(ram() == image, "RAM follows every frame");
    assert_eq!(game.mode(), Mode::Match);
    game.credits -= 1;
    let mut one_coin_less = [0u8; RAM_SIZE];
    game.ram_image(&mut one_coin_less);
    assert!(ram() != one_coin_less);
    // A frontend's write to the grid part changes the arena from the next frame on.
    let corner = GRID_CELLS - 1;
    assert_eq!(ram()[corner], 0);
    // SAFETY: as above, writable.
    unsafe { *retro_get_memory_data(2).cast::<u8>().add(corner) = 3 };
    run(1);
    assert_eq!(
        serialize()[STATE_SIZE - 1],
        3,
        "the written cell is in the state"
    );
    assert_eq!(ram()[corner], 3);
    assert!(retro_get_memory_data(0).is_null());
    assert_eq!(retro_get_memory_size(0), 0);

    retro_reset();
    let fresh = Game::default();
    assert!(serialize() == fresh.save(), "reset powers on again");

    retro_unload_game();
    // SAFETY: as above.
    assert!(!unsafe { retro_serialize(small.as_mut_ptr().cast(), small.len()) });
    retro_run();
    retro_deinit();
    assert_eq!(ODD_CALLS.load(SeqCst), 0);
}
