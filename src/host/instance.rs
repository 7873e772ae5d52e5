//! [`Core`]: one loaded libretro core and its content.

use std::cell::{Cell, OnceCell};
use std::ffi::{c_char, CStr, CString};
use std::path::{Path, PathBuf};

use super::api::{CoreApi, CoreSource};
use super::checksum::{self, Basis};
use super::environment as cb;
use super::fbneo::{self, RomsetReport};
use super::ffi::{self, GameInfo, SystemAvInfo, SystemInfo};
use super::state::{self, HostState};
use super::video::RawFrame;
use super::{
    log, sram, AvInfo, CoreConfig, CoreInfo, HostError, MemoryRegion, OptionDef, VideoFrame,
};
use crate::input::Inputs;

/// Audio kept for a caller that does not drain it (about 10 s at 48 kHz stereo); older
/// samples are dropped.
const AUDIO_CAP: usize = 1 << 20;

/// A libretro core, opened and (after [`Core::load_game`]) running content.
///
/// Calling order:
/// 1. [`Core::open`] (dlopen or built-in, `retro_set_*`, `retro_init`);
/// 2. optionally [`Core::set_option`], then [`Core::load_game`] once;
/// 3. per frame: [`Core::run_frame`], then [`Core::video`] and [`Core::drain_audio`];
///    [`Core::serialize`] / [`Core::unserialize`] / [`Core::checksum`] between frames;
/// 4. drop: saves SRAM, `retro_unload_game`, `retro_deinit`, dlclose.
///
/// Only one `Core` may be alive per process (see the module docs).
pub struct Core {
    info: CoreInfo,
    save_dir: PathBuf,
    loaded: bool,
    initialized: bool,
    content_hash: Option<u64>,
    /// Content bytes handed to the core by pointer; must outlive the loaded game.
    _content_data: Option<Vec<u8>>,
    /// The content path handed to the core; some cores keep the pointer.
    _content_path: Option<CString>,
    sram_path: Option<PathBuf>,
    /// The last frame the core presented, in its own pixel format.
    frame: RawFrame,
    /// The size of the last frame, when the core drew it with OpenGL: its picture waits in
    /// the host's read-back and `frame` is stale.
    hw_frame: Option<(u32, u32)>,
    /// `frame` as XRGB8888, converted on first demand after each new frame.
    pixels: OnceCell<Vec<u32>>,
    /// The allocation `pixels` held before the last new frame, reused by the next conversion.
    spare_pixels: Cell<Vec<u32>>,
    frame_count: u64,
    /// Samples (`i16`s) the last `run_frame` added to the undrained audio; reset by a drain.
    frame_samples: usize,
    /// Test hook (`CoreConfig::ignore_loads`).
    ignore_loads: bool,
    /// `unserialize` calls (see `loads`).
    loads: u64,
    /// `run_frame` calls after which the core repeated its last picture instead of
    /// presenting one (see `repeats`).
    repeats: u64,
    // Last: dropped after `Drop::drop` has unloaded and deinitialised the core.
    api: CoreApi,
}

// SAFETY: the core is driven only through `&mut self` or `&self` from whichever thread
// owns the `Core`; callbacks reach shared state through a mutex, not thread-locals.
unsafe impl Send for Core {}

