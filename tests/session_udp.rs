//! Proves the session handshake and start-state transfer over real loopback UDP through the
//! network conditioner: exact state delivery under loss, refusals that name both sides, the
//! password never on the wire, a full lobby, foreign protocol versions, and garbage ignored.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use framelock::lockstep::{PeerId, Slot};
use framelock::net::udp::UdpSocket;
use framelock::net::{Link, NetSim};
use framelock::session::msg::{refuse_text, Auth, Hello, Msg};
use framelock::session::{
    is_session_datagram, HostConfig, HostEvent, HostSession, JoinConfig, JoinEvent, JoinSession,
    SessionError, SessionInfo, StartState,
};
use framelock::wire::PROTOCOL_VERSION;
use rand::{rngs::SmallRng, Rng, RngCore, SeedableRng};

const LOSSY: &str = "delay=40ms,jitter=10ms,loss=25%,dup=2%,reorder=2%";
/// Upper bound on any one run, so that no loop can spin forever.
const RUN_LIMIT: Duration = Duration::from_secs(20);

fn info(player: &str) -> SessionInfo {
    SessionInfo {
        core_name: "Genesis Plus GX".into(),
        core_version: "v1.7.4".into(),
        content_name: "airstriker.md".into(),
        content_hash: Some(0x1a2b_3c4d_5e6f_7081),
        options: vec![("genesis_plus_gx_region".into(), "auto".into())],
        player_name: player.into(),
    }
}

fn netsim(spec: &str, seed: u64) -> Option<NetSim> {
    (!spec.is_empty()).then(|| format!("{spec},seed={seed}").parse().unwrap())
}

fn random_state(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    SmallRng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

/// Every datagram either side handed to its endpoint, for scanning.
type WireLog = Arc<Mutex<Vec<Vec<u8>>>>;

struct Host {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// Set while every admitted joiner has confirmed its start state.
    all_ready: Arc<AtomicBool>,
    /// Datagrams received and rejected, per sender.
    counts: Arc<Mutex<HashMap<SocketAddr, (u64, u64)>>>,
    events: Arc<Mutex<Vec<HostEvent>>>,
    handle: thread::JoinHandle<(HostSession, Link)>,
}

impl Host {
    fn start(cfg: HostConfig, state: Vec<u8>, sim: Option<NetSim>, wire: WireLog) -> Host {
        let session = HostSession::new(cfg, info("host"), state, vec![0x5a; 8192]).unwrap();
        let mut ep = Link::new(
            UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap(),
            sim,
        );
        let addr = ep.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let events = Arc::new(Mutex::new(Vec::new()));
        let all_ready = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Mutex::new(HashMap::new()));
        let (stop2, events2, ready2) = (stop.clone(), events.clone(), all_ready.clone());
        let counts2 = counts.clone();
        let handle = thread::spawn(move || {
            let mut host = session;
            let end = Instant::now() + RUN_LIMIT;
            while !stop2.load(Ordering::Relaxed) && Instant::now() < end {
                let now = Instant::now();
                for (from, bytes) in ep.recv(now).unwrap() {
                    let ok = is_session_datagram(&bytes)
                        && host.handle_datagram(now, from, &bytes).is_taken();
                    let mut counts = counts2.lock().unwrap();
                    let count: &mut (u64, u64) = counts.entry(from).or_default();
                    count.0 += 1;
                    if !ok {
                        count.1 += 1;
                        ep.note_invalid();
                    }
                }
                host.handle_timeout(now);
                while let Some(t) = host.poll_transmit(now) {
                    wire.lock().unwrap().push(t.bytes.clone());
                    ep.send(now, t.to, t.bytes);
                }
                ep.flush_due(now);
                while let Some(e) = host.poll_event() {
                    events2.lock().unwrap().push(e);
                }
                ready2.store(host.all_ready(), Ordering::Relaxed);
                let cap = now + Duration::from_millis(20);
                let deadline = host.poll_timeout().map_or(cap, |t| t.min(cap));
                ep.wait_until(now, Some(deadline)).unwrap();
            }
            (host, ep)
        });
        Host {
            addr,
            stop,
            all_ready,
            counts,
            events,
            handle,
        }
    }

    fn wait_for(&self, what: impl Fn(&[HostEvent]) -> bool) -> bool {
        let end = Instant::now() + RUN_LIMIT;
        while Instant::now() < end {
            if what(&self.events.lock().unwrap()) {
                return true;
            }
            thread::sleep(Duration::from_millis(5));
        }
        false
    }

    fn stop(self) -> (HostSession, Link, Vec<HostEvent>) {
        self.stop.store(true, Ordering::Relaxed);
        let (host, ep) = self.handle.join().unwrap();
        let events = self.events.lock().unwrap().clone();
        (host, ep, events)
    }
}

