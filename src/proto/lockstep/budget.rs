//! The send budget: a token bucket that keeps each direction of each link under a byte rate,
//! UDP/IP headers included.
//!
//! Redundancy is what makes lockstep survive loss (every datagram repeats all unacknowledged
//! input), and sending more often makes a loss cost less (the next datagram comes sooner).
//! On a lossy link a side therefore wants to send every frame; on a long one its datagrams
//! grow with the unacknowledged input. The budget turns both into "as often as fits": a
//! datagram may leave while the bucket is not empty, and its size plus its UDP/IP header and
//! tag (32 bytes over IPv4, 52 over IPv6) is taken out, so the bucket may go below zero once.
//! Nothing is ever dropped: a
//! datagram that waits carries everything the skipped one would have, and a bit more.

use std::time::{Duration, Instant};

/// Bytes every datagram costs on the wire beyond what the protocol wrote, over IPv4: 28 of
/// IPv4 and UDP header and the 4-byte tag (`wire::link_overhead`; IPv6: 52; see
/// `Config::udp_ip_header`).
pub const UDP_IP_HEADER: usize = crate::wire::IPV4_UDP_OVERHEAD + crate::wire::keys::TAG_LEN;

/// A side never stays silent longer than this for want of budget: a huge round (8 players,
/// seconds of unacknowledged input) must not starve keepalives into a timeout.
pub const MAX_QUIET: Duration = Duration::from_millis(250);

/// How much unused budget may pile up, in seconds of the rate: enough for a short burst
/// (the first UPDATE of a round plus its segments), not for a flood.
const BURST_SECS: f64 = 0.05;

#[derive(Clone, Debug)]
pub struct SendBudget {
    /// Bytes per second; 0 means unlimited.
    rate: f64,
    /// UDP/IP header bytes each datagram costs besides its payload.
    header: usize,
    tokens: f64,
    at: Option<Instant>,
    last_spend: Option<Instant>,
}

impl SendBudget {
    pub fn new(bytes_per_sec: u32, header: usize) -> Self {
        let rate = f64::from(bytes_per_sec);
        SendBudget {
            rate,
            header,
            tokens: rate * BURST_SECS,
            at: None,
            last_spend: None,
        }
    }

    fn refill(&mut self, now: Instant) {
        if let Some(at) = self.at {
            let dt = now.saturating_duration_since(at).as_secs_f64();
            self.tokens = (self.tokens + dt * self.rate).min(self.rate * BURST_SECS);
        }
        self.at = Some(self.at.map_or(now, |a| a.max(now)));
    }

    /// True if a datagram may leave now.
    pub fn allows(&mut self, now: Instant) -> bool {
        if self.rate == 0.0 {
            return true;
        }
        self.refill(now);
        self.tokens > 0.0 || self.last_spend.is_some_and(|t| now >= t + MAX_QUIET)
    }

    /// Changes the header bytes counted per datagram (the link turned out to be IPv6).
    pub fn set_header(&mut self, header: usize) {
        self.header = header;
    }

    /// Takes a datagram of `bytes` (without the UDP/IP header) out of the bucket.
    pub fn spend(&mut self, now: Instant, bytes: usize) {
        if self.rate == 0.0 {
            return;
        }
        self.refill(now);
        self.tokens -= (bytes + self.header) as f64;
        self.last_spend = Some(now);
    }

    /// The earliest time a datagram may leave, not before `t`.
    pub fn ready_at(&self, t: Instant) -> Instant {
        let Some(at) = self.at.filter(|_| self.rate > 0.0 && self.tokens <= 0.0) else {
            return t;
        };
        // A microsecond past the refill, so the bucket is strictly above zero then.
        let ready =
            at + Duration::from_secs_f64(-self.tokens / self.rate) + Duration::from_micros(1);
        let floor = self.last_spend.map_or(ready, |l| l + MAX_QUIET);
        ready.min(floor).max(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_the_rate_and_never_blocks_for_long() {
        // Over IPv4 (28 bytes of header) and IPv6 (48): the rate counts every header byte.
        for header in [UDP_IP_HEADER, 48] {
            let t0 = Instant::now();
            let mut b = SendBudget::new(2400, header);
            // Try to send a 50-byte datagram every millisecond for 10 s.
            let (mut sent, mut count) = (0usize, 0usize);
            let mut longest_wait = Duration::ZERO;
            let mut last = t0;
            for ms in 0..10_000u64 {
                let now = t0 + Duration::from_millis(ms);
                if b.allows(now) {
                    b.spend(now, 50);
                    sent += 50 + header;
                    count += 1;
                    longest_wait = longest_wait.max(now - last);
                    last = now;
                } else {
                    assert!(b.ready_at(now) > now);
                }
            }
            // 2400 B/s for 10 s, plus the initial burst and one datagram of overdraft.
            assert!(sent <= 24_000 + 120 + 50 + header, "{header}: {sent}");
            assert!(sent >= 23_500, "{header}: {sent}");
            // Fewer datagrams with the bigger header: the 10 s and the burst over 78 (98) bytes.
            assert!(
                count.abs_diff(24_120 / (50 + header)) <= 2,
                "{header}: {count}"
            );
            // 78 (98) bytes at 2400 B/s is about 33 (41) ms between datagrams.
            let gap = Duration::from_secs_f64((50 + header) as f64 / 2400.0);
            assert!(
                longest_wait <= gap + Duration::from_millis(1),
                "{header}: {longest_wait:?}"
            );
            // ready_at says when: a datagram is allowed exactly then.
            let now = t0 + Duration::from_millis(10_000);
            let at = b.ready_at(now);
            assert!(b.allows(at));
        }
    }

    #[test]
    fn huge_datagrams_wait_at_most_max_quiet() {
        let t0 = Instant::now();
        let mut b = SendBudget::new(2400, UDP_IP_HEADER);
        b.spend(t0, 4 * 1200);
        assert!(!b.allows(t0 + Duration::from_millis(100)));
        assert_eq!(b.ready_at(t0), t0 + MAX_QUIET);
        assert!(b.allows(t0 + MAX_QUIET));
    }

    #[test]
    fn zero_means_unlimited() {
        let t0 = Instant::now();
        let mut b = SendBudget::new(0, UDP_IP_HEADER);
        for _ in 0..1000 {
            assert!(b.allows(t0));
            b.spend(t0, 1200);
        }
        assert_eq!(b.ready_at(t0), t0);
    }
}
