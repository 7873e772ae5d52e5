//! Every session message round-trips, and hostile or truncated bytes are refused, never a panic.

use super::*;
use rand::{rngs::SmallRng, Rng, RngCore, SeedableRng};

fn samples() -> Vec<Vec<u8>> {
    let hello = Hello {
        core_name: "Genesis Plus GX".into(),
        core_version: "v1.7.4 3b1d3b5".into(),
        content_name: "airstriker.md".into(),
        content_hash: Some(0x1a2b_3c4d_5e6f_7081),
        player_name: "ana".into(),
        room: "quiet-fox".into(),
        watch: false,
        no_share: false,
        key: [0x4b; 32],
        cookie: [0; 16],
        seat_key: [7; SEAT_KEY_LEN],
        auth: Auth::Pake {
            challenge: [7; PAKE_MSG_LEN],
            msg: [8; PAKE_MSG_LEN],
            confirm: [9; CONFIRM_LEN],
        },
    };
    vec![
        Msg::Hello(hello).encode(0),
        Msg::Challenge([3; PAKE_MSG_LEN]).encode(0),
        Msg::Welcome(Welcome {
            slot: 2,
            fps: 59.92,
            frame: 0,
            raw_len: 1000,
            packed_len: 900,
            payload_hash: 42,
            chunk_size: CHUNK_SIZE as u16,
            slots: 4,
            keyframe_interval: 2,
            mode: Mode::Optimistic,
            key: [0x4b; 32],
            seat_key: [9; SEAT_KEY_LEN],
            players: [(PeerId(0), "host".into()), (PeerId(2), "ana".into())]
                .into_iter()
                .collect(),
        })
        .encode(5),
        Msg::Refuse("session is full (8 players)".into()).encode(0),
        Msg::StateChunk {
            index: 3,
            seq: 9,
            data: b"abc",
        }
        .encode(5),
        Msg::StateAck(StateAck {
            cum: 4,
            latest_seq: 10,
            verified: false,
            bitmap: vec![0b1010],
        })
        .encode(5),
        Msg::Bye("quit".into()).encode(5),
        Msg::Lobby { ready: 2, want: 3 }.encode(5),
        Msg::Loading.encode(5),
        Msg::Room(RoomMsg::Open(OpenRoom {
            room: String::new(),
            players: 4,
            start_with: 4,
            keyframe_interval: 2,
            mode: Some(Mode::Optimistic),
            fps: 59.92,
            password: true,
            core_name: "Genesis Plus GX".into(),
            core_version: "v1.7.4".into(),
            content_name: "airstriker.md".into(),
            content_hash: Some(7),
            player_name: "ana".into(),
            raw_len: 1000,
            packed_len: 900,
            payload_hash: 42,
            cookie: [9; 16],
            hosted: false,
            locals: Vec::new(),
            no_share: false,
        }))
        .encode(0),
        Msg::Room(RoomMsg::Open(OpenRoom {
            room: "den".into(),
            players: 2,
            start_with: 2,
            keyframe_interval: 0,
            mode: None,
            fps: 60.0,
            password: false,
            core_name: "FinalBurn Neo".into(),
            core_version: "v1.0.0.03".into(),
            content_name: "sf2.zip".into(),
            content_hash: None,
            player_name: "ana".into(),
            raw_len: 0,
            packed_len: 0,
            payload_hash: 0,
            cookie: [1; 16],
            hosted: true,
            locals: vec![
                "192.168.1.20:40123".parse().unwrap(),
                "[fd00::7]:40123".parse().unwrap(),
            ],
            no_share: true,
        }))
        .encode(0),
        Msg::Room(RoomMsg::ListReplays { first: 4 }).encode(0),
        Msg::Room(RoomMsg::Replays {
            total: 9,
            first: 4,
            replays: vec![crate::session::msg::ReplayInfo {
                id: "00ff3a".into(),
                room: "den".into(),
                game: "sf2.zip".into(),
                core: "FinalBurn Neo".into(),
                players: "ana, bo".into(),
                created_unix: 1_795_000_000,
                frames: 3600,
                fps_milli: 59_922,
                bytes: 6000,
                server: "203.0.113.7:7845".into(),
            }],
        })
        .encode(0),
        Msg::Room(RoomMsg::FetchReplay {
            id: "00ff3a".into(),
            offset: 2000,
        })
        .encode(0),
        Msg::Room(RoomMsg::ReplayPiece {
            id: "00ff3a".into(),
            total: 6000,
            offset: 2000,
            bytes: &[7; 1000],
        })
        .encode(0),
        Msg::Room(RoomMsg::Share {
            total: 6000,
            hash: 99,
            offset: 1000,
            bytes: &[3; 1000],
        })
        .encode(5),
        Msg::Room(RoomMsg::ShareAck {
            received: 2000,
            done: false,
        })
        .encode(5),
        Msg::Room(RoomMsg::Forward {
            peer: "203.0.113.9:5000".parse().unwrap(),
            datagram: &Msg::Bye("quit".into()).encode(5),
        })
        .encode(0),
        Msg::Room(RoomMsg::Introduce {
            peer: "[2001:db8::1]:7845".parse().unwrap(),
            locals: vec!["10.0.0.2:7845".parse().unwrap()],
            wait_ms: 35,
        })
        .encode(0),
        Msg::Room(RoomMsg::Present {
            players: 3,
            direct: 1,
            relayed: 1,
            playing: true,
        })
        .encode(0),
        Msg::Path(PathMsg::Punch([4; 8])).encode(5),
        Msg::Path(PathMsg::PunchBack([4; 8])).encode(5),
        Msg::Path(PathMsg::candidates(&[
            "203.0.113.7:7845".parse().unwrap(),
            "[2001:db8::1]:9".parse().unwrap(),
        ]))
        .encode(5),
        Msg::Retry([5; 16]).encode(0),
        Msg::Room(RoomMsg::Opened {
            room: "quiet-fox".into(),
            key: [3; ROOM_KEY_LEN],
        })
        .encode(5),
        Msg::Room(RoomMsg::NoRoom {
            room: "nope".into(),
            rooms: vec!["quiet-fox".into(), "red-owl".into()],
        })
        .encode(0),
        Msg::Room(RoomMsg::List { first: 3 }).encode(0),
        Msg::Room(RoomMsg::Rooms {
            total: 14,
            first: 12,
            rooms: vec![RoomInfo {
                name: "quiet-fox".into(),
                content: "airstriker.md".into(),
                core: "Genesis Plus GX".into(),
                players: 1,
                seats: 2,
                password: true,
                playing: false,
                age_secs: 61,
                spectators: 3,
                mode: Mode::Optimistic,
                region: "eu-west".into(),
                server: "203.0.113.7:7845".into(),
            }],
        })
        .encode(0),
        Msg::Room(RoomMsg::Moved {
            room: "quiet-fox".into(),
            server: "[2001:db8::7]:7845".into(),
        })
        .encode(0),
        Msg::Room(RoomMsg::Locate {
            room: "quiet-fox".into(),
        })
        .encode(0),
        Msg::Room(RoomMsg::ListServers { first: 2 }).encode(0),
        Msg::Room(RoomMsg::Servers {
            total: 3,
            first: 2,
            servers: vec![ServerInfo {
                server: "203.0.113.7:7845".into(),
                region: "eu-west".into(),
                rooms: 4,
                max_rooms: 1000,
                players: 9,
            }],
        })
        .encode(0),
        Msg::Room(RoomMsg::Relay {
            ticket: 9,
            step: RelayStep::Asks,
        })
        .encode(5),
        Msg::Room(RoomMsg::Relay {
            ticket: 9,
            step: RelayStep::Challenge([1; PAKE_MSG_LEN]),
        })
        .encode(5),
        Msg::Room(RoomMsg::Relay {
            ticket: 9,
            step: RelayStep::Answer {
                msg: [2; PAKE_MSG_LEN],
                confirm: [3; CONFIRM_LEN],
            },
        })
        .encode(5),
        Msg::Room(RoomMsg::Relay {
            ticket: 9,
            step: RelayStep::Verdict(true),
        })
        .encode(5),
    ]
}

