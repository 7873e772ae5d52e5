//! Pausing the game for everyone, and telling link delays from stops.
//!
//! # Pause
//! A player asks with a numbered request in its CTRLs (`msg::PauseRequest`, repeated until
//! acknowledged, acted on once). The server pauses at its *frontier*, the first frame it
//! has not published: it publishes nothing from there until resumed, so every peer runs
//! up to that frame and stops there, whatever its round trip, and all go on from it. The
//! notices `Paused { peer, at }` and `Resumed { peer, at }` ride in the UPDATEs of every
//! player and spectator; a refused request gets `PauseRefused` to its sender only.
//!
//! - Any player who has sent input may pause (a seat taken and never played may not); the
//!   player who paused may resume, anyone once it has lasted [`OWNED_FOR`] (or once the
//!   player who paused has left).
//! - A pause ends by itself after [`PAUSE_LIMIT`], and the player whose pause ran out may
//!   not pause again for as long, so nobody holds a game still for good.
//! - A player gets [`PAUSES_PER_WINDOW`] pauses per [`PAUSE_WINDOW`]; more are refused
//!   with the time until the next is allowed, so pause cannot be used to grief.
//! - A request right after a resume, before the next frame was published, takes effect
//!   at that next frame: two pauses never share a frame (the notices are told apart by it).
//! - While paused, a silent peer is dropped (a silent server lost) only after
//!   [`PAUSED_SILENCE`]: a player that paused with Ctrl-Z is stopped until `fg`.
//! - Nothing of the pause is taken for the link: clients measure input round trips only
//!   for samples pushed after the last resume, the server restarts its phase estimates
//!   (time sync) and, in optimistic mode, its frame clock from the resume.
//!
//! # Stops
//! A player whose frame loop stops without a pause (a window dragged, a slow disk, a
//! SIGSTOP) pushes no samples meanwhile, and the frames waiting for it hold back every
//! other player's samples: their input round trips then measure the stop, not the link.
//! The client knows: its frame loop pushes (or, paused, tries to) at least once a
//! displayed frame, even while it waits at a keyframe, so a gap of [`STOP_GAP`] between
//! two pushes is a stop. It says so in its CTRLs (`Ctrl::stopped`) until acknowledged; the
//! server then keeps every client's last input round trip from before for [`STOP_TAINT`]
//! (the clients' 4 s window and a margin), and the stopped client's for
//! [`STOP_TAINT_OWN`], so the lead stays where the link had it. For [`STOP_SETTLE`] the
//! stopped player's samples are not read for time sync either. The server cannot tell a
//! stop from the link by itself: a round trip that jumps from 20 to 300 ms leaves the same
//! gap in what arrives as a player stopped for 280 ms.
//!
//! Link round trips (timestamps and their echoes, `rtt`) follow the same idea: an echo of
//! a timestamp sent before a silence of [`LINK_SILENCE`] from the peer ended is not taken,
//! since either side may have been stopped with the datagram waiting in its socket, and
//! its read time (which the network thread otherwise takes as the datagram arrives)
//! would put the stop in the round trip.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::input::MAX_PLAYERS;

use super::frame::{Frame, PeerId};
use super::msg::{PauseRefusal, PauseRequest};

