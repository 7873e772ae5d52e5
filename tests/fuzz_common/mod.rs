//! A seeded mutation fuzzer for every datagram decoder, through the public entry points a
//! datagram from the network reaches: the session layer's messages (handshake, lobby, state
//! transfer, rooms), CTRLs at a lockstep server, UPDATEs at a lockstep client, resync
//! chunks, a dedicated server's router with a room open, and what a home router answers a
//! port mapping (PCP, NAT-PMP, SSDP, and UPnP's HTTP: descriptions and SOAP), each also
//! through the mapping machine. cargo-fuzz needs a nightly
//! toolchain, which this project's machines do not have; this loop needs none.
//!
//! Each target starts from a corpus of valid datagrams recorded from a short in-memory
//! session, and feeds mutants of them (bit flips, interesting bytes, truncation, extension,
//! splices, inserted and deleted runs) and purely random bytes. A decoder that panics fails
//! the run, naming the target, the input index and the bytes. The handshake target also
//! checks a property: whatever decodes re-encodes to bytes that decode to the same message.
#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use framelock::input::Pad;
use framelock::lockstep::{Client, Config, Mode, PeerId, Server};
use framelock::portmap::{http, natpmp, pcp, upnp, MapConfig, Mapper, Protocol, Request};
use framelock::serve::{Rooms, ServeConfig};
use framelock::session::msg::{
    Auth, Hello, Msg, OpenRoom, RelayStep, RoomInfo, RoomMsg, StateAck, Welcome, CHUNK_SIZE,
};
use framelock::session::{ResyncRecv, ResyncSend, Transmit};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

/// One fuzz target: its name and how many inputs it took, and how long.
pub struct Outcome {
    pub target: &'static str,
    pub inputs: u64,
    pub corpus: usize,
    pub secs: f64,
}

/// Runs every target for `inputs` inputs each, from `seed`.
pub fn run_all(inputs: u64, seed: u64) -> Vec<Outcome> {
    let corpus = Corpus::record();
    vec![
        fuzz(
            "session (handshake, lobby, rooms)",
            &corpus.session,
            inputs,
            seed,
            session_target(),
        ),
        fuzz(
            "CTRL at a lockstep server",
            &corpus.ctrl,
            inputs,
            seed + 1,
            ctrl_target(&corpus),
        ),
        fuzz(
            "UPDATE at a lockstep client",
            &corpus.update,
            inputs,
            seed + 2,
            update_target(&corpus),
        ),
        fuzz(
            "resync chunks",
            &corpus.resync,
            inputs,
            seed + 3,
            resync_target(),
        ),
        fuzz(
            "serve router",
            &corpus.serve,
            inputs,
            seed + 4,
            serve_target(&corpus),
        ),
        fuzz(
            "router answers (PCP, NAT-PMP, SSDP)",
            &portmap_udp_corpus(),
            inputs,
            seed + 5,
            portmap_udp_target(),
        ),
        fuzz(
            "router HTTP answers (UPnP description, SOAP)",
            &portmap_http_corpus(),
            inputs,
            seed + 6,
            portmap_http_target(),
        ),
    ]
}

const GW: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 1);

fn mapper_cfg() -> MapConfig {
    MapConfig::new(
        SocketAddrV4::new(Ipv4Addr::new(192, 168, 1, 20), 7845),
        Some(GW),
        [9; 12],
    )
}

/// What a router answers on UDP: PCP and NAT-PMP grants and refusals, SSDP answers.
fn portmap_udp_corpus() -> Vec<Vec<u8>> {
    let mut pcp_ok = pcp::MapRequest {
        lifetime: 3600,
        client: Ipv4Addr::new(192, 168, 1, 20),
        nonce: [9; 12],
        internal_port: 7845,
        external_port: 7845,
        prefer_failure: false,
    }
    .encode();
    pcp_ok[1] = 0x81;
    pcp_ok[44..60].copy_from_slice(&Ipv4Addr::new(203, 0, 113, 7).to_ipv6_mapped().octets());
    let mut pcp_no = pcp_ok.clone();
    pcp_no[3] = 2;
    vec![
        pcp_ok,
        pcp_no,
        vec![0, 129, 0, 1, 0, 0, 0, 1],
        vec![0, 128, 0, 0, 0, 0, 0, 1, 203, 0, 113, 7],
        vec![0, 129, 0, 0, 0, 0, 0, 1, 0x1e, 0xa5, 0x1e, 0xa5, 0, 0, 0x0e, 0x10],
        b"HTTP/1.1 200 OK\r\nST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\nLOCATION: http://192.168.1.1:5000/rootDesc.xml\r\n\r\n".to_vec(),
    ]
}

