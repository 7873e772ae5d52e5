//! A synthetic player: random but plausible RetroPad input, deterministic per seed and port.
//!
//! Used by `--bot SEED` for tests, benchmarks and soak runs. The bot is a small state
//! machine advanced once per emulated frame: a direction held for a while (or tapped for
//! one frame), action buttons tapped or held for 5..60 frames, and now and then Start or
//! Select. Each port gets its own random stream and its own temperament (how often it
//! presses buttons, how long it holds them), so eight bots with one seed play differently.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{Button, Pad};

/// The four cardinal directions plus the four diagonals.
const DIRECTIONS: [&[Button]; 8] = [
    &[Button::Up],
    &[Button::Down],
    &[Button::Left],
    &[Button::Right],
    &[Button::Up, Button::Left],
    &[Button::Up, Button::Right],
    &[Button::Down, Button::Left],
    &[Button::Down, Button::Right],
];

/// Buttons the bot fights with. Start and Select are handled separately (rarely pressed).
const ACTIONS: [Button; 6] = [
    Button::B,
    Button::A,
    Button::Y,
    Button::X,
    Button::L,
    Button::R,
];

/// Frames during which a game usually shows its title screen: Start is pressed more often.
const TITLE_FRAMES: u64 = 600;

/// `--bot SEED[:human]`: which bot, and how busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BotSpec {
    pub seed: u64,
    /// The human-rate profile: the pad changes about 10 times a second, as a busy player's
    /// does, instead of on about a third of all frames.
    pub human: bool,
}

impl BotSpec {
    /// The bot for `port`.
    pub fn bot(self, port: usize) -> Bot {
        let mut bot = Bot::for_port(self.seed, port);
        bot.human = self.human;
        bot
    }
}

impl std::str::FromStr for BotSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<BotSpec, String> {
        let (seed, profile) = s.split_once(':').unwrap_or((s, ""));
        let seed = seed
            .parse()
            .map_err(|_| format!("{seed:?} is not a seed (a number)"))?;
        match profile {
            "" => Ok(BotSpec { seed, human: false }),
            "human" => Ok(BotSpec { seed, human: true }),
            other => Err(format!("{other:?} is not a bot profile (human)")),
        }
    }
}

impl std::fmt::Display for BotSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.seed, if self.human { ":human" } else { "" })
    }
}

/// How one bot plays; drawn once per (seed, port).
#[derive(Clone, Debug)]
struct Temperament {
    /// Chance per frame that an idle action button gets pressed.
    press_chance: f64,
    /// Chance that a press is a one-frame tap rather than a hold.
    tap_chance: f64,
    /// Chance that a new direction is a one-frame tap.
    dir_tap_chance: f64,
    /// Chance that a new direction is "let go of the stick".
    neutral_chance: f64,
}

/// A deterministic synthetic player for one port.
#[derive(Clone, Debug)]
pub struct Bot {
    rng: SmallRng,
    style: Temperament,
    /// Frame of the last `next` call and its pad: tells how many frames elapsed, and
    /// answers a repeated call for the same frame without drawing again.
    frame: Option<(u64, Pad)>,
    direction: Option<usize>,
    direction_until: u64,
    /// For each of `ACTIONS`: the first frame at which it is released again.
    held_until: [u64; ACTIONS.len()],
    start_until: u64,
    select_until: u64,
    /// A paused game gets unpaused: Start pressed again at this frame.
    start_again_at: Option<u64>,
    /// The human-rate profile (`BotSpec::human`): the pad holds until this frame.
    human: bool,
    hold_until: u64,
    pad: Pad,
}

impl Bot {
    /// A bot for port 0 (player 1).
    pub fn new(seed: u64) -> Bot {
        Bot::for_port(seed, 0)
    }

