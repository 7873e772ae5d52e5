//! What issue 36's attacker sends, for `tests/serve_hostile.rs` and
//! `tests/benches/hostile.rs`.
#![allow(dead_code)] // each user takes a different subset

use std::net::{SocketAddr, UdpSocket};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use framelock::net::drive::{self, Carrier};
use framelock::net::NetError;

use framelock::session::msg::{Auth, Hello, Msg, OpenRoom, RoomMsg, StateAck};
use framelock::session::{
    JoinConfig, JoinEvent, JoinSession, OpenEvent, RoomOpener, SessionError, SessionInfo,
    StartPayload, Transmit,
};
use framelock::wire::{Machine, PROTOCOL_VERSION};

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
        no_share: false,
        key: [0x4b; 32],
        auth: Auth::None,
        cookie,
        seat_key: [0; 16],
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

/// An Open of 2-player room `room` for `core_name` 0.1.0 by `player`, with no password,
/// start state or cookie: each caller sets what it is about.
fn open_room(room: &str, core_name: &str, player: &str) -> OpenRoom {
    OpenRoom {
        room: room.into(),
        players: 2,
        start_with: 2,
        keyframe_interval: 0,
        mode: None,
        fps: 60.0,
        password: false,
        core_name: core_name.into(),
        core_version: "0.1.0".into(),
        content_name: String::new(),
        content_hash: None,
        player_name: player.into(),
        raw_len: 0,
        packed_len: 0,
        payload_hash: 0,
        cookie: Default::default(),
        hosted: false,
        locals: Vec::new(),
        no_share: false,
    }
}

/// This process's socket as a machine's carrier: a read takes what is waiting (the
/// socket's short read timeout ends it), a send goes straight out.
struct Sock<'a>(&'a UdpSocket);

impl Carrier for Sock<'_> {
    fn recv(&mut self, _now: Instant) -> Result<Vec<(SocketAddr, Vec<u8>)>, NetError> {
        let mut buf = [0u8; 2048];
        let mut got = Vec::new();
        while let Ok((n, from)) = self.0.recv_from(&mut buf) {
            got.push((from, buf[..n].to_vec()));
        }
        Ok(got)
    }
    fn send(&mut self, _now: Instant, t: Transmit) {
        let _ = self.0.send_to(&t.bytes, t.to);
    }
}

/// Runs `m` over `carrier` on the real clock, a shared drive step a turn (`before` runs
/// ahead of each), until `answer` makes something of one of its events, or `limit` passes
/// (`None`).
fn run<M: Machine<Addr = SocketAddr>, T>(
    m: &mut M,
    carrier: &mut impl Carrier,
    limit: Duration,
    mut before: impl FnMut(&mut M, Instant),
    mut answer: impl FnMut(&mut M, Instant, M::Event) -> Option<T>,
) -> Option<T> {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        let now = Instant::now();
        before(m, now);
        let turn = drive::step(carrier, m, now, |m, ev| match answer(m, now, ev) {
            Some(a) => ControlFlow::Break(a),
            None => ControlFlow::Continue(()),
        });
        if let Ok(ControlFlow::Break(a)) = turn {
            return Some(a);
        }
    }
    None
}

/// Runs `m` over `sock` until `answer` makes something of one of its events, or `limit`
/// passes (`None`).
fn drive<M: Machine<Addr = SocketAddr>, T>(
    m: &mut M,
    sock: &UdpSocket,
    limit: Duration,
    mut answer: impl FnMut(M::Event) -> Option<T>,
) -> Option<T> {
    run(m, &mut Sock(sock), limit, |_, _| {}, |_, _, ev| answer(ev))
}