impl Core {
    /// Loads the core and initialises it. Creates the system and save directories.
    pub fn open(source: &CoreSource, config: &CoreConfig) -> Result<Core, HostError> {
        // dlopen and symbol lookup touch no core state, so they may precede the claim.
        let api = prepare(source, config)?;
        if !state::claim() {
            return Err(HostError::AlreadyOpen);
        }
        let libretro_path = match source {
            CoreSource::Path(p) => Some(p.as_path()),
            CoreSource::Builtin => None,
        };
        state::install(HostState::new(config, libretro_path));
        log::clear();
        let mut core = Core {
            info: CoreInfo {
                library_name: String::new(),
                library_version: String::new(),
                valid_extensions: String::new(),
                need_fullpath: false,
                block_extract: false,
                support_no_game: false,
            },
            save_dir: config.save_dir.clone(),
            loaded: false,
            initialized: false,
            content_hash: None,
            _content_data: None,
            _content_path: None,
            sram_path: None,
            frame: RawFrame::default(),
            hw_frame: None,
            pixels: OnceCell::new(),
            spare_pixels: Cell::new(Vec::new()),
            frame_count: 0,
            frame_samples: 0,
            ignore_loads: config.ignore_loads,
            loads: 0,
            repeats: 0,
            api,
        };
        // SAFETY: the callbacks match libretro.h's types; environment comes first, as
        // cores may call it from retro_set_environment and retro_init.
        unsafe {
            (core.api.set_environment)(cb::environment);
            (core.api.set_video_refresh)(cb::video_refresh);
            (core.api.set_audio_sample)(cb::audio_sample);
            (core.api.set_audio_sample_batch)(cb::audio_sample_batch);
            (core.api.set_input_poll)(cb::input_poll);
            (core.api.set_input_state)(cb::input_state);
            (core.api.init)();
        }
        core.initialized = true;
        core.info = system_info(&core.api);
        core.info.support_no_game = state::with(|s| s.support_no_game).unwrap_or(false);
        let name = core.info.library_name.clone();
        state::with(|s| s.core_name = name);
        if let Some(e) = state::with(|s| s.options.take_deferred_error()).flatten() {
            return Err(e);
        }
        tracing::info!(
            "opened {} {} ({source})",
            core.info.library_name,
            core.info.library_version
        );
        Ok(core)
    }

    pub fn info(&self) -> &CoreInfo {
        &self.info
    }

    /// Loads content (`None` only if the core supports starting without content), the
    /// way the core asks: by path if it needs the full path, otherwise as bytes in memory.
    /// Then loads `<save_dir>/<stem>.srm` into the core's save RAM if present.
    pub fn load_game(&mut self, content: Option<&Path>) -> Result<(), HostError> {
        if self.loaded {
            return Err(HostError::AlreadyLoaded);
        }
        state::with(|s| {
            s.shutdown = false;
            s.hw_refusal = None;
        });
        log::clear();
        let ok = match content {
            None => {
                if !self.info.support_no_game {
                    return Err(HostError::ContentRequired {
                        core: self.info.library_name.clone(),
                    });
                }
                // SAFETY: NULL game info is how libretro starts a core without content.
                unsafe { (self.api.load_game)(std::ptr::null()) }
            }
            Some(path) => self.load_content(path)?,
        };
        let shown = content.map_or_else(|| "no content".to_owned(), |p| p.display().to_string());
        let hw_refusal = state::with(|s| s.hw_refusal.take()).flatten();
        if !ok {
            self.content_hash = None;
            // A core that gave up for want of its hardware context says no more than that.
            drop(state::with(|s| s.hw.take()));
            if let Some(e) = hw_refusal {
                return Err(e);
            }
            return Err(HostError::ContentRefused {
                path: content.map(Path::to_owned).unwrap_or_default(),
                log: last_problem(),
            });
        }
        self.loaded = true;
        // Before the shutdown check: a romset error names the missing files.
        if let (Some(path), true) = (content, fbneo::is_fbneo(&self.info.library_name)) {
            let report = RomsetReport::from_log(&log::recent());
            // SAFETY: plain query on a loaded core.
            let state_size = unsafe { (self.api.serialize_size)() };
            if report.is_incomplete() || state_size == 0 {
                self.unload();
                let set = path
                    .file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                return Err(HostError::MissingRomset {
                    set,
                    missing: report.missing,
                });
            }
        }
        if self.shutdown_requested() {
            self.unload();
            return Err(HostError::ShutdownDuringLoad {
                content: shown,
                log: last_problem(),
            });
        }
        if let Some(e) = state::with(|s| s.options.take_deferred_error()).flatten() {
            self.unload();
            return Err(e);
        }
        for (key, value) in state::with(|s| s.options.take_unregistered()).unwrap_or_default() {
            tracing::warn!("core has no option {key} (ignored {key}={value})");
        }
        // Plug a RetroPad into every port the core describes, as RetroArch does by default.
        let ports = state::with(|s| s.controller_ports).unwrap_or(0);
        for port in 0..ports.min(crate::input::MAX_PLAYERS as u32) {
            // SAFETY: plain call on a loaded core.
            unsafe { (self.api.set_controller_port_device)(port, ffi::DEVICE_JOYPAD) };
        }
        let mut av = SystemAvInfo::default();
        // SAFETY: `av` is a valid out-pointer of the right type.
        unsafe { (self.api.get_system_av_info)(&mut av) };
        state::with(|s| s.av.update_from(&av));
        if let Some(e) = hw_refusal {
            tracing::warn!("{e}; the core goes on without it");
        }
        self.start_hw()?;
        if let Some(path) = content {
            self.load_sram(path);
        }
        tracing::info!("loaded {shown}");
        Ok(())
    }

