//! Chat's codec, rate window, reliable streams and relay, each against hostile or reordered input.

use super::*;

#[test]
fn sanitize_strips_escapes_and_controls_and_cuts_to_200_chars() {
    let evil = "\u{1b}[2J\u{1b}]0;title\u{7}hi\u{1b}[31m red\u{0}\u{202e}x\ty\u{9b}1m";
    assert_eq!(sanitize(evil), "hi redx y");
    let long = "é".repeat(1000);
    assert_eq!(sanitize(&long).chars().count(), MAX_CHARS);
    assert_eq!(sanitize("  \u{1b}[0m "), "");
}

#[test]
fn messages_round_trip_and_garbage_is_refused() {
    let line = ChatLine {
        from: Speaker::In(Slot::Spectator(SpectatorId(17))),
        name: "ana".into(),
        frame: Frame(99),
        text: "gg".into(),
    };
    for m in [
        ChatMsg::Say {
            stream: 1,
            seq: 2,
            frame: Frame(3),
            text: "hello".into(),
        },
        ChatMsg::Line {
            stream: 4,
            seq: 5,
            line,
        },
        ChatMsg::Ack { stream: 6, next: 7 },
    ] {
        let bytes = m.encode(0x1234);
        let (h, body) = Header::parse(&bytes).unwrap();
        assert_eq!((h.kind, h.session), (Kind::Chat, 0x1234));
        assert_eq!(ChatMsg::decode(body), Some(m));
    }
    // A speaker's slot number on the wire: a seat below 16, a spectator from 16 (a
    // watching joiner's own line, never relayed, would carry a spectator's 0xff).
    assert_eq!(
        Speaker::from_number(3),
        Speaker::In(Slot::Player(PeerId(3)))
    );
    assert_eq!(Speaker::OwnWatching.number(), 0xff);
    assert!(Speaker::from_number(Speaker::OwnWatching.number()).is_spectator());
    assert_eq!(Speaker::HOST.player(), Some(PeerId(0)));
    assert_eq!(ChatMsg::decode(&[]), None);
    assert_eq!(ChatMsg::decode(&[OP_ACK, 1, 2]), None);
    assert_eq!(ChatMsg::decode(&[9, 0, 0, 0, 0, 0, 0, 0, 0]), None);
    assert_eq!(ChatMsg::decode(&[OP_LINE, 0, 0, 0, 0, 0, 0, 0, 0]), None);
}

#[test]
fn a_decoded_flood_text_is_cut_and_clean() {
    let text = format!("\u{1b}[2J{}", "a".repeat(1000));
    let m = ChatMsg::Say {
        stream: 1,
        seq: 0,
        frame: Frame(0),
        text,
    };
    let bytes = m.encode(1);
    let Some(ChatMsg::Say { text, .. }) = ChatMsg::decode(&bytes[8..]) else {
        panic!("does not decode");
    };
    assert_eq!(text, "a".repeat(MAX_CHARS));
}

#[test]
fn the_rate_window_takes_five_in_ten_seconds() {
    let t0 = Instant::now();
    let mut w = RateWindow::default();
    for i in 0..5 {
        assert_eq!(w.take(t0 + Duration::from_secs(i)), Ok(()));
    }
    let at = t0 + Duration::from_secs(6);
    assert_eq!(
        w.take(at),
        Err(ChatRefused::TooFast {
            wait: Duration::from_secs(4)
        })
    );
    assert_eq!(w.take(t0 + Duration::from_secs(10)), Ok(()));
}

