//! The game: pong on four sides. Each side of a square arena has a paddle guarding its
//! wall; a ball past a paddle is a miss for that side. Players 1-4 hold the bottom, top,
//! left and right paddles; a side nobody has joined (START) is played by the machine.
//!
//! The whole machine is [`State`], which lives as bytes in system RAM (`RAM_SIZE`): every
//! frame decodes it, steps it and writes it back, so a savestate is a copy of RAM and the
//! RAM a frontend checksums is everything. Integer arithmetic only, one seeded generator,
//! no clock: the same pads give the same frames on every machine.

/// Sub-pixels per pixel of the arena's fixed-point coordinates.
pub const SUB: i32 = 256;
/// The arena is a square of this many pixels a side.
pub const ARENA: i32 = 480;
pub const SIDES: usize = 4;
pub const MAX_BALLS: usize = 4;
/// Paddle half length, thickness and distance of its face from the wall, in pixels.
pub const PADDLE_HALF: i32 = 48;
pub const PADDLE_THICK: i32 = 10;
pub const PADDLE_FACE: i32 = 24;
pub const BALL_R: i32 = 6;
/// Frames a ball waits at the centre before it is served.
pub const SERVE_WAIT: u8 = 40;
const HUMAN_SPEED: i32 = 7 * SUB;
const MACHINE_SPEED: i32 = 4 * SUB;
const SERVE_SPEED: i32 = 3 * SUB;
const MAX_SPEED: i32 = 9 * SUB;
const MIN_AXIS_SPEED: i32 = SUB;

/// RetroPad bits (`RETRO_DEVICE_ID_JOYPAD_*`).
pub mod pad {
    pub const B: u16 = 1 << 0;
    pub const START: u16 = 1 << 3;
    pub const UP: u16 = 1 << 4;
    pub const DOWN: u16 = 1 << 5;
    pub const LEFT: u16 = 1 << 6;
    pub const RIGHT: u16 = 1 << 7;
    pub const A: u16 = 1 << 8;
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ball {
    /// Centre, in sub-pixels of the arena.
    pub x: i32,
    pub y: i32,
    pub vx: i32,
    pub vy: i32,
    /// Frames until it is served (0: in play).
    pub wait: u8,
}

/// Everything the game is; encoded into `RAM_SIZE` bytes of RAM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    pub frame: u32,
    pub rng: u32,
    /// Bit `s`: side `s` is a player's (else the machine's).
    pub joined: u8,
    pub balls_in_play: u8,
    /// Paddle centres along their walls, in sub-pixels.
    pub paddles: [i32; SIDES],
    pub misses: [u16; SIDES],
    pub hits: [u16; SIDES],
    pub balls: [Ball; MAX_BALLS],
    /// Frames left of the current sound, and which (1 paddle, 2 miss).
    pub beep: u8,
    pub beep_kind: u8,
    /// Frames left of each side's flash after a miss.
    pub flash: [u8; SIDES],
}

/// Bytes of RAM the state takes (the rest of `RAM_SIZE` stays zero).
pub const STATE_BYTES: usize =
    4 + 4 + 1 + 1 + 4 * SIDES + 2 * SIDES * 2 + MAX_BALLS * 17 + 2 + SIDES;
/// System RAM size.
pub const RAM_SIZE: usize = 256;
const _: () = assert!(STATE_BYTES <= RAM_SIZE);

impl State {
    /// A new game with `balls` balls (1-4) waiting at the centre.
    pub fn new(balls: u8) -> State {
        let mut s = State {
            frame: 0,
            rng: 0x2545_f491,
            joined: 0,
            balls_in_play: balls.clamp(1, MAX_BALLS as u8),
            paddles: [ARENA * SUB / 2; SIDES],
            misses: [0; SIDES],
            hits: [0; SIDES],
            balls: [Ball::default(); MAX_BALLS],
            beep: 0,
            beep_kind: 0,
            flash: [0; SIDES],
        };
        for i in 0..MAX_BALLS {
            s.balls[i] = s.serve_ball(i);
        }
        s
    }

    fn next_random(&mut self) -> u32 {
        // xorshift32: small, and the same everywhere.
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        x
    }