    /// With the game loaded: the hardware-rendered core's frame buffer, then its
    /// `context_reset` (see `gl`). Nothing for a software core.
    fn start_hw(&mut self) -> Result<(), HostError> {
        let av = self.av_info();
        let size = (
            av.max_width.max(av.base_width),
            av.max_height.max(av.base_height),
        );
        let name = self.info.library_name.clone();
        let started = state::with(|s| s.hw.as_mut().map(|hw| hw.start(size, &name))).flatten();
        match started {
            None => Ok(()),
            Some(Err(e)) if self.frame_count == 0 => {
                self.unload();
                Err(e)
            }
            // Asked for in `retro_run`: the game plays on, without a picture.
            Some(Err(e)) => {
                drop(state::with(|s| s.hw.take()));
                Err(e)
            }
            Some(Ok(reset)) => {
                if let Some(reset) = reset {
                    // SAFETY: the core's own callback, with its context current; no lock held.
                    unsafe { reset() };
                }
                Ok(())
            }
        }
    }

    /// Whether the core draws with OpenGL (negotiated SET_HW_RENDER).
    pub fn hardware_rendered(&self) -> bool {
        state::with(|s| s.hw.is_some()).unwrap_or(false)
    }

    /// The core's hardware rendering (what it asked for, the context, the read-back's
    /// numbers), if it draws with OpenGL.
    pub fn gl_report(&self) -> Option<super::gl::GlReport> {
        state::with(|s| s.hw.as_ref().map(|hw| hw.report())).flatten()
    }

