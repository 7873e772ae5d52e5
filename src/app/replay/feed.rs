//! [`ReplayFeed`]: an input log's frames as a runner feed; [`LogObserver`]: checks the log's
//! checksums against the machine and loads its resync states as the frames run.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::rc::Rc;
use std::time::Instant;

use serde_json::{json, Map, Value};

use crate::app::record::StateChecksum;
use crate::app::runner::{Feed, FeedPoll, FrameObserver, ObserverError};
use crate::host::Core;
use crate::input::Inputs;
use crate::lockstep::Frame;
use crate::replay::{Event, Item, Replay, ReplayError, Status};

/// A machine a log can be replayed on: it has a checksum and can load a resync state.
pub trait ReplayMachine: StateChecksum {
    fn load_state(&mut self, state: &[u8]) -> Result<(), String>;
}

impl ReplayMachine for Core {
    fn load_state(&mut self, state: &[u8]) -> Result<(), String> {
        self.unserialize(state).map_err(|e| e.to_string())
    }
}

/// What the feed read ahead of the frames that ran, and how the log ended.
#[derive(Debug, Default)]
pub struct LogState {
    /// Checksum records not yet compared: (log frame, value, place in the log).
    checksums: VecDeque<(u32, u64, u64)>,
    /// Resync states to load before the given log frame runs, with their place in the log.
    resyncs: VecDeque<(u32, Vec<u8>, u64)>,
    /// Records read so far (the place of the next one).
    read: u64,
    /// Desyncs the recording session itself reported: (frame, local, remote).
    pub recorded_desyncs: Vec<(u32, u64, u64)>,
    /// Why reading stopped early (a corrupt record), if it did.
    pub error: Option<ReplayError>,
    /// How the log ended, once the feed reached its end.
    pub status: Option<Status>,
    /// The bits of a checksum the log's records hold (the header's `checksum_bits`).
    mask: Option<u64>,
}

/// The first checksum that differed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Desync {
    pub frame: u32,
    pub log: u64,
    pub replay: u64,
}

/// Checksum comparisons so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verification {
    pub checked: u64,
    pub matched: u64,
    /// Checksum records that came too late in the file to compare.
    pub skipped: u64,
    pub first_desync: Option<Desync>,
}

/// Feeds the frames of an input log in order, then `End`. Reads one frame ahead so that the
/// checksums and events recorded after a frame are known when that frame's observer runs.
pub struct ReplayFeed<R = BufReader<File>> {
    log: Replay<R>,
    /// The next frame to feed, read ahead.
    ahead: Option<Inputs>,
    primed: bool,
    state: Rc<RefCell<LogState>>,
    pace: Option<f64>,
    fed: u64,
}

impl<R: Read + Seek> ReplayFeed<R> {
    /// `speed` is relative to the core's frame rate (1.0: as recorded).
    pub fn new(log: Replay<R>, speed: f64) -> ReplayFeed<R> {
        let mask = log
            .header()
            .checksum_bits
            .filter(|&b| b < 64)
            .map(|b| (1u64 << b) - 1);
        ReplayFeed {
            log,
            ahead: None,
            primed: false,
            state: Rc::new(RefCell::new(LogState {
                mask,
                ..LogState::default()
            })),
            pace: (speed != 1.0).then_some(speed),
            fed: 0,
        }
    }

    /// Shared with the observer and read by the command after the run.
    pub fn state(&self) -> Rc<RefCell<LogState>> {
        self.state.clone()
    }

    /// Reads up to the first frame. Returns a resync state to load before it, if the log
    /// has one there (a session that resynchronised before its first frame).
    pub fn prime(&mut self) -> Option<Vec<u8>> {
        if !self.primed {
            self.primed = true;
            self.ahead = self.read_to_next_frame();
        }
        let first = self.log.header().start_frame;
        let mut s = self.state.borrow_mut();
        let mut state = None;
        while s.resyncs.front().is_some_and(|(f, _, _)| *f <= first) {
            state = s.resyncs.pop_front().map(|(_, st, _)| st);
        }
        state
    }