    /// A ball at the centre, waiting to be served in a direction of its own.
    fn serve_ball(&mut self, index: usize) -> Ball {
        // 16 directions away from the axes, so every serve crosses the arena diagonally.
        const DIRS: [(i32, i32); 4] = [(3, 2), (2, 3), (5, 2), (2, 5)];
        let r = self.next_random();
        let (dx, dy) = DIRS[(r & 3) as usize];
        let sx = if r & 4 == 0 { 1 } else { -1 };
        let sy = if r & 8 == 0 { 1 } else { -1 };
        // SERVE_SPEED over the direction's length (sqrt(13) or sqrt(29), in thousandths):
        // integers, not floats, so every machine serves alike.
        let per_unit = match (dx, dy) {
            (3, 2) | (2, 3) => SERVE_SPEED * 1000 / 3606,
            _ => SERVE_SPEED * 1000 / 5385,
        };
        Ball {
            x: ARENA * SUB / 2 + (index as i32 - 1) * 12 * SUB,
            y: ARENA * SUB / 2,
            vx: sx * dx * per_unit,
            vy: sy * dy * per_unit,
            wait: SERVE_WAIT + 10 * index as u8,
        }
    }

    /// One frame with the four pads (RetroPad bits).
    pub fn step(&mut self, pads: [u16; SIDES]) {
        self.frame = self.frame.wrapping_add(1);
        self.beep = self.beep.saturating_sub(1);
        for f in &mut self.flash {
            *f = f.saturating_sub(1);
        }
        for (side, &p) in pads.iter().enumerate() {
            if p & (pad::START | pad::A | pad::B) != 0 {
                self.joined |= 1 << side;
            }
        }
        for (side, &p) in pads.iter().enumerate() {
            let target = if self.joined & (1 << side) != 0 {
                self.paddles[side] + human_move(side, p)
            } else {
                self.machine_target(side)
            };
            let speed = if self.joined & (1 << side) != 0 {
                HUMAN_SPEED
            } else {
                MACHINE_SPEED
            };
            let delta = (target - self.paddles[side]).clamp(-speed, speed);
            let lo = (PADDLE_FACE + PADDLE_HALF) * SUB;
            self.paddles[side] = (self.paddles[side] + delta).clamp(lo, ARENA * SUB - lo);
        }
        for i in 0..usize::from(self.balls_in_play) {
            self.step_ball(i);
        }
    }

    /// Where the machine's paddle on `side` heads: the nearest ball coming its way.
    fn machine_target(&self, side: usize) -> i32 {
        let mut best: Option<(i32, i32)> = None;
        for b in &self.balls[..usize::from(self.balls_in_play)] {
            if b.wait > 0 {
                continue;
            }
            let (dist, along, coming) = match side {
                0 => (ARENA * SUB - b.y, b.x, b.vy > 0),
                1 => (b.y, b.x, b.vy < 0),
                2 => (b.x, b.y, b.vx < 0),
                _ => (ARENA * SUB - b.x, b.y, b.vx > 0),
            };
            if coming && best.is_none_or(|(d, _)| dist < d) {
                best = Some((dist, along));
            }
        }
        best.map_or(ARENA * SUB / 2, |(_, along)| along)
    }

    fn step_ball(&mut self, i: usize) {
        if self.balls[i].wait > 0 {
            self.balls[i].wait -= 1;
            return;
        }
        let mut b = self.balls[i];
        b.x += b.vx;
        b.y += b.vy;
        let face = PADDLE_FACE * SUB;
        let r = BALL_R * SUB;
        let reach = (PADDLE_HALF + BALL_R) * SUB;
        // (side, the ball's distance past the paddle's face, its position along the wall,
        // moving towards that wall)
        let checks = [
            (0, b.y + r - (ARENA * SUB - face), b.x, b.vy > 0),
            (1, face - (b.y - r), b.x, b.vy < 0),
            (2, face - (b.x - r), b.y, b.vx < 0),
            (3, b.x + r - (ARENA * SUB - face), b.y, b.vx > 0),
        ];
        for (side, past, along, towards) in checks {
            let offset = along - self.paddles[side];
            if towards && (0..=PADDLE_THICK * SUB).contains(&past) && offset.abs() <= reach {
                // Off the paddle: the further from its centre, the sharper the angle.
                let spin = offset / 8;
                match side {
                    0 | 1 => {
                        b.vy = -b.vy;
                        b.vx += spin;
                        b.y += if side == 0 { -past } else { past };
                    }
                    _ => {
                        b.vx = -b.vx;
                        b.vy += spin;
                        b.x += if side == 2 { past } else { -past };
                    }
                }
                speed_up(&mut b);
                self.hits[side] = self.hits[side].saturating_add(1);
                self.beep = 4;
                self.beep_kind = 1;
            }
        }
        let out = [
            b.y - r > ARENA * SUB,
            b.y + r < 0,
            b.x + r < 0,
            b.x - r > ARENA * SUB,
        ];
        if let Some(side) = out.iter().position(|&o| o) {
            self.misses[side] = self.misses[side].saturating_add(1);
            self.flash[side] = 30;
            self.beep = 12;
            self.beep_kind = 2;
            b = self.serve_ball(i);
        }
        self.balls[i] = b;
    }

