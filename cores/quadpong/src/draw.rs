//! The picture as vertices: every shape a quad of two triangles, in screen pixels (top-left
//! origin, 640x480), with a shape kind the fragment shader draws (`gl.rs`). Pure, so what
//! is drawn is tested without a GPU.

use crate::game::{State, ARENA, BALL_R, PADDLE_FACE, PADDLE_HALF, PADDLE_THICK, SIDES, SUB};

pub const WIDTH: u32 = 640;
pub const HEIGHT: u32 = 480;
/// The arena's left edge on screen (it is centred; the score columns flank it).
pub const ARENA_X: f32 = ((WIDTH as i32 - ARENA) / 2) as f32;

/// Floats per vertex: position (2), local coordinates (2), colour (4), kind (1).
pub const FLOATS: usize = 9;

/// What the fragment shader makes of a quad (also its depth layer: higher is nearer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Background = 0,
    Border = 1,
    Paddle = 2,
    Ball = 3,
    Digit = 4,
}

/// Each side's colour: red-orange, cyan, green, yellow.
pub const COLORS: [[f32; 3]; SIDES] = [
    [1.0, 0.35, 0.2],
    [0.2, 0.85, 1.0],
    [0.35, 1.0, 0.35],
    [1.0, 0.9, 0.2],
];

/// The frame's vertices in three runs: the stencil mask (the arena's inside), the balls
/// (drawn first and clipped to the mask, so they show only through a working depth and
/// stencil buffer), and everything else.
#[derive(Default)]
pub struct Frame {
    pub mask: Vec<f32>,
    pub balls: Vec<f32>,
    pub rest: Vec<f32>,
}

fn quad(out: &mut Vec<f32>, (x0, y0, x1, y1): (f32, f32, f32, f32), color: [f32; 4], kind: Kind) {
    let k = kind as u32 as f32;
    let corners = [
        (x0, y0, -1.0, -1.0),
        (x1, y0, 1.0, -1.0),
        (x1, y1, 1.0, 1.0),
        (x0, y0, -1.0, -1.0),
        (x1, y1, 1.0, 1.0),
        (x0, y1, -1.0, 1.0),
    ];
    for (x, y, u, v) in corners {
        out.extend_from_slice(&[x, y, u, v, color[0], color[1], color[2], color[3], k]);
    }
}

fn px(sub: i32) -> f32 {
    sub as f32 / SUB as f32
}

