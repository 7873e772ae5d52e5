//! Hostile and damaged traffic during the handshake: stray datagrams, noise from the
//! host's address, control characters in names and altered datagrams or keys change
//! nothing that matters.

use super::*;

#[test]
fn hostile_datagrams_do_not_disturb_a_transfer_and_are_counted() {
    let state = random_state(300_000, 4);
    let mut sim = Sim::new(cfg(), state.clone(), "loss=10%,delay=5ms");
    let a = sim.join(1, info("ana"), None);
    let mut rng = SmallRng::seed_from_u64(5);
    let mut sent = 0u64;
    let wrong_session = |kind: u8, rng: &mut SmallRng| {
        let mut d = vec![b'F', b'L', PROTOCOL_VERSION, kind];
        d.extend_from_slice(&rng.gen_range(1u32..0xfeed_0000).to_le_bytes());
        d.extend((0..rng.gen_range(0..40)).map(|_| rng.gen::<u8>()));
        d
    };
    // Garbage between simulation steps until the joiner is ready.
    for round in 0..2000 {
        for _ in 0..20 {
            let now = sim.now;
            let mut junk = match rng.gen_range(0..4) {
                0 => wrong_session(0x06, &mut rng),
                1 => wrong_session(0x05, &mut rng),
                2 => vec![b'F', b'L', PROTOCOL_VERSION, 0x06, 0, 0],
                _ => (0..rng.gen_range(0..100))
                    .map(|_| rng.gen::<u8>())
                    .collect(),
            };
            if junk.len() >= 4 && junk[3] == 0x01 {
                junk[3] = 0x06; // never a Hello: that would be a join attempt, not garbage
            }
            let _ = sim.host.handle_datagram(now, addr(66), &junk);
            // Garbage "from the host" to the joiner, wrong session or malformed.
            let _ = sim.joiners[0]
                .1
                .handle_datagram(now, addr(0), &wrong_session(0x05, &mut rng));
            sent += 1;
        }
        if sim.run_until(Duration::from_millis(20 * (round + 1)), |s| s.settled(a)) {
            break;
        }
    }
    assert_eq!(sim.ready(a).expect("ready").payload.state, state);
    assert!(
        sim.host.stats().dropped_invalid >= sent,
        "{:?}",
        sim.host.stats()
    );
    // Before the Welcome they are invalid; after it, no tag is the host's.
    let j = sim.joiners[0].1.stats();
    assert_eq!(j.dropped_invalid + j.dropped_auth, sent);
    assert!(j.dropped_auth > 0, "{j:?}");
}

#[test]
fn noise_from_the_hosts_address_is_no_other_version() {
    // Something that is not a framelock host answers at the address (another service, a
    // UDP echo): random bytes are dropped, whatever their first byte, and when the host
    // never answers properly the joiner says that something else answered there.
    let now = Instant::now();
    let mut j = JoinSession::new(now, JoinConfig::new(addr(0), info("j")));
    let mut rng = SmallRng::seed_from_u64(9);
    let mut sent = 0u32;
    let mut t = now;
    while t < now + HANDSHAKE_TIMEOUT + Duration::from_millis(100) {
        j.handle_timeout(t);
        while let Some(hello) = j.poll_transmit(t) {
            // An echo of our own Hello, then random bytes of random length.
            assert!(matches!(
                j.handle_datagram(t, addr(0), &hello.bytes),
                Handled::Dropped(_)
            ));
            let junk: Vec<u8> = (0..rng.gen_range(5..60)).map(|_| rng.gen()).collect();
            assert!(
                matches!(j.handle_datagram(t, addr(0), &junk), Handled::Dropped(_)),
                "{junk:?}"
            );
            sent += 2;
        }
        if let Some(ev) = j.poll_event() {
            assert_eq!(
                ev,
                JoinEvent::Failed(SessionError::NotFramelock {
                    addr: addr(0),
                    datagrams: sent,
                })
            );
            assert_eq!(
                SessionError::NotFramelock {
                    addr: addr(0),
                    datagrams: 3
                }
                .to_string(),
                "127.0.0.1:40000 answered with 3 datagram(s) that are not a framelock \
                 host's: is that the host's address and port?"
            );
            return;
        }
        t += Duration::from_millis(10);
    }
    panic!("the joiner never gave up");
}

