//! Sound effects synthesised in integer arithmetic: square waves and LFSR noise.
//!
//! The synth advances inside `Game::step`, not when audio is fetched, so a frontend that skips
//! audio for some frames (fast-forward, netplay re-simulation) keeps the same state bytes.

/// Output rate in Hz.
pub const SAMPLE_RATE: u32 = 48_000;
/// Stereo frames per video frame at 60 fps.
pub const AUDIO_FRAMES: usize = (SAMPLE_RATE / 60) as usize;
/// Interleaved i16 samples per video frame (left, right, left, ...).
pub const AUDIO_SAMPLES: usize = AUDIO_FRAMES * 2;
/// Most effects sounding at once; a new one replaces the one closest to its end.
pub const VOICES: usize = 6;
/// Seats that can hum; matches the number of players.
pub const HUMS: usize = 8;

/// Envelope and pitch changes happen once per block of this many samples.
const BLOCK: u8 = 64;
/// 2^32 / SAMPLE_RATE: phase increment per Hz.
const PHASE_PER_HZ: u32 = 89_478;
const HUM_AMPLITUDE: i32 = 260;

/// A sound event raised by the game.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Sfx {
    Coin,
    Start,
    Crash,
    RoundWin,
    MatchWin,
}

/// Waveform of a voice; `Off` voices are silent and free.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub enum Wave {
    #[default]
    Off = 0,
    Square = 1,
    Noise = 2,
}

impl Wave {
    pub fn from_u8(v: u8) -> Option<Wave> {
        match v {
            0 => Some(Wave::Off),
            1 => Some(Wave::Square),
            2 => Some(Wave::Noise),
            _ => None,
        }
    }
}

/// One effect voice. All fields are plain integers so the state serialises byte-exactly.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct Voice {
    pub wave: Wave,
    /// 0 = hard left, 8 = hard right.
    pub pan: u8,
    /// Sample index inside the current block.
    pub block_pos: u8,
    pub phase: u32,
    /// Frequency in Hz (for noise: how often the LFSR shifts).
    pub freq: u32,
    /// Hz added per block (negative: falling pitch).
    pub slide: i32,
    /// Blocks between pitch steps; 0 = no steps.
    pub step_every: u16,
    /// Each step multiplies the frequency by `step_mul / 16`.
    pub step_mul: u16,
    /// Current amplitude.
    pub vol: u16,
    /// Amplitude lost per block.
    pub decay: u16,
    pub blocks_left: u16,
    pub blocks_done: u16,
    /// Noise shift register (15 bits, never zero).
    pub lfsr: u16,
}

impl Voice {
    fn for_sfx(sfx: Sfx, pan: u8) -> Voice {
        let base = Voice {
            pan: pan.min(8),
            lfsr: 1,
            ..Voice::default()
        };
        match sfx {
            Sfx::Coin => Voice {
                wave: Wave::Square,
                freq: 988,
                step_every: 45,
                step_mul: 21,
                vol: 5000,
                decay: 20,
                blocks_left: 130,
                ..base
            },
            Sfx::Start => Voice {
                wave: Wave::Square,
                freq: 220,
                slide: 6,
                vol: 4500,
                decay: 12,
                blocks_left: 220,
                ..base
            },
            Sfx::Crash => Voice {
                wave: Wave::Noise,
                freq: 6000,
                slide: -18,
                vol: 9000,
                decay: 30,
                blocks_left: 300,
                ..base
            },
            Sfx::RoundWin => Voice {
                wave: Wave::Square,
                freq: 523,
                step_every: 50,
                step_mul: 20,
                vol: 5000,
                decay: 12,
                blocks_left: 200,
                ..base
            },
            Sfx::MatchWin => Voice {
                wave: Wave::Square,
                freq: 392,
                step_every: 40,
                step_mul: 24,
                vol: 6000,
                decay: 8,
                blocks_left: 400,
                ..base
            },
        }
    }

    /// Advances one sample and returns its signed amplitude.
    fn sample(&mut self) -> i32 {
        let out = match self.wave {
            Wave::Off => return 0,
            Wave::Square => {
                self.phase = self
                    .phase
                    .wrapping_add(self.freq.wrapping_mul(PHASE_PER_HZ));
                if self.phase & 0x8000_0000 != 0 {
                    i32::from(self.vol)
                } else {
                    -i32::from(self.vol)
                }
            }
            Wave::Noise => {
                let (p, wrapped) = self
                    .phase
                    .overflowing_add(self.freq.wrapping_mul(PHASE_PER_HZ));
                self.phase = p;
                if wrapped {
                    let bit = (self.lfsr ^ (self.lfsr >> 1)) & 1;
                    self.lfsr = ((self.lfsr >> 1) | (bit << 14)) & 0x7FFF;
                }
                if self.lfsr & 1 != 0 {
                    i32::from(self.vol)
                } else {
                    -i32::from(self.vol)
                }
            }
        };
        self.block_pos += 1;
        if self.block_pos >= BLOCK {
            self.block_pos = 0;
            self.end_block();
        }
        out
    }

