//! The callbacks handed to the core: environment dispatch, video, audio and input.
//!
//! Every one is `extern "C"`, catches panics at the boundary, checks `data` for NULL
//! before touching it, and reaches the instance through [`state::with`].

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::ffi::{self, env};
use super::gl::HwRender;
use super::log;
use super::options::OptionDef;
use super::state::{self, HostState};
use super::video::PixelFormat;

/// Runs `f`, turning a panic into `fallback` (unwinding into C would abort).
fn guard<R>(fallback: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        tracing::error!("panic inside a libretro callback");
        fallback
    })
}

/// Copies a C string (lossy UTF-8); `None` for NULL.
///
/// # Safety
/// `p` must be NULL or point to a NUL-terminated string.
unsafe fn string(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated per the caller's contract.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Writes `value` through `data` if it is not NULL.
///
/// # Safety
/// `data` must be NULL or valid for writing a `T`.
unsafe fn answer<T>(data: *mut c_void, value: T) {
    if !data.is_null() {
        // SAFETY: non-null and typed `T *` by the environment command being answered.
        unsafe { data.cast::<T>().write(value) };
    }
}

/// Reads a `T` through `data`; `None` for NULL.
///
/// # Safety
/// `data` must be NULL or valid for reading a `T`.
unsafe fn read<T: Copy>(data: *const c_void) -> Option<T> {
    // SAFETY: non-null checked; typed by the environment command.
    (!data.is_null()).then(|| unsafe { data.cast::<T>().read() })
}

pub unsafe extern "C" fn environment(cmd: c_uint, data: *mut c_void) -> bool {
    // SAFETY: `data` is what the core passed for `cmd`; `dispatch` handles NULL.
    guard(false, || unsafe { dispatch(cmd, data) })
}

/// # Safety
/// `data` must be NULL or point to what libretro.h specifies for `cmd`.
unsafe fn dispatch(cmd: c_uint, data: *mut c_void) -> bool {
    let cdata = data as *const c_void;
    // SAFETY (for the whole match): each arm reads or writes `data` only as the type
    // libretro.h gives for that command, and only after the helpers' NULL checks.
    unsafe {
        match cmd {
            env::SET_ROTATION => match read::<c_uint>(cdata) {
                Some(r) => with(false, |s| {
                    s.rotation = r % 4;
                    true
                }),
                None => false,
            },
            env::GET_CAN_DUPE => {
                answer(data, true);
                true
            }
            env::GET_OVERSCAN => {
                answer(data, false);
                true
            }
            env::SET_MESSAGE => {
                if let Some(m) = data.cast::<ffi::Message>().as_ref() {
                    if let Some(text) = string(m.msg) {
                        log::record(ffi::LOG_INFO, &text);
                    }
                }
                true
            }
            env::SET_MESSAGE_EXT => {
                if let Some(m) = data.cast::<ffi::MessageExt>().as_ref() {
                    if let Some(text) = string(m.msg) {
                        log::record(m.level, &text);
                    }
                }
                true
            }
            env::GET_MESSAGE_INTERFACE_VERSION => {
                answer::<c_uint>(data, 1);
                true
            }
            env::SHUTDOWN => with(false, |s| {
                tracing::info!("core requested shutdown");
                s.shutdown = true;
                true
            }),
            env::SET_PERFORMANCE_LEVEL
            | env::SET_SUBSYSTEM_INFO
            | env::SET_SUPPORT_ACHIEVEMENTS
            | env::SET_CORE_OPTIONS_DISPLAY => true,
            env::GET_SYSTEM_DIRECTORY => dir(data, |s| s.system_dir.as_ptr()),
            env::GET_SAVE_DIRECTORY => dir(data, |s| s.save_dir.as_ptr()),
            env::GET_LIBRETRO_PATH => {
                let p = with(None, |s| s.libretro_path.as_ref().map(|p| p.as_ptr()));
                match p {
                    Some(p) if !data.is_null() => {
                        answer(data, p);
                        true
                    }
                    _ => false,
                }
            }
            env::SET_PIXEL_FORMAT => match read::<c_int>(cdata).and_then(PixelFormat::from_raw) {
                Some(f) => with(false, |s| {
                    tracing::debug!("pixel format {f:?}");
                    s.pixel_format = f;
                    true
                }),
                None => {
                    tracing::warn!("core asked for an unsupported pixel format");
                    false
                }
            },
            env::SET_INPUT_DESCRIPTORS => {
                let mut n = 0;
                let mut p = cdata.cast::<ffi::InputDescriptor>();
                while !p.is_null() && !(*p).description.is_null() {
                    n += 1;
                    p = p.add(1);
                }
                tracing::debug!("core described {n} inputs");
                true
            }
            env::SET_CONTROLLER_INFO => {
                let mut ports = 0;
                let mut p = cdata.cast::<ffi::ControllerInfo>();
                while !p.is_null() && !(*p).types.is_null() {
                    ports += 1;
                    p = p.add(1);
                }
                with(false, |s| {
                    s.controller_ports = ports;
                    true
                })
            }
            env::SET_MEMORY_MAPS => {
                if let Some(m) = data.cast::<ffi::MemoryMap>().as_ref() {
                    tracing::debug!("core mapped {} memory descriptors", m.num_descriptors);
                }
                true
            }
            env::SET_SYSTEM_AV_INFO => match read::<ffi::SystemAvInfo>(cdata) {
                Some(av) => with(false, |s| {
                    s.av.update_from(&av);
                    if let Some(hw) = &mut s.hw {
                        let g = &av.geometry;
                        hw.grow((
                            g.max_width.max(g.base_width),
                            g.max_height.max(g.base_height),
                        ));
                    }
                    true
                }),
                None => false,
            },
            env::SET_GEOMETRY => match read::<ffi::GameGeometry>(cdata) {
                Some(g) => with(false, |s| {
                    s.av.update_geometry(&g);
                    true
                }),
                None => false,
            },
            // C bools are read as bytes: any non-zero value is true.
            env::SET_SUPPORT_NO_GAME => match read::<u8>(cdata) {
                Some(b) => with(false, |s| {
                    s.support_no_game = b != 0;
                    true
                }),
                None => false,
            },
            env::GET_LOG_INTERFACE => {
                if data.is_null() {
                    return false;
                }
                answer(
                    data,
                    ffi::LogCallback {
                        log: Some(log::printf_fn()),
                    },
                );
                true
            }
            env::GET_CORE_OPTIONS_VERSION => {
                // Version 0: cores fall back to SET_VARIABLES, the simplest to parse.
                answer::<c_uint>(data, 0);
                false
            }
            env::SET_VARIABLES => {
                let mut defs = Vec::new();
                let mut p = cdata.cast::<ffi::Variable>();
                while !p.is_null() && !(*p).key.is_null() {
                    if let (Some(key), Some(spec)) = (string((*p).key), string((*p).value)) {
                        match OptionDef::from_v0(&key, &spec) {
                            Some(d) => defs.push(d),
                            None => tracing::warn!("core option {key}: cannot parse {spec:?}"),
                        }
                    }
                    p = p.add(1);
                }
                register(defs)
            }
            env::SET_CORE_OPTIONS => register(v1_defs(cdata.cast())),
            env::SET_CORE_OPTIONS_INTL => match data.cast::<ffi::CoreOptionsIntl>().as_ref() {
                Some(intl) => register(v1_defs(intl.us)),
                None => false,
            },
            env::SET_CORE_OPTIONS_V2 => match data.cast::<ffi::CoreOptionsV2>().as_ref() {
                Some(o) => register(v2_defs(o.definitions)),
                None => false,
            },
            env::SET_CORE_OPTIONS_V2_INTL => {
                match data
                    .cast::<ffi::CoreOptionsV2Intl>()
                    .as_ref()
                    .and_then(|i| i.us.as_ref())
                {
                    Some(o) => register(v2_defs(o.definitions)),
                    None => false,
                }
            }
            env::GET_VARIABLE => {
                let Some(var) = data.cast::<ffi::Variable>().as_mut() else {
                    return false;
                };
                let Some(key) = string(var.key) else {
                    return false;
                };
                match with(None, |s| s.options.value_ptr(&key)) {
                    Some(p) => {
                        var.value = p;
                        true
                    }
                    None => {
                        var.value = std::ptr::null();
                        false
                    }
                }
            }
            env::SET_VARIABLE => {
                // NULL asks whether the command is supported.
                let Some(var) = data.cast::<ffi::Variable>().as_ref() else {
                    return true;
                };
                let (Some(key), Some(value)) = (string(var.key), string(var.value)) else {
                    return false;
                };
                with(false, |s| match s.options.set(&key, &value, false) {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::warn!("core set an option: {e}");
                        false
                    }
                })
            }
            env::GET_VARIABLE_UPDATE => {
                let updated = with(false, |s| s.options.take_updated());
                answer(data, updated);
                true
            }
            env::GET_INPUT_DEVICE_CAPABILITIES => {
                answer::<u64>(data, 1 << ffi::DEVICE_JOYPAD);
                true
            }
            env::GET_INPUT_MAX_USERS => {
                answer::<c_uint>(data, crate::input::MAX_PLAYERS as c_uint);
                true
            }
            env::GET_LANGUAGE => {
                answer::<c_uint>(data, 0); // English
                true
            }
            // A NULL probe asks "supported?", so the answer is true either way.
            env::GET_INPUT_BITMASKS => {
                answer(data, true);
                true
            }
            env::GET_AUDIO_VIDEO_ENABLE => {
                // Video and audio always on: the checksum includes the frame.
                answer::<c_int>(data, 0b11);
                true
            }
            env::GET_FASTFORWARDING => {
                answer(data, false);
                true
            }
            env::GET_SAVESTATE_CONTEXT => {
                let context = with(ffi::SAVESTATE_CONTEXT_NORMAL, |s| {
                    if s.netplay {
                        ffi::SAVESTATE_CONTEXT_ROLLBACK_NETPLAY
                    } else {
                        ffi::SAVESTATE_CONTEXT_NORMAL
                    }
                });
                answer(data, context);
                true
            }
            env::SET_SERIALIZATION_QUIRKS | env::SET_SERIALIZATION_QUIRKS_NEW => {
                let Some(quirks) = data.cast::<u64>().as_mut() else {
                    return false;
                };
                // Zero what the host cannot honour: FRONT_VARIABLE_SIZE and unknown bits.
                const SUPPORTED: u64 = 0b111_0111;
                *quirks &= SUPPORTED;
                let q = *quirks;
                tracing::debug!("serialization quirks {q:#x}");
                with(false, |s| {
                    s.serialization_quirks = q;
                    true
                })
            }
            // NULL disables buffer status reporting, which is already the case.
            env::SET_AUDIO_BUFFER_STATUS_CALLBACK => data.is_null(),
            env::SET_HW_RENDER => match data.cast::<ffi::HwRenderCallback>().as_mut() {
                Some(cb) => hw_render(cb),
                None => false,
            },
            env::GET_PREFERRED_HW_RENDER => {
                answer(data, ffi::HW_CONTEXT_OPENGL);
                true
            }
            // The core's context is its own: the host draws nothing in it, and its read-back
            // puts back every binding it touches, so the context is as good as shared.
            env::SET_HW_SHARED_CONTEXT => true,
            // Vulkan's and Direct3D's interfaces: those requests are refused.
            env::GET_HW_RENDER_INTERFACE | env::SET_HW_RENDER_CONTEXT_NEGOTIATION_INTERFACE => {
                false
            }
            env::GET_CURRENT_SOFTWARE_FRAMEBUFFER => {
                match data.cast::<ffi::SoftwareFramebuffer>().as_mut() {
                    Some(fb) => with(false, |s| software_framebuffer(s, fb)),
                    None => false,
                }
            }
            env::SET_MINIMUM_AUDIO_LATENCY
            | env::SET_FASTFORWARDING_OVERRIDE
            | env::SET_CONTENT_INFO_OVERRIDE
            | env::GET_GAME_INFO_EXT
            | env::SET_CORE_OPTIONS_UPDATE_DISPLAY_CALLBACK => false,
            other => {
                let first = with(false, |s| s.unknown_commands.insert(other));
                if first {
                    tracing::debug!(
                        "unsupported environment command {} ({other:#x})",
                        other & !env::EXPERIMENTAL
                    );
                }
                false
            }
        }
    }
}