    /// Writes the state into RAM (`RAM_SIZE` bytes, little-endian fields).
    pub fn encode(&self, ram: &mut [u8; RAM_SIZE]) {
        let mut w = Writer { buf: ram, at: 0 };
        w.u32(self.frame);
        w.u32(self.rng);
        w.u8(self.joined);
        w.u8(self.balls_in_play);
        for p in self.paddles {
            w.i32(p);
        }
        for m in self.misses {
            w.u16(m);
        }
        for h in self.hits {
            w.u16(h);
        }
        for b in self.balls {
            w.i32(b.x);
            w.i32(b.y);
            w.i32(b.vx);
            w.i32(b.vy);
            w.u8(b.wait);
        }
        w.u8(self.beep);
        w.u8(self.beep_kind);
        for f in self.flash {
            w.u8(f);
        }
        debug_assert_eq!(w.at, STATE_BYTES);
    }

    /// Reads the state back from RAM; values out of range are brought into it, so any
    /// bytes (a frontend's write, a damaged savestate) make a playable game.
    pub fn decode(ram: &[u8; RAM_SIZE]) -> State {
        let mut r = Reader { buf: ram, at: 0 };
        let mut s = State::new(1);
        s.frame = r.u32();
        s.rng = r.u32();
        if s.rng == 0 {
            s.rng = 1; // xorshift's one dead state
        }
        s.joined = r.u8() & 0x0f;
        s.balls_in_play = r.u8().clamp(1, MAX_BALLS as u8);
        let lim = ARENA * SUB;
        for p in &mut s.paddles {
            *p = r.i32().clamp(0, lim);
        }
        for m in &mut s.misses {
            *m = r.u16();
        }
        for h in &mut s.hits {
            *h = r.u16();
        }
        for b in &mut s.balls {
            b.x = r.i32().clamp(-lim, 2 * lim);
            b.y = r.i32().clamp(-lim, 2 * lim);
            b.vx = r.i32().clamp(-MAX_SPEED, MAX_SPEED);
            b.vy = r.i32().clamp(-MAX_SPEED, MAX_SPEED);
            b.wait = r.u8();
        }
        s.beep = r.u8();
        s.beep_kind = r.u8();
        for f in &mut s.flash {
            *f = r.u8();
        }
        s
    }
}

/// How far a player's pad moves their paddle this frame (before the speed limit).
fn human_move(side: usize, p: u16) -> i32 {
    let (minus, plus) = if side < 2 {
        (pad::LEFT, pad::RIGHT)
    } else {
        (pad::UP, pad::DOWN)
    };
    match (p & minus != 0, p & plus != 0) {
        (true, false) => -HUMAN_SPEED,
        (false, true) => HUMAN_SPEED,
        _ => 0,
    }
}

/// A little faster after each hit, and never so flat it bounces between two walls for ever.
fn speed_up(b: &mut Ball) {
    b.vx += b.vx.signum() * SUB / 16;
    b.vy += b.vy.signum() * SUB / 16;
    for v in [&mut b.vx, &mut b.vy] {
        *v = (*v).clamp(-MAX_SPEED, MAX_SPEED);
        if v.abs() < MIN_AXIS_SPEED {
            *v = if *v < 0 {
                -MIN_AXIS_SPEED
            } else {
                MIN_AXIS_SPEED
            };
        }
    }
}