/// Everything an unvalidated address can send first, some of it malformed or guessed.
pub fn attacks(room: &str) -> Vec<Vec<u8>> {
    let mut foreign = hello(room, [0; 16]);
    foreign[2] = PROTOCOL_VERSION + 1;
    let open = OpenRoom {
        raw_len: 32 << 20,
        packed_len: 1 << 20,
        payload_hash: 1,
        cookie: [7; 16],
        ..open_room("hoard", "lightcycles", "x")
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
    let answer = drive(&mut j, sock, Duration::from_secs(5), |ev| match ev {
        JoinEvent::Failed(SessionError::Refused(r)) => Some(r),
        JoinEvent::Failed(e) => Some(e.to_string()),
        JoinEvent::Welcomed { .. } => Some("welcomed".into()),
        _ => None,
    });
    answer.unwrap_or_else(|| "no answer".into())
}

/// Opens room `room` on `server` from a fresh port of `ip` with a start state of `len`
/// zero bytes (a decompression bomb when large), and never joins it: Ok once the server
/// verified the upload, else the refusal.
pub fn upload(server: SocketAddr, ip: &str, room: &str, len: usize) -> Result<(), String> {
    let sock = UdpSocket::bind(format!("{ip}:0")).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(Duration::from_millis(2)))
        .unwrap();
    let open = OpenRoom {
        core_version: "1".into(),
        ..open_room(room, "bomb", "bomber")
    };
    let payload = StartPayload {
        options: Vec::new(),
        state: vec![0; len],
        sram: Vec::new(),
    };
    let mut o =
        RoomOpener::new(Instant::now(), server, open, &payload).map_err(|e| e.to_string())?;
    let answer = drive(&mut o, &sock, Duration::from_secs(30), |ev| match ev {
        OpenEvent::Uploaded { .. } => Some(Ok(())),
        OpenEvent::Failed(e) => Some(Err(e.to_string())),
        _ => None,
    });
    answer.unwrap_or_else(|| Err("no answer".into()))
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

/// Opens hosted room `room` on `server` from `sock` (this process is its host): the
/// room's session id and its secret with the server, or why not.
pub fn open_hosted(
    server: SocketAddr,
    sock: &UdpSocket,
    room: &str,
) -> Result<(u32, [u8; 32]), String> {
    let open = OpenRoom {
        core_version: "1".into(),
        ..open_room(room, "lightcycles", "mallory")
    };
    let mut o = RoomOpener::hosted(Instant::now(), server, open);
    let answer = drive(&mut o, sock, Duration::from_secs(5), |ev| match ev {
        OpenEvent::Uploaded { session, .. } => Some(Ok(session)),
        OpenEvent::Failed(e) => Some(Err(e.to_string())),
        _ => None,
    });
    let session = answer.unwrap_or_else(|| Err("no answer".into()))?;
    Ok((session, o.room_key()))
}

/// Sends `payload` to `to` as a UDP datagram from `from`, an address this process does not
/// own: a raw IPv4 socket writes the whole packet (the tests run as root), as an attacker
/// on the internet forges a source. The kernel fills in the IP checksum; UDP's is left out
/// (0), which IPv4 allows.
pub fn forge(from: SocketAddr, to: SocketAddr, payload: &[u8]) {
    use socket2::{Domain, Protocol, SockAddr, Socket, Type};
    let (SocketAddr::V4(f), SocketAddr::V4(t)) = (from, to) else {
        panic!("forge: IPv4 only");
    };
    let sock = Socket::new(
        Domain::IPV4,
        Type::RAW,
        Some(Protocol::from(libc::IPPROTO_RAW)),
    )
    .expect("a raw socket (the hostile tests run as root)");
    let total = 28 + payload.len();
    let mut p = Vec::with_capacity(total);
    p.extend_from_slice(&[0x45, 0]);
    p.extend_from_slice(&(total as u16).to_be_bytes());
    // Id 0, don't fragment, TTL 64, UDP, checksum (the kernel's).
    p.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    p.extend_from_slice(&f.ip().octets());
    p.extend_from_slice(&t.ip().octets());
    p.extend_from_slice(&f.port().to_be_bytes());
    p.extend_from_slice(&t.port().to_be_bytes());
    p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    sock.send_to(&p, &SockAddr::from(to))
        .expect("send a forged datagram");
}

/// Watches `room` on `server` from `sock` as a real spectator's handshake would, to learn
/// what anyone on the path of one of the room's datagrams reads in its header: its session
/// id (`None`: not welcomed within 5 s).
pub fn watch_session(sock: &UdpSocket, server: SocketAddr, room: &str) -> Option<u32> {
    let info = SessionInfo {
        core_name: "lightcycles".into(),
        core_version: "0.1.0".into(),
        player_name: "eve".into(),
        ..SessionInfo::default()
    };
    let mut cfg = JoinConfig::new(server, info);
    cfg.room = room.into();
    cfg.watch = true;
    cfg.entropy = [0x77; 32];
    let mut j = JoinSession::new(Instant::now(), cfg);
    drive(&mut j, sock, Duration::from_secs(5), |ev| match ev {
        JoinEvent::Welcomed { session, .. } => Some(session),
        _ => None,
    })
}

/// Issue 50's reflector through a hosted room's relay: `host` (this process) opens `room`
/// on `server`, one datagram naming its session is sent from `victim` (which never
/// answers), and the host then sends the server `Forward`s of 1,000 B to the victim's
/// address for 2 s: (bytes from the victim, bytes the victim got).
pub fn relay_reflection(
    server: SocketAddr,
    host: &UdpSocket,
    victim: &UdpSocket,
    room: &str,
) -> (usize, usize) {
    use framelock::session::msg::PathMsg;
    use framelock::wire::keys::{Keys, Side};
    let (session, key) = open_hosted(server, host, room).expect("opens");
    let keys = Keys::for_room(&key, Side::Joiner);
    let spoof = Msg::Path(PathMsg::Probe).encode(session);
    let sent = victim.send_to(&spoof, server).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let game = [0x5a; 1000];
    let peer = victim.local_addr().unwrap();
    let forwarded = Instant::now();
    while forwarded.elapsed() < Duration::from_secs(2) {
        for _ in 0..50 {
            let fwd = RoomMsg::Forward {
                peer,
                datagram: &game,
            };
            let mut bytes = Msg::Room(fwd).encode(0);
            keys.seal(&mut bytes);
            let _ = host.send_to(&bytes, server);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut got = 0;
    let mut buf = [0u8; 2048];
    victim
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        if let Ok((n, _)) = victim.recv_from(&mut buf) {
            got += n;
        }
    }
    (sent, got)
}

/// What a stranger can send "from" a victim naming a playing room's `session` (the
/// address a player moved to, as far as the server can tell): a probe, a goodbye, an
/// acknowledgement and a padded probe.
pub fn session_attacks(session: u32) -> Vec<Vec<u8>> {
    use framelock::session::msg::PathMsg;
    let ack = StateAck {
        cum: 1,
        latest_seq: 1,
        verified: false,
        bitmap: vec![0xff; 64],
    };
    let mut padded = Msg::Path(PathMsg::Probe).encode(session);
    padded.resize(1200, 0);
    vec![
        Msg::Path(PathMsg::Probe).encode(session),
        Msg::Bye("x".into()).encode(session),
        Msg::StateAck(ack).encode(session),
        padded,
    ]
}

/// Issue 50's High finding, played by a real player's machine in this process (the
/// attacker must be a player: it holds the session's keys, and reads the token the host's
/// punch brings it): it joins hosted room `room` on `server` from `sock`, and every punch
/// and punch answer its direct-path machine sends the host goes out forged "from"
/// `victim` instead (a raw socket), tag and token as the machine made them. Runs for
/// `limit`; the bytes forged.
pub fn forge_punches_from(
    server: SocketAddr,
    room: &str,
    sock: &UdpSocket,
    victim: SocketAddr,
    limit: Duration,
) -> usize {
    use framelock::lockstep;
    use framelock::session::msg::PathMsg;
    use framelock::session::{Participant, ParticipantConfig};
    use framelock::wire::keys::TAG_LEN;
    let info = SessionInfo {
        core_name: "lightcycles".into(),
        core_version: "0.1.0".into(),
        player_name: "mallory".into(),
        ..SessionInfo::default()
    };
    let mut cfg = JoinConfig::new(server, info);
    cfg.room = room.into();
    cfg.entropy = [0x66; 32];
    let mut p = Participant::join(
        Instant::now(),
        cfg,
        lockstep::Config::default(),
        ParticipantConfig::default(),
    );
    /// The player's socket, but its punches go out forged "from" the victim.
    struct Forging<'a> {
        sock: Sock<'a>,
        server: SocketAddr,
        victim: SocketAddr,
        forged: usize,
    }
    impl Carrier for Forging<'_> {
        fn recv(&mut self, now: Instant) -> Result<Vec<(SocketAddr, Vec<u8>)>, NetError> {
            self.sock.recv(now)
        }
        fn send(&mut self, now: Instant, t: Transmit) {
            let body = &t.bytes[..t.bytes.len().saturating_sub(TAG_LEN)];
            let punch = matches!(
                Msg::decode(body),
                Ok((_, Msg::Path(PathMsg::Punch(_) | PathMsg::PunchBack(_))))
            );
            if t.to != self.server && punch {
                forge(self.victim, t.to, &t.bytes);
                self.forged += t.bytes.len();
            } else {
                self.sock.send(now, t);
            }
        }
    }
    let mut carrier = Forging {
        sock: Sock(sock),
        server,
        victim,
        forged: 0,
    };
    run(&mut p, &mut carrier, limit, |_, _| {}, |_, _, _| None::<()>);
    carrier.forged
}

