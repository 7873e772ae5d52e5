//! Port mapping: asking the home router to forward a UDP port to this machine, so that a
//! `host` behind it can be joined from the internet with nobody touching the router. PCP
//! (RFC 6887) first, then NAT-PMP (RFC 6886), then UPnP IGD; the lease is renewed at half
//! its length and the mapping removed when the session ends.
//!
//! [`Mapper`] is the sans-IO machine that decides (quinn-proto's shape: `handle_*` in,
//! `poll_*` out, `now` first): which protocol to ask, when to ask again, when to give up,
//! what to renew and remove, and which answers to believe. It reads no clock and opens no
//! socket: it hands out [`Request`]s (a UDP datagram, or an HTTP exchange with its size and
//! time limits) and takes back what came of them; `net::portmap` runs it on a thread of its
//! own. `pcp`, `natpmp`, `upnp` and `http` hold the bytes of each protocol, every parser
//! bounded in size (and fuzzed by `tests/fuzz_portmap.rs`).
//!
//! It imports nothing of the crate: it sits on the lowest layer, beside `wire`.
//!
//! # Discovery
//! At the start, a PCP MAP and a NAT-PMP address request go to the router's port 5351 and
//! SSDP searches to the UPnP multicast group, at once. A PCP grant wins. NAT-PMP maps
//! once PCP is out (refused, answered as NAT-PMP-only, or silent for [`UDP_WAIT`]); UPnP
//! maps once both are out. Nobody answering within [`ANSWER_WITHIN`] is a failure that
//! says so. A router's answer that is refused, unreadable, or names an outside address no
//! datagram can reach (0.0.0.0, loopback, multicast, link-local, this machine's own) is
//! not used, and a mapping it made is removed.

pub mod http;
mod mapper;
pub mod natpmp;
pub mod pcp;
#[cfg(test)]
mod tests;
pub mod upnp;

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

pub use mapper::{Mapper, Stats, ASK_AGAIN, ASK_AGAIN_MAX};

/// How long routers get to answer at all.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(2);
/// How long PCP and NAT-PMP each get before they count as silent (asked at 0, 250 and
/// 750 ms).
pub const UDP_WAIT: Duration = Duration::from_secs(1);
/// The lease asked for.
pub const LEASE: Duration = Duration::from_secs(3600);
/// The router's PCP and NAT-PMP port.
pub const GATEWAY_PORT: u16 = 5351;
/// Longest device description read.
pub const MAX_DESCRIPTION: usize = 64 * 1024;
/// Longest SOAP answer read.
pub const MAX_SOAP: usize = 16 * 1024;
/// Longest one HTTP exchange with the router may take, connection included.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(2);

/// A port-mapping protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// Port Control Protocol (RFC 6887).
    Pcp,
    /// NAT Port Mapping Protocol (RFC 6886).
    NatPmp,
    /// UPnP Internet Gateway Device.
    Upnp,
}

impl Protocol {
    /// All of them, in the order they are preferred.
    pub const ALL: [Protocol; 3] = [Protocol::Pcp, Protocol::NatPmp, Protocol::Upnp];

    /// "PCP", "NAT-PMP", "UPnP".
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Pcp => "PCP",
            Protocol::NatPmp => "NAT-PMP",
            Protocol::Upnp => "UPnP",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the machine is told before it starts.
#[derive(Clone, Debug)]
pub struct MapConfig {
    /// This machine's address on the router's network, and the UDP port to forward to it.
    pub internal: SocketAddrV4,
    /// The router's PCP/NAT-PMP address (its [`GATEWAY_PORT`]); `None`: UPnP only.
    pub gateway: Option<SocketAddr>,
    /// Where SSDP searches go ([`upnp::SSDP`]).
    pub ssdp: SocketAddr,
    /// The protocols to try, in order of preference (a subset of [`Protocol::ALL`]).
    pub protocols: Vec<Protocol>,
    /// The lease asked for.
    pub lease: Duration,
    /// The PCP mapping nonce (random: it names the mapping to the router).
    pub nonce: [u8; pcp::NONCE_LEN],
}

impl MapConfig {
    /// A config for `internal` behind `gateway`, trying every protocol for [`LEASE`].
    pub fn new(internal: SocketAddrV4, gateway: Option<Ipv4Addr>, nonce: [u8; 12]) -> MapConfig {
        MapConfig {
            internal,
            gateway: gateway.map(|ip| SocketAddr::from((ip, GATEWAY_PORT))),
            ssdp: upnp::SSDP.into(),
            protocols: Protocol::ALL.to_vec(),
            lease: LEASE,
            nonce,
        }
    }
}

/// What the machine asks its driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Send this datagram (from the machine's one UDP socket; answers come back through
    /// [`Mapper::handle_udp`]).
    Udp {
        /// Where.
        to: SocketAddr,
        /// What.
        bytes: Vec<u8>,
    },
    /// Connect to `to`, send `bytes`, and read the answer until it is whole
    /// ([`http::parse`]), the connection ends, it passes `max_body` (plus the head), or
    /// `timeout` has passed since the connection began; then hand what was read to
    /// [`Mapper::handle_http`] with `id`.
    Http {
        /// Names the exchange in the answer.
        id: u32,
        /// The router's HTTP address.
        to: SocketAddrV4,
        /// The request.
        bytes: Vec<u8>,
        /// Longest body read.
        max_body: usize,
        /// Longest the whole exchange takes.
        timeout: Duration,
    },
}