#[test]
fn streams_deliver_in_order_once_under_reordering_and_resends() {
    let t0 = Instant::now();
    let mut out: Outbox<u32> = Outbox::new(7);
    let mut inb: Inbox<u32> = Inbox::default();
    for i in 0..5 {
        out.push(i);
    }
    let sent: Vec<_> = std::iter::from_fn(|| out.poll(t0)).collect();
    assert_eq!(sent.len(), 5);
    // 0 is lost; the rest arrive backwards, twice.
    let mut got = Vec::new();
    for (seq, v) in sent.iter().skip(1).rev().chain(sent.iter().skip(1)) {
        got.extend(inb.handle(7, *seq, *v));
    }
    assert!(got.is_empty());
    assert!(out.poll(t0 + Duration::from_millis(10)).is_none());
    let Some(ChatMsg::Ack { next: 0, .. }) = inb.poll_ack() else {
        panic!("no ack")
    };
    // The resend of 0 comes after the resend time, and releases all.
    let (seq, v) = out.poll(t0 + RTO_INIT).unwrap();
    got.extend(inb.handle(7, seq, v));
    assert_eq!(got, [0, 1, 2, 3, 4]);
    let Some(ChatMsg::Ack { stream, next }) = inb.poll_ack() else {
        panic!("no ack")
    };
    out.handle_ack(t0 + RTO_INIT, stream, next);
    assert!(out.unacked.is_empty() && out.poll_timeout().is_none());
    // A stale resend is dropped, acked again.
    assert!(inb.handle(7, 2, 2).is_empty());
    assert!(inb.poll_ack().is_some());
    // A new stream starts from 0.
    assert_eq!(inb.handle(8, 0, 9), [9]);
}

#[test]
fn the_relay_drops_and_counts_a_flood_and_acks_it() {
    let t0 = Instant::now();
    let mut relay = ChatRelay::new(1, true);
    let (bob, two) = (Slot::Player(PeerId(1)), Slot::Player(PeerId(2)));
    let roster = [bob, two];
    for seq in 0..30 {
        let say = ChatMsg::Say {
            stream: 5,
            seq,
            frame: Frame(0),
            text: format!("spam {seq}"),
        }
        .encode(1);
        assert_eq!(
            relay.handle(t0, bob, "bob", &say[8..], &roster),
            Handled::Taken
        );
    }
    assert_eq!(relay.flood_dropped(), 30 - RELAY_BURST as u64);
    let lines: Vec<_> = std::iter::from_fn(|| relay.poll_local()).collect();
    assert_eq!(lines.len(), RELAY_BURST as usize);
    // The flood is acknowledged to its sender, relayed to the other.
    let mut acked = false;
    let mut to_two = 0;
    while let Some(Transmit {
        to: slot, bytes, ..
    }) = relay.poll_transmit(t0, 1)
    {
        match ChatMsg::decode(&bytes[8..]) {
            Some(ChatMsg::Ack { next: 30, .. }) => acked = slot == bob,
            Some(ChatMsg::Line { .. }) => to_two += usize::from(slot == two),
            other => panic!("{other:?}"),
        }
    }
    assert!(acked);
    assert_eq!(to_two, WINDOW.min(RELAY_BURST as usize));
}

#[test]
fn each_end_drops_the_other_ends_messages_and_garbage() {
    let t0 = Instant::now();
    let say = ChatMsg::Say {
        stream: 1,
        seq: 0,
        frame: Frame(0),
        text: "hi".into(),
    }
    .encode(1);
    let line = ChatMsg::Line {
        stream: 1,
        seq: 0,
        line: ChatLine {
            from: Speaker::HOST,
            name: "ana".into(),
            frame: Frame(0),
            text: "hi".into(),
        },
    }
    .encode(1);
    let unexpected = Handled::Dropped(Dropped::Unexpected(Kind::Chat));
    let garbage = Handled::Dropped(WireError::Malformed(Kind::Chat).into());
    let mut link = ChatLink::new(1);
    assert_eq!(link.handle(t0, &say[8..]), unexpected);
    assert_eq!(link.handle(t0, &[OP_ACK, 1]), garbage);
    assert_eq!(link.handle(t0, &line[8..]), Handled::Taken);
    assert_eq!(link.poll_line().map(|l| l.from), Some(Speaker::HOST));
    let mut relay = ChatRelay::new(1, false);
    let bob = Slot::Player(PeerId(1));
    assert_eq!(relay.handle(t0, bob, "bob", &line[8..], &[bob]), unexpected);
    assert_eq!(relay.handle(t0, bob, "bob", &[9], &[bob]), garbage);
    assert_eq!(
        relay.handle(t0, bob, "bob", &say[8..], &[bob]),
        Handled::Taken
    );
}
