//! The port-mapping thread (`net::portmap`, as `host` runs it) against hostile and broken
//! routers on loopback: an endless SOAP body, one that trickles, an XML bomb and a
//! description nested a million deep, a wrong outside address, a control URL on another
//! machine, a flood of SSDP answers. Each ends in a failure that names it, within the
//! bounds of size and time, and the thread ends when closed.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use framelock::net::portmap::{PortMap, Status};
use framelock::portmap::{Failure, MapConfig, MapEvent, Protocol};

/// How a fake router answers each HTTP request (the request's text in, bytes out, with a
/// pause between chunks).
type Answer = Arc<dyn Fn(&str) -> (Vec<Vec<u8>>, Duration) + Send + Sync>;

/// A fake UPnP router on 127.0.0.1: an SSDP responder and an HTTP server; stops on drop.
struct FakeRouter {
    ssdp: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl FakeRouter {
    fn new(answer: Answer, ssdp_answers: usize) -> FakeRouter {
        let stop = Arc::new(AtomicBool::new(false));
        let http = TcpListener::bind("127.0.0.1:0").unwrap();
        let http_at = http.local_addr().unwrap();
        http.set_nonblocking(true).unwrap();
        let flag = stop.clone();
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let Ok((mut conn, _)) = http.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let (answer, flag) = (answer.clone(), flag.clone());
                std::thread::spawn(move || {
                    conn.set_nonblocking(false).unwrap();
                    conn.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                    let mut req = vec![0u8; 8192];
                    let n = conn.read(&mut req).unwrap_or(0);
                    let text = String::from_utf8_lossy(&req[..n]).into_owned();
                    let (chunks, pause) = answer(&text);
                    for c in chunks {
                        if flag.load(Ordering::Relaxed) || conn.write_all(&c).is_err() {
                            return;
                        }
                        std::thread::sleep(pause);
                    }
                });
            }
        });
        let ssdp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let ssdp_at = ssdp.local_addr().unwrap();
        ssdp.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let flag = stop.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while !flag.load(Ordering::Relaxed) {
                let Ok((_, from)) = ssdp.recv_from(&mut buf) else {
                    continue;
                };
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nST: urn:schemas-upnp-org:device:InternetGatewayDevice:1\r\n\
                     LOCATION: http://{http_at}/rootDesc.xml\r\n\r\n"
                );
                for _ in 0..ssdp_answers {
                    let _ = ssdp.send_to(answer.as_bytes(), from);
                }
            }
        });
        FakeRouter {
            ssdp: ssdp_at,
            stop,
        }
    }

    /// The mapping thread pointed at this router, UPnP only.
    fn map(&self) -> PortMap {
        let internal = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7845);
        let mut cfg = MapConfig::new(internal, None, [1; 12]);
        cfg.protocols = vec![Protocol::Upnp];
        cfg.ssdp = self.ssdp;
        PortMap::start_with(cfg)
    }
}

impl Drop for FakeRouter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

const DESCRIPTION: &str = "<?xml version=\"1.0\"?><root><device><serviceList><service><serviceType>urn:schemas-upnp-org:service:WANIPConnection:1</serviceType><controlURL>/ctl/IPConn</controlURL></service></serviceList></device></root>";

