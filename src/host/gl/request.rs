//! What a core asks for with SET_HW_RENDER, read from its `retro_hw_render_callback`.

use std::ffi::{c_int, c_uint};
use std::fmt;

/// The rendering API and version a core asked for (`enum retro_hw_context_type` and the
/// version fields), read as plain integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwApi {
    /// `RETRO_HW_CONTEXT_OPENGL`: OpenGL 2.x; a compatibility profile of any later version
    /// does.
    OpenGl,
    /// `RETRO_HW_CONTEXT_OPENGL_CORE`: a core profile of at least this version.
    OpenGlCore {
        major: u32,
        minor: u32,
    },
    /// `RETRO_HW_CONTEXT_OPENGLES2`, `..._OPENGLES3` and `..._OPENGLES_VERSION`.
    OpenGles {
        major: u32,
        minor: u32,
    },
    Vulkan,
    /// Direct3D 9 to 12 (`RETRO_HW_CONTEXT_D3D*`; older headers' single `DIRECT3D` with the
    /// version in `version_major`).
    Direct3D {
        version: u32,
    },
    /// `RETRO_HW_CONTEXT_NONE` or a number this host does not know.
    Other(i32),
}

impl HwApi {
    pub fn from_raw(context_type: c_int, major: c_uint, minor: c_uint) -> HwApi {
        match context_type {
            1 => HwApi::OpenGl,
            2 => HwApi::OpenGles { major: 2, minor: 0 },
            // A core profile below 3.2 does not exist; RetroArch asks for 3.2 then too.
            3 if major < 3 || (major == 3 && minor < 2) => HwApi::OpenGlCore { major: 3, minor: 2 },
            3 => HwApi::OpenGlCore { major, minor },
            4 => HwApi::OpenGles { major: 3, minor: 0 },
            5 if major >= 3 => HwApi::OpenGles { major, minor },
            5 => HwApi::OpenGles { major: 3, minor: 1 },
            6 => HwApi::Vulkan,
            7 => HwApi::Direct3D {
                version: if major == 0 { 11 } else { major },
            },
            8 => HwApi::Direct3D { version: 10 },
            9 => HwApi::Direct3D { version: 12 },
            10 => HwApi::Direct3D { version: 9 },
            other => HwApi::Other(other),
        }
    }

    /// OpenGL or OpenGL ES: what this host can make.
    pub fn is_gl(self) -> bool {
        matches!(
            self,
            HwApi::OpenGl | HwApi::OpenGlCore { .. } | HwApi::OpenGles { .. }
        )
    }
}

impl fmt::Display for HwApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HwApi::OpenGl => f.write_str("OpenGL 2 (compatibility profile)"),
            HwApi::OpenGlCore { major, minor } => write!(f, "OpenGL {major}.{minor} core profile"),
            HwApi::OpenGles { major, minor } => write!(f, "OpenGL ES {major}.{minor}"),
            HwApi::Vulkan => f.write_str("Vulkan"),
            HwApi::Direct3D { version } => write!(f, "Direct3D {version}"),
            HwApi::Other(0) => f.write_str("no hardware context (type 0)"),
            HwApi::Other(n) => write!(f, "an unknown hardware context (type {n})"),
        }
    }
}

/// Everything of a SET_HW_RENDER request the host acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwRequest {
    pub api: HwApi,
    /// A depth buffer on the frame buffer (24 bits; packed with 8 of stencil if `stencil`).
    pub depth: bool,
    pub stencil: bool,
    /// The core draws with GL's bottom-left origin: its picture is upside down in memory
    /// and the read-back turns it.
    pub bottom_left_origin: bool,
    pub debug: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_types_and_versions_read_as_libretro_h_means_them() {
        assert_eq!(HwApi::from_raw(1, 0, 0), HwApi::OpenGl);
        assert_eq!(
            HwApi::from_raw(3, 3, 3),
            HwApi::OpenGlCore { major: 3, minor: 3 }
        );
        assert_eq!(
            HwApi::from_raw(3, 0, 0),
            HwApi::OpenGlCore { major: 3, minor: 2 }
        );
        assert_eq!(
            HwApi::from_raw(2, 9, 9),
            HwApi::OpenGles { major: 2, minor: 0 }
        );
        assert_eq!(
            HwApi::from_raw(4, 0, 0),
            HwApi::OpenGles { major: 3, minor: 0 }
        );
        assert_eq!(
            HwApi::from_raw(5, 3, 2),
            HwApi::OpenGles { major: 3, minor: 2 }
        );
        assert_eq!(HwApi::from_raw(6, 1, 0), HwApi::Vulkan);
        assert_eq!(HwApi::from_raw(7, 0, 0), HwApi::Direct3D { version: 11 });
        assert_eq!(HwApi::from_raw(7, 9, 0), HwApi::Direct3D { version: 9 });
        assert_eq!(HwApi::from_raw(9, 0, 0), HwApi::Direct3D { version: 12 });
        assert_eq!(HwApi::from_raw(0, 0, 0), HwApi::Other(0));
        assert_eq!(HwApi::from_raw(i32::MAX, 0, 0), HwApi::Other(i32::MAX));
        assert!(HwApi::from_raw(5, 3, 1).is_gl());
        assert!(!HwApi::Vulkan.is_gl());
        assert_eq!(HwApi::Vulkan.to_string(), "Vulkan");
        assert_eq!(
            HwApi::OpenGlCore { major: 4, minor: 1 }.to_string(),
            "OpenGL 4.1 core profile"
        );
    }
}
