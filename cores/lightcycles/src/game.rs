//! The game rules: coin/start, attract demo, rounds, crashes, scoring.
//!
//! `Game` is pure: no clock, no host randomness, no I/O. Call order per video frame:
//! `step(inputs)`, then optionally `render` and `audio` (both only read what `step` produced).

use crate::cpu;
use crate::grid::{step_from, Dir, Grid};
use crate::rng::Rng;
use crate::sound::{Sfx, Synth, AUDIO_SAMPLES};

/// Players (RetroPad ports 0 to 7).
pub const MAX_PLAYERS: usize = 8;
/// Output size in pixels.
pub const SCREEN_W: usize = 320;
pub const SCREEN_H: usize = 240;

/// RetroPad bits as libretro numbers them (`RETRO_DEVICE_ID_JOYPAD_*`).
pub mod pad {
    pub const B: u16 = 1 << 0;
    pub const SELECT: u16 = 1 << 2;
    pub const START: u16 = 1 << 3;
    pub const UP: u16 = 1 << 4;
    pub const DOWN: u16 = 1 << 5;
    pub const LEFT: u16 = 1 << 6;
    pub const RIGHT: u16 = 1 << 7;
    pub const A: u16 = 1 << 8;
}

/// Frames of "get ready" before a round starts moving.
pub const READY_FRAMES: u16 = 90;
/// Frames the result of a round stays on screen.
pub const OVER_FRAMES: u16 = 150;
/// Frames other players have to press START after the first one did.
pub const JOIN_FRAMES: u16 = 300;
/// Frames the match winner stays on screen before attract mode.
pub const MATCH_OVER_FRAMES: u16 = 300;
/// Score for the last rider standing (on top of one point per cell ridden).
pub const ROUND_BONUS: u32 = 100;
/// Most credits the machine counts.
pub const MAX_CREDITS: u8 = 99;
/// CPU riders in the attract demo.
const DEMO_RIDERS: usize = 4;
/// Shortest match the option allows.
pub const MIN_POINTS_TO_WIN: u8 = 1;

/// Start cells and headings; a round with n riders uses the first n, shuffled among them.
pub const SPAWNS: [(u8, u8, Dir); MAX_PLAYERS] = [
    (10, 25, Dir::Right),
    (145, 76, Dir::Left),
    (145, 38, Dir::Left),
    (10, 63, Dir::Right),
    (39, 4, Dir::Down),
    (116, 97, Dir::Up),
    (96, 4, Dir::Down),
    (59, 97, Dir::Up),
];

/// Operator settings (libretro core options). Not part of the saved state: every peer
/// must apply the same settings before the first frame.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Settings {
    /// START joins without a credit.
    pub freeplay: bool,
    /// Cycles move every frame instead of every second frame.
    pub fast: bool,
    /// Points that win a match.
    pub points_to_win: u8,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            freeplay: false,
            fast: false,
            points_to_win: 5,
        }
    }
}

/// What the machine is doing.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Mode {
    /// Demo rounds between CPU riders, title and "insert coin".
    Attract = 0,
    /// Someone pressed START; others may join until the timer runs out.
    Join = 1,
    Match = 2,
    /// A match was won; the winner is shown, then attract mode returns.
    MatchOver = 3,
}

/// Where a round (in attract or match mode) is.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Phase {
    Ready = 0,
    Riding = 1,
    Over = 2,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub enum SeatKind {
    #[default]
    Absent = 0,
    Human = 1,
    Cpu = 2,
}

/// One player position and its standing in the current match.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct Seat {
    pub kind: SeatKind,
    /// Rounds won this match.
    pub points: u8,
    /// Cells ridden plus round bonuses this match.
    pub score: u32,
}

/// A seat's cycle in the current round.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Rider {
    /// Still moving in this round.
    pub riding: bool,
    pub x: u8,
    pub y: u8,
    pub dir: Dir,
    /// Heading taken at the next move (latched from a d-pad press).
    pub next: Dir,
}