/// SET_HW_RENDER: makes the core's OpenGL context, or refuses with the reason kept for a
/// load that then fails (a core may ask again for something else, or draw in software).
fn hw_render(cb: &mut ffi::HwRenderCallback) -> bool {
    // One context per core: a second request replaces the first.
    drop(with(None, |s| s.hw.take()));
    let (core, finish) = with((String::new(), false), |s| {
        (s.core_name.clone(), s.gl_finish)
    });
    match HwRender::negotiate(cb, &core, finish) {
        Ok(hw) => with(false, |s| {
            s.hw = Some(hw);
            s.hw_refusal = None;
            true
        }),
        Err(e) => {
            // Told once, by the load that fails for it (or as a warning if the core goes on).
            tracing::debug!("{e}");
            with((), |s| s.hw_refusal = Some(e));
            false
        }
    }
}

/// GET_CURRENT_SOFTWARE_FRAMEBUFFER: a buffer of the size the core asks for, in its pixel
/// format, that it may draw into and present (`video_refresh` copies it like any other).
fn software_framebuffer(s: &mut HostState, fb: &mut ffi::SoftwareFramebuffer) -> bool {
    let bpp = s.pixel_format.bytes_per_pixel();
    let pitch = (fb.width as usize * bpp).next_multiple_of(4);
    let words = pitch / 4 * fb.height as usize;
    if fb.width == 0 || fb.height == 0 || words > 1 << 26 {
        return false;
    }
    if s.soft_framebuffer.len() < words {
        s.soft_framebuffer.resize(words, 0);
    }
    fb.data = s.soft_framebuffer.as_mut_ptr().cast();
    fb.pitch = pitch;
    fb.format = s.pixel_format.to_raw();
    fb.memory_flags = ffi::MEMORY_TYPE_CACHED;
    true
}

