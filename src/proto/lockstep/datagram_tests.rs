//! What lockstep's datagrams carry and cost: held-back and overtaken datagrams change
//! nothing, each sample counts once, the send budget never starves a round, and sizes and
//! bandwidth stay under their limits.

use std::time::{Duration, Instant};

use crate::input::Pad;
use crate::wire::Transmit;

use super::sim::PathSpec;
use super::tests::{
    assert_in_sync, assert_no_tap_lost, assert_session_up, collapse, config, one_player_in_memory,
    one_player_in_memory_with, print, run, uniform, UDP_IP,
};
use super::{Client, Config, PeerId, Server};

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
