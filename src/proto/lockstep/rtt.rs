//! Round-trip time estimation as TCP does it (RFC 6298): a smoothed RTT and a smoothed mean
//! deviation, from samples taken off echoed timestamps.

use std::time::Duration;

/// SRTT and RTTVAR of one link.
#[derive(Clone, Debug, Default)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
}

impl RttEstimator {
    pub fn update(&mut self, sample: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(sample);
                self.rttvar = sample / 2;
            }
            Some(srtt) => {
                let dev = srtt.abs_diff(sample);
                self.rttvar = (self.rttvar * 3 + dev) / 4;
                self.srtt = Some((srtt * 7 + sample) / 8);
            }
        }
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// SRTT + 4 * RTTVAR: a round trip that is rarely exceeded.
    pub fn conservative(&self) -> Option<Duration> {
        self.srtt.map(|s| s + self.rttvar * 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc6298() {
        let mut r = RttEstimator::default();
        assert_eq!(r.conservative(), None);
        r.update(Duration::from_millis(100));
        assert_eq!(r.srtt(), Some(Duration::from_millis(100)));
        assert_eq!(r.conservative(), Some(Duration::from_millis(300)));
        r.update(Duration::from_millis(180));
        assert_eq!(r.srtt(), Some(Duration::from_millis(110)));
        assert_eq!(r.rttvar(), Duration::from_millis(57_500) / 1000);
    }
}

/// A high quantile over the most recent samples of a delay (the input round trip).
#[derive(Clone, Debug)]
pub struct WindowQuantile {
    samples: std::collections::VecDeque<Duration>,
    cap: usize,
}

impl WindowQuantile {
    pub fn new(cap: usize) -> Self {
        WindowQuantile {
            samples: std::collections::VecDeque::with_capacity(cap),
            cap: cap.max(1),
        }
    }

    pub fn record(&mut self, d: Duration) {
        if self.samples.len() == self.cap {
            self.samples.pop_front();
        }
        self.samples.push_back(d);
    }

    /// Samples in the window.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// The `q` quantile (0..=1) of the window.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if self.samples.is_empty() {
            return None;
        }
        let mut v: Vec<Duration> = self.samples.iter().copied().collect();
        let rank = ((q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize).clamp(1, v.len());
        let (_, nth, _) = v.select_nth_unstable(rank - 1);
        Some(*nth)
    }
}

#[cfg(test)]
mod window_tests {
    use super::*;

    #[test]
    fn quantile_of_the_recent_window() {
        let mut w = WindowQuantile::new(100);
        assert_eq!(w.quantile(0.99), None);
        for i in 1..=300u64 {
            w.record(Duration::from_millis(i));
        }
        // Window holds 201..=300.
        assert_eq!(w.quantile(0.99), Some(Duration::from_millis(299)));
        assert_eq!(w.quantile(0.0), Some(Duration::from_millis(201)));
        assert_eq!(w.quantile(1.0), Some(Duration::from_millis(300)));
    }
}

/// Datagram loss seen from gaps in the peer's sequence numbers, smoothed per datagram.
/// Reordered datagrams count as lost (they arrive too late to help anyway).
#[derive(Clone, Debug, Default)]
pub struct LossMeter {
    rate: f64,
}

impl LossMeter {
    /// Weight of one datagram.
    const ALPHA: f64 = 1.0 / 32.0;
    /// Above this rate the link counts as lossy.
    pub const LOSSY: f64 = 0.01;

    /// A datagram `gap` sequence numbers after the previous newest one arrived.
    pub fn arrived(&mut self, gap: u16) {
        for _ in 1..gap.min(64) {
            self.rate += (1.0 - self.rate) * Self::ALPHA;
        }
        self.rate -= self.rate * Self::ALPHA;
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    pub fn lossy(&self) -> bool {
        self.rate > Self::LOSSY
    }
}
