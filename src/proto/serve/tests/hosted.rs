//! Hosted rooms: a session id proves no address, one address fills no more than its share
//! of slots, joiners punch only private local addresses, and the relay limits each member
//! and each address.

use super::*;

/// Opens hosted room `name` from `host` (its address proven first): its session id and
/// the host's keys with the server.
fn open_hosted(rooms: &mut Rooms, now: Instant, host: SocketAddr, name: &str) -> (u32, Keys) {
    prove(rooms, now, host);
    let mut request = open(2, name, false);
    request.hosted = true;
    rooms.handle_datagram(now, host, &Msg::Room(RoomMsg::Open(request)).encode(0));
    sent_to(rooms, now, host)
        .iter()
        .find_map(|t| match Msg::decode(&t.bytes) {
            Ok((h, Msg::Room(RoomMsg::Opened { key, .. }))) => {
                Some((h.session, Keys::for_room(&key, Side::Joiner)))
            }
            _ => None,
        })
        .expect("the room opens")
}

/// The host forwards `n` datagrams of `len` bytes to `peer`: the bytes the server sent it.
fn forward(
    rooms: &mut Rooms,
    now: Instant,
    (host, keys): (SocketAddr, &Keys),
    peer: SocketAddr,
    n: usize,
) -> usize {
    let game = vec![0x5a; 1000];
    for _ in 0..n {
        let fwd = RoomMsg::Forward {
            peer,
            datagram: &game,
        };
        rooms.handle_datagram(now, host, &tagged(keys, fwd));
    }
    sent_to(rooms, now, peer)
        .iter()
        .map(|t| t.bytes.len())
        .sum()
}

#[test]
fn a_hosted_rooms_session_id_is_no_proof_of_address() {
    let now = Instant::now();
    let mut rooms = Rooms::new(serve_config());
    let (host, victim, moved) = (client_addr(1), client_addr(2), client_addr(3));
    let (session, keys) = open_hosted(&mut rooms, now, host, "den");
    // Issue 50: one spoofed datagram naming the room's session from the victim's address,
    // then the room's own host forwards to it: a reflector, 61 MB in 3 s.
    let spoofed = Msg::Path(crate::session::msg::PathMsg::Probe).encode(session);
    rooms.handle_datagram(now, victim, &spoofed);
    let got = forward(&mut rooms, now, (host, &keys), victim, 200);
    assert!(
        got <= spoofed.len(),
        "the victim got {got} bytes for the {} it seemed to send",
        spoofed.len()
    );
    assert!(rooms.stats().held_unvalidated > 0);
    // A real joiner whose router moved it: its datagram names the session, it is sent a
    // cookie, echoes it, and from then on gets everything its host forwards.
    let datagram = [0u8; 64];
    let mut probe = Msg::Path(crate::session::msg::PathMsg::Probe).encode(session);
    probe.extend_from_slice(&datagram[..40]);
    rooms.handle_datagram(now, moved, &probe);
    let challenge = sent_to(&mut rooms, now, moved);
    let retry = challenge
        .iter()
        .find(|t| matches!(Msg::decode(&t.bytes), Ok((_, Msg::Retry(_)))))
        .expect("a cookie for the new address");
    assert!(
        forward(&mut rooms, now, (host, &keys), moved, 5) < 5000,
        "on probation"
    );
    rooms.handle_datagram(now, moved, &retry.bytes.clone());
    assert_eq!(
        forward(&mut rooms, now, (host, &keys), moved, 5),
        5000,
        "proven"
    );
    // The victim's address never echoed: forgotten after its probation.
    rooms.handle_timeout(now + rooms::PROBATION + Duration::from_secs(1));
    let later = now + rooms::PROBATION + Duration::from_secs(1);
    assert_eq!(forward(&mut rooms, later, (host, &keys), victim, 5), 0);
}

#[test]
fn one_address_fills_no_more_than_its_share_of_a_hosted_rooms_slots() {
    let now = Instant::now();
    let mut rooms = Rooms::new(serve_config());
    let host = client_addr(1);
    let (session, keys) = open_hosted(&mut rooms, now, host, "den");
    let probe = Msg::Path(crate::session::msg::PathMsg::Probe).encode(session);
    // 32 ports of one machine (issue 50: they filled the room for 2 minutes).
    for port in 0..32u16 {
        let from = SocketAddr::from(([198, 51, 100, 9], 20_000 + port));
        rooms.handle_datagram(now, from, &probe);
    }
    let relayed_from = |rooms: &mut Rooms| {
        sent_to(rooms, now, host)
            .iter()
            .filter_map(|t| match keys.open(&t.bytes).map(Msg::decode) {
                Some(Ok((_, Msg::Room(RoomMsg::Forward { peer, .. })))) => Some(peer),
                _ => None,
            })
            .collect::<std::collections::HashSet<_>>()
            .len()
    };
    assert_eq!(relayed_from(&mut rooms), rooms::MEMBERS_PER_PREFIX);
    // Someone else still gets in.
    let other = client_addr(7);
    rooms.handle_datagram(now, other, &probe);
    assert_eq!(relayed_from(&mut rooms), 1);
}

