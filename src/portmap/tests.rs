//! The mapping machine against scripted routers, on simulated time: which protocol wins,
//! what a refusal or a silence says, renewals over hours, and the removal at the end.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use super::*;

const ME: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 20);
const GW: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 1);
const OUTSIDE: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 7);
const HTTP: SocketAddrV4 = SocketAddrV4::new(GW, 5000);

/// A home router as a script: which protocols it answers, and how.
#[derive(Clone)]
struct Router {
    pcp: Option<u8>,
    natpmp: bool,
    upnp: bool,
    /// UPnP's outside address as it says it.
    upnp_ip: String,
    /// External ports already taken by someone else.
    taken: Vec<u16>,
    /// UPnP's refusal of every AddPortMapping (code, words).
    upnp_refuses: Option<(u16, &'static str)>,
    /// It stops answering from this time on.
    dies_at: Option<Instant>,
    /// What it received, for the checks.
    log: Vec<String>,
    /// Mappings it holds: external port -> expiry (seconds of lease).
    held: Vec<(u16, u32)>,
}

impl Router {
    fn new() -> Router {
        Router {
            pcp: None,
            natpmp: false,
            upnp: false,
            upnp_ip: OUTSIDE.to_string(),
            taken: Vec::new(),
            upnp_refuses: None,
            dies_at: None,
            log: Vec::new(),
            held: Vec::new(),
        }
    }

    fn free_port(&self, want: u16) -> u16 {
        (want..).find(|p| !self.taken.contains(p)).unwrap()
    }

    fn udp(&mut self, to: SocketAddr, bytes: &[u8]) -> Option<(SocketAddr, Vec<u8>)> {
        let gw = SocketAddr::from((GW, GATEWAY_PORT));
        if to == upnp::SSDP.into() {
            self.log.push("ssdp".into());
            let answer =
                format!("HTTP/1.1 200 OK\r\nST: x\r\nLOCATION: http://{HTTP}/rootDesc.xml\r\n\r\n");
            return self
                .upnp
                .then(|| (SocketAddr::from((GW, 1900)), answer.into_bytes()));
        }
        assert_eq!(to, gw);
        if bytes[0] == pcp::VERSION {
            self.log.push(format!(
                "pcp lifetime {}",
                u32::from_be_bytes(bytes[4..8].try_into().unwrap())
            ));
            let code = match (self.pcp, self.natpmp) {
                (Some(code), _) => code,
                (None, true) => return Some((gw, vec![0, 129, 0, 1, 0, 0, 0, 1])),
                (None, false) => return None,
            };
            let lifetime = u32::from_be_bytes(bytes[4..8].try_into().unwrap());
            let want = u16::from_be_bytes([bytes[42], bytes[43]]);
            // PREFER_FAILURE: that port, or CANNOT_PROVIDE_EXTERNAL.
            let prefer_failure = bytes.len() > pcp::MAP_LEN;
            let code = if prefer_failure && self.taken.contains(&want) && code == 0 {
                pcp::CANNOT_PROVIDE_EXTERNAL
            } else {
                code
            };
            let port = self.free_port(want);
            let mut a = bytes.to_vec();
            a[1] = 0x80 | pcp::OP_MAP;
            a[3] = code;
            a[8..12].copy_from_slice(&1u32.to_be_bytes());
            a[12..24].fill(0);
            a[42..44].copy_from_slice(&port.to_be_bytes());
            a[44..60].copy_from_slice(&OUTSIDE.to_ipv6_mapped().octets());
            self.hold(port, lifetime);
            return Some((gw, a));
        }
        if !self.natpmp {
            return None;
        }
        if bytes[..2] == [0, 0] {
            self.log.push("natpmp address".into());
            let mut a = vec![0, 128, 0, 0, 0, 0, 0, 1];
            a.extend_from_slice(&OUTSIDE.octets());
            return Some((gw, a));
        }
        let lifetime = u32::from_be_bytes(bytes[8..12].try_into().unwrap());
        self.log.push(format!("natpmp map lifetime {lifetime}"));
        let port = self.free_port(u16::from_be_bytes([bytes[6], bytes[7]]).max(1));
        let mut a = vec![0, 129, 0, 0, 0, 0, 0, 1];
        a.extend_from_slice(&bytes[4..6]);
        a.extend_from_slice(&port.to_be_bytes());
        a.extend_from_slice(&lifetime.to_be_bytes());
        Some((gw, a))
    }

