//! The frame buffer a hardware-rendered core draws into, and reading its picture back.
//!
//! The core draws into our frame buffer object (`get_current_framebuffer`). When it presents
//! (`video_refresh(RETRO_HW_FRAME_BUFFER_VALID, ...)`) the picture is copied into a pixel-
//! buffer object: the copy is queued on the GPU and the core runs on. The buffer is mapped
//! only when someone looks at the frame (`Core::video`: the window, a screenshot, a video,
//! a checksum), so frames nobody shows (fast-forward, rollback's re-runs) are never waited
//! for. Contexts without pixel-buffer objects (OpenGL ES 2, OpenGL 2) read at once.
//!
//! The core owns the context's state: every binding and pixel-store setting touched here is
//! put back as it was.

use std::time::{Duration, Instant};

use glow::HasContext;

/// Time and counts of the read-backs, for `--stats-json`'s `gl` and the benchmark.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadStats {
    /// Frames copied out of the frame buffer (one per frame presented).
    pub captures: u64,
    /// Time spent queueing those copies.
    pub capture: Duration,
    /// Pictures taken out of the copy into XRGB8888 (frames looked at).
    pub reads: u64,
    /// Time spent mapping and converting them.
    pub read: Duration,
    /// With `finish_first`, the time waiting for the GPU to finish drawing before each copy
    /// (not counted in `capture`).
    pub finish: Duration,
}

pub struct Readback {
    gl: glow::Context,
    fbo: glow::Framebuffer,
    color: glow::Texture,
    depth: Option<(glow::Renderbuffer, u32)>,
    /// Allocated size: at least the core's largest geometry.
    size: (u32, u32),
    /// OpenGL 3 / OpenGL ES 3: separate read target, pixel-buffer objects, mapped ranges,
    /// pack row length.
    modern: bool,
    pbo: Option<(glow::Buffer, usize)>,
    /// The size of the picture waiting in the pixel buffer (or `cpu`).
    pending: Option<(u32, u32)>,
    /// The picture read at once, where there is no pixel buffer.
    cpu: Vec<u8>,
    bottom_left: bool,
    finish_first: bool,
    oversize_told: bool,
    pub stats: ReadStats,
    /// GL_VERSION and GL_RENDERER of the context.
    pub version: String,
    pub renderer: String,
}

/// The GL name of a framebuffer object, as `get_current_framebuffer` returns it.
pub fn fbo_name(fbo: glow::Framebuffer) -> usize {
    fbo.0.get() as usize
}