/// Runs `f` on the state, or returns `fallback` when no core is installed.
fn with<R>(fallback: R, f: impl FnOnce(&mut HostState) -> R) -> R {
    state::with(f).unwrap_or(fallback)
}

/// Answers a `const char **` directory query.
///
/// # Safety
/// `data` must be NULL or valid for writing a `*const c_char`.
unsafe fn dir(data: *mut c_void, pick: impl FnOnce(&HostState) -> *const c_char) -> bool {
    if data.is_null() {
        return false;
    }
    match state::with(|s| pick(s)) {
        Some(p) => {
            // SAFETY: checked non-null; the CString lives in the state until the core is dropped.
            unsafe { answer(data, p) };
            true
        }
        None => false,
    }
}

fn register(defs: Vec<OptionDef>) -> bool {
    tracing::debug!("core registered {} options", defs.len());
    with(false, |s| {
        s.options.register(defs);
        true
    })
}

/// Collects the `values` of one v1/v2 definition.
///
/// # Safety
/// `values` must hold a `{NULL, NULL}`-terminated list (or be full).
unsafe fn values(values: &[ffi::CoreOptionValue]) -> Vec<String> {
    values
        .iter()
        .take_while(|v| !v.value.is_null())
        // SAFETY: non-null values are NUL-terminated strings owned by the core.
        .filter_map(|v| unsafe { string(v.value) })
        .collect()
}

