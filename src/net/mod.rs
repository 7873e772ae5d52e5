//! UDP carriage for the session and lockstep datagrams: the only module that touches sockets.
//! `udp` wraps the socket, `conditioner` impairs outgoing traffic for testing (`--netsim`),
//! `endpoint` joins the two for the caller's loop.

pub mod conditioner;
pub mod endpoint;
pub mod udp;

use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;

use thiserror::Error;

pub use conditioner::{Conditioner, ConditionerStats, NetSim, NetSimError};
pub use endpoint::{Endpoint, EndpointStats};
pub use udp::{SocketWaiter, UdpSocket};

#[derive(Debug, Error)]
pub enum NetError {
    #[error("cannot bind udp {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("udp socket error: {0}")]
    Io(#[from] std::io::Error),
}

/// 64 random bits from the OS (std seeds `RandomState` from it), for session ids and nonce
/// seeds; keeps `session` free of entropy sources.
pub fn random_seed() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id() as u64);
    h.finish()
}
