//! The UDP socket: built with socket2 (non-blocking, no SO_REUSEADDR so that two hosts cannot
//! share a port, 4 MiB buffers so a start-state burst fits), with byte and packet counters.

use std::io::ErrorKind;
use std::net::{Ipv6Addr, SocketAddr};
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::NetError;

/// Requested socket buffer size (the kernel may cap it, e.g. at net.core.rmem_max).
pub const SOCKET_BUFFER: usize = 4 << 20;
/// Most datagrams taken by one `recv_all` call, so a flood cannot stall the caller's loop.
pub const MAX_RECV_BATCH: usize = 4096;
pub use crate::wire::{header_overhead, IPV4_UDP_OVERHEAD, IPV6_UDP_OVERHEAD};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SocketStats {
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub packets_received: u64,
    pub bytes_received: u64,
    /// Sends the kernel refused (buffer full, unreachable...).
    pub send_errors: u64,
}

#[derive(Debug)]
pub struct UdpSocket {
    sock: std::net::UdpSocket,
    local: SocketAddr,
    /// An IPv6 socket that also carries IPv4 (as v4-mapped addresses).
    dual_stack: bool,
    buf: Vec<u8>,
    stats: SocketStats,
}

impl UdpSocket {
    /// Binds exactly `addr`.
    pub fn bind(addr: SocketAddr) -> Result<UdpSocket, NetError> {
        Self::bind_inner(addr, false)
    }

    /// A host's socket on `port` for every address: `[::]` dual stack, or `0.0.0.0` where
    /// IPv6 is unavailable.
    pub fn bind_host(port: u16) -> Result<UdpSocket, NetError> {
        let any6 = SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port);
        Self::bind_inner(any6, true).or_else(|_| Self::bind(SocketAddr::from(([0, 0, 0, 0], port))))
    }

    /// A joiner's socket on an ephemeral port, in the address family of `host`.
    pub fn bind_client(host: SocketAddr) -> Result<UdpSocket, NetError> {
        let local = match host {
            SocketAddr::V4(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
            SocketAddr::V6(_) => SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)),
        };
        Self::bind(local)
    }

    fn bind_inner(addr: SocketAddr, dual_stack: bool) -> Result<UdpSocket, NetError> {
        let err = |io| NetError::Bind { addr, io };
        let sock = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
            .map_err(err)?;
        sock.set_reuse_address(false).map_err(err)?;
        if dual_stack {
            sock.set_only_v6(false).map_err(err)?;
        }
        // Best effort: a smaller buffer only means more loss under bursts.
        let _ = sock.set_recv_buffer_size(SOCKET_BUFFER);
        let _ = sock.set_send_buffer_size(SOCKET_BUFFER);
        sock.set_nonblocking(true).map_err(err)?;
        sock.bind(&SockAddr::from(addr)).map_err(err)?;
        let sock: std::net::UdpSocket = sock.into();
        let local = sock.local_addr().map_err(err)?;
        tracing::debug!(%local, dual_stack, "net: udp socket bound");
        Ok(UdpSocket {
            sock,
            local,
            dual_stack,
            buf: vec![0; 65536],
            stats: SocketStats::default(),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub fn stats(&self) -> SocketStats {
        self.stats
    }

    /// Sends one datagram without blocking; a full buffer or an unreachable peer counts as a
    /// send error (UDP is lossy anyway) and returns `false`.
    pub fn send_to(&mut self, to: SocketAddr, bytes: &[u8]) -> bool {
        let target = match to {
            SocketAddr::V4(v4) if self.dual_stack => {
                SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port())
            }
            other => other,
        };
        match self.sock.send_to(bytes, target) {
            Ok(_) => {
                self.stats.packets_sent += 1;
                self.stats.bytes_sent += bytes.len() as u64;
                true
            }
            Err(e) => {
                tracing::trace!(%to, "net: send failed: {e}");
                self.stats.send_errors += 1;
                false
            }
        }
    }

    /// As `send_to`, with the IP TTL (IPv6: hop limit) `ttl` for this one datagram.
    pub fn send_to_ttl(&mut self, to: SocketAddr, bytes: &[u8], ttl: u8) -> bool {
        // A dual-stack socket sends to an IPv4 peer with the IPv4 TTL.
        let v4 = !self.local.is_ipv6() || (self.dual_stack && to.is_ipv4());
        let ttl = u32::from(ttl);
        let before = {
            let sock = socket2::SockRef::from(&self.sock);
            let before = if v4 {
                sock.ttl_v4()
            } else {
                sock.unicast_hops_v6()
            };
            let set = if v4 {
                sock.set_ttl_v4(ttl)
            } else {
                sock.set_unicast_hops_v6(ttl)
            };
            before.ok().filter(|_| set.is_ok())
        };
        let sent = self.send_to(to, bytes);
        if let Some(before) = before {
            let sock = socket2::SockRef::from(&self.sock);
            let _ = if v4 {
                sock.set_ttl_v4(before)
            } else {
                sock.set_unicast_hops_v6(before)
            };
        }
        sent
    }

    /// Appends every datagram already waiting (up to `MAX_RECV_BATCH`) to `out`, without
    /// blocking. Returns how many were appended.
    pub fn recv_all(&mut self, out: &mut Vec<(SocketAddr, Vec<u8>)>) -> Result<usize, NetError> {
        let mut n = 0;
        while n < MAX_RECV_BATCH {
            match self.sock.recv_from(&mut self.buf) {
                Ok((len, from)) => {
                    self.stats.packets_received += 1;
                    self.stats.bytes_received += len as u64;
                    out.push((unmap(from), self.buf[..len].to_vec()));
                    n += 1;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                // ICMP errors surfacing on some systems (e.g. Windows' WSAECONNRESET) concern
                // one earlier send, not this socket: keep reading.
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::ConnectionReset
                            | ErrorKind::ConnectionRefused
                            | ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(NetError::Io(e)),
            }
        }
        Ok(n)
    }

    /// Sleeps until a datagram is waiting or `timeout` passed; true if one is waiting.
    pub fn wait(&self, timeout: Duration) -> Result<bool, NetError> {
        wait(&self.sock, timeout)
    }

    /// A handle that waits for this socket to become readable without borrowing it, so one
    /// thread can wait while another holds the socket (see `netplay::feed`).
    pub fn waiter(&self) -> Result<SocketWaiter, NetError> {
        Ok(SocketWaiter {
            sock: self.sock.try_clone()?,
        })
    }
}

/// Waits for a socket's datagrams; receiving stays with the [`UdpSocket`].
#[derive(Debug)]
pub struct SocketWaiter {
    sock: std::net::UdpSocket,
}

impl SocketWaiter {
    /// Sleeps until a datagram is waiting or `timeout` passed; true if one is waiting.
    pub fn wait(&self, timeout: Duration) -> Result<bool, NetError> {
        wait(&self.sock, timeout)
    }
}

/// `sock` is readable within `timeout` (no wait at all for a zero timeout).
fn wait(sock: &std::net::UdpSocket, timeout: Duration) -> Result<bool, NetError> {
    if timeout.is_zero() {
        return Ok(false);
    }
    sys::wait_readable(sock, timeout).map_err(NetError::Io)
}

/// v4-mapped IPv6 addresses (from a dual-stack socket) as plain IPv4, so that one peer has
/// one address whichever socket saw it.
pub fn unmap(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => addr,
        },
        v4 => v4,
    }
}

