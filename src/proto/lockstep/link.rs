//! The link to one peer, as either end sees it: sequence numbers and the record of each
//! datagram sent until it is acknowledged, the acks' references, timestamps and their
//! echoes (RTT), the loss of what arrives, the send budget, traffic and silence. The
//! [`Client`](super::Client) has one to its server; the [`Server`](super::Server) one to
//! each player and spectator.
//!
//! What a datagram carried beyond its head (samples, frames, notices, checksums) is the
//! owner's: it rides in the record type `R` and comes back when the datagram is
//! acknowledged. Must not import `client` or `server`: both ends stand on it.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::budget::SendBudget;
use super::frame::seq_newer;
use super::msg::{self, AckRefs, Echo, LinkHeader};
use super::pause::{across_silence, LINK_SILENCE};
use super::rtt::{LossMeter, RttEstimator};
use super::stats::Traffic;

/// Sent-datagram records kept while unacknowledged.
const MAX_SENT_RECORDS: usize = 1024;

/// A datagram sent and not acknowledged yet: its head's numbers and what it carried.
#[derive(Clone, Copy, Debug)]
struct Sent<R> {
    seq: u16,
    /// The ack it carried.
    ack: Option<u16>,
    what: R,
}

/// How long the other end has been silent, against the limits (see [`PeerLink::silence`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Silence {
    /// Heard recently enough, or warned of already.
    Heard,
    /// Silent for this long, past the warning: raise it (once per silence).
    Warn(Duration),
    /// Silent for this long, past the limit: the other end is gone.
    Gone(Duration),
}

/// One end's link to the other (see the module doc). `R` is what a sent datagram carried.
#[derive(Debug)]
pub(super) struct PeerLink<R> {
    /// Timestamps count from here.
    epoch: Instant,
    pub send_seq: u16,
    sent: VecDeque<Sent<R>>,
    /// Newest sequence number received (`None` until a valid datagram came).
    pub recv_seq: Option<u16>,
    /// The newest timestamp received and not echoed yet, and when it arrived.
    echo: Option<(u16, Instant)>,
    /// For writing our acks short and reading the other side's.
    pub acks: AckRefs,
    pub rtt: RttEstimator,
    /// Loss of the datagrams that arrive (from their sequence numbers).
    pub loss: LossMeter,
    pub last_heard: Instant,
    /// A silence warning was raised since the last datagram.
    pub warned: bool,
    /// When the other end's last silence of `pause::LINK_SILENCE` ended (see `pause`).
    silence_end: Option<Instant>,
    pub last_send: Option<Instant>,
    pub budget: SendBudget,
    /// UDP/IP header bytes of a datagram on this link (0 in memory).
    pub header: usize,
    pub traffic: Traffic,
}

impl<R: Copy> PeerLink<R> {
    /// A link heard of at `now` (its silence counts from there), sending under
    /// `bytes_per_sec` (0 = no limit), its datagrams costing `header` bytes more.
    pub fn new(epoch: Instant, now: Instant, bytes_per_sec: u32, header: usize) -> Self {
        PeerLink {
            epoch,
            send_seq: 0,
            sent: VecDeque::new(),
            recv_seq: None,
            echo: None,
            acks: AckRefs::default(),
            rtt: RttEstimator::default(),
            loss: LossMeter::default(),
            last_heard: now,
            warned: false,
            silence_end: None,
            last_send: None,
            budget: SendBudget::new(bytes_per_sec, header),
            header,
            traffic: Traffic::default(),
        }
    }

    /// The reference the other side's short acks are read against.
    pub fn ack_reference(&self) -> u16 {
        self.acks.reference(self.send_seq)
    }

    /// A received head the other end can have sent.
    pub fn plausible(&self, head: &LinkHeader) -> bool {
        head.plausible(self.recv_seq, self.send_seq, self.last_send.is_some())
    }

    /// A datagram of `len` bytes arrived, valid or not.
    pub fn count_received(&mut self, len: usize) {
        self.traffic.received(len, self.header);
    }

    /// A valid datagram arrived: the other end is heard. The first ends no silence: before
    /// it the other end was not running yet (or had nothing to say).
    pub fn heard(&mut self, now: Instant) {
        let gap = now.saturating_duration_since(self.last_heard) >= LINK_SILENCE;
        if gap && self.recv_seq.is_some() {
            self.silence_end = Some(now);
        }
        self.last_heard = now;
        self.warned = false;
    }

