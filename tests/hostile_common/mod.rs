//! What issue 36's attacker sends, for `tests/serve_hostile.rs` and
//! `tests/benches/hostile.rs`.
#![allow(dead_code)] // each user takes a different subset

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use framelock::session::msg::{Auth, Hello, Msg, OpenRoom, RoomMsg, StateAck};
use framelock::session::{JoinConfig, JoinEvent, JoinSession, SessionError, SessionInfo};
use framelock::wire::PROTOCOL_VERSION;

/// A padded Hello for `room` (empty: a direct host) echoing `cookie`.
pub fn hello(room: &str, cookie: [u8; 16]) -> Vec<u8> {
    Msg::Hello(Hello {
        core_name: "lightcycles".into(),
        core_version: "0.1.0".into(),
        content_name: String::new(),
        content_hash: None,
        player_name: "bob".into(),
        room: room.into(),
        watch: false,
        key: [0x4b; 32],
        auth: Auth::None,
        cookie,
    })
    .encode(0)
}

/// Everything an unvalidated address can send first, some of it malformed or guessed.
pub fn attacks(room: &str) -> Vec<Vec<u8>> {
    let mut foreign = hello(room, [0; 16]);
    foreign[2] = PROTOCOL_VERSION + 1;
    let open = OpenRoom {
        room: "hoard".into(),
        players: 2,
        start_with: 2,
        keyframe_interval: 0,
        mode: None,
        fps: 60.0,
        password: false,
        core_name: "lightcycles".into(),
        core_version: "0.1.0".into(),
        content_name: String::new(),
        content_hash: None,
        player_name: "x".into(),
        raw_len: 32 << 20,
        packed_len: 1 << 20,
        payload_hash: 1,
        cookie: [7; 16],
    };
    let ack = StateAck {
        cum: 1_000_000,
        latest_seq: 5,
        verified: false,
        bitmap: vec![0xff; 64],
    };
    let mut watch = hello(room, [0; 16]);
    if let Ok((_, Msg::Hello(mut h))) = Msg::decode(&watch) {
        h.watch = true;
        watch = Msg::Hello(h).encode(0);
    }
    vec![
        hello(room, [0; 16]),
        watch,
        hello(room, [9; 16]),
        hello("", [0; 16]),
        hello("no-such-room", [0; 16]),
        hello(room, [0; 16])[..100].to_vec(),
        foreign.clone(),
        foreign[..80].to_vec(),
        Msg::Room(RoomMsg::Open(open)).encode(0),
        Msg::Room(RoomMsg::List { first: 0 }).encode(0),
        Msg::Room(RoomMsg::Locate { room: room.into() }).encode(0),
        Msg::StateAck(ack).encode(0x1234_5678),
        Msg::Bye("x".into()).encode(0),
    ]
}

/// One password guess with a real joiner's handshake over `sock`; the refusal's text.
pub fn guess(sock: &UdpSocket, host: SocketAddr, password: &str, seed: u8) -> String {
    let info = SessionInfo {
        core_name: "lightcycles".into(),
        core_version: "0.1.0".into(),
        player_name: "guesser".into(),
        ..SessionInfo::default()
    };
    let mut cfg = JoinConfig::new(host, info);
    cfg.password = Some(password.into());
    cfg.entropy = [seed; 32];
    let mut j = JoinSession::new(Instant::now(), cfg);
    let mut buf = [0u8; 2048];
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        let now = Instant::now();
        j.handle_timeout(now);
        while let Some(t) = j.poll_transmit(now) {
            sock.send_to(&t.bytes, t.to).unwrap();
        }
        while let Some(ev) = j.poll_event() {
            match ev {
                JoinEvent::Failed(SessionError::Refused(r)) => return r,
                JoinEvent::Failed(e) => return e.to_string(),
                JoinEvent::Welcomed { .. } => return "welcomed".into(),
                _ => {}
            }
        }
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            let _ = j.handle_datagram(Instant::now(), from, &buf[..n]);
        }
    }
    "no answer".into()
}
