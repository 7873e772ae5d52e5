//! Optimistic mode on the simulated network: a slow player never stalls the others, its
//! taps all arrive in order, and every client applies the same inputs; strict mode on the
//! same seed is the comparison.

use std::time::Duration;

use super::late_tests::joined_from;
use super::sim::measure::assert_matches_host;
use super::sim::{PathSpec, PlayerSpec, Sim, SimConfig};
use super::tests::{assert_in_sync, assert_no_tap_lost, assert_session_up, config, secs, FPS};
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
                PathSpec::rtt_ms(300).loss(0.10)
            } else {
                PathSpec::rtt_ms(20)
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
    assert_session_up(&sim);
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
        let out = PathSpec::rtt_ms(20).outage(secs(20), secs(1));
        cfg.players[2].up = out.clone();
        if both {
            cfg.players[2].down = out;
        }
        let sim = run(cfg, 3000);
        let o = print_players(&format!("silent 1 s ({name})"), &sim);
        assert_in_sync(&sim);
        assert_no_tap_lost(&sim, |_| None);
        assert_session_up(&sim);
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

/// What makes a session trustworthy holds in optimistic mode too: a late joiner plays from
/// a frame everyone is told, a spectator sees the players' inputs, and a wrong checksum is
/// reported as a desync.
#[test]
fn late_join_spectators_and_desync_detection_work_in_optimistic_mode() {
    let mut cfg = one_slow(3, &[1], Mode::Optimistic, 2540);
    cfg.dedicated = false;
    cfg.corrupt_checksum = Some((PeerId(1), 1200));
    let mut players = cfg.players.clone();
    players.truncate(2);
    cfg.players = players;
    let mut sim = Sim::new(cfg);
    sim.run_until(secs(10));
    let ana = sim.add_late_player(
        PeerId(2),
        PlayerSpec::symmetric(PathSpec::rtt_ms(40)),
        "ana",
    );
    let watcher = sim.add_spectator(16, PlayerSpec::symmetric(PathSpec::rtt_ms(60).loss(0.02)));
    sim.run_until(secs(40));
    let from = joined_from(&sim, PeerId(2));
    assert!(from.0 > sim.players[ana].first, "{from}");
    for i in 1..sim.players.len() {
        assert_matches_host(&sim, i);
    }
    for p in &sim.players[..2] {
        assert!(
            p.events.iter().any(|(_, e)| matches!(
                e,
                ClientEvent::PlayerJoined {
                    peer: PeerId(2),
                    ..
                }
            )),
            "{}: {:?}",
            p.id,
            p.events
        );
    }
    let desync = sim.server_events.iter().any(
        |(_, e)| matches!(e, ServerEvent::Desync { frame, peer: PeerId(1), .. } if frame.0 == 1200),
    );
    assert!(desync, "{:?}", sim.server_events);
    // The late joiner, once in, plays at its own short delay, not the slow player's.
    let late = sim.players[ana].client.stats().latency;
    assert!(late.median().unwrap_or(99) <= 4, "{:?}", late.median());
    assert!(sim.players[watcher].applied.len() > 1000);
}

/// Two equal players 100 ms apart with jitter and loss (the benchmark's second scenario):
/// in optimistic mode the joiner's frames come on the server's clock through the jitter
/// and the losses, and its playout margin must cover both.
#[test]
fn a_jittery_lossy_joiner_rarely_stalls_in_optimistic_mode() {
    for mode in Mode::ALL {
        let mut lockstep = config(2, mode.default_keyframe_interval());
        lockstep.mode = mode;
        let link = PathSpec::rtt_ms(100).rtt_jitter_ms(20).loss(0.05);
        let cfg = SimConfig::new(lockstep, vec![PlayerSpec::symmetric(link.clone()); 2], 2550);
        let sim = run(cfg, 6000);
        let o = print_players(&format!("100 ms +-20 5% {mode}"), &sim);
        assert_in_sync(&sim);
        assert_no_tap_lost(&sim, |_| None);
        assert!(o[1].stall_pct <= 0.5, "{mode}: {:?}", o[1]);
    }
}
