//! The network conditioner: impairs this peer's outgoing datagrams (delay, jitter, loss,
//! duplication, reordering, bandwidth) deterministically from a seed, to test netplay on a bad
//! link from a good one. Sans-clock: `push(now, ..)`, then `poll_transmit(now)` at `poll_timeout()`.
//!
//! Syntax (`--netsim`): comma-separated `key=value`, e.g.
//! `delay=50ms,jitter=10ms,loss=5%,dup=1%,reorder=2%,seed=7`
//! - `delay`, `jitter`: durations (`us`, `ms`, `s`); each datagram is delayed by
//!   `delay ± jitter` (uniform; `dist=normal` makes jitter a standard deviation), never < 0.
//! - `loss`, `dup`, `reorder`: probabilities (`5%` or `0.05`). A reordered datagram is held
//!   back until the next one to the same peer has been scheduled, so it arrives after it
//!   (at most `REORDER_HOLD` late).
//! - `rate`: bottleneck bandwidth (`bit`, `kbit`, `mbit`, `gbit` per second, or `B`, `kB`,
//!   `MB` per second); datagrams queue behind each other, with 28 bytes of IP/UDP header each.
//! - `corrupt`: probability (`3%`) that a datagram is altered on the way, as a forger or a
//!   broken middlebox would: one to three bits flipped, cut short, or up to 16 random bytes
//!   appended (a third of the altered ones each).
//! - `burst`: loss in bursts (Gilbert-Elliott), `ENTER/LEAVE` as two probabilities
//!   (`1%/25%`): per datagram, the chance to enter a burst and to leave it; every datagram in
//!   a burst is lost (and counted as dropped), on top of `loss`.
//! - `seed`: RNG seed (default 1), so a run can be repeated exactly.
//!
//! The conditioner is only as punctual as its caller's timer: a datagram leaves when
//! `poll_transmit` is called, however late that is after its due time. The stats count the
//! datagrams that left `LATE` or more after it (`released_late`, `late_max`), so a benchmark
//! shows how much a busy or virtualised machine added to the configured link.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::{Duration, Instant};

use rand::{rngs::SmallRng, Rng, SeedableRng};
use thiserror::Error;

use crate::wire::Transmit;

/// A datagram released this long or longer after its due time counts as late.
pub const LATE: Duration = Duration::from_millis(4);
/// Longest a reordered datagram waits for a later one to overtake it.
pub const REORDER_HOLD: Duration = Duration::from_millis(100);
const KEYS: &str = "delay, jitter, dist, loss, burst, dup, reorder, corrupt, rate, seed";
/// Most random bytes `corrupt` appends to a datagram.
const MAX_APPENDED: usize = 16;

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum JitterDist {
    #[default]
    Uniform,
    Normal,
}

/// Link impairment settings, parsed from the `--netsim` syntax.
#[derive(Clone, Debug, PartialEq)]
pub struct NetSim {
    pub delay: Duration,
    pub jitter: Duration,
    pub dist: JitterDist,
    pub loss: f64,
    pub dup: f64,
    pub reorder: f64,
    /// Chance that a datagram is altered (bits flipped, cut short or padded).
    pub corrupt: f64,
    /// Bits per second; `None` = unlimited.
    pub rate: Option<u64>,
    /// Loss bursts: chance per datagram to enter a burst and to leave it.
    pub burst: Option<(f64, f64)>,
    pub seed: u64,
}