    /// Reads items up to the next frame, queueing checksums and events on the way.
    fn read_to_next_frame(&mut self) -> Option<Inputs> {
        loop {
            let item = match self.log.next_item() {
                Ok(Some(item)) => item,
                Ok(None) => {
                    self.state.borrow_mut().status = self.log.status();
                    return None;
                }
                Err(e) => {
                    self.state.borrow_mut().error = Some(e);
                    return None;
                }
            };
            let mut s = self.state.borrow_mut();
            let seq = s.read;
            s.read += 1;
            match item {
                Item::Frame(_, inputs) => return Some(inputs),
                Item::Checksum { frame, value } => s.checksums.push_back((frame.0, value, seq)),
                Item::Event {
                    frame: Frame(frame),
                    event,
                } => match event {
                    Event::Resync { state: Some(st) } => s.resyncs.push_back((frame, st, seq)),
                    Event::Desync { local, remote } => {
                        s.recorded_desyncs.push((frame, local, remote))
                    }
                    Event::Chat { slot, name, text } => {
                        let spectator = if slot >= 16 { " (spectator)" } else { "" };
                        let name = crate::wording::one_line(&name, 32);
                        let text = crate::wording::one_line(&text, 200);
                        tracing::info!("chat at frame {frame}: {name}{spectator}: {text}");
                    }
                    other => tracing::debug!("log event at frame {frame}: {other:?}"),
                },
            }
        }
    }
}

impl<R: Read + Seek> Feed for ReplayFeed<R> {
    fn sample(&mut self, _now: Instant, _local: &Inputs) {}

    fn next(&mut self, _now: Instant) -> FeedPoll {
        if !self.primed {
            self.prime();
        }
        match self.ahead.take() {
            Some(inputs) => {
                self.ahead = self.read_to_next_frame();
                self.fed += 1;
                FeedPoll::Run(inputs)
            }
            None => FeedPoll::End,
        }
    }

    fn pace(&self) -> Option<f64> {
        self.pace
    }

    fn stats(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("kind".into(), json!("replay"));
        m.insert("log".into(), json!(self.log.path().display().to_string()));
        m.insert("frames_fed".into(), json!(self.fed));
        m
    }
}

/// After each frame: loads a resync state recorded for the next frame (it replaced the state
/// after this one) and compares the log's checksum for this frame, if any, in the order the
/// log has them.
pub struct LogObserver {
    state: Rc<RefCell<LogState>>,
    result: Rc<RefCell<Verification>>,
    start_frame: u32,
}

impl LogObserver {
    pub fn new(state: Rc<RefCell<LogState>>, start_frame: u32) -> LogObserver {
        LogObserver {
            state,
            result: Rc::default(),
            start_frame,
        }
    }

    pub fn result(&self) -> Rc<RefCell<Verification>> {
        self.result.clone()
    }
}

impl<M: ReplayMachine> FrameObserver<M> for LogObserver {
    fn takes_checksum(&mut self, frame: u64) -> bool {
        let at = u64::from(self.start_frame) + frame;
        let s = self.state.borrow();
        // The feed reads a frame ahead: an ended log makes this its last frame, whose
        // checksum a session that ran to a frame limit took as well.
        s.status.is_some()
            || s.checksums
                .iter()
                .take_while(|(f, _, _)| u64::from(*f) <= at)
                .any(|(f, _, _)| u64::from(*f) == at)
    }