#[test]
fn every_message_round_trips() {
    for dgram in samples() {
        assert!(dgram.len() <= MAX_DATAGRAM);
        let (h, msg) = Msg::decode(&dgram).unwrap();
        assert_eq!(msg.encode(h.session), dgram, "{msg:?}");
    }
}

#[test]
fn texts_from_a_peer_reach_the_terminal_without_control_characters() {
    // A host's name in the player list, a refusal and a goodbye are shown on the other
    // side as they arrive: an escape sequence would clear that screen, a newline forge
    // a log line.
    let evil = "\u{1b}[2J\u{1b}[31mboss\nFAKE: host left\u{7}";
    let clean = "[2J[31mboss FAKE: host left";
    let welcome = Msg::Welcome(Welcome {
        slot: 1,
        fps: 60.0,
        frame: 0,
        raw_len: 10,
        packed_len: 10,
        payload_hash: 1,
        chunk_size: CHUNK_SIZE as u16,
        slots: 2,
        keyframe_interval: 2,
        mode: Mode::Strict,
        key: [0x4b; 32],
        seat_key: [9; SEAT_KEY_LEN],
        players: [(PeerId(0), evil.into())].into_iter().collect(),
    })
    .encode(5);
    match Msg::decode(&welcome).unwrap().1 {
        Msg::Welcome(w) => assert_eq!(w.players.iter().collect::<Vec<_>>(), [(PeerId(0), clean)]),
        m => panic!("{m:?}"),
    }
    for (dgram, what) in [
        (Msg::Refuse(evil.into()).encode(0), "refuse"),
        (Msg::Bye(evil.into()).encode(5), "bye"),
    ] {
        match Msg::decode(&dgram).unwrap().1 {
            Msg::Refuse(t) | Msg::Bye(t) => assert_eq!(t, clean, "{what}"),
            m => panic!("{m:?}"),
        }
    }
    assert_eq!(printable("a\tb\r\nc\u{0}\u{9b}d"), "a b  cd");
    // Names that read backwards or pass for another's, a line separator in a goodbye.
    assert_eq!(printable("bo\u{202e}b\u{200b}\u{ad}"), "bob");
    assert_eq!(printable("bye\u{2028}FAKE\u{2029}"), "bye FAKE ");
}