impl Default for Rider {
    fn default() -> Self {
        Rider {
            riding: false,
            x: 0,
            y: 0,
            dir: Dir::Right,
            next: Dir::Right,
        }
    }
}

/// A crash explosion; `age == 0` means none.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct Spark {
    pub age: u8,
    pub x: u8,
    pub y: u8,
}

/// Frames a crash explosion is drawn.
pub const SPARK_FRAMES: u8 = 40;

/// `round_winner` / `match_winner` value when nobody won.
pub const NO_WINNER: u8 = 0xFF;

/// The whole machine. Fields are public to the crate for rendering and serialisation.
#[derive(Clone, Debug)]
pub struct Game {
    pub(crate) settings: Settings,
    pub(crate) mode: Mode,
    pub(crate) phase: Phase,
    /// Counts down the current phase (round phase in attract/match, else the mode).
    pub(crate) timer: u16,
    /// Frames since power-on; drives blinking.
    pub(crate) frame: u32,
    /// Frames since the riders started moving this round; moves happen on a cadence.
    pub(crate) round_tick: u32,
    /// Round number within the match, from 1.
    pub(crate) round: u16,
    pub(crate) credits: u8,
    pub(crate) round_winner: u8,
    pub(crate) match_winner: u8,
    /// Best human score this session (since power-on or reset).
    pub(crate) hiscore: u32,
    pub(crate) rng: Rng,
    /// Last frame's pads, to find presses.
    pub(crate) prev_pads: [u16; MAX_PLAYERS],
    pub(crate) seats: [Seat; MAX_PLAYERS],
    pub(crate) riders: [Rider; MAX_PLAYERS],
    pub(crate) sparks: [Spark; MAX_PLAYERS],
    pub(crate) synth: Synth,
    pub(crate) grid: Grid,
    /// This frame's sound, produced by `step`; output only, not saved.
    pub(crate) audio_out: [i16; AUDIO_SAMPLES],
}

impl Default for Game {
    fn default() -> Self {
        Game::new(Settings::default())
    }
}

impl Game {
    /// A powered-on machine in attract mode.
    pub fn new(settings: Settings) -> Game {
        let mut g = Game {
            settings: sanitize(settings),
            mode: Mode::Attract,
            phase: Phase::Ready,
            timer: 0,
            frame: 0,
            round_tick: 0,
            round: 0,
            credits: 0,
            round_winner: NO_WINNER,
            match_winner: NO_WINNER,
            hiscore: 0,
            rng: Rng::default(),
            prev_pads: [0; MAX_PLAYERS],
            seats: [Seat::default(); MAX_PLAYERS],
            riders: [Rider::default(); MAX_PLAYERS],
            sparks: [Spark::default(); MAX_PLAYERS],
            synth: Synth::default(),
            grid: Grid::default(),
            audio_out: [0; AUDIO_SAMPLES],
        };
        g.enter_attract();
        g
    }