#[test]
fn a_hosted_rooms_joiners_punch_only_its_private_local_addresses() {
    let named: Vec<SocketAddr> = [
        "192.168.1.20:7845",
        "10.1.2.3:7845",
        "203.0.113.50:53",
        "8.8.8.8:53",
        "[fd00::5]:7845",
        "[fe80::1]:7845",
        "[2001:db8::1]:53",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    let kept = rooms::private_only(&named);
    assert_eq!(kept, [named[0], named[1], named[4], named[5]]);
}

/// Issue 50, part 5: what a hosted room's members send through the relay is limited per
/// member and per IP address (148,000 one-byte datagrams a second became as many tagged
/// Forwards to the host); a game's own traffic passes whole.
#[test]
fn a_hosted_rooms_relay_limits_each_member_and_each_address() {
    let t0 = Instant::now();
    let mut rooms = Rooms::new(serve_config());
    let host = client_addr(1);
    let (session, keys) = open_hosted(&mut rooms, t0, host, "den");
    let probe = Msg::Path(crate::session::msg::PathMsg::Probe).encode(session);
    let forwards = |rooms: &mut Rooms, now: Instant| {
        sent_to(rooms, now, host)
            .iter()
            .filter(|t| {
                matches!(
                    keys.open(&t.bytes).map(Msg::decode),
                    Some(Ok((_, Msg::Room(RoomMsg::Forward { .. }))))
                )
            })
            .count()
    };
    let at = |ms: f64| t0 + Duration::from_secs_f64(ms / 1000.0);
    let ip = [198, 51, 100, 9];
    // One member floods 2,000 datagrams in a second: a burst, then the rate.
    let flooder = SocketAddr::from((ip, 20_000));
    let mut relayed = 0;
    for i in 0..2000 {
        let now = at(i as f64 * 0.5);
        rooms.handle_datagram(now, flooder, &probe);
        relayed += forwards(&mut rooms, now);
    }
    let m = rooms::MEMBER_RATE.datagrams;
    assert!(
        relayed as f64 >= 2.0 * m && relayed as f64 <= 3.0 * m + 1.0,
        "{relayed} relayed of 2000"
    );
    // Five more ports of that machine flood too: together they get what one address gets.
    let mut from_ip = relayed;
    for i in 0..5000 {
        let now = at(1000.0 + i as f64 * 0.2);
        let port = SocketAddr::from((ip, 20_001 + (i % 5) as u16));
        rooms.handle_datagram(now, port, &probe);
        from_ip += forwards(&mut rooms, now);
    }
    let p = rooms::PREFIX_RATE.datagrams;
    assert!(
        from_ip as f64 <= 2.0 * p + 2.0 * p + 1.0,
        "{from_ip} relayed from one address in 2 s (each port alone would pass {})",
        5.0 * 3.0 * m
    );
    // A player on another address sends more than a game's traffic (its inputs, acks and
    // chat: 60 datagrams a second of 600 bytes): all of it passes.
    let player = client_addr(7);
    let (mut game, mut big) = (probe.clone(), probe.clone());
    game.resize(600, 0);
    big.resize(1200, 0);
    let mut passed = 0;
    for i in 0..300 {
        let now = at(2000.0 + i as f64 * 1000.0 / 60.0);
        let d = if i == 0 { &probe } else { &game };
        rooms.handle_datagram(now, player, d);
        passed += forwards(&mut rooms, now);
    }
    assert_eq!(passed, 300);
    // Big datagrams past the byte rate are not.
    let mut passed = 0;
    for i in 0..400 {
        let now = at(7000.0 + i as f64 * 2.5);
        rooms.handle_datagram(now, player, &big);
        passed += forwards(&mut rooms, now);
    }
    let bytes = rooms::MEMBER_RATE.bytes;
    assert!(
        (passed as f64) < (2.0 * bytes + bytes) / 1200.0 + 1.0,
        "{passed} of 400 datagrams of 1,200 B in 1 s"
    );
    assert!(rooms.stats().relay_limited > 0);
}
