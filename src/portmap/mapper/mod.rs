//! [`Mapper`]: the port-mapping machine (see the module docs of `portmap`); `http` holds
//! what it does with the router's HTTP answers (UPnP).

mod http_answers;

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use super::upnp::{self, HttpUrl, Igd, Soap};
use super::{
    http, natpmp, pcp, usable_outside, Failure, MapConfig, MapEvent, Mapping, Protocol, Request,
    ANSWER_WITHIN, HTTP_TIMEOUT, MAX_DESCRIPTION, MAX_SOAP, UDP_WAIT,
};

/// The first resend of a UDP request, then twice as long each time (RFC 6886's 250 ms).
const FIRST_RESEND: Duration = Duration::from_millis(250);
/// How long one renewal gets before it counts as failed.
const RENEW_WAIT: Duration = Duration::from_secs(4);
/// Longest wait before a failed renewal is tried again.
const RENEW_RETRY: Duration = Duration::from_secs(30);
/// After a failure the routers are asked again this long later, then twice as long each
/// time up to [`ASK_AGAIN_MAX`]: a router rebooting, or UPnP switched on mid-session, is
/// found without a restart.
pub const ASK_AGAIN: Duration = Duration::from_secs(120);
/// The longest wait between two tries after failures.
pub const ASK_AGAIN_MAX: Duration = Duration::from_secs(1800);
/// How long a removal gets for its answer when the session ends.
pub const CLOSE_WAIT: Duration = Duration::from_secs(1);
/// External ports tried by UPnP's AddPortMapping when the wished one is taken.
const UPNP_TRIES: u16 = 8;
/// Ports PCP asks for with PREFER_FAILURE before it gives up (see `pcp`).
const PCP_TRIES: u16 = UPNP_TRIES;
/// SSDP answers looked at, at most (a flood of them is ignored).
const MAX_SSDP_ANSWERS: u32 = 16;
/// IP and UDP header bytes per datagram, counted in [`Stats`].
const UDP_OVERHEAD: u64 = 28;
/// IP and TCP header bytes one HTTP exchange costs each way (five segments of 40 bytes:
/// handshake, data, acks and close), counted in [`Stats`].
const TCP_OVERHEAD: u64 = 200;

/// What the mapping cost, headers included (a TCP exchange counted as five segments of
/// 40 bytes each way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes sent to the router.
    pub bytes_sent: u64,
    /// Bytes of the router's answers handed in.
    pub bytes_received: u64,
    /// Requests sent (resends included).
    pub requests: u64,
}

/// A UDP request with its resends.
#[derive(Debug)]
struct Ask {
    to: SocketAddr,
    datagrams: Vec<Vec<u8>>,
    next: Instant,
    gap: Duration,
    until: Instant,
}

impl Ask {
    fn new(now: Instant, to: SocketAddr, datagrams: Vec<Vec<u8>>, within: Duration) -> Ask {
        Ask {
            to,
            datagrams,
            next: now,
            gap: FIRST_RESEND,
            until: now + within,
        }
    }

    /// Sends what is due; true once its time is up.
    fn run(&mut self, now: Instant, out: &mut VecDeque<Request>) -> bool {
        if now >= self.until {
            return true;
        }
        if now >= self.next {
            for bytes in &self.datagrams {
                out.push_back(Request::Udp {
                    to: self.to,
                    bytes: bytes.clone(),
                });
            }
            self.next = now + self.gap;
            self.gap *= 2;
        }
        false
    }

    fn timeout(&self) -> Instant {
        self.next.min(self.until)
    }
}

/// How a protocol ended without a mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Out {
    Silent,
    Refused(String),
    Broken(String),
    Unusable(Ipv4Addr),
}

#[derive(Debug)]
enum PcpLeg {
    Off,
    /// A MAP of `port` in flight (try `n`), with PREFER_FAILURE or not.
    Asking {
        ask: Ask,
        port: u16,
        n: u16,
        prefer_failure: bool,
    },
    Granted(SocketAddrV4, u32),
    Out(Out),
}

#[derive(Debug)]
enum PmpLeg {
    Off,
    Address(Ask),
    /// The outside address is known; the mapping waits for PCP to be out.
    Known(Ipv4Addr),
    Mapping(Ipv4Addr, Ask),
    Granted(SocketAddrV4, u32),
    Out(Out),
}

