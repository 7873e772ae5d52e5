//! Core framebuffers: [`RawFrame`] keeps the last one in the core's own pixel format (one
//! memcpy per row in the video callback), and converts it into row-major XRGB8888 `u32`s
//! only when someone asks. An unthrottled headless run never looks at its frames, so it
//! never pays for the conversion.

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

    pub fn to_raw(self) -> c_int {
        match self {
            PixelFormat::Xrgb1555 => ffi::PIXEL_FORMAT_0RGB1555,
            PixelFormat::Xrgb8888 => ffi::PIXEL_FORMAT_XRGB8888,
            PixelFormat::Rgb565 => ffi::PIXEL_FORMAT_RGB565,
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

/// A frame in the core's pixel format, rows packed (the core's pitch padding dropped).
#[derive(Debug)]
pub struct RawFrame {
    format: PixelFormat,
    width: u32,
    height: u32,
    /// `width * height * bytes_per_pixel` bytes in native byte order, held in `u32`s so
    /// they can be read as `u16` or `u32` pixels without alignment checks.
    words: Vec<u32>,
}

impl Default for RawFrame {
    fn default() -> RawFrame {
        RawFrame {
            format: PixelFormat::DEFAULT,
            width: 0,
            height: 0,
            words: Vec::new(),
        }
    }
}

impl RawFrame {
    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn height(&self) -> u32 {
        self.height
    }

    /// Copies a frame from the core. `src` holds `height` rows of `pitch` bytes each (the
    /// last row may stop after its pixels). Returns false, keeping the previous frame, if
    /// `src` is too short for the geometry.
    pub fn store(
        &mut self,
        format: PixelFormat,
        src: &[u8],
        width: u32,
        height: u32,
        pitch: usize,
    ) -> bool {
        let (w, h) = (width as usize, height as usize);
        let row_bytes = w * format.bytes_per_pixel();
        if h > 0 && (pitch < row_bytes || src.len() < pitch * (h - 1) + row_bytes) {
            return false;
        }
        self.format = format;
        self.width = width;
        self.height = height;
        // No zeroing needed: every byte up to `row_bytes * h` is overwritten below.
        self.words.resize((row_bytes * h).div_ceil(4), 0);
        let dst = bytes_mut(&mut self.words);
        if pitch == row_bytes {
            dst[..row_bytes * h].copy_from_slice(&src[..row_bytes * h]);
        } else {
            for (y, out) in dst.chunks_exact_mut(row_bytes.max(1)).take(h).enumerate() {
                out.copy_from_slice(&src[y * pitch..y * pitch + row_bytes]);
            }
        }
        true
    }

    /// Appends the frame to `out` as bytes: its format, width and height, then its pixels
    /// (read back by [`from_bytes`](Self::from_bytes) in the same process).
    pub fn append_to(&self, out: &mut Vec<u8>) {
        out.push(self.format as u8);
        out.extend_from_slice(&self.width.to_le_bytes());
        out.extend_from_slice(&self.height.to_le_bytes());
        for w in &self.words {
            out.extend_from_slice(&w.to_ne_bytes());
        }
    }

    /// A frame from [`append_to`](Self::append_to)'s bytes; `None` if they are not one.
    pub fn from_bytes(bytes: &[u8]) -> Option<RawFrame> {
        let (&format, rest) = bytes.split_first()?;
        let format = [
            PixelFormat::Xrgb8888,
            PixelFormat::Rgb565,
            PixelFormat::Xrgb1555,
        ]
        .into_iter()
        .find(|f| *f as u8 == format)?;
        let width = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
        let height = u32::from_le_bytes(rest.get(4..8)?.try_into().ok()?);
        let pixels = rest.get(8..)?;
        let need = (width as usize * height as usize * format.bytes_per_pixel()).div_ceil(4);
        if pixels.len() != need * 4 {
            return None;
        }
        let words = pixels
            .chunks_exact(4)
            .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Some(RawFrame {
            format,
            width,
            height,
            words,
        })
    }

    /// Writes the frame into `out` as `width * height` XRGB8888 pixels (replacing its
    /// contents, reusing its allocation).
    pub fn to_xrgb8888(&self, out: &mut Vec<u32>) {
        let n = self.width as usize * self.height as usize;
        out.clear();
        match self.format {
            PixelFormat::Xrgb8888 => {
                out.extend(self.words[..n].iter().map(|&p| p & 0x00ff_ffff));
            }
            PixelFormat::Rgb565 => {
                out.extend(halves(&self.words)[..n].iter().map(|&p| from_565(p)))
            }
            PixelFormat::Xrgb1555 => {
                out.extend(halves(&self.words)[..n].iter().map(|&p| from_1555(p)))
            }
        }
    }
}

/// `words` as bytes in memory order.
fn bytes_mut(words: &mut [u32]) -> &mut [u8] {
    let len = std::mem::size_of_val(words);
    // SAFETY: u8 has no alignment requirement and every bit pattern is a valid u8 and u32;
    // the slice covers exactly the memory of `words` and borrows it mutably.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) }
}

/// `words` as `u16`s in memory order (native-endian 16-bit pixels).
fn halves(words: &[u32]) -> &[u16] {
    // SAFETY: u32's alignment satisfies u16's, every bit pattern is a valid u16, and the
    // slice covers exactly the memory of `words`, borrowed immutably.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u16>(), words.len() * 2) }
}

/// Expands an `n`-bit channel to 8 bits, replicating the top bits into the bottom.
/// Plain shifts and masks, so the per-pixel loops above vectorise.
#[inline(always)]
fn expand(v: u32, bits: u32) -> u32 {
    (v << (8 - bits)) | (v >> (2 * bits - 8))
}

#[inline(always)]
fn from_565(p: u16) -> u32 {
    let p = u32::from(p);
    let r = expand((p >> 11) & 0x1f, 5);
    let g = expand((p >> 5) & 0x3f, 6);
    let b = expand(p & 0x1f, 5);
    (r << 16) | (g << 8) | b
}

#[inline(always)]
fn from_1555(p: u16) -> u32 {
    let p = u32::from(p);
    let r = expand((p >> 10) & 0x1f, 5);
    let g = expand((p >> 5) & 0x1f, 5);
    let b = expand(p & 0x1f, 5);
    (r << 16) | (g << 8) | b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn converted(format: PixelFormat, bytes: &[u8], w: u32, h: u32, pitch: usize) -> Vec<u32> {
        let mut frame = RawFrame::default();
        assert!(frame.store(format, bytes, w, h, pitch));
        assert_eq!((frame.width(), frame.height()), (w, h));
        let mut out = vec![9; 3]; // stale contents must go
        frame.to_xrgb8888(&mut out);
        out
    }

    #[test]
    fn converts_each_format_with_pitch_padding() {
        // 2x2 image, rows padded to 3 pixels.
        let px8888: [u32; 6] = [0xff11_2233, 0x0000_00ff, 0, 0x00ff_0000, 0x0000_ff00, 0];
        let bytes: Vec<u8> = px8888.iter().flat_map(|p| p.to_ne_bytes()).collect();
        assert_eq!(
            converted(PixelFormat::Xrgb8888, &bytes, 2, 2, 12),
            [0x0011_2233, 0x0000_00ff, 0x00ff_0000, 0x0000_ff00]
        );

        let px565: [u16; 4] = [0xf800, 0x07e0, 0x001f, 0xffff];
        let bytes: Vec<u8> = px565.iter().flat_map(|p| p.to_ne_bytes()).collect();
        assert_eq!(
            converted(PixelFormat::Rgb565, &bytes, 2, 2, 4),
            [0x00ff_0000, 0x0000_ff00, 0x0000_00ff, 0x00ff_ffff]
        );

        let px1555: [u16; 2] = [0x7c00, 0x8010];
        let bytes: Vec<u8> = px1555.iter().flat_map(|p| p.to_ne_bytes()).collect();
        assert_eq!(
            converted(PixelFormat::Xrgb1555, &bytes, 2, 1, 4),
            [0x00ff_0000, 0x0000_0084]
        );
    }

    #[test]
    fn odd_widths_and_a_short_last_row() {
        // 3x2 RGB565 with a pitch of 4 pixels; the last row ends right after its pixels.
        let px: [u16; 7] = [0xf800, 0x07e0, 0x001f, 0x1234, 0x0000, 0xffff, 0x0841];
        let bytes: Vec<u8> = px.iter().flat_map(|p| p.to_ne_bytes()).collect();
        assert_eq!(
            converted(PixelFormat::Rgb565, &bytes, 3, 2, 8),
            [
                0x00ff_0000,
                0x0000_ff00,
                0x0000_00ff,
                0,
                0x00ff_ffff,
                0x0008_0808
            ]
        );
        assert_eq!(
            converted(PixelFormat::Rgb565, &[], 0, 0, 0),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn every_565_and_1555_value_matches_the_reference_expansion() {
        // Reference: bit replication written as arithmetic, v * 33 / 4 for 5 bits and
        // v * 65 / 16 for 6 (0 -> 0, max -> 255). The checksum hashes these values, so
        // they must never change.
        let scale = |v: u32, max: u32| if max == 31 { v * 33 / 4 } else { v * 65 / 16 };
        let all: Vec<u16> = (0..=u16::MAX).collect();
        let bytes: Vec<u8> = all.iter().flat_map(|p| p.to_ne_bytes()).collect();
        let out565 = converted(PixelFormat::Rgb565, &bytes, 256, 256, 512);
        let out1555 = converted(PixelFormat::Xrgb1555, &bytes, 256, 256, 512);
        for (i, &p) in all.iter().enumerate() {
            let p = u32::from(p);
            let want =
                scale(p >> 11, 31) << 16 | scale((p >> 5) & 0x3f, 63) << 8 | scale(p & 0x1f, 31);
            assert_eq!(out565[i], want, "565 {p:#06x}");
            let want = scale((p >> 10) & 0x1f, 31) << 16
                | scale((p >> 5) & 0x1f, 31) << 8
                | scale(p & 0x1f, 31);
            assert_eq!(out1555[i], want, "1555 {p:#06x}");
        }
    }

    #[test]
    fn rejects_short_buffers_and_unknown_formats() {
        let mut frame = RawFrame::default();
        let px: [u16; 2] = [0xf800, 0x001f];
        let bytes: Vec<u8> = px.iter().flat_map(|p| p.to_ne_bytes()).collect();
        assert!(frame.store(PixelFormat::Rgb565, &bytes, 2, 1, 4));
        assert!(!frame.store(PixelFormat::Xrgb8888, &[0; 8], 2, 2, 8));
        assert!(!frame.store(PixelFormat::Rgb565, &[0; 8], 2, 2, 2));
        let mut out = Vec::new();
        frame.to_xrgb8888(&mut out);
        assert_eq!(
            out,
            [0x00ff_0000, 0x0000_00ff],
            "the rejected frames left no trace"
        );
        assert_eq!(PixelFormat::from_raw(3), None);
        assert_eq!(PixelFormat::from_raw(2), Some(PixelFormat::Rgb565));
    }
}
