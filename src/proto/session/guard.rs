//! A public host's defences against a hostile internet, shared by a direct host
//! (`HostSession`) and a dedicated server (`serve::Rooms`):
//!
//! - [`Cookies`]: stateless proof of address, QUIC's Retry (RFC 9000, section 8.1.2). A
//!   Hello or Open without a cookie made for its source address gets a `Retry` carrying one,
//!   and nothing else: no seat, no password check, no state. Only an address that receives
//!   what is sent to it can echo the cookie, so an attacker forging a victim's address gets
//!   one small datagram sent there per padded (1200-byte) datagram it sent. Nothing
//!   room-wide (a session id, a room's key) ever counts as proof.
//! - [`prefix`]: what per-address limits count by, an IPv4 address or an IPv6 /64 (whoever
//!   has one IPv6 address has the 2^64 around it).
//! - [`Limiter`]: a per-prefix rate (a burst, then one every `every`), for password
//!   attempts and room openings.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// Bytes of a cookie.
pub const COOKIE_LEN: usize = 16;
/// A cookie is good in the period it was made in and the next one: between one and two of
/// these (a joiner echoes it within a round trip).
pub const COOKIE_PERIOD: Duration = Duration::from_secs(30);
/// Prefixes a [`Limiter`] remembers at once; past it, new prefixes are refused until old
/// ones are swept (a flood from many prefixes cannot grow it without bound).
const MAX_TRACKED: usize = 65_536;

/// Stateless address-validation cookies: an HMAC (keyed blake3) over the address and the
/// time period with a secret only this host knows.
#[derive(Debug, Clone)]
pub struct Cookies {
    secret: [u8; 32],
    /// Periods are counted from the first time a cookie is made or checked (a sans-IO
    /// machine has no wall clock; the secret dies with the process anyway).
    epoch: Option<Instant>,
}

impl Cookies {
    /// Cookies keyed with `secret` (random, never sent).
    pub fn new(secret: [u8; 32]) -> Cookies {
        Cookies {
            secret,
            epoch: None,
        }
    }

    fn period(&mut self, now: Instant) -> u64 {
        let epoch = *self.epoch.get_or_insert(now);
        (now.saturating_duration_since(epoch).as_secs() / COOKIE_PERIOD.as_secs()) + 1
    }

    fn mac(&self, addr: SocketAddr, period: u64) -> [u8; COOKIE_LEN] {
        let ip = match addr.ip() {
            IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            IpAddr::V6(v6) => v6.octets(),
        };
        let mut data = [0u8; 16 + 2 + 8];
        data[..16].copy_from_slice(&ip);
        data[16..18].copy_from_slice(&addr.port().to_le_bytes());
        data[18..].copy_from_slice(&period.to_le_bytes());
        let hash = blake3::keyed_hash(&self.secret, &data);
        let mut out = [0; COOKIE_LEN];
        out.copy_from_slice(&hash.as_bytes()[..COOKIE_LEN]);
        out
    }

    /// A cookie for `addr`, good for one to two `COOKIE_PERIOD`s.
    pub fn make(&mut self, now: Instant, addr: SocketAddr) -> [u8; COOKIE_LEN] {
        let period = self.period(now);
        self.mac(addr, period)
    }

    /// Whether `cookie` was made for `addr` in this period or the last.
    pub fn check(&mut self, now: Instant, addr: SocketAddr, cookie: &[u8; COOKIE_LEN]) -> bool {
        let period = self.period(now);
        [period, period - 1]
            .into_iter()
            .any(|p| p > 0 && constant_time_eq(&self.mac(addr, p), cookie))
    }
}