/// What an HTTP exchange in flight is for.
#[derive(Clone, Debug)]
enum Step {
    Describe(HttpUrl),
    ExternalIp,
    /// AddPortMapping (`any`: AddAnyPortMapping) of `port` for `lease` seconds, try `n`.
    Add {
        ip: Ipv4Addr,
        port: u16,
        any: bool,
        lease: u32,
        n: u16,
    },
}

#[derive(Debug)]
enum UpnpLeg {
    Off,
    Searching {
        ask: Ask,
        answers: u32,
    },
    /// The device answered; waits for PCP and NAT-PMP to be out (or for an HTTP answer).
    Ready(Igd),
    Busy(Option<Igd>, u32, Step),
    Granted(Igd, SocketAddrV4, u32),
    Out(Out),
}

/// A renewal or removal in flight.
#[derive(Debug)]
enum Pending {
    Udp(Protocol, Ask),
    Http(u32),
}

#[derive(Debug)]
struct Held {
    mapping: Mapping,
    /// UPnP's service, for renewals and the removal.
    igd: Option<Igd>,
    expires: Option<Instant>,
    renew_at: Option<Instant>,
    renewing: Option<Pending>,
    /// The last renewal's failure, for `Lost`.
    why: String,
}

#[derive(Debug)]
enum Phase {
    Discovering,
    Mapped(Box<Held>),
    /// Every protocol failed; discovery starts again at `again_at`.
    Failed {
        again_at: Instant,
    },
    Closing {
        until: Instant,
        pending: Vec<Pending>,
    },
    Closed,
}

/// The port-mapping machine. Calling order: [`handle_timeout`](Self::handle_timeout) when
/// [`poll_timeout`](Self::poll_timeout) is reached (and once at the start), feed what came
/// back ([`handle_udp`](Self::handle_udp), [`handle_http`](Self::handle_http)), drain
/// [`poll_request`](Self::poll_request) and [`poll_event`](Self::poll_event);
/// [`close`](Self::close) when the session ends, then run it until
/// [`is_closed`](Self::is_closed).
#[derive(Debug)]
pub struct Mapper {
    cfg: MapConfig,
    phase: Phase,
    pcp: PcpLeg,
    pmp: PmpLeg,
    upnp: UpnpLeg,
    next_id: u32,
    out: VecDeque<Request>,
    events: VecDeque<MapEvent>,
    stats: Stats,
    /// Failures in a row, and the last one's words: the same failure again is not told
    /// again.
    failures: u32,
    last_failure: Option<String>,
}

impl Mapper {
    /// A machine that starts asking at `now`.
    pub fn new(now: Instant, cfg: MapConfig) -> Mapper {
        let mut m = Mapper {
            cfg,
            phase: Phase::Failed { again_at: now },
            pcp: PcpLeg::Off,
            pmp: PmpLeg::Off,
            upnp: UpnpLeg::Off,
            next_id: 0,
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
            failures: 0,
            last_failure: None,
        };
        m.discover(now);
        m
    }

    fn wants(&self, p: Protocol) -> bool {
        self.cfg.protocols.contains(&p)
    }

    /// Starts (or starts again) asking every protocol.
    fn discover(&mut self, now: Instant) {
        self.phase = Phase::Discovering;
        let gw = self.cfg.gateway;
        self.pcp = match gw.filter(|_| self.wants(Protocol::Pcp)) {
            Some(gw) => self.pcp_ask(now, gw, self.cfg.internal.port(), 1, true),
            None => PcpLeg::Off,
        };
        self.pmp = match gw.filter(|_| self.wants(Protocol::NatPmp)) {
            Some(gw) => {
                PmpLeg::Address(Ask::new(now, gw, vec![natpmp::address_request()], UDP_WAIT))
            }
            None => PmpLeg::Off,
        };
        self.upnp = if self.wants(Protocol::Upnp) {
            let searches = upnp::SEARCH_TARGETS
                .iter()
                .map(|t| upnp::search(t))
                .collect();
            UpnpLeg::Searching {
                ask: Ask::new(now, self.cfg.ssdp, searches, ANSWER_WITHIN),
                answers: 0,
            }
        } else {
            UpnpLeg::Off
        };
        self.handle_timeout(now);
    }