impl Default for NetSim {
    fn default() -> Self {
        NetSim {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            dist: JitterDist::Uniform,
            loss: 0.0,
            dup: 0.0,
            reorder: 0.0,
            corrupt: 0.0,
            rate: None,
            burst: None,
            seed: 1,
        }
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum NetSimError {
    #[error("netsim: unknown key '{0}' (known: {KEYS})")]
    UnknownKey(String),
    #[error("netsim: '{0}' is not key=value")]
    NotKeyValue(String),
    #[error("netsim: bad value '{value}' for {key}: expected {expected}")]
    BadValue {
        key: String,
        value: String,
        expected: &'static str,
    },
}

impl FromStr for NetSim {
    type Err = NetSimError;

    fn from_str(s: &str) -> Result<NetSim, NetSimError> {
        let mut sim = NetSim::default();
        let s = s.trim();
        if s.is_empty() || s == "off" || s == "none" {
            return Ok(sim);
        }
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| NetSimError::NotKeyValue(part.into()))?;
            let (key, value) = (key.trim(), value.trim());
            let bad = |expected| NetSimError::BadValue {
                key: key.into(),
                value: value.into(),
                expected,
            };
            match key {
                "delay" => {
                    sim.delay = parse_duration(value).ok_or_else(|| bad("a duration like 50ms"))?
                }
                "jitter" => {
                    sim.jitter = parse_duration(value).ok_or_else(|| bad("a duration like 10ms"))?
                }
                "dist" => {
                    sim.dist = match value {
                        "uniform" => JitterDist::Uniform,
                        "normal" => JitterDist::Normal,
                        _ => return Err(bad("uniform or normal")),
                    }
                }
                "loss" => {
                    sim.loss =
                        parse_prob(value).ok_or_else(|| bad("a probability like 5% or 0.05"))?
                }
                "dup" => {
                    sim.dup =
                        parse_prob(value).ok_or_else(|| bad("a probability like 1% or 0.01"))?
                }
                "reorder" => {
                    sim.reorder =
                        parse_prob(value).ok_or_else(|| bad("a probability like 2% or 0.02"))?
                }
                "corrupt" => {
                    sim.corrupt =
                        parse_prob(value).ok_or_else(|| bad("a probability like 3% or 0.03"))?
                }
                "rate" => {
                    sim.rate = Some(
                        parse_rate(value).ok_or_else(|| bad("a bandwidth like 1mbit or 500kB"))?,
                    )
                }
                "burst" => {
                    let (enter, leave) = value
                        .split_once('/')
                        .and_then(|(a, b)| Some((parse_prob(a.trim())?, parse_prob(b.trim())?)))
                        .ok_or_else(|| bad("two probabilities like 1%/25% (enter/leave)"))?;
                    sim.burst = Some((enter, leave));
                }
                "seed" => sim.seed = value.parse().map_err(|_| bad("an unsigned integer"))?,
                _ => return Err(NetSimError::UnknownKey(key.into())),
            }
        }
        Ok(sim)
    }
}

impl fmt::Display for NetSim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "delay={}us,jitter={}us",
            self.delay.as_micros(),
            self.jitter.as_micros()
        )?;
        if self.dist == JitterDist::Normal {
            write!(f, ",dist=normal")?;
        }
        write!(
            f,
            ",loss={}%,dup={}%,reorder={}%",
            self.loss * 100.0,
            self.dup * 100.0,
            self.reorder * 100.0
        )?;
        if self.corrupt > 0.0 {
            write!(f, ",corrupt={}%", self.corrupt * 100.0)?;
        }
        if let Some(rate) = self.rate {
            write!(f, ",rate={rate}bit")?;
        }
        if let Some((enter, leave)) = self.burst {
            write!(f, ",burst={}%/{}%", enter * 100.0, leave * 100.0)?;
        }
        write!(f, ",seed={}", self.seed)
    }
}

fn split_number(v: &str) -> Option<(f64, &str)> {
    let end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let n: f64 = v[..end].parse().ok()?;
    (n.is_finite() && n >= 0.0).then_some((n, v[end..].trim()))
}

fn parse_duration(v: &str) -> Option<Duration> {
    let (n, unit) = split_number(v)?;
    let secs = match unit {
        "us" | "µs" => n / 1e6,
        "ms" => n / 1e3,
        "s" => n,
        _ => return None,
    };
    Duration::try_from_secs_f64(secs).ok()
}

fn parse_prob(v: &str) -> Option<f64> {
    let p = match v.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().ok()? / 100.0,
        None => v.parse::<f64>().ok()?,
    };
    (0.0..=1.0).contains(&p).then_some(p)
}

fn parse_rate(v: &str) -> Option<u64> {
    let (n, unit) = split_number(v)?;
    let bits = match unit {
        "bit" | "bps" => n,
        "kbit" | "kbps" => n * 1e3,
        "mbit" | "mbps" => n * 1e6,
        "gbit" | "gbps" => n * 1e9,
        "B" => n * 8.0,
        "kB" | "KB" => n * 8e3,
        "MB" => n * 8e6,
        _ => return None,
    };
    (bits >= 1.0 && bits < u64::MAX as f64).then_some(bits as u64)
}

