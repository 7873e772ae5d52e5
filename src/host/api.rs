//! The table of a core's `retro_*` functions, from a shared library or the built-in core.

use std::ffi::{c_uint, c_void};
use std::path::{Path, PathBuf};

use libloading::Library;

use super::ffi::{self, GameInfo, SystemAvInfo, SystemInfo};
use super::HostError;

/// Where a core comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoreSource {
    /// The built-in game (`lightcycles`), linked into framelock.
    Builtin,
    /// A libretro core shared library (`*_libretro.so`, `*_libretro.dll` on Windows).
    Path(PathBuf),
}

impl std::fmt::Display for CoreSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CoreSource::Builtin => f.write_str("built-in core"),
            CoreSource::Path(p) => write!(f, "{}", p.display()),
        }
    }
}

/// Every `retro_*` entry point of one core. For a shared library the `Library` is kept
/// here so the pointers stay valid as long as the table.
pub struct CoreApi {
    pub set_environment: unsafe extern "C" fn(ffi::EnvironmentFn),
    pub set_video_refresh: unsafe extern "C" fn(ffi::VideoRefreshFn),
    pub set_audio_sample: unsafe extern "C" fn(ffi::AudioSampleFn),
    pub set_audio_sample_batch: unsafe extern "C" fn(ffi::AudioSampleBatchFn),
    pub set_input_poll: unsafe extern "C" fn(ffi::InputPollFn),
    pub set_input_state: unsafe extern "C" fn(ffi::InputStateFn),
    pub init: unsafe extern "C" fn(),
    pub deinit: unsafe extern "C" fn(),
    pub api_version: unsafe extern "C" fn() -> c_uint,
    pub get_system_info: unsafe extern "C" fn(*mut SystemInfo),
    pub get_system_av_info: unsafe extern "C" fn(*mut SystemAvInfo),
    pub set_controller_port_device: unsafe extern "C" fn(c_uint, c_uint),
    pub reset: unsafe extern "C" fn(),
    pub run: unsafe extern "C" fn(),
    pub serialize_size: unsafe extern "C" fn() -> usize,
    pub serialize: unsafe extern "C" fn(*mut c_void, usize) -> bool,
    pub unserialize: unsafe extern "C" fn(*const c_void, usize) -> bool,
    pub load_game: unsafe extern "C" fn(*const GameInfo) -> bool,
    pub unload_game: unsafe extern "C" fn(),
    pub get_memory_data: unsafe extern "C" fn(c_uint) -> *mut c_void,
    pub get_memory_size: unsafe extern "C" fn(c_uint) -> usize,
    _library: Option<Library>,
}

impl CoreApi {
    pub fn open(source: &CoreSource) -> Result<CoreApi, HostError> {
        match source {
            CoreSource::Builtin => Ok(builtin::table()),
            CoreSource::Path(path) => from_library(path),
        }
    }
}