    /// A PCP MAP of this machine's port; `lifetime` 1 means the lease asked for.
    fn pcp_request(&self, external_port: u16, lifetime: u32) -> Vec<u8> {
        self.pcp_request_with(external_port, lifetime, lifetime != 0)
    }

    fn pcp_ask(
        &self,
        now: Instant,
        gw: SocketAddr,
        port: u16,
        n: u16,
        prefer_failure: bool,
    ) -> PcpLeg {
        let req = self.pcp_request_with(port, 1, prefer_failure);
        PcpLeg::Asking {
            ask: Ask::new(now, gw, vec![req], UDP_WAIT),
            port,
            n,
            prefer_failure,
        }
    }

    fn pcp_request_with(&self, external_port: u16, lifetime: u32, prefer_failure: bool) -> Vec<u8> {
        let internal = self.cfg.internal;
        pcp::MapRequest {
            lifetime: if lifetime == 0 { 0 } else { self.lease_secs() },
            client: *internal.ip(),
            nonce: self.cfg.nonce,
            internal_port: internal.port(),
            external_port: if external_port == 0 {
                internal.port()
            } else {
                external_port
            },
            prefer_failure,
        }
        .encode()
    }

    fn lease_secs(&self) -> u32 {
        self.cfg.lease.as_secs().clamp(1, u32::MAX as u64) as u32
    }

    fn http(&mut self, to: SocketAddrV4, bytes: Vec<u8>, max_body: usize) -> u32 {
        self.next_id = self.next_id.wrapping_add(1);
        let id = self.next_id;
        self.out.push_back(Request::Http {
            id,
            to,
            bytes,
            max_body,
            timeout: HTTP_TIMEOUT,
        });
        id
    }

    fn soap(&mut self, igd: &Igd, action: &str, args: &[(&str, String)]) -> u32 {
        let body = upnp::soap_body(&igd.service, action, args);
        let req = http::soap_post(
            igd.control.addr,
            &igd.control.path,
            &igd.service,
            action,
            &body,
        );
        self.http(igd.control.addr, req, MAX_SOAP)
    }

    /// A datagram came from `from` to the machine's socket.
    pub fn handle_udp(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) {
        self.stats.bytes_received += bytes.len() as u64 + UDP_OVERHEAD;
        if Some(from) == self.cfg.gateway {
            if let Some(a) = pcp::decode(bytes) {
                self.pcp_answer(now, a);
            } else if let Some(a) = natpmp::decode(bytes) {
                self.pmp_answer(now, a);
            }
        } else if let UpnpLeg::Searching { answers, .. } = &mut self.upnp {
            *answers += 1;
            if *answers > MAX_SSDP_ANSWERS {
                return;
            }
            // The description must be on the machine that answered.
            if let Some(location) = upnp::parse_ssdp(bytes).filter(|l| upnp::same_host(from, l)) {
                let req = http::get(location.addr, &location.path);
                let id = self.http(location.addr, req, MAX_DESCRIPTION);
                self.upnp = UpnpLeg::Busy(None, id, Step::Describe(location));
            }
        }
        self.decide(now);
    }

