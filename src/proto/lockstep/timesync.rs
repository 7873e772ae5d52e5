//! Clock-drift correction: keep every client's frame clock in the same phase.
//!
//! Each CTRL says how long ago its newest sample was pushed. The server turns that into the
//! server-clock time the client pushed it (`arrival - SRTT/2 - age`) and from there into the
//! client's *origin*: when its sample 0 would have been pushed at the nominal frame rate.
//! A client whose origin is earlier than the peers' mean runs ahead: its inputs arrive early
//! while it waits for the others at every keyframe, and a drifting clock turns that into
//! recurring stalls. The server sends each client its advance (mean origin minus its origin,
//! in frames) in every UPDATE; the client turns it into a speed factor for its scheduler,
//! `pace = 1 - GAIN * advance`, clamped to 0.98..=1.02 (like ggrs' frame advantage).

/// Pace change per frame of advance (a 1-frame lead slows the client by 1%).
pub const GAIN: f64 = 0.01;
pub const MIN_PACE: f64 = 0.98;
pub const MAX_PACE: f64 = 1.02;
/// Weight of a new origin measurement.
const ALPHA: f64 = 1.0 / 16.0;

/// One client's smoothed origin, in seconds on the server's clock.
#[derive(Clone, Debug, Default)]
pub struct Phase {
    origin: Option<f64>,
    newest: Option<u32>,
}

impl Phase {
    /// Records that sample `index` was pushed at `pushed` (seconds since the server's epoch).
    pub fn observe(&mut self, index: u32, pushed: f64, frame_secs: f64) {
        if self.newest.is_some_and(|n| index <= n) {
            return;
        }
        self.newest = Some(index);
        let o = pushed - f64::from(index) * frame_secs;
        self.origin = Some(match self.origin {
            None => o,
            Some(prev) => prev + (o - prev) * ALPHA,
        });
    }

    pub fn origin(&self) -> Option<f64> {
        self.origin
    }
}

/// Speed factor for a client `advance` frames ahead of the others.
pub fn pace_for(advance: f64) -> f64 {
    (1.0 - GAIN * advance).clamp(MIN_PACE, MAX_PACE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_smooths_and_pace_slows_a_client_ahead() {
        let mut p = Phase::default();
        let t = 1.0 / 60.0;
        p.observe(60, 2.0, t);
        assert!((p.origin().unwrap() - 1.0).abs() < 1e-9);
        p.observe(60, 9.0, t); // not newer: ignored
        p.observe(120, 3.0 + 16.0 * t, t);
        assert!((p.origin().unwrap() - (1.0 + t)).abs() < 1e-9);
        assert_eq!(pace_for(0.0), 1.0);
        assert!((pace_for(1.0) - 0.99).abs() < 1e-12);
        assert_eq!(pace_for(-50.0), MAX_PACE);
    }
}
