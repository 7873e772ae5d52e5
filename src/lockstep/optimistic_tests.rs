//! Optimistic mode on the simulated network: a slow player never stalls the others, its
//! taps all arrive in order, and every client applies the same inputs; strict mode on the
//! same seed is the comparison.

use std::time::Duration;

use super::sim::{Link, PlayerSpec, Sim, SimConfig};
use super::tests::{assert_in_sync, assert_no_tap_lost, config, secs, FPS};
use super::{ClientEvent, Mode, PeerId, ServerEvent};

/// One player's numbers after the warm-up.
#[derive(Debug)]
struct PlayerOutcome {
    stall_pct: f64,
    latency_median: u32,
    latency_p95: u32,
    up_bps: f64,
    down_bps: f64,
}

fn player_outcomes(sim: &Sim) -> Vec<PlayerOutcome> {
    let elapsed = sim.now().saturating_sub(sim.warmup()).as_secs_f64();
    let server = sim.server.stats().peers;
    sim.players
        .iter()
        .map(|p| {
            let lat = p.client.stats().latency;
            let t1 = p.client.stats().traffic;
            let t0 = p.traffic_at_warmup.unwrap_or_default();
            let s0 = sim
                .server_traffic_at_warmup
                .as_ref()
                .and_then(|v| v.iter().find(|(id, _)| *id == p.id).map(|(_, t)| *t))
                .unwrap_or_default();
            let s1 = server
                .iter()
                .find(|s| s.peer == p.id)
                .map(|s| s.traffic)
                .unwrap_or_default();
            PlayerOutcome {
                stall_pct: 100.0 * p.stalled_slots as f64 / p.slots.max(1) as f64,
                latency_median: lat.median().unwrap_or(0),
                latency_p95: lat.p95().unwrap_or(0),
                up_bps: (t1.wire_out - t0.wire_out) as f64 / elapsed,
                down_bps: (s1.wire_out - s0.wire_out) as f64 / elapsed,
            }
        })
        .collect()
}

fn print_players(name: &str, sim: &Sim) -> Vec<PlayerOutcome> {
    let out = player_outcomes(sim);
    for (i, o) in out.iter().enumerate() {
        let placed = sim
            .server
            .stats()
            .peers
            .into_iter()
            .find(|s| s.peer == PeerId(i as u8))
            .map(|s| s.placement)
            .unwrap_or_default();
        println!(
            "{name:<28} player {}: stall {:>6.3}%  latency median {:>2} p95 {:>2} frames  \
             up {:>5.0} B/s down {:>5.0} B/s  placed late {} (median {} p95 {}) merged {}",
            i + 1,
            o.stall_pct,
            o.latency_median,
            o.latency_p95,
            o.up_bps,
            o.down_bps,
            placed.late,
            placed.late_frames.median().unwrap_or(0),
            placed.late_frames.p95().unwrap_or(0),
            placed.merged,
        );
    }
    out
}

/// `players` players on a dedicated server: all on a clean 20 ms round trip with clocks
/// drifting by +-0.05%, but the slow ones, at 300 ms with 10% loss each way.
fn one_slow(players: usize, slow: &[usize], mode: Mode, seed: u64) -> SimConfig {
    let mut lockstep = config(players, mode.default_keyframe_interval());
    lockstep.mode = mode;
    let specs = (0..players)
        .map(|i| {
            let link = if slow.contains(&i) {
                Link::rtt_ms(300).loss(0.10)
            } else {
                Link::rtt_ms(20)
            };
            PlayerSpec {
                clock_rate: if i % 2 == 0 { 0.9995 } else { 1.0005 },
                ..PlayerSpec::symmetric(link)
            }
        })
        .collect();
    let mut cfg = SimConfig::new(lockstep, specs, seed);
    cfg.dedicated = true;
    cfg
}

fn run(cfg: SimConfig, frames: usize) -> Sim {
    let mut sim = Sim::new(cfg);
    sim.run_frames(
        frames,
        Duration::from_secs_f64(frames as f64 / FPS * 3.0 + 60.0),
    );
    assert!(
        sim.players.iter().all(|p| p.applied.len() >= frames),
        "the session did not get through {frames} frames"
    );
    sim
}

