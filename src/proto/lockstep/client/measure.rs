//! What the client measures of its own samples: the input round trip (pushed until its
//! frame arrived) it reports to the server for the lead, the latency in frames until a
//! sample was applied, and the latency a player saw (see `Client::shown`). Holds each
//! sample's push time and frame until both measurements passed it. Imports nothing of the
//! client.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::super::frame::Frame;
use super::super::rtt::WindowQuantile;
use super::super::stats::LatencyStats;

/// Input round trips kept for the reported quantile (4 s at 60 fps).
const INPUT_RTT_WINDOW: usize = 240;
/// The quantile of the input round trip that sizes the lead.
const INPUT_RTT_QUANTILE: f64 = 0.99;
/// Samples measured before the input round trip is reported: the server trusts the first
/// reports over its handshake estimate at once, so they must be more than a lucky few.
const INPUT_RTT_MIN_SAMPLES: usize = 60;

/// When a local sample was pushed, and the frame of the player's clock it was taken on.
#[derive(Clone, Copy, Debug)]
struct SampleInfo {
    pushed: Instant,
    frame: u32,
}

/// The client's measurements (see the module doc).
#[derive(Debug)]
pub(super) struct Measures {
    /// Push time and frame of samples `info_base..`, kept until both measurements below
    /// have passed them.
    info: VecDeque<SampleInfo>,
    info_base: u32,
    /// Next sample whose input round trip (arrival of its frame) is measured.
    irtt_next: u32,
    /// Next sample whose latency (frames until applied) is recorded.
    lat_next: u32,
    input_rtt: WindowQuantile,
    pub latency: LatencyStats,
    pub perceived: LatencyStats,
}

impl Default for Measures {
    fn default() -> Self {
        Measures {
            info: VecDeque::new(),
            info_base: 0,
            irtt_next: 0,
            lat_next: 0,
            input_rtt: WindowQuantile::new(INPUT_RTT_WINDOW),
            latency: LatencyStats::default(),
            perceived: LatencyStats::default(),
        }
    }
}

impl Measures {
    /// The samples start at index `start`.
    pub fn start_at(&mut self, start: u32) {
        self.info_base = start;
        self.irtt_next = start;
        self.lat_next = start;
    }

    /// The next sample was pushed at `at`, on the frame clock's `frame`.
    pub fn pushed(&mut self, at: Instant, frame: u32) {
        self.info.push_back(SampleInfo { pushed: at, frame });
    }

    /// The frame the newest sample kept was taken on.
    pub fn newest_frame(&self) -> Option<u32> {
        self.info.back().map(|i| i.frame)
    }

    fn info(&self, sample: u32) -> Option<SampleInfo> {
        let i = sample.checked_sub(self.info_base)?;
        self.info.get(i as usize).copied()
    }

    /// Forgets sample infos both measurements have passed.
    fn trim_info(&mut self) {
        let keep_from = self.irtt_next.min(self.lat_next);
        while self.info_base < keep_from && self.info.pop_front().is_some() {
            self.info_base += 1;
        }
    }

    /// Frame `frame` (emulated now) applied the sample `frame - lead`: record its latency.
    /// A sample repeated on several frames (lead growth) counts once.
    pub fn record_latency(&mut self, frame: Frame, lead: u32) {
        let Some(sample) = frame.0.checked_sub(lead).filter(|s| *s >= self.lat_next) else {
            return;
        };
        if let Some(info) = self.info(sample) {
            self.latency.record(frame.0.saturating_sub(info.frame));
        }
        self.lat_next = sample + 1;
        self.trim_info();
    }

    /// Frames `from..to` just arrived: each carries sample `frame - lead`, pushed some time
    /// ago. A sample counts if `counts` says so of its push time: one pushed before the
    /// session started, or before a resume, waited for that, not for the link.
    pub fn record_input_rtt(
        &mut self,
        now: Instant,
        from: u32,
        to: u32,
        lead: u32,
        counts: impl Fn(Instant) -> bool,
    ) {
        for frame in from..to {
            let Some(sample) = frame.checked_sub(lead).filter(|s| *s >= self.irtt_next) else {
                continue;
            };
            if let Some(info) = self.info(sample).filter(|i| counts(i.pushed)) {
                self.input_rtt
                    .record(now.saturating_duration_since(info.pushed));
            }
            self.irtt_next = sample + 1;
        }
        self.trim_info();
    }

    /// The input round trip to report, once enough samples measured it.
    pub fn input_rtt_report(&self) -> Option<Duration> {
        Some(&self.input_rtt)
            .filter(|w| w.len() >= INPUT_RTT_MIN_SAMPLES)
            .and_then(|w| w.quantile(INPUT_RTT_QUANTILE))
    }

    /// The input round trip's quantile over the samples measured so far.
    pub fn input_rtt(&self) -> Option<Duration> {
        self.input_rtt.quantile(INPUT_RTT_QUANTILE)
    }

    /// Forgets the latencies (e.g. after a warm-up).
    pub fn clear(&mut self) {
        self.latency.clear();
        self.perceived.clear();
    }
}