#[cfg(unix)]
mod sys {
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    #[repr(C)]
    struct PollFd {
        fd: i32,
        events: i16,
        revents: i16,
    }
    const POLLIN: i16 = 0x1;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    type Nfds = std::ffi::c_ulong;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    type Nfds = std::ffi::c_uint;

    /// `struct timespec` (64-bit `time_t` and `long` on the 64-bit Linux targets).
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }

    extern "C" {
        // From the C library std already links; socket2/std expose no readiness wait with
        // sub-jiffy precision (SO_RCVTIMEO rounds to the kernel tick).
        #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
        fn ppoll(
            fds: *mut PollFd,
            nfds: Nfds,
            timeout: *const Timespec,
            sigmask: *const std::ffi::c_void,
        ) -> i32;
        #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
        fn poll(fds: *mut PollFd, nfds: Nfds, timeout: i32) -> i32;
    }

    /// Waits for `fd` with nanosecond precision: a conditioned datagram falls due, or a
    /// netplay peer's datagram is answered, when it should, not up to a millisecond later.
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    fn poll_one(fd: &mut PollFd, timeout: Duration) -> i32 {
        let ts = Timespec {
            tv_sec: timeout.as_secs().min(i64::MAX as u64) as i64,
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        // SAFETY: `fd` is one valid, exclusively borrowed pollfd and `ts` a valid timespec for
        // the whole call; a null sigmask leaves the signal mask alone.
        unsafe { ppoll(fd, 1, &ts, std::ptr::null()) }
    }

    /// Elsewhere: poll(2), rounding the timeout up to whole milliseconds.
    #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
    fn poll_one(fd: &mut PollFd, timeout: Duration) -> i32 {
        let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: `fd` is one valid, exclusively borrowed pollfd for the whole call.
        unsafe { poll(fd, 1, ms) }
    }

    pub fn wait_readable(sock: &std::net::UdpSocket, timeout: Duration) -> std::io::Result<bool> {
        let mut fd = PollFd {
            fd: sock.as_raw_fd(),
            events: POLLIN,
            revents: 0,
        };
        // The descriptor stays open for the call: `sock` is borrowed.
        let r = poll_one(&mut fd, timeout);
        if r < 0 {
            let e = std::io::Error::last_os_error();
            return if e.kind() == std::io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            };
        }
        Ok(r > 0)
    }
}

#[cfg(not(unix))]
mod sys {
    use std::io::ErrorKind;
    use std::time::Duration;

    /// Fallback: a blocking peek with a read timeout.
    pub fn wait_readable(sock: &std::net::UdpSocket, timeout: Duration) -> std::io::Result<bool> {
        sock.set_nonblocking(false)?;
        sock.set_read_timeout(Some(timeout))?;
        let mut byte = [0u8; 1];
        let r = sock.peek_from(&mut byte);
        sock.set_nonblocking(true)?;
        match r {
            Ok(_) => Ok(true),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(false),
            Err(_) => Ok(true),
        }
    }
}
