//! Tables for the report, ignored by default (run with `--ignored --nocapture`): stalls,
//! latency and bandwidth over keyframe intervals, link conditions, fixed leads and
//! datagram sizes.

use std::time::Duration;

use super::sim::PathSpec;
use super::tests::{assert_in_sync, config, print, run, uniform, FPS};
use super::Config;

#[test]
#[ignore = "prints the keyframe-interval table of the report"]
fn keyframe_interval_table() {
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
            let (sim, o) = run(cfg, 20_000);
            assert_in_sync(&sim);
            print(&format!("K={k} {name}"), &o);
        }
    }
}

/// The real-UDP benchmark's matrix, simulated: each direction delayed by RTT/2 and jittered
/// by ±J (so the round trip varies by ±2J), 60 s each, measured after the warm-up.
/// `cargo test --release --lib lockstep -- --ignored --nocapture bench_matrix`
#[test]
#[ignore = "prints a table; run with --ignored --nocapture"]
fn bench_matrix() {
    let mut scenarios = Vec::new();
    for rtt in [20, 100, 250] {
        for jitter in [0, 20] {
            for loss in [0, 5, 25] {
                scenarios.push((rtt, jitter, loss));
            }
        }
    }
    scenarios.push((2000, 0, 25));
    for (i, (rtt, jitter, loss)) in scenarios.into_iter().enumerate() {
        let mut link = PathSpec::rtt_ms(rtt).loss(f64::from(loss) / 100.0);
        link.jitter = Duration::from_millis(jitter);
        for budget in [super::DEFAULT_SEND_BUDGET, 0] {
            let mut cfg = uniform(2, link.clone(), 500 + i as u64);
            cfg.lockstep.send_budget = budget;
            let (sim, o) = run(cfg, 3600 + 300);
            assert_in_sync(&sim);
            print(&format!("{rtt}/{jitter}/{loss} budget {budget}"), &o);
        }
    }
}

/// The stall price of one frame less lead at 100 ms RTT, ±20 ms jitter each way and 5% loss
/// (the scenario of the latency goal), by send budget: the lead is pinned, not adapted.
/// `cargo test --release --lib lockstep -- --ignored --nocapture bench_fixed_lead`
#[test]
#[ignore]
fn bench_fixed_lead() {
    let mut link = PathSpec::rtt_ms(100).loss(0.05);
    link.jitter = Duration::from_millis(20);
    for budget in [2400, super::DEFAULT_SEND_BUDGET, 2800, 0] {
        for lead in [9, 10] {
            let mut stalls = Vec::new();
            let (mut up, mut down) = (0.0, 0.0);
            for seed in 0..6 {
                let mut cfg = uniform(2, link.clone(), 900 + seed);
                cfg.lockstep.send_budget = budget;
                (cfg.lockstep.min_lead, cfg.lockstep.max_lead) = (lead, lead);
                let (sim, o) = run(cfg, 3600 + 300);
                assert_in_sync(&sim);
                stalls.push(o.stall_pct);
                up += o.up_bps / 6.0;
                down += o.down_bps / 6.0;
            }
            stalls.sort_by(f64::total_cmp);
            let mean = stalls.iter().sum::<f64>() / stalls.len() as f64;
            println!(
                "budget {budget:>4} B/s  lead {lead:>2} ({:>3.0} ms)  stall mean {mean:.2}% \
                 ({:.2}..{:.2}% over 6 seeds)  up {up:>4.0} B/s down {down:>4.0} B/s",
                f64::from(lead) * 1000.0 / FPS,
                stalls[0],
                stalls[stalls.len() - 1],
            );
        }
    }
}

