//! Lockstep over the simulated network: every client applies the same inputs on every frame,
//! no tap is lost, the lead adapts, and stalls and latency stay within bounds. Also the
//! harness the other lockstep test files share (configs, runs, outcomes, sync asserts).

use std::time::{Duration, Instant};

use crate::input::Pad;

use super::sim::{PathSpec, PlayerSpec, Sim, SimConfig};
use super::{Client, ClientEvent, Config, PeerId, Server, ServerEvent};

// The measuring half of the harness lives with the simulator, which the `lockstep_sim`
// benchmark shares; the other test files take all of it from here.
pub(super) use super::sim::measure::{assert_in_sync, config, print, run, uniform, FPS, UDP_IP};

pub(super) fn secs(v: u64) -> Duration {
    Duration::from_secs(v)
}

/// Remote players alternate between +0.5 % and -0.5 % clock rates.
fn drifting(players: usize, link: PathSpec) -> Vec<PlayerSpec> {
    (0..players)
        .map(|i| PlayerSpec {
            clock_rate: if i % 2 == 0 { 0.995 } else { 1.005 },
            ..PlayerSpec::symmetric(link.clone())
        })
        .collect()
}

pub(super) fn collapse(seq: impl IntoIterator<Item = Pad>) -> Vec<Pad> {
    let mut out: Vec<Pad> = Vec::new();
    for p in seq {
        if out.last() != Some(&p) {
            out.push(p);
        }
    }
    out
}

/// No press or release was lost or merged: per player, the applied inputs with consecutive
/// duplicates collapsed are a prefix of its samples collapsed the same way (after the
/// neutral frames of the initial lead). Frames from `until(peer)` on are not checked (the
/// player left); otherwise the applied changes must cover nearly all sampled ones.
pub(super) fn assert_no_tap_lost(sim: &Sim, until: impl Fn(PeerId) -> Option<usize>) {
    let frames = &sim.players[0].applied;
    for p in &sim.players {
        let end = until(p.id).unwrap_or(frames.len()).min(frames.len());
        let applied = collapse(frames[..end].iter().map(|f| f[p.id.index()]));
        let sampled = collapse(std::iter::once(Pad::NEUTRAL).chain(p.pushed.iter().copied()));
        if let Some(i) = (0..applied.len()).find(|&i| sampled.get(i) != Some(&applied[i])) {
            panic!(
                "{}: input change {i} is {:?} on frames but {:?} in samples",
                p.id,
                applied[i],
                sampled.get(i)
            );
        }
        assert!(
            applied.len() * 10 >= sampled.len() * 9 || until(p.id).is_some(),
            "{}: only {} of {} input changes applied",
            p.id,
            applied.len(),
            sampled.len()
        );
    }
}

