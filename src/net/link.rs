//! A link: one UDP socket plus an optional network conditioner on its outgoing side.
//! The caller's loop: `recv(now)` -> feed the protocol -> `send(now, ..)` what it produced ->
//! `wait_until(deadline)`, where the deadline is the protocol's next timer.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::conditioner::{Conditioner, ConditionerStats, NetSim};
use super::udp::{header_overhead, SocketWaiter, UdpSocket};
use super::NetError;
use crate::wire::Transmit;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Datagrams handed to the socket (after the conditioner).
    pub packets_sent: u64,
    pub bytes_sent: u64,
    /// `bytes_sent` plus 28 (IPv4) or 48 (IPv6) bytes of IP/UDP header per datagram.
    pub wire_bytes_sent: u64,
    pub packets_received: u64,
    pub bytes_received: u64,
    pub wire_bytes_received: u64,
    /// Datagrams the caller's protocol rejected (see `note_invalid`).
    pub packets_dropped_invalid: u64,
    pub send_errors: u64,
    /// What `--netsim` did, if it is on.
    pub netsim: Option<ConditionerStats>,
}

#[derive(Debug)]
pub struct Link {
    socket: UdpSocket,
    netsim: Option<Conditioner>,
    stats: LinkStats,
}

impl Link {
    pub fn new(socket: UdpSocket, netsim: Option<NetSim>) -> Link {
        if let Some(sim) = &netsim {
            tracing::info!("net: conditioning outgoing traffic: {sim}");
        }
        Link {
            socket,
            netsim: netsim.map(Conditioner::new),
            stats: LinkStats::default(),
        }
    }

    /// `framelock host`: listen on `port` on every address.
    pub fn host(port: u16, netsim: Option<NetSim>) -> Result<Link, NetError> {
        Ok(Link::new(UdpSocket::bind_host(port)?, netsim))
    }

    /// `framelock join`: an ephemeral port for talking to `host`.
    pub fn client(host: SocketAddr, netsim: Option<NetSim>) -> Result<Link, NetError> {
        Ok(Link::new(UdpSocket::bind_client(host)?, netsim))
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.socket.local_addr()
    }

    /// Sends now, or queues in the conditioner until its due time.
    pub fn send(&mut self, now: Instant, to: SocketAddr, bytes: Vec<u8>) {
        match &mut self.netsim {
            Some(c) => c.push(now, to, bytes),
            None => self.send_now(to, &bytes),
        }
    }

    /// Sends a machine's datagram: as `send`, with its IP TTL if it asks for one (a direct
    /// path's first punch: it leaves the home router and dies before the other's). Such a
    /// datagram skips the conditioner.
    pub fn send_transmit(&mut self, now: Instant, t: Transmit) {
        let Transmit { to, bytes, ttl } = t;
        match ttl {
            None => self.send(now, to, bytes),
            Some(ttl) => {
                if self.socket.send_to_ttl(to, &bytes, ttl) {
                    self.stats.packets_sent += 1;
                    self.stats.bytes_sent += bytes.len() as u64;
                    self.stats.wire_bytes_sent += (bytes.len() + header_overhead(to)) as u64;
                } else {
                    self.stats.send_errors += 1;
                }
            }
        }
    }

    fn send_now(&mut self, to: SocketAddr, bytes: &[u8]) {
        if self.socket.send_to(to, bytes) {
            self.stats.packets_sent += 1;
            self.stats.bytes_sent += bytes.len() as u64;
            self.stats.wire_bytes_sent += (bytes.len() + header_overhead(to)) as u64;
        } else {
            self.stats.send_errors += 1;
        }
    }

    /// Sends every conditioned datagram whose time has come.
    pub fn flush_due(&mut self, now: Instant) {
        while let Some(Transmit { to, bytes, .. }) =
            self.netsim.as_mut().and_then(|c| c.poll_transmit(now))
        {
            self.send_now(to, &bytes);
        }
    }

    /// Flushes due datagrams, then returns every datagram waiting on the socket.
    pub fn recv(&mut self, now: Instant) -> Result<Vec<(SocketAddr, Vec<u8>)>, NetError> {
        self.flush_due(now);
        let mut out = Vec::new();
        self.socket.recv_all(&mut out)?;
        for (from, bytes) in &out {
            self.stats.packets_received += 1;
            self.stats.bytes_received += bytes.len() as u64;
            self.stats.wire_bytes_received += (bytes.len() + header_overhead(*from)) as u64;
        }
        Ok(out)
    }

    /// The conditioner's next due time, if it holds anything.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.netsim.as_ref().and_then(|c| c.poll_timeout())
    }

    /// Sleeps until a datagram arrives, `deadline` passes, or the conditioner has something
    /// due, whichever is first. True if a datagram is waiting.
    pub fn wait_until(&self, now: Instant, deadline: Option<Instant>) -> Result<bool, NetError> {
        let until = match (deadline, self.poll_timeout()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(now + Duration::from_secs(1)),
        };
        let timeout = until.saturating_duration_since(now);
        if timeout.is_zero() {
            return Ok(false);
        }
        self.socket.wait(timeout)
    }

    /// A handle for waiting on this link's socket from another thread.
    pub fn waiter(&self) -> Result<SocketWaiter, NetError> {
        self.socket.waiter()
    }

    /// Counts a datagram the protocol rejected (malformed, unknown sender, wrong session).
    pub fn note_invalid(&mut self) {
        self.stats.packets_dropped_invalid += 1;
    }

    pub fn stats(&self) -> LinkStats {
        LinkStats {
            netsim: self.netsim.as_ref().map(|c| c.stats()),
            ..self.stats
        }
    }

    /// Datagrams still held by the conditioner.
    pub fn queued(&self) -> usize {
        self.netsim.as_ref().map_or(0, |c| c.len())
    }

    /// Before closing: lets the conditioner send what it still holds (a goodbye), for up
    /// to `limit`.
    pub fn drain(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while self.queued() > 0 && Instant::now() < deadline {
            self.flush_due(Instant::now());
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