    fn after_frame(
        &mut self,
        frame: u64,
        _inputs: &Inputs,
        machine: &mut M,
    ) -> Result<(), ObserverError> {
        let at = u64::from(self.start_frame) + frame;
        let mut s = self.state.borrow_mut();
        let mut r = self.result.borrow_mut();
        // A resync replaced the state after this frame. The session records this frame's
        // checksum after the load when it loaded between frames (a desync recovery), and
        // before it when its machine jumped while no frame ran (a spectator's fresh state):
        // each checksum describes the machine as it was where it stands in the log.
        let resync_at = s
            .resyncs
            .iter()
            .find(|(f, _, _)| u64::from(*f) == at + 1)
            .map(|(_, _, seq)| *seq);
        if let Some(resync_at) = resync_at {
            check(&mut s, &mut r, at, machine, |seq| seq < resync_at);
        }
        while let Some((f, _, _)) = s.resyncs.front() {
            if u64::from(*f) > at + 1 {
                break;
            }
            let (f, state, _) = s.resyncs.pop_front().expect("front exists");
            if u64::from(f) == at + 1 {
                machine
                    .load_state(&state)
                    .map_err(|e| format!("loading the log's resync state for frame {f}: {e}"))?;
                tracing::info!("loaded the log's resync state before frame {f}");
            } else {
                tracing::warn!("resync state for frame {f} came too late in the log; ignored");
            }
        }
        check(&mut s, &mut r, at, machine, |_| true);
        Ok(())
    }
}