/// Runs a joiner until it is ready or failed. A ready joiner keeps answering (the host may
/// have missed its final ack) until `host_ready` is set.
fn join(
    host: SocketAddr,
    host_ready: &AtomicBool,
    info: SessionInfo,
    password: Option<&str>,
    sim: Option<NetSim>,
    wire: WireLog,
) -> (Result<StartState, SessionError>, Duration) {
    let mut ep = Link::client(host, sim).unwrap();
    let mut cfg = JoinConfig::new(host, info);
    cfg.password = password.map(str::to_string);
    let start = Instant::now();
    let mut j = JoinSession::new(start, cfg);
    let mut result = None;
    let mut took = Duration::ZERO;
    let mut linger_until = None;
    while Instant::now() < start + RUN_LIMIT {
        let now = Instant::now();
        if linger_until.is_some_and(|t| now >= t) {
            break;
        }
        if matches!(result, Some(Ok(_))) && host_ready.load(Ordering::Relaxed) {
            break;
        }
        for (from, bytes) in ep.recv(now).unwrap() {
            if !is_session_datagram(&bytes) || !j.handle_datagram(now, from, &bytes).is_taken() {
                ep.note_invalid();
            }
        }
        j.handle_timeout(now);
        while let Some(t) = j.poll_transmit(now) {
            wire.lock().unwrap().push(t.bytes.clone());
            ep.send(now, t.to, t.bytes);
        }
        ep.flush_due(now);
        while let Some(e) = j.poll_event() {
            match e {
                JoinEvent::Ready(s) if result.is_none() => {
                    took = now - start;
                    result = Some(Ok(*s));
                    linger_until = Some(now + Duration::from_secs(5));
                }
                JoinEvent::Failed(err) if result.is_none() => {
                    took = now - start;
                    result = Some(Err(err));
                    linger_until = Some(now + Duration::from_millis(200));
                }
                _ => {}
            }
        }
        let cap = now + Duration::from_millis(20);
        let deadline = j.poll_timeout().map_or(cap, |t| t.min(cap));
        ep.wait_until(now, Some(deadline)).unwrap();
    }
    (result.expect("join settled within the run limit"), took)
}

fn cfg(password: Option<&str>) -> HostConfig {
    let mut c = HostConfig::new(0x1234_5678, [99; 32], 60.0);
    c.password = password.map(str::to_string);
    c
}

#[test]
fn joiner_receives_a_1mib_state_exactly_over_a_lossy_link() {
    let wire = WireLog::default();
    let state = random_state(1 << 20, 1);
    let host = Host::start(cfg(None), state.clone(), netsim(LOSSY, 1), wire.clone());
    let (got, took) = join(
        host.addr,
        &host.all_ready,
        info("ana"),
        None,
        netsim(LOSSY, 2),
        wire,
    );
    let got = got.expect("joined");
    assert_eq!(got.payload.state, state);
    assert_eq!(got.payload.sram, vec![0x5a; 8192]);
    assert_eq!(got.payload.options, info("host").options);
    assert_eq!((got.slot, got.session), (Some(PeerId(1)), 0x1234_5678));
    assert!(host.wait_for(|e| e.contains(&HostEvent::Ready {
        slot: Slot::Player(PeerId(1))
    })));
    let (h, ep, _) = host.stop();
    eprintln!(
        "1 MiB over real UDP, {LOSSY} both ways: ready after {took:?}; host sent {} chunks ({} resent), {} wire bytes",
        h.stats().chunks_sent,
        h.stats().chunks_resent,
        ep.stats().wire_bytes_sent
    );
}

#[test]
fn four_mib_with_quarter_loss_on_loopback() {
    let wire = WireLog::default();
    let state = random_state(4 << 20, 2);
    let host = Host::start(
        cfg(None),
        state.clone(),
        netsim("loss=25%", 3),
        wire.clone(),
    );
    let (got, took) = join(
        host.addr,
        &host.all_ready,
        info("ana"),
        None,
        netsim("loss=25%", 4),
        wire,
    );
    assert_eq!(got.expect("joined").payload.state, state);
    assert!(host.wait_for(|e| e.contains(&HostEvent::Ready {
        slot: Slot::Player(PeerId(1))
    })));
    let (h, _, _) = host.stop();
    eprintln!(
        "4 MiB over real UDP loopback, 25% loss both ways: ready after {took:?}; {} chunks sent, {} resent",
        h.stats().chunks_sent,
        h.stats().chunks_resent
    );
}