fn from_library(path: &Path) -> Result<CoreApi, HostError> {
    // Missing, unreadable and directory cores are told in the OS's words, as content is;
    // dlopen would say "cannot read file data: Is a directory" after the path.
    let open_error = |io| HostError::OpenCore {
        path: path.to_owned(),
        io,
    };
    let meta = std::fs::File::open(path)
        .and_then(|f| f.metadata())
        .map_err(open_error)?;
    if meta.is_dir() {
        return Err(open_error(std::io::ErrorKind::IsADirectory.into()));
    }
    // dlopen searches the system library path for names without a '/': anchor relative
    // paths at the working directory so `core.so` means the file the user pointed at.
    let load_path = if path.is_relative() {
        Path::new(".").join(path)
    } else {
        path.to_owned()
    };
    // SAFETY: loading a library runs its initialisers; a libretro core is trusted code by
    // the user's choice of path.
    let library = unsafe { open_library(&load_path) }.map_err(|e| {
        // dlerror starts with the path it was given, which the message names already;
        // Windows' text is in the error's source.
        let mut reason = e.to_string();
        if let Some(source) = std::error::Error::source(&e) {
            reason = format!("{reason}: {}", source.to_string().trim_end());
        }
        let prefix = format!("{}: ", load_path.display());
        let reason = reason.strip_prefix(&prefix).unwrap_or(&reason).to_owned();
        HostError::NotACore {
            path: path.to_owned(),
            reason: explain_load_failure(path, reason),
        }
    })?;

    macro_rules! sym {
        ($name:literal) => {{
            // SAFETY: the symbol is declared by libretro.h with exactly the type of the
            // field it is assigned to; the library outlives the pointer (kept in the table).
            let s =
                unsafe { library.get($name.as_bytes()) }.map_err(|_| HostError::MissingSymbol {
                    path: path.to_owned(),
                    symbol: $name,
                })?;
            *s
        }};
    }

    Ok(CoreApi {
        set_environment: sym!("retro_set_environment"),
        set_video_refresh: sym!("retro_set_video_refresh"),
        set_audio_sample: sym!("retro_set_audio_sample"),
        set_audio_sample_batch: sym!("retro_set_audio_sample_batch"),
        set_input_poll: sym!("retro_set_input_poll"),
        set_input_state: sym!("retro_set_input_state"),
        init: sym!("retro_init"),
        deinit: sym!("retro_deinit"),
        api_version: sym!("retro_api_version"),
        get_system_info: sym!("retro_get_system_info"),
        get_system_av_info: sym!("retro_get_system_av_info"),
        set_controller_port_device: sym!("retro_set_controller_port_device"),
        reset: sym!("retro_reset"),
        run: sym!("retro_run"),
        serialize_size: sym!("retro_serialize_size"),
        serialize: sym!("retro_serialize"),
        unserialize: sym!("retro_unserialize"),
        load_game: sym!("retro_load_game"),
        unload_game: sym!("retro_unload_game"),
        get_memory_data: sym!("retro_get_memory_data"),
        get_memory_size: sym!("retro_get_memory_size"),
        _library: Some(library),
    })
}

/// Opens a library. On Windows the core's own folder is searched first for the DLLs it
/// imports (LOAD_WITH_ALTERED_SEARCH_PATH, which wants an absolute path), as RetroArch
/// finds a core's companions.
///
/// # Safety
/// As [`Library::new`]: the library's initialisers run.
unsafe fn open_library(path: &Path) -> Result<Library, libloading::Error> {
    #[cfg(windows)]
    {
        const LOAD_WITH_ALTERED_SEARCH_PATH: u32 = 0x0000_0008;
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        // SAFETY: the caller's.
        unsafe {
            libloading::os::windows::Library::load_with_flags(
                absolute,
                LOAD_WITH_ALTERED_SEARCH_PATH,
            )
        }
        .map(Library::from)
    }
    #[cfg(not(windows))]
    // SAFETY: the caller's.
    unsafe {
        Library::new(path)
    }
}

/// The loader's `reason`, with what the file says about itself when that helps more: a
/// library built for another system, or (Windows) the imported DLLs that cannot be found.
fn explain_load_failure(path: &Path, reason: String) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let other_system = if cfg!(windows) {
        bytes.starts_with(b"\x7fELF").then_some(
            "a Linux library (ELF); Windows loads cores built for Windows: NAME_libretro.dll",
        )
    } else {
        bytes.starts_with(b"MZ").then_some(
            "a Windows DLL; this system loads cores built for it (on Debian: the libretro-* \
             packages, NAME_libretro.so)",
        )
    };
    if let Some(what) = other_system {
        return what.to_string();
    }
    if cfg!(windows) {
        let dir = path.parent().unwrap_or(Path::new("."));
        let missing = missing_imports(&bytes, |dll| dir.join(dll).is_file() || system_has_dll(dll));
        if !missing.is_empty() {
            return format!(
                "it needs {}, found neither beside it nor on the system (copy {} next to the \
                 core)",
                missing.join(", "),
                if missing.len() == 1 { "it" } else { "them" }
            );
        }
    }
    reason
}