/// Alters a datagram as `corrupt` does: flips one to three bits, cuts it short, or appends
/// up to `MAX_APPENDED` random bytes (a third of the time each).
pub fn corrupt(rng: &mut SmallRng, mut bytes: Vec<u8>) -> Vec<u8> {
    match rng.gen_range(0..3) {
        0 if !bytes.is_empty() => {
            for _ in 0..rng.gen_range(1..=3) {
                let bit = rng.gen_range(0..bytes.len() * 8);
                bytes[bit / 8] ^= 1 << (bit % 8);
            }
        }
        1 if !bytes.is_empty() => {
            let len = rng.gen_range(0..bytes.len());
            bytes.truncate(len);
        }
        _ => {
            let n = rng.gen_range(1..=MAX_APPENDED);
            bytes.extend((0..n).map(|_| rng.gen::<u8>()));
        }
    }
    bytes
}

/// Counts of what the conditioner did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConditionerStats {
    pub pushed: u64,
    pub dropped: u64,
    pub duplicated: u64,
    pub reordered: u64,
    /// Datagrams altered on the way (`corrupt`).
    pub corrupted: u64,
    pub released: u64,
    /// Released `LATE` or more after the due time: delay the machine added.
    pub released_late: u64,
    /// The latest release after a due time.
    pub late_max: Duration,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Queued {
    due: Instant,
    order: u64,
    to: SocketAddr,
    bytes: Vec<u8>,
    /// Altered on the way (`corrupt`; not when the alteration happened to change nothing).
    altered: bool,
}

/// A datagram held back to be reordered: released after the next datagram to the same peer.
#[derive(Debug)]
struct Held {
    packet: Queued,
    /// When it would have been due without reordering.
    base: Instant,
}

#[derive(Debug)]
pub struct Conditioner {
    sim: NetSim,
    rng: SmallRng,
    queue: BinaryHeap<Reverse<Queued>>,
    held: Vec<Held>,
    link_free: Option<Instant>,
    order: u64,
    stats: ConditionerStats,
    /// Inside a loss burst (`burst`).
    in_burst: bool,
}

impl Conditioner {
    pub fn new(sim: NetSim) -> Conditioner {
        Conditioner {
            rng: SmallRng::seed_from_u64(sim.seed),
            sim,
            queue: BinaryHeap::new(),
            held: Vec::new(),
            link_free: None,
            order: 0,
            stats: ConditionerStats::default(),
            in_burst: false,
        }
    }

    pub fn settings(&self) -> &NetSim {
        &self.sim
    }

    /// From now on each datagram pushed is delayed by `delay` (± jitter): a route that
    /// changed. Those already queued keep their due times.
    pub fn set_delay(&mut self, delay: Duration) {
        self.sim.delay = delay;
    }

    pub fn stats(&self) -> ConditionerStats {
        self.stats
    }