/// One option definition's key, description, values and default, as v1 and v2 both hold them.
type DefFields<'a> = (
    *const c_char,
    *const c_char,
    &'a [ffi::CoreOptionValue],
    *const c_char,
);

/// # Safety
/// `p` must be NULL or point to a `{NULL, ...}`-terminated v1 definition array.
unsafe fn v1_defs(p: *const ffi::CoreOptionDefinition) -> Vec<OptionDef> {
    // SAFETY: as this function's contract.
    unsafe { defs(p, |d| (d.key, d.desc, &d.values, d.default_value)) }
}

/// # Safety
/// `p` must be NULL or point to a `{NULL, ...}`-terminated v2 definition array.
unsafe fn v2_defs(p: *const ffi::CoreOptionV2Definition) -> Vec<OptionDef> {
    // SAFETY: as this function's contract.
    unsafe { defs(p, |d| (d.key, d.desc, &d.values, d.default_value)) }
}

/// The definitions of a v1 or v2 array, read through `fields`.
///
/// # Safety
/// `p` must be NULL or point to an array of `T` that ends with an entry whose key (as
/// `fields` reads it) is NULL, and whose strings are NULL or NUL-terminated.
unsafe fn defs<T>(mut p: *const T, fields: impl Fn(&T) -> DefFields<'_>) -> Vec<OptionDef> {
    let mut defs = Vec::new();
    // SAFETY: walking the core's array up to its terminator.
    unsafe {
        while !p.is_null() {
            let (key, desc, vals, default) = fields(&*p);
            if key.is_null() {
                break;
            }
            let key = string(key).unwrap_or_default();
            let desc = string(desc).unwrap_or_default();
            let default = string(default);
            defs.extend(OptionDef::new(
                &key,
                &desc,
                values(vals),
                default.as_deref(),
            ));
            p = p.add(1);
        }
    }
    defs
}

