//! Counters and getters: traffic, RTT, lead, stalls, input latency.

use std::time::Duration;

use super::frame::{Frame, PeerId};

/// Datagram counters of one endpoint (or one peer on the server).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Datagram bytes received (the protocol's, no headers).
    pub bytes_in: u64,
    /// Datagram bytes sent.
    pub bytes_out: u64,
    /// `bytes_in`/`bytes_out` as on the wire: each datagram's UDP/IP header and tag included
    /// (32 bytes over IPv4, 52 over IPv6: the link's `Config::udp_ip_header`).
    pub wire_in: u64,
    /// See `wire_in`.
    pub wire_out: u64,
    /// Datagrams received.
    pub packets_in: u64,
    /// Datagrams sent.
    pub packets_out: u64,
    /// Datagrams dropped as malformed, truncated, of another session or kind, or from an
    /// unknown peer. Counted in `packets_in`/`bytes_in` too.
    pub packets_dropped_invalid: u64,
}

impl Traffic {
    /// A datagram of `len` payload bytes came in with `header` bytes of UDP/IP header.
    pub(crate) fn received(&mut self, len: usize, header: usize) {
        self.bytes_in += len as u64;
        self.wire_in += (len + header) as u64;
        self.packets_in += 1;
    }

    pub(crate) fn sent(&mut self, len: usize, header: usize) {
        self.bytes_out += len as u64;
        self.wire_out += (len + header) as u64;
        self.packets_out += 1;
    }
}

/// Histogram of input latencies in frames (0..=255; longer ones land in the last bucket).
#[derive(Clone, Debug)]
pub struct LatencyStats {
    buckets: Box<[u64; 256]>,
    count: u64,
    sum: u64,
}

impl Default for LatencyStats {
    fn default() -> Self {
        LatencyStats {
            buckets: Box::new([0; 256]),
            count: 0,
            sum: 0,
        }
    }
}

impl LatencyStats {
    /// Counts one sample of `frames` (255 and more in the last bucket).
    pub fn record(&mut self, frames: u32) {
        self.buckets[frames.min(255) as usize] += 1;
        self.count += 1;
        self.sum += u64::from(frames);
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The mean in frames; `None` before any sample.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// The `q` quantile (0..=1) in frames.
    pub fn quantile(&self, q: f64) -> Option<u32> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(i as u32);
            }
        }
        Some(255)
    }

    /// The median in frames.
    pub fn median(&self) -> Option<u32> {
        self.quantile(0.5)
    }

    /// The 95th percentile in frames.
    pub fn p95(&self) -> Option<u32> {
        self.quantile(0.95)
    }

    /// Forgets what was recorded (e.g. after a warm-up).
    pub fn clear(&mut self) {
        *self = LatencyStats::default();
    }

    /// Adds what `other` recorded.
    pub fn merge(&mut self, other: &LatencyStats) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
    }
}

/// A client's numbers; see [`super::Client::stats`].
#[derive(Clone, Debug, Default)]
pub struct ClientStats {
    /// Smoothed RTT to the server and its mean deviation.
    pub rtt: Option<Duration>,
    /// See `rtt`.
    pub rtt_var: Duration,
    /// 99th percentile of the time from pushing a sample to receiving its frame.
    pub input_rtt: Option<Duration>,
    /// K, as the server set it.
    pub keyframe_interval: u32,
    /// Sending a CTRL every frame because the link loses datagrams.
    pub redundant: bool,
    /// Smoothed share of UPDATEs lost (sequence gaps).
    pub down_loss: f64,
    /// Frames between sampling this client's input and applying it, as the server last said.
    pub lead: Option<u32>,
    /// Next frame `poll_frame` hands out (= frames emulated so far).
    pub frame: Frame,
    /// Frames received and not yet handed out.
    pub ready_frames: usize,
    /// Keyframes at which `poll_frame` found no inputs (counted once per keyframe).
    pub stalls: u64,
    /// Time from those misses to the UPDATE that ended them (the miss time is the latest
    /// `now` the client was given, normally the `push_local_input` just before).
    pub stalled: Duration,
    /// `stalled` in frames at the configured fps.
    pub stalled_frames: f64,
    /// Speed factor for the scheduler (drift correction) and the advance it came from.
    pub pace: f64,
    /// See `pace`.
    pub advance_frames: f64,
    /// Datagrams to and from the server.
    pub traffic: Traffic,
    /// Frames from sampling a local input to the frame it was applied on.
    pub latency: LatencyStats,
    /// Frame periods from each of this player's samples to the first picture shown that
    /// used it (`Client::shown`): the latency the player sees, speculation included.
    pub perceived: LatencyStats,
}

/// Optimistic mode: where the server put one player's samples.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    /// Samples placed on a later frame than the player's own offset would have put them
    /// (they arrived too late for it).
    pub late: u64,
    /// By how many frames each of those was late.
    pub late_frames: LatencyStats,
    /// Samples equal to the input before them, dropped to drain a backlog (a burst after
    /// an outage, or the offset coming down).
    pub merged: u64,
}

impl Placement {
    /// Adds what `other` counted (a player's earlier stays in the session).
    pub fn merge(&mut self, other: &Placement) {
        self.late += other.late;
        self.late_frames.merge(&other.late_frames);
        self.merged += other.merged;
    }
}

/// One peer as the server sees it.
#[derive(Clone, Debug)]
pub struct PeerStats {
    /// The player's slot.
    pub peer: PeerId,
    /// Smoothed RTT to it, and its mean deviation.
    pub rtt: Option<Duration>,
    /// See `rtt`.
    pub rtt_var: Duration,
    /// The input round trip it reported (the lead is sized by the worst one).
    pub input_rtt: Option<Duration>,
    /// Its current sample-to-frame offset (its input latency in frames).
    pub lead: u32,
    /// Its phase relative to the other clients, in frames (> 0: ahead).
    pub advance_frames: f64,
    /// Samples received and not yet placed on a frame (the command buffer).
    pub buffered_samples: usize,
    /// Datagrams to and from it.
    pub traffic: Traffic,
    /// Optimistic mode: how its samples were placed.
    pub placement: Placement,
}

/// The server's numbers; see [`super::Server::stats`].
#[derive(Clone, Debug)]
pub struct ServerStats {
    /// The lead in frames (strict mode's sample-to-frame offset).
    pub lead: u32,
    /// K.
    pub keyframe_interval: u32,
    /// The next keyframe: frames before it are published.
    pub frontier: Frame,
    /// All traffic, including datagrams from unknown peers.
    pub traffic: Traffic,
    /// Each player in the session.
    pub peers: Vec<PeerStats>,
    /// Every slot that has played, in slot order, with where its samples were placed over
    /// the whole session (players who left included).
    pub placements: Vec<(PeerId, Placement)>,
}

/// One spectator's link, as the server sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpectatorStats {
    /// Its smoothed round trip, once measured.
    pub rtt: Option<Duration>,
    /// It holds every frame before this one.
    pub acked: Frame,
    /// What crossed its link.
    pub traffic: Traffic,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_come_from_the_histogram() {
        let mut l = LatencyStats::default();
        assert_eq!(l.median(), None);
        for v in [3, 3, 4, 4, 4, 5, 9, 9, 9, 300] {
            l.record(v);
        }
        assert_eq!(l.median(), Some(4));
        assert_eq!(l.p95(), Some(255));
        assert_eq!(l.quantile(0.0), Some(3));
        assert_eq!(l.count(), 10);
    }
}
