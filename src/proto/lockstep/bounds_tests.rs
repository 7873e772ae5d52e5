//! No single datagram, even one from the right peer in the right format, can freeze or end
//! a session: values the receiver cannot possibly get (a sequence number far ahead, an ack
//! of a datagram never sent, a checksum of a frame not yet published) are dropped, not
//! trusted. Each test fails without its check.

use super::msg::{self, Ctrl, Echo, FrameRun, LinkHeader, Update, MAX_SEQ_JUMP};
use super::sim::{PathSpec, PlayerSpec, Sim, SimConfig};
use super::tests::{assert_in_sync, config, secs};
use super::{Frame, PeerId, ServerEvent};

const SESSION: u32 = 0x5eed_0001;

fn two_players() -> Sim {
    let link = PathSpec::rtt_ms(60);
    let specs = vec![
        PlayerSpec::symmetric(link.clone()),
        PlayerSpec::symmetric(link),
    ];
    let mut sim = Sim::new(SimConfig::new(config(2, 2), specs, 2600));
    sim.run_until(secs(10));
    sim
}

/// A CTRL from player 2 with `head`, no samples, and `checksums`.
fn ctrl(head: LinkHeader, checksums: Vec<(Frame, u64)>) -> Vec<u8> {
    msg::encode_ctrl(
        SESSION,
        &Ctrl {
            head,
            input_rtt_ms: None,
            samples: None,
            checksums,
            pause: None,
            stopped: false,
        },
        0..=0,
        None,
    )
}

fn head(seq: u16, ack: Option<u16>) -> LinkHeader {
    LinkHeader {
        seq,
        ack,
        ts: None,
        echo: None,
    }
}

/// The session after the injection: still publishing, in sync, player 2 barely stalled, and
/// the injected datagram counted as dropped.
fn assert_unharmed(mut sim: Sim, dropped_before: u64, what: &str) {
    let frames_before = sim.players[1].applied.len();
    let until = sim.now() + secs(20);
    sim.run_until(until);
    assert_in_sync(&sim);
    let p = &sim.players[1];
    assert!(
        p.applied.len() > frames_before + 1100,
        "{what}: player 2 ran {} frames in 20 s",
        p.applied.len() - frames_before
    );
    let stalled = p.stalled_slots as f64 / p.slots.max(1) as f64;
    assert!(
        stalled < 0.01,
        "{what}: player 2 stalled {:.1}%",
        stalled * 100.0
    );
    let dropped = sim.server.stats().traffic.packets_dropped_invalid
        + sim.players[1]
            .client
            .stats()
            .traffic
            .packets_dropped_invalid;
    assert_eq!(
        dropped - dropped_before,
        1,
        "{what}: the datagram was not dropped"
    );
}

fn dropped(sim: &Sim) -> u64 {
    sim.server.stats().traffic.packets_dropped_invalid
        + sim.players[1]
            .client
            .stats()
            .traffic
            .packets_dropped_invalid
}

/// The newest sequence number the server has from player 2.
fn newest_ctrl_seq(sim: &mut Sim) -> u16 {
    sim.server
        .newest_seq_from(PeerId(1))
        .expect("player 2 sent")
}

#[test]
fn a_ctrl_sequence_number_far_ahead_is_dropped() {
    let mut sim = two_players();
    let seq = newest_ctrl_seq(&mut sim);
    let before = dropped(&sim);
    // Trusted, every genuine CTRL after it would look old and its samples be ignored.
    sim.inject_to_server(
        PeerId(1),
        &ctrl(head(seq.wrapping_add(MAX_SEQ_JUMP + 500), None), vec![]),
    );
    assert_unharmed(sim, before, "seq far ahead");
}

#[test]
fn an_ack_of_an_update_never_sent_is_dropped() {
    let mut sim = two_players();
    let seq = newest_ctrl_seq(&mut sim);
    let before = dropped(&sim);
    // The server has sent player 2 a few hundred UPDATEs: an ack of its 5000th is forged.
    sim.inject_to_server(
        PeerId(1),
        &ctrl(head(seq.wrapping_add(1), Some(5000)), vec![]),
    );
    let delivered = |s: &Sim| s.server.delivered(PeerId(1)).unwrap().0;
    let at = delivered(&sim);
    sim.run_until(secs(20));
    // The frames player 2 acknowledges are still taken as delivered.
    assert!(delivered(&sim) > at + 500, "{} -> {}", at, delivered(&sim));
    assert_unharmed(sim, before, "ack never sent");
}

#[test]
fn a_checksum_of_a_frame_not_yet_published_is_dropped() {
    let mut sim = two_players();
    let seq = newest_ctrl_seq(&mut sim);
    let before = dropped(&sim);
    let ahead = sim.server.frontier().0 + 600;
    // Trusted, it would be compared with the host's checksum of that frame when it comes:
    // a desync that never happened, and a resync.
    let forged = ctrl(
        head(seq.wrapping_add(1), None),
        vec![(Frame(ahead), 0xdead_beef)],
    );
    sim.inject_to_server(PeerId(1), &forged);
    sim.run_until(secs(30));
    let desync = sim
        .server_events
        .iter()
        .find(|(_, e)| matches!(e, ServerEvent::Desync { .. }));
    assert!(desync.is_none(), "{desync:?}");
    assert_unharmed(sim, before, "checksum ahead");
}

#[test]
fn an_update_sequence_number_far_ahead_is_dropped() {
    let sim = two_players();
    let before = dropped(&sim);
    // The server has sent player 2 a few hundred UPDATEs: 6000 is far ahead, yet "newer".
    let update = Update {
        head: LinkHeader {
            seq: 6000,
            ack: None,
            ts: None,
            echo: None::<Echo>,
        },
        up_lossy: false,
        advance: None,
        frames: None::<FrameRun>,
        notices: vec![],
    };
    let forged = msg::encode_update(SESSION, 2, &update, 0..=0, None);
    let mut sim = sim;
    sim.inject_to_player(1, &forged);
    assert_unharmed(sim, before, "UPDATE seq far ahead");
}