    fn pcp_answer(&mut self, now: Instant, a: pcp::Answer) {
        let internal = self.cfg.internal;
        let nonce0 = self.cfg.nonce;
        let ours = |nonce: &[u8; 12]| *nonce == nonce0;
        // Renewals and removals.
        match (&mut self.phase, a) {
            (Phase::Mapped(held), pcp::Answer::Mapped(m))
                if held.mapping.protocol == Protocol::Pcp && ours(&m.nonce) =>
            {
                let ip = m.external_ip.unwrap_or(Ipv4Addr::UNSPECIFIED);
                let external = SocketAddrV4::new(ip, m.external_port);
                return self.renewed(now, external, m.lifetime);
            }
            (Phase::Mapped(held), pcp::Answer::Refused { code, nonce })
                if held.mapping.protocol == Protocol::Pcp && ours(&nonce) =>
            {
                held.why = format!("the router refused: {}", pcp::result_name(code));
                held.renewing = None;
                return self.renew_failed(now);
            }
            (Phase::Closing { pending, .. }, answer) => {
                if matches!(answer, pcp::Answer::Mapped(m) if m.lifetime == 0 && ours(&m.nonce)) {
                    pending.retain(|p| !matches!(p, Pending::Udp(Protocol::Pcp, _)));
                    self.closed_if_done(true);
                }
                return;
            }
            _ => {}
        }
        let PcpLeg::Asking {
            port,
            n,
            prefer_failure,
            ..
        } = self.pcp
        else {
            // A late grant nobody uses: removed at once.
            if let pcp::Answer::Mapped(m) = a {
                if m.lifetime > 0 && ours(&m.nonce) && !matches!(self.pcp, PcpLeg::Granted(..)) {
                    if let Some(gw) = self.cfg.gateway {
                        let bytes = self.pcp_request(m.external_port, 0);
                        self.out.push_back(Request::Udp { to: gw, bytes });
                    }
                }
            }
            return;
        };
        self.pcp = match a {
            pcp::Answer::Mapped(m) if !ours(&m.nonce) => return,
            pcp::Answer::Mapped(m) => match m.external_ip {
                Some(ip) if usable_outside(ip, *internal.ip()) => {
                    PcpLeg::Granted(SocketAddrV4::new(ip, m.external_port), m.lifetime)
                }
                Some(ip) => {
                    self.remove_stray(Protocol::Pcp, m.external_port);
                    PcpLeg::Out(Out::Unusable(ip))
                }
                None => PcpLeg::Out(Out::Broken("an outside address that is not IPv4".into())),
            },
            pcp::Answer::Refused { nonce, .. } if !ours(&nonce) => return,
            // That port is taken (or not allowed): the next one, a few times.
            pcp::Answer::Refused {
                code: pcp::CANNOT_PROVIDE_EXTERNAL,
                ..
            } if prefer_failure && n < PCP_TRIES => {
                let gw = self.cfg.gateway.expect("PCP runs with a gateway");
                self.pcp_ask(now, gw, port.checked_add(1).unwrap_or(1024), n + 1, true)
            }
            pcp::Answer::Refused {
                code: pcp::UNSUPP_OPTION,
                ..
            } if prefer_failure => {
                let gw = self.cfg.gateway.expect("PCP runs with a gateway");
                self.pcp_ask(now, gw, port, n, false)
            }
            pcp::Answer::Refused { code, .. } => {
                PcpLeg::Out(Out::Refused(pcp::result_name(code).into()))
            }
            pcp::Answer::NatPmpOnly => PcpLeg::Out(Out::Silent),
        };
    }

    fn pmp_answer(&mut self, now: Instant, a: natpmp::Answer) {
        let internal = self.cfg.internal;
        match (&mut self.phase, a) {
            (
                Phase::Mapped(held),
                natpmp::Answer::Mapped {
                    internal_port,
                    external_port,
                    lifetime,
                    ..
                },
            ) if held.mapping.protocol == Protocol::NatPmp && internal_port == internal.port() => {
                let external = SocketAddrV4::new(*held.mapping.external.ip(), external_port);
                return self.renewed(now, external, lifetime);
            }
            (Phase::Mapped(held), natpmp::Answer::Refused { op: 1, code })
                if held.mapping.protocol == Protocol::NatPmp =>
            {
                held.why = format!("the router refused: {}", natpmp::result_name(code));
                held.renewing = None;
                return self.renew_failed(now);
            }
            (
                Phase::Closing { pending, .. },
                natpmp::Answer::Mapped {
                    internal_port,
                    lifetime: 0,
                    ..
                },
            ) if internal_port == internal.port() => {
                pending.retain(|p| !matches!(p, Pending::Udp(Protocol::NatPmp, _)));
                self.closed_if_done(true);
                return;
            }
            _ => {}
        }
        self.pmp = match (std::mem::replace(&mut self.pmp, PmpLeg::Off), a) {
            (PmpLeg::Address(_), natpmp::Answer::Address { ip, .. }) => {
                if usable_outside(ip, *internal.ip()) {
                    PmpLeg::Known(ip)
                } else {
                    PmpLeg::Out(Out::Unusable(ip))
                }
            }
            (PmpLeg::Address(_) | PmpLeg::Mapping(..), natpmp::Answer::Refused { code, .. }) => {
                PmpLeg::Out(Out::Refused(natpmp::result_name(code).into()))
            }
            (
                PmpLeg::Mapping(ip, _),
                natpmp::Answer::Mapped {
                    internal_port,
                    external_port,
                    lifetime,
                    ..
                },
            ) if internal_port == internal.port() && lifetime > 0 => {
                PmpLeg::Granted(SocketAddrV4::new(ip, external_port), lifetime)
            }
            (leg, _) => leg,
        };
    }