struct Writer<'a> {
    buf: &'a mut [u8; RAM_SIZE],
    at: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }
    fn u8(&mut self, v: u8) {
        self.put(&[v]);
    }
    fn u16(&mut self, v: u16) {
        self.put(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.put(&v.to_le_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.put(&v.to_le_bytes());
    }
}

struct Reader<'a> {
    buf: &'a [u8; RAM_SIZE],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        out.copy_from_slice(&self.buf[self.at..self.at + N]);
        self.at += N;
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.take())
    }
}

/// Audio samples per frame at 48 kHz and 60 frames a second (stereo pairs).
pub const AUDIO_FRAMES: usize = 800;
pub const SAMPLE_RATE: u32 = 48_000;

/// The frame's sound: a short square-wave beep for a hit (880 Hz) or a miss (220 Hz),
/// silence otherwise. Its phase comes from the frame number, so rollback replays it exactly.
pub fn audio(state: &State, out: &mut [i16; AUDIO_FRAMES * 2]) {
    let period = match (state.beep, state.beep_kind) {
        (0, _) => 0,
        (_, 1) => SAMPLE_RATE as usize / 880,
        _ => SAMPLE_RATE as usize / 220,
    };
    let base = state.frame as usize * AUDIO_FRAMES;
    for (i, pair) in out.chunks_exact_mut(2).enumerate() {
        let v = if period == 0 {
            0
        } else if (base + i) % period < period / 2 {
            2400
        } else {
            -2400
        };
        pair[0] = v;
        pair[1] = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(frames: u32, pads: impl Fn(u32) -> [u16; SIDES]) -> State {
        let mut s = State::new(2);
        for f in 0..frames {
            s.step(pads(f));
        }
        s
    }

    #[test]
    fn same_pads_same_game_and_ram_round_trips() {
        let pads = |f: u32| {
            [
                if f % 50 < 25 { pad::LEFT } else { pad::RIGHT },
                0,
                pad::START,
                0,
            ]
        };
        let a = run(3000, pads);
        let b = run(3000, pads);
        assert_eq!(a, b);
        let mut ram = [0; RAM_SIZE];
        a.encode(&mut ram);
        assert_eq!(State::decode(&ram), a);
        // Only START (or A or B) joins: player 1 only steered, player 3 joined.
        assert_eq!(a.joined, 0b0100);
        // The machine misses now and then, and the balls keep moving.
        assert!(a.misses.iter().sum::<u16>() > 0, "{a:?}");
        assert!(a.hits.iter().sum::<u16>() > 10, "{a:?}");
    }

    #[test]
    fn different_pads_make_a_different_game() {
        let a = run(2000, |_| [pad::START | pad::LEFT, 0, 0, 0]);
        let b = run(2000, |_| [pad::START | pad::RIGHT, 0, 0, 0]);
        assert_ne!(a.paddles[0], b.paddles[0]);
        assert_ne!(a, b);
    }

    #[test]
    fn a_resumed_game_goes_on_exactly_as_the_first() {
        let pads = |f: u32| [pad::START | if f % 30 < 15 { pad::LEFT } else { pad::RIGHT }; 4];
        let mut first = State::new(3);
        let mut ram = [0; RAM_SIZE];
        for f in 0..500 {
            first.step(pads(f));
        }
        first.encode(&mut ram);
        for f in 500..1500 {
            first.step(pads(f));
        }
        let mut resumed = State::decode(&ram);
        for f in 500..1500 {
            resumed.step(pads(f));
        }
        assert_eq!(first, resumed);
    }

    #[test]
    fn any_ram_bytes_make_a_playable_game() {
        let mut ram = [0xa5; RAM_SIZE];
        let mut s = State::decode(&ram);
        for _ in 0..600 {
            s.step([0; 4]);
        }
        s.encode(&mut ram);
        assert_eq!(State::decode(&ram), s);
        ram = [0; RAM_SIZE];
        let mut z = State::decode(&ram);
        z.step([0; 4]);
        assert_ne!(z.rng, 0);
    }

    #[test]
    fn beeps_follow_the_frame_number() {
        let mut s = State::new(1);
        s.beep = 3;
        s.beep_kind = 1;
        let mut a = [0; AUDIO_FRAMES * 2];
        let mut b = [0; AUDIO_FRAMES * 2];
        audio(&s, &mut a);
        audio(&s, &mut b);
        assert_eq!(a, b);
        assert!(a.iter().any(|&v| v != 0));
        s.beep = 0;
        audio(&s, &mut a);
        assert!(a.iter().all(|&v| v == 0));
    }
}