    /// Datagrams queued or held.
    pub fn len(&self) -> usize {
        self.queue.len() + self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn sample_delay(&mut self) -> Duration {
        let jitter = self.sim.jitter.as_secs_f64();
        let offset = match self.sim.dist {
            _ if jitter == 0.0 => 0.0,
            JitterDist::Uniform => self.rng.gen_range(-jitter..=jitter),
            JitterDist::Normal => {
                // Box-Muller: one standard normal sample from two uniforms.
                let u1: f64 = 1.0 - self.rng.gen::<f64>();
                let u2: f64 = self.rng.gen();
                jitter * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
            }
        };
        Duration::from_secs_f64((self.sim.delay.as_secs_f64() + offset).max(0.0))
    }

    /// Takes a datagram sent at `now`; it comes back out of `poll_transmit` (or never, if lost).
    pub fn push(&mut self, now: Instant, to: SocketAddr, bytes: Vec<u8>) {
        self.stats.pushed += 1;
        // Drawn only when asked for, so that a seed without bursts impairs as before.
        if let Some((enter, leave)) = self.sim.burst {
            let p = if self.in_burst { 1.0 - leave } else { enter };
            self.in_burst = self.rng.gen::<f64>() < p;
            if self.in_burst {
                self.stats.dropped += 1;
                return;
            }
        }
        if self.rng.gen::<f64>() < self.sim.loss {
            self.stats.dropped += 1;
            return;
        }
        // Drawn only when asked for, so the other impairments of a seed stay as they were.
        let (bytes, altered) = if self.sim.corrupt > 0.0 && self.rng.gen::<f64>() < self.sim.corrupt
        {
            self.stats.corrupted += 1;
            let altered = corrupt(&mut self.rng, bytes.clone());
            let changed = altered != bytes;
            (altered, changed)
        } else {
            (bytes, false)
        };
        let mut copies = vec![bytes];
        if self.rng.gen::<f64>() < self.sim.dup {
            self.stats.duplicated += 1;
            copies.push(copies[0].clone());
        }
        for bytes in copies {
            let mut start = now;
            if let Some(rate) = self.sim.rate {
                // Serialise through the bottleneck: wait for the link, then occupy it.
                start = self.link_free.map_or(now, |t| t.max(now));
                let bits = (bytes.len() as u64 + 28) * 8;
                let busy = Duration::from_secs_f64(bits as f64 / rate as f64);
                self.link_free = Some(start + busy);
                start += busy;
            }
            let due = start + self.sample_delay();
            self.release_held(to, due);
            self.order += 1;
            let packet = Queued {
                due,
                order: self.order,
                to,
                bytes,
                altered,
            };
            if self.rng.gen::<f64>() < self.sim.reorder {
                self.stats.reordered += 1;
                self.held.push(Held {
                    packet: Queued {
                        due: due + REORDER_HOLD,
                        ..packet
                    },
                    base: due,
                });
            } else {
                self.queue.push(Reverse(packet));
            }
        }
    }

    /// Schedules datagrams held for `to` just after `next_due`, the due time of the datagram
    /// that now overtakes them.
    fn release_held(&mut self, to: SocketAddr, next_due: Instant) {
        let mut i = 0;
        while i < self.held.len() {
            if self.held[i].packet.to == to {
                let Held { mut packet, base } = self.held.swap_remove(i);
                let after = base.max(next_due + Duration::from_micros(1));
                packet.due = packet.due.min(after);
                self.queue.push(Reverse(packet));
            } else {
                i += 1;
            }
        }
    }

    /// The next datagram whose time has come, earliest first.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.poll_marked(now).map(|(t, _)| t)
    }

    /// [`Conditioner::poll_transmit`], and whether `corrupt` altered that datagram (so that
    /// a simulation can tell which of those that arrived were forged on the way).
    pub fn poll_marked(&mut self, now: Instant) -> Option<(Transmit, bool)> {
        // Held datagrams that nothing overtook in time go out anyway.
        let mut i = 0;
        while i < self.held.len() {
            if self.held[i].packet.due <= now {
                let held = self.held.swap_remove(i);
                self.queue.push(Reverse(held.packet));
            } else {
                i += 1;
            }
        }
        if self.queue.peek()?.0.due > now {
            return None;
        }
        let Reverse(packet) = self.queue.pop()?;
        self.stats.released += 1;
        let late = now.saturating_duration_since(packet.due);
        self.stats.released_late += u64::from(late >= LATE);
        self.stats.late_max = self.stats.late_max.max(late);
        let t = Transmit::new(packet.to, packet.bytes);
        Some((t, packet.altered))
    }

    /// When `poll_transmit` next has something.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let queued = self.queue.peek().map(|p| p.0.due);
        let held = self.held.iter().map(|h| h.packet.due).min();
        queued.into_iter().chain(held).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_syntax() {
        let sim: NetSim = "delay=50ms,jitter=10ms,loss=5%,dup=1%,reorder=2%,seed=7"
            .parse()
            .unwrap();
        assert_eq!(sim.delay, Duration::from_millis(50));
        assert_eq!(sim.jitter, Duration::from_millis(10));
        assert_eq!(
            (sim.loss, sim.dup, sim.reorder, sim.seed),
            (0.05, 0.01, 0.02, 7)
        );
        assert_eq!(sim.rate, None);
        let sim: NetSim = " rate=2mbit , dist=normal, loss=0.25, delay=1.5s"
            .parse()
            .unwrap();
        assert_eq!(sim.rate, Some(2_000_000));
        assert_eq!(sim.dist, JitterDist::Normal);
        assert_eq!(sim.loss, 0.25);
        assert_eq!(sim.delay, Duration::from_millis(1500));
        assert_eq!("off".parse::<NetSim>().unwrap(), NetSim::default());
        let again: NetSim = sim.to_string().parse().unwrap();
        assert_eq!(again, sim);
    }