#[test]
fn a_joiners_name_cannot_drive_the_hosts_terminal() {
    // ESC sequences would clear the host's screen, a newline would forge a log line.
    let mut sim = Sim::new(cfg(), vec![1; 100], "");
    let a = sim.join(1, info("\u{1b}[2J\u{1b}[31mEVIL\n FAKE joined\u{7}"), None);
    let b = sim.join(2, info("\u{1b}\n\t"), None);
    assert!(sim.run_until(Duration::from_secs(5), |s| s.settled(a) && s.settled(b)));
    let name_of = |x: SocketAddr| {
        let p = sim.host.players().into_iter().find(|p| p.addr == Some(x));
        p.map(|p| (p.slot, p.name)).unwrap()
    };
    let (_, evil) = name_of(a);
    assert_eq!(evil, "[2J[31mEVIL  FAKE joined");
    // Nothing left: the slot's default name.
    let (slot, blank) = name_of(b);
    assert_eq!(blank, slot.to_string());
    // Joiners are told the cleaned name (the Welcome lists the players in so far).
    let told = &sim.ready(a).unwrap().players;
    assert!(
        told.iter().any(|(_, n)| n == "[2J[31mEVIL  FAKE joined"),
        "{told:?}"
    );
}

/// Datagrams altered on the way (bit flips, cuts, junk appended), a Hello's or Welcome's
/// public key among them: the two ends never settle on different keys. A Welcome whose tag
/// does not match the keys it names is not taken, and the next Hello rekeys the seat.
#[test]
fn joins_over_a_link_that_alters_datagrams_end_with_both_sides_keyed_alike() {
    let state = random_state(40_000, 9);
    for seed in 0..6u64 {
        let link = "corrupt=25%,loss=5%,delay=5ms";
        let mut sim = Sim::seeded(cfg(), state.clone(), link, 1000 * seed);
        let mut joiners = Vec::new();
        for i in 1..4u16 {
            let mut c = JoinConfig::new(addr(0), info(&format!("p{i}")));
            c.entropy = [(seed as u8) << 4 | i as u8; 32];
            sim.joiners.push((addr(i), JoinSession::new(sim.now, c)));
            joiners.push(addr(i));
        }
        let all = |s: &Sim| joiners.iter().all(|a| s.settled(*a));
        let done = sim.run_until(Duration::from_secs(30), all);
        let stuck: Vec<_> = joiners
            .iter()
            .filter(|a| !sim.settled(**a))
            .map(|a| {
                (
                    a,
                    sim.joiners.iter().find(|(x, _)| x == a).unwrap().1.stats(),
                )
            })
            .collect();
        assert!(done, "seed {seed}: {stuck:?} {:?}", sim.host.stats());
        for a in &joiners {
            let why = sim.failure(*a);
            let ready = sim
                .ready(*a)
                .unwrap_or_else(|| panic!("seed {seed}: {a}: {why:?}"));
            assert_eq!(ready.payload.state, state, "seed {seed}");
        }
        // The start state's acks reach the host through the tag check: it has every
        // joiner ready, and what it sends each one now opens there.
        let limit = sim.now - sim.start + Duration::from_secs(10);
        assert!(
            sim.run_until(limit, |s| s.host.all_ready()),
            "seed {seed}: {:?}",
            sim.host.players()
        );
        for a in &joiners {
            let mut probe = Msg::Lobby { ready: 1, want: 1 }.encode(sim.host.session_id());
            sim.host.seal(*a, &mut probe);
            let (_, j) = sim.joiners.iter().find(|(x, _)| x == a).unwrap();
            assert!(
                j.open(&probe).is_some(),
                "seed {seed}: {a} keyed differently"
            );
        }
        let altered: u64 = sim.net.links().map(|c| c.stats().corrupted).sum();
        assert!(altered > 20, "seed {seed}: {altered}");
    }
}