/// Mean CTRL and UPDATE sizes (without the 28 bytes of UDP/IP header) a joiner sends and
/// receives at 100 ms RTT, ±20 ms each way, 5% loss, with a checksum every 60 frames (the
/// figures in `msg`'s doc).
#[test]
#[ignore]
fn bench_datagram_sizes() {
    let mut link = PathSpec::rtt_ms(100).loss(0.05);
    link.jitter = Duration::from_millis(20);
    let mut t = super::Traffic::default();
    let (seeds, frames) = (6, 3900);
    for seed in 0..seeds {
        let (sim, _) = run(uniform(2, link.clone(), 900 + seed), frames);
        let s = sim.players[1].client.stats().traffic;
        t.bytes_out += s.bytes_out;
        t.packets_out += s.packets_out;
        t.bytes_in += s.bytes_in;
        t.packets_in += s.packets_in;
    }
    let secs = seeds as f64 * frames as f64 / FPS;
    println!(
        "CTRL {:.2} bytes, {:.1} sent a second; UPDATE {:.2} bytes, {:.1} received a second \
         (means over {seeds} seeds x {:.0} s, budget {} B/s)",
        t.bytes_out as f64 / t.packets_out as f64,
        t.packets_out as f64 / secs,
        t.bytes_in as f64 / t.packets_in as f64,
        t.packets_in as f64 / secs,
        frames as f64 / FPS,
        super::DEFAULT_SEND_BUDGET
    );
}

/// The latency goal read as ±20 ms on each direction (the real benchmark's row): median
/// latency and stalls per seed, the lead adapting as in a session.
/// `cargo test --release --lib -- --ignored --exact lockstep::tests::bench_latency_goal_each_way --nocapture`
#[test]
#[ignore]
fn bench_latency_goal_each_way() {
    let mut link = PathSpec::rtt_ms(100).loss(0.05);
    link.jitter = Duration::from_millis(20);
    let mut met = 0;
    let (mut up, mut down, mut stalls) = (0.0f64, 0.0f64, 0.0f64);
    let seeds = 16;
    for seed in 0..seeds {
        let (sim, o) = run(uniform(2, link.clone(), 700 + seed), 3900);
        assert_in_sync(&sim);
        print(&format!("seed {seed}"), &o);
        met += usize::from(o.latency_median_ms <= 150.0);
        up = up.max(o.up_bps);
        down = down.max(o.down_bps);
        stalls = stalls.max(o.stall_pct);
    }
    println!(
        "150 ms in {met} of {seeds} seeds; worst stall {stalls:.2}%, up {up:.0} B/s, down {down:.0} B/s"
    );
}

/// Delay through a dedicated server halfway between two players, against the server inside
/// player 1's process (numbers, not pass/fail; the simulated column of `serve_latency`'s table):
/// `cargo test --release --lib -- --ignored --exact lockstep::tests::bench_server_halfway --nocapture`
///
/// Direct: 100 ms RTT between the players. Halfway: 50 ms RTT from each player to the server.
/// Both: ±10 ms jitter and 1% loss on every direction of every link, 60 s, 8 seeds.
#[test]
#[ignore]
fn bench_server_halfway() {
    let link = |rtt| {
        let mut l = PathSpec::rtt_ms(rtt).loss(0.01);
        l.jitter = Duration::from_millis(10);
        l
    };
    let seeds = 8;
    for (name, rtt, dedicated) in [
        ("direct, 100 ms RTT", 100, false),
        ("server halfway, 2 x 50 ms", 50, true),
    ] {
        let mut medians = Vec::new();
        let mut worst_p95 = 0.0f64;
        let mut worst_stall = 0.0f64;
        for seed in 0..seeds {
            let mut cfg = uniform(2, link(rtt), 900 + seed);
            cfg.dedicated = dedicated;
            let (sim, o) = run(cfg, 3600 + 300);
            assert_in_sync(&sim);
            medians.push(o.latency_median_ms);
            worst_p95 = worst_p95.max(o.latency_p95_ms);
            worst_stall = worst_stall.max(o.stall_pct);
        }
        medians.sort_by(f64::total_cmp);
        println!(
            "{name:<28} worst player's median input latency {:.0}..{:.0} ms over {seeds} seeds, \
             p95 up to {worst_p95:.0} ms, stalls up to {worst_stall:.2}%",
            medians[0],
            medians[medians.len() - 1]
        );
    }
}