pub unsafe extern "C" fn video_refresh(
    data: *const c_void,
    width: c_uint,
    height: c_uint,
    pitch: usize,
) {
    guard((), || {
        if data.is_null() {
            return; // duplicated frame: keep the previous one
        }
        if data as usize == ffi::HW_FRAME_BUFFER_VALID {
            state::with(
                |s| match s.hw.as_mut().map(|hw| hw.capture(width, height)) {
                    Some(Some(size)) => {
                        s.hw_frame = Some(size);
                        s.frame_fresh = false;
                    }
                    Some(None) => {}
                    None => tracing::warn!("core presented a hardware frame without a context"),
                },
            );
            return;
        }
        state::with(|s| {
            let (w, h) = (width as usize, height as usize);
            let len = if h == 0 {
                0
            } else {
                pitch * (h - 1) + w * s.pixel_format.bytes_per_pixel()
            };
            // SAFETY: the core guarantees `height` rows of `pitch` bytes at `data`, the
            // last one at least `width` pixels long.
            let src = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
            // Copied as is: converting waits until someone looks (Core::video).
            if s.frame.store(s.pixel_format, src, width, height, pitch) {
                s.frame_fresh = true;
                s.hw_frame = None;
            }
        });
    })
}

pub unsafe extern "C" fn audio_sample(left: i16, right: i16) {
    guard((), || {
        state::with(|s| s.audio.extend_from_slice(&[left, right]));
    })
}

pub unsafe extern "C" fn audio_sample_batch(data: *const i16, frames: usize) -> usize {
    guard(0, || {
        if data.is_null() {
            return 0;
        }
        // SAFETY: the core passes `frames` interleaved stereo frames.
        let samples = unsafe { std::slice::from_raw_parts(data, frames * 2) };
        state::with(|s| s.audio.extend_from_slice(samples));
        frames
    })
}

pub unsafe extern "C" fn input_poll() {}