    /// Runs the timers: resends, silences, renewals, the end of a removal.
    pub fn handle_timeout(&mut self, now: Instant) {
        match self.phase {
            Phase::Discovering => {
                if let PcpLeg::Asking { ask, .. } = &mut self.pcp {
                    if ask.run(now, &mut self.out) {
                        self.pcp = PcpLeg::Out(Out::Silent);
                    }
                }
                if let PmpLeg::Address(ask) | PmpLeg::Mapping(_, ask) = &mut self.pmp {
                    if ask.run(now, &mut self.out) {
                        self.pmp = PmpLeg::Out(Out::Silent);
                    }
                }
                if let UpnpLeg::Searching { ask, .. } = &mut self.upnp {
                    if ask.run(now, &mut self.out) {
                        self.upnp = UpnpLeg::Out(Out::Silent);
                    }
                }
                self.decide(now);
            }
            Phase::Mapped(_) => self.mapped_timeout(now),
            Phase::Closing { .. } => self.closing_timeout(now),
            Phase::Failed { again_at } if now >= again_at => self.discover(now),
            Phase::Failed { .. } | Phase::Closed => {}
        }
    }

    fn mapped_timeout(&mut self, now: Instant) {
        let Phase::Mapped(held) = &mut self.phase else {
            return;
        };
        if held.expires.is_some_and(|end| now >= end) {
            if held.why.is_empty() {
                held.why = "the router stopped answering".into();
            }
            held.renewing = None;
            return self.renew_failed(now);
        }
        if let Some(Pending::Udp(_, ask)) = &mut held.renewing {
            if ask.run(now, &mut self.out) {
                held.why = "the router stopped answering".into();
                return self.renew_failed(now);
            }
        }
        if held.renewing.is_none() && held.renew_at.is_some_and(|t| now >= t) {
            self.renew(now);
        }
    }

    fn closing_timeout(&mut self, now: Instant) {
        let Phase::Closing { until, pending } = &mut self.phase else {
            return;
        };
        for p in pending.iter_mut() {
            if let Pending::Udp(_, ask) = p {
                ask.run(now, &mut self.out);
            }
        }
        if now >= *until {
            pending.clear();
            self.closed_if_done(false);
        }
    }

    /// During discovery: picks the protocol that won, starts the next one's mapping, or
    /// gives up.
    fn decide(&mut self, now: Instant) {
        let Phase::Discovering = self.phase else {
            return;
        };
        let pcp_out = matches!(self.pcp, PcpLeg::Off | PcpLeg::Out(_));
        if let PcpLeg::Granted(external, lease) = self.pcp {
            return self.mapped(now, Protocol::Pcp, external, lease, None);
        }
        if !pcp_out {
            return;
        }
        // A router that refused in PCP has its NAT-PMP (the same port, the same rules) say
        // the same; Debian's miniupnpd would look through every port first, minutes long.
        if matches!(self.pcp, PcpLeg::Out(Out::Refused(_))) {
            self.pmp = PmpLeg::Off;
        }
        if let PmpLeg::Known(ip) = self.pmp {
            let gw = self.cfg.gateway.expect("NAT-PMP runs with a gateway");
            let port = self.cfg.internal.port();
            let req = natpmp::map_request(port, port, self.lease_secs());
            self.pmp = PmpLeg::Mapping(ip, Ask::new(now, gw, vec![req], UDP_WAIT));
            return self.handle_timeout(now);
        }
        if let PmpLeg::Granted(external, lease) = self.pmp {
            return self.mapped(now, Protocol::NatPmp, external, lease, None);
        }
        if !matches!(self.pmp, PmpLeg::Off | PmpLeg::Out(_)) {
            return;
        }
        match std::mem::replace(&mut self.upnp, UpnpLeg::Off) {
            UpnpLeg::Ready(igd) => {
                let id = self.soap(&igd, "GetExternalIPAddress", &[]);
                self.upnp = UpnpLeg::Busy(Some(igd), id, Step::ExternalIp);
            }
            UpnpLeg::Granted(igd, external, lease) => {
                self.upnp = UpnpLeg::Off;
                self.mapped(now, Protocol::Upnp, external, lease, Some(igd));
            }
            UpnpLeg::Out(out) => {
                self.upnp = UpnpLeg::Out(out);
                self.fail(now);
            }
            UpnpLeg::Off => self.fail(now),
            other => self.upnp = other,
        }
    }