fn assert_nobody_left(sim: &Sim) {
    let left = sim
        .server_events
        .iter()
        .find(|(_, e)| matches!(e, ServerEvent::PeerLeft { .. }));
    assert!(left.is_none(), "server: {left:?}");
    for p in &sim.players {
        let bad = p
            .events
            .iter()
            .find(|(_, e)| matches!(e, ClientEvent::ServerLost | ClientEvent::PlayerLeft { .. }));
        assert!(bad.is_none(), "{}: {bad:?}", p.id);
    }
}

/// The scenario of the issue, in both modes: in optimistic mode the fast players barely
/// stall and keep a latency of about their own round trip; in strict mode everybody plays at
/// the slow player's delay.
fn slow_player_scenario(players: usize, seed: u64) {
    let slow = players - 1;
    let fast = 0..slow;
    let sim = run(one_slow(players, &[slow], Mode::Optimistic, seed), 10_000);
    let opt = print_players(&format!("{players}p optimistic"), &sim);
    assert_in_sync(&sim);
    assert_no_tap_lost(&sim, |_| None);
    assert_nobody_left(&sim);
    for i in fast.clone() {
        let o = &opt[i];
        assert!(o.stall_pct <= 0.5, "player {}: {o:?}", i + 1);
        assert!(o.latency_median <= 3, "player {}: {o:?}", i + 1);
    }
    // The slow player's own samples land later, as its round trip says (18 frames).
    assert!(opt[slow].latency_median >= 15, "{:?}", opt[slow]);

    let sim = run(one_slow(players, &[slow], Mode::Strict, seed), 10_000);
    let strict = print_players(&format!("{players}p strict"), &sim);
    assert_in_sync(&sim);
    assert_no_tap_lost(&sim, |_| None);
    // Everyone shares the slow player's delay.
    for i in fast {
        assert!(
            strict[i].latency_median + 3 >= strict[slow].latency_median,
            "player {}: {:?} vs the slow player's {:?}",
            i + 1,
            strict[i],
            strict[slow]
        );
        assert!(strict[i].latency_median >= 5 * opt[i].latency_median.max(1));
    }
}

#[test]
fn three_players_a_slow_one_holds_nobody_up() {
    slow_player_scenario(3, 2501);
}

#[test]
fn eight_players_a_slow_one_holds_nobody_up() {
    slow_player_scenario(8, 2508);
}

/// A player's link goes silent for 1 s (up only: its samples pile up at the client and come
/// in one burst; and both ways: it waits for frames too), then comes back. Nothing is lost,
/// nothing reordered, nobody else waits, and the backlog is merged away where equal.
#[test]
fn a_player_silent_for_a_second_loses_nothing() {
    for (name, both) in [("up", false), ("both ways", true)] {
        let mut cfg = one_slow(3, &[], Mode::Optimistic, 2530);
        let out = Link::rtt_ms(20).outage(secs(20), secs(1));
        cfg.players[2].up = out.clone();
        if both {
            cfg.players[2].down = out;
        }
        let sim = run(cfg, 3000);
        let o = print_players(&format!("silent 1 s ({name})"), &sim);
        assert_in_sync(&sim);
        assert_no_tap_lost(&sim, |_| None);
        assert_nobody_left(&sim);
        for (i, o) in o.iter().enumerate().take(2) {
            assert!(o.stall_pct <= 0.5, "{name}: player {}: {o:?}", i + 1);
        }
        let placed = &sim.server.stats().peers[2].placement;
        // The samples of the outage came late, and the equal ones were merged to catch up.
        assert!(placed.late > 0 && placed.merged > 0, "{name}: {placed:?}");
        let warned = sim.server_events.iter().any(|(_, e)| {
            matches!(
                e,
                ServerEvent::PeerSilent {
                    peer: PeerId(2),
                    ..
                }
            )
        });
        assert!(warned, "{name}: the silence was not noticed");
    }
}