fn constant_time_eq(a: &[u8; COOKIE_LEN], b: &[u8; COOKIE_LEN]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What per-address limits count by: an IPv4 address (an IPv4-mapped IPv6 address counts
/// as its IPv4 one), or an IPv6 address's /64.
pub fn prefix(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// A rate per address prefix: `burst` at once, then one every `every` (a generic cell
/// rate: each prefix's theoretical arrival time moves on by `every` per event taken).
#[derive(Debug, Clone)]
pub struct Limiter {
    every: Duration,
    burst: u32,
    tat: HashMap<IpAddr, Instant>,
}

impl Limiter {
    /// `burst` events at once, then one every `every`, per prefix.
    pub fn new(burst: u32, every: Duration) -> Limiter {
        Limiter {
            every,
            burst: burst.max(1),
            tat: HashMap::new(),
        }
    }

    /// Takes one event for `ip`'s prefix; `Err(wait)` if over the rate (nothing taken), with
    /// how long until one is allowed.
    pub fn take(&mut self, now: Instant, ip: IpAddr) -> Result<(), Duration> {
        let key = prefix(ip);
        if !self.tat.contains_key(&key) && self.tat.len() >= MAX_TRACKED {
            self.sweep(now);
            if self.tat.len() >= MAX_TRACKED {
                return Err(self.every);
            }
        }
        let tat = self.tat.get(&key).copied().unwrap_or(now).max(now);
        let next = tat + self.every;
        let window = self.every * self.burst;
        if next > now + window {
            return Err(next - (now + window));
        }
        self.tat.insert(key, next);
        Ok(())
    }

    /// Forgets prefixes back at their full burst.
    pub fn sweep(&mut self, now: Instant) {
        self.tat.retain(|_, t| *t > now);
    }

    /// Prefixes remembered.
    pub fn len(&self) -> usize {
        self.tat.len()
    }

    /// No prefix remembered.
    pub fn is_empty(&self) -> bool {
        self.tat.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_cookie_is_good_for_its_address_only_and_expires() {
        let mut c = Cookies::new([7; 32]);
        let t0 = Instant::now();
        let a = addr("10.0.0.1:4000");
        let cookie = c.make(t0, a);
        assert!(c.check(t0, a, &cookie));
        assert!(c.check(t0 + COOKIE_PERIOD, a, &cookie));
        assert!(!c.check(t0 + COOKIE_PERIOD * 2, a, &cookie));
        assert!(!c.check(t0, addr("10.0.0.1:4001"), &cookie));
        assert!(!c.check(t0, addr("10.0.0.2:4000"), &cookie));
        assert!(!Cookies::new([8; 32]).check(t0, a, &cookie));
    }

    #[test]
    fn prefixes_are_ipv4_addresses_and_ipv6_slash_64s() {
        let p = |s: &str| prefix(s.parse().unwrap());
        assert_eq!(p("192.0.2.1"), p("192.0.2.1"));
        assert_ne!(p("192.0.2.1"), p("192.0.2.2"));
        assert_eq!(p("2001:db8:1:2::1"), p("2001:db8:1:2:ffff::9"));
        assert_ne!(p("2001:db8:1:2::1"), p("2001:db8:1:3::1"));
        assert_eq!(p("::ffff:192.0.2.1"), p("192.0.2.1"));
    }

    #[test]
    fn a_limiter_allows_a_burst_then_one_per_period() {
        let mut l = Limiter::new(5, Duration::from_secs(12));
        let t0 = Instant::now();
        let ip: IpAddr = "2001:db8::1".parse().unwrap();
        let same_64: IpAddr = "2001:db8::2".parse().unwrap();
        for _ in 0..5 {
            assert!(l.take(t0, ip).is_ok());
        }
        assert!(l.take(t0, same_64).is_err());
        assert!(l.take(t0, "2001:db8:0:1::1".parse().unwrap()).is_ok());
        let mut allowed = 5;
        for s in 1..=60 {
            if l.take(t0 + Duration::from_secs(s), ip).is_ok() {
                allowed += 1;
            }
        }
        assert_eq!(allowed, 10, "5 at once, then 5 a minute");
        l.sweep(t0 + Duration::from_secs(200));
        assert!(l.is_empty());
    }
}
