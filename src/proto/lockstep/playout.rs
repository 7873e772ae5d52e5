//! The client's playout: how its runner should play the frames the client holds (the
//! pace, the frames to run beyond the frame clock, the start delay to catch up once), in
//! one of three forms. A player of a strict session keeps its clock in phase with the
//! others by time sync; a player of an optimistic session plays the stream like a
//! recording, paced by how long frames wait; a spectator keeps a small buffer. The
//! server-side counterpart is the server's `Publisher`.
//!
//! Holds the pacing state only (the server's advance, the frames' waits); the frames
//! themselves are the client's. Must not import `client`, `server` or `link`.

use std::time::Duration;

use super::frame::Frame;
use super::rtt::WindowQuantile;
use super::timesync::pace_for;
use super::{Config, Mode};

/// Optimistic mode's playout: how long frames wait between arriving and being run, in
/// frames. The client runs 1% slower while the 10% quantile of the last `SLACK_SHORT`
/// frames' waits is below `SLACK_LOW` (it is about to miss one), and 1% faster only while
/// even the shortest wait of the last `SLACK_LONG` is above `SLACK_HIGH`: so the frames a
/// lost UPDATE delays, which come a frame late now and then, keep their margin too. Timed
/// by a short window, speeding up emptied that margin between losses, and a 100 ms link with
/// 5% loss stalled 1.5% of its frames. The band is over a frame wide because frames run on
/// display slots: a frame's wait moves by whole slots as its deadline crosses one.
const SLACK_SHORT: usize = 30;
const SLACK_LONG: usize = 120;
const SLACK_QUANTILE: f64 = 0.1;
const SLACK_LOW: f64 = 0.25;
const SLACK_HIGH: f64 = 1.3;
const PLAYOUT_PACE_STEP: f64 = 0.01;
/// Optimistic mode: frames a client keeps in hand; more are run sooner (see `backlog`).
const PLAYOUT_KEEP_EXTRA: u32 = 6;

/// Which playout (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// A player of a strict session.
    Strict {
        /// It joined the running game (see `behind_phase`).
        late: bool,
        /// Started from a state at a later frame than the others have reached: it runs
        /// the frames it is behind faster (see `backlog`) until it has caught up.
        catching_up: bool,
    },
    /// A player of an optimistic session.
    Optimistic,
    /// A spectator, of either mode.
    Spectator,
}

/// A client's playout state (see the module doc).
#[derive(Debug)]
pub(super) struct Playout {
    form: Form,
    /// The session is optimistic: the pace follows the frames' waits, also a spectator's.
    optimistic: bool,
    keyframe_interval: u32,
    fps: f64,
    /// The server's word on this client's phase, in frames (> 0: ahead of the others).
    pub advance: f64,
    /// How long the latest frames waited between arriving and being run.
    slack: WindowQuantile,
    slack_long: WindowQuantile,
    /// `take_start_delay` answered.
    start_delay_taken: bool,
}

impl Playout {
    /// A player's playout at frame 0, of `cfg`'s mode.
    pub fn new(cfg: &Config) -> Playout {
        let optimistic = cfg.mode == Mode::Optimistic;
        Playout {
            form: if optimistic {
                Form::Optimistic
            } else {
                Form::Strict {
                    late: false,
                    catching_up: false,
                }
            },
            optimistic,
            keyframe_interval: cfg.keyframe_interval,
            fps: cfg.fps,
            advance: 0.0,
            slack: WindowQuantile::new(SLACK_SHORT),
            slack_long: WindowQuantile::new(SLACK_LONG),
            start_delay_taken: false,
        }
    }

    /// The player starts from a state at `start`: after frame 0, it joins the running game.
    pub fn start_at(&mut self, start: Frame) {
        if let Form::Strict { late, catching_up } = &mut self.form {
            *late = start > Frame::ZERO;
            *catching_up = start > Frame::ZERO;
        }
    }

    /// The client is a spectator's.
    pub fn spectate(&mut self) {
        self.form = Form::Spectator;
    }