/// Pauses a player may start per [`PAUSE_WINDOW`].
pub const PAUSES_PER_WINDOW: usize = 3;
/// See [`PAUSES_PER_WINDOW`].
pub const PAUSE_WINDOW: Duration = Duration::from_secs(60);
/// How long only the player who paused may resume.
pub const OWNED_FOR: Duration = Duration::from_secs(60);
/// A pause ends by itself after this long, and its player may not pause again for as long.
pub const PAUSE_LIMIT: Duration = Duration::from_secs(60);
/// How long a peer may be silent while the game is paused before it is dropped (or, for a
/// client, the server counts as lost): a player suspended with Ctrl-Z (`app::interrupt`)
/// is stopped, and may resume when `fg` brings it back.
pub const PAUSED_SILENCE: Duration = Duration::from_secs(60);
/// A frame loop that has not pushed for this long stood still (it pushes every displayed
/// frame).
pub const STOP_GAP: Duration = Duration::from_millis(150);
/// A link silent this long had a side stopped (or was down): round trips across it are
/// not taken. Longer than `STOP_GAP`: on a link losing a quarter of its datagrams, 150 ms
/// without one happens every few seconds; 500 ms, about never.
pub const LINK_SILENCE: Duration = Duration::from_millis(500);
/// Input round trips reported this long after a stop ended are not trusted: the clients'
/// 4 s window and a margin.
pub const STOP_TAINT: Duration = Duration::from_secs(5);
/// The stopped player's own reports are not trusted for longer: it catches up the frames
/// it missed, pushing samples ahead of its frame clock, whose round trips then read long,
/// and they stay in its 4 s window (simulated, 1.5 s stopped: up to 10 s after).
pub const STOP_TAINT_OWN: Duration = Duration::from_secs(12);
/// How long after a stop the player's samples say nothing of its clock's phase (time
/// sync): it catches up the frames it missed, up to 4 per displayed frame, so it pushes
/// them faster than its clock runs. Taken as its phase, that burst made the server speed
/// it up, it ran ahead and waited at keyframes, and the lead grew for it seconds later.
pub const STOP_SETTLE: Duration = Duration::from_secs(1);

/// A pause in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Active {
    /// Who paused.
    pub by: PeerId,
    /// The first frame not published.
    pub at: Frame,
    /// When.
    pub since: Instant,
}

/// What the server does with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Pause at the frontier (or at the next frame: see the module doc).
    Pause,
    /// Resume.
    Resume,
    /// Tell the sender no.
    Refuse(PauseRefusal),
    /// Already acted on, or nothing to do (a resume while running).
    Ignore,
}

/// The server's pause state.
#[derive(Debug, Default)]
pub struct Pauses {
    active: Option<Active>,
    /// A pause asked for right after a resume, to take effect at the next frame.
    deferred: Option<PeerId>,
    /// The frame the last pause was at.
    last_at: Option<Frame>,
    /// When each player's recent pauses started.
    recent: [VecDeque<Instant>; MAX_PLAYERS],
    /// The last request number acted on, per player.
    last_id: [Option<u8>; MAX_PLAYERS],
    /// When each player's last pause ran out (see [`PAUSE_LIMIT`]).
    ran_out: [Option<Instant>; MAX_PLAYERS],
}

impl Pauses {
    pub fn active(&self) -> Option<Active> {
        self.active
    }

    /// Judges `req` from `from` at `now`; `present` says whether a slot is in the session,
    /// `played` whether it has sent input.
    pub fn judge(
        &mut self,
        now: Instant,
        from: PeerId,
        req: PauseRequest,
        present: impl Fn(PeerId) -> bool,
        played: bool,
    ) -> Verdict {
        let i = from.index();
        if self.last_id[i] == Some(req.id) {
            return Verdict::Ignore;
        }
        self.last_id[i] = Some(req.id);
        match (req.pause, self.active) {
            (true, Some(_)) | (false, None) => Verdict::Ignore,
            (true, None) if !played => Verdict::Refuse(PauseRefusal::NotPlaying),
            (true, None) => {
                if let Some(free) = self.ran_out[i]
                    .map(|t| t + PAUSE_LIMIT)
                    .filter(|free| now < *free)
                {
                    return Verdict::Refuse(PauseRefusal::TooSoon {
                        wait_secs: secs_until(now, free),
                    });
                }
                let recent = &mut self.recent[i];
                while recent
                    .front()
                    .is_some_and(|t| now.saturating_duration_since(*t) >= PAUSE_WINDOW)
                {
                    recent.pop_front();
                }
                if recent.len() >= PAUSES_PER_WINDOW {
                    let free = recent[0] + PAUSE_WINDOW;
                    return Verdict::Refuse(PauseRefusal::TooMany {
                        wait_secs: secs_until(now, free),
                    });
                }
                recent.push_back(now);
                Verdict::Pause
            }
            (false, Some(a)) => {
                let owned_until = a.since + OWNED_FOR;
                if a.by == from || now >= owned_until || !present(a.by) {
                    Verdict::Resume
                } else {
                    Verdict::Refuse(PauseRefusal::NotYours {
                        wait_secs: secs_until(now, owned_until),
                    })
                }
            }
        }
    }

