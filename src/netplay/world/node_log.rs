//! Each simulated player's recording, as netplay writes one on every peer: the real
//! recorder (`app::Recording`) into memory, with the start state, every frame's inputs, a
//! checksum every [`CHECKSUM_INTERVAL`] frames and a resync record wherever the machine's
//! state was replaced (a fresh state after a reconnect, a desync healed). At the end of a
//! scenario the log is replayed on a fresh toy machine (`app::replay`'s feed and checker):
//! every checksum must match.

use std::cell::RefCell;
use std::io::{self, Cursor, Write};
use std::rc::Rc;
use std::time::Instant;

use crate::app::replay::{LogObserver, ReplayFeed, ReplayMachine, Verification};
use crate::app::{Feed, FeedPoll, FrameObserver, Machine, Recording};
use crate::replay::{Header, Recorder, RecorderOptions, Replay, Sink, Start, Status};

use super::toy::Toy;

/// Frames between checksum records in the simulated logs.
pub const CHECKSUM_INTERVAL: u32 = 30;

/// A log's bytes in memory, shared with whoever reads them back.
#[derive(Clone, Default)]
pub struct MemSink(Rc<RefCell<Vec<u8>>>);

impl Write for MemSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Sink for MemSink {
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One node's log: recording while it plays, then its bytes.
#[derive(Clone, Default)]
pub struct NodeLog {
    recording: Rc<RefCell<Option<Recording<MemSink>>>>,
    bytes: MemSink,
    /// The recording began (the node's machine started running).
    begun: Rc<RefCell<bool>>,
}

impl NodeLog {
    /// Starts the log at session frame `start_frame` from `state` (`None`: power-on) and
    /// returns the observer the runner must call after the one that does the machine's work.
    pub fn begin(&self, start_frame: u32, state: Option<Vec<u8>>) -> Box<dyn FrameObserver<Toy>> {
        let header = Header {
            core_name: "toy".into(),
            core_version: "1".into(),
            start: state.map_or(Start::PowerOn, Start::State),
            start_frame,
            frame_rate: 60.0,
            checksum_interval: CHECKSUM_INTERVAL,
            netplay_context: true,
            ..Header::default()
        };
        let recorder = Recorder::with_sink(
            self.bytes.clone(),
            "sim.flr",
            &header,
            &RecorderOptions::default(),
        )
        .expect("a recorder in memory");
        let recording = Recording::from_recorder(recorder, &header);
        let observer = recording.observer();
        *self.recording.borrow_mut() = Some(recording);
        *self.begun.borrow_mut() = true;
        observer
    }

    /// The log's bytes so far (all of them once [`verify`](Self::verify) ended it).
    pub fn bytes(&self) -> Vec<u8> {
        self.bytes.0.borrow().clone()
    }

    /// The recording, once [`begin`](Self::begin) started it: where the core side records
    /// that the machine's state was replaced.
    pub fn recording(&self) -> Option<Recording<MemSink>> {
        self.recording.borrow().clone()
    }

    /// Ends the log (once) and replays it on a fresh toy machine: how many frames it held and
    /// what the checksums said. `None` for a node whose machine never ran.
    /// `diverge_at`: the node's machine went its own way there (a desync on purpose), and
    /// so does the one replaying.
    pub fn verify(&self, diverge_at: Option<u32>) -> Option<(u64, Verification, Option<Status>)> {
        if !*self.begun.borrow() {
            return None;
        }
        if let Some(r) = self.recording.borrow_mut().take() {
            r.finish();
        }
        let bytes = self.bytes.0.borrow().clone();
        let log = Replay::from_reader(Cursor::new(bytes), "sim.flr").expect("a readable log");
        let header = log.header().clone();
        let mut toy = Toy::diverging(diverge_at);
        if let Start::State(state) = &header.start {
            ReplayMachine::load_state(&mut toy, state).expect("the start state");
        }
        let mut feed = ReplayFeed::new(log, 1.0);
        let mut check = LogObserver::new(feed.state(), header.start_frame);
        if let Some(state) = feed.prime() {
            ReplayMachine::load_state(&mut toy, &state).expect("a resync state");
        }
        let now = Instant::now();
        let mut frames = 0;
        while let FeedPoll::Run(inputs) = feed.next(now) {
            toy.run_frame(&inputs);
            check
                .after_frame(frames, &inputs, &mut toy)
                .expect("the log's checker");
            frames += 1;
        }
        let verification = check.result().borrow().clone();
        let status = feed.state().borrow().status;
        Some((frames, verification, status))
    }
}
