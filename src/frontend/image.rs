//! Core video frames as plain data, and copying them (rotated) into RGBA buffers.

/// A core's video frame: XRGB8888 pixels, `pitch` pixels per row (`pitch >= width`).
#[derive(Copy, Clone, Debug)]
pub struct Image<'a> {
    pub width: u32,
    pub height: u32,
    pub pitch: usize,
    pub pixels: &'a [u32],
}

impl<'a> Image<'a> {
    /// A tightly packed frame (`pitch == width`).
    pub fn packed(width: u32, height: u32, pixels: &'a [u32]) -> Image<'a> {
        Image {
            width,
            height,
            pitch: width as usize,
            pixels,
        }
    }

    /// Whether the pixel slice really holds `height` rows of `pitch` pixels.
    pub fn is_valid(&self) -> bool {
        self.width > 0
            && self.height > 0
            && self.pitch >= self.width as usize
            && self.pixels.len() >= self.pitch * (self.height as usize - 1) + self.width as usize
    }

    /// Size after turning by `rotation` quarter turns counter-clockwise.
    pub fn rotated_size(&self, rotation: u32) -> (u32, u32) {
        rotated_size(self.width, self.height, rotation)
    }
}

/// `(width, height)` after `rotation` quarter turns counter-clockwise.
pub fn rotated_size(width: u32, height: u32, rotation: u32) -> (u32, u32) {
    if rotation % 2 == 1 {
        (height, width)
    } else {
        (width, height)
    }
}

/// The pixel of a `size` (width, height) source that lands on `(dx, dy)` once the source is
/// turned by `rotation` quarter turns counter-clockwise (the inverse mapping).
#[inline]
pub fn rotated_source(dx: usize, dy: usize, size: (usize, usize), rotation: u32) -> (usize, usize) {
    let (w, h) = size;
    match rotation % 4 {
        0 => (dx, dy),
        1 => (w - 1 - dy, dx),
        2 => (w - 1 - dx, h - 1 - dy),
        _ => (dy, h - 1 - dx),
    }
}

/// Copies `src` turned by `rotation` quarter turns counter-clockwise (libretro's
/// SET_ROTATION) into `dst`, `bpp` bytes per pixel: 4 writes RGBA (alpha 255), 3 writes RGB.
/// `dst` must hold `rotated_size` pixels; returns false (and writes nothing) otherwise.
pub fn copy_rotated(src: &Image, rotation: u32, dst: &mut [u8], bpp: usize) -> bool {
    let (dw, dh) = src.rotated_size(rotation);
    let (dw, dh) = (dw as usize, dh as usize);
    if !src.is_valid() || dst.len() < dw * dh * bpp || !(bpp == 3 || bpp == 4) {
        return false;
    }
    let (w, h) = (src.width as usize, src.height as usize);
    for dy in 0..dh {
        let row = &mut dst[dy * dw * bpp..(dy + 1) * dw * bpp];
        for (dx, out) in row.chunks_exact_mut(bpp).enumerate() {
            let (sx, sy) = rotated_source(dx, dy, (w, h), rotation);
            let p = src.pixels[sy * src.pitch + sx];
            out[0] = (p >> 16) as u8;
            out[1] = (p >> 8) as u8;
            out[2] = p as u8;
            if bpp == 4 {
                out[3] = 0xff;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3x2 frame whose pixel values are their own (x, y) in the blue/green bytes.
    fn sample() -> Vec<u32> {
        let mut v = Vec::new();
        for y in 0..2u32 {
            for x in 0..3u32 {
                v.push((y << 8) | x);
            }
            v.push(0xdead); // padding: pitch 4
        }
        v
    }

    fn coords(rotation: u32) -> (usize, Vec<(u8, u8)>) {
        let px = sample();
        let img = Image {
            width: 3,
            height: 2,
            pitch: 4,
            pixels: &px,
        };
        let (w, h) = img.rotated_size(rotation);
        let mut dst = vec![0u8; (w * h * 3) as usize];
        assert!(copy_rotated(&img, rotation, &mut dst, 3));
        (
            w as usize,
            dst.chunks(3).map(|c| (c[2], c[1])).collect(), // (x, y) of the source
        )
    }

    #[test]
    fn rotations_turn_counter_clockwise() {
        assert_eq!(
            coords(0).1,
            vec![(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]
        );
        // 90 degrees CCW: the source's right column becomes the top row.
        let (w, c) = coords(1);
        assert_eq!(w, 2);
        assert_eq!(c, vec![(2, 0), (2, 1), (1, 0), (1, 1), (0, 0), (0, 1)]);
        assert_eq!(
            coords(2).1,
            vec![(2, 1), (1, 1), (0, 1), (2, 0), (1, 0), (0, 0)]
        );
        // 270 CCW: the source's left column becomes the top row, bottom first.
        assert_eq!(
            coords(3).1,
            vec![(0, 1), (0, 0), (1, 1), (1, 0), (2, 1), (2, 0)]
        );
    }

    #[test]
    fn rejects_short_buffers() {
        let px = [0u32; 5];
        let img = Image::packed(3, 2, &px);
        assert!(!img.is_valid());
        let mut dst = vec![0u8; 24];
        assert!(!copy_rotated(&img, 0, &mut dst, 4));
        let px = [0x00ff_8040u32; 6];
        let img = Image::packed(3, 2, &px);
        assert!(!copy_rotated(&img, 0, &mut dst[..20], 4));
        assert!(copy_rotated(&img, 0, &mut dst, 4));
        assert_eq!(&dst[..4], &[0xff, 0x80, 0x40, 0xff]);
    }
}
