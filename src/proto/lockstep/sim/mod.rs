//! Simulated players on the shared simulated network, for the lockstep tests. Seeded and on
//! simulated time: [`Simulation::run_until`](crate::net::sim::Simulation::run_until) delivers what is due and jumps the clock to the
//! next deadline (datagram arrival, display slot, protocol timer), so minutes of play take
//! milliseconds. For the tests and the `lockstep_sim` benchmark (public but hidden from the
//! docs): it may import `net`'s simulated network, never `session` or anything above
//! `lockstep`.
//!
//! Player 0 is the host's player: its datagrams go to the server in memory with zero delay.
//! Every other player has its own up and down [`PathSpec`] (delay, jitter, loss, bursts,
//! duplication, reordering, delay steps over time), each a [`Link`] of the [`SimNet`](crate::net::sim::SimNet), and
//! its own clock rate (drift). Each
//! player has display slots at the nominal rate of its own clock, its frames scheduled in
//! them as `app::runner` does under `netplay` (`paced`), and a bot that presses random
//! buttons (one-frame taps and holds).
pub mod measure;
mod run;

pub use run::Sim;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::Rng;

use crate::input::{Inputs, Pad};
use crate::net::conditioner::NetSim;
use crate::net::sim::Link;

use super::paced::Paced;
use super::{Client, ClientEvent, Config, PeerId, Traffic};

/// One direction of a simulated path.
#[derive(Clone, Debug, Default)]
pub struct PathSpec {
    /// One-way delay.
    pub delay: Duration,
    /// Each datagram's delay varies uniformly by up to this much either way.
    pub jitter: Duration,
    /// Chance that a datagram is lost.
    pub loss: f64,
    /// Gilbert-Elliott bursts: chance per datagram to enter a burst and to leave it; every
    /// datagram in a burst is lost.
    pub burst: Option<(f64, f64)>,
    pub duplicate: f64,
    /// Chance that a datagram is held back until the next one overtakes it (reordering
    /// beyond jitter, as `--netsim`'s `reorder`).
    pub reorder: f64,
    /// From each time on, a new one-way delay.
    pub delay_changes: Vec<(Duration, Duration)>,
    /// Everything is lost from this time on.
    pub dead_after: Option<Duration>,
    /// Everything sent within these spans is lost.
    pub outages: Vec<(Duration, Duration)>,
    /// Chance that a datagram is altered on the way (`net::conditioner::corrupt`).
    pub corrupt: f64,
}

impl PathSpec {
    /// A link with half of `rtt` as its one-way delay.
    pub fn rtt_ms(rtt: u64) -> PathSpec {
        PathSpec {
            delay: Duration::from_millis(rtt) / 2,
            ..PathSpec::default()
        }
    }

    /// The one-way jitter of a link whose round trip varies by `rtt_jitter` either way.
    pub fn rtt_jitter_ms(mut self, rtt_jitter: u64) -> PathSpec {
        self.jitter = Duration::from_millis(rtt_jitter) / 2;
        self
    }

    pub fn loss(mut self, p: f64) -> PathSpec {
        self.loss = p;
        self
    }

    pub fn burst(mut self, enter: f64, leave: f64) -> PathSpec {
        self.burst = Some((enter, leave));
        self
    }

    pub fn duplicate(mut self, p: f64) -> PathSpec {
        self.duplicate = p;
        self
    }

    pub fn reorder(mut self, p: f64) -> PathSpec {
        self.reorder = p;
        self
    }

    pub fn rtt_change(mut self, at: Duration, rtt_ms: u64) -> PathSpec {
        self.delay_changes
            .push((at, Duration::from_millis(rtt_ms) / 2));
        self
    }

    pub fn corrupt(mut self, p: f64) -> PathSpec {
        self.corrupt = p;
        self
    }

    /// Everything sent from `at` for `len` is lost.
    pub fn outage(mut self, at: Duration, len: Duration) -> PathSpec {
        self.outages.push((at, at + len));
        self
    }

    pub fn dead_after(mut self, at: Duration) -> PathSpec {
        self.dead_after = Some(at);
        self
    }

    /// This direction as a link of the simulated network started at `base`, its random
    /// draws from `seed`.
    fn link(&self, base: Instant, seed: u64) -> Link {
        let netsim = NetSim {
            delay: self.delay,
            jitter: self.jitter,
            loss: self.loss,
            burst: self.burst,
            dup: self.duplicate,
            reorder: self.reorder,
            corrupt: self.corrupt,
            seed,
            ..NetSim::default()
        };
        let mut outages: Vec<_> = (self.outages.iter())
            .map(|(from, until)| (base + *from, base + *until))
            .collect();
        if let Some(at) = self.dead_after {
            outages.push((base + at, base + FOREVER));
        }
        Link {
            netsim,
            delay_steps: (self.delay_changes.iter())
                .map(|(at, delay)| (base + *at, *delay))
                .collect(),
            outages,
        }
    }
}

/// Longer than any simulated run: a link dead from some time on is down until then.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 86_400);
/// The server's address on the simulated network.
const SERVER: SocketAddr = SocketAddr::new(
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1)),
    5000,
);

/// Player `i`'s address on the simulated network.
fn player_addr(i: usize) -> SocketAddr {
    let [_, _, a, b] = (i as u32).to_be_bytes();
    SocketAddr::from(([10, 1, a, b], 5000))
}