impl Readback {
    /// Makes the frame buffer (`size`, with depth and stencil as asked) in the current
    /// context and leaves it bound, as cores that never ask for it expect.
    pub fn new(
        size: (u32, u32),
        depth: bool,
        stencil: bool,
        bottom_left: bool,
        finish_first: bool,
    ) -> Result<Readback, String> {
        // SAFETY: the core's context is current on this thread; every function is loaded
        // from it.
        let gl = unsafe { glow::Context::from_loader_function_cstr(super::egl::proc_address) };
        let v = gl.version();
        let modern = v.major >= 3;
        // SAFETY: plain queries on the current context.
        let (version, renderer) = unsafe {
            (
                gl.get_parameter_string(glow::VERSION),
                gl.get_parameter_string(glow::RENDERER),
            )
        };
        let size = (size.0.max(1), size.1.max(1));
        // SAFETY: objects are made and bound in the current context; nothing of the core's
        // exists yet (context_reset has not run), so no binding needs keeping.
        unsafe {
            let color = gl.create_texture()?;
            gl.bind_texture(glow::TEXTURE_2D, Some(color));
            gl.tex_parameter_i32(
                glow::TEXTURE_2D,
                glow::TEXTURE_MIN_FILTER,
                glow::NEAREST as i32,
            );
            gl.tex_parameter_i32(
                glow::TEXTURE_2D,
                glow::TEXTURE_MAG_FILTER,
                glow::NEAREST as i32,
            );
            let fbo = gl.create_framebuffer()?;
            let depth = if depth {
                let format = match (stencil, modern, v.is_embedded) {
                    (true, _, _) => glow::DEPTH24_STENCIL8,
                    (false, false, true) => glow::DEPTH_COMPONENT16,
                    (false, _, _) => glow::DEPTH_COMPONENT24,
                };
                Some((gl.create_renderbuffer()?, format))
            } else {
                None
            };
            let mut rb = Readback {
                gl,
                fbo,
                color,
                depth,
                size: (0, 0),
                modern,
                pbo: None,
                pending: None,
                cpu: Vec::new(),
                bottom_left,
                finish_first,
                oversize_told: false,
                stats: ReadStats::default(),
                version,
                renderer,
            };
            rb.allocate(size);
            let gl = &rb.gl;
            gl.bind_framebuffer(glow::FRAMEBUFFER, Some(fbo));
            gl.framebuffer_texture_2d(
                glow::FRAMEBUFFER,
                glow::COLOR_ATTACHMENT0,
                glow::TEXTURE_2D,
                Some(color),
                0,
            );
            if let Some((depth, format)) = rb.depth {
                if format == glow::DEPTH24_STENCIL8 && modern {
                    gl.framebuffer_renderbuffer(
                        glow::FRAMEBUFFER,
                        glow::DEPTH_STENCIL_ATTACHMENT,
                        glow::RENDERBUFFER,
                        Some(depth),
                    );
                } else {
                    gl.framebuffer_renderbuffer(
                        glow::FRAMEBUFFER,
                        glow::DEPTH_ATTACHMENT,
                        glow::RENDERBUFFER,
                        Some(depth),
                    );
                    if format == glow::DEPTH24_STENCIL8 {
                        gl.framebuffer_renderbuffer(
                            glow::FRAMEBUFFER,
                            glow::STENCIL_ATTACHMENT,
                            glow::RENDERBUFFER,
                            Some(depth),
                        );
                    }
                }
            }
            let status = gl.check_framebuffer_status(glow::FRAMEBUFFER);
            if status != glow::FRAMEBUFFER_COMPLETE {
                return Err(format!(
                    "the frame buffer ({}x{}{}) is incomplete (status {status:#x})",
                    size.0,
                    size.1,
                    match (rb.depth, stencil) {
                        (Some(_), true) => ", depth and stencil",
                        (Some(_), false) => ", depth",
                        _ => "",
                    }
                ));
            }
            // An undrawn frame is black, not whatever the memory held.
            gl.clear_color(0.0, 0.0, 0.0, 1.0);
            gl.clear(glow::COLOR_BUFFER_BIT | glow::DEPTH_BUFFER_BIT | glow::STENCIL_BUFFER_BIT);
            gl.bind_texture(glow::TEXTURE_2D, None);
            gl.bind_renderbuffer(glow::RENDERBUFFER, None);
            if modern {
                rb.pbo = Some((gl.create_buffer()?, 0));
            }
            Ok(rb)
        }
    }

    /// The frame buffer's name for `get_current_framebuffer`.
    pub fn fbo(&self) -> glow::Framebuffer {
        self.fbo
    }

    /// Grows the frame buffer to hold `size` (a core's SET_SYSTEM_AV_INFO may raise its
    /// largest geometry); the core's bindings are kept.
    pub fn grow(&mut self, size: (u32, u32)) {
        if size.0 <= self.size.0 && size.1 <= self.size.1 {
            return;
        }
        let size = (size.0.max(self.size.0), size.1.max(self.size.1));
        tracing::debug!("gl: frame buffer grows to {}x{}", size.0, size.1);
        self.allocate(size);
    }