    #[test]
    fn parse_errors_name_the_bad_key_or_value() {
        let err = |s: &str| s.parse::<NetSim>().unwrap_err().to_string();
        assert_eq!(
            err("delay=50"),
            "netsim: bad value '50' for delay: expected a duration like 50ms"
        );
        assert!(err("lag=5ms").contains("unknown key 'lag'"));
        assert!(err("loss=150%").contains("bad value '150%' for loss"));
        assert!(err("loss=-1%").contains("for loss"));
        assert!(err("delay").contains("'delay' is not key=value"));
        assert!(err("rate=fast").contains("for rate"));
        assert!(err("seed=x").contains("for seed"));
    }

    fn addr() -> SocketAddr {
        "127.0.0.1:9".parse().unwrap()
    }

    /// Pushes `n` numbered datagrams 1 ms apart and returns (arrival, number) in arrival order.
    fn run(sim: &str, n: u32) -> (Vec<(Duration, u32)>, ConditionerStats) {
        let mut c = Conditioner::new(sim.parse().unwrap());
        let t0 = Instant::now();
        let mut out = Vec::new();
        let drain = |c: &mut Conditioner, now: Instant, out: &mut Vec<(Duration, u32)>| {
            while let Some(Transmit { bytes: b, .. }) = c.poll_transmit(now) {
                out.push((now - t0, u32::from_le_bytes(b[..4].try_into().unwrap())));
            }
        };
        for i in 0..n {
            let now = t0 + Duration::from_millis(i as u64);
            // Deliver at exact due times so arrival times are measured precisely.
            while let Some(due) = c.poll_timeout().filter(|&d| d <= now) {
                drain(&mut c, due, &mut out);
            }
            c.push(now, addr(), i.to_le_bytes().to_vec());
        }
        while let Some(due) = c.poll_timeout() {
            drain(&mut c, due, &mut out);
        }
        (out, c.stats())
    }

    const N: u32 = 100_000;

    #[test]
    fn releases_after_the_due_time_are_counted_as_late() {
        let (_, punctual) = run("delay=10ms,jitter=5ms", 1000);
        assert_eq!((punctual.released, punctual.released_late), (1000, 0));
        assert_eq!(punctual.late_max, Duration::ZERO);
        // Polled 3 ms and 7 ms after the due time: only the second counts.
        let mut c = Conditioner::new("delay=10ms".parse().unwrap());
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        c.push(t0, addr(), vec![1]);
        c.push(t0 + ms(5), addr(), vec![2]);
        assert!(c.poll_transmit(t0 + ms(13)).is_some());
        assert!(c.poll_transmit(t0 + ms(13)).is_none());
        assert!(c.poll_transmit(t0 + ms(22)).is_some());
        let s = c.stats();
        assert_eq!((s.released, s.released_late, s.late_max), (2, 1, ms(7)));
    }

    #[test]
    fn corrupt_alters_the_share_asked_for_by_flips_cuts_and_padding() {
        let mut c = Conditioner::new("corrupt=3%,seed=4".parse().unwrap());
        let t0 = Instant::now();
        let original: Vec<u8> = (0..40).collect();
        let (mut flipped, mut cut, mut padded) = (0, 0, 0);
        for _ in 0..N {
            c.push(t0, addr(), original.clone());
            let got = c.poll_transmit(t0).expect("nothing lost").bytes;
            match got.len().cmp(&original.len()) {
                std::cmp::Ordering::Less => cut += 1,
                std::cmp::Ordering::Greater => {
                    assert!(got.len() <= original.len() + MAX_APPENDED);
                    assert_eq!(got[..original.len()], original[..]);
                    padded += 1;
                }
                std::cmp::Ordering::Equal if got != original => {
                    let bits: u32 = got
                        .iter()
                        .zip(&original)
                        .map(|(a, b)| (a ^ b).count_ones())
                        .sum();
                    assert!((1..=3).contains(&bits), "{bits} bits flipped");
                    flipped += 1;
                }
                std::cmp::Ordering::Equal => {}
            }
        }
        let altered = flipped + cut + padded;
        // Two flips of the same bit cancel out: a handful of altered ones look untouched.
        assert!(c.stats().corrupted >= altered && c.stats().corrupted - altered < 30);
        let share = altered as f64 / f64::from(N);
        assert!((share - 0.03).abs() < 0.003, "{share}");
        for kind in [flipped, cut, padded] {
            assert!(
                kind * 4 > altered,
                "{flipped} flipped, {cut} cut, {padded} padded"
            );
        }
        // Without corrupt a seed impairs as before: no random draw was added.
        assert_eq!(
            run("loss=5%,dup=1%,seed=3", 1000),
            run("loss=5%,dup=1%,corrupt=0%,seed=3", 1000)
        );
    }

