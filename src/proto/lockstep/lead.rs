//! The lead: how many frames after its sampling frame an input takes effect.
//!
//! The server sizes it by the worst *input round trip* among the clients: each client
//! measures, for every one of its samples, the time from pushing it to receiving the frame
//! that carries it, and reports the 99th percentile of the last 4 s in its CTRLs (samples
//! pushed before the first frames arrived waited for the session to start, not for the
//! link, and are left out). That time
//! contains everything that can make a client wait at a keyframe: up to K - 1 frames of
//! batching before the CTRL leaves, the trip to the server, waiting for the other players'
//! samples, retransmissions after losses, and the trip back. Until a client has reported
//! one, its TCP-style `SRTT + 4 * RTTVAR` plus K - 1 frames stands in; before its first
//! timestamp came back, the round trip the handshake measured (`Server::seed_rtt`), so the
//! lead covers the link from frame 0.
//!
//! `lead = ceil(worst / frame + MARGIN_FRAMES)`, clamped to `min_lead..=max_lead`, where each
//! client's round trip counts times its pace when time sync speeds it up (it runs behind and
//! reaches its keyframe that much sooner: at most 2 %). Applying that 2 % to every client all
//! the time, as before, cost a frame at 100 ms RTT / ±10 ms each way / 5 % loss in half the
//! sessions while running at the nominal rate (simulated, 8 seeds: 150 ms median latency in
//! 4, now in all 8, at 0.17-0.25 % stalled frames). The
//! keyframe interval K and the lead are separate numbers: with a small K the added latency
//! is about one round trip rather than one or two keyframe intervals on top of it.
//!
//! It changes without oscillating: it rises at once when the target rises (a degraded link
//! stalls everyone until it does), and falls at most every `STEP_DOWN`, by an eighth of the
//! gap (at least one frame), only after `HOLD_AFTER_RISE` without a rise, and only while a
//! target computed with half a frame of extra margin is still lower (hysteresis).
//!
//! One exception: until every client has reported its input round trip (a client reports
//! once it has measured 60 samples), the lead rests on estimates (the handshake's single
//! sample gives `SRTT + 4 * RTTVAR` = 3 round trips). The first complete set of measurements
//! replaces that at once, down as well as up, instead of spending the first seconds of
//! every session coming down from it.

use std::time::{Duration, Instant};

/// Quiet time after a rise before the lead may fall again.
pub const HOLD_AFTER_RISE: Duration = Duration::from_secs(2);
/// Time between two one-frame decreases.
pub const STEP_DOWN: Duration = Duration::from_millis(250);
/// Extra room on top of the measured round trip, in frames.
pub const MARGIN_FRAMES: f64 = 0.25;

#[derive(Clone, Debug)]
pub struct LeadController {
    lead: u32,
    min: u32,
    max: u32,
    frame: Duration,
    last_rise: Option<Instant>,
    last_step: Option<Instant>,
    /// The lead has followed measured input round trips (not estimates) at least once.
    measured: bool,
}

impl LeadController {
    pub fn new(min: u32, max: u32, frame: Duration) -> Self {
        LeadController {
            lead: min,
            min,
            max,
            frame,
            last_rise: None,
            last_step: None,
            measured: false,
        }
    }

    pub fn lead(&self) -> u32 {
        self.lead
    }

    /// The lead that covers a round trip of `rtt` (with `extra` frames of margin).
    pub fn target(&self, rtt: Option<Duration>, extra: f64) -> u32 {
        let frames = rtt.map_or(0.0, |r| {
            (r.as_secs_f64() / self.frame.as_secs_f64() + MARGIN_FRAMES + extra).ceil()
        });
        (frames.min(f64::from(self.max)) as u32).clamp(self.min, self.max)
    }

    /// Moves the lead toward the target for `rtt` (the worst round trip; `measured`: every
    /// client's own report, not an estimate); returns it.
    pub fn update(&mut self, now: Instant, rtt: Option<Duration>, measured: bool) -> u32 {
        let up = self.target(rtt, 0.0);
        // The first measurements replace the estimate even when lower.
        let first_measured = measured && !self.measured;
        self.measured |= measured;
        if up > self.lead || first_measured {
            self.lead = up;
            self.last_rise = Some(now);
            self.last_step = Some(now);
        } else if self.target(rtt, 0.5) < self.lead
            && self
                .last_rise
                .is_none_or(|t| now.saturating_duration_since(t) >= HOLD_AFTER_RISE)
            && self
                .last_step
                .is_none_or(|t| now.saturating_duration_since(t) >= STEP_DOWN)
        {
            // One frame per step, more when far off (after a 2 s round trip healed).
            let gap = self.lead - self.target(rtt, 0.5);
            self.lead -= gap.div_ceil(8);
            self.last_step = Some(now);
        }
        self.lead
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rises_at_once_and_falls_slowly() {
        let frame = Duration::from_micros(16_667);
        let mut l = LeadController::new(2, 240, frame);
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // 100 ms = 6 frames; + margin -> 7.
        assert_eq!(l.update(t0, Some(ms(100)), true), 7);
        assert_eq!(l.update(t0 + ms(10), Some(ms(300)), true), 19);
        // Better link: nothing for 2 s, then an eighth of the gap (12 frames) per 250 ms.
        assert_eq!(l.update(t0 + ms(1000), Some(ms(100)), true), 19);
        assert_eq!(l.update(t0 + ms(2100), Some(ms(100)), true), 17);
        assert_eq!(l.update(t0 + ms(2200), Some(ms(100)), true), 17);
        assert_eq!(l.update(t0 + ms(2400), Some(ms(100)), true), 15);
        let mut t = t0 + ms(2400);
        let mut seen = vec![15];
        for _ in 0..40 {
            t += ms(250);
            seen.push(l.update(t, Some(ms(100)), true));
        }
        assert_eq!(l.lead(), 7);
        // Close to the target it moves one frame per step.
        assert!(seen.windows(2).all(|w| w[0] - w[1] <= 2));
        assert_eq!(&seen[seen.len() - 3..], &[7, 7, 7]);
        // A target that wobbles within the hysteresis does not move it.
        assert_eq!(l.update(t + ms(3000), Some(ms(95)), true), 7);
        // No round trip known (host only): the minimum.
        assert_eq!(l.target(None, 0.0), 2);
        assert_eq!(l.target(Some(Duration::from_secs(60)), 0.0), 240);
    }

    #[test]
    fn the_first_measurements_replace_the_handshake_estimate_at_once() {
        let frame = Duration::from_micros(16_667);
        let mut l = LeadController::new(2, 240, frame);
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // The handshake's 250 ms sample, as SRTT + 4 * RTTVAR: 750 ms.
        assert_eq!(l.update(t0, Some(ms(750)), false), 46);
        assert_eq!(l.update(t0 + ms(300), Some(ms(700)), false), 46);
        // Every client measured about 300 ms: down at once, no hold.
        assert_eq!(l.update(t0 + ms(400), Some(ms(300)), true), 19);
        // From then on the usual rules: up at once, down only after the hold.
        assert_eq!(l.update(t0 + ms(500), Some(ms(400)), true), 25);
        assert_eq!(l.update(t0 + ms(900), Some(ms(300)), true), 25);
        // A measurement that starts higher than the estimate also takes over at once.
        let mut l = LeadController::new(2, 240, frame);
        assert_eq!(l.update(t0, Some(ms(100)), false), 7);
        assert_eq!(l.update(t0 + ms(100), Some(ms(200)), true), 13);
    }
}