/// Nobody left and nobody lost the server.
pub(super) fn assert_session_up(sim: &Sim) {
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

/// The network conditions every player count is tested under.
fn conditions() -> Vec<(&'static str, PathSpec)> {
    let rtt = PathSpec::rtt_ms;
    vec![
        ("loss 0%", rtt(60)),
        ("loss 5%", rtt(80).loss(0.05)),
        ("loss 25%", rtt(80).loss(0.25)),
        ("loss 50%", rtt(80).loss(0.5)),
        ("bursty loss", rtt(80).loss(0.01).burst(0.01, 0.25)),
        ("jitter +-40 ms", rtt(100).rtt_jitter_ms(40)),
        ("reordering 20%", rtt(80).rtt_jitter_ms(10).reorder(0.2)),
        ("duplication 20%", rtt(80).duplicate(0.2)),
        ("corrupt 3%, loss 5%", rtt(40).loss(0.05).corrupt(0.03)),
        ("latency 2 s", rtt(2000)),
        (
            "rtt 20 -> 300 -> 20 ms",
            rtt(20).rtt_change(secs(60), 300).rtt_change(secs(120), 20),
        ),
    ]
}

/// Runs every condition with `players` players (clocks drifting +-0.5 %) and checks sync,
/// taps and that the session stays up.
fn matrix(players: usize, frames: usize) {
    for (i, (name, link)) in conditions().into_iter().enumerate() {
        let mut cfg = SimConfig::new(
            config(players, super::DEFAULT_KEYFRAME_INTERVAL),
            drifting(players, link.clone()),
            1000 + i as u64,
        );
        // Tagged as the session layer tags them: an altered datagram never reaches the
        // state machines.
        cfg.sealed = true;
        let (sim, o) = run(cfg, frames);
        print(&format!("{players}p {name}"), &o);
        // Every altered datagram that arrived was dropped, and nothing else.
        assert_eq!(
            sim.corrupted_arrived(),
            sim.dropped_auth,
            "{name}: {} altered datagrams arrived, {} dropped",
            sim.corrupted_arrived(),
            sim.dropped_auth
        );
        assert!(sim.corrupted_arrived() + 8 >= sim.corrupted(), "{name}");
        assert_eq!(link.corrupt > 0.0, sim.corrupted_arrived() > 0, "{name}");
        assert_in_sync(&sim);
        assert_no_tap_lost(&sim, |_| None);
        assert_session_up(&sim);
        assert!(o.frames >= frames, "{name}: only {} frames", o.frames);
    }
}

#[test]
fn two_players_stay_in_sync_under_every_condition() {
    matrix(2, 20_000);
}

#[test]
fn three_players_stay_in_sync_under_every_condition() {
    matrix(3, 20_000);
}

#[test]
fn eight_players_stay_in_sync_under_every_condition() {
    matrix(8, 10_000);
}

#[test]
fn stalls_and_latency_at_100ms_rtt_jitter_and_5pct_loss() {
    let link = PathSpec::rtt_ms(100).rtt_jitter_ms(20).loss(0.05);
    // Within the default send budget: bandwidth capped, stalls and latency within the goals
    // (this round-trip jitter, ±10 ms each way) in every seed. While the lead counted every
    // client's round trip 2 % long (as if time sync always sped it up), seed 3 settled a
    // frame higher, at 167 ms (and 4 of 8 longer runs with other seeds).
    for seed in 0..6 {
        let (sim, o) = run(uniform(2, link.clone(), 11 + seed), 6_000);
        print(&format!("100 ms +-20 ms, 5% loss, seed {seed}"), &o);
        assert_in_sync(&sim);
        assert!(
            o.stall_pct <= 0.5,
            "seed {seed}: stalled {:.3}% of frames",
            o.stall_pct
        );
        assert!(
            o.up_bps <= 2500.0 && o.down_bps <= 2500.0,
            "seed {seed}: {o:?}"
        );
        assert!(o.latency_median_ms <= 100.0 + 50.0, "seed {seed}: {o:?}");
    }
    // Without a budget a side sends every frame on a lossy link: RTT + 50 ms is met.
    let mut cfg = uniform(2, link, 11);
    cfg.lockstep.send_budget = 0;
    let (sim, o) = run(cfg, 30_000);
    print("100 ms +-20 ms, 5% loss, no budget", &o);
    assert_in_sync(&sim);
    assert!(o.stall_pct <= 0.5, "stalled {:.3}% of frames", o.stall_pct);
    assert!(
        o.latency_median_ms <= 100.0 + 50.0,
        "median latency {} ms",
        o.latency_median_ms
    );
    // (It sends more than the default budget allows.)
    assert!(o.up_bps > f64::from(super::DEFAULT_SEND_BUDGET), "{o:?}");
}

#[test]
fn stalls_at_250ms_rtt_and_25pct_loss() {
    let (sim, o) = run(uniform(2, PathSpec::rtt_ms(250).loss(0.25), 12), 30_000);
    print("250 ms, 25% loss", &o);
    assert_in_sync(&sim);
    assert!(o.stall_pct <= 2.0, "stalled {:.3}% of frames", o.stall_pct);
}

#[test]
fn a_round_trip_from_the_handshake_spares_the_start_its_stalls() {
    // Without a round trip before frame 0 the lead starts at its minimum: every client waits
    // about a round trip (plus repairs) for its first inputs. Counted from frame 0 on.
    for (rtt, loss) in [(100, 0.0), (250, 0.0), (250, 0.25)] {
        let stalls = |seeded: bool| {
            let mut cfg = uniform(2, PathSpec::rtt_ms(rtt).loss(loss), 21);
            cfg.warmup = Duration::ZERO;
            cfg.handshake_rtt = seeded;
            let (sim, o) = run(cfg, 600);
            assert_in_sync(&sim);
            let slots: u64 = sim.players.iter().map(|p| p.stalled_slots).sum();
            print(&format!("{rtt} ms {loss} seeded {seeded}"), &o);
            slots
        };
        let (with, without) = (stalls(true), stalls(false));
        // Unseeded, both players wait a good part of a round trip.
        let round_trip_slots = rtt * 60 / 1000;
        assert!(
            without >= round_trip_slots / 2,
            "{rtt} ms: only {without} stalled slots without a seed"
        );
        if loss == 0.0 {
            assert_eq!(with, 0, "{rtt} ms: {with} stalled slots seeded");
        } else {
            assert!(
                with * 3 <= without,
                "{rtt} ms, {loss} loss: {with} stalled slots seeded, {without} without"
            );
        }
    }
}

#[test]
fn survives_2s_rtt_and_25pct_loss() {
    let (sim, o) = run(uniform(3, PathSpec::rtt_ms(2000).loss(0.25), 13), 20_000);
    print("2 s, 25% loss", &o);
    assert_in_sync(&sim);
    assert_no_tap_lost(&sim, |_| None);
    assert_session_up(&sim);
    assert!(o.frames >= 20_000);
}

#[test]
fn lead_rises_fast_on_an_rtt_jump_and_falls_slowly_after() {
    let link = PathSpec::rtt_ms(20)
        .rtt_change(secs(30), 300)
        .rtt_change(secs(60), 20);
    let mut sim = Sim::new(uniform(2, link, 14));
    let lead_at = |sim: &Sim, t: Duration| {
        sim.lead_log
            .iter()
            .rev()
            .find(|(at, _)| *at <= t)
            .map(|(_, l)| *l)
            .unwrap()
    };
    sim.run_until(secs(30));
    let before = sim.server.lead();
    sim.run_until(secs(60));
    let jump_end = sim.lead_log.iter().find(|(_, l)| *l >= 18).map(|(t, _)| *t);
    let high = sim.server.lead();
    sim.run_until(secs(100));
    let after = sim.server.lead();
    println!("lead {before} -> {high} -> {after}, rose at {jump_end:?}");
    // 20 ms is about 1 frame of round trip, 300 ms is 18.
    assert!(before <= 4, "lead {before} at 20 ms");
    let rose = jump_end.expect("the lead never covered 300 ms");
    assert!(rose < secs(31), "took until {rose:?} to cover 300 ms");
    assert!((18..=26).contains(&high), "lead {high} at 300 ms");
    // Down slowly: a second after the drop it is still high; 40 s later it is back.
    assert!(lead_at(&sim, secs(61)) >= high - 1);
    assert!(after <= before + 1, "lead {after} after the link recovered");
    // Never oscillates: after the rise, only small steps down until the end.
    let falls: Vec<_> = sim
        .lead_log
        .windows(2)
        .filter(|w| w[0].0 >= secs(40))
        .map(|w| i64::from(w[1].1) - i64::from(w[0].1))
        .collect();
    assert!(
        falls.iter().all(|&d| (-3..0).contains(&d)),
        "lead changes {falls:?}"
    );
    assert_in_sync(&sim);
    assert_no_tap_lost(&sim, |_| None);
}

#[test]
fn every_client_knows_its_lead_though_updates_name_it_only_until_acknowledged() {
    // UPDATEs name the receiver's lead only until it acknowledges one that does (a byte saved
    // in nearly every datagram). Through a rise and a fall of the lead on a lossy link, each
    // client's lead (its latency figures hang on it) matches the server's once settled.
    let link = PathSpec::rtt_ms(20)
        .loss(0.1)
        .rtt_change(secs(20), 300)
        .rtt_change(secs(40), 20);
    let mut sim = Sim::new(uniform(2, link, 31));
    let mut seen = Vec::new();
    for t in [15, 35, 90] {
        sim.run_until(secs(t));
        let server = sim.server.stats();
        for (i, p) in sim.players.iter().enumerate() {
            let on_server = server.peers.iter().find(|s| s.peer.index() == i).unwrap();
            assert_eq!(
                p.client.stats().lead,
                Some(on_server.lead),
                "player {i} at {t} s"
            );
        }
        seen.push(server.lead);
    }
    assert!(seen[1] > seen[0] && seen[2] < seen[1], "lead {seen:?}");
    assert_in_sync(&sim);
}

#[test]
fn time_sync_prevents_recurring_stalls_from_clock_drift() {
    let run_drift = |apply_pace: bool| {
        let mut cfg = SimConfig::new(
            config(3, super::DEFAULT_KEYFRAME_INTERVAL),
            vec![
                PlayerSpec::symmetric(PathSpec::default()),
                PlayerSpec {
                    clock_rate: 1.005,
                    ..PlayerSpec::symmetric(PathSpec::rtt_ms(60))
                },
                PlayerSpec {
                    clock_rate: 0.995,
                    ..PlayerSpec::symmetric(PathSpec::rtt_ms(60))
                },
            ],
            15,
        );
        cfg.apply_pace = apply_pace;
        run(cfg, 36_000)
    };
    let (sim, with) = run_drift(true);
    let (_, without) = run_drift(false);
    print("drift +-0.5%, time sync", &with);
    print("drift +-0.5%, no time sync", &without);
    assert_in_sync(&sim);
    let paces: Vec<f64> = sim.players.iter().map(|p| p.client.pace()).collect();
    println!("paces {paces:?}");
    // The fast clock is slowed, the slow one sped up.
    assert!(paces[1] < 0.999 && paces[2] > 1.001, "paces {paces:?}");
    assert!(with.stall_pct <= 0.2, "stalled {:.3}%", with.stall_pct);
    assert!(
        without.stall_pct > 5.0 * with.stall_pct.max(0.01),
        "without time sync {:.3}%",
        without.stall_pct
    );
}

/// A server and its only client (K = 1, default budget), wired by the test itself.
pub(super) fn one_player_in_memory() -> (Instant, Server, Client) {
    one_player_in_memory_with(config(1, 1))
}

pub(super) fn one_player_in_memory_with(cfg: Config) -> (Instant, Server, Client) {
    let t0 = Instant::now();
    let mut server = Server::new(t0, cfg.clone()).unwrap();
    server.add_peer(t0, PeerId(0)).unwrap();
    let client = Client::new(t0, cfg, PeerId(0)).unwrap();
    (t0, server, client)
}

#[test]
fn a_falling_lead_does_not_raise_itself_again() {
    // The host's player has no link, the joiner a clean 100 ms one. The lead starts from the
    // handshake's estimate (3 round trips) and falls to the first measurement at once; both
    // players then shed samples. If the host's player shed faster, frames waited for its
    // newer samples, the joiner measured those waits as round trips, and the lead rose
    // again and stuck a frame above what the link needs (9 instead of 8 over real UDP).
    let specs = vec![
        PlayerSpec::symmetric(PathSpec::default()),
        PlayerSpec::symmetric(PathSpec::rtt_ms(100)),
    ];
    let mut cfg = SimConfig::new(config(2, 2), specs, 5);
    cfg.warmup = Duration::ZERO;
    cfg.handshake_rtt = true;
    let (sim, o) = run(cfg, 1800);
    print("host + 100 ms joiner from frame 0", &o);
    assert_in_sync(&sim);
    let leads: Vec<u32> = sim.lead_log.iter().map(|(_, l)| *l).collect();
    let low = leads
        .iter()
        .position(|&l| l <= 10)
        .expect("the lead never fell");
    assert!(
        leads[low..].windows(2).all(|w| w[1] <= w[0]),
        "the lead rose again after falling: {leads:?}"
    );
    assert_eq!(sim.server.lead(), 8, "leads {leads:?}");
}