/// The DLLs a Windows library imports (from its PE import table) that `found` cannot find;
/// API sets (`api-ms-*`, `ext-ms-*`) are the system's own and count as found.
fn missing_imports(pe: &[u8], found: impl Fn(&str) -> bool) -> Vec<String> {
    use object::read::pe::{PeFile32, PeFile64};
    let imports = match object::FileKind::parse(pe) {
        Ok(object::FileKind::Pe64) => PeFile64::parse(pe).ok().map(|f| dll_names(&f)),
        Ok(object::FileKind::Pe32) => PeFile32::parse(pe).ok().map(|f| dll_names(&f)),
        _ => None,
    };
    imports
        .unwrap_or_default()
        .into_iter()
        .filter(|dll| {
            let lower = dll.to_ascii_lowercase();
            !lower.starts_with("api-ms-") && !lower.starts_with("ext-ms-") && !found(dll)
        })
        .collect()
}

fn dll_names<Pe: object::read::pe::ImageNtHeaders>(
    file: &object::read::pe::PeFile<Pe>,
) -> Vec<String> {
    let Ok(Some(table)) = file.import_table() else {
        return Vec::new();
    };
    let Ok(mut descriptors) = table.descriptors() else {
        return Vec::new();
    };
    let mut names = Vec::new();
    while let Ok(Some(d)) = descriptors.next() {
        if let Ok(name) = table.name(d.name.get(object::LittleEndian)) {
            names.push(String::from_utf8_lossy(name).into_owned());
        }
    }
    names
}

/// Whether Windows' own search (system folders, the executable's, PATH) finds `dll`: loaded
/// as a data file, so nothing in it runs.
#[cfg(windows)]
fn system_has_dll(dll: &str) -> bool {
    const LOAD_LIBRARY_AS_DATAFILE: u32 = 0x0000_0002;
    // SAFETY: a data-file mapping runs no code of the library.
    unsafe { libloading::os::windows::Library::load_with_flags(dll, LOAD_LIBRARY_AS_DATAFILE) }
        .is_ok()
}

#[cfg(not(windows))]
fn system_has_dll(_: &str) -> bool {
    true
}

/// The built-in core's exports, resolved at link time like a C frontend that links a core
/// statically. `lightcycles` is an rlib exporting `#[no_mangle] extern "C" fn retro_*`.
mod builtin {
    use super::*;
    use lightcycles as _;

    extern "C" {
        fn retro_set_environment(cb: ffi::EnvironmentFn);
        fn retro_set_video_refresh(cb: ffi::VideoRefreshFn);
        fn retro_set_audio_sample(cb: ffi::AudioSampleFn);
        fn retro_set_audio_sample_batch(cb: ffi::AudioSampleBatchFn);
        fn retro_set_input_poll(cb: ffi::InputPollFn);
        fn retro_set_input_state(cb: ffi::InputStateFn);
        fn retro_init();
        fn retro_deinit();
        fn retro_api_version() -> c_uint;
        fn retro_get_system_info(info: *mut SystemInfo);
        fn retro_get_system_av_info(info: *mut SystemAvInfo);
        fn retro_set_controller_port_device(port: c_uint, device: c_uint);
        fn retro_reset();
        fn retro_run();
        fn retro_serialize_size() -> usize;
        fn retro_serialize(data: *mut c_void, size: usize) -> bool;
        fn retro_unserialize(data: *const c_void, size: usize) -> bool;
        fn retro_load_game(game: *const GameInfo) -> bool;
        fn retro_unload_game();
        fn retro_get_memory_data(id: c_uint) -> *mut c_void;
        fn retro_get_memory_size(id: c_uint) -> usize;
    }

    pub fn table() -> CoreApi {
        CoreApi {
            set_environment: retro_set_environment,
            set_video_refresh: retro_set_video_refresh,
            set_audio_sample: retro_set_audio_sample,
            set_audio_sample_batch: retro_set_audio_sample_batch,
            set_input_poll: retro_set_input_poll,
            set_input_state: retro_set_input_state,
            init: retro_init,
            deinit: retro_deinit,
            api_version: retro_api_version,
            get_system_info: retro_get_system_info,
            get_system_av_info: retro_get_system_av_info,
            set_controller_port_device: retro_set_controller_port_device,
            reset: retro_reset,
            run: retro_run,
            serialize_size: retro_serialize_size,
            serialize: retro_serialize,
            unserialize: retro_unserialize,
            load_game: retro_load_game,
            unload_game: retro_unload_game,
            get_memory_data: retro_get_memory_data,
            get_memory_size: retro_get_memory_size,
            _library: None,
        }
    }
}
