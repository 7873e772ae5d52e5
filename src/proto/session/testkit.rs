//! What the session and serve simulations share: a session description and a lockstep
//! client that plays like `app::runner` with a bot at the pad. They run on
//! `net::sim::SimNet`, driven by `net::sim::Simulation`.

use std::time::{Duration, Instant};

use rand::{rngs::SmallRng, Rng, SeedableRng};

use crate::input::{Inputs, Pad};
use crate::lockstep::paced::Paced;
use crate::lockstep::{self, Client, Frame, PeerId};
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

/// A lockstep client and the frames it ran, fed and paced like `app::runner` does
/// (`lockstep::paced`): a display slot every frame period, a bot at the pad that changes it
/// on about one frame in five, a checksum every 30 frames.
pub struct Game {
    pub client: Client,
    pub frames: Vec<Inputs>,
    sum: u64,
    /// The next display slot.
    pub next_tick: Instant,
    start: Instant,
    slots: u32,
    paced: Paced,
    rng: SmallRng,
    pad: Pad,
    /// Added to this player's checksums from this frame on (a desync on purpose).
    pub diverge_at: Option<u32>,
}

impl Game {
    pub fn new(now: Instant, cfg: lockstep::Config, seat: PeerId, seed: u64) -> Game {
        Game {
            client: Client::new(now, cfg, seat).unwrap(),
            frames: Vec::new(),
            sum: 0xcbf2_9ce4_8422_2325,
            next_tick: now,
            start: now,
            slots: 0,
            paced: Paced::default(),
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

    /// The display slot due at `now`, if one is, running at most `limit` frames in all.
    pub fn tick(&mut self, now: Instant, limit: usize) {
        if now < self.next_tick || self.frames.len() >= limit {
            return;
        }
        let local = FRAME.as_secs_f64() * f64::from(self.slots);
        self.slots += 1;
        self.next_tick = self.start + FRAME * self.slots;
        let pace = self.client.pace();
        let (rng, pad) = (&mut self.rng, &mut self.pad);
        let (frames, sum, diverge_at) = (&mut self.frames, &mut self.sum, self.diverge_at);
        let left = (limit - frames.len()) as u32;
        let next_pad = |fresh: bool| {
            if fresh && rng.gen_bool(0.2) {
                *pad = Pad(rng.gen::<u16>() & 0x0fff);
            }
            *pad
        };
        let ran = |client: &mut Client, frame: Frame, inputs: Inputs| {
            assert_eq!(frame.0 as usize, frames.len(), "frames in order");
            frames.push(inputs);
            *sum = fold(*sum, &inputs);
            if frame.0 % 30 == 29 {
                let bias = u64::from(diverge_at.is_some_and(|d| frame.0 >= d));
                client.report_checksum(frame, *sum ^ bias);
            }
        };
        let (period, client) = (FRAME.as_secs_f64(), &mut self.client);
        self.paced
            .slot(client, now, local, period, pace, left, next_pad, ran);
    }
}