    /// Every protocol is out: says why, the most telling reason first.
    fn fail(&mut self, now: Instant) {
        let outs = [
            (
                Protocol::Pcp,
                match &self.pcp {
                    PcpLeg::Out(o) => Some(o),
                    _ => None,
                },
            ),
            (
                Protocol::NatPmp,
                match &self.pmp {
                    PmpLeg::Out(o) => Some(o),
                    _ => None,
                },
            ),
            (
                Protocol::Upnp,
                match &self.upnp {
                    UpnpLeg::Out(o) => Some(o),
                    _ => None,
                },
            ),
        ];
        let find = |want: fn(&Out) -> bool| {
            outs.iter()
                .filter_map(|(p, o)| Some((*p, (*o)?)))
                .find(|(_, o)| want(o))
                .map(|(p, o)| (p, o.clone()))
        };
        let refusals: Vec<String> = outs
            .iter()
            .filter_map(|(p, o)| match o {
                Some(Out::Refused(r)) => Some(format!("{r} ({p})")),
                _ => None,
            })
            .collect();
        let failure = if let Some((protocol, Out::Refused(_))) =
            find(|o| matches!(o, Out::Refused(_)))
        {
            Failure::Refused {
                protocol,
                reason: refusals.join(", "),
            }
        } else if let Some((protocol, Out::Unusable(ip))) = find(|o| matches!(o, Out::Unusable(_)))
        {
            Failure::Unusable { protocol, ip }
        } else if let Some((protocol, Out::Broken(why))) = find(|o| matches!(o, Out::Broken(_))) {
            Failure::Broken { protocol, why }
        } else {
            let tried = outs
                .iter()
                .filter(|(_, o)| o.is_some())
                .map(|(p, _)| *p)
                .collect();
            Failure::NoRouter { tried }
        };
        self.failures += 1;
        let wait = ASK_AGAIN
            .saturating_mul(1 << (self.failures - 1).min(10))
            .min(ASK_AGAIN_MAX);
        self.phase = Phase::Failed {
            again_at: now + wait,
        };
        let words = failure.to_string();
        if self.last_failure.as_ref() != Some(&words) {
            self.last_failure = Some(words);
            self.events.push_back(MapEvent::Failed(failure));
        }
    }

    fn mapped(
        &mut self,
        now: Instant,
        protocol: Protocol,
        external: SocketAddrV4,
        lease: u32,
        igd: Option<Igd>,
    ) {
        (self.failures, self.last_failure) = (0, None);
        // The others' late grants are removed as they come (see `pcp_answer`).
        let mapping = Mapping {
            protocol,
            external,
            lease: (lease > 0).then(|| Duration::from_secs(lease.into())),
        };
        let (expires, renew_at) = match mapping.lease {
            Some(l) => (
                Some(now + l),
                Some(now + (l / 2).max(Duration::from_secs(1))),
            ),
            None => (None, None),
        };
        self.phase = Phase::Mapped(Box::new(Held {
            mapping,
            igd,
            expires,
            renew_at,
            renewing: None,
            why: String::new(),
        }));
        self.events.push_back(MapEvent::Mapped(mapping));
    }

