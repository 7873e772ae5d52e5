//! Savestates: a fixed-size, versioned, little-endian encoding of `Game` with no pointers,
//! so equal games always give equal bytes.

use crate::game::{
    Game, Mode, Phase, Rider, Seat, SeatKind, Spark, MAX_CREDITS, MAX_PLAYERS, NO_WINNER,
    SPARK_FRAMES,
};
use crate::grid::{Dir, GRID_CELLS, GRID_H, GRID_W};
use crate::rng::Rng;
use crate::sound::{Synth, Voice, Wave, HUMS, VOICES};

pub const MAGIC: [u8; 4] = *b"LCYC";
/// Bumped whenever the layout changes; older states are refused.
pub const VERSION: u16 = 1;

const HEADER: usize = 4 + 2 + 2;
const SCALARS: usize = 2 + 2 + 4 + 4 + 2 + 1 + 1 + 1 + 4 + 4;
const PADS: usize = 2 * MAX_PLAYERS;
const SEAT: usize = 1 + 1 + 4;
const RIDER: usize = 5;
const SPARK: usize = 3;
const VOICE: usize = 3 + 4 + 4 + 4 + 2 * 7;
/// Bytes of machine state besides the grid.
const REGISTERS: usize =
    SCALARS + PADS + (SEAT + RIDER + SPARK) * MAX_PLAYERS + VOICE * VOICES + 4 * HUMS;
/// Exact size of every savestate.
pub const STATE_SIZE: usize = HEADER + REGISTERS + GRID_CELLS;
/// Size of the libretro system RAM image: the grid, then the registers.
pub const RAM_SIZE: usize = GRID_CELLS + REGISTERS;

/// Why a savestate was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateError {
    /// The buffer is not `STATE_SIZE` bytes long.
    Size {
        expected: usize,
        got: usize,
    },
    BadMagic,
    Version(u16),
    /// A field holds a value the game never produces.
    Invalid(&'static str),
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::Size { expected, got } => {
                write!(f, "savestate is {got} bytes, expected {expected}")
            }
            StateError::BadMagic => write!(f, "not a lightcycles savestate"),
            StateError::Version(v) => write!(f, "unsupported savestate version {v}"),
            StateError::Invalid(what) => write!(f, "invalid savestate field: {what}"),
        }
    }
}

impl std::error::Error for StateError {}

struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Writer<'_> {
    fn bytes(&mut self, b: &[u8]) {
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
    }
    fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }
    fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.bytes(&v.to_le_bytes());
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    // The caller checked the total length, so these slices are always in range.
    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let b = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        b
    }
    fn u8(&mut self) -> u8 {
        self.bytes(1)[0]
    }
    fn u16(&mut self) -> u16 {
        let b = self.bytes(2);
        u16::from_le_bytes([b[0], b[1]])
    }
    fn u32(&mut self) -> u32 {
        let b = self.bytes(4);
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    fn i32(&mut self) -> i32 {
        self.u32() as i32
    }
}

fn mode_from(v: u8) -> Result<Mode, StateError> {
    Ok(match v {
        0 => Mode::Attract,
        1 => Mode::Join,
        2 => Mode::Match,
        3 => Mode::MatchOver,
        _ => return Err(StateError::Invalid("mode")),
    })
}

fn phase_from(v: u8) -> Result<Phase, StateError> {
    Ok(match v {
        0 => Phase::Ready,
        1 => Phase::Riding,
        2 => Phase::Over,
        _ => return Err(StateError::Invalid("phase")),
    })
}

fn kind_from(v: u8) -> Result<SeatKind, StateError> {
    Ok(match v {
        0 => SeatKind::Absent,
        1 => SeatKind::Human,
        2 => SeatKind::Cpu,
        _ => return Err(StateError::Invalid("seat kind")),
    })
}

fn winner_ok(v: u8) -> bool {
    usize::from(v) < MAX_PLAYERS || v == NO_WINNER
}

impl Game {
    /// The savestate: always `STATE_SIZE` bytes.
    pub fn save(&self) -> Vec<u8> {
        let mut out = vec![0; STATE_SIZE];
        self.save_into(&mut out)
            .expect("buffer has exactly STATE_SIZE bytes");
        out
    }