/// Every UDP answer decoder, and a mapper that hears it from the router.
fn portmap_udp_target() -> impl FnMut(&[u8]) {
    let t0 = Instant::now();
    move |bytes| {
        let _ = pcp::decode(bytes);
        let _ = natpmp::decode(bytes);
        let _ = upnp::parse_ssdp(bytes);
        let mut m = Mapper::new(t0, mapper_cfg());
        m.handle_udp(t0, SocketAddr::from((GW, 5351)), bytes);
        m.handle_udp(t0, SocketAddr::from((GW, 1900)), bytes);
        m.handle_timeout(t0 + Duration::from_secs(1));
        while m.poll_request().is_some() {}
        while m.poll_event().is_some() {}
    }
}

/// What a router answers over HTTP: its description and SOAP answers and faults.
fn portmap_http_corpus() -> Vec<Vec<u8>> {
    let ok = |body: &str| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    let description = "<?xml version=\"1.0\"?><root xmlns=\"urn:schemas-upnp-org:device-1-0\"><URLBase>http://192.168.1.1:5000/</URLBase><device><deviceList><device><serviceList><service><serviceType>urn:schemas-upnp-org:service:WANIPConnection:2</serviceType><controlURL>/ctl/IPConn</controlURL></service></serviceList></device></deviceList></device></root>";
    vec![
        ok(description),
        ok("<s:Envelope><s:Body><u:GetExternalIPAddressResponse><NewExternalIPAddress>203.0.113.7</NewExternalIPAddress></u:GetExternalIPAddressResponse></s:Body></s:Envelope>"),
        ok("<s:Envelope><s:Body><u:AddAnyPortMappingResponse><NewReservedPort>7846</NewReservedPort></u:AddAnyPortMappingResponse></s:Body></s:Envelope>"),
        b"HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n5a\r\n<s:Envelope><s:Body><s:Fault><detail><UPnPError><errorCode>718</errorCode></UPnPError>\r\n0\r\n\r\n".to_vec(),
    ]
}

/// The HTTP answer parser, the description and SOAP parsers behind it, and a mapper that
/// takes it as the router's description.
fn portmap_http_target() -> impl FnMut(&[u8]) {
    let t0 = Instant::now();
    let location = upnp::HttpUrl::parse("http://192.168.1.1:5000/rootDesc.xml").unwrap();
    let ssdp = b"HTTP/1.1 200 OK\r\nLOCATION: http://192.168.1.1:5000/rootDesc.xml\r\n\r\n";
    move |bytes| {
        for eof in [false, true] {
            if let Ok(Some(r)) = http::parse(bytes, eof, 64 * 1024) {
                let _ = upnp::parse_description(&r.body, &location);
                for action in [
                    "GetExternalIPAddress",
                    "AddPortMapping",
                    "AddAnyPortMapping",
                ] {
                    let _ = upnp::parse_soap(&r, action);
                }
            }
        }
        let mut cfg = mapper_cfg();
        cfg.protocols = vec![Protocol::Upnp];
        let mut m = Mapper::new(t0, cfg);
        m.handle_udp(t0, SocketAddr::from((GW, 1900)), ssdp);
        let mut ids = Vec::new();
        while let Some(r) = m.poll_request() {
            if let Request::Http { id, .. } = r {
                ids.push(id);
            }
        }
        for id in ids {
            m.handle_http(t0, id, Ok(bytes.to_vec()));
        }
        while m.poll_request().is_some() {}
        while m.poll_event().is_some() {}
    }
}

