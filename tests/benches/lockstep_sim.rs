//! Lockstep on the simulated network (`lockstep::sim`, seeded, on simulated time): the
//! tables behind the lockstep figures in the rustdoc and the other benchmarks' notes.
//! - `keyframe`: stalls, latency and bandwidth by keyframe interval K, send budget off;
//! - `matrix`: the real-UDP `netplay` benchmark's matrix, simulated (RTT/2 and ±J each
//!   way), with and without the send budget;
//! - `fixed_lead`: the stall price of one frame less lead at 100 ms ±20 ms each way and 5%
//!   loss, the lead pinned, by send budget;
//! - `datagram_sizes`: mean CTRL and UPDATE sizes a joiner sends and receives there (the
//!   figures in `lockstep::msg`'s doc);
//! - `latency_goal`: the latency goal read as ±20 ms each way, per seed;
//! - `server_halfway`: delay through a dedicated server halfway between two players
//!   against the server inside player 1's process (`serve_latency`'s simulated column);
//! - `spectators`: the players' stalls and latency with 0 and with 16 spectators (same
//!   seeds), a spectator's upload from the server and its delay behind the host (the
//!   simulated figures in the `spectators` benchmark's notes).
//!
//! Every session is checked in sync before its row prints. `cargo bench --bench
//! lockstep_sim [-- TABLE...]` (names as above; all without one); `FRAMELOCK_BENCH_SMOKE=1`
//! runs each table on one or two seeds of 20-s sessions.

mod smoke;

use std::time::Duration;

use framelock::lockstep::sim::measure::{
    assert_in_sync, assert_matches_host, config, median_delay, print, run, uniform, watched,
    Outcome, FPS,
};
use framelock::lockstep::sim::{PathSpec, Sim, SimConfig};
use framelock::lockstep::{Config, SpectatorId, Traffic, DEFAULT_SEND_BUDGET};

/// Frames of one full-length session: a minute after the 5-s warm-up, or 20 s in the
/// short form.
fn frames(full: usize) -> usize {
    if smoke::smoke() {
        1200
    } else {
        full
    }
}

/// `full` seeds, or `short` in the short form.
fn seeds(full: u64, short: u64) -> u64 {
    if smoke::smoke() {
        short
    } else {
        full
    }
}

/// One session run, checked in sync and for numbers, before anything of it prints.
fn session(cfg: SimConfig, frames: usize) -> (Sim, Outcome) {
    let (sim, o) = run(cfg, frames);
    assert_in_sync(&sim);
    if o.frames == 0 {
        smoke::fail("a session ran no frames");
    }
    smoke::number("stall percentage", o.stall_pct);
    smoke::number("median latency", o.latency_median_ms);
    (sim, o)
}

/// A link of `rtt` ms round trip, ±`jitter` ms each way and `loss` percent loss.
fn link(rtt: u64, jitter: u64, loss: u32) -> PathSpec {
    let mut l = PathSpec::rtt_ms(rtt).loss(f64::from(loss) / 100.0);
    l.jitter = Duration::from_millis(jitter);
    l
}

fn keyframe() {
    for k in 1..=4 {
        for (name, link) in [
            ("rtt 100", PathSpec::rtt_ms(100)),
            (
                "rtt 100 +-20 loss 5%",
                PathSpec::rtt_ms(100).rtt_jitter_ms(20).loss(0.05),
            ),
            ("rtt 250 loss 25%", PathSpec::rtt_ms(250).loss(0.25)),
        ] {
            let mut cfg = uniform(2, link, 7);
            // Uncapped, to show what each K costs.
            cfg.lockstep = Config {
                send_budget: 0,
                ..config(2, k)
            };
            let (_, o) = session(cfg, frames(20_000));
            print(&format!("K={k} {name}"), &o);
        }
    }
}

fn matrix() {
    let mut scenarios = Vec::new();
    for rtt in [20, 100, 250] {
        for jitter in [0, 20] {
            for loss in [0, 5, 25] {
                scenarios.push((rtt, jitter, loss));
            }
        }
    }
    scenarios.push((2000, 0, 25));
    if smoke::smoke() {
        scenarios = vec![(20, 0, 0), (100, 20, 5), (2000, 0, 25)];
    }
    for (i, (rtt, jitter, loss)) in scenarios.into_iter().enumerate() {
        for budget in [DEFAULT_SEND_BUDGET, 0] {
            let mut cfg = uniform(2, link(rtt, jitter, loss), 500 + i as u64);
            cfg.lockstep.send_budget = budget;
            let (_, o) = session(cfg, frames(3600 + 300));
            print(&format!("{rtt}/{jitter}/{loss} budget {budget}"), &o);
        }
    }
}