    fn end_block(&mut self) {
        self.blocks_done = self.blocks_done.wrapping_add(1);
        self.freq = (i64::from(self.freq) + i64::from(self.slide)).clamp(20, 20_000) as u32;
        if self.step_every != 0 && self.blocks_done.is_multiple_of(self.step_every) {
            self.freq = (self.freq * u32::from(self.step_mul) / 16).clamp(20, 20_000);
        }
        self.vol = self.vol.saturating_sub(self.decay);
        self.blocks_left = self.blocks_left.saturating_sub(1);
        if self.blocks_left == 0 || self.vol == 0 {
            *self = Voice::default();
        }
    }
}

/// All audio state: effect voices plus one engine hum per seat.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Synth {
    pub voices: [Voice; VOICES],
    pub hum_phase: [u32; HUMS],
}

impl Synth {
    /// Starts an effect, panned from 0 (left) to 8 (right).
    pub fn play(&mut self, sfx: Sfx, pan: u8) {
        let slot = self
            .voices
            .iter()
            .position(|v| v.wave == Wave::Off)
            .unwrap_or_else(|| {
                // Steal the voice nearest to its end.
                let mut best = 0;
                for (i, v) in self.voices.iter().enumerate() {
                    if v.blocks_left < self.voices[best].blocks_left {
                        best = i;
                    }
                }
                best
            });
        self.voices[slot] = Voice::for_sfx(sfx, pan);
    }

    /// True when no effect is sounding.
    pub fn is_idle(&self) -> bool {
        self.voices.iter().all(|v| v.wave == Wave::Off)
    }

    /// Synthesises one video frame of interleaved stereo into `out`.
    /// Bit `i` of `hums` makes seat `i`'s engine hum.
    pub fn render(&mut self, hums: u8, out: &mut [i16; AUDIO_SAMPLES]) {
        let mut hum_inc = [0u32; HUMS];
        for (seat, inc) in hum_inc.iter_mut().enumerate() {
            if hums & (1 << seat) != 0 {
                *inc = (55 + 9 * seat as u32) * PHASE_PER_HZ;
            }
        }
        let any_voice = !self.is_idle();
        for frame in out.chunks_exact_mut(2) {
            let (mut l, mut r) = (0i32, 0i32);
            if hums != 0 {
                for (seat, (&inc, phase)) in
                    hum_inc.iter().zip(self.hum_phase.iter_mut()).enumerate()
                {
                    if inc == 0 {
                        continue;
                    }
                    *phase = phase.wrapping_add(inc);
                    let s = if *phase & 0x8000_0000 != 0 {
                        HUM_AMPLITUDE
                    } else {
                        -HUM_AMPLITUDE
                    };
                    // Even seats lean left, odd seats right.
                    if seat % 2 == 0 {
                        l += s * 3 / 2;
                        r += s / 2;
                    } else {
                        l += s / 2;
                        r += s * 3 / 2;
                    }
                }
            }
            if any_voice {
                for v in self.voices.iter_mut() {
                    let pan = i32::from(v.pan);
                    let s = v.sample();
                    l += s * (8 - pan) / 8;
                    r += s * pan / 8;
                }
            }
            frame[0] = l.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16;
            frame[1] = r.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn energy(buf: &[i16]) -> i64 {
        buf.iter().map(|&s| i64::from(s).abs()).sum()
    }

    #[test]
    fn silent_when_idle_and_loud_after_an_effect() {
        let mut s = Synth::default();
        let mut out = [0i16; AUDIO_SAMPLES];
        s.render(0, &mut out);
        assert_eq!(energy(&out), 0);
        s.play(Sfx::Crash, 4);
        s.render(0, &mut out);
        assert!(energy(&out) > 1_000_000);
    }

    #[test]
    fn effects_end() {
        let mut s = Synth::default();
        s.play(Sfx::Coin, 0);
        let mut out = [0i16; AUDIO_SAMPLES];
        for _ in 0..60 {
            s.render(0, &mut out);
        }
        assert!(s.is_idle());
        assert_eq!(energy(&out), 0);
    }

    #[test]
    fn pan_places_sound() {
        let mut s = Synth::default();
        s.play(Sfx::RoundWin, 0);
        let mut out = [0i16; AUDIO_SAMPLES];
        s.render(0, &mut out);
        let left: i64 = out.iter().step_by(2).map(|&v| i64::from(v).abs()).sum();
        let right: i64 = out
            .iter()
            .skip(1)
            .step_by(2)
            .map(|&v| i64::from(v).abs())
            .sum();
        assert!(left > 0);
        assert_eq!(right, 0);
    }

    #[test]
    fn voices_are_reused_when_full() {
        let mut s = Synth::default();
        for _ in 0..VOICES + 3 {
            s.play(Sfx::Coin, 4);
        }
        assert!(s.voices.iter().all(|v| v.wave == Wave::Square));
    }
}