    #[test]
    fn bursts_lose_runs_of_datagrams_at_the_stationary_share() {
        let sim: NetSim = "burst=1%/25%,seed=6".parse().unwrap();
        assert_eq!(sim.burst, Some((0.01, 0.25)));
        assert_eq!(sim.to_string().parse::<NetSim>().unwrap(), sim);
        assert!("burst=1%".parse::<NetSim>().is_err());
        assert!("burst=1%/x".parse::<NetSim>().is_err());
        let (out, stats) = run("burst=1%/25%,seed=6", N);
        let mut seen = vec![false; N as usize];
        for (_, i) in &out {
            seen[*i as usize] = true;
        }
        // In a burst a fraction enter / (enter + leave) of the time; its runs last 1 / leave
        // datagrams on average (4 here), where independent loss at that share rarely loses
        // two in a row.
        let lost = seen.iter().filter(|s| !**s).count();
        assert_eq!(lost as u64, stats.dropped);
        let share = lost as f64 / f64::from(N);
        assert!((share - 0.01 / 0.26).abs() < 0.006, "{share}");
        let runs = seen.windows(2).filter(|w| w[0] && !w[1]).count();
        let mean_run = lost as f64 / runs as f64;
        assert!((mean_run - 4.0).abs() < 0.4, "{mean_run}");
        // Without bursts a seed impairs as before: no random draw was added.
        assert_eq!(run("loss=5%,seed=3", 1000), run("loss=5%,seed=3", 1000));
    }

    #[test]
    fn set_delay_moves_what_is_pushed_from_then_on() {
        let mut c = Conditioner::new("delay=10ms".parse().unwrap());
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        c.push(t0, addr(), vec![1]);
        c.set_delay(ms(50));
        c.push(t0 + ms(1), addr(), vec![2]);
        assert_eq!(c.poll_timeout(), Some(t0 + ms(10)));
        assert!(c.poll_transmit(t0 + ms(10)).is_some());
        assert_eq!(c.poll_timeout(), Some(t0 + ms(51)));
    }

    #[test]
    fn poll_marked_tells_which_datagrams_were_altered() {
        let mut c = Conditioner::new("corrupt=20%,seed=2".parse().unwrap());
        let t0 = Instant::now();
        let original = vec![7u8; 30];
        let mut marked = 0;
        for _ in 0..5000 {
            c.push(t0, addr(), original.clone());
            let (t, altered) = c.poll_marked(t0).expect("nothing lost");
            assert_eq!(altered, t.bytes != original);
            marked += u64::from(altered);
        }
        // Those whose same bit flipped twice count as corrupted but arrive unchanged.
        let corrupted = c.stats().corrupted;
        assert!(
            marked <= corrupted && corrupted - marked < 10,
            "{marked} {corrupted}"
        );
        assert!(marked > 800, "{marked}");
    }

