//! Hardware-rendered cores: `RETRO_ENVIRONMENT_SET_HW_RENDER` for OpenGL and OpenGL ES.
//!
//! The lifecycle follows RetroArch's: the core asks during `retro_load_game`; the context is
//! made at once (`egl`), so a request that cannot be met is refused then and the load fails
//! with the reason. Once the game is loaded the frame buffer is made at the core's largest
//! geometry (`readback`) and `context_reset` is called; `context_destroy` runs before
//! `retro_unload_game`, and the context goes after `retro_deinit`. A core that asks later,
//! from `retro_run`, gets its frame buffer and `context_reset` once that frame returns. The context is made
//! current before every call into the core, so the frame runner's savestates, rollback
//! and run-ahead re-runs need nothing of their own. Vulkan and Direct3D are refused by
//! name. Like the rest of `host`, this knows nothing of windows or netplay.

mod egl;
mod readback;
mod request;

use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

pub use self::readback::ReadStats;
pub use self::request::{HwApi, HwRequest};
use super::ffi;
use super::HostError;

/// The framebuffer object `get_current_framebuffer` answers (0 before there is one).
static CURRENT_FBO: AtomicUsize = AtomicUsize::new(0);

/// The live core's hardware rendering: what it asked for, its context and frame buffer.
pub struct HwRender {
    pub request: HwRequest,
    context_reset: Option<ffi::HwContextResetFn>,
    context_destroy: Option<ffi::HwContextResetFn>,
    /// Made once the game is loaded (`start`); dropped before the context.
    readback: Option<readback::Readback>,
    context: egl::GlContext,
    /// `context_reset` ran and `context_destroy` has not.
    live: bool,
    finish_first: bool,
}

/// What the hardware rendering of a run was, for `--stats-json` and the benchmark.
#[derive(Clone, Debug)]
pub struct GlReport {
    /// What the core asked for.
    pub asked: String,
    /// GL_VERSION and GL_RENDERER of the context made.
    pub version: String,
    pub renderer: String,
    pub stats: ReadStats,
}

impl HwRender {
    /// Answers a SET_HW_RENDER request of `core`: makes its context (current on this
    /// thread) and fills in the frontend's callbacks, or says why not.
    pub fn negotiate(
        cb: &mut ffi::HwRenderCallback,
        core: &str,
        finish_first: bool,
    ) -> Result<HwRender, HostError> {
        let request = HwRequest {
            api: HwApi::from_raw(cb.context_type, cb.version_major, cb.version_minor),
            depth: cb.depth,
            stencil: cb.stencil && cb.depth,
            bottom_left_origin: cb.bottom_left_origin,
            debug: cb.debug_context,
        };
        if !request.api.is_gl() {
            return Err(HostError::HwUnsupported {
                core: core.to_owned(),
                asked: request.api.to_string(),
            });
        }
        let context = egl::GlContext::create(request.api, request.debug).map_err(|reason| {
            HostError::HwContext {
                core: core.to_owned(),
                asked: request.api.to_string(),
                reason,
            }
        })?;
        cb.get_current_framebuffer = Some(current_framebuffer);
        cb.get_proc_address = Some(proc_address);
        tracing::info!(
            "{core} draws with {}{}{} on the EGL {} display",
            request.api,
            if request.depth { ", depth" } else { "" },
            if request.stencil { ", stencil" } else { "" },
            context.platform()
        );
        Ok(HwRender {
            request,
            context_reset: cb.context_reset,
            context_destroy: cb.context_destroy,
            readback: None,
            context,
            live: false,
            finish_first,
        })
    }

    /// Makes the core's context current on this thread (before every call into the core).
    pub fn make_current(&self) {
        if let Err(e) = self.context.make_current() {
            tracing::error!("gl: {e}");
        }
    }

    /// With the game loaded: makes the frame buffer of `size` (the core's largest
    /// geometry) and returns `context_reset`, to be called without the host's lock held.
    pub fn start(
        &mut self,
        size: (u32, u32),
        core: &str,
    ) -> Result<Option<ffi::HwContextResetFn>, HostError> {
        self.make_current();
        let r = &self.request;
        let rb = std::panic::catch_unwind(|| {
            readback::Readback::new(
                size,
                r.depth,
                r.stencil,
                r.bottom_left_origin,
                self.finish_first,
            )
        })
        .unwrap_or_else(|_| Err("the context has no usable OpenGL (GL_VERSION unreadable)".into()))
        .map_err(|reason| HostError::HwContext {
            core: core.to_owned(),
            asked: r.api.to_string(),
            reason,
        })?;
        tracing::info!(
            "gl: {} ({}), frame buffer {}x{}",
            rb.version,
            rb.renderer,
            size.0.max(1),
            size.1.max(1)
        );
        CURRENT_FBO.store(readback::fbo_name(rb.fbo()), Ordering::Release);
        self.readback = Some(rb);
        self.live = true;
        Ok(self.context_reset)
    }

    /// Whether `start` has run (a core may ask for its context in `retro_run`, after the
    /// game loaded: melonDS does; then the frame buffer and `context_reset` follow that
    /// frame, as RetroArch's video reinit does).
    pub fn started(&self) -> bool {
        self.readback.is_some()
    }

    /// Before `retro_unload_game`: `context_destroy`, if the core gave one and its context
    /// was reset (to be called without the host's lock held).
    pub fn stop(&mut self) -> Option<ffi::HwContextResetFn> {
        self.make_current();
        std::mem::take(&mut self.live)
            .then_some(self.context_destroy)
            .flatten()
    }

    /// The core's largest geometry grew (SET_SYSTEM_AV_INFO): so does the frame buffer.
    pub fn grow(&mut self, size: (u32, u32)) {
        if let Some(rb) = &mut self.readback {
            rb.grow(size);
        }
    }

    /// The core presented its frame buffer: copies the picture out. Returns its size.
    pub fn capture(&mut self, width: u32, height: u32) -> Option<(u32, u32)> {
        self.readback.as_mut()?.capture(width, height)
    }

    /// The last captured picture as XRGB8888 (see `Readback::read`).
    pub fn read(&mut self, out: &mut Vec<u32>) {
        self.make_current();
        match &mut self.readback {
            Some(rb) => rb.read(out),
            None => out.clear(),
        }
    }

    pub fn report(&self) -> GlReport {
        let (version, renderer, stats) = match &self.readback {
            Some(rb) => (rb.version.clone(), rb.renderer.clone(), rb.stats),
            None => (String::new(), String::new(), ReadStats::default()),
        };
        GlReport {
            asked: self.request.api.to_string(),
            version,
            renderer,
            stats,
        }
    }
}

impl Drop for HwRender {
    fn drop(&mut self) {
        CURRENT_FBO.store(0, Ordering::Release);
        // The GL objects go with the context; only make sure no call reaches a dead one.
        self.readback = None;
    }
}

/// `retro_hw_get_current_framebuffer_t`.
unsafe extern "C" fn current_framebuffer() -> usize {
    CURRENT_FBO.load(Ordering::Acquire)
}

/// `retro_hw_get_proc_address_t`: any GL or EGL function of the context.
unsafe extern "C" fn proc_address(sym: *const c_char) -> *const c_void {
    if sym.is_null() {
        return std::ptr::null();
    }
    // SAFETY: the core passes a NUL-terminated name.
    egl::proc_address(unsafe { CStr::from_ptr(sym) })
}
