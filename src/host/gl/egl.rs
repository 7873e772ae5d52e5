//! The OpenGL context a hardware-rendered core draws in, made with EGL and no window: on
//! Mesa's surfaceless platform first (a GPU's render node, or llvmpipe on a machine without
//! one), else EGL's default display. The same context serves a window and a headless run:
//! the picture leaves it by read-back, never by a swap.
//!
//! libEGL is loaded at run time, once per process and kept: a machine without it still runs
//! every software core, and a core that asks for OpenGL there gets one line that says why
//! not.

use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use khronos_egl as egl;

use super::request::HwApi;

type Instance = egl::Instance<egl::Dynamic<&'static libloading::Library, egl::EGL1_4>>;

#[cfg(not(windows))]
pub const LIBRARY: &str = "libEGL.so.1";
#[cfg(windows)]
pub const LIBRARY: &str = "libEGL.dll";

/// `EGL_PLATFORM_SURFACELESS_MESA` (EGL_MESA_platform_surfaceless).
const PLATFORM_SURFACELESS_MESA: egl::Enum = 0x31DD;
/// `EGL_CONTEXT_OPENGL_DEBUG` (EGL 1.5).
const CONTEXT_OPENGL_DEBUG: egl::Int = 0x31B0;

/// libEGL and its initialised display, for the life of the process.
pub struct Egl {
    instance: Instance,
    display: egl::Display,
    /// Contexts can be made current without a surface (EGL_KHR_surfaceless_context).
    surfaceless_context: bool,
    /// Which display was found, for the log.
    pub platform: &'static str,
}

// SAFETY: EGL displays are process-wide handles that EGL lets any thread use; the
// instance is a table of function pointers.
unsafe impl Send for Egl {}
// SAFETY: as above; nothing in `Egl` changes after it is made.
unsafe impl Sync for Egl {}

static EGL: OnceLock<Result<Egl, String>> = OnceLock::new();
/// `eglGetProcAddress`, for the cores' `get_proc_address` (no lock on that hot path).
static GET_PROC_ADDRESS: AtomicUsize = AtomicUsize::new(0);

type GetProcAddressFn = unsafe extern "system" fn(*const c_char) -> *const c_void;

/// The process's EGL, loaded and initialised on first use; the reason when it cannot be.
pub fn egl() -> Result<&'static Egl, String> {
    EGL.get_or_init(|| Egl::open(LIBRARY))
        .as_ref()
        .map_err(Clone::clone)
}

/// `eglGetProcAddress(name)`, or NULL before EGL is loaded. Mesa answers for core GL
/// functions too (EGL_KHR_get_all_proc_addresses), which is what libretro cores expect.
pub fn proc_address(name: &CStr) -> *const c_void {
    let f = GET_PROC_ADDRESS.load(Ordering::Acquire);
    if f == 0 {
        return std::ptr::null();
    }
    // SAFETY: `f` is libEGL's eglGetProcAddress, loaded in `Egl::open` and never unloaded;
    // `name` is NUL-terminated.
    unsafe {
        let f: GetProcAddressFn = std::mem::transmute::<usize, GetProcAddressFn>(f);
        f(name.as_ptr())
    }
}

impl Egl {
    /// Loads `library` and initialises a display.
    pub fn open(library: &str) -> Result<Egl, String> {
        // SAFETY: loading libEGL runs its initialisers, as any program linking it does.
        let lib = unsafe { libloading::Library::new(library) }.map_err(|e| {
            format!("cannot load {library} ({e}); install libegl1 and libegl-mesa0")
        })?;
        // Kept for the life of the process: cores keep the function pointers they got.
        let lib: &'static libloading::Library = Box::leak(Box::new(lib));
        // SAFETY: the symbol has this type in every EGL; the library is never unloaded.
        let gpa = unsafe { lib.get::<GetProcAddressFn>(b"eglGetProcAddress\0") }
            .map_err(|e| format!("{library} is no EGL library ({e})"))?;
        // SAFETY: as above.
        let instance = unsafe { Instance::load_required_from(lib) }
            .map_err(|e| format!("{library} offers no EGL 1.4 ({e})"))?;
        let client = instance
            .query_string(None, egl::EXTENSIONS)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut problems = Vec::new();
        let mut found = None;
        if has(&client, "EGL_MESA_platform_surfaceless") {
            match instance.upcast::<egl::EGL1_5>() {
                Some(i15) => {
                    // SAFETY: the surfaceless platform takes EGL_DEFAULT_DISPLAY and no
                    // attributes.
                    match unsafe {
                        i15.get_platform_display(
                            PLATFORM_SURFACELESS_MESA,
                            egl::DEFAULT_DISPLAY,
                            &[egl::ATTRIB_NONE],
                        )
                    } {
                        Ok(d) => found = Some((d, "surfaceless")),
                        Err(e) => problems.push(format!("surfaceless display: {e}")),
                    }
                }
                None => problems.push("surfaceless display: libEGL lacks EGL 1.5".into()),
            }
        }
        let display = match found {
            Some(d) => Some(d),
            // SAFETY: EGL_DEFAULT_DISPLAY is always a valid argument.
            None => unsafe { instance.get_display(egl::DEFAULT_DISPLAY) }.map(|d| (d, "default")),
        };
        let Some((display, platform)) = display else {
            problems.push("no default display".into());
            return Err(format!(
                "EGL found no display to draw on ({}); is an EGL driver installed (libegl-mesa0)?",
                problems.join("; ")
            ));
        };
        let (major, minor) = instance.initialize(display).map_err(|e| {
            format!("EGL cannot initialise its {platform} display ({e}); is an EGL driver installed (libegl-mesa0)?")
        })?;
        let exts = instance
            .query_string(Some(display), egl::EXTENSIONS)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let vendor = instance
            .query_string(Some(display), egl::VENDOR)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        tracing::debug!("EGL {major}.{minor} ({vendor}) on the {platform} display");
        GET_PROC_ADDRESS.store(*gpa as usize, Ordering::Release);
        Ok(Egl {
            instance,
            display,
            surfaceless_context: has(&exts, "EGL_KHR_surfaceless_context"),
            platform,
        })
    }
}

