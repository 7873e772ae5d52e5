//! Converting core framebuffers (any of libretro's three software pixel formats) into
//! row-major XRGB8888 `u32`s.

use std::ffi::c_int;

use super::ffi;

/// A core's software pixel format (`enum retro_pixel_format`, read as an integer).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PixelFormat {
    Xrgb1555,
    Xrgb8888,
    Rgb565,
}

impl PixelFormat {
    /// libretro's default until the core sends SET_PIXEL_FORMAT.
    pub const DEFAULT: PixelFormat = PixelFormat::Xrgb1555;

    pub fn from_raw(raw: c_int) -> Option<PixelFormat> {
        match raw {
            ffi::PIXEL_FORMAT_0RGB1555 => Some(PixelFormat::Xrgb1555),
            ffi::PIXEL_FORMAT_XRGB8888 => Some(PixelFormat::Xrgb8888),
            ffi::PIXEL_FORMAT_RGB565 => Some(PixelFormat::Rgb565),
            _ => None,
        }
    }

    pub fn bytes_per_pixel(self) -> usize {
        match self {
            PixelFormat::Xrgb8888 => 4,
            PixelFormat::Xrgb1555 | PixelFormat::Rgb565 => 2,
        }
    }
}

/// One video frame as the core last presented it, converted to XRGB8888.
#[derive(Clone, Copy, Debug)]
pub struct VideoFrame<'a> {
    pub width: u32,
    pub height: u32,
    /// `width * height` pixels, row-major, `0x00RRGGBB`.
    pub pixels: &'a [u32],
}

/// Expands an `n`-bit channel to 8 bits, replicating the top bits into the bottom.
fn expand(v: u32, bits: u32) -> u32 {
    (v << (8 - bits)) | (v >> (2 * bits - 8))
}

fn from_565(p: u16) -> u32 {
    let p = u32::from(p);
    let r = expand((p >> 11) & 0x1f, 5);
    let g = expand((p >> 5) & 0x3f, 6);
    let b = expand(p & 0x1f, 5);
    (r << 16) | (g << 8) | b
}

fn from_1555(p: u16) -> u32 {
    let p = u32::from(p);
    let r = expand((p >> 10) & 0x1f, 5);
    let g = expand((p >> 5) & 0x1f, 5);
    let b = expand(p & 0x1f, 5);
    (r << 16) | (g << 8) | b
}

/// Converts one frame. `src` holds `height` rows of `pitch` bytes each.
/// Returns false (leaving `out` untouched) if `src` is too short for the geometry.
pub fn convert(
    format: PixelFormat,
    src: &[u8],
    width: usize,
    height: usize,
    pitch: usize,
    out: &mut Vec<u32>,
) -> bool {
    let row_bytes = width * format.bytes_per_pixel();
    if height > 0 && (pitch < row_bytes || src.len() < pitch * (height - 1) + row_bytes) {
        return false;
    }
    out.clear();
    out.reserve(width * height);
    for y in 0..height {
        let row = &src[y * pitch..y * pitch + row_bytes];
        match format {
            PixelFormat::Xrgb8888 => out.extend(
                row.chunks_exact(4)
                    .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]) & 0x00ff_ffff),
            ),
            PixelFormat::Rgb565 => out.extend(
                row.chunks_exact(2)
                    .map(|c| from_565(u16::from_ne_bytes([c[0], c[1]]))),
            ),
            PixelFormat::Xrgb1555 => out.extend(
                row.chunks_exact(2)
                    .map(|c| from_1555(u16::from_ne_bytes([c[0], c[1]]))),
            ),
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_each_format_with_pitch_padding() {
        // 2x2 image, rows padded to 3 pixels.
        let px8888: [u32; 6] = [0xff11_2233, 0x0000_00ff, 0, 0x00ff_0000, 0x0000_ff00, 0];
        let bytes: Vec<u8> = px8888.iter().flat_map(|p| p.to_ne_bytes()).collect();
        let mut out = Vec::new();
        assert!(convert(PixelFormat::Xrgb8888, &bytes, 2, 2, 12, &mut out));
        assert_eq!(out, [0x0011_2233, 0x0000_00ff, 0x00ff_0000, 0x0000_ff00]);

        let px565: [u16; 4] = [0xf800, 0x07e0, 0x001f, 0xffff];
        let bytes: Vec<u8> = px565.iter().flat_map(|p| p.to_ne_bytes()).collect();
        assert!(convert(PixelFormat::Rgb565, &bytes, 2, 2, 4, &mut out));
        assert_eq!(out, [0x00ff_0000, 0x0000_ff00, 0x0000_00ff, 0x00ff_ffff]);

        let px1555: [u16; 2] = [0x7c00, 0x8010];
        let bytes: Vec<u8> = px1555.iter().flat_map(|p| p.to_ne_bytes()).collect();
        assert!(convert(PixelFormat::Xrgb1555, &bytes, 2, 1, 4, &mut out));
        assert_eq!(out, [0x00ff_0000, 0x0000_0084]);
    }

    #[test]
    fn rejects_short_buffers_and_unknown_formats() {
        let mut out = vec![7];
        assert!(!convert(PixelFormat::Xrgb8888, &[0; 8], 2, 2, 8, &mut out));
        assert_eq!(out, [7]);
        assert_eq!(PixelFormat::from_raw(3), None);
        assert_eq!(PixelFormat::from_raw(2), Some(PixelFormat::Rgb565));
    }
}
