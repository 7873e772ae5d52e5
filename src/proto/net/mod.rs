//! The simulated network: the conditioner that impairs datagrams (`--netsim` puts it in
//! front of a real socket) and the one net every simulation runs on. No sockets here: those
//! are `framelock::net`'s.

pub mod conditioner;
#[doc(hidden)]
pub mod sim;

pub use conditioner::{Conditioner, ConditionerStats, NetSim, NetSimError};