#[test]
fn long_texts_are_clipped_to_fit_a_datagram() {
    let long = "é".repeat(400);
    let hello = Msg::Hello(Hello {
        core_name: long.clone(),
        core_version: long.clone(),
        content_name: long.clone(),
        content_hash: Some(1),
        player_name: long.clone(),
        room: long.clone(),
        watch: false,
        no_share: false,
        key: [0x4b; 32],
        cookie: [0; 16],
        seat_key: [7; SEAT_KEY_LEN],
        auth: Auth::Pake {
            challenge: [0; PAKE_MSG_LEN],
            msg: [0; PAKE_MSG_LEN],
            confirm: [0; CONFIRM_LEN],
        },
    });
    let dgram = hello.encode(0);
    assert!(dgram.len() <= MAX_DATAGRAM, "{}", dgram.len());
    let Msg::Hello(h) = Msg::decode(&dgram).unwrap().1 else {
        panic!("not a hello")
    };
    assert_eq!(h.core_name.len(), MAX_TEXT);
    assert_eq!(h.player_name.len(), MAX_PLAYER_NAME);
    assert_eq!(h.room.len(), MAX_ROOM_NAME);
    let refuse = Msg::Refuse(long.repeat(10)).encode(0);
    assert!(refuse.len() <= MAX_DATAGRAM);
}

#[test]
fn hostile_bytes_never_panic() {
    let mut rng = SmallRng::seed_from_u64(1);
    let samples = samples();
    for i in 0..200_000 {
        let mut d = if i % 2 == 0 {
            let mut d = vec![0u8; rng.gen_range(0..80)];
            rng.fill_bytes(&mut d);
            if i % 4 == 0 && d.len() >= 4 {
                d[0..3].copy_from_slice(&[b'F', b'L', PROTOCOL_VERSION]);
                d[3] = [rng.gen_range(1..=0x0d), 0x20][usize::from(rng.gen_bool(0.1))];
            }
            d
        } else {
            samples[rng.gen_range(0..samples.len())].clone()
        };
        // Truncate or flip bytes of valid messages too.
        if i % 2 == 1 {
            let cut = rng.gen_range(0..=d.len());
            d.truncate(cut);
            if !d.is_empty() {
                let at = rng.gen_range(0..d.len());
                d[at] ^= rng.gen::<u8>() | 1;
            }
        }
        let _ = Msg::decode(&d);
        let _ = refuse_text(&d);
    }
}

#[test]
fn truncated_messages_are_malformed() {
    for dgram in samples() {
        for cut in HEADER_LEN..dgram.len() {
            match Msg::decode(&dgram[..cut]) {
                Err(WireError::Malformed(_)) => {}
                // An ack or chunk cut inside its open-ended tail is still well-formed.
                Ok((_, Msg::StateAck(_) | Msg::StateChunk { .. })) => {}
                // A Bye/Refuse cut after a shorter string prefix is not.
                other => panic!("cut {cut} of {dgram:?}: {other:?}"),
            }
        }
    }
}
