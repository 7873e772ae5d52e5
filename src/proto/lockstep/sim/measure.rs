//! What one simulated session measured, and the configs the lockstep tests and the
//! `lockstep_sim` benchmark build their sessions from: stalls, input latency, bandwidth and
//! the lead after the warm-up, whether every player emulated the same inputs, and for a
//! watched game (`watched`) how far behind the host a spectator shows it.

use std::time::Duration;

use super::{PathSpec, PlayerSpec, Sim, SimConfig};
use crate::lockstep::Config;

pub const FPS: f64 = 60.0;
/// UDP + IPv4 header bytes per datagram, counted in bandwidth figures.
pub const UDP_IP: u64 = crate::lockstep::budget::UDP_IP_HEADER as u64;

pub fn config(players: usize, k: u32) -> Config {
    Config {
        players: players as u8,
        session: 0x5eed_0001,
        ..Config::default()
    }
    .with_keyframe_interval(k)
}

/// A session where every remote player has the same symmetric link and the default K.
pub fn uniform(players: usize, link: PathSpec, seed: u64) -> SimConfig {
    SimConfig::new(
        config(players, crate::lockstep::DEFAULT_KEYFRAME_INTERVAL),
        (0..players)
            .map(|_| PlayerSpec::symmetric(link.clone()))
            .collect(),
        seed,
    )
}

/// A link of `rtt` ms round trip, ±20 ms of it either way, and 2% loss.
pub fn lossy(rtt: u64) -> PathSpec {
    PathSpec::rtt_ms(rtt).rtt_jitter_ms(20).loss(0.02)
}

/// Two players on a lossy 100 ms link, with `spectators` added at 10 s: a few on clean
/// links, one 300 ms away, one whose link dies at 20 s. Returns the sim after 60 s.
pub fn watched(seed: u64, spectators: u8) -> Sim {
    let secs = Duration::from_secs;
    let cfg: SimConfig = uniform(2, lossy(100), seed);
    let mut sim = Sim::new(cfg);
    sim.run_until(secs(10));
    for id in 0..spectators {
        let link = match id {
            0 => PathSpec::rtt_ms(300),
            1 => lossy(60).dead_after(secs(20)),
            _ => lossy(60),
        };
        sim.add_spectator(id, PlayerSpec::symmetric(link));
    }
    sim.run_until(secs(60));
    sim
}

/// Measurements of one run, over the time after the warm-up.
#[derive(Debug)]
pub struct Outcome {
    pub frames: usize,
    /// Worst player's share of display slots that stalled, in percent.
    pub stall_pct: f64,
    /// Worst player's median and 95th percentile input latency, in ms.
    pub latency_median_ms: f64,
    pub latency_p95_ms: f64,
    /// Mean over remote players, bytes per second incl. UDP/IP headers.
    pub up_bps: f64,
    pub down_bps: f64,
    pub lead_min: u32,
    pub lead_max: u32,
}

fn frames_ms(f: u32) -> f64 {
    f64::from(f) * 1000.0 / FPS
}

