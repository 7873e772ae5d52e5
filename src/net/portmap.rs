//! The port-mapping machine ([`crate::portmap::Mapper`]) on a thread of its own, so that
//! nothing else ever waits on a router: it finds the router (the default route's gateway),
//! sends the machine's datagrams from one UDP socket, runs its HTTP exchanges within their
//! size and time limits, and publishes what happened ([`PortMap::poll_event`],
//! [`PortMap::report`]). Dropping the [`PortMap`] removes the mapping (waiting at most
//! [`crate::portmap::Mapper`]'s close time plus one HTTP exchange), on every way out of a
//! session: the end of the game, Ctrl-C, a closed window, an error.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::portmap::{
    http, Failure, MapConfig, MapEvent, Mapper, Mapping, Protocol, Request, Stats,
};

/// Longest the thread sleeps between looks at its stop flag.
const TICK: Duration = Duration::from_millis(50);

/// `--port-map`: whether (and how) a host asks its router to forward its port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PortMapMode {
    /// PCP, then NAT-PMP, then UPnP IGD.
    #[default]
    Auto,
    /// Never asks.
    Off,
    /// Only this protocol (to see what a router does).
    Only(Protocol),
}

impl PortMapMode {
    /// The protocols asked, in order (none when off).
    pub fn protocols(self) -> Vec<Protocol> {
        match self {
            PortMapMode::Auto => Protocol::ALL.to_vec(),
            PortMapMode::Off => Vec::new(),
            PortMapMode::Only(p) => vec![p],
        }
    }
}

impl FromStr for PortMapMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(PortMapMode::Auto),
            "off" => Ok(PortMapMode::Off),
            "pcp" => Ok(PortMapMode::Only(Protocol::Pcp)),
            "natpmp" | "nat-pmp" => Ok(PortMapMode::Only(Protocol::NatPmp)),
            "upnp" => Ok(PortMapMode::Only(Protocol::Upnp)),
            other => Err(format!(
                "unknown port mapping `{other}`: use auto, off, pcp, natpmp or upnp"
            )),
        }
    }
}

/// Where the mapping stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Asking the router.
    Trying,
    /// The router forwards the port.
    Mapped(Mapping),
    /// No mapping, and why.
    Failed(Failure),
    /// This machine has no IPv4 address to map to.
    NoAddress,
    /// The session ended; the mapping is removed (or was never made).
    Removed,
}

/// What the mapping thread reports.
#[derive(Clone, Debug)]
pub struct Report {
    /// Where it stands.
    pub status: Status,
    /// This machine's address and port, as mapped to.
    pub internal: Option<SocketAddrV4>,
    /// The router asked (PCP and NAT-PMP), if one was found.
    pub gateway: Option<Ipv4Addr>,
    /// From the start to the first mapping.
    pub after: Option<Duration>,
    /// The latest mapping held (kept once it is removed).
    pub last: Option<Mapping>,
    /// What it cost so far.
    pub stats: Stats,
}

struct Shared {
    stop: AtomicBool,
    report: Mutex<Report>,
    events: Mutex<VecDeque<MapEvent>>,
}

/// A port mapping kept on its own thread. See the module docs.
pub struct PortMap {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl PortMap {
    /// Starts mapping UDP `port` of this machine with `mode`'s protocols, through the
    /// router on the default route.
    pub fn start(port: u16, mode: PortMapMode, nonce: [u8; 12]) -> PortMap {
        let gateway = default_gateway();
        let internal = gateway
            .and_then(|gw| route_source(IpAddr::V4(gw)))
            .or_else(|| match super::lan_address() {
                Some(IpAddr::V4(ip)) => Some(ip),
                _ => None,
            });
        let Some(ip) = internal else {
            return PortMap::idle(Status::NoAddress, None);
        };
        let mut cfg = MapConfig::new(SocketAddrV4::new(ip, port), gateway, nonce);
        cfg.protocols = mode.protocols();
        PortMap::start_with(cfg)
    }

