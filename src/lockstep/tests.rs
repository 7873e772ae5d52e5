//! Lockstep over the simulated network: every client applies the same inputs on every frame,
//! no tap is lost, the lead adapts, and stalls, latency and bandwidth stay within bounds.

use std::time::{Duration, Instant};

use crate::input::Pad;
use crate::wire::Transmit;

use super::frame::{Frame, Slot};
use super::sim::{PathSpec, PlayerSpec, Sim, SimConfig};
use super::{Client, ClientEvent, Config, PeerId, Server, ServerEvent};

pub(super) const FPS: f64 = 60.0;
/// UDP + IPv4 header bytes per datagram, counted in bandwidth figures.
const UDP_IP: u64 = super::budget::UDP_IP_HEADER as u64;

pub(super) fn secs(v: u64) -> Duration {
    Duration::from_secs(v)
}

pub(super) fn config(players: usize, k: u32) -> Config {
    Config {
        players: players as u8,
        session: 0x5eed_0001,
        ..Config::default()
    }
    .with_keyframe_interval(k)
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

/// A session where every remote player has the same symmetric link and the default K.
pub(super) fn uniform(players: usize, link: PathSpec, seed: u64) -> SimConfig {
    SimConfig::new(
        config(players, super::DEFAULT_KEYFRAME_INTERVAL),
        (0..players)
            .map(|_| PlayerSpec::symmetric(link.clone()))
            .collect(),
        seed,
    )
}

/// Measurements of one run, over the time after the warm-up.
#[derive(Debug)]
pub(super) struct Outcome {
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

pub(super) fn outcome(sim: &Sim) -> Outcome {
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
pub(super) fn assert_in_sync(sim: &Sim) {
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

pub(super) fn run(cfg: SimConfig, frames: usize) -> (Sim, Outcome) {
    let mut sim = Sim::new(cfg);
    sim.run_frames(
        frames,
        Duration::from_secs_f64(frames as f64 / FPS * 3.0 + 60.0),
    );
    let o = outcome(&sim);
    (sim, o)
}

pub(super) fn print(name: &str, o: &Outcome) {
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
fn datagrams_held_back_past_newer_ones_on_a_long_link_change_nothing() {
    // 800 ms round trip with ±150 ms each way: datagrams overtake each other by up to 300
    // ms while the receiver moves on by more than the 64 frames a one-byte frame or sample
    // number is read against. Read against where the receiver is now, a late UPDATE put
    // an old stretch of inputs on the frames after its own (a permanent desync seen over
    // real UDP); a late CTRL put old samples after the newest ones.
    let mut link = PathSpec::rtt_ms(800);
    link.jitter = Duration::from_millis(150);
    for seed in [3, 4, 5] {
        let (sim, o) = run(uniform(2, link.clone(), seed), 6_000);
        print(&format!("800 ms +-150 ms each way, seed {seed}"), &o);
        assert_in_sync(&sim);
        assert_no_tap_lost(&sim, |_| None);
        assert_session_up(&sim);
    }
}

#[test]
fn a_ctrl_overtaken_by_64_samples_adds_nothing_at_the_server() {
    // A CTRL carrying samples 0..=10 (first index 0 in one byte: all that was sent then)
    // is held back while the client's later CTRLs bring the server to sample 130. Read
    // then, its 7-bit first index expands to 128, the nearest value to 130 with those low
    // bits: taken, its samples 2..=10 would follow sample 129 as samples 130..=138. The
    // server reads runs only from the newest CTRL, so it adds nothing.
    let (t0, mut server, mut client) = one_player_in_memory();
    let frame = Duration::from_micros(16_667);
    let pad = |i: u32| Pad(1000 + i as u16);
    let mut late = None;
    let mut applied = Vec::new();
    for i in 0..160u32 {
        let now = t0 + frame * i;
        client.push_local_input(now, pad(i));
        while let Some((_, inputs)) = client.poll_frame() {
            applied.push(inputs[0]);
        }
        while let Some(Transmit { bytes: d, .. }) = client.poll_transmit(now) {
            match i {
                // Lost, so that the held-back one carries eleven samples.
                0..10 => {}
                10 => late = Some(d),
                _ => {
                    let _ = server.handle_datagram(now, PeerId(0), &d);
                }
            }
        }
        if i == 129 {
            server.handle_datagram(now, PeerId(0), late.as_ref().expect("held back"));
        }
        server.handle_timeout(now);
        while let Some(Transmit { bytes: d, .. }) = server.poll_transmit(now) {
            client.handle_datagram(now, &d);
        }
    }
    assert_each_sample_once(applied, pad, 140);
}

/// Every sample `pad(0)`, `pad(1)`, ... applied once, in order, after the neutral frames of
/// the lead, and more than `at_least` of them.
fn assert_each_sample_once(applied: Vec<Pad>, pad: impl Fn(u32) -> Pad, at_least: usize) {
    let applied = collapse(applied.into_iter().filter(|p| *p != Pad::NEUTRAL));
    let sent: Vec<Pad> = (0..applied.len() as u32).map(pad).collect();
    assert!(
        applied.len() > at_least,
        "{} samples applied",
        applied.len()
    );
    if let Some(i) = applied.iter().zip(&sent).position(|(a, s)| a != s) {
        panic!("change {i}: applied {:?}, sent {:?}", applied[i], sent[i]);
    }
}

#[test]
fn an_update_overtaken_by_64_acks_acknowledges_nothing_at_the_client() {
    // The client's half of the newest-datagram rule, for acks. The UPDATE of step 10 acks
    // CTRL 10 in one byte (its low 7 bits, against the ack the client is known to hold) and
    // is held back. CTRLs 130..=138 are lost, so the client's newest ack is 129 when the
    // held-back UPDATE arrives, after CTRL 138 left. Read then, its ack expands to 138, the
    // nearest value to 129 with those low bits: taken, the client would forget samples
    // 130..=138, which the server never got, and code every later CTRL against a sample the
    // server lacks (the session stood still at sample 130). The client reads acks only from
    // the newest UPDATE. (The server's half is not reached this way: a CTRL that late is
    // coded against a sample the server has let go of, and is dropped whole.)
    let mut cfg = config(1, 1);
    cfg.send_budget = 0;
    let (t0, mut server, mut client) = one_player_in_memory_with(cfg);
    server.set_send_budget(PeerId(0), 0).unwrap();
    let frame = Duration::from_micros(16_667);
    let pad = |i: u32| Pad(1000 + i as u16);
    let mut ctrls = 0u32;
    let mut late: Option<Vec<u8>> = None;
    let mut applied = Vec::new();
    for i in 0..300u32 {
        let now = t0 + frame * i;
        client.push_local_input(now, pad(i));
        while let Some((_, inputs)) = client.poll_frame() {
            applied.push(inputs[0]);
        }
        while let Some(Transmit { bytes: d, .. }) = client.poll_transmit(now) {
            if !(130..=138).contains(&ctrls) {
                server.handle_datagram(now, PeerId(0), &d);
            }
            ctrls += 1;
            if ctrls == 139 {
                client.handle_datagram(now, late.as_deref().expect("held back"));
            }
        }
        server.handle_timeout(now);
        while let Some(Transmit { bytes: d, .. }) = server.poll_transmit(now) {
            if i == 10 && late.is_none() {
                late = Some(d);
            } else {
                client.handle_datagram(now, &d);
            }
        }
    }
    assert!(
        ctrls >= 280,
        "only {ctrls} CTRLs: one a sample was expected"
    );
    assert_each_sample_once(applied, pad, 280);
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

#[test]
fn bandwidth_at_two_players_stays_under_2_5_kb_per_second() {
    // Over IPv4 and over IPv6, whose 20 more header bytes a datagram would add over 1 KB/s
    // at 54 datagrams a second if the budget did not count them. A little loss makes each
    // side send every frame it can: the budget binds.
    for (family, header) in [("IPv4", 28), ("IPv6", 48)] {
        let mut cfg = uniform(2, PathSpec::rtt_ms(100).loss(0.02), 16);
        cfg.lockstep.udp_ip_header = header;
        let (sim, o) = run(cfg, 20_000);
        print(&format!("bandwidth, 2 players, 100 ms, {family}"), &o);
        assert_in_sync(&sim);
        assert!(o.up_bps <= 2500.0, "{family}: up {:.0} B/s", o.up_bps);
        assert!(o.down_bps <= 2500.0, "{family}: down {:.0} B/s", o.down_bps);
    }
}

#[test]
fn a_peer_without_send_budget_gets_every_round() {
    // Two clients wired to the server in memory, a sample per millisecond when they have a
    // frame for it (as fast as a catching-up peer): every publication is a round for each
    // client. Peer 0 (the host's own client in `netplay`) has no budget, peer 1 keeps the
    // default one.
    let cfg = config(2, 1);
    let t0 = Instant::now();
    let mut server = Server::new(t0, cfg.clone()).unwrap();
    let mut clients = Vec::new();
    for i in 0..2u8 {
        server.add_peer(t0, PeerId(i)).unwrap();
        // The clients send every sample at once, so the server publishes every millisecond.
        let unlimited = Config {
            send_budget: 0,
            ..cfg.clone()
        };
        clients.push(Client::new(t0, unlimited, PeerId(i)).unwrap());
    }
    server.set_send_budget(PeerId(0), 0).unwrap();
    assert_eq!(
        server.set_send_budget(PeerId(5), 0),
        Err(super::LockstepError::NotPresent(PeerId(5)))
    );
    let mut received = [0u64; 2];
    for ms in 0..1000u64 {
        let now = t0 + Duration::from_millis(ms);
        for c in clients.iter_mut() {
            c.push_local_input(now, crate::input::Pad::NEUTRAL);
            while c.poll_frame().is_some() {}
            while let Some(Transmit { bytes: d, .. }) = c.poll_transmit(now) {
                server.handle_datagram(now, c.me(), &d);
            }
        }
        server.handle_timeout(now);
        while let Some(Transmit { to, bytes: d, .. }) = server.poll_transmit(now) {
            received[to.number() as usize] += 1;
            clients[to.number() as usize].handle_datagram(now, &d);
        }
    }
    eprintln!(
        "UPDATEs in 1 s: {} without a budget, {} with",
        received[0], received[1]
    );
    // 2450 B/s buys about 57 of these (about 15 bytes + 28 of headers each). Peer 1 then
    // runs out of frames and samples between its UPDATEs, which bounds the publications;
    // peer 0 still gets a round for each (with the budget too, both got 57).
    assert!(received[1] <= 65, "{received:?}");
    assert!(received[0] >= 2 * received[1] - 5, "{received:?}");
}

/// A server and its only client (K = 1, default budget), wired by the test itself.
fn one_player_in_memory() -> (Instant, Server, Client) {
    one_player_in_memory_with(config(1, 1))
}

fn one_player_in_memory_with(cfg: Config) -> (Instant, Server, Client) {
    let t0 = Instant::now();
    let mut server = Server::new(t0, cfg.clone()).unwrap();
    server.add_peer(t0, PeerId(0)).unwrap();
    let client = Client::new(t0, cfg, PeerId(0)).unwrap();
    (t0, server, client)
}

#[test]
fn a_ctrl_short_of_budget_waits_for_the_next_sample_not_for_tokens() {
    // K = 1: every sample asks for a CTRL, but 2000 B/s buys about 50 a second, so some
    // samples must wait. The feed polls the network every 2 ms, like `netplay`'s loop. If a
    // CTRL left as soon as the bucket refilled, mid-frame, the bucket would be empty at the
    // next push and every sample would wait for tokens; held for the next sample, most
    // samples leave the moment they are pushed.
    let mut cfg = config(1, 1);
    cfg.send_budget = 2000;
    let (t0, mut server, mut client) = one_player_in_memory_with(cfg);
    server.set_send_budget(PeerId(0), 0).unwrap();
    let frame = Duration::from_micros(16_667);
    // CTRLs sent, and those of them sent in the same call as a push.
    let mut sent = 0usize;
    let mut sent_as_pushed = 0usize;
    let mut pushes = 0u32;
    let mut bytes = 0usize;
    for step in 0..5_000u32 {
        // Frame ticks fall between the 2 ms service polls; both are visited in time order.
        let service = t0 + Duration::from_millis(2 * u64::from(step));
        let tick = t0 + frame * pushes;
        let now = if tick <= service {
            pushes += 1;
            client.push_local_input(tick, Pad(u16::from(pushes.is_multiple_of(7))));
            while client.poll_frame().is_some() {}
            tick
        } else {
            service
        };
        while let Some(Transmit { bytes: d, .. }) = client.poll_transmit(now) {
            bytes += d.len() + UDP_IP as usize;
            sent += 1;
            sent_as_pushed += usize::from(now == tick);
            server.handle_datagram(now, PeerId(0), &d);
        }
        server.handle_timeout(now);
        while let Some(Transmit { bytes: d, .. }) = server.poll_transmit(now) {
            client.handle_datagram(now, &d);
        }
    }
    let secs = (frame * pushes).as_secs_f64();
    let rate = sent as f64 / secs;
    let at_push = sent_as_pushed as f64 / f64::from(pushes);
    eprintln!(
        "{pushes} samples, {sent} CTRLs ({rate:.0}/s, {:.0} B/s), {:.0}% sent as pushed",
        bytes as f64 / secs,
        100.0 * at_push
    );
    // The budget binds (fewer CTRLs than samples) and is kept ...
    assert!(rate < 57.0 && bytes as f64 / secs <= 2050.0, "{rate:.1}/s");
    // ... and the CTRLs leave with a sample: mid-frame sends would leave almost none.
    assert_eq!(sent_as_pushed, sent, "some CTRLs left mid-frame");
    assert!(
        at_push > 0.75,
        "{:.0}% of samples sent at once",
        100.0 * at_push
    );
}

#[test]
fn a_client_learns_once_how_far_behind_the_host_it_started() {
    // 50 ms each way. Frame 0 waits for the client's first CTRL; here that one is lost. Every
    // CTRL carries a timestamp until the client has a round trip (not only every
    // `TS_EVERY`-th), so the second one's echo comes with the first frames: the answer is
    // there at once, half the round trip, said once. (Protocol 6 stamped only every 4th: the
    // first frames came without a round trip, and the answer 3 frames later.)
    let (t0, mut server, mut client) = one_player_in_memory();
    let ms = Duration::from_millis;
    let frame = Duration::from_micros(16_667);
    let mut t = t0;
    let mut pushes = 0u32;
    let behind = loop {
        assert!(pushes < 20, "no start delay after {pushes} frames");
        client.push_local_input(t, Pad(pushes as u16 & 1));
        pushes += 1;
        let ctrls: Vec<_> =
            std::iter::from_fn(|| client.poll_transmit(t).map(|t| t.bytes)).collect();
        for d in ctrls.iter().filter(|_| pushes > 1) {
            server.handle_datagram(t + ms(50), PeerId(0), d);
        }
        while let Some(Transmit { bytes: d, .. }) = server.poll_transmit(t + ms(50)) {
            client.handle_datagram(t + ms(100), &d);
        }
        while client.poll_frame().is_some() {}
        if let Some(b) = client.take_start_delay() {
            break b;
        }
        t += frame;
    };
    assert_eq!(pushes, 2, "the first frames came without a round trip");
    assert!(behind >= ms(49) && behind <= ms(51), "{behind:?}");
    assert_eq!(client.take_start_delay(), None, "said once");
}

#[test]
fn frame_zero_waits_for_every_players_first_ctrl() {
    // A joiner whose window opens 120 ms after the lobby starts that much after the host.
    // Had the host's frames started without it, they would wait for its inputs at every
    // keyframe until time sync caught it up (a headless host stalled 63-67 of 600 frames
    // behind a joiner in a window under Xvfb); so nothing is published until everyone runs.
    let cfg = config(2, 2);
    let t0 = Instant::now();
    let mut server = Server::new(t0, cfg.clone()).unwrap();
    let mut clients = [0u8, 1].map(|p| {
        server.add_peer(t0, PeerId(p)).unwrap();
        Client::new(t0, cfg.clone(), PeerId(p)).unwrap()
    });
    let ms = Duration::from_millis;
    clients[0].push_local_input(t0, Pad::NEUTRAL);
    while let Some(Transmit { bytes: d, .. }) = clients[0].poll_transmit(t0) {
        server.handle_datagram(t0, PeerId(0), &d);
    }
    // Called before its first sample (by a network thread while its window opens), player 2
    // has nothing to send: its first CTRL would tell the server it runs.
    let early = t0 + ms(1000);
    clients[1].handle_timeout(early);
    assert!(
        clients[1].poll_transmit(early).is_none(),
        "a CTRL before any sample"
    );
    assert!(clients[1].poll_timeout().is_some_and(|t| t > early));
    // The 2 s timeout stays the limit for a player that never starts.
    server.handle_timeout(t0 + ms(1500));
    assert_eq!(
        server.frontier(),
        Frame::ZERO,
        "published before player 2 ran"
    );
    assert!(clients[0].poll_frame().is_none());
    let late = t0 + ms(1500);
    clients[1].push_local_input(late, Pad::NEUTRAL);
    while let Some(Transmit { bytes: d, .. }) = clients[1].poll_transmit(late) {
        server.handle_datagram(late, PeerId(1), &d);
    }
    assert!(
        server.frontier() > Frame::ZERO,
        "nothing published once both ran"
    );
    while let Some(Transmit { to, bytes: d, .. }) = server.poll_transmit(late) {
        clients[to.number() as usize].handle_datagram(late, &d);
    }
    assert!(
        clients[0].poll_frame().is_some(),
        "frame 0 did not reach player 1"
    );
    // That wait was the session starting, not a stall.
    let s = clients[0].stats();
    assert_eq!((s.stalls, s.stalled), (0, Duration::ZERO));

    // A player that never starts (nor says it loads) is dropped once it has been silent
    // for `UNCONTACTED_SILENCE`, and the others play on.
    let mut server = Server::new(t0, cfg.clone()).unwrap();
    server.add_peer(t0, PeerId(0)).unwrap();
    server.add_peer(t0, PeerId(1)).unwrap();
    let mut host = Client::new(t0, cfg.clone(), PeerId(0)).unwrap();
    host.push_local_input(t0, Pad::NEUTRAL);
    while let Some(Transmit { bytes: d, .. }) = host.poll_transmit(t0) {
        server.handle_datagram(t0, PeerId(0), &d);
    }
    let limit = super::server::UNCONTACTED_SILENCE;
    for at in (1..=4).map(|s| t0 + ms(s * 900)) {
        host.handle_timeout(at);
        while let Some(Transmit { bytes: d, .. }) = host.poll_transmit(at) {
            server.handle_datagram(at, PeerId(0), &d);
        }
        server.handle_timeout(at);
    }
    server.handle_timeout(t0 + limit - ms(100));
    assert_eq!(server.frontier(), Frame::ZERO);
    server.handle_timeout(t0 + limit + ms(100));
    assert!(std::iter::from_fn(|| server.poll_event()).any(|e| matches!(
        e,
        ServerEvent::PeerLeft {
            peer: PeerId(1),
            ..
        }
    )));
    assert!(
        server.frontier() > Frame::ZERO,
        "nothing published after the silent player was dropped"
    );
}

#[test]
fn a_player_that_runs_but_has_not_heard_the_server_gets_longer_before_it_is_dropped() {
    // A joiner at the lobby's pace speaks once a second until the server's first UPDATE
    // reaches it; on a slow, lossy link two of those lost in a row are not a player gone.
    let cfg = config(2, 2);
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let dropped = |server: &mut Server| {
        std::iter::from_fn(|| server.poll_event()).any(|e| {
            matches!(
                e,
                ServerEvent::PeerLeft {
                    peer: PeerId(1),
                    ..
                }
            )
        })
    };
    for contact in [false, true] {
        let mut server = Server::new(t0, cfg.clone()).unwrap();
        server.add_peer(t0, PeerId(0)).unwrap();
        server.add_peer(t0, PeerId(1)).unwrap();
        let mut joiner = Client::new(t0, cfg.clone(), PeerId(1)).unwrap();
        if contact {
            // It heard the server once: its CTRLs acknowledge that from now on.
            server.handle_timeout(t0);
            while let Some(Transmit { to, bytes, .. }) = server.poll_transmit(t0) {
                if to == Slot::Player(PeerId(1)) {
                    joiner.handle_datagram(t0, &bytes);
                }
            }
        }
        joiner.push_local_input(t0, Pad::NEUTRAL);
        while let Some(Transmit { bytes: d, .. }) = joiner.poll_transmit(t0) {
            server.handle_datagram(t0, PeerId(1), &d);
        }
        server.handle_timeout(t0 + ms(2100));
        assert_eq!(dropped(&mut server), contact, "contact {contact}, 2.1 s");
        if !contact {
            server.handle_timeout(t0 + super::server::UNCONTACTED_SILENCE + ms(100));
            assert!(dropped(&mut server), "still there after 5 s of silence");
        }
    }
}

#[test]
fn a_player_that_has_not_run_yet_gets_longer_unless_it_says_it_loads() {
    // Its first CTRLs may have reached the lobby before this server was there, and the
    // next come at the lobby's pace: 2 s of silence are not a player gone. One that says
    // it is loading (the session layer's keepalive) keeps the 2-s rule.
    let cfg = config(2, 2);
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let left = |server: &mut Server| {
        std::iter::from_fn(|| server.poll_event()).any(|e| {
            matches!(
                e,
                ServerEvent::PeerLeft {
                    peer: PeerId(1),
                    ..
                }
            )
        })
    };
    for loading in [false, true] {
        let mut server = Server::new(t0, cfg.clone()).unwrap();
        server.add_peer(t0, PeerId(0)).unwrap();
        server.add_peer(t0, PeerId(1)).unwrap();
        if loading {
            assert!(server.starting(t0 + ms(100), PeerId(1)));
        }
        server.handle_timeout(t0 + ms(2200));
        assert_eq!(left(&mut server), loading, "loading {loading}, 2.2 s");
        server.handle_timeout(t0 + super::server::UNCONTACTED_SILENCE + ms(100));
        if !loading {
            assert!(left(&mut server), "still there after 5 s of silence");
        }
    }
}

#[test]
fn samples_taken_before_the_first_frames_carry_no_age() {
    // The frame-0 sample waits for the session to start; its age would tell the server's
    // time sync that the client's frame clock started that much earlier than it did.
    let (t0, mut server, mut client) = one_player_in_memory();
    let ms = Duration::from_millis;
    let age_of = |d: &[u8]| {
        let (_, body) = crate::wire::Header::parse(d).unwrap();
        let c =
            super::msg::decode_ctrl(body, crate::wire::is_short(d), 0, 0, |_| Some(Pad::NEUTRAL))
                .unwrap();
        c.samples.expect("a run").age_ms
    };
    client.push_local_input(t0, Pad::NEUTRAL);
    let first = client.poll_transmit(t0 + ms(5)).expect("a CTRL").bytes;
    assert_eq!(
        age_of(&first),
        None,
        "the frame-0 sample's wait went out as its age"
    );
    server.handle_datagram(t0 + ms(5), PeerId(0), &first);
    while let Some(Transmit { bytes: d, .. }) = server.poll_transmit(t0 + ms(5)) {
        client.handle_datagram(t0 + ms(5), &d);
    }
    assert!(client.poll_frame().is_some(), "the first frames arrived");
    let now = t0 + ms(20);
    client.push_local_input(now, Pad(1));
    let next = client.poll_transmit(now + ms(3)).expect("a CTRL").bytes;
    assert_eq!(age_of(&next), Some(3));
}

#[test]
fn a_waiting_player_samples_its_pad_on_its_frame_clock() {
    // Player 0's CTRLs are held up for 10 frame periods, so both players wait at the same
    // keyframe (a common stall), their feeds pushing the pad every 2 ms as `netplay`'s does.
    // Each samples once per period waited: when player 0's CTRLs get through, the server
    // holds both players' input for the frames they will catch up on and publishes them at
    // once. Sampled only as those frames ran, the input would arrive in a burst after the
    // stall, late for its frames, and stall every player again.
    // The lead is pinned: the held CTRLs' round trip would otherwise raise it meanwhile.
    // No send budget: in memory nothing is on a wire, and a CTRL held back for tokens
    // would decide the count below instead of the sampling.
    let cfg = Config {
        min_lead: 2,
        max_lead: 2,
        send_budget: 0,
        ..config(2, 1)
    };
    let t0 = Instant::now();
    let mut server = Server::new(t0, cfg.clone()).unwrap();
    let mut clients = [0u8, 1].map(|p| {
        server.add_peer(t0, PeerId(p)).unwrap();
        Client::new(t0, cfg.clone(), PeerId(p)).unwrap()
    });
    let frame = cfg.frame_duration();
    let mut held: Vec<Vec<u8>> = Vec::new();
    // Moves every datagram at `now` with no delay, holding player 0's while `hold`.
    let mut exchange = |server: &mut Server, clients: &mut [Client; 2], now, hold: bool| {
        for _ in 0..4 {
            server.handle_timeout(now);
            while let Some(Transmit { to, bytes: d, .. }) = server.poll_transmit(now) {
                clients[to.number() as usize].handle_datagram(now, &d);
            }
            for (i, c) in clients.iter_mut().enumerate() {
                c.handle_timeout(now);
                while let Some(Transmit { bytes: d, .. }) = c.poll_transmit(now) {
                    if i == 0 && hold {
                        held.push(d);
                    } else {
                        server.handle_datagram(now, PeerId(i as u8), &d);
                    }
                }
            }
        }
    };
    // 60 frame periods in step: push, exchange, run, exchange.
    let mut ran = [0u32; 2];
    for tick in 0..60u32 {
        let now = t0 + frame * tick;
        for c in &mut clients {
            c.push_local_input(now, Pad(u16::from(tick % 8 < 4)));
        }
        exchange(&mut server, &mut clients, now, false);
        for (c, ran) in clients.iter_mut().zip(&mut ran) {
            *ran += u32::from(c.poll_frame().is_some());
        }
        exchange(&mut server, &mut clients, now, false);
    }
    assert!(
        ran[0] == ran[1] && ran[0] >= 50,
        "ran {ran:?} frames in step"
    );
    // From the next tick on, player 0's CTRLs are held for 10 frame periods; the feeds push
    // every 2 ms meanwhile (the pad as it is) and ask for the next frame.
    let start = t0 + frame * 60;
    let stalled_at = server.frontier();
    for ms in (0..167).step_by(2) {
        let now = start + Duration::from_millis(ms);
        for c in &mut clients {
            c.push_local_input(now, Pad(0));
        }
        exchange(&mut server, &mut clients, now, true);
        for (c, ran) in clients.iter_mut().zip(&mut ran) {
            *ran += u32::from(c.poll_frame().is_some());
        }
    }
    assert_eq!(
        server.frontier(),
        stalled_at,
        "published without player 0's input"
    );
    // Player 0's CTRLs get through. The two frames published before the hold ran at once
    // (this loop polls without pacing), so both waited from 4 ms in: 162 ms, 9 periods. The
    // server now holds both players' samples for the 3 frames sampled before the wait and
    // one per period waited: 12 frames published at once (3 if sampled only as frames ran).
    let end = start + Duration::from_millis(168);
    for d in std::mem::take(&mut held) {
        server.handle_datagram(end, PeerId(0), &d);
    }
    let gained = server.frontier().0 - stalled_at.0;
    assert_eq!(gained, 12, "frames published at once after the wait");
}

#[test]
fn datagrams_stay_under_the_limit_with_2s_of_unacked_changing_input() {
    let mut cfg = uniform(8, PathSpec::rtt_ms(2000).loss(0.25), 18);
    cfg.chaotic_bots = true;
    let (sim, o) = run(cfg, 3_000);
    print("8 players, input changes every frame", &o);
    println!(
        "largest CTRL {} B, UPDATE {} B",
        sim.max_ctrl, sim.max_update
    );
    assert!(sim.max_ctrl <= crate::wire::MAX_DATAGRAM);
    assert!(sim.max_update <= crate::wire::MAX_DATAGRAM);
    // The worst case really needed segmenting: 8 players x 18 bits x 2 s > 1200 bytes.
    assert!(
        sim.max_update > 1000,
        "largest UPDATE only {}",
        sim.max_update
    );
    assert_in_sync(&sim);
    assert_no_tap_lost(&sim, |_| None);
}

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

#[test]
fn the_wait_for_the_first_frames_is_not_an_input_round_trip() {
    // A joiner pushes its frame-0 sample and then waits for the host to start (a one-way
    // trip for the start-state ack, then the host's first UPDATE). That wait is the session
    // starting, not the link; counted, it is the largest of the first report's 60 samples,
    // which the server adopts at once (10 instead of 8 frames on a clean 100 ms link).
    let (t0, mut server, mut client) = one_player_in_memory();
    let start = Duration::from_millis(500);
    let one_way = Duration::from_millis(10);
    // Datagrams in flight: (arrival, to the server?, bytes).
    let mut flight: Vec<(Instant, bool, Vec<u8>)> = Vec::new();
    let mut frames = 0;
    let mut t = t0;
    let first_report = loop {
        if let Some(rtt) = server.stats().peers[0].input_rtt {
            break rtt;
        }
        assert!(frames < 600, "no input round trip reported");
        // The host's server runs from `start` on; what the client sent before waits for it.
        let host_up = t >= t0 + start;
        flight.sort_by_key(|(at, ..)| *at);
        while host_up && flight.first().is_some_and(|(at, ..)| *at <= t) {
            let (_, to_server, bytes) = flight.remove(0);
            if to_server {
                server.handle_datagram(t, PeerId(0), &bytes);
            } else {
                client.handle_datagram(t, &bytes);
            }
        }
        if host_up {
            server.handle_timeout(t);
            while let Some(Transmit { bytes, .. }) = server.poll_transmit(t) {
                flight.push((t + one_way, false, bytes));
            }
        }
        client.push_local_input(t, Pad(frames as u16 & 1));
        if client.poll_frame().is_some() {
            frames += 1;
        }
        while let Some(Transmit { bytes, .. }) = client.poll_transmit(t) {
            flight.push((t + one_way, true, bytes));
        }
        t += Duration::from_millis(1);
    };
    assert!(
        first_report < Duration::from_millis(100),
        "first input round trip {first_report:?}: the start's 500 ms wait was counted"
    );
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

#[test]
fn a_joiner_runs_in_phase_with_the_host_from_the_start() {
    // The joiner gets frame 0 a one-way trip (1 s) after the host ran it. Catching that up
    // once it knows the round trip puts it in phase within 3 s; left to time sync (2 %) it
    // would still be about 40 frames behind after 10 s. (Between, time sync still acts on
    // origins measured before the catch-up, for a round trip: about 6 frames of overshoot.)
    for seed in 0..3 {
        let mut sim = Sim::new(uniform(2, PathSpec::rtt_ms(2000).loss(0.25), 40 + seed));
        for t in [3, 10, 20] {
            sim.run_until(secs(t));
            let (host, joiner) = (sim.players[0].applied.len(), sim.players[1].applied.len());
            assert!(
                host.abs_diff(joiner) <= 3,
                "seed {seed}, {t} s: host at frame {host}, joiner at {joiner}"
            );
        }
        assert_in_sync(&sim);
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