/// A port forwarded by the router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// How it was asked for.
    pub protocol: Protocol,
    /// The router's outside address and port, which forward to this machine.
    pub external: SocketAddrV4,
    /// How long it holds without renewal; `None`: until removed (a router that grants
    /// only permanent mappings).
    pub lease: Option<Duration>,
}

impl Mapping {
    /// The outside address is private or shared (10/8, 172.16/12, 192.168/16, 100.64/10):
    /// another router or the provider's NAT sits beyond this one.
    pub fn behind_another_nat(&self) -> bool {
        let ip = self.external.ip();
        let o = ip.octets();
        ip.is_private() || (o[0] == 100 && (o[1] & 0xc0) == 64)
    }
}

impl fmt::Display for Mapping {
    /// `UPnP 203.0.113.7:7845 (lease 1 h)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.protocol, self.external)?;
        match self.lease {
            None => f.write_str("(permanent)"),
            Some(d) => write!(f, "(lease {})", duration_words(d)),
        }
    }
}

/// "1 h", "20 min", "45 s".
pub fn duration_words(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 && s.is_multiple_of(3600) {
        format!("{} h", s / 3600)
    } else if s >= 120 {
        format!("{} min", s / 60)
    } else {
        format!("{s} s")
    }
}

/// Why there is no mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Nothing answered any of the protocols tried.
    NoRouter {
        /// The protocols asked.
        tried: Vec<Protocol>,
    },
    /// The router said no (its own words).
    Refused {
        /// Who said it first.
        protocol: Protocol,
        /// Each protocol's words: `NOT_AUTHORIZED (PCP), Action not authorized (UPnP)`...
        reason: String,
    },
    /// The router's answers made no sense.
    Broken {
        /// To which protocol.
        protocol: Protocol,
        /// What was wrong.
        why: String,
    },
    /// The router named an outside address nobody can send to.
    Unusable {
        /// Which protocol named it.
        protocol: Protocol,
        /// The address.
        ip: Ipv4Addr,
    },
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::NoRouter { tried } => {
                let mut names: Vec<&str> = tried.iter().rev().map(|p| p.as_str()).collect();
                names.dedup();
                write!(
                    f,
                    "no {} router answered in {} s",
                    names.join("/"),
                    ANSWER_WITHIN.as_secs()
                )
            }
            Failure::Refused { reason, .. } => write!(f, "the router refused: {reason}"),
            Failure::Broken { protocol, why } => {
                write!(f, "the router's {protocol} answers made no sense: {why}")
            }
            Failure::Unusable { protocol, ip } => write!(
                f,
                "the router named an outside address nobody can reach: {ip} ({protocol})"
            ),
        }
    }
}

/// What the machine did, for its driver to pass on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapEvent {
    /// A mapping is up: the first, one found again after a loss, or one whose outside
    /// address changed at a renewal.
    Mapped(Mapping),
    /// The lease was renewed, the address unchanged.
    Renewed(Mapping),
    /// No mapping; the machine does nothing more until closed.
    Failed(Failure),
    /// The router stopped renewing the mapping and its lease ran out; the machine looks
    /// for a router again at once.
    Lost {
        /// Why the renewals failed.
        why: String,
    },
    /// Closed: the mapping made (if any) is removed, or the router did not confirm it
    /// (`confirmed` false: it ends with its lease).
    Removed {
        /// The router answered the removal.
        confirmed: bool,
    },
}

/// Whether `ip` can be a router's outside address: one datagrams can be sent to from
/// elsewhere.
pub fn usable_outside(ip: Ipv4Addr, internal: Ipv4Addr) -> bool {
    !(ip.is_unspecified()
        || ip.octets()[0] == 0
        || ip.is_loopback()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.octets()[0] >= 240
        || ip.is_link_local()
        || ip == internal)
}