/// Joiner `k`'s Hello once it echoes the host's cookie (its first one was answered with a
/// Retry, handed to it here).
fn proven_hello(sim: &mut Sim, k: usize, at: SocketAddr) -> Vec<u8> {
    let now = sim.now;
    let first = sim.joiners[k].1.hello();
    assert_eq!(sim.host.handle_datagram(now, at, &first), Handled::Taken);
    let retry = sim.host.poll_transmit(now).unwrap().bytes;
    assert!(crate::session::is_kind(&retry, crate::wire::Kind::Retry));
    assert_eq!(
        sim.joiners[k].1.handle_datagram(now, addr(0), &retry),
        Handled::Taken
    );
    while sim.joiners[k].1.poll_transmit(now).is_some() {}
    sim.joiners[k].1.hello()
}

/// The two ways a public key can be altered on the way, one at a time: the Hello's (the
/// host makes keys the joiner does not have, so the joiner refuses the Welcome's tag and its
/// next Hello rekeys the seat) and the Welcome's (the joiner refuses it and takes the next).
#[test]
fn an_altered_public_key_costs_a_resend_not_the_session() {
    let state = random_state(5_000, 3);
    let mut sim = Sim::new(cfg(), state.clone(), "delay=5ms");
    let a = sim.join(1, info("ana"), None);
    let now = sim.now;
    let hello = proven_hello(&mut sim, 0, a);
    let Ok((_, Msg::Hello(h))) = Msg::decode(&hello) else {
        panic!("a Hello")
    };
    let at = hello.windows(32).position(|w| w == h.key).unwrap();
    let mut altered = hello.clone();
    altered[at + 3] ^= 0x10;
    assert_eq!(sim.host.handle_datagram(now, a, &altered), Handled::Taken);
    let welcome = sim.host.poll_transmit(now).unwrap().bytes;
    let ana = &mut sim.joiners[0].1;
    assert_eq!(
        ana.handle_datagram(now, addr(0), &welcome),
        Handled::Dropped(Dropped::Unauthentic)
    );
    assert_eq!(ana.session_id(), 0, "taken for welcomed");
    assert!(sim.run_until(Duration::from_secs(10), |s| s.settled(a)));
    assert_eq!(sim.ready(a).expect("ready").payload.state, state);

    let b = sim.join(2, info("bob"), None);
    let now = sim.now;
    let hello = proven_hello(&mut sim, 1, b);
    assert_eq!(sim.host.handle_datagram(now, b, &hello), Handled::Taken);
    let welcome = sim.host.poll_transmit(now).unwrap().bytes;
    let body = &welcome[..welcome.len() - crate::wire::keys::TAG_LEN];
    let Ok((_, Msg::Welcome(w))) = Msg::decode(body) else {
        panic!("a Welcome")
    };
    let at = welcome.windows(32).position(|x| x == w.key).unwrap();
    let mut altered = welcome.clone();
    altered[at + 30] ^= 0x01;
    let bob = &mut sim.joiners[1].1;
    assert_eq!(
        bob.handle_datagram(now, addr(0), &altered),
        Handled::Dropped(Dropped::Unauthentic)
    );
    assert_eq!(bob.handle_datagram(now, addr(0), &welcome), Handled::Taken);
    assert!(sim.run_until(Duration::from_secs(20), |s| s.settled(b)));
    assert_eq!(sim.ready(b).expect("ready").payload.state, state);
    assert_eq!(sim.joiners[1].1.stats().dropped_auth, 1);
}