/// One simulated player's path and clock.
#[derive(Clone, Debug)]
pub struct PlayerSpec {
    pub up: PathSpec,
    pub down: PathSpec,
    /// Its clock runs this much faster than the host's (1.005 = +0.5 %).
    pub clock_rate: f64,
}

impl PlayerSpec {
    pub fn symmetric(link: PathSpec) -> PlayerSpec {
        PlayerSpec {
            up: link.clone(),
            down: link,
            clock_rate: 1.0,
        }
    }
}

/// The bots of `--bot` (the same input the real-UDP benchmark plays), or a worst case
/// that changes the pad on every frame.
#[derive(Debug)]
struct Bot {
    rng: SmallRng,
    pad: Pad,
    real: crate::input::Bot,
    frame: u64,
    chaotic: bool,
}

impl Bot {
    fn next(&mut self) -> Pad {
        if self.chaotic {
            self.pad = Pad(self.pad.0.wrapping_add(1 + self.rng.gen::<u16>() % 1000));
            return self.pad;
        }
        self.frame += 1;
        self.pad = self.real.next(self.frame - 1);
        self.pad
    }
}

/// A simulated player: its client, scheduler, bot and what it did.
#[derive(Debug)]
pub struct Player {
    pub client: Client,
    pub id: PeerId,
    rate: f64,
    base: Instant,
    bot: Bot,
    /// Inputs of every frame it emulated, in order.
    pub applied: Vec<Inputs>,
    /// Every sample it pushed, in order.
    pub pushed: Vec<Pad>,
    /// Its frame clock.
    paced: Paced,
    slot: u64,
    /// Display slots and stalled display slots after the warm-up.
    pub slots: u64,
    pub stalled_slots: u64,
    pub events: Vec<(Duration, ClientEvent)>,
    pub traffic_at_warmup: Option<Traffic>,
    /// Rolling hash of the inputs applied so far (stands in for a state checksum).
    checksum: u64,
    /// The frame its machine started from (a late joiner's or spectator's start state).
    pub first: u32,
    /// A spectator's id on the server.
    pub spectator: Option<u8>,
    /// When (simulated time) it ran each frame of `applied`.
    pub ran_at: Vec<Duration>,
    /// Speculation: the most frames it ran ahead in one slot, and what it ran ahead with
    /// (frame, inputs) for the frames it has not run yet.
    pub deepest: usize,
    pub ahead: Vec<(u32, Inputs)>,
    /// Per frame (from `first`), its own input it last ran ahead with.
    pub own_guess: Vec<Option<Pad>>,
    /// Its process was killed: it runs, sends and hears nothing.
    pub killed: bool,
}

impl Player {
    fn local(&self, t: Duration) -> Instant {
        self.base + t.mul_f64(self.rate)
    }

    /// The simulated time at which its clock shows `at` (rounded up, so that its clock
    /// has reached `at` by then).
    fn real(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.base).div_f64(self.rate) + Duration::from_micros(1)
    }

    fn next_tick(&self, frame: f64) -> Duration {
        Duration::from_secs_f64(self.slot as f64 * frame / self.rate)
    }

    /// True once it stopped taking part (lost the server, or killed).
    pub fn gone(&self) -> bool {
        self.killed || self.client.is_lost()
    }
}

#[derive(Clone, Debug)]
pub struct SimConfig {
    pub lockstep: Config,
    /// One per player; `players[0]` is the host's player (its links are ignored: in memory).
    pub players: Vec<PlayerSpec>,
    pub seed: u64,
    /// Chance per stalled slot that the bot changes its pad and pushes it anyway.
    pub stall_push_chance: f64,
    /// Stall, latency and traffic counts start after this.
    pub warmup: Duration,
    /// Run frames at `Client::pace` (false shows what drift does without time sync).
    pub apply_pace: bool,
    /// Every this many frames each player reports a checksum of the inputs it applied (by
    /// default 60, as `netplay`'s `--checksum-interval`: they ride in the CTRLs).
    pub checksum_every: Option<u32>,
    /// This player reports a wrong checksum for this frame.
    pub corrupt_checksum: Option<(PeerId, u32)>,
    /// Bots change their pad on every frame (worst case for the delta coding).
    pub chaotic_bots: bool,
    /// Seed the server with each player's base round trip before frame 0, as `netplay`
    /// does with the one the handshake measured.
    pub handshake_rtt: bool,
    /// The server is a process of its own (`framelock serve`): player 0 is a remote client
    /// like the others, on its own links.
    pub dedicated: bool,
    /// Remote players' datagrams carry tags under per-link keys, as the session layer's do
    /// (`session::keys`): altered ones are dropped before the state machines see them.
    pub sealed: bool,
    /// Speculation, as `app::runner` runs it: after each slot that ran frames, each player
    /// asks `Client::predict` for up to this many frames and shows the last (0: it shows
    /// the last frame it ran); either way it tells `Client::shown`.
    pub speculate: u32,
}

impl SimConfig {
    pub fn new(lockstep: Config, players: Vec<PlayerSpec>, seed: u64) -> SimConfig {
        SimConfig {
            lockstep,
            players,
            seed,
            stall_push_chance: 0.3,
            warmup: Duration::from_secs(5),
            apply_pace: true,
            checksum_every: Some(60),
            corrupt_checksum: None,
            chaotic_bots: false,
            handshake_rtt: true,
            dedicated: false,
            sealed: false,
            speculate: 0,
        }
    }
}