    /// Reads the content, hashes it and calls `retro_load_game` with path or bytes.
    fn load_content(&mut self, path: &Path) -> Result<bool, HostError> {
        let read_error = |io| HostError::ReadContent {
            path: path.to_owned(),
            io,
        };
        // Only regular files: reading a FIFO or /dev/zero would never end.
        let meta = std::fs::metadata(path).map_err(read_error)?;
        if meta.is_dir() {
            return Err(read_error(std::io::ErrorKind::IsADirectory.into()));
        }
        if !meta.is_file() {
            return Err(read_error(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file",
            )));
        }
        // Cores that read the file themselves (CD images can be large) get it streamed
        // through the hash instead of held in memory.
        let bytes = if self.info.need_fullpath {
            self.content_hash = Some(hash_file(path).map_err(read_error)?);
            None
        } else {
            let bytes = std::fs::read(path).map_err(read_error)?;
            self.content_hash = Some(xxhash_rust::xxh3::xxh3_64(&bytes));
            Some(bytes)
        };
        let c_path = CString::new(path.to_string_lossy().into_owned())
            .map_err(|_| HostError::ContentPathNul(path.to_owned()))?;
        let mut game = GameInfo {
            path: c_path.as_ptr(),
            data: std::ptr::null(),
            size: 0,
            meta: std::ptr::null(),
        };
        if let Some(bytes) = bytes {
            game.data = bytes.as_ptr().cast();
            game.size = bytes.len();
            self._content_data = Some(bytes);
        }
        // SAFETY: `game` points to a path string and (optionally) bytes that are kept in
        // `self` for as long as the game stays loaded.
        let ok = unsafe { (self.api.load_game)(&game) };
        self._content_path = Some(c_path);
        Ok(ok)
    }

    /// xxh3-64 of the content file's bytes (of the zip itself for arcade sets).
    pub fn content_hash(&self) -> Option<u64> {
        self.content_hash
    }

    /// Runs one frame; port `i` reads `inputs[i]`. Does nothing before content is loaded.
    pub fn run_frame(&mut self, inputs: &Inputs) {
        if !self.loaded {
            tracing::warn!("run_frame before load_game ignored");
            return;
        }
        let before = state::with(|s| {
            s.inputs = *inputs;
            current(s);
            s.audio.len()
        })
        .unwrap_or(0);
        // SAFETY: the game is loaded; callbacks do not hold the state lock across calls.
        unsafe { (self.api.run)() };
        let after = state::with(|s| {
            if s.audio.len() > AUDIO_CAP {
                let excess = s.audio.len() - AUDIO_CAP;
                s.audio.drain(..excess);
            }
            if let Some(size) = s.hw_frame.take() {
                self.hw_frame = Some(size);
                if let Some(old) = self.pixels.take() {
                    self.spare_pixels.set(old);
                }
            } else if s.frame_fresh {
                // Swap, not copy: the callback's next frame reuses our old buffer.
                std::mem::swap(&mut self.frame, &mut s.frame);
                s.frame_fresh = false;
                self.hw_frame = None;
                if let Some(old) = self.pixels.take() {
                    self.spare_pixels.set(old);
                }
            } else {
                self.repeats += 1;
            }
            s.audio.len()
        })
        .unwrap_or(0);
        self.frame_samples = after.saturating_sub(before).min(after);
        self.frame_count += 1;
        let asked_late = state::with(|s| s.hw.as_ref().is_some_and(|hw| !hw.started()));
        if asked_late == Some(true) {
            if let Err(e) = self.start_hw() {
                tracing::error!("{e}");
            }
        }
    }

    /// The last frame the core presented (kept when it reports a duplicate). Converted to
    /// XRGB8888 on the first call after each new frame; runs that never look never convert.
    /// A hardware-rendered core's picture is read back from its frame buffer here.
    pub fn video(&self) -> VideoFrame<'_> {
        let pixels = self.pixels.get_or_init(|| {
            let mut out = self.spare_pixels.take();
            match self.hw_frame {
                Some((w, h)) => {
                    state::with(|s| s.hw.as_mut().map(|hw| hw.read(&mut out)));
                    // Never fewer pixels than the size says, whatever the read gave.
                    out.resize(w as usize * h as usize, 0);
                }
                None => self.frame.to_xrgb8888(&mut out),
            }
            out
        });
        let (width, height) = self
            .hw_frame
            .unwrap_or((self.frame.width(), self.frame.height()));
        VideoFrame {
            width,
            height,
            pixels,
        }
    }

    /// Appends the audio produced since the last call (interleaved stereo `i16`). Drain
    /// every frame: undrained audio beyond about 10 s is dropped.
    pub fn drain_audio(&mut self, out: &mut Vec<i16>) {
        self.frame_samples = 0;
        state::with(|s| out.append(&mut s.audio));
    }

    /// Appends a copy of the sound the last frame made, if it has not been drained or
    /// cleared since, leaving it to be drained: a second listener to the same sound.
    pub fn copy_frame_audio(&self, out: &mut Vec<i16>) {
        let n = self.frame_samples;
        state::with(|s| out.extend_from_slice(&s.audio[s.audio.len().saturating_sub(n)..]));
    }

    /// Queues `samples` as if the core had just produced them.
    pub fn queue_audio(&mut self, samples: &[i16]) {
        state::with(|s| s.audio.extend_from_slice(samples));
    }

    /// Drops the sound produced since the last drain.
    pub fn clear_audio(&mut self) {
        self.frame_samples = 0;
        state::with(|s| s.audio.clear());
    }

    pub fn av_info(&self) -> AvInfo {
        state::with(|s| s.av).unwrap_or_default()
    }

    /// Quarter turns counter-clockwise the frame must be shown rotated by (0..=3).
    pub fn rotation(&self) -> u32 {
        state::with(|s| s.rotation).unwrap_or(0)
    }

    pub fn shutdown_requested(&self) -> bool {
        state::with(|s| s.shutdown).unwrap_or(false)
    }

    /// Frames after which the core repeated its last picture instead of presenting one
    /// (Genesis Plus GX while it boots). Its picture then depends on the frames before, not
    /// on its state alone, which is what the desync checksum hashes with the memory.
    pub fn repeats(&self) -> u64 {
        self.repeats
    }

    /// Appends the last picture the core presented to `out` (see `RawFrame::append_to`).
    pub fn save_picture(&self, out: &mut Vec<u8>) {
        self.frame.append_to(out);
    }

    /// Shows a picture from [`save_picture`](Self::save_picture) again, as if the core had
    /// just presented it; false if the bytes are not one.
    pub fn load_picture(&mut self, bytes: &[u8]) -> bool {
        let Some(frame) = RawFrame::from_bytes(bytes) else {
            return false;
        };
        self.frame = frame;
        if let Some(old) = self.pixels.take() {
            self.spare_pixels.set(old);
        }
        true
    }

    /// The test hook that ignores every state loaded (`CoreConfig::ignore_loads`) is on:
    /// the core behaves as another one would.
    pub fn ignores_loads(&self) -> bool {
        self.ignore_loads
    }

    /// `run_frame` calls since content was loaded.
    pub fn frame_count(&self) -> u64 {
        self.frame_count
    }

    /// RETRO_SERIALIZATION_QUIRK_* flags the core declared (unsupported ones cleared).
    pub fn serialization_quirks(&self) -> u64 {
        state::with(|s| s.serialization_quirks).unwrap_or(0)
    }

    pub fn reset(&mut self) {
        if self.loaded {
            state::with(current);
            // SAFETY: plain call on a loaded core.
            unsafe { (self.api.reset)() };
        }
    }

    pub fn serialize(&mut self) -> Result<Vec<u8>, HostError> {
        let mut buf = Vec::new();
        self.serialize_into(&mut buf)?;
        Ok(buf)
    }

    /// `serialize` into `buf`, reusing its allocation: rollback saves a state every frame,
    /// and a fresh megabyte each time (Genesis Plus GX's size) costs page faults.
    pub fn serialize_into(&mut self, buf: &mut Vec<u8>) -> Result<(), HostError> {
        if !self.loaded {
            return Err(HostError::NotLoaded);
        }
        state::with(current);
        // SAFETY: plain query; the size may change between frames, so ask every time.
        let size = unsafe { (self.api.serialize_size)() };
        if size == 0 {
            return Err(HostError::SerializeUnsupported);
        }
        buf.resize(size, 0);
        // SAFETY: `buf` is writable for `size` bytes.
        if unsafe { (self.api.serialize)(buf.as_mut_ptr().cast(), size) } {
            Ok(())
        } else {
            Err(HostError::SerializeFailed)
        }
    }

    /// States loaded into the core so far (`unserialize` calls that succeeded).
    pub fn loads(&self) -> u64 {
        self.loads
    }

    pub fn unserialize(&mut self, state: &[u8]) -> Result<(), HostError> {
        if !self.loaded {
            return Err(HostError::NotLoaded);
        }
        self.loads += 1;
        if self.ignore_loads {
            return Ok(());
        }
        state::with(current);
        // SAFETY: `state` is readable for its length; the core only reads it.
        if unsafe { (self.api.unserialize)(state.as_ptr().cast(), state.len()) } {
            Ok(())
        } else {
            Err(HostError::UnserializeFailed { len: state.len() })
        }
    }

    /// A memory region the core exposes, or `None` (absent or empty).
    pub fn memory(&self, region: MemoryRegion) -> Option<&[u8]> {
        if !self.loaded {
            return None;
        }
        // SAFETY: plain queries on a loaded core.
        let (ptr, len) = unsafe {
            (
                (self.api.get_memory_data)(region.id()),
                (self.api.get_memory_size)(region.id()),
            )
        };
        if ptr.is_null() || len == 0 {
            return None;
        }
        // SAFETY: the core guarantees `len` bytes at `ptr` until the game is unloaded;
        // the borrow of `self` keeps `run_frame`/drop (which could change them) away.
        Some(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
    }

    fn memory_mut(&mut self, region: MemoryRegion) -> Option<&mut [u8]> {
        let len = self.memory(region)?.len();
        // SAFETY: plain query on a loaded core (`memory` returned Some).
        let ptr = unsafe { (self.api.get_memory_data)(region.id()) };
        // SAFETY: as in `memory`; `&mut self` makes this the only view.
        Some(unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u8>(), len) })
    }

    /// Overwrites save RAM with `bytes` (a netplay joiner takes the host's); a size mismatch
    /// copies the common prefix. False when the core exposes no save RAM.
    pub fn write_sram(&mut self, bytes: &[u8]) -> bool {
        match self.memory_mut(MemoryRegion::SaveRam) {
            Some(mem) => {
                let n = mem.len().min(bytes.len());
                mem[..n].copy_from_slice(&bytes[..n]);
                true
            }
            None => false,
        }
    }

    /// Desync checksum of the emulated machine: equal in two processes that ran the same
    /// content with the same inputs. xxh3 over system/save/video RAM and the last frame
    /// (the serialized state replaces the RAM for cores that expose none). A picture drawn
    /// with OpenGL is left out: two GPUs, or two drivers, draw the same machine state a few
    /// pixels apart, and peers would call that a desync.
    pub fn checksum(&mut self) -> u64 {
        if self.hw_frame.is_some() {
            return self.memory_checksum();
        }
        let regions: Vec<(MemoryRegion, &[u8])> = checksum::REGIONS
            .iter()
            .filter_map(|&r| self.memory(r).map(|m| (r, m)))
            .collect();
        if !regions.is_empty() {
            return checksum::compute(&Basis::Memory(regions), &self.video());
        }
        let state = self.serialize().unwrap_or_default();
        checksum::compute(&Basis::State(&state), &self.video())
    }

    /// `checksum` without the picture: the machine's memory (its state where it exposes
    /// none). What rollback must restore exactly; a picture the core repeats instead of
    /// drawing (while it boots) is whatever ran last, before or after a load.
    pub fn memory_checksum(&mut self) -> u64 {
        let blank = VideoFrame {
            width: 0,
            height: 0,
            pixels: &[],
        };
        let regions: Vec<(MemoryRegion, &[u8])> = checksum::REGIONS
            .iter()
            .filter_map(|&r| self.memory(r).map(|m| (r, m)))
            .collect();
        if !regions.is_empty() {
            return checksum::compute(&Basis::Memory(regions), &blank);
        }
        let state = self.serialize().unwrap_or_default();
        checksum::compute(&Basis::State(&state), &blank)
    }

    /// Current value of every option the core registered, in registration order.
    pub fn options(&self) -> Vec<(String, String)> {
        state::with(|s| s.options.values()).unwrap_or_default()
    }

    /// The options the core registered, with their allowed values.
    pub fn option_definitions(&self) -> Vec<OptionDef> {
        state::with(|s| s.options.definitions().to_vec()).unwrap_or_default()
    }

    /// Sets an option; the core sees it at its next GET_VARIABLE(_UPDATE). Before content
    /// is loaded, keys the core has not registered yet are kept for when it does.
    pub fn set_option(&mut self, key: &str, value: &str) -> Result<(), HostError> {
        let loaded = self.loaded;
        state::with(|s| s.options.set(key, value, !loaded)).unwrap_or(Ok(()))
    }

    /// Writes save RAM to `<save_dir>/<content stem>.srm` (atomically). A no-op without
    /// content or save RAM, and while the save RAM is all zeros and no file exists yet.
    pub fn save_sram(&self) -> Result<(), HostError> {
        let (Some(path), Some(bytes)) = (&self.sram_path, self.memory(MemoryRegion::SaveRam))
        else {
            return Ok(());
        };
        if !path.exists() && bytes.iter().all(|&b| b == 0) {
            return Ok(());
        }
        sram::write_atomic(path, bytes).map_err(|io| HostError::WriteSram {
            path: path.clone(),
            io,
        })?;
        tracing::debug!(
            "saved {} bytes of save ram to {}",
            bytes.len(),
            path.display()
        );
        Ok(())
    }

    /// Loads `<save_dir>/<content stem>.srm` if there is one. A file that is there but cannot
    /// be read is left alone: writing the session's save RAM over it at the end would replace
    /// the player's save with a fresh one.
    fn load_sram(&mut self, content: &Path) {
        let path = sram::path_for(&self.save_dir, content);
        let saved = match std::fs::read(&path) {
            Ok(saved) => Some(saved),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                tracing::warn!(
                    "cannot read save ram {}: {}; playing without it, and not saving over it",
                    path.display(),
                    crate::wording::io_reason(&e)
                );
                return;
            }
        };
        if let Some(saved) = saved {
            if let Some(mem) = self.memory_mut(MemoryRegion::SaveRam) {
                let n = saved.len().min(mem.len());
                mem[..n].copy_from_slice(&saved[..n]);
                if saved.len() != mem.len() {
                    tracing::warn!(
                        "{} holds {} bytes, the core's save ram {}",
                        path.display(),
                        saved.len(),
                        mem.len()
                    );
                }
                tracing::info!("loaded save ram from {}", path.display());
            }
        }
        self.sram_path = Some(path);
    }

    fn unload(&mut self) {
        if self.loaded {
            // The core frees its GL objects while its context is still there.
            let destroy = state::with(|s| s.hw.as_mut().and_then(|hw| hw.stop())).flatten();
            if let Some(destroy) = destroy {
                // SAFETY: the core's own callback, with its context current; no lock held.
                unsafe { destroy() };
            }
            // SAFETY: the game is loaded; unloaded exactly once.
            unsafe { (self.api.unload_game)() };
            self.loaded = false;
            self.content_hash = None;
        }
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        if self.loaded {
            if let Err(e) = self.save_sram() {
                tracing::error!("{e}");
            }
        }
        self.unload();
        if self.initialized {
            state::with(current);
            // SAFETY: initialised once in `open`, deinitialised once here.
            unsafe { (self.api.deinit)() };
        }
        state::remove();
        state::release();
    }
}