    fn renew(&mut self, now: Instant) {
        let Phase::Mapped(held) = &self.phase else {
            return;
        };
        let (external, lease) = (held.mapping.external, held.mapping.lease);
        let pending = match (held.mapping.protocol, self.cfg.gateway, held.igd.clone()) {
            (Protocol::Pcp, Some(gw), _) => {
                let req = self.pcp_request(external.port(), 1);
                Pending::Udp(Protocol::Pcp, Ask::new(now, gw, vec![req], RENEW_WAIT))
            }
            (Protocol::NatPmp, Some(gw), _) => {
                let req = natpmp::map_request(
                    self.cfg.internal.port(),
                    external.port(),
                    self.lease_secs(),
                );
                Pending::Udp(Protocol::NatPmp, Ask::new(now, gw, vec![req], RENEW_WAIT))
            }
            (Protocol::Upnp, _, Some(igd)) => {
                let secs = lease.map_or(0, |d| d.as_secs() as u32);
                let args = upnp::add_args(external.port(), self.cfg.internal, secs);
                Pending::Http(self.soap(&igd, "AddPortMapping", &args))
            }
            _ => return,
        };
        if let Phase::Mapped(held) = &mut self.phase {
            held.renewing = Some(pending);
        }
        self.handle_timeout(now);
    }

    fn renewed(&mut self, now: Instant, external: SocketAddrV4, lease: u32) {
        let Phase::Mapped(held) = &mut self.phase else {
            return;
        };
        if !usable_outside(*external.ip(), *self.cfg.internal.ip()) {
            held.why = format!(
                "the router named an unusable outside address: {}",
                external.ip()
            );
            held.renewing = None;
            return self.renew_failed(now);
        }
        let changed = held.mapping.external != external;
        held.mapping.external = external;
        held.mapping.lease = (lease > 0).then(|| Duration::from_secs(lease.into()));
        held.renewing = None;
        (held.expires, held.renew_at) = match held.mapping.lease {
            Some(l) => (
                Some(now + l),
                Some(now + (l / 2).max(Duration::from_secs(1))),
            ),
            None => (None, None),
        };
        let m = held.mapping;
        self.events.push_back(if changed {
            MapEvent::Mapped(m)
        } else {
            MapEvent::Renewed(m)
        });
    }

    /// A renewal failed: again later, or, past the lease, the mapping is lost.
    fn renew_failed(&mut self, now: Instant) {
        let Phase::Mapped(held) = &mut self.phase else {
            return;
        };
        held.renewing = None;
        match held.expires {
            Some(end) if now < end => {
                let left = end - now;
                held.renew_at = Some(now + (left / 2).min(RENEW_RETRY).max(Duration::from_secs(1)));
            }
            _ => {
                let why = std::mem::take(&mut held.why);
                self.events.push_back(MapEvent::Lost { why });
                self.discover(now);
            }
        }
    }

    fn remove_stray(&mut self, protocol: Protocol, external_port: u16) {
        let Some(gw) = self.cfg.gateway else {
            return;
        };
        let bytes = match protocol {
            Protocol::Pcp => self.pcp_request(external_port, 0),
            Protocol::NatPmp => natpmp::map_request(self.cfg.internal.port(), 0, 0),
            Protocol::Upnp => return,
        };
        self.out.push_back(Request::Udp { to: gw, bytes });
    }