    fn hold(&mut self, port: u16, lifetime: u32) {
        self.held.retain(|(p, _)| *p != port);
        if lifetime > 0 {
            self.held.push((port, lifetime));
        }
    }

    fn http(&mut self, bytes: &[u8]) -> Vec<u8> {
        let req = String::from_utf8_lossy(bytes).into_owned();
        let ok = |body: String| {
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .into_bytes()
        };
        if req.starts_with("GET ") {
            self.log.push("describe".into());
            return ok(DESCRIPTION.into());
        }
        let action = req
            .split('#')
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string();
        self.log.push(action.clone());
        let arg = |name: &str| -> String {
            let open = format!("<{name}>");
            let from = req.find(&open).unwrap() + open.len();
            req[from..from + req[from..].find('<').unwrap()].to_string()
        };
        let fault = |code: u16, words: &str| {
            let body = format!("<s:Envelope><s:Body><s:Fault><detail><UPnPError><errorCode>{code}</errorCode><errorDescription>{words}</errorDescription></UPnPError></detail></s:Fault></s:Body></s:Envelope>");
            format!(
                "HTTP/1.1 500 Internal Server Error\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .into_bytes()
        };
        let answer = |args: &str| {
            ok(format!("<s:Envelope><s:Body><u:{action}Response>{args}</u:{action}Response></s:Body></s:Envelope>"))
        };
        match action.as_str() {
            "GetExternalIPAddress" => answer(&format!(
                "<NewExternalIPAddress>{}</NewExternalIPAddress>",
                self.upnp_ip
            )),
            "AddPortMapping" | "AddAnyPortMapping" => {
                if let Some((code, words)) = self.upnp_refuses {
                    return fault(code, words);
                }
                let port: u16 = arg("NewExternalPort").parse().unwrap();
                let lease: u32 = arg("NewLeaseDuration").parse().unwrap();
                if action == "AddAnyPortMapping" {
                    let p = self.free_port(port);
                    self.hold(p, lease);
                    return answer(&format!("<NewReservedPort>{p}</NewReservedPort>"));
                }
                if self.taken.contains(&port) {
                    return fault(718, "ConflictInMappingEntry");
                }
                self.hold(port, lease);
                answer("")
            }
            "DeletePortMapping" => {
                let port: u16 = arg("NewExternalPort").parse().unwrap();
                self.hold(port, 0);
                answer("")
            }
            other => panic!("{other}"),
        }
    }
}

const DESCRIPTION: &str = "<root><device><deviceList><device><serviceList><service><serviceType>urn:schemas-upnp-org:service:WANIPConnection:2</serviceType><controlURL>/ctl/IPConn</controlURL></service></serviceList></device></deviceList></device></root>";

fn cfg() -> MapConfig {
    MapConfig::new(SocketAddrV4::new(ME, 7845), Some(GW), [9; 12])
}

/// Runs `m` against `r` until `until`, answering what it asks at once; returns its events.
fn run(m: &mut Mapper, r: &mut Router, now: &mut Instant, until: Instant) -> Vec<MapEvent> {
    let mut events = Vec::new();
    loop {
        while let Some(req) = m.poll_request() {
            let alive = r.dies_at.is_none_or(|t| *now < t);
            match req {
                Request::Udp { to, bytes } => {
                    if let Some((from, a)) = r.udp(to, &bytes).filter(|_| alive) {
                        m.handle_udp(*now, from, &a);
                    }
                }
                Request::Http { id, to, bytes, .. } => {
                    assert_eq!(to, HTTP);
                    let a = if alive {
                        Ok(r.http(&bytes))
                    } else {
                        Err("timed out".into())
                    };
                    m.handle_http(*now, id, a);
                }
            }
        }
        events.extend(std::iter::from_fn(|| m.poll_event()));
        match m.poll_timeout() {
            Some(t) if t <= until => {
                *now = t.max(*now);
                m.handle_timeout(*now);
            }
            _ => break,
        }
    }
    *now = until.max(*now);
    events
}

fn mapped(events: &[MapEvent]) -> Mapping {
    match events.iter().find_map(|e| match e {
        MapEvent::Mapped(m) => Some(*m),
        _ => None,
    }) {
        Some(m) => m,
        None => panic!("no mapping: {events:?}"),
    }
}

#[test]
fn a_pcp_router_maps_at_once_renews_at_half_the_lease_and_the_mapping_is_removed() {
    let t0 = Instant::now();
    let mut now = t0;
    let mut r = Router::new();
    (r.pcp, r.natpmp, r.upnp) = (Some(0), true, true);
    let mut m = Mapper::new(now, cfg());
    let ev = run(&mut m, &mut r, &mut now, t0 + Duration::from_secs(5));
    let got = mapped(&ev);
    assert_eq!(got.protocol, Protocol::Pcp);
    assert_eq!(got.external, SocketAddrV4::new(OUTSIDE, 7845));
    assert_eq!(got.to_string(), "PCP 203.0.113.7:7845 (lease 1 h)");
    // Nothing but PCP made a mapping; the NAT-PMP and SSDP probes map nothing.
    assert!(
        !r.log
            .iter()
            .any(|l| l.starts_with("natpmp map") || l.contains("PortMapping")),
        "{:?}",
        r.log
    );
    // Six hours: a renewal every half hour, nothing else.
    r.log.clear();
    let ev = run(
        &mut m,
        &mut r,
        &mut now,
        t0 + Duration::from_secs(6 * 3600 + 5),
    );
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, MapEvent::Renewed(_)))
            .count(),
        12,
        "{ev:?}"
    );
    assert_eq!(r.log.len(), 12, "{:?}", r.log);
    let per_hour = m.stats().bytes_sent as f64 / 6.0;
    assert!(per_hour < 400.0, "{per_hour} bytes an hour");
    m.close(now);
    let end = now + Duration::from_secs(2);
    let ev = run(&mut m, &mut r, &mut now, end);
    assert_eq!(ev, vec![MapEvent::Removed { confirmed: true }]);
    assert!(m.is_closed());
    assert_eq!(r.log.last().unwrap(), "pcp lifetime 0");
    assert!(r.held.is_empty());
}