    /// Takes a heard datagram's `head`: if it is the newest, its sequence number (loss),
    /// timestamp and echo (RTT) count. True if newest: only then may its ack
    /// ([`acked`](Self::acked)) and its contents be taken.
    pub fn received(&mut self, now: Instant, head: &LinkHeader) -> bool {
        let newest = self.recv_seq.is_none_or(|r| seq_newer(head.seq, r));
        if !newest {
            return false;
        }
        if let Some(prev) = self.recv_seq {
            self.loss.arrived(head.seq.wrapping_sub(prev));
        }
        self.recv_seq = Some(head.seq);
        if let Some(ts) = head.ts {
            self.echo = Some((ts, now));
        }
        // Only the newest datagram gives an RTT sample: a late duplicate would inflate it.
        if let Some(e) = head.echo {
            if let Some(rtt) = rtt_sample(self.epoch, now, e, self.silence_end) {
                self.rtt.update(rtt);
            }
        }
        true
    }

    /// The other end acknowledged datagram `ack`: what it carried, if its record is still
    /// kept. The records of older datagrams go (they were lost or their acks were).
    pub fn acked(&mut self, ack: u16) -> Option<R> {
        self.acks.received(ack);
        while let Some(rec) = self.sent.front().copied() {
            if rec.seq == ack {
                self.acks.acknowledged(rec.ack);
                self.sent.pop_front();
                return Some(rec.what);
            }
            if !seq_newer(ack, rec.seq) {
                return None; // an old ack
            }
            self.sent.pop_front();
        }
        None
    }

    /// The head of the next datagram (its sequence number taken; see [`head`]).
    pub fn next_head(&mut self, now: Instant) -> LinkHeader {
        let seq = self.send_seq;
        self.send_seq = self.send_seq.wrapping_add(1);
        let rtt_known = self.rtt.srtt().is_some();
        head(
            seq,
            self.recv_seq,
            self.epoch,
            now,
            &mut self.echo,
            rtt_known,
        )
    }

    /// The datagram with `head` and `bytes` bytes, carrying `what`, leaves at `now`.
    pub fn sent(&mut self, now: Instant, head: &LinkHeader, what: R, bytes: usize) {
        self.sent.push_back(Sent {
            seq: head.seq,
            ack: head.ack,
            what,
        });
        if self.sent.len() > MAX_SENT_RECORDS {
            self.sent.pop_front();
        }
        self.budget.spend(now, bytes);
        self.traffic.sent(bytes, self.header);
    }

    /// When a silence warning is due, if none was raised since the last datagram.
    pub fn warn_at(&self, warn_after: Duration) -> Option<Instant> {
        (!self.warned).then(|| self.last_heard + warn_after)
    }

    /// Judges the silence at `now`: gone past `limit`, warned of (once) past `warn_after`.
    pub fn silence(&mut self, now: Instant, limit: Duration, warn_after: Duration) -> Silence {
        let silent = now.saturating_duration_since(self.last_heard);
        if silent >= limit {
            Silence::Gone(silent)
        } else if silent >= warn_after && !self.warned {
            self.warned = true;
            Silence::Warn(silent)
        } else {
            Silence::Heard
        }
    }
}

/// The head of datagram `seq`: the ack, a timestamp in every `TS_EVERY`-th datagram (in
/// every one while the sender has no round trip yet: its first echo may be lost, or read
/// too late to count), and the echo of the newest timestamp received, which is taken (each
/// is echoed once).
fn head(
    seq: u16,
    ack: Option<u16>,
    epoch: Instant,
    now: Instant,
    pending_echo: &mut Option<(u16, Instant)>,
    rtt_known: bool,
) -> LinkHeader {
    LinkHeader {
        seq,
        ack,
        ts: (!rtt_known || seq.is_multiple_of(msg::TS_EVERY)).then(|| ms16(epoch, now)),
        echo: pending_echo.take().and_then(|(ts, at)| echo(ts, at, now)),
    }
}

/// Milliseconds since `epoch`, wrapping at 16 bits (the wire timestamp).
fn ms16(epoch: Instant, now: Instant) -> u16 {
    now.saturating_duration_since(epoch).as_millis() as u16
}

/// The echo of a timestamp received at `at`, if it was held short enough to fit a byte.
fn echo(ts: u16, at: Instant, now: Instant) -> Option<Echo> {
    let hold = now.saturating_duration_since(at).as_millis();
    u8::try_from(hold)
        .ok()
        .filter(|&h| h < u8::MAX)
        .map(|hold_ms| Echo { ts, hold_ms })
}

/// The RTT an echo reveals: now - echoed timestamp - hold time. `None` if implausible, or
/// if the timestamp was sent before the peer's last silence ended at `silence_end` (either
/// side may have been stopped meanwhile: see `pause`).
fn rtt_sample(
    epoch: Instant,
    now: Instant,
    e: Echo,
    silence_end: Option<Instant>,
) -> Option<Duration> {
    let ms = ms16(epoch, now)
        .wrapping_sub(e.ts)
        .wrapping_sub(u16::from(e.hold_ms));
    let rtt = Duration::from_millis(u64::from(ms));
    let sent_ago = rtt + Duration::from_millis(u64::from(e.hold_ms));
    (ms < 30_000 && !across_silence(now, sent_ago, silence_end)).then_some(rtt)
}