fn fixed_lead() {
    let budgets: &[u32] = if smoke::smoke() {
        &[DEFAULT_SEND_BUDGET]
    } else {
        &[2400, DEFAULT_SEND_BUDGET, 2800, 0]
    };
    let n = seeds(6, 1);
    for &budget in budgets {
        for lead in [9, 10] {
            let mut stalls = Vec::new();
            let (mut up, mut down) = (0.0, 0.0);
            for seed in 0..n {
                let mut cfg = uniform(2, link(100, 20, 5), 900 + seed);
                cfg.lockstep.send_budget = budget;
                (cfg.lockstep.min_lead, cfg.lockstep.max_lead) = (lead, lead);
                let (_, o) = session(cfg, frames(3600 + 300));
                stalls.push(o.stall_pct);
                up += o.up_bps / n as f64;
                down += o.down_bps / n as f64;
            }
            let (median, lo, hi) = smoke::median_spread(stalls.clone())
                .unwrap_or_else(|| smoke::fail("no stall figures"));
            let mean = stalls.iter().sum::<f64>() / stalls.len() as f64;
            println!(
                "budget {budget:>4} B/s  lead {lead:>2} ({:>3.0} ms)  stall mean {mean:.2}% \
                 median {median:.2}% ({lo:.2}..{hi:.2}% over {n} seeds)  up {up:>4.0} B/s \
                 down {down:>4.0} B/s",
                f64::from(lead) * 1000.0 / FPS,
            );
        }
    }
}

fn datagram_sizes() {
    let mut t = Traffic::default();
    let (n, frames) = (seeds(6, 1), frames(3900));
    for seed in 0..n {
        let (sim, _) = session(uniform(2, link(100, 20, 5), 900 + seed), frames);
        let s = sim.players[1].client.stats().traffic;
        t.bytes_out += s.bytes_out;
        t.packets_out += s.packets_out;
        t.bytes_in += s.bytes_in;
        t.packets_in += s.packets_in;
    }
    if t.packets_out == 0 || t.packets_in == 0 {
        smoke::fail("the joiner sent or received no datagram");
    }
    let secs = n as f64 * frames as f64 / FPS;
    println!(
        "CTRL {:.2} bytes, {:.1} sent a second; UPDATE {:.2} bytes, {:.1} received a second \
         (means over {n} seeds x {:.0} s, budget {DEFAULT_SEND_BUDGET} B/s)",
        t.bytes_out as f64 / t.packets_out as f64,
        t.packets_out as f64 / secs,
        t.bytes_in as f64 / t.packets_in as f64,
        t.packets_in as f64 / secs,
        frames as f64 / FPS,
    );
}

fn latency_goal() {
    let mut met = 0;
    let (mut up, mut down, mut stalls) = (0.0f64, 0.0f64, 0.0f64);
    let n = seeds(16, 2);
    for seed in 0..n {
        let (_, o) = session(uniform(2, link(100, 20, 5), 700 + seed), frames(3900));
        print(&format!("seed {seed}"), &o);
        met += usize::from(o.latency_median_ms <= 150.0);
        up = up.max(o.up_bps);
        down = down.max(o.down_bps);
        stalls = stalls.max(o.stall_pct);
    }
    println!(
        "150 ms in {met} of {n} seeds; worst stall {stalls:.2}%, up {up:.0} B/s, \
         down {down:.0} B/s"
    );
}

/// Direct: 100 ms RTT between the players. Halfway: 50 ms RTT from each player to the
/// server. Both: ±10 ms jitter and 1% loss on every direction of every link.
fn server_halfway() {
    let n = seeds(8, 1);
    for (name, rtt, dedicated) in [
        ("direct, 100 ms RTT", 100, false),
        ("server halfway, 2 x 50 ms", 50, true),
    ] {
        let mut medians = Vec::new();
        let mut worst_p95 = 0.0f64;
        let mut worst_stall = 0.0f64;
        for seed in 0..n {
            let mut cfg = uniform(2, link(rtt, 10, 1), 900 + seed);
            cfg.dedicated = dedicated;
            let (_, o) = session(cfg, frames(3600 + 300));
            medians.push(o.latency_median_ms);
            worst_p95 = worst_p95.max(o.latency_p95_ms);
            worst_stall = worst_stall.max(o.stall_pct);
        }
        let (_, lo, hi) =
            smoke::median_spread(medians).unwrap_or_else(|| smoke::fail("no latency figures"));
        println!(
            "{name:<28} worst player's median input latency {lo:.0}..{hi:.0} ms over {n} \
             seeds, p95 up to {worst_p95:.0} ms, stalls up to {worst_stall:.2}%"
        );
    }
}