#[test]
fn mismatches_are_refused_naming_both_sides() {
    let wire = WireLog::default();
    let host = Host::start(cfg(None), vec![1; 5000], netsim(LOSSY, 5), wire.clone());
    let mut content = info("c");
    content.content_name = "other.md".into();
    content.content_hash = Some(0xabc);
    let mut core = info("n");
    core.core_name = "PicoDrive".into();
    let mut version = info("v");
    version.core_version = "v1.7.3".into();
    let cases = [
        (content, "content differs: host has airstriker.md (xxh3 1a2b3c4d5e6f7081), you have other.md (xxh3 0000000000000abc)"),
        (core, "core differs: host runs Genesis Plus GX, you run PicoDrive"),
        (version, "core version differs: host runs Genesis Plus GX v1.7.4, you run Genesis Plus GX v1.7.3"),
    ];
    let addr = host.addr;
    let ready = &*host.all_ready;
    let results: Vec<_> = thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .enumerate()
            .map(|(i, (inf, _))| {
                let wire = wire.clone();
                s.spawn(move || {
                    join(
                        addr,
                        ready,
                        inf.clone(),
                        None,
                        netsim(LOSSY, 10 + i as u64),
                        wire,
                    )
                    .0
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for ((_, want), got) in cases.iter().zip(results) {
        assert_eq!(got.unwrap_err(), SessionError::Refused(want.to_string()));
    }
    let (h, _, _) = host.stop();
    assert_eq!(h.players().len(), 1, "only the host");
}

#[test]
fn password_is_verified_and_never_sent() {
    let secret = "swordfish-42";
    let wire = WireLog::default();
    let host = Host::start(
        cfg(Some(secret)),
        vec![9; 20_000],
        netsim(LOSSY, 6),
        wire.clone(),
    );
    let addr = host.addr;
    let ready = &*host.all_ready;
    let (right, wrong, none) = thread::scope(|s| {
        let w = wire.clone();
        let right =
            s.spawn(move || join(addr, ready, info("a"), Some(secret), netsim(LOSSY, 20), w).0);
        let w = wire.clone();
        let wrong = s.spawn(move || {
            join(
                addr,
                ready,
                info("b"),
                Some("swordfish-41"),
                netsim(LOSSY, 21),
                w,
            )
            .0
        });
        let w = wire.clone();
        let none = s.spawn(move || join(addr, ready, info("c"), None, netsim(LOSSY, 22), w).0);
        (
            right.join().unwrap(),
            wrong.join().unwrap(),
            none.join().unwrap(),
        )
    });
    assert_eq!(
        right.expect("right password joins").payload.state,
        vec![9; 20_000]
    );
    assert_eq!(
        wrong.unwrap_err(),
        SessionError::Refused("wrong password".into())
    );
    match none.unwrap_err() {
        SessionError::Refused(r) => assert!(r.starts_with("wrong password"), "{r}"),
        other => panic!("{other}"),
    }
    host.stop();
    let wire = wire.lock().unwrap();
    assert!(wire.iter().any(|d| d[3] == 0x02), "challenges were sent");
    let needle = b"swordfish";
    let hits = wire
        .iter()
        .filter(|d| d.windows(needle.len()).any(|w| w == needle))
        .count();
    assert_eq!(hits, 0, "password bytes in {} datagrams", wire.len());
}

#[test]
fn eight_joiners_fill_a_dedicated_host_and_the_ninth_is_refused() {
    let wire = WireLog::default();
    let mut c = cfg(None);
    c.host_is_player = false;
    let host = Host::start(
        c,
        vec![4; 30_000],
        netsim("delay=5ms,loss=5%", 7),
        wire.clone(),
    );
    let addr = host.addr;
    let ready = &*host.all_ready;
    let slots: Vec<u8> = thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let w = wire.clone();
                s.spawn(move || {
                    join(
                        addr,
                        ready,
                        info(&format!("p{i}")),
                        None,
                        netsim("loss=5%", 30 + i),
                        w,
                    )
                    .0
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap().expect("joined").slot.expect("a seat").0)
            .collect()
    });
    let mut sorted = slots.clone();
    sorted.sort();
    assert_eq!(sorted, (0..8).collect::<Vec<u8>>());
    let (ninth, _) = join(addr, ready, info("p9"), None, None, wire);
    assert_eq!(
        ninth.unwrap_err(),
        SessionError::Refused(
            "session is full: all 8 seats are taken (you can watch it with `framelock spectate`)"
                .into()
        )
    );
    host.stop();
}

#[test]
fn a_joiner_of_another_protocol_version_is_told_both_versions() {
    let host = Host::start(cfg(None), vec![4; 100], None, WireLog::default());
    let mut hello = Msg::Hello(Hello {
        core_name: "Genesis Plus GX".into(),
        core_version: "v9".into(),
        content_name: String::new(),
        content_hash: None,
        player_name: "future".into(),
        room: String::new(),
        watch: false,
        no_share: false,
        key: [0x4b; 32],
        cookie: [0x5c; 16],
        seat_key: [0; 16],
        auth: Auth::None,
    })
    .encode(0);
    hello[2] = PROTOCOL_VERSION + 1;
    let mut sock = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut got = Vec::new();
    let end = Instant::now() + Duration::from_secs(3);
    while got.is_empty() && Instant::now() < end {
        sock.send_to(host.addr, &hello);
        sock.wait(Duration::from_millis(100)).unwrap();
        sock.recv_all(&mut got).unwrap();
    }
    host.stop();
    let (_, refuse) = got.first().expect("an answer");
    assert_eq!(refuse[3], 0x04, "a Refuse");
    assert_eq!(
        refuse_text(&refuse[8..]).unwrap(),
        format!(
            "protocol version differs: host speaks {PROTOCOL_VERSION}, you speak {}",
            PROTOCOL_VERSION + 1
        )
    );
}

#[test]
fn garbage_datagrams_do_not_disturb_a_transfer_and_are_counted() {
    let wire = WireLog::default();
    let state = random_state(2 << 20, 8);
    let host = Host::start(
        cfg(None),
        state.clone(),
        netsim("delay=5ms,loss=10%", 9),
        wire.clone(),
    );
    let addr = host.addr;
    let ready = &*host.all_ready;
    let done = AtomicBool::new(false);
    let garbage = AtomicU64::new(0);
    let mut sock = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let garbage_from = sock.local_addr();
    let got = thread::scope(|s| {
        s.spawn(|| {
            let mut rng = SmallRng::seed_from_u64(10);
            while !done.load(Ordering::Relaxed) {
                for _ in 0..10 {
                    let mut d: Vec<u8> = (0..rng.gen_range(0..1300)).map(|_| rng.gen()).collect();
                    match rng.gen_range(0..4) {
                        // Well-formed headers: a wrong session, a truncated body, a lockstep kind.
                        0 if d.len() >= 8 => {
                            d[..4].copy_from_slice(&[b'F', b'L', PROTOCOL_VERSION, 0x06])
                        }
                        1 => {
                            d = vec![
                                b'F',
                                b'L',
                                PROTOCOL_VERSION,
                                0x05,
                                0x78,
                                0x56,
                                0x34,
                                0x12,
                                1,
                            ]
                        }
                        2 if d.len() >= 8 => {
                            d[..4].copy_from_slice(&[b'F', b'L', PROTOCOL_VERSION, 0x11])
                        }
                        _ => {}
                    }
                    if sock.send_to(addr, &d) {
                        garbage.fetch_add(1, Ordering::Relaxed);
                    }
                }
                thread::sleep(Duration::from_millis(2));
            }
        });
        let got = join(
            addr,
            ready,
            info("ana"),
            None,
            netsim("delay=5ms,loss=10%", 11),
            wire.clone(),
        )
        .0;
        done.store(true, Ordering::Relaxed);
        got
    });
    assert_eq!(got.expect("joined despite garbage").payload.state, state);
    let counts = host.counts.clone();
    let (h, ep, _) = host.stop();
    let sent = garbage.load(Ordering::Relaxed);
    let (received, rejected) = counts.lock().unwrap()[&garbage_from];
    assert!(received > 100 && received <= sent, "{received} of {sent}");
    assert_eq!(rejected, received, "every garbage datagram rejected");
    assert_eq!(
        ep.stats().packets_dropped_invalid,
        rejected,
        "nothing else rejected"
    );
    assert_eq!(
        h.stats().dropped_invalid,
        h.stats().datagrams_in - (ep.stats().packets_received - received)
    );
    assert!(h.stats().dropped_wrong_session > 0);
    eprintln!("{received} garbage datagrams dropped during a 2 MiB transfer");
}
