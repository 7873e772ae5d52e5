//! What the session and serve simulations share: a session description and a lockstep
//! client that plays like `app::runner` with a bot at the pad. They run on
//! `net::sim::SimNet`.

use std::time::{Duration, Instant};

use rand::{rngs::SmallRng, Rng, SeedableRng};

use crate::input::{Inputs, Pad};
use crate::lockstep::{self, Client, PeerId};
use crate::session::SessionInfo;

pub const FRAME: Duration = Duration::from_micros(16_667);

pub fn info(player: &str) -> SessionInfo {
    SessionInfo {
        core_name: "lightcycles".into(),
        core_version: "1".into(),
        player_name: player.into(),
        ..SessionInfo::default()
    }
}

/// Deterministic stand-in for a core's checksum: a hash of every input applied so far.
fn fold(sum: u64, inputs: &Inputs) -> u64 {
    inputs.iter().fold(sum, |h, p| {
        (h ^ u64::from(p.0)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A lockstep client and the frames it ran, fed and paced like `app::runner` does: one
/// sample per frame period, up to 4 frames caught up per period.
pub struct Game {
    pub client: Client,
    pub frames: Vec<Inputs>,
    sum: u64,
    pub next_tick: Instant,
    rng: SmallRng,
    pad: Pad,
    /// Added to this player's checksums from this frame on (a desync on purpose).
    pub diverge_at: Option<u32>,
}

impl Game {
    pub fn new(now: Instant, cfg: lockstep::Config, slot: u8, seed: u64) -> Game {
        Game {
            client: Client::new(now, cfg, PeerId(slot)).unwrap(),
            frames: Vec::new(),
            sum: 0xcbf2_9ce4_8422_2325,
            next_tick: now,
            rng: SmallRng::seed_from_u64(seed),
            pad: Pad::NEUTRAL,
            diverge_at: None,
        }
    }

    /// Runs the client's timers once the server's first frames came, as `netplay`'s feed
    /// does: before that, the silence is the lobby's or the start's, not a lost server.
    pub fn timers(&mut self, now: Instant) {
        if self.client.ready_frames() > 0 || self.client.frame().0 > 0 {
            self.client.handle_timeout(now);
        }
    }

    pub fn tick(&mut self, now: Instant, limit: usize) {
        if now < self.next_tick || self.frames.len() >= limit {
            return;
        }
        self.next_tick += FRAME;
        // A bot that changes its pad on about one frame in five.
        // A bot that changes its pad on about one frame in five.
        if self.rng.gen_bool(0.2) {
            self.pad = Pad(self.rng.gen::<u16>() & 0x0fff);
        }
        self.client.push_local_input(now, self.pad);
        for _ in 0..4 {
            let Some((frame, inputs)) = self.client.poll_frame() else {
                break;
            };
            assert_eq!(frame.0 as usize, self.frames.len(), "frames in order");
            self.frames.push(inputs);
            self.sum = fold(self.sum, &inputs);
            if frame.0 % 30 == 29 {
                let bias = u64::from(self.diverge_at.is_some_and(|d| frame.0 >= d));
                self.client.report_checksum(frame, self.sum ^ bias);
            }
            if self.frames.len() >= limit {
                break;
            }
        }
    }
}
