//! The picture of a video: one fixed size for the whole file, each core frame drawn into it
//! as the window draws it (`frontend::aspect`): turned upright, at the core's display aspect,
//! its height scaled by the largest whole number that fits, nearest neighbour, centred on
//! black. A core that changes resolution mid-game is scaled into the same size.

use crate::frontend::aspect;
use crate::frontend::image::{rotated_size, rotated_source, Image};

/// Lines the default scale fits into (1080p).
pub const DEFAULT_LINES: u32 = 1080;

/// The scale for a picture `height` lines tall: `scale` if given, else the largest whole
/// multiple that fits [`DEFAULT_LINES`] (at least 1).
pub fn pick_scale(scale: Option<u32>, height: u32) -> u32 {
    scale.unwrap_or_else(|| (DEFAULT_LINES / height.max(1)).max(1))
}

/// How frames look in the video.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Geometry {
    /// The core's base frame size (before rotation) and display aspect (unrotated).
    pub base: (u32, u32),
    pub aspect: f32,
    /// Quarter turns counter-clockwise (libretro's SET_ROTATION).
    pub rotation: u32,
    pub scale: u32,
    /// Round the output up to even sizes (4:2:0 encoders need them).
    pub even: bool,
}

impl Geometry {
    /// The output size: the base frame upright at its aspect, `scale` times.
    pub fn output_size(&self) -> (u32, u32) {
        let size = rotated_size(self.base.0.max(1), self.base.1.max(1), self.rotation);
        let aspect = aspect::rotated_aspect(self.aspect, self.rotation);
        let (w, h) = aspect::window_size(size, aspect::pixel_aspect(size, aspect), self.scale);
        if self.even {
            (w + w % 2, h + h % 2)
        } else {
            (w, h)
        }
    }
}

/// The output picture, `bgr0` bytes (XRGB8888 little-endian), and how the last frame's
/// size maps into it.
pub struct Canvas {
    geometry: Geometry,
    size: (u32, u32),
    bytes: Vec<u8>,
    /// The frame size (upright) and aspect (its bits) the maps are for.
    mapped: Option<((u32, u32), u32)>,
    /// Where the frame goes: left, top, and for each of its columns and rows the upright
    /// frame's column and row it shows.
    left: usize,
    top: usize,
    cols: Vec<u32>,
    rows: Vec<u32>,
}