    #[test]
    fn realised_loss_and_dup_rates_match_the_settings() {
        let (out, stats) = run("loss=5%,dup=1%,seed=3", N);
        let loss = stats.dropped as f64 / N as f64;
        let dup = stats.duplicated as f64 / N as f64;
        assert!((loss - 0.05).abs() < 0.003, "loss {loss}");
        assert!((dup - 0.01).abs() < 0.0015, "dup {dup}");
        let mut seen = vec![0u32; N as usize];
        for (_, i) in &out {
            seen[*i as usize] += 1;
        }
        let lost = seen.iter().filter(|&&c| c == 0).count() as u64;
        let doubled = seen.iter().filter(|&&c| c == 2).count() as u64;
        assert_eq!((lost, doubled), (stats.dropped, stats.duplicated));
        assert_eq!(
            out.len() as u64,
            N as u64 - stats.dropped + stats.duplicated
        );
    }

    #[test]
    fn reordered_datagrams_arrive_after_their_successor() {
        let (out, stats) = run("delay=20ms,reorder=2%,seed=5", N);
        // Without jitter the only inversions come from reordering: a datagram that arrives
        // after datagram i + 1.
        let mut pos = vec![0usize; N as usize];
        for (p, (_, i)) in out.iter().enumerate() {
            pos[*i as usize] = p;
        }
        let late = (0..N as usize - 1).filter(|&i| pos[i] > pos[i + 1]).count();
        let rate = late as f64 / N as f64;
        assert!((rate - 0.02).abs() < 0.002, "reorder {rate}");
        assert!(late as u64 <= stats.reordered);
        assert_eq!(out.len(), N as usize);
    }

    #[test]
    fn delay_distribution_has_the_right_mean_spread_and_floor() {
        let (out, _) = run("delay=50ms,jitter=10ms,seed=9", N);
        let delays: Vec<f64> = out
            .iter()
            .map(|(at, i)| at.as_secs_f64() * 1e3 - *i as f64)
            .collect();
        let mean = delays.iter().sum::<f64>() / delays.len() as f64;
        let min = delays.iter().cloned().fold(f64::MAX, f64::min);
        let max = delays.iter().cloned().fold(f64::MIN, f64::max);
        // Uniform on [40, 60]: mean 50, std 20/sqrt(12) = 5.77.
        let std =
            (delays.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / delays.len() as f64).sqrt();
        assert!((mean - 50.0).abs() < 0.1, "mean {mean}");
        assert!((std - 5.77).abs() < 0.1, "std {std}");
        assert!(min >= 40.0 - 1e-6 && max <= 60.0 + 1e-6, "{min}..{max}");

        let (out, _) = run("delay=5ms,jitter=10ms,dist=normal,seed=9", N);
        let delays: Vec<f64> = out
            .iter()
            .map(|(at, i)| at.as_secs_f64() * 1e3 - *i as f64)
            .collect();
        let min = delays.iter().cloned().fold(f64::MAX, f64::min);
        let zeros = delays.iter().filter(|&&d| d.abs() < 1e-6).count() as f64 / N as f64;
        assert!(min >= -1e-6, "clamped at 0: {min}");
        // P(N(5, 10) < 0) = P(Z < -0.5) = 0.3085.
        assert!((zeros - 0.3085).abs() < 0.01, "clamped share {zeros}");
    }

    #[test]
    fn same_seed_same_run() {
        let a = run(
            "delay=10ms,jitter=5ms,loss=10%,dup=5%,reorder=5%,seed=11",
            5000,
        );
        let b = run(
            "delay=10ms,jitter=5ms,loss=10%,dup=5%,reorder=5%,seed=11",
            5000,
        );
        let c = run(
            "delay=10ms,jitter=5ms,loss=10%,dup=5%,reorder=5%,seed=12",
            5000,
        );
        assert_eq!(a.0, b.0);
        assert_ne!(a.0, c.0);
    }

    #[test]
    fn rate_limit_spaces_datagrams_by_their_size() {
        // 1000-byte datagrams (+28 header) at 8 mbit/s take 1.028 ms each; pushed at once.
        let mut c = Conditioner::new("rate=8mbit".parse().unwrap());
        let t0 = Instant::now();
        for _ in 0..100 {
            c.push(t0, addr(), vec![0; 1000]);
        }
        let mut last = t0;
        let mut n = 0;
        while let Some(due) = c.poll_timeout() {
            assert!(c.poll_transmit(due).is_some());
            last = due;
            n += 1;
        }
        assert_eq!(n, 100);
        let took = (last - t0).as_secs_f64() * 1e3;
        assert!((took - 102.8).abs() < 0.01, "{took} ms");
    }
}