    /// Pauses at `frontier` if no pause was there already (else at the next frame: see
    /// [`Pauses::frame_published`]); the pause, if it took effect.
    pub fn pause(&mut self, now: Instant, by: PeerId, frontier: Frame) -> Option<Active> {
        if self.last_at == Some(frontier) {
            self.deferred = Some(by);
            return None;
        }
        let a = Active {
            by,
            at: frontier,
            since: now,
        };
        self.active = Some(a);
        self.deferred = None;
        self.last_at = Some(frontier);
        Some(a)
    }

    /// A frame was published and `frontier` is the next one: a deferred pause takes effect.
    pub fn frame_published(&mut self, now: Instant, frontier: Frame) -> Option<Active> {
        let by = self.deferred?;
        self.pause(now, by, frontier)
    }

    /// Ends the pause; it, if there was one.
    pub fn resume(&mut self) -> Option<Active> {
        self.active.take()
    }

    /// When the pause in force runs out.
    pub fn runs_out_at(&self) -> Option<Instant> {
        self.active.map(|a| a.since + PAUSE_LIMIT)
    }

    /// Ends the pause if it ran out by `now`; it, if so.
    pub fn run_out(&mut self, now: Instant) -> Option<Active> {
        let a = self.active.filter(|a| now >= a.since + PAUSE_LIMIT)?;
        self.ran_out[a.by.index()] = Some(now);
        self.active.take()
    }
}

fn secs_until(now: Instant, t: Instant) -> u32 {
    t.saturating_duration_since(now).as_secs_f64().ceil() as u32
}

/// Whether a round trip ending `now` whose timestamp was sent `rtt + hold` ago was taken
/// across the end of a silence at `silence_end` (see the module doc).
pub fn across_silence(now: Instant, sent_ago: Duration, silence_end: Option<Instant>) -> bool {
    silence_end.is_some_and(|end| now.checked_sub(sent_ago).is_none_or(|sent| sent < end))
}

/// A client's pause state: its pending request and what the server said.
#[derive(Debug, Default)]
pub struct ClientPause {
    next_id: u8,
    /// The request to send until a CTRL carrying it is acknowledged.
    pub pending: Option<PauseRequest>,
    /// The pause in force: who, and the frame it stops before.
    pub paused: Option<(PeerId, Frame)>,
    /// When the last pause ended: samples pushed before it do not measure the link.
    pub resumed_at: Option<Instant>,
    /// A spectator stood at the pause when it ended: it refills its buffer first.
    pub refill: bool,
    /// The frame loop stood still: said in CTRLs until one saying so is acknowledged.
    pub stopped: bool,
}

impl ClientPause {
    /// Asks for a pause (`true`) or a resume.
    pub fn request(&mut self, pause: bool) {
        self.pending = Some(PauseRequest {
            id: self.next_id,
            pause,
        });
        self.next_id = (self.next_id + 1) & 0x7f;
    }

    /// A CTRL carrying request `id` was acknowledged.
    pub fn acknowledged(&mut self, id: u8) {
        if self.pending.is_some_and(|p| p.id == id) {
            self.pending = None;
        }
    }