/// Two players at 100 ms ±20 ms with 2% loss; spectators from 10 s to 60 s (`watched`):
/// one 300 ms away, one whose link dies at 20 s, the others at 60 ms.
fn spectators() {
    println!("2 players, 100 ms RTT, +-20 ms jitter, 2% loss; spectators from 10 s to 60 s");
    println!(
        "{:<14} {:>9} {:>16} {:>16}",
        "spectators", "stall %", "median latency", "p95 latency"
    );
    let mut uploads = Vec::new();
    let mut delays = Vec::new();
    let mut far = Vec::new();
    for n in [0u8, 16] {
        let (mut stall, mut med, mut p95) = (0.0f64, 0u32, 0u32);
        for seed in 0..seeds(4, 1) {
            let sim = watched(700 + seed, n);
            // Everyone but the spectator whose link died showed the host's game.
            for (i, p) in sim.players.iter().enumerate().skip(1) {
                if p.spectator != Some(1) {
                    assert_matches_host(&sim, i);
                }
            }
            for p in &sim.players[..2] {
                stall = stall.max(100.0 * p.stalled_slots as f64 / p.slots.max(1) as f64);
                let lat = p.client.stats().latency;
                med = med.max(lat.median().unwrap_or(0));
                p95 = p95.max(lat.p95().unwrap_or(0));
            }
            for (i, p) in sim.players.iter().enumerate().skip(2) {
                if p.spectator == Some(0) {
                    far.push(median_delay(&sim, i).as_secs_f64() * 1000.0);
                }
                let Some(id) = p.spectator.filter(|id| *id >= 2) else {
                    continue;
                };
                let t = sim
                    .server
                    .spectator(SpectatorId(id))
                    .unwrap_or_else(|| smoke::fail(format!("spectator {id} is not watching")))
                    .traffic;
                let secs = sim.now().as_secs_f64() - 10.0;
                uploads.push(t.wire_out as f64 / secs);
                delays.push(median_delay(&sim, i).as_secs_f64() * 1000.0);
            }
        }
        smoke::number("stall percentage", stall);
        if med == 0 {
            smoke::fail("no latency figure");
        }
        println!(
            "{n:<14} {stall:>9.3} {:>13.0} ms {:>13.0} ms",
            f64::from(med) * 1000.0 / FPS,
            f64::from(p95) * 1000.0 / FPS
        );
    }
    if uploads.is_empty() || far.is_empty() {
        smoke::fail("no spectator watched to the end");
    }
    uploads.sort_by(f64::total_cmp);
    delays.sort_by(f64::total_cmp);
    println!(
        "upload per spectator (UDP/IP headers included): median {:.0} B/s, max {:.0} B/s",
        uploads[uploads.len() / 2],
        uploads[uploads.len() - 1]
    );
    println!(
        "spectator delay behind the host (60 ms RTT): median {:.0} ms, worst spectator's \
         median {:.0} ms",
        delays[delays.len() / 2],
        delays[delays.len() - 1]
    );
    far.sort_by(f64::total_cmp);
    println!(
        "spectator delay behind the host (300 ms RTT): median {:.0}..{:.0} ms over the seeds",
        far[0],
        far[far.len() - 1]
    );
}

fn main() {
    let tables: [(&str, fn()); 7] = [
        ("keyframe", keyframe),
        ("matrix", matrix),
        ("fixed_lead", fixed_lead),
        ("datagram_sizes", datagram_sizes),
        ("latency_goal", latency_goal),
        ("server_halfway", server_halfway),
        ("spectators", spectators),
    ];
    // cargo passes `--bench`; the other words name tables.
    let asked: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if let Some(unknown) = asked.iter().find(|a| !tables.iter().any(|(n, _)| n == a)) {
        let names: Vec<&str> = tables.iter().map(|(n, _)| *n).collect();
        smoke::fail(format!(
            "no table {unknown:?}; the tables: {}",
            names.join(", ")
        ));
    }
    for (name, table) in tables {
        if asked.is_empty() || asked.iter().any(|a| a == name) {
            println!("== {name}");
            table();
        }
    }
}