    /// Writes the savestate into the first `STATE_SIZE` bytes of `out`.
    pub fn save_into(&self, out: &mut [u8]) -> Result<(), StateError> {
        if out.len() < STATE_SIZE {
            return Err(StateError::Size {
                expected: STATE_SIZE,
                got: out.len(),
            });
        }
        let mut w = Writer {
            buf: &mut out[..STATE_SIZE],
            pos: 0,
        };
        w.bytes(&MAGIC);
        w.u16(VERSION);
        w.u16(0);
        self.write_registers(&mut w);
        w.bytes(self.grid.as_bytes());
        debug_assert_eq!(w.pos, STATE_SIZE);
        Ok(())
    }

    /// The machine as libretro system RAM: the trail grid first (cell `y * GRID_W + x` at
    /// offset `y * GRID_W + x`), then every other register in savestate order. A frontend
    /// that checksums this RAM sees all of the machine, credits and riders included.
    pub fn ram_image(&self, out: &mut [u8; RAM_SIZE]) {
        out[..GRID_CELLS].copy_from_slice(self.grid.as_bytes());
        let mut w = Writer {
            buf: &mut out[GRID_CELLS..],
            pos: 0,
        };
        self.write_registers(&mut w);
        debug_assert_eq!(w.pos, REGISTERS);
    }

    /// Everything but the header and the grid, in savestate order.
    fn write_registers(&self, w: &mut Writer) {
        w.u8(self.mode as u8);
        w.u8(self.phase as u8);
        w.u16(self.timer);
        w.u32(self.frame);
        w.u32(self.round_tick);
        w.u16(self.round);
        w.u8(self.credits);
        w.u8(self.round_winner);
        w.u8(self.match_winner);
        w.u32(self.hiscore);
        w.u32(self.rng.state());
        for &p in &self.prev_pads {
            w.u16(p);
        }
        for s in &self.seats {
            w.u8(s.kind as u8);
            w.u8(s.points);
            w.u32(s.score);
        }
        for r in &self.riders {
            w.u8(u8::from(r.riding));
            w.u8(r.x);
            w.u8(r.y);
            w.u8(r.dir as u8);
            w.u8(r.next as u8);
        }
        for s in &self.sparks {
            w.u8(s.age);
            w.u8(s.x);
            w.u8(s.y);
        }
        for v in &self.synth.voices {
            w.u8(v.wave as u8);
            w.u8(v.pan);
            w.u8(v.block_pos);
            w.u32(v.phase);
            w.u32(v.freq);
            w.i32(v.slide);
            w.u16(v.step_every);
            w.u16(v.step_mul);
            w.u16(v.vol);
            w.u16(v.decay);
            w.u16(v.blocks_left);
            w.u16(v.blocks_done);
            w.u16(v.lfsr);
        }
        for &h in &self.synth.hum_phase {
            w.u32(h);
        }
    }