    /// The sample pushed at `at` was pushed after the last pause (if any) ended.
    pub fn pushed_since_resume(&self, at: Instant) -> bool {
        self.resumed_at.is_none_or(|r| at >= r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: u8, pause: bool) -> PauseRequest {
        PauseRequest { id, pause }
    }

    #[test]
    fn only_the_pauser_resumes_until_a_minute_passed_and_spam_is_refused() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut p = Pauses::default();
        let all = |_| true;
        let (ana, bob) = (PeerId(0), PeerId(1));
        assert_eq!(p.judge(t0, bob, req(0, true), all, true), Verdict::Pause);
        assert!(p.pause(t0, bob, Frame(100)).is_some());
        // The same request again (repeated until acknowledged): nothing.
        assert_eq!(p.judge(t0, bob, req(0, true), all, true), Verdict::Ignore);
        assert_eq!(
            p.judge(t0 + s(5), ana, req(0, false), all, true),
            Verdict::Refuse(PauseRefusal::NotYours { wait_secs: 55 })
        );
        assert_eq!(
            p.judge(t0 + s(60), ana, req(1, false), all, true),
            Verdict::Resume
        );
        assert!(p.resume().is_some());
        assert_eq!(
            p.judge(t0 + s(61), bob, req(1, true), all, true),
            Verdict::Pause
        );
        // At the same frame as the last pause: deferred to the next frame.
        assert!(p.pause(t0 + s(61), bob, Frame(100)).is_none());
        assert!(p.frame_published(t0 + s(61), Frame(101)).is_some());
        // Bob left while his pause lasted: anyone resumes.
        assert_eq!(
            p.judge(t0 + s(62), ana, req(2, false), |x| x != bob, true),
            Verdict::Resume
        );
        p.resume();
        // Three pauses a minute (bob's of 0 s is over a minute old), the fourth refused
        // until the oldest is a minute old.
        for (i, at) in [(2, 70), (3, 71)] {
            assert_eq!(
                p.judge(t0 + s(at), bob, req(i, true), all, true),
                Verdict::Pause
            );
            p.pause(t0 + s(at), bob, Frame(200 + i as u32));
            p.resume();
        }
        assert_eq!(
            p.judge(t0 + s(72), bob, req(4, true), all, true),
            Verdict::Refuse(PauseRefusal::TooMany { wait_secs: 49 })
        );
        // Others are not held to bob's count.
        assert_eq!(
            p.judge(t0 + s(72), ana, req(3, true), all, true),
            Verdict::Pause
        );
    }

    #[test]
    fn a_seat_never_played_may_not_pause_and_a_pause_runs_out_after_a_minute() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut p = Pauses::default();
        let all = |_| true;
        let (ana, bob) = (PeerId(0), PeerId(1));
        // Bob took a seat and sent no input: refused, and not counted against him.
        assert_eq!(
            p.judge(t0, bob, req(0, true), all, false),
            Verdict::Refuse(PauseRefusal::NotPlaying)
        );
        assert_eq!(p.judge(t0, bob, req(1, true), all, true), Verdict::Pause);
        p.pause(t0, bob, Frame(100));
        assert_eq!(p.runs_out_at(), Some(t0 + PAUSE_LIMIT));
        assert!(p.run_out(t0 + s(59)).is_none());
        let ended = p.run_out(t0 + s(60)).expect("runs out");
        assert_eq!((ended.by, ended.at), (bob, Frame(100)));
        assert_eq!(p.active(), None);
        assert_eq!(p.runs_out_at(), None);
        // Bob may not pause again for a minute; ana may at once.
        assert_eq!(
            p.judge(t0 + s(61), bob, req(2, true), all, true),
            Verdict::Refuse(PauseRefusal::TooSoon { wait_secs: 59 })
        );
        assert_eq!(
            p.judge(t0 + s(61), ana, req(0, true), all, true),
            Verdict::Pause
        );
        p.pause(t0 + s(61), ana, Frame(200));
        // A pause resumed by hand leaves no wait.
        p.resume();
        assert_eq!(
            p.judge(t0 + s(62), ana, req(1, true), all, true),
            Verdict::Pause
        );
        p.pause(t0 + s(62), ana, Frame(201));
        p.resume();
        assert_eq!(
            p.judge(t0 + s(120), bob, req(3, true), all, true),
            Verdict::Pause
        );
    }

    #[test]
    fn a_round_trip_across_a_silence_is_not_taken() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        assert!(!across_silence(t0 + ms(1000), ms(50), None));
        // Sent at 950, the silence ended at 900: a link measurement.
        assert!(!across_silence(t0 + ms(1000), ms(50), Some(t0 + ms(900))));
        // Sent at 500, before the silence ended at 900: not one.
        assert!(across_silence(t0 + ms(1000), ms(500), Some(t0 + ms(900))));
    }
}
