//! Reliable transfer of the packed start payload over lossy datagrams.
//!
//! The sender numbers every transmission (`seq`) and keeps a log of what is in flight. The
//! receiver acks the chunks it has (cumulative index + bitmap) and the `seq` that came last,
//! every `ACK_EVERY` chunks or after `ACK_DELAY`. A chunk counts as lost when a later
//! transmission got through and it is older than an RTT-derived delay, or, when nothing later
//! arrives, after a probe timeout that backs off. Only lost chunks are resent (twice in the
//! tail, where each loss costs a round). A window that grows per acked chunk, halves when over
//! half of a round is lost and restarts small after repeated probe timeouts, plus pacing over
//! the smoothed RTT, keeps a burst from overflowing the receiver's socket buffer.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::msg::{StateAck, MAX_ACK_BITMAP};

/// How far a start-state transfer got, in packed bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Bytes through (acknowledged by the receiver, or received).
    pub done: usize,
    /// Bytes in all; 0 before the transfer's size is known.
    pub total: usize,
}

/// The sender never runs further ahead of the receiver's cumulative ack than one bitmap.
pub const MAX_SPAN: u32 = (MAX_ACK_BITMAP * 8) as u32;
/// The receiver acks at least this often (in chunks)...
pub const ACK_EVERY: u32 = 8;
/// ... and no later than this after an unacked chunk arrived.
pub const ACK_DELAY: Duration = Duration::from_millis(5);
const INITIAL_WINDOW: u32 = 32;
const MIN_WINDOW: u32 = 8;
const MAX_WINDOW: u32 = 1024;
const INITIAL_RTT: Duration = Duration::from_millis(100);
const MIN_LOSS_DELAY: Duration = Duration::from_millis(10);
const MAX_LOSS_DELAY: Duration = Duration::from_secs(2);
/// Pacing floor: caps one transfer near 100 MB/s so loopback bursts stay drainable.
const MIN_PACING: Duration = Duration::from_micros(10);
/// Chunks that may go out back to back after an idle period.
const BURST: u32 = 16;
const MAX_BACKOFF: u32 = 5;

/// Smoothed round-trip time (RFC 6298 weights).
#[derive(Clone, Copy, Debug)]
pub struct Rtt {
    srtt: Duration,
    rttvar: Duration,
    latest: Duration,
    sampled: bool,
}

impl Default for Rtt {
    fn default() -> Self {
        Rtt {
            srtt: INITIAL_RTT,
            rttvar: INITIAL_RTT / 2,
            latest: INITIAL_RTT,
            sampled: false,
        }
    }
}

impl Rtt {
    pub fn sample(&mut self, rtt: Duration) {
        self.latest = rtt;
        if !self.sampled {
            self.sampled = true;
            self.srtt = rtt;
            self.rttvar = rtt / 2;
            return;
        }
        let diff = self.srtt.abs_diff(rtt);
        self.rttvar = (self.rttvar * 3 + diff) / 4;
        self.srtt = (self.srtt * 7 + rtt) / 8;
    }

    pub fn smoothed(&self) -> Duration {
        self.srtt
    }

    /// The smoothed RTT once a real sample came in (not the initial guess).
    pub fn measured(&self) -> Option<Duration> {
        self.sampled.then_some(self.srtt)
    }