    /// The session ends: removes the mapping (and any request that may have made one), for
    /// at most a second. A no-op once closing.
    pub fn close(&mut self, now: Instant) {
        if matches!(self.phase, Phase::Closing { .. } | Phase::Closed) {
            return;
        }
        // Nothing not yet sent is sent now.
        self.out.clear();
        let gw = self.cfg.gateway;
        let mut pending = Vec::new();
        let internal_port = self.cfg.internal.port();
        let pcp_delete = |m: &Mapper, port: u16| {
            let req = m.pcp_request(port, 0);
            gw.map(|gw| Pending::Udp(Protocol::Pcp, Ask::new(now, gw, vec![req], CLOSE_WAIT)))
        };
        let pmp_delete = || {
            let req = natpmp::map_request(internal_port, 0, 0);
            gw.map(|gw| Pending::Udp(Protocol::NatPmp, Ask::new(now, gw, vec![req], CLOSE_WAIT)))
        };
        let mut upnp_delete = None;
        match std::mem::replace(&mut self.phase, Phase::Closed) {
            Phase::Mapped(held) => match held.mapping.protocol {
                Protocol::Pcp => pending.extend(pcp_delete(self, held.mapping.external.port())),
                Protocol::NatPmp => pending.extend(pmp_delete()),
                Protocol::Upnp => {
                    upnp_delete = held.igd.map(|igd| (igd, held.mapping.external.port()))
                }
            },
            Phase::Discovering => {
                // A request under way may have mapped a port the answer has not told yet.
                if matches!(self.pcp, PcpLeg::Asking { .. } | PcpLeg::Granted(..)) {
                    let port = match self.pcp {
                        PcpLeg::Granted(e, _) => e.port(),
                        PcpLeg::Asking { port, .. } => port,
                        _ => 0,
                    };
                    pending.extend(pcp_delete(self, port));
                }
                if matches!(self.pmp, PmpLeg::Mapping(..) | PmpLeg::Granted(..)) {
                    pending.extend(pmp_delete());
                }
                match &self.upnp {
                    UpnpLeg::Granted(igd, e, _) => upnp_delete = Some((igd.clone(), e.port())),
                    UpnpLeg::Busy(Some(igd), _, Step::Add { port, .. }) => {
                        upnp_delete = Some((igd.clone(), *port))
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        if let Some((igd, port)) = upnp_delete {
            pending.push(Pending::Http(self.soap(
                &igd,
                "DeletePortMapping",
                &upnp::delete_args(port),
            )));
        }
        self.pcp = PcpLeg::Off;
        self.pmp = PmpLeg::Off;
        self.upnp = UpnpLeg::Off;
        let had = !pending.is_empty();
        self.phase = Phase::Closing {
            until: now + CLOSE_WAIT,
            pending,
        };
        if had {
            self.handle_timeout(now);
        } else {
            self.phase = Phase::Closed;
        }
    }

    fn closed_if_done(&mut self, confirmed: bool) {
        if let Phase::Closing { pending, .. } = &self.phase {
            if pending.is_empty() {
                self.phase = Phase::Closed;
                self.events.push_back(MapEvent::Removed { confirmed });
            }
        }
    }

    /// The next thing to do for the machine.
    pub fn poll_request(&mut self) -> Option<Request> {
        let r = self.out.pop_front()?;
        self.stats.requests += 1;
        self.stats.bytes_sent += match &r {
            Request::Udp { bytes, .. } => bytes.len() as u64 + UDP_OVERHEAD,
            Request::Http { bytes, .. } => bytes.len() as u64 + TCP_OVERHEAD,
        };
        Some(r)
    }

    /// What the machine did, oldest first.
    pub fn poll_event(&mut self) -> Option<MapEvent> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) has work next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let udp = |ask: &Ask| Some(ask.timeout());
        match &self.phase {
            Phase::Discovering => {
                let pcp = match &self.pcp {
                    PcpLeg::Asking { ask, .. } => udp(ask),
                    _ => None,
                };
                let pmp = match &self.pmp {
                    PmpLeg::Address(a) | PmpLeg::Mapping(_, a) => udp(a),
                    _ => None,
                };
                let upnp = match &self.upnp {
                    UpnpLeg::Searching { ask, .. } => udp(ask),
                    _ => None,
                };
                [pcp, pmp, upnp].into_iter().flatten().min()
            }
            Phase::Mapped(held) => {
                let next = match &held.renewing {
                    Some(Pending::Udp(_, a)) => udp(a),
                    Some(Pending::Http(_)) => None,
                    None => held.renew_at,
                };
                next.into_iter().chain(held.expires).min()
            }
            Phase::Closing { until, pending } => pending
                .iter()
                .filter_map(|p| match p {
                    Pending::Udp(_, a) => udp(a),
                    Pending::Http(_) => None,
                })
                .chain([*until])
                .min(),
            Phase::Failed { again_at } => Some(*again_at),
            Phase::Closed => None,
        }
    }

    /// The mapping held now, if any.
    pub fn mapping(&self) -> Option<Mapping> {
        match &self.phase {
            Phase::Mapped(held) => Some(held.mapping),
            _ => None,
        }
    }

    /// Closed, its removal answered or given up on.
    pub fn is_closed(&self) -> bool {
        matches!(self.phase, Phase::Closed)
    }

    /// What it cost so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }
}