#[test]
fn a_nat_pmp_router_maps_after_pcp_is_answered_as_unsupported() {
    let t0 = Instant::now();
    let mut now = t0;
    let mut r = Router::new();
    r.natpmp = true;
    r.taken = vec![7845];
    let mut m = Mapper::new(now, cfg());
    let ev = run(&mut m, &mut r, &mut now, t0 + Duration::from_secs(3));
    let got = mapped(&ev);
    assert_eq!(got.protocol, Protocol::NatPmp);
    // Someone had 7845: the router gave another port.
    assert_eq!(got.external, SocketAddrV4::new(OUTSIDE, 7846));
    m.close(now);
    let end = now + Duration::from_secs(2);
    let ev = run(&mut m, &mut r, &mut now, end);
    assert_eq!(ev, vec![MapEvent::Removed { confirmed: true }]);
    assert_eq!(r.log.last().unwrap(), "natpmp map lifetime 0");
}

#[test]
fn a_upnp_router_maps_once_pcp_and_nat_pmp_stay_silent_and_a_taken_port_gets_another() {
    let t0 = Instant::now();
    let mut now = t0;
    let mut r = Router::new();
    r.upnp = true;
    r.taken = vec![7845];
    let mut m = Mapper::new(now, cfg());
    let ev = run(&mut m, &mut r, &mut now, t0 + Duration::from_secs(3));
    let got = mapped(&ev);
    assert_eq!(got.protocol, Protocol::Upnp);
    assert_eq!(got.external, SocketAddrV4::new(OUTSIDE, 7846));
    let asked: Vec<&str> = r
        .log
        .iter()
        .map(String::as_str)
        .filter(|l| !l.starts_with("ssdp") && !l.starts_with("pcp"))
        .collect();
    assert_eq!(
        asked,
        [
            "describe",
            "GetExternalIPAddress",
            "AddPortMapping",
            "AddAnyPortMapping"
        ]
    );
    m.close(now);
    let end = now + Duration::from_secs(2);
    let ev = run(&mut m, &mut r, &mut now, end);
    assert_eq!(ev, vec![MapEvent::Removed { confirmed: true }]);
    assert!(r.held.is_empty(), "{:?}", r.held);
}