pub unsafe extern "C" fn input_state(
    port: c_uint,
    device: c_uint,
    _index: c_uint,
    id: c_uint,
) -> i16 {
    guard(0, || {
        if device & ffi::DEVICE_MASK != ffi::DEVICE_JOYPAD {
            return 0;
        }
        let pad = state::with(|s| s.inputs.get(port as usize).copied()).flatten();
        let Some(pad) = pad else { return 0 };
        match id {
            ffi::DEVICE_ID_JOYPAD_MASK => pad.0 as i16,
            0..=15 => i16::from(pad.0 & (1 << id) != 0),
            _ => 0,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::CoreConfig;
    use crate::input::Pad;
    use std::ffi::CString;
    use std::ptr::{null, null_mut};

    fn env_call<T>(cmd: c_uint, value: &mut T) -> bool {
        // SAFETY: `value` has the type the test gives the command.
        unsafe { environment(cmd, (value as *mut T).cast()) }
    }

    // One test: the callbacks share the process-wide state.
    #[test]
    fn answers_commands_and_survives_null_probes() {
        let config = CoreConfig {
            system_dir: "/sys-dir".into(),
            netplay: true,
            ..CoreConfig::default()
        };
        state::install(HostState::new(&config, None));

        for base in 0..=100u32 {
            for cmd in [base, base | env::EXPERIMENTAL] {
                // SAFETY: NULL data must be handled by every command.
                unsafe { environment(cmd, null_mut()) };
            }
        }
        // SAFETY: NULL probes as FBNeo and GPGX send them.
        unsafe {
            assert!(environment(env::GET_INPUT_BITMASKS, null_mut()));
            assert!(environment(env::GET_SAVESTATE_CONTEXT, null_mut()));
        }
        state::with(|s| s.shutdown = false);

        let mut context: c_int = -1;
        assert!(env_call(env::GET_SAVESTATE_CONTEXT, &mut context));
        assert_eq!(context, ffi::SAVESTATE_CONTEXT_ROLLBACK_NETPLAY);

        let mut dir: *const c_char = null();
        assert!(env_call(env::GET_SYSTEM_DIRECTORY, &mut dir));
        // SAFETY: the answer is a NUL-terminated string owned by the state.
        assert_eq!(unsafe { CStr::from_ptr(dir) }.to_str().unwrap(), "/sys-dir");

        let mut format: c_int = 7;
        assert!(!env_call(env::SET_PIXEL_FORMAT, &mut format));
        format = ffi::PIXEL_FORMAT_RGB565;
        assert!(env_call(env::SET_PIXEL_FORMAT, &mut format));

        let key = CString::new("core_speed").unwrap();
        let spec = CString::new("Speed; normal|fast").unwrap();
        let mut vars = [
            ffi::Variable {
                key: key.as_ptr(),
                value: spec.as_ptr(),
            },
            ffi::Variable {
                key: null(),
                value: null(),
            },
        ];
        // SAFETY: a terminated retro_variable array.
        assert!(unsafe { environment(env::SET_VARIABLES, vars.as_mut_ptr().cast()) });
        let mut query = ffi::Variable {
            key: key.as_ptr(),
            value: null(),
        };
        assert!(env_call(env::GET_VARIABLE, &mut query));
        // SAFETY: answered with a NUL-terminated string that stays valid.
        assert_eq!(
            unsafe { CStr::from_ptr(query.value) }.to_str().unwrap(),
            "normal"
        );
        let unknown = CString::new("nope").unwrap();
        let mut query = ffi::Variable {
            key: unknown.as_ptr(),
            value: null(),
        };
        assert!(!env_call(env::GET_VARIABLE, &mut query));
        assert!(query.value.is_null());

        // A v2 definition sent although GET_CORE_OPTIONS_VERSION answered 0.
        let (k2, v_a, v_b) = (
            CString::new("v2_key").unwrap(),
            CString::new("a").unwrap(),
            CString::new("b").unwrap(),
        );
        let value = |v: &CString| ffi::CoreOptionValue {
            value: v.as_ptr(),
            label: null(),
        };
        let none = || ffi::CoreOptionValue {
            value: null(),
            label: null(),
        };
        let mut values: [ffi::CoreOptionValue; ffi::NUM_CORE_OPTION_VALUES_MAX] =
            std::array::from_fn(|_| none());
        values[0] = value(&v_a);
        values[1] = value(&v_b);
        let def = |key: *const c_char, values, default_value| ffi::CoreOptionV2Definition {
            key,
            desc: null(),
            desc_categorized: null(),
            info: null(),
            info_categorized: null(),
            category_key: null(),
            values,
            default_value,
        };
        let defs = [
            def(k2.as_ptr(), values, v_b.as_ptr()),
            def(null(), std::array::from_fn(|_| none()), null()),
        ];
        let mut v2 = ffi::CoreOptionsV2 {
            categories: null(),
            definitions: defs.as_ptr(),
        };
        assert!(env_call(env::SET_CORE_OPTIONS_V2, &mut v2));
        let registered = state::with(|s| s.options.values()).unwrap();
        assert!(
            registered.contains(&("v2_key".to_owned(), "b".to_owned())),
            "{registered:?}"
        );

        let mut rotation: c_uint = 3;
        assert!(env_call(env::SET_ROTATION, &mut rotation));
        assert_eq!(state::with(|s| s.rotation), Some(3));

        state::with(|s| s.inputs[1] = Pad(0b1000_0001_0000_1000));
        // SAFETY: plain calls of the input callback.
        unsafe {
            assert_eq!(
                input_state(1, ffi::DEVICE_JOYPAD, 0, ffi::DEVICE_ID_JOYPAD_MASK),
                0b1000_0001_0000_1000u16 as i16
            );
            assert_eq!(input_state(1, ffi::DEVICE_JOYPAD, 0, 3), 1);
            assert_eq!(input_state(1, ffi::DEVICE_JOYPAD, 0, 4), 0);
            assert_eq!(input_state(9, ffi::DEVICE_JOYPAD, 0, 3), 0);
        }

        // Hardware rendering: OpenGL preferred, a shared context granted, Vulkan refused
        // with the reason kept for the load (and no context made).
        let mut preferred: c_uint = 0;
        assert!(env_call(env::GET_PREFERRED_HW_RENDER, &mut preferred));
        assert_eq!(preferred, ffi::HW_CONTEXT_OPENGL);
        // SAFETY: SET_HW_SHARED_CONTEXT takes no data.
        assert!(unsafe { environment(env::SET_HW_SHARED_CONTEXT, null_mut()) });
        state::with(|s| s.core_name = "testcore".into());
        let mut vulkan = ffi::HwRenderCallback {
            context_type: 6,
            context_reset: None,
            get_current_framebuffer: None,
            get_proc_address: None,
            depth: false,
            stencil: false,
            bottom_left_origin: false,
            version_major: 1,
            version_minor: 0,
            cache_context: false,
            context_destroy: None,
            debug_context: false,
        };
        assert!(!env_call(env::SET_HW_RENDER, &mut vulkan));
        assert!(vulkan.get_proc_address.is_none());
        let refusal = state::with(|s| s.hw_refusal.take().map(|e| e.to_string())).flatten();
        assert_eq!(
            refusal.as_deref(),
            Some("testcore asks for Vulkan rendering; framelock runs OpenGL and OpenGL ES cores only")
        );
        assert!(state::with(|s| s.hw.is_none()).unwrap());

        // A software frame buffer in the core's pixel format (RGB565 by now), presented as is.
        let mut fb = ffi::SoftwareFramebuffer {
            data: null_mut(),
            width: 3,
            height: 2,
            pitch: 0,
            format: -1,
            access_flags: 1,
            memory_flags: 0,
        };
        assert!(env_call(env::GET_CURRENT_SOFTWARE_FRAMEBUFFER, &mut fb));
        assert!(!fb.data.is_null());
        assert_eq!((fb.pitch, fb.format), (8, ffi::PIXEL_FORMAT_RGB565));
        // SAFETY: the buffer holds 2 rows of `pitch` bytes; the core draws, then presents it.
        unsafe {
            let rows = std::slice::from_raw_parts_mut(fb.data.cast::<u16>(), 8);
            rows[..3].copy_from_slice(&[0xf800, 0x07e0, 0x001f]);
            rows[4..7].copy_from_slice(&[0xffff, 0, 0xf800]);
            video_refresh(fb.data, 3, 2, fb.pitch);
        }
        assert_eq!(
            state::with(|s| {
                let mut out = Vec::new();
                s.frame.to_xrgb8888(&mut out);
                out
            }),
            Some(vec![0xff0000, 0x00ff00, 0x0000ff, 0xffffff, 0, 0xff0000])
        );
        let mut empty = ffi::SoftwareFramebuffer { width: 0, ..fb };
        assert!(!env_call(env::GET_CURRENT_SOFTWARE_FRAMEBUFFER, &mut empty));

        let px: [u16; 2] = [0xf800, 0x001f];
        // SAFETY: a 2x1 RGB565 frame, then a duplicate (NULL).
        unsafe {
            video_refresh(px.as_ptr().cast(), 2, 1, 4);
            video_refresh(null(), 2, 1, 4);
        }
        assert_eq!(
            state::with(|s| {
                let mut out = Vec::new();
                s.frame.to_xrgb8888(&mut out);
                out
            }),
            Some(vec![0x00ff_0000, 0x0000_00ff])
        );

        state::remove();
    }
}