    /// Starts the machine with `cfg` as given (tests point it at their own routers).
    pub fn start_with(cfg: MapConfig) -> PortMap {
        let gateway = cfg.gateway.and_then(|g| match g.ip() {
            IpAddr::V4(v4) => Some(v4),
            IpAddr::V6(_) => None,
        });
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            report: Mutex::new(Report {
                status: Status::Trying,
                internal: Some(cfg.internal),
                gateway,
                after: None,
                last: None,
                stats: Stats::default(),
            }),
            events: Mutex::new(VecDeque::new()),
        });
        let inner = shared.clone();
        let thread = std::thread::Builder::new()
            .name("framelock-portmap".into())
            .spawn(move || run(cfg, &inner))
            .ok();
        PortMap { shared, thread }
    }

    fn idle(status: Status, internal: Option<SocketAddrV4>) -> PortMap {
        PortMap {
            shared: Arc::new(Shared {
                stop: AtomicBool::new(true),
                report: Mutex::new(Report {
                    status,
                    internal,
                    gateway: None,
                    after: None,
                    last: None,
                    stats: Stats::default(),
                }),
                events: Mutex::new(VecDeque::new()),
            }),
            thread: None,
        }
    }

    /// The next thing the machine did, oldest first.
    pub fn poll_event(&self) -> Option<MapEvent> {
        self.shared.events.lock().ok()?.pop_front()
    }

    /// Where the mapping stands now.
    pub fn report(&self) -> Report {
        match self.shared.report.lock() {
            Ok(r) => r.clone(),
            Err(e) => e.into_inner().clone(),
        }
    }

    /// The mapping held now, if any.
    pub fn mapping(&self) -> Option<Mapping> {
        match self.report().status {
            Status::Mapped(m) => Some(m),
            _ => None,
        }
    }

    /// Removes the mapping and ends the thread (bounded: see the module docs).
    pub fn close(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for PortMap {
    fn drop(&mut self) {
        self.close();
    }
}

impl std::fmt::Debug for PortMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PortMap")
            .field("report", &self.report())
            .finish()
    }
}

/// The thread: the machine, its socket, until it is closed.
fn run(cfg: MapConfig, shared: &Shared) {
    let start = Instant::now();
    let socket = match bind(*cfg.internal.ip()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("netplay: port map: cannot open a socket for it: {e}");
            set_status(shared, Status::NoAddress);
            return;
        }
    };
    let mut m = Mapper::new(start, cfg);
    let mut closing = false;
    let mut buf = vec![0u8; 2048];
    loop {
        let now = Instant::now();
        if !closing && shared.stop.load(Ordering::Relaxed) {
            closing = true;
            m.close(now);
        }
        if m.poll_timeout().is_some_and(|t| t <= now) {
            m.handle_timeout(now);
        }
        while let Some(req) = m.poll_request() {
            match req {
                Request::Udp { to, bytes } => {
                    if let Err(e) = socket.send_to(&bytes, to) {
                        tracing::debug!("netplay: port map: send to {to}: {e}");
                    }
                }
                Request::Http {
                    id,
                    to,
                    bytes,
                    max_body,
                    timeout,
                } => {
                    let got = exchange(to, &bytes, max_body, timeout);
                    if let Err(e) = &got {
                        tracing::debug!("netplay: port map: http {to}: {e}");
                    }
                    m.handle_http(Instant::now(), id, got);
                }
            }
        }
        publish(shared, &mut m, start);
        if m.is_closed() {
            // A mapping (or an attempt at one) is gone; a failure stays what it was.
            if let Ok(mut r) = shared.report.lock() {
                if matches!(r.status, Status::Mapped(_) | Status::Trying) {
                    r.status = Status::Removed;
                }
            }
            return;
        }
        let wait = m
            .poll_timeout()
            .map_or(TICK, |t| t.saturating_duration_since(Instant::now()))
            .clamp(Duration::from_millis(1), TICK);
        let _ = socket.set_read_timeout(Some(wait));
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => m.handle_udp(Instant::now(), from, &buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            // An ICMP "port unreachable" from a router without PCP shows here on Linux.
            Err(e) => tracing::trace!("netplay: port map: {e}"),
        }
    }
}

fn set_status(shared: &Shared, status: Status) {
    if let Ok(mut r) = shared.report.lock() {
        r.status = status;
    }
}

/// Moves the machine's events out and updates the report.
fn publish(shared: &Shared, m: &mut Mapper, start: Instant) {
    let mut events = Vec::new();
    while let Some(ev) = m.poll_event() {
        events.push(ev);
    }
    let Ok(mut r) = shared.report.lock() else {
        return;
    };
    r.stats = m.stats();
    for ev in &events {
        match ev {
            MapEvent::Mapped(mapping) | MapEvent::Renewed(mapping) => {
                r.status = Status::Mapped(*mapping);
                r.last = Some(*mapping);
                r.after.get_or_insert_with(|| start.elapsed());
            }
            MapEvent::Failed(f) => r.status = Status::Failed(f.clone()),
            MapEvent::Lost { .. } => r.status = Status::Trying,
            MapEvent::Removed { .. } => r.status = Status::Removed,
        }
    }
    drop(r);
    if let Ok(mut q) = shared.events.lock() {
        q.extend(events);
    }
}