#[test]
fn silence_refusals_and_wrong_addresses_say_why_there_is_no_mapping() {
    let t0 = Instant::now();
    let words = |r: Router, cfg: MapConfig| {
        let (mut now, mut r) = (t0, r);
        let mut m = Mapper::new(now, cfg);
        let ev = run(&mut m, &mut r, &mut now, t0 + Duration::from_secs(10));
        match &ev[..] {
            [MapEvent::Failed(f)] => (f.to_string(), now),
            other => panic!("{other:?}"),
        }
    };
    // Nobody home: said within 2 s.
    let (said, _) = words(Router::new(), cfg());
    assert_eq!(said, "no UPnP/NAT-PMP/PCP router answered in 2 s");
    let mut upnp_only = cfg();
    upnp_only.protocols = vec![Protocol::Upnp];
    assert_eq!(
        words(Router::new(), upnp_only).0,
        "no UPnP router answered in 2 s"
    );
    // A router whose rules deny the mapping, in each protocol's words.
    let mut r = Router::new();
    r.pcp = Some(2);
    assert_eq!(
        words(r, cfg()).0,
        "the router refused: NOT_AUTHORIZED (PCP)"
    );
    let mut r = Router::new();
    (r.upnp, r.upnp_refuses) = (true, Some((606, "Action not authorized")));
    assert_eq!(
        words(r, cfg()).0,
        "the router refused: Action not authorized (UPnP)"
    );
    // Every port taken.
    let mut r = Router::new();
    r.upnp = true;
    r.upnp_refuses = Some((718, "ConflictInMappingEntry"));
    assert_eq!(
        words(r, cfg()).0,
        "the router refused: ConflictInMappingEntry (UPnP)"
    );
    // An outside address nobody can reach, or none at all.
    for (ip, said) in [
        (
            "0.0.0.0",
            "the router named an outside address nobody can reach: 0.0.0.0 (UPnP)",
        ),
        (
            "192.168.1.20",
            "the router named an outside address nobody can reach: 192.168.1.20 (UPnP)",
        ),
        (
            "not an address",
            "the router's UPnP answers made no sense: no outside address in its answer",
        ),
    ] {
        let mut r = Router::new();
        (r.upnp, r.upnp_ip) = (true, ip.into());
        assert_eq!(words(r, cfg()).0, said);
    }
}

#[test]
fn a_router_that_stops_renewing_loses_the_mapping_at_the_end_of_its_lease_and_it_is_found_again() {
    let t0 = Instant::now();
    let mut now = t0;
    let mut r = Router::new();
    r.pcp = Some(0);
    let mut m = Mapper::new(now, cfg());
    mapped(&run(&mut m, &mut r, &mut now, t0 + Duration::from_secs(1)));
    // Silent from 10 min on: the renewal at 30 min fails, and so do the retries.
    r.dies_at = Some(t0 + Duration::from_secs(600));
    let ev = run(&mut m, &mut r, &mut now, t0 + Duration::from_secs(3599));
    assert!(ev.is_empty(), "{ev:?}");
    assert!(m.mapping().is_some());
    let ev = run(&mut m, &mut r, &mut now, t0 + Duration::from_secs(3605));
    assert_eq!(
        ev[0],
        MapEvent::Lost {
            why: "the router stopped answering".into()
        }
    );
    assert!(
        matches!(ev[1], MapEvent::Failed(Failure::NoRouter { .. })),
        "{ev:?}"
    );
}