fn fuzz(
    target: &'static str,
    corpus: &[Vec<u8>],
    inputs: u64,
    seed: u64,
    mut feed: impl FnMut(&[u8]),
) -> Outcome {
    assert!(!corpus.is_empty(), "{target}: empty corpus");
    let mut rng = SmallRng::seed_from_u64(seed);
    let start = Instant::now();
    let mut buf = Vec::with_capacity(2048);
    for i in 0..inputs {
        mutate(&mut rng, corpus, &mut buf);
        let outcome = catch_unwind(AssertUnwindSafe(|| feed(&buf)));
        if outcome.is_err() {
            panic!("{target}: input {i} (seed {seed}) panicked the decoder: {buf:02x?}");
        }
    }
    Outcome {
        target,
        inputs,
        corpus: corpus.len(),
        secs: start.elapsed().as_secs_f64(),
    }
}

const INTERESTING: [u8; 8] = [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff, 0x20, 0x40];

/// The next input: a mutant of a corpus entry, or (one in sixteen) random bytes.
fn mutate(rng: &mut SmallRng, corpus: &[Vec<u8>], out: &mut Vec<u8>) {
    out.clear();
    if rng.gen_ratio(1, 16) {
        out.resize(rng.gen_range(0..1300), 0);
        rng.fill_bytes(out);
        return;
    }
    out.extend_from_slice(&corpus[rng.gen_range(0..corpus.len())]);
    for _ in 0..rng.gen_range(1..=4) {
        let len = out.len();
        match rng.gen_range(0..8) {
            0 | 1 if len > 0 => {
                let at = rng.gen_range(0..len);
                out[at] ^= 1 << rng.gen_range(0..8);
            }
            2 if len > 0 => {
                let at = rng.gen_range(0..len);
                out[at] = INTERESTING[rng.gen_range(0..INTERESTING.len())];
            }
            3 => out.truncate(rng.gen_range(0..=len)),
            4 => {
                for _ in 0..rng.gen_range(1..32) {
                    out.push(rng.gen());
                }
            }
            5 => {
                let other = &corpus[rng.gen_range(0..corpus.len())];
                let cut = rng.gen_range(0..=len);
                let from = rng.gen_range(0..=other.len());
                out.truncate(cut);
                out.extend_from_slice(&other[from..]);
            }
            6 if len > 0 => {
                let at = rng.gen_range(0..len);
                let n = rng.gen_range(1..=(len - at).min(16));
                out.drain(at..at + n);
            }
            _ => {
                let at = rng.gen_range(0..=len);
                let n = rng.gen_range(1..16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
                out.splice(at..at, bytes);
            }
        }
    }
}

fn session_target() -> impl FnMut(&[u8]) {
    |d: &[u8]| {
        if let Ok((header, msg)) = Msg::decode(d) {
            let again = msg.encode(header.session);
            let (h2, m2) = Msg::decode(&again).expect("a re-encoded message decodes");
            assert_eq!((h2, m2), (header, msg), "decode(encode(m)) == m");
        }
    }
}

fn two_player_config() -> Config {
    Config {
        session: 0x5eed,
        send_budget: 0,
        ..Config::default()
    }
}

fn ctrl_target(c: &Corpus) -> impl FnMut(&[u8]) + '_ {
    let mut server = Server::new(c.t0, two_player_config()).unwrap();
    // An optimistic server publishes on its clock: its time runs a millisecond a datagram,
    // so its ticks place whatever the datagrams left in its command buffers.
    let optimistic_cfg = Config {
        mode: Mode::Optimistic,
        ..two_player_config()
    };
    let mut optimistic = Server::new(c.t0, optimistic_cfg).unwrap();
    for s in [&mut server, &mut optimistic] {
        s.add_peer(c.t0, PeerId(0)).unwrap();
        s.add_peer(c.t0, PeerId(1)).unwrap();
    }
    let mut n = 0u64;
    move |d: &[u8]| {
        n += 1;
        let now = c.t0 + Duration::from_micros(n);
        server.handle_datagram(now, PeerId((n % 2) as u8), d);
        while server.poll_transmit(now).is_some() {}
        while server.poll_event().is_some() {}
        let now = c.t0 + Duration::from_millis(n);
        optimistic.handle_datagram(now, PeerId((n % 2) as u8), d);
        if optimistic.poll_timeout().is_some_and(|t| t <= now) {
            optimistic.handle_timeout(now);
        }
        while optimistic.poll_transmit(now).is_some() {}
        while optimistic.poll_event().is_some() {}
    }
}

