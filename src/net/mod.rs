//! UDP carriage for the session and lockstep datagrams: every datagram framelock sends goes
//! through a socket of this module. (The other sockets live with their users: `netplay`'s
//! web page and metrics over TCP and its fleet directory over NATS, and `video`'s TCP pipe
//! to ffmpeg.) It imports only `wire`, `wording` and `portmap` (whose machine `portmap` runs
//! on a thread), never the protocols it carries.
//! `udp` wraps the socket, `conditioner` impairs outgoing traffic for testing (`--netsim`),
//! `link` joins the two for the caller's loop, `drive` runs one turn of a machine over it;
//! `sim` (tests and benchmarks) is the simulated network every simulation runs on. The
//! socket-free two, `conditioner` and `sim`, live in `framelock-proto` (re-exported here).

pub mod drive;
pub mod link;
pub mod portmap;
pub mod udp;

use std::hash::{BuildHasher, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use thiserror::Error;

use crate::wording::io_reason;

pub use conditioner::{Conditioner, ConditionerStats, NetSim, NetSimError};
// `sim` is public but hidden from the proto crate's docs: the lockstep simulator the
// benchmarks share runs on it.
pub use framelock_proto::net::{conditioner, sim};
pub use link::{Link, LinkStats};
pub use udp::{header_overhead, SocketWaiter, UdpSocket};

#[derive(Debug, Error)]
pub enum NetError {
    #[error("cannot bind udp {addr}: {}", io_reason(.io))]
    Bind {
        addr: SocketAddr,
        io: std::io::Error,
    },
    #[error("udp socket error: {}", io_reason(.0))]
    Io(std::io::Error),
}

impl From<std::io::Error> for NetError {
    fn from(e: std::io::Error) -> NetError {
        NetError::Io(e)
    }
}

/// This machine's address on its default route, the one a player on the same network
/// dials: connecting a UDP socket sends nothing, the kernel only picks the route and the
/// source address (192.0.2.1 and 2001:db8::1 are documentation addresses, never dialled).
/// None offline.
pub fn lan_address() -> Option<IpAddr> {
    let probe = |bind: SocketAddr, to: SocketAddr| -> Option<IpAddr> {
        let socket = std::net::UdpSocket::bind(bind).ok()?;
        socket.connect(to).ok()?;
        let ip = socket.local_addr().ok()?.ip();
        (!ip.is_unspecified() && !ip.is_loopback()).then_some(ip)
    };
    let v4 = probe(
        (Ipv4Addr::UNSPECIFIED, 0).into(),
        (Ipv4Addr::new(192, 0, 2, 1), 9).into(),
    );
    v4.or_else(|| {
        probe(
            (Ipv6Addr::UNSPECIFIED, 0).into(),
            (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1), 9).into(),
        )
    })
}

/// 32 random bytes from the OS, for the password checks' keys.
pub fn random_bytes() -> [u8; 32] {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    bytes
}

/// 64 random bits from the OS (std seeds `RandomState` from it), for session ids and nonce
/// seeds; keeps `session` free of entropy sources.
pub fn random_seed() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id() as u64);
    h.finish()
}