#[test]
fn a_late_pcp_grant_after_nat_pmp_won_is_removed() {
    let t0 = Instant::now();
    let mut m = Mapper::new(t0, cfg());
    let gw = SocketAddr::from((GW, GATEWAY_PORT));
    let reqs: Vec<Request> = std::iter::from_fn(|| m.poll_request()).collect();
    let Request::Udp { bytes: pcp_req, .. } = &reqs[0] else {
        panic!("{reqs:?}")
    };
    // PCP silent for its second; NAT-PMP answers and maps.
    let later = t0 + UDP_WAIT;
    m.handle_udp(later, gw, &[0, 128, 0, 0, 0, 0, 0, 1, 203, 0, 113, 7]);
    m.handle_timeout(later);
    while m.poll_request().is_some() {}
    m.handle_udp(
        later,
        gw,
        &[
            0, 129, 0, 0, 0, 0, 0, 1, 0x1e, 0xa5, 0x1e, 0xa5, 0, 0, 0x0e, 0x10,
        ],
    );
    assert_eq!(
        mapped(&std::iter::from_fn(|| m.poll_event()).collect::<Vec<_>>()).protocol,
        Protocol::NatPmp
    );
    // Then the PCP grant shows up: it is deleted, not used.
    let mut a = pcp_req.clone();
    a[1] = 0x81;
    a[44..60].copy_from_slice(&OUTSIDE.to_ipv6_mapped().octets());
    m.handle_udp(later, gw, &a);
    match m.poll_request() {
        Some(Request::Udp { bytes, .. }) => assert_eq!(&bytes[4..8], &[0, 0, 0, 0]),
        other => panic!("{other:?}"),
    }
    assert_eq!(m.mapping().unwrap().protocol, Protocol::NatPmp);
}

#[test]
fn pcp_asks_for_the_next_port_when_the_router_cannot_give_the_one_wished() {
    let t0 = Instant::now();
    let mut now = t0;
    let mut r = Router::new();
    r.pcp = Some(0);
    r.taken = vec![7845, 7846];
    let mut m = Mapper::new(now, cfg());
    let got = mapped(&run(&mut m, &mut r, &mut now, t0 + Duration::from_secs(2)));
    assert_eq!(got.external, SocketAddrV4::new(OUTSIDE, 7847));
    assert_eq!(
        r.log.iter().filter(|l| l.starts_with("pcp")).count(),
        3,
        "{:?}",
        r.log
    );
    // Every port taken: after a few, it says so, and never asks NAT-PMP, whose answer
    // would be the same.
    let mut r = Router::new();
    (r.pcp, r.natpmp) = (Some(0), true);
    r.taken = (7845..7900).collect();
    let mut now = t0;
    let mut m = Mapper::new(now, cfg());
    let ev = run(&mut m, &mut r, &mut now, t0 + Duration::from_secs(5));
    assert_eq!(
        ev,
        vec![MapEvent::Failed(Failure::Refused {
            protocol: Protocol::Pcp,
            reason: "CANNOT_PROVIDE_EXTERNAL (PCP)".into()
        })]
    );
    assert!(
        !r.log.iter().any(|l| l.starts_with("natpmp map")),
        "{:?}",
        r.log
    );
}

#[test]
fn after_a_failure_the_router_is_asked_again_later_and_a_router_that_woke_up_maps() {
    let t0 = Instant::now();
    let mut now = t0;
    // Nothing answers at first (UPnP off, the router rebooting).
    let mut r = Router::new();
    let mut m = Mapper::new(now, cfg());
    let ev = run(&mut m, &mut r, &mut now, t0 + Duration::from_secs(10));
    assert!(
        matches!(ev[..], [MapEvent::Failed(Failure::NoRouter { .. })]),
        "{ev:?}"
    );
    assert!(m.poll_timeout().is_some(), "it asks again later");
    // The same failure at each try is not told again; the tries space out.
    let asked = r.log.len();
    let ev = run(&mut m, &mut r, &mut now, t0 + Duration::from_secs(20 * 60));
    assert!(ev.is_empty(), "{ev:?}");
    let tries = r.log.len() - asked;
    assert!(tries > 0, "no try in 20 min");
    // Tries at about 2, 6 and 14 min: three rounds of requests, not one a minute.
    let per_round = asked;
    assert!(
        tries <= 3 * per_round,
        "{tries} requests in 20 min ({per_round} a round)"
    );
    // The router comes up: the next try maps, within the longest wait.
    r.pcp = Some(0);
    let woke = now;
    let ev = run(
        &mut m,
        &mut r,
        &mut now,
        woke + ASK_AGAIN_MAX + Duration::from_secs(10),
    );
    let mapping = mapped(&ev);
    assert_eq!(mapping.protocol, Protocol::Pcp);
    assert!(m.mapping().is_some());
}