    /// How long a transmission may stay unacked once a later one got through.
    fn loss_delay(&self) -> Duration {
        let base = (self.srtt.max(self.latest) * 9 / 8).max(self.srtt + self.rttvar * 3);
        (base + ACK_DELAY).clamp(MIN_LOSS_DELAY, MAX_LOSS_DELAY)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ChunkState {
    Unsent,
    InFlight(u32),
    Lost,
    Acked,
}

/// Host side of one joiner's transfer.
#[derive(Debug)]
pub struct Sender {
    data: Arc<[u8]>,
    chunk_size: usize,
    state: Vec<ChunkState>,
    acked: u32,
    /// First chunk not yet acked.
    acked_below: u32,
    next_new: u32,
    lost: BTreeSet<u32>,
    /// A tail resend to send a second copy of.
    again: Option<u32>,
    /// (seq, index, sent at) in seq order; entries whose chunk moved on are skipped lazily.
    log: VecDeque<(u32, u32, Instant)>,
    next_seq: u32,
    /// Highest seq known to have arrived.
    highest_seq: u32,
    sampled_seq: u32,
    in_flight: u32,
    window: u32,
    backoff: u32,
    rtt: Rtt,
    next_send_at: Instant,
    round_end: Instant,
    round_acked: u32,
    round_lost: u32,
    verified: bool,
    pub sent: u64,
    pub resent: u64,
}

impl Sender {
    pub fn new(now: Instant, data: Arc<[u8]>, chunk_size: usize, rtt: Rtt) -> Sender {
        let count = data.len().div_ceil(chunk_size);
        Sender {
            data,
            chunk_size,
            state: vec![ChunkState::Unsent; count],
            acked: 0,
            acked_below: 0,
            next_new: 0,
            lost: BTreeSet::new(),
            again: None,
            log: VecDeque::new(),
            next_seq: 1,
            highest_seq: 0,
            sampled_seq: 0,
            in_flight: 0,
            window: INITIAL_WINDOW,
            backoff: 0,
            rtt,
            next_send_at: now,
            round_end: now + rtt.smoothed(),
            round_acked: 0,
            round_lost: 0,
            verified: false,
            sent: 0,
            resent: 0,
        }
    }

    pub fn count(&self) -> u32 {
        self.state.len() as u32
    }

    pub fn acked(&self) -> u32 {
        self.acked
    }

    pub fn rtt(&self) -> &Rtt {
        &self.rtt
    }

    /// Every chunk acked and the receiver verified the payload hash.
    pub fn is_complete(&self) -> bool {
        self.verified && self.acked == self.count()
    }

    pub fn chunk(&self, index: u32) -> &[u8] {
        let start = index as usize * self.chunk_size;
        &self.data[start..(start + self.chunk_size).min(self.data.len())]
    }

    fn pacing_interval(&self) -> Duration {
        (self.rtt.smoothed() / self.window.max(1)).max(MIN_PACING)
    }

    fn next_to_send(&self) -> Option<u32> {
        if let Some(&i) = self.lost.first() {
            return Some(i);
        }
        let limit = self.acked_below.saturating_add(MAX_SPAN).min(self.count());
        (self.next_new < limit).then_some(self.next_new)
    }

    /// The next chunk to transmit now as (index, seq), if the window and pacing allow one.
    pub fn poll_chunk(&mut self, now: Instant) -> Option<(u32, u32)> {
        if now < self.next_send_at {
            return None;
        }
        let again = self
            .again
            .take()
            .filter(|&i| matches!(self.state[i as usize], ChunkState::InFlight(_)));
        let index = match again {
            Some(i) => {
                // Second copy of a tail resend: replaces the first as the live transmission.
                self.in_flight -= 1;
                self.resent += 1;
                i
            }
            None => {
                if self.in_flight >= self.window {
                    return None;
                }
                let i = self.next_to_send()?;
                if self.state[i as usize] == ChunkState::Lost {
                    self.lost.remove(&i);
                    self.resent += 1;
                    // In the tail every loss costs a whole round: send resends twice.
                    if self.next_new == self.count() {
                        self.again = Some(i);
                    }
                } else {
                    self.next_new += 1;
                }
                i
            }
        };
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1).max(1);
        self.state[index as usize] = ChunkState::InFlight(seq);
        self.log.push_back((seq, index, now));
        self.in_flight += 1;
        self.sent += 1;
        let interval = self.pacing_interval();
        let floor = now.checked_sub(interval * BURST).unwrap_or(now);
        self.next_send_at = self.next_send_at.max(floor) + interval;
        Some((index, seq))
    }

    fn mark_acked(&mut self, index: u32) -> bool {
        let Some(state) = self.state.get_mut(index as usize) else {
            return false;
        };
        match *state {
            // A peer cannot have what was never sent: ignore such claims.
            ChunkState::Acked | ChunkState::Unsent => return false,
            ChunkState::InFlight(_) => self.in_flight -= 1,
            ChunkState::Lost => {
                self.lost.remove(&index);
            }
        }
        *state = ChunkState::Acked;
        self.acked += 1;
        true
    }

    pub fn handle_ack(&mut self, now: Instant, ack: &StateAck) {
        let count = self.count();
        if ack.cum > count || ack.latest_seq >= self.next_seq {
            return;
        }
        let mut newly = 0;
        for i in self.acked_below..ack.cum {
            newly += self.mark_acked(i) as u32;
        }
        for (byte_i, byte) in ack.bitmap.iter().enumerate() {
            for bit in 0..8 {
                if byte & (1 << bit) != 0 {
                    let index = ack.cum as u64 + byte_i as u64 * 8 + bit;
                    if index < count as u64 {
                        newly += self.mark_acked(index as u32) as u32;
                    }
                }
            }
        }
        while self.acked_below < count && self.state[self.acked_below as usize] == ChunkState::Acked
        {
            self.acked_below += 1;
        }
        // The latest arrival is a fair RTT sample; the highest seq would favour datagrams
        // that overtook others and bias the RTT low under jitter.
        if ack.latest_seq != self.sampled_seq {
            self.sampled_seq = ack.latest_seq;
            if let Some(&(_, _, at)) = self.log_entry(ack.latest_seq) {
                self.rtt.sample(now.saturating_duration_since(at));
            }
        }
        self.highest_seq = self.highest_seq.max(ack.latest_seq);
        if newly > 0 {
            self.backoff = 0;
            self.round_acked += newly;
            // Random loss is normal on the links this runs over: keep growing through it.
            self.window = (self.window + newly).min(MAX_WINDOW);
        }
        self.verified |= ack.verified && self.acked == count;
        self.end_round(now);
        self.detect_losses(now);
    }

    fn log_entry(&self, seq: u32) -> Option<&(u32, u32, Instant)> {
        let first = self.log.front()?.0;
        self.log
            .get(seq.checked_sub(first)? as usize)
            .filter(|e| e.0 == seq)
    }

    fn end_round(&mut self, now: Instant) {
        if now < self.round_end {
            return;
        }
        if self.round_lost > self.round_acked {
            self.window = (self.window / 2).max(MIN_WINDOW);
        }
        self.round_acked = 0;
        self.round_lost = 0;
        self.round_end = now + self.rtt.smoothed();
    }

    fn is_live(&self, seq: u32, index: u32) -> bool {
        self.state[index as usize] == ChunkState::InFlight(seq)
    }

    /// Drops acked or superseded entries from the front of the log, keeping every entry past
    /// `highest_seq`: a superseded copy may still be the one that arrives, and its ack is an
    /// RTT sample (on a 2 s round trip the only one: every chunk is resent before its ack).
    fn trim_log(&mut self) {
        while let Some(&(seq, index, _)) = self.log.front() {
            if self.is_live(seq, index) || seq > self.highest_seq {
                break;
            }
            self.log.pop_front();
        }
    }

    fn threshold(&self, seq: u32) -> Duration {
        if seq < self.highest_seq {
            self.rtt.loss_delay()
        } else {
            self.rtt.loss_delay() * (2 << self.backoff)
        }
    }

    /// Marks timed-out transmissions lost so that `poll_chunk` resends them.
    pub fn detect_losses(&mut self, now: Instant) {
        self.trim_log();
        let mut probe = false;
        let mut i = 0;
        while let Some(&(seq, index, at)) = self.log.get(i) {
            i += 1;
            if !self.is_live(seq, index) {
                continue;
            }
            if now < at + self.threshold(seq) {
                break;
            }
            probe |= seq >= self.highest_seq;
            self.state[index as usize] = ChunkState::Lost;
            self.lost.insert(index);
            self.in_flight -= 1;
            self.round_lost += 1;
        }
        if probe {
            // Nothing later got through: back off, and restart small if it happens again.
            self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
            if self.backoff >= 2 {
                self.window = MIN_WINDOW;
            }
        }
        self.trim_log();
    }

    /// When `detect_losses` or `poll_chunk` next has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let loss = self
            .log
            .iter()
            .find(|&&(seq, index, _)| self.is_live(seq, index))
            .map(|&(seq, _, at)| at + self.threshold(seq));
        let more = self.in_flight < self.window && self.next_to_send().is_some();
        let send = (more || self.again.is_some()).then_some(self.next_send_at);
        match (loss, send) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Joiner side: reassembles the packed payload and builds acks.
#[derive(Debug)]
pub struct Receiver {
    buf: Vec<u8>,
    chunk_size: usize,
    have: Vec<bool>,
    have_count: u32,
    cum: u32,
    top: u32,
    /// Seq of the chunk that arrived last (echoed for RTT samples).
    latest_seq: u32,
    unacked: u32,
    ack_at: Option<Instant>,
    pub duplicates: u64,
}

/// What a received chunk was.
#[derive(Debug, PartialEq, Eq)]
pub enum ChunkOutcome {
    New,
    Duplicate,
    /// Index out of range or wrong length.
    Invalid,
}

impl Receiver {
    pub fn new(packed_len: usize, chunk_size: usize) -> Receiver {
        let count = packed_len.div_ceil(chunk_size.max(1));
        Receiver {
            buf: vec![0; packed_len],
            chunk_size: chunk_size.max(1),
            have: vec![false; count],
            have_count: 0,
            cum: 0,
            top: 0,
            latest_seq: 0,
            unacked: 0,
            ack_at: None,
            duplicates: 0,
        }
    }

    pub fn count(&self) -> u32 {
        self.have.len() as u32
    }

    pub fn received_bytes(&self) -> usize {
        (self.have_count as usize * self.chunk_size).min(self.buf.len())
    }

    pub fn is_full(&self) -> bool {
        self.have_count == self.count()
    }

    pub fn latest_seq(&self) -> u32 {
        self.latest_seq
    }

    pub fn handle_chunk(
        &mut self,
        now: Instant,
        index: u32,
        seq: u32,
        data: &[u8],
    ) -> ChunkOutcome {
        let i = index as usize;
        if i >= self.have.len() {
            return ChunkOutcome::Invalid;
        }
        let start = i * self.chunk_size;
        let end = (start + self.chunk_size).min(self.buf.len());
        if data.len() != end - start {
            return ChunkOutcome::Invalid;
        }
        self.latest_seq = seq;
        if self.have[i] {
            // The sender resent something we have: our ack may be lost, so ack at once.
            self.duplicates += 1;
            self.ack_at = Some(now);
            return ChunkOutcome::Duplicate;
        }
        self.buf[start..end].copy_from_slice(data);
        self.have[i] = true;
        self.have_count += 1;
        self.top = self.top.max(index + 1);
        while (self.cum as usize) < self.have.len() && self.have[self.cum as usize] {
            self.cum += 1;
        }
        self.unacked += 1;
        if self.unacked >= ACK_EVERY || self.is_full() {
            self.ack_at = Some(now);
        } else if self.ack_at.is_none() {
            self.ack_at = Some(now + ACK_DELAY);
        }
        ChunkOutcome::New
    }

    /// Asks for an ack with the next `poll_ack`.
    pub fn ack_soon(&mut self, now: Instant) {
        self.ack_at = Some(now);
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        self.ack_at
    }

    /// An ack, if one is due. `verified` says the whole payload checked out.
    pub fn poll_ack(&mut self, now: Instant, verified: bool) -> Option<StateAck> {
        if self.ack_at? > now {
            return None;
        }
        self.ack_at = None;
        self.unacked = 0;
        // Never claim the whole payload before it is verified.
        let cum = if verified {
            self.cum
        } else {
            self.cum.min(self.count().saturating_sub(1))
        };
        let end = self.top.min(cum.saturating_add(MAX_SPAN));
        let span = end.saturating_sub(cum) as usize;
        let mut bitmap = vec![0u8; span.div_ceil(8)];
        for (bit, have) in self.have[cum as usize..cum as usize + span]
            .iter()
            .enumerate()
        {
            if *have {
                bitmap[bit / 8] |= 1 << (bit % 8);
            }
        }
        Some(StateAck {
            cum,
            latest_seq: self.latest_seq,
            verified,
            bitmap,
        })
    }

    pub fn packed(&self) -> &[u8] {
        &self.buf
    }

    /// The whole payload, without a copy (a server hands it to a worker to unpack). The
    /// receiver is empty afterwards: take no more chunks with it.
    pub fn take_packed(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lossy in-memory link on simulated time: proves the transfer completes, resends only
    /// what was lost, and takes a few RTTs.
    fn run(len: usize, loss_every: u32, one_way: Duration) -> (Duration, Sender) {
        let data: Arc<[u8]> = (0..len)
            .map(|i| (i * 31 % 251) as u8)
            .collect::<Vec<_>>()
            .into();
        let start = Instant::now();
        let mut now = start;
        let mut tx = Sender::new(now, data.clone(), 1152, Rtt::default());
        let mut rx = Receiver::new(len, 1152);
        let mut to_rx: VecDeque<(Instant, u32, u32)> = VecDeque::new();
        let mut to_tx: VecDeque<(Instant, StateAck)> = VecDeque::new();
        let mut n = 0u32;
        let mut done = false;
        for _ in 0..2_000_000 {
            tx.detect_losses(now);
            while let Some((index, seq)) = tx.poll_chunk(now) {
                n += 1;
                if !n.is_multiple_of(loss_every) {
                    to_rx.push_back((now + one_way, index, seq));
                }
            }
            while to_rx.front().is_some_and(|p| p.0 <= now) {
                let (_, index, seq) = to_rx.pop_front().unwrap();
                let chunk = tx.chunk(index).to_vec();
                rx.handle_chunk(now, index, seq, &chunk);
            }
            if let Some(ack) = rx.poll_ack(now, rx.is_full()) {
                n += 1;
                if !n.is_multiple_of(loss_every) {
                    to_tx.push_back((now + one_way, ack));
                }
            }
            while to_tx.front().is_some_and(|p| p.0 <= now) {
                let (_, ack) = to_tx.pop_front().unwrap();
                tx.handle_ack(now, &ack);
            }
            if tx.is_complete() {
                done = true;
                break;
            }
            let next = [
                tx.poll_timeout(),
                rx.poll_timeout(),
                to_rx.front().map(|p| p.0),
                to_tx.front().map(|p| p.0),
            ]
            .into_iter()
            .flatten()
            .min()
            .expect("something pending");
            now = next.max(now);
        }
        assert!(done, "transfer did not complete");
        assert_eq!(rx.packed(), &data[..]);
        (now - start, tx)
    }

    #[test]
    fn lossless_transfer_sends_each_chunk_once() {
        let (took, tx) = run(1 << 20, u32::MAX, Duration::from_millis(20));
        assert_eq!(tx.resent, 0);
        assert_eq!(tx.sent, tx.count() as u64);
        assert!(took < Duration::from_secs(2), "{took:?}");
    }

    #[test]
    fn lossy_transfer_completes_with_selective_resends() {
        // Every 4th datagram lost (25%), in both directions.
        let (took, tx) = run(4 << 20, 4, Duration::from_millis(20));
        let count = tx.count() as u64;
        assert!(tx.resent >= count / 5, "resent {} of {count}", tx.resent);
        assert!(tx.resent < count, "resent {} of {count}", tx.resent);
        assert!(took < Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn hostile_acks_are_ignored() {
        let data: Arc<[u8]> = vec![1u8; 10_000].into();
        let now = Instant::now();
        let mut tx = Sender::new(now, data, 1152, Rtt::default());
        let (index, _) = tx.poll_chunk(now).unwrap();
        let bogus = [
            StateAck {
                cum: 9999,
                latest_seq: 1,
                verified: true,
                bitmap: vec![],
            },
            StateAck {
                cum: 0,
                latest_seq: 77,
                verified: false,
                bitmap: vec![0xff],
            },
            StateAck {
                cum: 3,
                latest_seq: 1,
                verified: true,
                bitmap: vec![0xff; 1024],
            },
        ];
        for ack in &bogus {
            tx.handle_ack(now, ack);
        }
        assert_eq!(index, 0);
        assert_eq!(tx.acked(), 1, "only the chunk actually sent can be acked");
        assert!(!tx.is_complete());
    }
}