    /// Restores a savestate. On error the game is left unchanged. Settings are kept.
    pub fn load(&mut self, data: &[u8]) -> Result<(), StateError> {
        if data.len() != STATE_SIZE {
            return Err(StateError::Size {
                expected: STATE_SIZE,
                got: data.len(),
            });
        }
        let mut r = Reader { buf: data, pos: 0 };
        if r.bytes(4) != MAGIC {
            return Err(StateError::BadMagic);
        }
        let version = r.u16();
        if version != VERSION {
            return Err(StateError::Version(version));
        }
        let _reserved = r.u16();
        // Decode into a copy so a bad state cannot leave the game half-loaded.
        let mut g = self.clone();
        g.mode = mode_from(r.u8())?;
        g.phase = phase_from(r.u8())?;
        g.timer = r.u16();
        g.frame = r.u32();
        g.round_tick = r.u32();
        g.round = r.u16();
        g.credits = r.u8();
        if g.credits > MAX_CREDITS {
            return Err(StateError::Invalid("credits"));
        }
        g.round_winner = r.u8();
        g.match_winner = r.u8();
        if !winner_ok(g.round_winner) || !winner_ok(g.match_winner) {
            return Err(StateError::Invalid("winner"));
        }
        g.hiscore = r.u32();
        g.rng = Rng::from_state(r.u32()).ok_or(StateError::Invalid("rng"))?;
        for p in g.prev_pads.iter_mut() {
            *p = r.u16();
        }
        for s in g.seats.iter_mut() {
            *s = Seat {
                kind: kind_from(r.u8())?,
                points: r.u8(),
                score: r.u32(),
            };
        }
        for rider in g.riders.iter_mut() {
            let riding = match r.u8() {
                0 => false,
                1 => true,
                _ => return Err(StateError::Invalid("rider flag")),
            };
            let (x, y) = (r.u8(), r.u8());
            if usize::from(x) >= GRID_W || usize::from(y) >= GRID_H {
                return Err(StateError::Invalid("rider position"));
            }
            let dir = Dir::from_u8(r.u8()).ok_or(StateError::Invalid("rider heading"))?;
            let next = Dir::from_u8(r.u8()).ok_or(StateError::Invalid("rider heading"))?;
            *rider = Rider {
                riding,
                x,
                y,
                dir,
                next,
            };
        }
        for s in g.sparks.iter_mut() {
            *s = Spark {
                age: r.u8(),
                x: r.u8(),
                y: r.u8(),
            };
            if s.age > SPARK_FRAMES || usize::from(s.x) >= GRID_W || usize::from(s.y) >= GRID_H {
                return Err(StateError::Invalid("spark"));
            }
        }
        let mut synth = Synth::default();
        for v in synth.voices.iter_mut() {
            *v = Voice {
                wave: Wave::from_u8(r.u8()).ok_or(StateError::Invalid("voice wave"))?,
                pan: r.u8(),
                block_pos: r.u8(),
                phase: r.u32(),
                freq: r.u32(),
                slide: r.i32(),
                step_every: r.u16(),
                step_mul: r.u16(),
                vol: r.u16(),
                decay: r.u16(),
                blocks_left: r.u16(),
                blocks_done: r.u16(),
                lfsr: r.u16(),
            };
            if v.pan > 8 || v.block_pos >= 64 || v.freq > 20_000 || v.lfsr > 0x7FFF {
                return Err(StateError::Invalid("voice"));
            }
        }
        for h in synth.hum_phase.iter_mut() {
            *h = r.u32();
        }
        g.synth = synth;
        let cells = r.bytes(GRID_CELLS);
        if cells.iter().any(|&c| usize::from(c) > MAX_PLAYERS) {
            return Err(StateError::Invalid("grid cell"));
        }
        g.grid.as_mut_bytes().copy_from_slice(cells);
        *self = g;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_is_fixed() {
        let g = Game::default();
        assert_eq!(g.save().len(), STATE_SIZE);
        let mut big = vec![0xAA; STATE_SIZE + 10];
        g.save_into(&mut big).unwrap();
        assert!(big[..STATE_SIZE] == g.save()[..]);
        assert!(g.save_into(&mut [0u8; 16]).is_err());
    }

    #[test]
    fn rejects_garbage_and_keeps_the_game() {
        let mut g = Game::default();
        let before = g.save();
        assert!(matches!(
            g.load(&before[..10]),
            Err(StateError::Size { .. })
        ));
        let mut bad = before.clone();
        bad[0] = b'X';
        assert_eq!(g.load(&bad), Err(StateError::BadMagic));
        let mut bad = before.clone();
        bad[4] = 99;
        assert_eq!(g.load(&bad), Err(StateError::Version(99)));
        let mut bad = before.clone();
        bad[HEADER] = 7; // mode
        assert_eq!(g.load(&bad), Err(StateError::Invalid("mode")));
        let mut bad = before.clone();
        *bad.last_mut().unwrap() = 200; // grid cell
        assert_eq!(g.load(&bad), Err(StateError::Invalid("grid cell")));
        assert!(g.save() == before);
    }

    #[test]
    fn ram_image_is_the_grid_then_every_register() {
        let mut g = Game::default();
        for f in 0..200 {
            g.step([if f == 3 { crate::game::pad::SELECT } else { 0 }; MAX_PLAYERS]);
        }
        let state = g.save();
        let mut ram = [0u8; RAM_SIZE];
        g.ram_image(&mut ram);
        assert!(ram[..GRID_CELLS] == state[STATE_SIZE - GRID_CELLS..]);
        assert!(ram[GRID_CELLS..] == state[HEADER..STATE_SIZE - GRID_CELLS]);
        // The registers are in RAM, not only the grid: two machines one coin apart never
        // show the same RAM.
        let mut other = g.clone();
        other.credits -= 1;
        let mut other_ram = [0u8; RAM_SIZE];
        other.ram_image(&mut other_ram);
        assert!(ram != other_ram);
    }
}