/// Compares the log's checksums for frame `at` that `take` accepts (by their place in the
/// log) with `machine`; older ones came too late to compare and are counted as skipped.
fn check<M: ReplayMachine>(
    s: &mut LogState,
    r: &mut Verification,
    at: u64,
    machine: &mut M,
    take: impl Fn(u64) -> bool,
) {
    while let Some(&(f, value, seq)) = s.checksums.front() {
        if u64::from(f) > at || (u64::from(f) == at && !take(seq)) {
            break;
        }
        s.checksums.pop_front();
        if u64::from(f) < at {
            r.skipped += 1;
            continue;
        }
        let got = machine.state_checksum() & s.mask.unwrap_or(u64::MAX);
        r.checked += 1;
        if got == value {
            r.matched += 1;
        } else if r.first_desync.is_none() {
            tracing::warn!(
                "replay diverged at frame {f}: log has {value:016x}, replay has {got:016x}"
            );
            r.first_desync = Some(Desync {
                frame: f,
                log: value,
                replay: got,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Pad, MAX_PLAYERS};
    use crate::replay::{Header, Recorder, RecorderOptions};
    use std::io::Cursor;

    /// A machine whose state is one number: the sum of player 1's pad values.
    #[derive(Default)]
    struct Adder(u64);

    impl StateChecksum for Adder {
        fn state_checksum(&mut self) -> u64 {
            self.0
        }
    }

    impl ReplayMachine for Adder {
        fn load_state(&mut self, state: &[u8]) -> Result<(), String> {
            self.0 = u64::from_le_bytes(state.try_into().map_err(|_| "bad state")?);
            Ok(())
        }
    }

    fn pads(f: u32) -> Inputs {
        let mut i = [Pad::NEUTRAL; MAX_PLAYERS];
        i[0] = Pad((f % 5) as u16);
        i
    }

    /// Records `frames` frames of `Adder` with a checksum every 10 frames; `tamper` may
    /// change the recorded checksum of a frame. A resync at `r` replaces the state after
    /// frame `r - 1`, as netplay does: after its inputs, before its checksum.
    fn log(frames: u32, tamper: impl Fn(u32, u64) -> u64, resync: Option<u32>) -> Vec<u8> {
        log_with(frames, tamper, resync, false)
    }

    /// `log`, with the resync recorded after frame `r - 1`'s checksum when `jump` (a
    /// spectator's machine jumping to a fresh state while no frame ran).
    fn log_with(
        frames: u32,
        tamper: impl Fn(u32, u64) -> u64,
        resync: Option<u32>,
        jump: bool,
    ) -> Vec<u8> {
        let mut buf = Vec::new();
        let header = Header {
            checksum_interval: 10,
            ..Header::default()
        };
        let opts = RecorderOptions::default();
        let mut rec = Recorder::with_sink(&mut buf, "t.flr", &header, &opts).unwrap();
        let mut m = Adder::default();
        let resync_at = |r: u32, m: &mut Adder, rec: &mut Recorder<&mut Vec<u8>>| {
            if resync == Some(r) {
                m.0 = 1_000_000 + u64::from(r);
                let state = Some(m.0.to_le_bytes().to_vec());
                rec.record_event(Frame(r), &Event::Resync { state })
                    .unwrap();
            }
        };
        resync_at(0, &mut m, &mut rec);
        for f in 0..frames {
            let i = pads(f);
            m.0 += u64::from(i[0].0);
            rec.record_frame(Frame(f), &i).unwrap();
            if !jump {
                resync_at(f + 1, &mut m, &mut rec);
            }
            if (f + 1) % 10 == 0 {
                rec.record_checksum(Frame(f), tamper(f, m.0)).unwrap();
            }
            if jump {
                resync_at(f + 1, &mut m, &mut rec);
            }
        }
        rec.finish().unwrap();
        buf
    }

    fn replay(bytes: Vec<u8>) -> (u64, Verification, Rc<RefCell<LogState>>) {
        let log = Replay::from_reader(Cursor::new(bytes), "t.flr").unwrap();
        let mut feed = ReplayFeed::new(log, 1.0);
        let mut obs = LogObserver::new(feed.state(), 0);
        let mut m = Adder::default();
        if let Some(st) = feed.prime() {
            m.load_state(&st).unwrap();
        }
        let now = Instant::now();
        let mut frame = 0;
        while let FeedPoll::Run(i) = feed.next(now) {
            m.0 += u64::from(i[0].0);
            obs.after_frame(frame, &i, &mut m).unwrap();
            frame += 1;
        }
        let v = obs.result().borrow().clone();
        (frame, v, feed.state())
    }

    #[test]
    fn a_faithful_log_verifies() {
        let (frames, v, st) = replay(log(95, |_, v| v, None));
        assert_eq!(frames, 95);
        assert_eq!((v.checked, v.matched, v.skipped), (9, 9, 0));
        assert_eq!(st.borrow().status, Some(Status::Complete { frames: 95 }));
    }

    #[test]
    fn the_first_differing_checksum_is_named() {
        let bytes = log(95, |f, v| if f >= 49 { v + 1 } else { v }, None);
        let (_, v, _) = replay(bytes);
        assert_eq!(v.checked, 9);
        assert_eq!(v.matched, 4);
        let d = v.first_desync.unwrap();
        assert_eq!((d.frame, d.log, d.replay), (49, d.replay + 1, d.replay));
    }

    #[test]
    fn resync_states_load_before_their_frame() {
        let (_, v, _) = replay(log(95, |_, v| v, Some(40)));
        assert_eq!((v.checked, v.matched), (9, 9));
        let (_, v, _) = replay(log(95, |_, v| v, Some(33)));
        assert_eq!((v.checked, v.matched), (9, 9));
        let (_, v, _) = replay(log(95, |_, v| v, Some(0)));
        assert_eq!((v.checked, v.matched), (9, 9));
        // A checksum recorded before the resync describes the machine before it.
        let (_, v, _) = replay(log_with(95, |_, v| v, Some(40), true));
        assert_eq!((v.checked, v.matched), (9, 9), "{:?}", v.first_desync);
        let (_, v, _) = replay(log_with(95, |_, v| v, Some(33), true));
        assert_eq!((v.checked, v.matched), (9, 9));
    }

    #[test]
    fn a_cut_log_ends_the_feed_with_its_status() {
        let mut bytes = log(95, |_, v| v, None);
        bytes.truncate(bytes.len() - 20);
        let (frames, v, st) = replay(bytes);
        let status = st.borrow().status.unwrap();
        assert!(matches!(status, Status::Truncated { .. }), "{status:?}");
        assert_eq!(frames, u64::from(status.frames()));
        assert_eq!(v.matched, v.checked);
    }
}
