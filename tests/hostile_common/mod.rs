//! What issue 36's attacker sends, for `tests/serve_hostile.rs` and
//! `tests/benches/hostile.rs`.
#![allow(dead_code)] // each user takes a different subset

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use framelock::session::msg::{Auth, Hello, Msg, OpenRoom, RoomMsg, StateAck};
use framelock::session::{
    JoinConfig, JoinEvent, JoinSession, OpenEvent, RoomOpener, SessionError, SessionInfo,
    StartPayload,
};
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

/// A spectator's padded Hello for `room`, echoing no cookie.
pub fn watch_hello(room: &str) -> Vec<u8> {
    let d = hello(room, [0; 16]);
    match Msg::decode(&d) {
        Ok((_, Msg::Hello(mut h))) => {
            h.watch = true;
            Msg::Hello(h).encode(0)
        }
        _ => d,
    }
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
        hosted: false,
        locals: Vec::new(),
    };
    let ack = StateAck {
        cum: 1_000_000,
        latest_seq: 5,
        verified: false,
        bitmap: vec![0xff; 64],
    };
    let watch = watch_hello(room);
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
    handshake(sock, host, "", "guesser", Some(password), seed)
}

/// A real joiner's handshake over `sock` as `name` with `password`, for `room` on a server
/// (empty: a direct host): "welcomed", or the refusal's text.
pub fn handshake(
    sock: &UdpSocket,
    host: SocketAddr,
    room: &str,
    name: &str,
    password: Option<&str>,
    seed: u8,
) -> String {
    let info = SessionInfo {
        core_name: "lightcycles".into(),
        core_version: "0.1.0".into(),
        player_name: name.into(),
        ..SessionInfo::default()
    };
    let mut cfg = JoinConfig::new(host, info);
    cfg.password = password.map(str::to_string);
    cfg.room = room.into();
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

/// Opens room `room` on `server` from a fresh port of `ip` with a start state of `len`
/// zero bytes (a decompression bomb when large), and never joins it: Ok once the server
/// verified the upload, else the refusal.
pub fn upload(server: SocketAddr, ip: &str, room: &str, len: usize) -> Result<(), String> {
    let sock = UdpSocket::bind(format!("{ip}:0")).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(Duration::from_millis(2)))
        .unwrap();
    let open = OpenRoom {
        room: room.into(),
        players: 2,
        start_with: 2,
        keyframe_interval: 0,
        mode: None,
        fps: 60.0,
        password: false,
        core_name: "bomb".into(),
        core_version: "1".into(),
        content_name: String::new(),
        content_hash: None,
        player_name: "bomber".into(),
        raw_len: 0,
        packed_len: 0,
        payload_hash: 0,
        cookie: Default::default(),
        hosted: false,
        locals: Vec::new(),
    };
    let payload = StartPayload {
        options: Vec::new(),
        state: vec![0; len],
        sram: Vec::new(),
    };
    let mut o =
        RoomOpener::new(Instant::now(), server, open, &payload).map_err(|e| e.to_string())?;
    let mut buf = [0u8; 2048];
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        let now = Instant::now();
        o.handle_timeout(now);
        while let Some(t) = o.poll_transmit(now) {
            let _ = sock.send_to(&t.bytes, t.to);
        }
        while let Some(ev) = o.poll_event() {
            match ev {
                OpenEvent::Uploaded { .. } => return Ok(()),
                OpenEvent::Failed(e) => return Err(e.to_string()),
                _ => {}
            }
        }
        while let Ok((n, a)) = sock.recv_from(&mut buf) {
            o.handle_datagram(Instant::now(), a, &buf[..n]);
        }
    }
    Err("no answer".into())
}

/// A process's peak resident memory (VmHWM), MiB.
pub fn peak_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Sends padded blind Hellos for `room` (empty: a direct host) from 64 ports of
/// 127.0.0.1 at `per_second` until `stop`, never reading an answer; the rate achieved.
pub fn hello_flood(
    target: SocketAddr,
    room: &str,
    per_second: u64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<f64> {
    let d = hello(room, [0; 16]);
    std::thread::spawn(move || {
        let socks: Vec<UdpSocket> = (0..64)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let mut n = 0u64;
        let t0 = Instant::now();
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = socks[(n % 64) as usize].send_to(&d, target);
            n += 1;
            let due = t0 + Duration::from_micros(n * 1_000_000 / per_second);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        n as f64 / t0.elapsed().as_secs_f64()
    })
}