    pub fn is_spectator(&self) -> bool {
        self.form == Form::Spectator
    }

    /// The frames come at the server's pace, not at one the client must keep (see
    /// [`Client::paced_by_arrival`](super::Client::paced_by_arrival)).
    pub fn paced_by_arrival(&self) -> bool {
        matches!(self.form, Form::Spectator | Form::Optimistic)
    }

    /// A frame that waited `wait` between arriving and being run was handed out.
    pub fn waited(&mut self, wait: Duration) {
        self.slack.record(wait);
        self.slack_long.record(wait);
    }

    /// Frames to run beyond the frame clock, of the `ready` ones held (see
    /// [`Client::backlog`](super::Client::backlog)); `started`: the first frames came.
    pub fn backlog(&mut self, ready: u32, started: bool) -> u32 {
        let k = self.keyframe_interval;
        match self.form {
            // Played like a recording: the frames beyond a keyframe interval and a little
            // are run sooner, so a burst (the link back after an outage) is caught up.
            Form::Optimistic => ready.saturating_sub(k + PLAYOUT_KEEP_EXTRA),
            Form::Spectator => ready.saturating_sub(k + 1),
            Form::Strict {
                late,
                catching_up: true,
            } => {
                if ready == 0 && started {
                    self.form = Form::Strict {
                        late,
                        catching_up: false,
                    };
                }
                ready
            }
            Form::Strict { late, .. } => behind_phase(late, self.advance, ready),
        }
    }

    /// Speed factor for the runner (see [`Client::pace`](super::Client::pace)).
    pub fn pace(&self) -> f64 {
        if self.optimistic {
            return self.slack_pace();
        }
        if matches!(self.form, Form::Strict { late: true, .. }) && self.advance.abs() >= 1.0 {
            return (1.0 - 0.03 * self.advance).clamp(0.9, 1.1);
        }
        pace_for(self.advance)
    }

    /// Optimistic mode: the server's frames come on its clock, so the client keeps its phase
    /// just behind their arrival: it runs 1% slower while the frames wait less than
    /// `SLACK_LOW` frames before they run (it is about to miss one), 1% faster while they
    /// wait more than `SLACK_HIGH` (that wait is input latency). This also absorbs clock
    /// drift between the machines.
    fn slack_pace(&self) -> f64 {
        let frames = |w: &WindowQuantile, q| {
            w.quantile(q)
                .map(|d| d.as_secs_f64() * self.fps)
                .unwrap_or(SLACK_LOW)
        };
        if frames(&self.slack, SLACK_QUANTILE) < SLACK_LOW {
            1.0 - PLAYOUT_PACE_STEP
        } else if self.slack_long.len() >= SLACK_LONG && frames(&self.slack_long, 0.0) > SLACK_HIGH
        {
            1.0 + PLAYOUT_PACE_STEP
        } else {
            1.0
        }
    }

    /// The start delay to catch up once (see
    /// [`Client::take_start_delay`](super::Client::take_start_delay)), given that the first
    /// frames came (`started`) and the smoothed round trip.
    pub fn take_start_delay(&mut self, started: bool, srtt: Option<Duration>) -> Option<Duration> {
        if self.paced_by_arrival() {
            return None;
        }
        if self.start_delay_taken || !started {
            return None;
        }
        let one_way = srtt? / 2;
        self.start_delay_taken = true;
        Some(one_way)
    }
}

/// A late joiner the server finds more than a frame behind the others' phase (they were
/// catching up a stall themselves when it finished its own catch-up) runs the frames it
/// holds sooner (twice the pace) instead of leaving it to time sync (2%), while the
/// others wait for its input at every keyframe.
fn behind_phase(late: bool, advance: f64, ready: u32) -> u32 {
    if !late || advance > -2.0 {
        return 0;
    }
    // One extra frame a displayed frame: the server's estimate of our phase is smoothed
    // and trails what we do, so more would overshoot, and we would wait for the others.
    1.min(ready)
}
