//! The client's side of a pause: asking the server for one (or for the resume), the pause
//! in force as the server announced it, whether the game stands still at it, and a
//! spectator's refill after the resume. The pause's own state is a `ClientPause`
//! (`lockstep::pause`); imports the client's frame and event types and nothing of the link,
//! the outbox or the server.

use std::time::Duration;

use super::super::frame::{Frame, PeerId};
use super::{Client, ClientEvent};

/// Longest a spectator waits after a resume for its buffer to fill (see `at_pause`).
const REFILL_LIMIT: Duration = Duration::from_millis(500);

impl Client {
    /// Asks the server to pause the game for everyone (`true`) or to resume it. The answer
    /// comes as [`ClientEvent::Paused`], [`ClientEvent::Resumed`] or
    /// [`ClientEvent::PauseRefused`]. A spectator cannot.
    pub fn request_pause(&mut self, pause: bool) {
        if !self.is_spectator() {
            self.pause.request(pause);
            self.send_due = true;
        }
    }

    /// The pause in force, as the server announced it: who paused, and the first frame
    /// that waits for the resume.
    pub fn paused(&self) -> Option<(PeerId, Frame)> {
        self.pause.paused
    }

    /// Every frame before the pause has been handed out: the game stands still here. A
    /// spectator, which plays the stream as it comes, stands still after the resume too,
    /// until it holds two keyframe intervals' worth of frames again (or `REFILL_LIMIT`
    /// passed): going on with an empty buffer, it would wait for every UPDATE.
    pub fn at_pause(&self) -> bool {
        if let Some((_, at)) = self.pause.paused {
            return self.next_frame >= at && self.frames.is_empty();
        }
        let refilling = self
            .pause
            .resumed_at
            .is_some_and(|t| self.last_now < t + REFILL_LIMIT);
        self.is_spectator()
            && refilling
            && self.pause.refill
            && (self.frames.len() as u32) <= 2 * self.cfg.keyframe_interval
    }

    /// The server paused at `at`: a wait there already begun is no stall.
    pub(super) fn paused_at(&mut self, peer: PeerId, at: Frame) -> ClientEvent {
        self.pause.paused = Some((peer, at));
        if self.at_pause() {
            self.stalls.cancel();
        }
        ClientEvent::Paused { peer, at }
    }
}