fn update_target(c: &Corpus) -> impl FnMut(&[u8]) + '_ {
    let mut client = Client::new(c.t0, two_player_config(), PeerId(1)).unwrap();
    let mut n = 0u64;
    move |d: &[u8]| {
        n += 1;
        let now = c.t0 + Duration::from_micros(n);
        client.handle_datagram(now, d);
        while client.poll_frame().is_some() {}
        if n.is_multiple_of(64) {
            client.push_local_input(now, Pad(n as u16 & 0xff));
            while client.poll_transmit(now).is_some() {}
        }
        while client.poll_event().is_some() {}
    }
}

fn resync_target() -> impl FnMut(&[u8]) {
    let mut rx = ResyncRecv::default();
    let t0 = Instant::now();
    let mut n = 0u64;
    move |d: &[u8]| {
        n += 1;
        let now = t0 + Duration::from_micros(n);
        if d.len() >= 8 {
            let _ = rx.handle_datagram(now, &d[8..]);
        }
        while rx.poll_transmit(now, 7).is_some() {}
    }
}

fn serve_target(c: &Corpus) -> impl FnMut(&[u8]) + '_ {
    let mut rooms = Rooms::new(ServeConfig {
        max_rooms: 64,
        opens_per_minute: 1_000_000,
        ..ServeConfig::default()
    });
    let mut n = 0u64;
    move |d: &[u8]| {
        n += 1;
        let now = c.t0 + Duration::from_micros(n);
        // A handful of source addresses, so that routed and stranger paths both run.
        let from = SocketAddr::from(([198, 51, 100, (n % 5) as u8], 40000 + (n % 3) as u16));
        rooms.handle_datagram(now, from, d);
        rooms.run_jobs(now);
        if n.is_multiple_of(256) {
            rooms.handle_timeout(now);
        }
        while rooms.poll_transmit(now).is_some() {}
        while rooms.poll_event().is_some() {}
    }
}

/// Valid datagrams of every kind, recorded from in-memory sessions.
pub struct Corpus {
    t0: Instant,
    pub session: Vec<Vec<u8>>,
    pub ctrl: Vec<Vec<u8>>,
    pub update: Vec<Vec<u8>>,
    pub resync: Vec<Vec<u8>>,
    pub serve: Vec<Vec<u8>>,
}

impl Corpus {
    pub fn record() -> Corpus {
        let t0 = Instant::now();
        let (ctrl, update) = lockstep_session(t0);
        let session = session_messages();
        let mut resync = Vec::new();
        // A state that does not compress, so that it takes several chunks.
        let mut state = vec![0u8; 20_000];
        SmallRng::seed_from_u64(3).fill_bytes(&mut state);
        let mut tx = ResyncSend::new(t0, 1, 240, state).unwrap();
        while let Some(Transmit { bytes: d, .. }) = tx.poll_transmit(t0, 7) {
            resync.push(d);
        }
        let serve: Vec<Vec<u8>> = session.iter().chain(&ctrl).take(200).cloned().collect();
        Corpus {
            t0,
            session,
            ctrl,
            update,
            resync,
            serve,
        }
    }
}

/// CTRLs and UPDATEs of a two-player session with bots, 600 frames, in memory.
fn lockstep_session(t0: Instant) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let cfg = two_player_config();
    let mut server = Server::new(t0, cfg.clone()).unwrap();
    let mut clients: Vec<Client> = (0..2)
        .map(|p| {
            server.add_peer(t0, PeerId(p)).unwrap();
            Client::new(t0, cfg.clone(), PeerId(p)).unwrap()
        })
        .collect();
    let mut rng = SmallRng::seed_from_u64(9);
    let (mut ctrls, mut updates) = (Vec::new(), Vec::new());
    for f in 0..600u64 {
        let now = t0 + Duration::from_micros(16_667 * f);
        for c in &mut clients {
            let pad = Pad(if rng.gen_ratio(1, 4) {
                rng.gen::<u16>() & 0xfff
            } else {
                0
            });
            c.push_local_input(now, pad);
            while c.poll_frame().is_some() {}
            if f % 30 == 29 {
                c.report_checksum(framelock::lockstep::Frame(f as u32), f);
            }
            while let Some(Transmit { bytes: d, .. }) = c.poll_transmit(now) {
                server.handle_datagram(now, c.me(), &d);
                ctrls.push(d);
            }
        }
        server.handle_timeout(now);
        while let Some(t) = server.poll_transmit(now) {
            clients[usize::from(t.to.number())].handle_datagram(now, &t.bytes);
            updates.push(t.bytes);
        }
    }
    (ctrls, updates)
}