/// Issue 50's pause finding, played by a real player's machine in this process: it takes
/// a free seat of `room` on `server` from `sock` and, without ever sending an input, asks
/// for a pause every second for `limit`. The refusals it was told, as the client words
/// them (`Debug`), and whether the server ever announced a pause.
pub fn pause_without_playing(
    server: SocketAddr,
    room: &str,
    sock: &UdpSocket,
    limit: Duration,
) -> (Vec<String>, bool) {
    use framelock::lockstep::{self, ClientEvent};
    use framelock::session::{
        CoreReply, CoreRequest, Participant, ParticipantConfig, ParticipantEvent,
    };
    let info = SessionInfo {
        core_name: "lightcycles".into(),
        core_version: "0.1.0".into(),
        player_name: "griefer".into(),
        ..SessionInfo::default()
    };
    let mut cfg = JoinConfig::new(server, info);
    cfg.room = room.into();
    cfg.entropy = [0x67; 32];
    let mut p = Participant::join(
        Instant::now(),
        cfg,
        lockstep::Config::default(),
        ParticipantConfig::default(),
    );
    let (mut refusals, mut paused) = (Vec::new(), false);
    let mut asked = Instant::now();
    let before = |p: &mut Participant, now: Instant| {
        if now >= asked + Duration::from_secs(1) {
            if let Some(c) = p.client_mut() {
                c.request_pause(true);
                asked = now;
            }
        }
        // Its frame loop is there (it never runs a frame: it sends no input).
        p.frame_loop_alive(now);
    };
    let answer = |p: &mut Participant, now: Instant, ev: ParticipantEvent| {
        match ev {
            ParticipantEvent::Game(ClientEvent::PauseRefused { why }) => {
                refusals.push(format!("{why:?}"))
            }
            ParticipantEvent::Game(ClientEvent::Paused { .. }) => paused = true,
            ParticipantEvent::Core(CoreRequest::Load { frame, .. }) => {
                p.handle_core(now, CoreReply::Loaded { frame })
            }
            _ => {}
        }
        None::<()>
    };
    run(&mut p, &mut Sock(sock), limit, before, answer);
    (refusals, paused)
}