impl Canvas {
    pub fn new(geometry: Geometry) -> Canvas {
        let size = geometry.output_size();
        Canvas {
            geometry,
            size,
            bytes: vec![0; size.0 as usize * size.1 as usize * 4],
            mapped: None,
            left: 0,
            top: 0,
            cols: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Width and height in pixels.
    pub fn size(&self) -> (u32, u32) {
        self.size
    }

    /// The picture as bytes (`bgr0`, rows top to bottom).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Draws `image`, shown at display aspect `aspect` (the core's now, unrotated), over
    /// the whole picture; an invalid image leaves the last one.
    pub fn draw(&mut self, image: &Image, aspect: f32) {
        if !image.is_valid() {
            return;
        }
        let rotation = self.geometry.rotation;
        let upright = image.rotated_size(rotation);
        if self.mapped != Some((upright, aspect.to_bits())) {
            self.map(upright, aspect);
        }
        let out_w = self.size.0 as usize;
        let (src_w, src_h) = (image.width as usize, image.height as usize);
        let width = self.cols.len();
        let mut last_row: Option<(u32, usize)> = None;
        for (i, &row) in self.rows.iter().enumerate() {
            let y = self.top + i;
            let start = (y * out_w + self.left) * 4;
            // Rows scaled up repeat the row above: copy it rather than map it again.
            if let Some((_, prev_start)) = last_row.filter(|(r, _)| *r == row) {
                self.bytes
                    .copy_within(prev_start..prev_start + width * 4, start);
                continue;
            }
            let out = &mut self.bytes[start..start + width * 4];
            if rotation.is_multiple_of(4) {
                let line = &image.pixels[row as usize * image.pitch..][..src_w];
                for (px, &col) in out.chunks_exact_mut(4).zip(&self.cols) {
                    px.copy_from_slice(&line[col as usize].to_le_bytes());
                }
            } else {
                for (px, &col) in out.chunks_exact_mut(4).zip(&self.cols) {
                    let (sx, sy) =
                        rotated_source(col as usize, row as usize, (src_w, src_h), rotation);
                    px.copy_from_slice(&image.pixels[sy * image.pitch + sx].to_le_bytes());
                }
            }
            last_row = Some((row, start));
        }
    }

    /// Lays out a frame of `upright` size as `aspect::layout` does in a window of the
    /// picture's size, and clears the picture to black.
    fn map(&mut self, upright: (u32, u32), core_aspect: f32) {
        let aspect = aspect::rotated_aspect(core_aspect, self.geometry.rotation);
        let par = aspect::pixel_aspect(upright, aspect);
        let fit = aspect::layout(upright, par, self.size);
        let w = (fit.width.round() as u32).clamp(1, self.size.0);
        let h = (fit.height.round() as u32).clamp(1, self.size.1);
        self.left = ((self.size.0 - w) / 2) as usize;
        self.top = ((self.size.1 - h) / 2) as usize;
        // Nearest neighbour: the source pixel under each output pixel's centre.
        let map = |n: u32, src: u32| -> Vec<u32> {
            (0..n)
                .map(|i| ((u64::from(i) * 2 + 1) * u64::from(src) / (u64::from(n) * 2)) as u32)
                .collect()
        };
        self.cols = map(w, upright.0);
        self.rows = map(h, upright.1);
        self.bytes.fill(0);
        self.mapped = Some((upright, core_aspect.to_bits()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry(base: (u32, u32), aspect: f32, rotation: u32, scale: u32) -> Geometry {
        Geometry {
            base,
            aspect,
            rotation,
            scale,
            even: true,
        }
    }

    /// The picture's pixel at (x, y) as 0x00RRGGBB.
    fn at(c: &Canvas, x: u32, y: u32) -> u32 {
        let i = ((y * c.size().0 + x) * 4) as usize;
        u32::from_le_bytes(c.bytes()[i..i + 4].try_into().unwrap())
    }

    #[test]
    fn the_default_scale_fits_1080_lines() {
        assert_eq!(pick_scale(None, 240), 4);
        assert_eq!(pick_scale(None, 224), 4);
        assert_eq!(pick_scale(None, 288), 3);
        assert_eq!(pick_scale(None, 2000), 1);
        assert_eq!(pick_scale(Some(2), 240), 2);
    }

    #[test]
    fn square_pixels_scale_by_whole_numbers_exactly() {
        let px: Vec<u32> = (0..6).collect();
        let mut c = Canvas::new(geometry((3, 2), 1.5, 0, 2));
        assert_eq!(c.size(), (6, 4));
        c.draw(&Image::packed(3, 2, &px), 1.5);
        for y in 0..4 {
            for x in 0..6 {
                assert_eq!(at(&c, x, y), (y / 2) * 3 + x / 2, "({x}, {y})");
            }
        }
    }

    #[test]
    fn a_genesis_frame_is_four_by_three() {
        let g = geometry((320, 224), 4.0 / 3.0, 0, 3);
        assert_eq!(g.output_size(), (896, 672));
        assert_eq!(pick_scale(None, 224), 4);
        // 1194.7 columns, rounded, then made even for 4:2:0.
        assert_eq!(
            geometry((320, 224), 4.0 / 3.0, 0, 4).output_size(),
            (1196, 896)
        );
    }

    #[test]
    fn a_vertical_game_stands_upright() {
        // A 4x2 frame turned a quarter counter-clockwise is 2 wide and 4 tall.
        let px: Vec<u32> = (0..8).collect();
        let mut c = Canvas::new(geometry((4, 2), 2.0, 1, 1));
        assert_eq!(c.size(), (2, 4));
        c.draw(&Image::packed(4, 2, &px), 2.0);
        // The source's right column becomes the top row.
        assert_eq!((at(&c, 0, 0), at(&c, 1, 0)), (3, 7));
        assert_eq!((at(&c, 0, 3), at(&c, 1, 3)), (0, 4));
    }

    #[test]
    fn a_resolution_change_keeps_the_size_letterboxed() {
        // Base 4x2 at aspect 2:1, scale 2: 8x4.
        let mut c = Canvas::new(geometry((4, 2), 2.0, 0, 2));
        assert_eq!(c.size(), (8, 4));
        c.draw(&Image::packed(4, 2, &[0xff; 8]), 2.0);
        // A 2x1 frame at the same aspect fills it, 4 times.
        c.draw(&Image::packed(2, 1, &[0x11; 2]), 2.0);
        assert!(c.bytes().chunks(4).all(|p| p == [0x11, 0, 0, 0]));
        // A 6x3 frame at 2:1 has square pixels; only 1 time fits: centred on black.
        c.draw(&Image::packed(6, 3, &[0x22; 18]), 2.0);
        assert_eq!(c.size(), (8, 4));
        for y in 0..4 {
            for x in 0..8 {
                let inside = (1..7).contains(&x) && y < 3;
                assert_eq!(at(&c, x, y), if inside { 0x22 } else { 0 }, "({x}, {y})");
            }
        }
        // Too tall for the picture: scaled down to fit.
        c.draw(&Image::packed(2, 8, &[0x33; 16]), 0.25);
        assert_eq!(at(&c, 3, 0), 0x33);
        assert_eq!(at(&c, 0, 0), 0);
    }

    #[test]
    fn odd_sizes_round_up_to_even_for_yuv() {
        let g = geometry((3, 3), 1.0, 0, 1);
        assert_eq!(g.output_size(), (4, 4));
        let g = Geometry { even: false, ..g };
        assert_eq!(g.output_size(), (3, 3));
    }
}