/// Loads the core's functions, creates the directories and checks the API version.
fn prepare(source: &CoreSource, config: &CoreConfig) -> Result<CoreApi, HostError> {
    for dir in [&config.system_dir, &config.save_dir] {
        std::fs::create_dir_all(dir).map_err(|io| HostError::CreateDir {
            path: dir.clone(),
            io,
        })?;
    }
    load_checked(source)
}

/// Loads the core's functions and checks its libretro API version; runs nothing of it.
pub(super) fn load_checked(source: &CoreSource) -> Result<CoreApi, HostError> {
    let api = CoreApi::open(source)?;
    // SAFETY: plain query, valid before retro_init.
    let found = unsafe { (api.api_version)() };
    if found != ffi::RETRO_API_VERSION {
        return Err(HostError::ApiVersion {
            found,
            expected: ffi::RETRO_API_VERSION,
        });
    }
    Ok(api)
}

/// The core's name, version and extensions: libretro allows the query before retro_init.
pub(super) fn system_info(api: &CoreApi) -> CoreInfo {
    let mut raw = SystemInfo {
        library_name: std::ptr::null(),
        library_version: std::ptr::null(),
        valid_extensions: std::ptr::null(),
        need_fullpath: false,
        block_extract: false,
    };
    // SAFETY: `raw` is a valid out-pointer; the core fills in static strings.
    unsafe { (api.get_system_info)(&mut raw) };
    let text = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: non-null strings from retro_get_system_info are NUL-terminated.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    CoreInfo {
        library_name: text(raw.library_name),
        library_version: text(raw.library_version),
        valid_extensions: text(raw.valid_extensions),
        need_fullpath: raw.need_fullpath,
        block_extract: raw.block_extract,
        support_no_game: false,
    }
}

/// Makes a hardware-rendered core's context current on this thread (before any call into
/// the core: it may draw, or free GL objects, in any of them).
fn current(s: &mut HostState) {
    if let Some(hw) = &s.hw {
        hw.make_current();
    }
}

/// The last line the core logged, to quote in a load error.
fn last_problem() -> Option<String> {
    log::recent().pop()
}

/// xxh3-64 of a file, read in chunks: the content hash [`Core::content_hash`] reports, so a
/// netplay joiner can compare content before loading it.
pub fn hash_file(path: &Path) -> std::io::Result<u64> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buf)? {
            0 => return Ok(hasher.digest()),
            n => hasher.update(&buf[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_hash_equals_one_shot_hash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("content.bin");
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 256) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(
            hash_file(&path).unwrap(),
            xxhash_rust::xxh3::xxh3_64(&bytes)
        );
    }
}