fn ok(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn soap(action: &str, args: &str) -> Vec<u8> {
    ok(&format!(
        "<s:Envelope><s:Body><u:{action}Response>{args}</u:{action}Response></s:Body></s:Envelope>"
    ))
}

/// A router that answers like a good one, except where `bad` says otherwise.
fn router(
    bad: impl Fn(&str) -> Option<(Vec<Vec<u8>>, Duration)> + Send + Sync + 'static,
) -> FakeRouter {
    let answer: Answer = Arc::new(move |req: &str| {
        if let Some(a) = bad(req) {
            return a;
        }
        let now = Duration::ZERO;
        if req.starts_with("GET ") {
            (vec![ok(DESCRIPTION)], now)
        } else if req.contains("#GetExternalIPAddress") {
            let ip = "<NewExternalIPAddress>203.0.113.7</NewExternalIPAddress>";
            (vec![soap("GetExternalIPAddress", ip)], now)
        } else if req.contains("#AddPortMapping") {
            (vec![soap("AddPortMapping", "")], now)
        } else {
            (vec![soap("DeletePortMapping", "")], now)
        }
    });
    FakeRouter::new(answer, 1)
}

/// Waits for the mapping's first `Mapped` or `Failed`, at most `within`; returns it and
/// how long it took.
fn outcome(map: &PortMap, within: Duration) -> (MapEvent, Duration) {
    let start = Instant::now();
    while start.elapsed() < within {
        while let Some(ev) = map.poll_event() {
            if matches!(ev, MapEvent::Mapped(_) | MapEvent::Failed(_)) {
                return (ev, start.elapsed());
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("nothing within {within:?}: {:?}", map.report());
}

/// The mapping fails, saying `why`, within `within`; then closes promptly.
fn fails_with(r: &FakeRouter, why: &str, within: Duration) {
    let mut map = r.map();
    let (ev, took) = outcome(&map, within);
    match &ev {
        MapEvent::Failed(f) => assert!(f.to_string().contains(why), "{f} (wanted {why})"),
        other => panic!("{other:?} (wanted a failure: {why})"),
    }
    assert!(took < within, "{took:?}");
    let start = Instant::now();
    map.close();
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_good_router_maps_and_the_mapping_is_removed_when_closed() {
    let r = router(|_| None);
    let mut map = r.map();
    let (ev, took) = outcome(&map, Duration::from_secs(5));
    let MapEvent::Mapped(m) = ev else {
        panic!("{ev:?}")
    };
    assert_eq!(m.to_string(), "UPnP 203.0.113.7:7845 (lease 1 h)");
    assert!(took < Duration::from_secs(1), "{took:?}");
    map.close();
    assert_eq!(map.report().status, Status::Removed);
    assert_eq!(
        map.poll_event(),
        Some(MapEvent::Removed { confirmed: true })
    );
}

#[test]
fn an_endless_soap_body_is_cut_at_its_limit() {
    let r = router(|req| {
        req.contains("#GetExternalIPAddress").then(|| {
            let head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n".to_vec();
            let mut chunks = vec![head];
            chunks.extend(std::iter::repeat_n(vec![b'x'; 64 * 1024], 10_000));
            (chunks, Duration::ZERO)
        })
    });
    fails_with(&r, "over the size limit", Duration::from_secs(5));
    // Without a length, to the end of a connection that never ends.
    let r = router(|req| {
        req.contains("#GetExternalIPAddress").then(|| {
            let mut chunks = vec![b"HTTP/1.1 200 OK\r\n\r\n<s:Envelope>".to_vec()];
            chunks.extend(std::iter::repeat_n(vec![b'x'; 64 * 1024], 10_000));
            (chunks, Duration::ZERO)
        })
    });
    fails_with(&r, "over the size limit", Duration::from_secs(5));
}

#[test]
fn an_answer_that_trickles_is_given_up_at_its_time_limit() {
    let r = router(|req| {
        req.contains("#GetExternalIPAddress").then(|| {
            let chunks = b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n"
                .iter()
                .map(|b| vec![*b])
                .collect();
            (chunks, Duration::from_millis(200))
        })
    });
    fails_with(&r, "no whole answer within 2 s", Duration::from_secs(6));
}

#[test]
fn xml_bombs_in_the_description_are_errors_not_crashes() {
    let bomb = "<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"aaaaaaaaaaaaaaaaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]><root><device><serviceList><service><serviceType>&c;</serviceType></service></serviceList></device></root>";
    let r = router(move |req| {
        req.starts_with("GET ")
            .then(|| (vec![ok(bomb)], Duration::ZERO))
    });
    fails_with(
        &r,
        "its description: unreadable XML",
        Duration::from_secs(5),
    );
    // Nested deep within the size limit, and nested a million deep past it.
    let deep = "<a>".repeat(8_000) + &"</a>".repeat(8_000);
    let r = router(move |req| {
        req.starts_with("GET ")
            .then(|| (vec![ok(&deep)], Duration::ZERO))
    });
    fails_with(&r, "nested over 32 deep", Duration::from_secs(5));
    let huge = "<a>".repeat(1_000_000) + &"</a>".repeat(1_000_000);
    let r = router(move |req| {
        req.starts_with("GET ")
            .then(|| (vec![ok(&huge)], Duration::ZERO))
    });
    fails_with(&r, "over the size limit", Duration::from_secs(5));
}

#[test]
fn a_wrong_outside_address_or_a_control_url_elsewhere_is_not_used() {
    for (ip, why) in [
        ("0.0.0.0", "nobody can reach: 0.0.0.0"),
        ("127.0.0.1", "nobody can reach: 127.0.0.1"),
        ("239.1.2.3", "nobody can reach: 239.1.2.3"),
        ("300.1.2.3", "no outside address in its answer"),
    ] {
        let r = router(move |req| {
            req.contains("#GetExternalIPAddress").then(|| {
                let args = format!("<NewExternalIPAddress>{ip}</NewExternalIPAddress>");
                (vec![soap("GetExternalIPAddress", &args)], Duration::ZERO)
            })
        });
        fails_with(&r, why, Duration::from_secs(5));
    }
    // Its actions would go to another machine: never.
    let elsewhere = DESCRIPTION.replace("/ctl/IPConn", "http://192.0.2.1:80/ctl");
    let r = router(move |req| {
        req.starts_with("GET ")
            .then(|| (vec![ok(&elsewhere)], Duration::ZERO))
    });
    fails_with(
        &r,
        "its control URL is on another machine",
        Duration::from_secs(5),
    );
}

#[test]
fn a_flood_of_ssdp_answers_is_read_once() {
    let answer: Answer = Arc::new(|req: &str| {
        if req.starts_with("GET ") {
            (vec![ok(DESCRIPTION)], Duration::ZERO)
        } else if req.contains("#GetExternalIPAddress") {
            let ip = "<NewExternalIPAddress>203.0.113.7</NewExternalIPAddress>";
            (vec![soap("GetExternalIPAddress", ip)], Duration::ZERO)
        } else {
            (vec![soap("AddPortMapping", "")], Duration::ZERO)
        }
    });
    let r = FakeRouter::new(answer, 5000);
    let mut map = r.map();
    let (ev, _) = outcome(&map, Duration::from_secs(5));
    assert!(matches!(ev, MapEvent::Mapped(_)), "{ev:?}");
    // One description fetched, whatever the flood.
    assert!(map.report().stats.requests < 12, "{:?}", map.report().stats);
    map.close();
}

#[test]
fn no_router_at_all_is_said_within_two_seconds() {
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let internal = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 7845);
    let mut cfg = MapConfig::new(internal, Some(Ipv4Addr::LOCALHOST), [1; 12]);
    cfg.ssdp = silent.local_addr().unwrap();
    cfg.gateway = Some(silent.local_addr().unwrap());
    let map = PortMap::start_with(cfg);
    let (ev, took) = outcome(&map, Duration::from_secs(4));
    assert_eq!(
        ev,
        MapEvent::Failed(Failure::NoRouter {
            tried: vec![Protocol::Pcp, Protocol::NatPmp, Protocol::Upnp]
        })
    );
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_millis(2600),
        "{took:?}"
    );
}