pub fn outcome(sim: &Sim) -> Outcome {
    let elapsed = sim
        .now()
        .saturating_sub(sim.warmup())
        .as_secs_f64()
        .max(1e-9);
    let mut stall_pct: f64 = 0.0;
    let mut med: u32 = 0;
    let mut p95: u32 = 0;
    for p in sim.players.iter().filter(|p| !p.gone()) {
        if p.slots > 0 {
            stall_pct = stall_pct.max(100.0 * p.stalled_slots as f64 / p.slots as f64);
        }
        let lat = p.client.stats().latency;
        med = med.max(lat.median().unwrap_or(0));
        p95 = p95.max(lat.p95().unwrap_or(0));
    }
    let (mut up, mut down, mut n) = (0.0f64, 0.0f64, 0.0f64);
    let server_peers = sim.server.stats().peers;
    for p in sim.players.iter().skip(1) {
        let (Some(t0), Some(s0)) = (p.traffic_at_warmup, sim.server_traffic_at_warmup.as_ref())
        else {
            continue;
        };
        let t1 = p.client.stats().traffic;
        up += (t1.wire_out - t0.wire_out) as f64;
        let s0 = s0.iter().find(|(id, _)| *id == p.id).map(|(_, t)| *t);
        let s1 = server_peers
            .iter()
            .find(|s| s.peer == p.id)
            .map(|s| s.traffic);
        if let (Some(s0), Some(s1)) = (s0, s1) {
            down += (s1.wire_out - s0.wire_out) as f64;
        }
        n += 1.0;
    }
    let leads = sim
        .lead_log
        .iter()
        .filter(|(t, _)| *t >= sim.warmup())
        .map(|(_, l)| *l);
    Outcome {
        frames: sim
            .players
            .iter()
            .map(|p| p.applied.len())
            .min()
            .unwrap_or(0),
        stall_pct,
        latency_median_ms: frames_ms(med),
        latency_p95_ms: frames_ms(p95),
        up_bps: up / n.max(1.0) / elapsed,
        down_bps: down / n.max(1.0) / elapsed,
        lead_min: leads.clone().min().unwrap_or(sim.server.lead()),
        lead_max: leads.max().unwrap_or(sim.server.lead()),
    }
}

/// Every player emulated the same inputs on every frame both emulated.
pub fn assert_in_sync(sim: &Sim) {
    let reference = &sim.players[0].applied;
    for p in &sim.players[1..] {
        let n = p.applied.len().min(reference.len());
        if let Some(f) = (0..n).find(|&f| p.applied[f] != reference[f]) {
            panic!(
                "{} diverged at frame {f}: {:?} vs {:?}",
                p.id, p.applied[f], reference[f]
            );
        }
    }
}

/// Player `i` applied the same inputs as the host's machine on every frame both ran.
pub fn assert_matches_host(sim: &Sim, i: usize) {
    let host = &sim.players[0];
    let p = &sim.players[i];
    assert!(p.first >= host.first);
    let offset = (p.first - host.first) as usize;
    let n = p
        .applied
        .len()
        .min(host.applied.len().saturating_sub(offset));
    assert!(n > 600, "client {i} ran only {n} frames alongside the host");
    if let Some(k) = (0..n).find(|&k| p.applied[k] != host.applied[offset + k]) {
        panic!(
            "client {i} diverged at frame {}: {:?} vs {:?}",
            p.first as usize + k,
            p.applied[k],
            host.applied[offset + k]
        );
    }
}

/// Median time between the host's machine running a frame and client `i` running it.
pub fn median_delay(sim: &Sim, i: usize) -> Duration {
    let host = &sim.players[0];
    let p = &sim.players[i];
    let offset = (p.first - host.first) as usize;
    let mut d: Vec<Duration> = p
        .ran_at
        .iter()
        .enumerate()
        .skip(300)
        .filter_map(|(k, t)| Some(t.saturating_sub(*host.ran_at.get(offset + k)?)))
        .collect();
    d.sort();
    d.get(d.len() / 2).copied().unwrap_or_default()
}

pub fn run(cfg: SimConfig, frames: usize) -> (Sim, Outcome) {
    let mut sim = Sim::new(cfg);
    sim.run_frames(
        frames,
        Duration::from_secs_f64(frames as f64 / FPS * 3.0 + 60.0),
    );
    let o = outcome(&sim);
    (sim, o)
}

pub fn print(name: &str, o: &Outcome) {
    println!(
        "{name:<30} frames {:>6}  stall {:>6.3}%  latency median {:>4.0} ms p95 {:>4.0} ms  \
         up {:>5.0} B/s down {:>5.0} B/s  lead {}..{}",
        o.frames,
        o.stall_pct,
        o.latency_median_ms,
        o.latency_p95_ms,
        o.up_bps,
        o.down_bps,
        o.lead_min,
        o.lead_max
    );
}