    /// (Re)allocates the colour texture and depth buffer at `size`, keeping bindings.
    fn allocate(&mut self, size: (u32, u32)) {
        let gl = &self.gl;
        // SAFETY: plain GL calls on the current context; the previous bindings are read
        // first and restored last.
        unsafe {
            let tex = gl.get_parameter_i32(glow::TEXTURE_BINDING_2D);
            let rbo = gl.get_parameter_i32(glow::RENDERBUFFER_BINDING);
            let unpack = if self.modern {
                gl.get_parameter_i32(glow::PIXEL_UNPACK_BUFFER_BINDING)
            } else {
                0
            };
            if unpack != 0 {
                gl.bind_buffer(glow::PIXEL_UNPACK_BUFFER, None);
            }
            let internal = if self.modern || !gl.version().is_embedded {
                glow::RGBA8
            } else {
                glow::RGBA
            };
            gl.bind_texture(glow::TEXTURE_2D, Some(self.color));
            gl.tex_image_2d(
                glow::TEXTURE_2D,
                0,
                internal as i32,
                size.0 as i32,
                size.1 as i32,
                0,
                glow::RGBA,
                glow::UNSIGNED_BYTE,
                glow::PixelUnpackData::Slice(None),
            );
            if let Some((depth, format)) = self.depth {
                gl.bind_renderbuffer(glow::RENDERBUFFER, Some(depth));
                gl.renderbuffer_storage(glow::RENDERBUFFER, format, size.0 as i32, size.1 as i32);
            }
            gl.bind_texture(glow::TEXTURE_2D, name(tex).map(glow::NativeTexture));
            gl.bind_renderbuffer(glow::RENDERBUFFER, name(rbo).map(glow::NativeRenderbuffer));
            if let Some(b) = name(unpack) {
                gl.bind_buffer(glow::PIXEL_UNPACK_BUFFER, Some(glow::NativeBuffer(b)));
            }
        }
        self.size = size;
    }

    /// Copies the picture the core presented (`width` x `height` at the frame buffer's
    /// origin) out of the frame buffer; returns its size (clipped to the frame buffer), or
    /// `None` for an empty one.
    pub fn capture(&mut self, width: u32, height: u32) -> Option<(u32, u32)> {
        let (w, h) = (width.min(self.size.0), height.min(self.size.1));
        if (w, h) != (width, height) && !self.oversize_told {
            self.oversize_told = true;
            tracing::warn!(
                "gl: the core presented {width}x{height}, larger than its largest geometry {}x{}; showing {w}x{h}",
                self.size.0,
                self.size.1
            );
        }
        if w == 0 || h == 0 {
            return None;
        }
        let gl = &self.gl;
        if self.finish_first {
            let t = Instant::now();
            // SAFETY: plain call on the current context.
            unsafe { gl.finish() };
            self.stats.finish += t.elapsed();
        }
        let t = Instant::now();
        let len = w as usize * h as usize * 4;
        let read_target = if self.modern {
            glow::READ_FRAMEBUFFER
        } else {
            glow::FRAMEBUFFER
        };
        // SAFETY: GL calls on the current context; the state read first is restored last,
        // and the destination (pixel buffer or `cpu`) holds `len` bytes.
        unsafe {
            let fb = gl.get_parameter_i32(if self.modern {
                glow::READ_FRAMEBUFFER_BINDING
            } else {
                glow::FRAMEBUFFER_BINDING
            });
            let align = gl.get_parameter_i32(glow::PACK_ALIGNMENT);
            let mut kept = [0; 4];
            if self.modern {
                kept = [
                    gl.get_parameter_i32(glow::PIXEL_PACK_BUFFER_BINDING),
                    gl.get_parameter_i32(glow::PACK_ROW_LENGTH),
                    gl.get_parameter_i32(glow::PACK_SKIP_ROWS),
                    gl.get_parameter_i32(glow::PACK_SKIP_PIXELS),
                ];
                gl.pixel_store_i32(glow::PACK_ROW_LENGTH, 0);
                gl.pixel_store_i32(glow::PACK_SKIP_ROWS, 0);
                gl.pixel_store_i32(glow::PACK_SKIP_PIXELS, 0);
            }
            gl.pixel_store_i32(glow::PACK_ALIGNMENT, 4);
            gl.bind_framebuffer(read_target, Some(self.fbo));
            match &mut self.pbo {
                Some((pbo, allocated)) => {
                    gl.bind_buffer(glow::PIXEL_PACK_BUFFER, Some(*pbo));
                    if *allocated < len {
                        gl.buffer_data_size(glow::PIXEL_PACK_BUFFER, len as i32, glow::STREAM_READ);
                        *allocated = len;
                    }
                    gl.read_pixels(
                        0,
                        0,
                        w as i32,
                        h as i32,
                        glow::RGBA,
                        glow::UNSIGNED_BYTE,
                        glow::PixelPackData::BufferOffset(0),
                    );
                }
                None => {
                    self.cpu.resize(len, 0);
                    gl.read_pixels(
                        0,
                        0,
                        w as i32,
                        h as i32,
                        glow::RGBA,
                        glow::UNSIGNED_BYTE,
                        glow::PixelPackData::Slice(Some(&mut self.cpu)),
                    );
                }
            }
            gl.bind_framebuffer(read_target, name(fb).map(glow::NativeFramebuffer));
            gl.pixel_store_i32(glow::PACK_ALIGNMENT, align);
            if self.modern {
                gl.bind_buffer(
                    glow::PIXEL_PACK_BUFFER,
                    name(kept[0]).map(glow::NativeBuffer),
                );
                gl.pixel_store_i32(glow::PACK_ROW_LENGTH, kept[1]);
                gl.pixel_store_i32(glow::PACK_SKIP_ROWS, kept[2]);
                gl.pixel_store_i32(glow::PACK_SKIP_PIXELS, kept[3]);
            }
        }
        self.pending = Some((w, h));
        self.stats.captures += 1;
        self.stats.capture += t.elapsed();
        Some((w, h))
    }

