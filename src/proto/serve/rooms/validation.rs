//! Proof of address and anti-amplification: which addresses showed they receive what is
//! sent to them (they echoed a cookie made for them, or are in a room, or upload a room's
//! state), the round trips those echoes showed, and for every other address the bytes it
//! sent, which bound what it is sent (`queue`, which every datagram of the rooms passes).
//! Holds no room; imports nothing of the other parts of [`Rooms`] and
//! nothing of the rooms' endpoints.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::session::guard::COOKIE_LEN;
use crate::session::msg::Msg;
use crate::wire::Transmit;

use super::Rooms;

/// Unvalidated addresses whose bytes are counted for the anti-amplification rule at once;
/// past this the oldest count is forgotten (its address then gets nothing until it sends
/// again).
const MAX_UNVALIDATED: usize = 65_536;
/// Addresses that proved they receive at their address (echoed a cookie) remembered at
/// once, and for how long: their Hellos and Opens need no new cookie meanwhile.
const MAX_VALIDATED: usize = 65_536;
pub(super) const VALIDATED_FOR: Duration = Duration::from_secs(600);

impl Rooms {
    /// Whether `from` proved its address: it echoed `cookie`, made for it, now or lately.
    /// If not, it is sent a Retry with one (no larger than the padded datagram it sent) and
    /// nothing else.
    pub(super) fn proven(
        &mut self,
        now: Instant,
        from: SocketAddr,
        cookie: &[u8; COOKIE_LEN],
    ) -> bool {
        if self.is_validated(from) {
            return true;
        }
        if self.cookies.check(now, from, cookie) {
            if let Some(sent) = self.retried.remove(&from) {
                if self.rtts.len() >= MAX_VALIDATED {
                    self.rtts.clear();
                }
                self.rtts.insert(from, now.saturating_duration_since(sent));
            }
            if self.validated.len() >= MAX_VALIDATED {
                self.validated
                    .retain(|_, t| now < *t + Duration::from_secs(30));
            }
            if self.validated.len() < MAX_VALIDATED {
                self.validated.insert(from, now);
            }
            return true;
        }
        self.stats.retries += 1;
        if self.retried.len() >= MAX_VALIDATED {
            self.retried.clear();
        }
        self.retried.insert(from, now);
        let cookie = self.cookies.make(now, from);
        self.send(from, Msg::Retry(cookie).encode(0));
        false
    }

    /// Whether `addr` showed it receives what is sent to it: it echoed a cookie, it is a
    /// room's player or spectator (admitted after one), a hosted room's host or a member
    /// that echoed one (not one on probation), or it uploads a room's state (its Open
    /// echoed one).
    pub(super) fn is_validated(&self, addr: SocketAddr) -> bool {
        self.validated.contains_key(&addr)
            || self.by_addr.contains_key(&addr)
            || self.hosted_proven(addr)
            || self.uploads.contains_key(&addr)
    }

    /// Queues a datagram if the anti-amplification rule lets it go to its address: judged
    /// now, while the address is known to be validated or not.
    pub(super) fn queue(&mut self, t: Transmit) {
        if self.allowed(&t) {
            self.out.push_back(t);
        }
    }

    pub(super) fn allowed(&mut self, t: &Transmit) -> bool {
        let ok = self.is_validated(t.to) || self.spend_unvalidated(t.to, t.bytes.len());
        if !ok {
            self.stats.held_unvalidated += 1;
        }
        ok
    }

    pub(super) fn count_unvalidated(&mut self, from: SocketAddr, len: usize) {
        if !self.unvalidated.contains_key(&from) {
            if self.unvalidated.len() >= MAX_UNVALIDATED {
                if let Some(old) = self.unvalidated_order.pop_front() {
                    self.unvalidated.remove(&old);
                }
            }
            self.unvalidated_order.push_back(from);
        }
        self.unvalidated.entry(from).or_default().0 += len as u64;
    }

    /// Whether `len` more bytes to the unvalidated `to` stay within what it sent.
    fn spend_unvalidated(&mut self, to: SocketAddr, len: usize) -> bool {
        let Some((got, sent)) = self.unvalidated.get_mut(&to) else {
            return false;
        };
        if *sent + len as u64 > *got {
            return false;
        }
        *sent += len as u64;
        true
    }
}