fn has(list: &str, ext: &str) -> bool {
    list.split_ascii_whitespace().any(|e| e == ext)
}

/// One OpenGL or OpenGL ES context, current on the thread that made it until another is
/// made current there.
pub struct GlContext {
    egl: &'static Egl,
    context: egl::Context,
    /// A 1x1 pbuffer where contexts cannot be current without a surface.
    surface: Option<egl::Surface>,
}

// SAFETY: an EGL context may be made current on any thread (one at a time); `Core` is
// driven from one thread at a time and `make_current` follows it.
unsafe impl Send for GlContext {}

impl GlContext {
    /// Makes a context for `api` (OpenGL or OpenGL ES only) and makes it current.
    pub fn create(api: HwApi, debug: bool) -> Result<GlContext, String> {
        let egl = egl()?;
        let i = &egl.instance;
        let (bind, renderable) = match api {
            HwApi::OpenGl | HwApi::OpenGlCore { .. } => (egl::OPENGL_API, egl::OPENGL_BIT),
            HwApi::OpenGles { major: 2, .. } => (egl::OPENGL_ES_API, egl::OPENGL_ES2_BIT),
            HwApi::OpenGles { .. } => (egl::OPENGL_ES_API, egl::OPENGL_ES3_BIT),
            other => return Err(format!("EGL makes no {other} context")),
        };
        i.bind_api(bind)
            .map_err(|e| format!("EGL cannot bind the {api} API ({e})"))?;
        let surface_type = if egl.surfaceless_context {
            0
        } else {
            egl::PBUFFER_BIT
        };
        let attrs = [
            egl::RENDERABLE_TYPE,
            renderable,
            egl::SURFACE_TYPE,
            surface_type,
            egl::RED_SIZE,
            8,
            egl::GREEN_SIZE,
            8,
            egl::BLUE_SIZE,
            8,
            egl::NONE,
        ];
        let config = i
            .choose_first_config(egl.display, &attrs)
            .map_err(|e| format!("EGL cannot choose a config ({e})"))?
            .ok_or_else(|| format!("the EGL driver offers no config for {api}"))?;
        let mut ctx_attrs = Vec::new();
        match api {
            HwApi::OpenGl => ctx_attrs.extend([
                egl::CONTEXT_OPENGL_PROFILE_MASK,
                egl::CONTEXT_OPENGL_COMPATIBILITY_PROFILE_BIT,
            ]),
            HwApi::OpenGlCore { major, minor } => ctx_attrs.extend([
                egl::CONTEXT_MAJOR_VERSION,
                major as egl::Int,
                egl::CONTEXT_MINOR_VERSION,
                minor as egl::Int,
                egl::CONTEXT_OPENGL_PROFILE_MASK,
                egl::CONTEXT_OPENGL_CORE_PROFILE_BIT,
            ]),
            HwApi::OpenGles { major, minor } => ctx_attrs.extend([
                egl::CONTEXT_MAJOR_VERSION,
                major as egl::Int,
                egl::CONTEXT_MINOR_VERSION,
                minor as egl::Int,
            ]),
            _ => unreachable!("refused above"),
        }
        if debug {
            ctx_attrs.extend([CONTEXT_OPENGL_DEBUG, egl::TRUE as egl::Int]);
        }
        ctx_attrs.push(egl::NONE);
        let context = i
            .create_context(egl.display, config, None, &ctx_attrs)
            .map_err(|e| format!("the EGL driver makes no {api} context ({e})"))?;
        let surface = if egl.surfaceless_context {
            None
        } else {
            let pb = [egl::WIDTH, 1, egl::HEIGHT, 1, egl::NONE];
            match i.create_pbuffer_surface(egl.display, config, &pb) {
                Ok(s) => Some(s),
                Err(e) => {
                    let _ = i.destroy_context(egl.display, context);
                    return Err(format!("EGL cannot make a pbuffer ({e})"));
                }
            }
        };
        let ctx = GlContext {
            egl,
            context,
            surface,
        };
        ctx.make_current()?;
        Ok(ctx)
    }

    /// Makes the context current on this thread unless it is already.
    pub fn make_current(&self) -> Result<(), String> {
        let i = &self.egl.instance;
        if i.get_current_context() == Some(self.context) {
            return Ok(());
        }
        i.make_current(
            self.egl.display,
            self.surface,
            self.surface,
            Some(self.context),
        )
        .map_err(|e| format!("EGL cannot make the core's context current ({e})"))
    }

    /// Which display the context is on, for the log.
    pub fn platform(&self) -> &'static str {
        self.egl.platform
    }
}

impl Drop for GlContext {
    fn drop(&mut self) {
        let i = &self.egl.instance;
        if i.get_current_context() == Some(self.context) {
            let _ = i.make_current(self.egl.display, None, None, None);
        }
        if let Some(s) = self.surface {
            let _ = i.destroy_surface(self.egl.display, s);
        }
        let _ = i.destroy_context(self.egl.display, self.context);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_named_with_the_packages_to_install() {
        let err = Egl::open("libEGL-not-here.so.9")
            .err()
            .expect("no such library");
        assert!(
            err.starts_with("cannot load libEGL-not-here.so.9 ("),
            "{err}"
        );
        assert!(err.ends_with("install libegl1 and libegl-mesa0"), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }
}