    /// The last captured picture as row-major XRGB8888, top row first, into `out`
    /// (`width * height` pixels; black if the GPU's copy cannot be mapped).
    pub fn read(&mut self, out: &mut Vec<u32>) {
        out.clear();
        let Some((w, h)) = self.pending else {
            return;
        };
        let t = Instant::now();
        let (w, h) = (w as usize, h as usize);
        let len = w * h * 4;
        out.resize(w * h, 0);
        match self.pbo {
            Some((pbo, _)) => {
                let gl = &self.gl;
                // SAFETY: the buffer holds `len` bytes written by `capture`; the mapping is
                // read only while mapped, then unmapped; the binding is restored.
                unsafe {
                    let kept = gl.get_parameter_i32(glow::PIXEL_PACK_BUFFER_BINDING);
                    gl.bind_buffer(glow::PIXEL_PACK_BUFFER, Some(pbo));
                    let ptr = gl.map_buffer_range(
                        glow::PIXEL_PACK_BUFFER,
                        0,
                        len as i32,
                        glow::MAP_READ_BIT,
                    );
                    if ptr.is_null() {
                        tracing::warn!("gl: cannot map the frame's copy; showing black");
                    } else {
                        let src = std::slice::from_raw_parts(ptr, len);
                        to_xrgb(src, w, h, self.bottom_left, out);
                        gl.unmap_buffer(glow::PIXEL_PACK_BUFFER);
                    }
                    gl.bind_buffer(glow::PIXEL_PACK_BUFFER, name(kept).map(glow::NativeBuffer));
                }
            }
            None => to_xrgb(&self.cpu[..len], w, h, self.bottom_left, out),
        }
        self.stats.reads += 1;
        self.stats.read += t.elapsed();
    }
}

/// A GL object name read back with glGetIntegerv, `None` for 0.
fn name(raw: i32) -> Option<std::num::NonZeroU32> {
    std::num::NonZeroU32::new(raw as u32)
}

/// RGBA8 rows as GL reads them (first row at the frame buffer's origin) into XRGB8888 with
/// the top row first: a bottom-left origin turns the rows over.
pub fn to_xrgb(src: &[u8], w: usize, h: usize, bottom_left: bool, out: &mut [u32]) {
    for (y, dst) in out.chunks_exact_mut(w).take(h).enumerate() {
        let sy = if bottom_left { h - 1 - y } else { y };
        let row = &src[sy * w * 4..(sy + 1) * w * 4];
        for (d, px) in dst.iter_mut().zip(row.chunks_exact(4)) {
            *d = u32::from(px[0]) << 16 | u32::from(px[1]) << 8 | u32::from(px[2]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_turn_over_only_for_a_bottom_left_origin() {
        // 2x2: bottom row (first in memory for GL) red, green; top row blue, white.
        let src = [
            255, 0, 0, 255, 0, 255, 0, 255, //
            0, 0, 255, 255, 255, 255, 255, 0,
        ];
        let mut out = [0u32; 4];
        to_xrgb(&src, 2, 2, true, &mut out);
        assert_eq!(out, [0x0000ff, 0xffffff, 0xff0000, 0x00ff00]);
        to_xrgb(&src, 2, 2, false, &mut out);
        assert_eq!(out, [0xff0000, 0x00ff00, 0x0000ff, 0xffffff]);
    }
}