fn session_messages() -> Vec<Vec<u8>> {
    let hello = |room: &str, auth: Auth| Hello {
        core_name: "Genesis Plus GX".into(),
        core_version: "v1.7.4".into(),
        content_name: "airstriker.md".into(),
        content_hash: Some(0x1234),
        player_name: "ana".into(),
        room: room.into(),
        watch: room == "den",
        no_share: room == "den",
        key: [0x4b; 32],
        cookie: [0x5c; 16],
        seat_key: [0x5d; 16],
        auth,
    };
    let open = OpenRoom {
        room: "den".into(),
        players: 2,
        start_with: 2,
        keyframe_interval: 2,
        mode: Some(Mode::Optimistic),
        fps: 60.0,
        password: false,
        core_name: "lightcycles".into(),
        core_version: "0.1.0".into(),
        content_name: String::new(),
        content_hash: None,
        player_name: "host".into(),
        raw_len: 100,
        packed_len: 90,
        payload_hash: 5,
        cookie: Default::default(),
        hosted: false,
        locals: Vec::new(),
        no_share: false,
    };
    let chunk = vec![3u8; CHUNK_SIZE];
    vec![
        Msg::Hello(hello("", Auth::None)).encode(0),
        Msg::Hello(hello("den", Auth::None)).encode(0),
        Msg::Hello(hello(
            "den",
            Auth::Pake {
                challenge: [1; 33],
                msg: [2; 33],
                confirm: [3; 32],
            },
        ))
        .encode(0),
        Msg::Hello(hello("", Auth::NoPassword { challenge: [4; 33] })).encode(0),
        Msg::Challenge([0x42; 33]).encode(0),
        Msg::Retry([0x43; 16]).encode(0),
        Msg::Welcome(Welcome {
            slot: 1,
            fps: 60.0,
            frame: 0,
            raw_len: 5000,
            packed_len: 900,
            payload_hash: 77,
            chunk_size: CHUNK_SIZE as u16,
            slots: 2,
            keyframe_interval: 2,
            mode: Mode::Optimistic,
            key: [0x4b; 32],
            seat_key: [0x6e; 16],
            players: [(PeerId(0), "host".into()), (PeerId(1), "ana".into())]
                .into_iter()
                .collect(),
        })
        .encode(9),
        Msg::Refuse("wrong password".into()).encode(0),
        Msg::StateChunk {
            index: 0,
            seq: 1,
            data: &chunk,
        }
        .encode(9),
        Msg::StateAck(StateAck {
            cum: 3,
            latest_seq: 5,
            verified: false,
            bitmap: vec![0b101],
        })
        .encode(9),
        Msg::Bye("quit".into()).encode(9),
        Msg::Lobby { ready: 1, want: 2 }.encode(9),
        Msg::Loading.encode(9),
        Msg::Room(RoomMsg::Open(open)).encode(0),
        Msg::Room(RoomMsg::Opened {
            room: "den".into(),
            key: [0x3c; 32],
        })
        .encode(9),
        Msg::Room(RoomMsg::NoRoom {
            room: "x".into(),
            rooms: vec!["den".into()],
        })
        .encode(0),
        Msg::Room(RoomMsg::List { first: 0 }).encode(0),
        Msg::Room(RoomMsg::Rooms {
            total: 1,
            first: 0,
            rooms: vec![RoomInfo {
                name: "den".into(),
                content: String::new(),
                core: "lightcycles".into(),
                players: 1,
                seats: 2,
                password: false,
                playing: false,
                age_secs: 3,
                spectators: 1,
                mode: Mode::Optimistic,
                region: "eu".into(),
                server: "127.0.0.1:7845".into(),
            }],
        })
        .encode(0),
        Msg::Room(RoomMsg::Relay {
            ticket: 1,
            step: RelayStep::Answer {
                msg: [5; 33],
                confirm: [6; 32],
            },
        })
        .encode(9),
    ]
}