/// A UDP socket on this machine's address (PCP routers check the source against the
/// address in the request), sending SSDP searches out of that address's interface.
fn bind(ip: Ipv4Addr) -> std::io::Result<std::net::UdpSocket> {
    use socket2::{Domain, Protocol as P, SockAddr, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(P::UDP))?;
    let _ = s.set_multicast_if_v4(&ip);
    s.bind(&SockAddr::from(SocketAddr::from((ip, 0))))?;
    Ok(s.into())
}

/// One HTTP exchange: connect, send `request`, read until the answer is whole, the
/// connection ends, `max_body` is passed or `timeout` is up. Returns what was read.
fn exchange(
    to: SocketAddrV4,
    request: &[u8],
    max_body: usize,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let deadline = Instant::now() + timeout;
    let left = || deadline.saturating_duration_since(Instant::now());
    let secs = timeout.as_secs_f32();
    let mut s = TcpStream::connect_timeout(&to.into(), timeout).map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(left().max(Duration::from_millis(1))))
        .map_err(|e| e.to_string())?;
    s.write_all(request).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let wait = left();
        if wait.is_zero() {
            return Err(format!("no whole answer within {secs:.0} s"));
        }
        s.set_read_timeout(Some(wait)).map_err(|e| e.to_string())?;
        match s.read(&mut chunk) {
            Ok(0) => return Ok(buf),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                match http::parse(&buf, false, max_body) {
                    Ok(Some(_)) => return Ok(buf),
                    Ok(None) if buf.len() <= max_body + http::MAX_HEAD => {}
                    Ok(None) => return Err(format!("an answer over {} KiB", max_body / 1024)),
                    Err(e) => return Err(e.to_string()),
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(format!("no whole answer within {secs:.0} s"))
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The source address the kernel picks for datagrams to `to` (connecting a UDP socket
/// sends nothing).
fn route_source(to: IpAddr) -> Option<Ipv4Addr> {
    let s = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    s.connect((to, 9)).ok()?;
    match s.local_addr().ok()?.ip() {
        IpAddr::V4(ip) if !ip.is_unspecified() && !ip.is_loopback() => Some(ip),
        _ => None,
    }
}

/// The IPv4 default route's gateway (Linux: /proc/net/route); `None` elsewhere or
/// without one, when only UPnP (multicast) can find the router.
pub fn default_gateway() -> Option<Ipv4Addr> {
    let table = std::fs::read_to_string("/proc/net/route").ok()?;
    parse_route_table(&table)
}

/// The gateway of the default route with the lowest metric in a /proc/net/route table.
fn parse_route_table(table: &str) -> Option<Ipv4Addr> {
    const RTF_UP: u32 = 0x1;
    const RTF_GATEWAY: u32 = 0x2;
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let hex = |i: usize| u32::from_str_radix(f.get(i)?, 16).ok();
            let (dest, gw, flags, metric, mask) = (hex(1)?, hex(2)?, hex(3)?, f.get(6)?, hex(7)?);
            let metric: u32 = metric.parse().ok()?;
            let default =
                dest == 0 && mask == 0 && flags & (RTF_UP | RTF_GATEWAY) == RTF_UP | RTF_GATEWAY;
            // The kernel prints the address as the u32 it holds in network order.
            default.then(|| (metric, Ipv4Addr::from(gw.to_ne_bytes())))
        })
        .min_by_key(|(metric, _)| *metric)
        .map(|(_, gw)| gw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_gateway_comes_from_the_route_table() {
        let table =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
            eth0\t00014E0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
            wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n\
            eth0\t00000000\t01014E0A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n";
        let want = if cfg!(target_endian = "little") {
            Ipv4Addr::new(10, 78, 1, 1)
        } else {
            Ipv4Addr::new(1, 1, 78, 10)
        };
        assert_eq!(parse_route_table(table), Some(want));
        assert_eq!(parse_route_table("Iface\n"), None);
        assert_eq!("nat-pmp".parse(), Ok(PortMapMode::Only(Protocol::NatPmp)));
        assert!("upnp2"
            .parse::<PortMapMode>()
            .unwrap_err()
            .contains("auto, off"));
    }
}