/// Builds the frame for `state`.
pub fn frame(state: &State, out: &mut Frame) {
    out.mask.clear();
    out.balls.clear();
    out.rest.clear();
    let (ax, a) = (ARENA_X, ARENA as f32);
    quad(
        &mut out.mask,
        (ax, 0.0, ax + a, a),
        [0.0; 4],
        Kind::Background,
    );

    for b in &state.balls[..usize::from(state.balls_in_play)] {
        let (x, y, r) = (ax + px(b.x), px(b.y), BALL_R as f32);
        // A waiting ball blinks.
        let alpha = if b.wait > 0 && (b.wait / 5) % 2 == 1 {
            0.35
        } else {
            1.0
        };
        quad(
            &mut out.balls,
            (x - r, y - r, x + r, y + r),
            [1.0, 1.0, 1.0, alpha],
            Kind::Ball,
        );
    }

    quad(
        &mut out.rest,
        (0.0, 0.0, WIDTH as f32, HEIGHT as f32),
        [0.0; 4],
        Kind::Background,
    );
    // The walls: each in its side's colour, bright while it flashes for a miss.
    let t = 4.0;
    let walls = [
        (ax, a - t, ax + a, a),
        (ax, 0.0, ax + a, t),
        (ax, 0.0, ax + t, a),
        (ax + a - t, 0.0, ax + a, a),
    ];
    for (side, rect) in walls.into_iter().enumerate() {
        let c = COLORS[side];
        let glow = if state.flash[side] > 0 { 1.0 } else { 0.45 };
        quad(
            &mut out.rest,
            rect,
            [c[0] * glow, c[1] * glow, c[2] * glow, 1.0],
            Kind::Border,
        );
    }
    for (side, &c) in COLORS.iter().enumerate() {
        // The machine's paddles are dimmer than the players'.
        let k = if state.joined & (1 << side) != 0 {
            1.0
        } else {
            0.55
        };
        let along = px(state.paddles[side]);
        let (h, f, th) = (PADDLE_HALF as f32, PADDLE_FACE as f32, PADDLE_THICK as f32);
        let rect = match side {
            0 => (ax + along - h, a - f, ax + along + h, a - f + th),
            1 => (ax + along - h, f - th, ax + along + h, f),
            2 => (ax + f - th, along - h, ax + f, along + h),
            _ => (ax + a - f, along - h, ax + a - f + th, along + h),
        };
        quad(
            &mut out.rest,
            rect,
            [c[0] * k, c[1] * k, c[2] * k, 1.0],
            Kind::Paddle,
        );
        // Misses in the side columns: players 1 and 3 on the left, 2 and 4 on the right.
        let x = if side % 2 == 0 { 14.0 } else { ax + a + 14.0 };
        let y = if side < 2 { 300.0 } else { 120.0 };
        number(
            &mut out.rest,
            u32::from(state.misses[side]).min(99),
            x,
            y,
            [c[0], c[1], c[2], 1.0],
        );
    }
}

/// Segments a to g of a seven-segment digit, as bits.
const DIGITS: [u8; 10] = [
    0b0111111, 0b0000110, 0b1011011, 0b1001111, 0b1100110, 0b1101101, 0b1111101, 0b0000111,
    0b1111111, 0b1101111,
];

/// Two digits, 20x36 pixels each, from (x, y).
fn number(out: &mut Vec<f32>, n: u32, x: f32, y: f32, color: [f32; 4]) {
    for (i, d) in [n / 10, n % 10].into_iter().enumerate() {
        let x = x + i as f32 * 28.0;
        let (w, h, t) = (20.0, 18.0, 4.0);
        let segs = [
            (x, y, x + w, y + t),
            (x + w - t, y, x + w, y + h),
            (x + w - t, y + h, x + w, y + 2.0 * h),
            (x, y + 2.0 * h - t, x + w, y + 2.0 * h),
            (x, y + h, x + t, y + 2.0 * h),
            (x, y, x + t, y + h),
            (x, y + h - t / 2.0, x + w, y + h + t / 2.0),
        ];
        for (bit, rect) in segs.into_iter().enumerate() {
            if DIGITS[d as usize] & (1 << bit) != 0 {
                quad(out, rect, color, Kind::Digit);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_is_on_screen_and_whole() {
        let mut s = State::new(4);
        for _ in 0..200 {
            s.step([0; 4]);
        }
        let mut f = Frame::default();
        frame(&s, &mut f);
        assert_eq!(f.mask.len(), 6 * FLOATS);
        assert_eq!(f.balls.len(), 4 * 6 * FLOATS);
        for run in [&f.mask, &f.balls, &f.rest] {
            assert_eq!(run.len() % (6 * FLOATS), 0);
            for v in run.chunks_exact(FLOATS) {
                assert!((-8.0..=648.0).contains(&v[0]), "{v:?}");
                assert!((-8.0..=488.0).contains(&v[1]), "{v:?}");
            }
        }
        // Background, 4 walls, 4 paddles and each side's misses in two digits.
        let segments: u32 = s
            .misses
            .iter()
            .map(|&m| {
                let m = usize::from(m.min(99));
                DIGITS[m / 10].count_ones() + DIGITS[m % 10].count_ones()
            })
            .sum();
        assert_eq!(f.rest.len() / (6 * FLOATS), 9 + segments as usize);
    }
}