    /// A bot for `port`: same seed, different port, different player.
    pub fn for_port(seed: u64, port: usize) -> Bot {
        // Mix the port into the seed (splitmix64 constants) so neighbouring ports do not
        // get correlated streams.
        let mixed = seed
            .wrapping_add((port as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .rotate_left(17)
            ^ 0xBF58_476D_1CE4_E5B9;
        let mut rng = SmallRng::seed_from_u64(mixed);
        let style = Temperament {
            press_chance: rng.gen_range(0.02..0.10),
            tap_chance: rng.gen_range(0.25..0.65),
            dir_tap_chance: rng.gen_range(0.05..0.20),
            neutral_chance: rng.gen_range(0.10..0.30),
        };
        Bot {
            rng,
            style,
            frame: None,
            direction: None,
            direction_until: 0,
            held_until: [0; ACTIONS.len()],
            start_until: 0,
            select_until: 0,
            start_again_at: None,
            human: false,
            hold_until: 0,
            pad: Pad::NEUTRAL,
        }
    }

    /// The pad of the newest frame asked for, if any.
    pub fn last(&self) -> Option<Pad> {
        self.frame.map(|(_, pad)| pad)
    }

    /// The pad for `frame`. Call it with non-decreasing frame numbers; the result depends
    /// only on the seed, the port and the frame, not on how often or how late it is asked
    /// (a netplay loop asks again while it waits for a frame).
    pub fn next(&mut self, frame: u64) -> Pad {
        // Frames skipped since the last call still advance the state, one step each, so a
        // caller that jumps ahead stays deterministic too.
        let first = match self.frame {
            Some((last, pad)) if frame == last => return pad,
            Some((last, _)) if frame > last => last + 1,
            _ => frame,
        };
        for f in first..frame {
            self.step(f);
        }
        let pad = self.step(frame);
        self.frame = Some((frame, pad));
        pad
    }

    fn hold_length(&mut self, tap_chance: f64) -> u64 {
        if self.rng.gen_bool(tap_chance) {
            1
        } else {
            self.rng.gen_range(5..=60)
        }
    }

    fn step(&mut self, frame: u64) -> Pad {
        if self.human {
            return self.step_human(frame);
        }
        let mut pad = Pad::NEUTRAL;

        if frame >= self.direction_until {
            self.direction = if self.rng.gen_bool(self.style.neutral_chance) {
                None
            } else if self.rng.gen_bool(0.85) {
                Some(self.rng.gen_range(0..4))
            } else {
                Some(self.rng.gen_range(4..8))
            };
            let len = self.hold_length(self.style.dir_tap_chance);
            self.direction_until = frame + len;
        }
        if let Some(d) = self.direction {
            for &b in DIRECTIONS[d] {
                pad.set(b, true);
            }
        }

        for (i, &button) in ACTIONS.iter().enumerate() {
            if frame >= self.held_until[i] {
                // A released button stays up for at least one frame so every press is an edge.
                if frame == self.held_until[i] || !self.rng.gen_bool(self.style.press_chance) {
                    continue;
                }
                let len = self.hold_length(self.style.tap_chance);
                self.held_until[i] = frame + len;
            }
            pad.set(button, true);
        }

        if frame >= self.start_until {
            let chance = if frame < TITLE_FRAMES {
                1.0 / 90.0
            } else {
                1.0 / 3000.0
            };
            let again = self.start_again_at == Some(frame);
            if again || (frame > self.start_until && self.rng.gen_bool(chance)) {
                self.start_until = frame + self.rng.gen_range(1..=3);
                // After the title screen a Start usually pauses: unpause a little later.
                self.start_again_at = if !again && frame >= TITLE_FRAMES {
                    Some(frame + self.rng.gen_range(30..=120))
                } else {
                    None
                };
            }
        }
        if frame < self.start_until {
            pad.set(Button::Start, true);
        }

        if frame > self.select_until && self.rng.gen_bool(1.0 / 1500.0) {
            self.select_until = frame + 1;
        }
        if frame < self.select_until {
            pad.set(Button::Select, true);
        }
        pad
    }
}

impl Bot {
    /// The human-rate profile: a new pad every 3 to 9 frames (6 on average, 10 changes a
    /// second): a direction or none, and now and then an action button with it.
    fn step_human(&mut self, frame: u64) -> Pad {
        if frame >= self.hold_until {
            let old = self.pad;
            while self.pad == old {
                let mut pad = Pad::NEUTRAL;
                if !self.rng.gen_bool(self.style.neutral_chance) {
                    for &b in DIRECTIONS[self.rng.gen_range(0..DIRECTIONS.len())] {
                        pad.set(b, true);
                    }
                }
                if self.rng.gen_bool(0.4) {
                    pad.set(ACTIONS[self.rng.gen_range(0..ACTIONS.len())], true);
                }
                if frame < TITLE_FRAMES && self.rng.gen_bool(0.05) {
                    pad.set(Button::Start, true);
                }
                self.pad = pad;
            }
            self.hold_until = frame + self.rng.gen_range(3..=9);
        }
        self.pad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_human_profile_changes_its_pad_about_ten_times_a_second() {
        let spec: BotSpec = "4:human".parse().unwrap();
        assert_eq!(
            spec,
            BotSpec {
                seed: 4,
                human: true
            }
        );
        assert!("4:robot".parse::<BotSpec>().is_err());
        let count = |mut bot: Bot| {
            let pads: Vec<Pad> = (0..3600).map(|f| bot.next(f)).collect();
            pads.windows(2).filter(|w| w[0] != w[1]).count()
        };
        // A minute at 60 fps: about 600 changes.
        let human = count(spec.bot(1));
        assert!((480..=720).contains(&human), "{human} changes a minute");
        assert_ne!(count(Bot::for_port(4, 1)), human);
    }

    fn run(mut bot: Bot, frames: u64) -> Vec<Pad> {
        (0..frames).map(|f| bot.next(f)).collect()
    }

    #[test]
    fn same_seed_same_pads() {
        assert_eq!(run(Bot::new(7), 5000), run(Bot::new(7), 5000));
        assert_ne!(run(Bot::new(7), 5000), run(Bot::new(8), 5000));
    }

    #[test]
    fn ports_play_differently() {
        let runs: Vec<_> = (0..8).map(|p| run(Bot::for_port(1, p), 3000)).collect();
        for a in 0..8 {
            for b in a + 1..8 {
                assert_ne!(runs[a], runs[b], "ports {a} and {b} played identically");
            }
        }
    }

    #[test]
    fn asking_again_for_a_frame_changes_nothing() {
        let once = run(Bot::new(9), 3000);
        let mut bot = Bot::new(9);
        let asked_thrice: Vec<Pad> = (0..3000)
            .map(|f| {
                let pad = bot.next(f);
                assert_eq!(bot.next(f), pad, "frame {f} asked again");
                bot.next(f)
            })
            .collect();
        assert_eq!(asked_thrice, once);
    }

    #[test]
    fn skipping_frames_matches_stepping() {
        let stepped = run(Bot::new(3), 200);
        let mut bot = Bot::new(3);
        bot.next(0);
        assert_eq!(bot.next(150), stepped[150]);
    }

    /// Lengths of the runs where `button` is held.
    fn holds(pads: &[Pad], button: Button) -> Vec<usize> {
        let mut out = Vec::new();
        let mut run = 0;
        for p in pads {
            if p.pressed(button) {
                run += 1;
            } else if run > 0 {
                out.push(run);
                run = 0;
            }
        }
        out
    }

    #[test]
    fn plays_like_a_person() {
        let pads = run(Bot::new(11), 20_000);
        let mut taps = 0;
        let mut long = 0;
        for b in ACTIONS {
            for len in holds(&pads, b) {
                assert!(
                    len == 1 || (5..=60).contains(&len),
                    "{b:?} held {len} frames"
                );
                taps += usize::from(len == 1);
                long += usize::from(len >= 5);
            }
        }
        assert!(taps > 20 && long > 20, "taps {taps}, holds {long}");
        let dir_changes = pads
            .windows(2)
            .filter(|w| (w[0].0 ^ w[1].0) & 0xF0 != 0)
            .count();
        assert!(dir_changes > 200, "only {dir_changes} direction changes");
        assert!(!holds(&pads, Button::Start).is_empty());
        assert!(pads.iter().any(|p| p.pressed(Button::Select)));
        // Never up and down (or left and right) at once.
        assert!(pads
            .iter()
            .all(|p| !(p.pressed(Button::Up) && p.pressed(Button::Down))));
        assert!(pads
            .iter()
            .all(|p| !(p.pressed(Button::Left) && p.pressed(Button::Right))));
    }
}
