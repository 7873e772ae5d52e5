//! The client's waits at keyframes whose UPDATE had not come: the stall under way, the
//! samples taken on the frame clock during it, and the totals. Imports nothing of the
//! client.

use std::time::{Duration, Instant};

/// Stalls, the one under way and the totals.
#[derive(Debug, Default)]
pub(super) struct Stalls {
    /// When the stall under way began.
    pub since: Option<Instant>,
    /// Samples pushed during the current stall for frame periods that passed in it.
    pub waited_samples: u32,
    /// Stalls so far, and the time they took.
    pub count: u64,
    pub total: Duration,
}

impl Stalls {
    /// A stall begins at `now`.
    pub fn begin(&mut self, now: Instant) {
        self.since = Some(now);
        self.waited_samples = 0;
        self.count += 1;
    }

    /// Frames came at `now`: the stall under way, if any, ends; how long it lasted.
    pub fn end(&mut self, now: Instant) -> Option<Duration> {
        let since = self.since.take()?;
        let waited = now.saturating_duration_since(since);
        self.total += waited;
        Some(waited)
    }

    /// The wait under way is for a pause: no stall after all.
    pub fn cancel(&mut self) {
        if self.since.take().is_some() {
            self.count = self.count.saturating_sub(1);
        }
    }

    /// Forgets the totals (after a warm-up).
    pub fn clear_totals(&mut self) {
        self.count = 0;
        self.total = Duration::ZERO;
    }
}