    /// Power-cycles the machine (credits and high score are lost), keeping the settings.
    pub fn reset(&mut self) {
        let settings = self.settings;
        *self = Game::new(settings);
    }

    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// Applies new operator settings; they take effect from the next step.
    pub fn set_settings(&mut self, settings: Settings) {
        self.settings = sanitize(settings);
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn credits(&self) -> u8 {
        self.credits
    }

    pub fn hiscore(&self) -> u32 {
        self.hiscore
    }

    pub fn round(&self) -> u16 {
        self.round
    }

    pub fn frame(&self) -> u32 {
        self.frame
    }

    pub fn seats(&self) -> &[Seat; MAX_PLAYERS] {
        &self.seats
    }

    pub fn riders(&self) -> &[Rider; MAX_PLAYERS] {
        &self.riders
    }

    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// Seat that won the last round, if it was not a draw.
    pub fn round_winner(&self) -> Option<usize> {
        winner(self.round_winner)
    }

    /// Seat that won the last match.
    pub fn match_winner(&self) -> Option<usize> {
        winner(self.match_winner)
    }

    /// The trail grid as raw bytes. Writing to it changes the arena.
    pub fn grid_mut(&mut self) -> &mut [u8] {
        self.grid.as_mut_bytes()
    }

    /// Copies this frame's interleaved stereo audio (800 frames, 1600 samples) into `out`.
    pub fn audio(&self, out: &mut [i16]) {
        let n = out.len().min(AUDIO_SAMPLES);
        out[..n].copy_from_slice(&self.audio_out[..n]);
    }

    /// Advances one video frame. `inputs[port]` holds RetroPad bits (see [`pad`]).
    pub fn step(&mut self, inputs: [u16; MAX_PLAYERS]) {
        let mut pressed = [0u16; MAX_PLAYERS];
        for p in 0..MAX_PLAYERS {
            pressed[p] = inputs[p] & !self.prev_pads[p];
        }
        self.prev_pads = inputs;
        self.frame = self.frame.wrapping_add(1);

        if !self.settings.freeplay {
            for (p, &bits) in pressed.iter().enumerate() {
                if bits & pad::SELECT != 0 && self.credits < MAX_CREDITS {
                    self.credits += 1;
                    self.synth.play(Sfx::Coin, pan_of_port(p));
                }
            }
        }

        match self.mode {
            Mode::Attract => {
                let starter = (0..MAX_PLAYERS).find(|&p| pressed[p] & pad::START != 0);
                match starter {
                    Some(p) if self.can_pay() => {
                        self.enter_join(p);
                        // Others pressing START on the same frame join too.
                        self.join_pressed(&pressed);
                    }
                    _ => self.tick_round(&pressed),
                }
            }
            Mode::Join => {
                self.timer = self.timer.saturating_sub(1);
                self.join_pressed(&pressed);
                if self.timer == 0 {
                    self.start_match();
                }
            }
            Mode::Match => self.tick_round(&pressed),
            Mode::MatchOver => {
                self.timer = self.timer.saturating_sub(1);
                if self.timer == 0 {
                    self.enter_attract();
                }
            }
        }

        for s in self.sparks.iter_mut() {
            if s.age > 0 {
                s.age = if s.age >= SPARK_FRAMES { 0 } else { s.age + 1 };
            }
        }

        let hums = if self.mode == Mode::Match && self.phase == Phase::Riding {
            self.riders
                .iter()
                .enumerate()
                .filter(|(_, r)| r.riding)
                .fold(0u8, |m, (i, _)| m | (1 << i))
        } else {
            0
        };
        self.synth.render(hums, &mut self.audio_out);
    }

    fn can_pay(&self) -> bool {
        self.settings.freeplay || self.credits > 0
    }

    fn join(&mut self, port: usize) {
        if !self.settings.freeplay {
            self.credits = self.credits.saturating_sub(1);
        }
        self.seats[port] = Seat {
            kind: SeatKind::Human,
            points: 0,
            score: 0,
        };
        self.synth.play(Sfx::Start, pan_of_port(port));
    }

    /// Seats every absent port that pressed START (while credits last); starts the match
    /// at once when all seats are taken.
    fn join_pressed(&mut self, pressed: &[u16; MAX_PLAYERS]) {
        for (p, &bits) in pressed.iter().enumerate() {
            if bits & pad::START != 0 && self.seats[p].kind == SeatKind::Absent && self.can_pay() {
                self.join(p);
            }
        }
        if self.seats.iter().all(|s| s.kind == SeatKind::Human) {
            self.start_match();
        }
    }

    fn enter_join(&mut self, port: usize) {
        self.seats = [Seat::default(); MAX_PLAYERS];
        self.mode = Mode::Join;
        self.timer = JOIN_FRAMES;
        self.join(port);
    }

    fn start_match(&mut self) {
        let humans = self
            .seats
            .iter()
            .filter(|s| s.kind == SeatKind::Human)
            .count();
        // A round needs two riders: a lone human gets CPU company in the lowest free seats.
        let mut missing = 2usize.saturating_sub(humans);
        for s in self.seats.iter_mut() {
            if missing > 0 && s.kind == SeatKind::Absent {
                s.kind = SeatKind::Cpu;
                missing -= 1;
            }
            s.points = 0;
            s.score = 0;
        }
        self.mode = Mode::Match;
        self.round = 1;
        self.round_winner = NO_WINNER;
        self.match_winner = NO_WINNER;
        self.new_round();
    }

    fn enter_attract(&mut self) {
        self.mode = Mode::Attract;
        self.round = 0;
        for (i, s) in self.seats.iter_mut().enumerate() {
            *s = Seat {
                kind: if i < DEMO_RIDERS {
                    SeatKind::Cpu
                } else {
                    SeatKind::Absent
                },
                points: 0,
                score: 0,
            };
        }
        self.new_round();
    }

    fn new_round(&mut self) {
        self.grid.clear();
        self.sparks = [Spark::default(); MAX_PLAYERS];
        self.round_tick = 0;
        self.round_winner = NO_WINNER;
        let present: Vec<usize> = (0..MAX_PLAYERS)
            .filter(|&i| self.seats[i].kind != SeatKind::Absent)
            .collect();
        // Shuffle which of the first n spawn points each rider gets (Fisher-Yates).
        let mut slots: Vec<usize> = (0..present.len()).collect();
        for i in (1..slots.len()).rev() {
            let j = self.rng.below(i as u32 + 1) as usize;
            slots.swap(i, j);
        }
        self.riders = [Rider::default(); MAX_PLAYERS];
        for (&seat, &slot) in present.iter().zip(slots.iter()) {
            let (x, y, dir) = SPAWNS[slot];
            self.riders[seat] = Rider {
                riding: true,
                x,
                y,
                dir,
                next: dir,
            };
            self.grid.set(x, y, seat as u8 + 1);
        }
        self.phase = Phase::Ready;
        self.timer = READY_FRAMES;
    }

    fn tick_round(&mut self, pressed: &[u16; MAX_PLAYERS]) {
        match self.phase {
            Phase::Ready => {
                self.latch_turns(pressed);
                self.timer = self.timer.saturating_sub(1);
                if self.timer == 0 {
                    self.phase = Phase::Riding;
                }
            }
            Phase::Riding => {
                self.latch_turns(pressed);
                // The attract demo always runs fast so its rounds stay short.
                let fast = self.settings.fast || self.mode == Mode::Attract;
                let period = if fast { 1 } else { 2 };
                if self.round_tick.is_multiple_of(period) {
                    self.steer_cpus();
                    self.move_riders();
                }
                self.round_tick = self.round_tick.wrapping_add(1);
            }
            Phase::Over => {
                self.timer = self.timer.saturating_sub(1);
                if self.timer == 0 {
                    self.after_round();
                }
            }
        }
    }

    /// A press on the d-pad sets the heading for the next move; reversing is not allowed.
    fn latch_turns(&mut self, pressed: &[u16; MAX_PLAYERS]) {
        const DIRS: [(u16, Dir); 4] = [
            (pad::UP, Dir::Up),
            (pad::DOWN, Dir::Down),
            (pad::LEFT, Dir::Left),
            (pad::RIGHT, Dir::Right),
        ];
        for ((r, seat), &bits) in self.riders.iter_mut().zip(&self.seats).zip(pressed) {
            if seat.kind != SeatKind::Human || !r.riding {
                continue;
            }
            for (bit, dir) in DIRS {
                if bits & bit != 0 && dir != r.dir.opposite() {
                    r.next = dir;
                }
            }
        }
    }

    fn steer_cpus(&mut self) {
        for seat in 0..MAX_PLAYERS {
            let r = self.riders[seat];
            if self.seats[seat].kind == SeatKind::Cpu && r.riding {
                self.riders[seat].next = cpu::steer(&self.grid, r.x, r.y, r.dir, &mut self.rng);
            }
        }
    }

    fn move_riders(&mut self) {
        let mut target: [Option<(u8, u8)>; MAX_PLAYERS] = [None; MAX_PLAYERS];
        let mut crashed = [false; MAX_PLAYERS];
        let mut started = 0;
        for seat in 0..MAX_PLAYERS {
            let r = &mut self.riders[seat];
            if !r.riding {
                continue;
            }
            started += 1;
            r.dir = r.next;
            target[seat] = step_from(r.x, r.y, r.dir).filter(|&(x, y)| self.grid.is_free(x, y));
            crashed[seat] = target[seat].is_none();
        }
        // Two cycles entering the same cell both crash.
        for a in 0..MAX_PLAYERS {
            for b in a + 1..MAX_PLAYERS {
                if target[a].is_some() && target[a] == target[b] {
                    crashed[a] = true;
                    crashed[b] = true;
                }
            }
        }
        let scoring = self.mode == Mode::Match;
        for seat in 0..MAX_PLAYERS {
            if let (Some((x, y)), false) = (target[seat], crashed[seat]) {
                self.grid.set(x, y, seat as u8 + 1);
                self.riders[seat].x = x;
                self.riders[seat].y = y;
                if scoring {
                    self.seats[seat].score = self.seats[seat].score.saturating_add(1);
                }
            }
        }
        for (seat, _) in crashed.iter().enumerate().filter(|(_, &c)| c) {
            let r = &mut self.riders[seat];
            r.riding = false;
            self.sparks[seat] = Spark {
                age: 1,
                x: r.x,
                y: r.y,
            };
            // The wreck derezzes: its trail no longer blocks anyone.
            self.grid.erase(seat as u8 + 1);
            if scoring {
                self.synth.play(Sfx::Crash, pan_of_x(r.x));
            }
        }
        let riding: Vec<usize> = (0..MAX_PLAYERS)
            .filter(|&i| self.riders[i].riding)
            .collect();
        if started >= 2 && riding.len() <= 1 {
            self.end_round(riding.first().copied());
        }
        self.update_hiscore();
    }

    fn end_round(&mut self, survivor: Option<usize>) {
        self.phase = Phase::Over;
        self.timer = OVER_FRAMES;
        self.round_winner = survivor.map_or(NO_WINNER, |s| s as u8);
        if self.mode != Mode::Match {
            return;
        }
        if let Some(s) = survivor {
            let seat = &mut self.seats[s];
            seat.points = seat.points.saturating_add(1);
            seat.score = seat.score.saturating_add(ROUND_BONUS);
            self.synth.play(Sfx::RoundWin, 4);
        }
    }

    fn after_round(&mut self) {
        if self.mode != Mode::Match {
            self.new_round();
            return;
        }
        let target = self.settings.points_to_win;
        if let Some(w) = (0..MAX_PLAYERS).find(|&i| self.seats[i].points >= target) {
            self.match_winner = w as u8;
            self.mode = Mode::MatchOver;
            self.timer = MATCH_OVER_FRAMES;
            self.synth.play(Sfx::MatchWin, 4);
        } else {
            self.round = self.round.saturating_add(1);
            self.new_round();
        }
    }

    fn update_hiscore(&mut self) {
        for s in &self.seats {
            if s.kind == SeatKind::Human {
                self.hiscore = self.hiscore.max(s.score);
            }
        }
    }
}

fn sanitize(mut s: Settings) -> Settings {
    s.points_to_win = s.points_to_win.max(MIN_POINTS_TO_WIN);
    s
}

fn winner(v: u8) -> Option<usize> {
    (usize::from(v) < MAX_PLAYERS).then_some(usize::from(v))
}

/// Even ports sound a little left, odd ports a little right.
fn pan_of_port(port: usize) -> u8 {
    if port.is_multiple_of(2) {
        3
    } else {
        5
    }
}

/// Pans a sound to where it happened on the arena.
fn pan_of_x(x: u8) -> u8 {
    (u32::from(x) * 8 / crate::grid::GRID_W as u32) as u8
}
