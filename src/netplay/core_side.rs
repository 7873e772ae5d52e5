//! [`CoreSide`]: what the session's participant asks of the core (checksums, states to
//! send, states to load, jumps), done after every frame and while the feed waits, plus the
//! session's events written into the recording. It is generic over the machine
//! ([`SessionMachine`]): the libretro core here, the simulated world's toy in its tests, so
//! the world runs these rules as they ship. It reaches the feed only through its `Shared`
//! mailbox and must not import the link, the lobby or the window.

use std::collections::VecDeque;

use super::feed::{self, Shared};
use crate::app::{FrameObserver, Machine, ObserverError, Recording};
use crate::host::Core;
use crate::input::Inputs;
use crate::lockstep::Frame;
use crate::replay::Sink;
use crate::session::{CoreReply, CoreRequest};

/// Frames kept to replay after loading an older state from the host (10 s at 60 fps).
const HISTORY: usize = 600;

/// What the core side needs of a machine besides running frames.
pub(super) trait SessionMachine: Machine {
    /// The desync checksum the peers compare.
    fn session_checksum(&mut self) -> u64;
    /// The whole state, as a joiner loads it.
    fn serialize(&mut self) -> Result<Vec<u8>, String>;
    fn unserialize(&mut self, state: &[u8]) -> Result<(), String>;
    /// Writes the save RAM a fresh state came with (a state may not hold it).
    fn write_sram(&mut self, _sram: &[u8]) {}
}

impl SessionMachine for Core {
    fn session_checksum(&mut self) -> u64 {
        self.checksum()
    }
    fn serialize(&mut self) -> Result<Vec<u8>, String> {
        Core::serialize(self).map_err(|e| e.to_string())
    }
    fn unserialize(&mut self, state: &[u8]) -> Result<(), String> {
        Core::unserialize(self, state).map_err(|e| e.to_string())
    }
    fn write_sram(&mut self, sram: &[u8]) {
        Core::write_sram(self, sram);
    }
}

/// The core side of netplay, run after every frame and while the feed waits: it does what
/// the session's participant asks of the machine (`session::CoreRequest`: checksums, states
/// to send, states to load) and hands the answers back, and writes the session's events into
/// the recording.
pub(super) struct CoreSide<S: Sink + 'static = std::fs::File> {
    shared: Shared,
    /// `(session frame, inputs)` of the frames run lately.
    history: VecDeque<(u64, Inputs)>,
    recording: Option<Recording<S>>,
    /// The session frame of the runner's frame 0 (a late joiner's or spectator's start
    /// state is at a later frame than 0), moved on by jumps.
    base: u64,
    /// A desync recovery's state for a frame this machine has not reached yet.
    pending: Option<(u64, Vec<u8>)>,
}

impl<S: Sink + 'static> CoreSide<S> {
    pub(super) fn new(shared: Shared, recording: Option<Recording<S>>, base: u64) -> CoreSide<S> {
        CoreSide {
            shared,
            history: VecDeque::with_capacity(HISTORY),
            recording,
            base,
            pending: None,
        }
    }

    /// Loads the host's state as of the start of `frame` when this peer is at `next` (the
    /// next frame to run), re-running `frame..next` from the input history.
    fn load<M: SessionMachine>(
        &mut self,
        core: &mut M,
        frame: u64,
        next: u64,
        state: &[u8],
    ) -> bool {
        let oldest = self.history.front().map_or(next, |(f, _)| *f);
        if frame < oldest {
            tracing::error!(
                "netplay: the host's state for frame {frame} is older than this peer's input history (from {oldest}); waiting for a newer one"
            );
            return false;
        }
        if let Err(e) = core.unserialize(state) {
            tracing::error!("netplay: cannot load the host's state: {e}");
            return false;
        }
        for (_, inputs) in self.history.iter().filter(|(f, _)| *f >= frame) {
            core.run_frame(inputs);
        }
        // What the re-run frames played was heard already.
        core.discard_audio();
        true
    }

    /// Jumps to the state at the start of session frame `at` while the runner is at its
    /// frame `next`: the machine goes on from there (a spectator back from too far behind,
    /// a player back from a lost connection).
    fn jump<M: SessionMachine>(
        &mut self,
        core: &mut M,
        next: u64,
        at: u64,
        state: &[u8],
        sram: &[u8],
    ) -> bool {
        if !sram.is_empty() {
            core.write_sram(sram);
        }
        match core.unserialize(state) {
            Ok(()) => {
                self.base = at.saturating_sub(next);
                self.history.clear();
                if let Some(r) = &self.recording {
                    r.resync_state(next, core.serialize());
                }
                true
            }
            Err(e) => {
                tracing::error!("netplay: cannot load the fresh state: {e}");
                false
            }
        }
    }

    /// Does what was asked of the machine that can be done at the runner's frame `next`;
    /// `ran` is true right after a frame ran (checksums and states are taken then).
    fn work<M: SessionMachine>(&mut self, core: &mut M, next: u64, ran: bool) {
        let at_session = next + self.base;
        let requests: Vec<CoreRequest> = std::mem::take(&mut feed::lock(&self.shared).requests)
            .into_iter()
            .collect();
        let mut keep = VecDeque::new();
        let mut replies = Vec::new();
        for req in requests {
            match req {
                CoreRequest::Checksum { frame } if ran => replies.push(CoreReply::Checksum {
                    frame,
                    checksum: core.session_checksum(),
                }),
                CoreRequest::SaveState { for_slots } if ran || !for_slots.is_empty() => {
                    match core.serialize() {
                        Ok(state) => replies.push(CoreReply::State {
                            frame: Frame(at_session as u32),
                            state,
                            for_slots,
                        }),
                        Err(e) => tracing::error!("netplay: cannot serialize for a resync: {e}"),
                    }
                }
                CoreRequest::Load {
                    frame,
                    state,
                    sram,
                    jump: true,
                } => {
                    if self.jump(core, next, u64::from(frame.0), &state, &sram) {
                        replies.push(CoreReply::Loaded { frame });
                    }
                }
                CoreRequest::Load { frame, state, .. } => {
                    self.pending = Some((u64::from(frame.0), state));
                }
                other => keep.push_back(other),
            }
        }
        if let Some((at, state)) = self.pending.take() {
            if at <= at_session {
                if self.load(core, at, at_session, &state) {
                    replies.push(CoreReply::Loaded {
                        frame: Frame(at as u32),
                    });
                    if let Some(r) = &self.recording {
                        r.resync_state(next, core.serialize());
                    }
                }
            } else {
                self.pending = Some((at, state));
            }
        }
        let mut shared = feed::lock(&self.shared);
        shared.requests.extend(keep);
        shared.replies.extend(replies);
        self.record_events(&mut shared);
    }

    /// Writes the session's events into the recording.
    fn record_events(&self, shared: &mut feed::CoreWork) {
        if let Some(r) = &self.recording {
            for (at, event) in shared.events.drain(..) {
                // In the log's numbering, which starts at its start state.
                r.event(u64::from(at.0).saturating_sub(self.base), &event);
            }
        } else {
            shared.events.clear();
        }
    }

    /// Whether anything asked of the machine can be done once the runner's frame `next` is
    /// the next to run (`ran`: right after a frame).
    fn has_work(&self, next: u64, ran: bool) -> bool {
        let pending = self
            .pending
            .as_ref()
            .is_some_and(|(at, _)| *at <= next + self.base);
        let shared = feed::lock(&self.shared);
        pending
            || shared.requests.iter().any(|r| match r {
                CoreRequest::Checksum { .. } => ran,
                CoreRequest::SaveState { for_slots } => ran || !for_slots.is_empty(),
                CoreRequest::Load { .. } => true,
            })
    }

    fn push_history(&mut self, session_frame: u64, inputs: &Inputs) {
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back((session_frame, *inputs));
    }
}

impl<M: SessionMachine, S: Sink + 'static> FrameObserver<M> for CoreSide<S> {
    /// Jumps wait for the runner to stop running frames (the participant hands out none
    /// until the state is loaded).
    fn idle(&mut self, next: u64, core: &mut M) -> Result<(), ObserverError> {
        self.work(core, next, false);
        Ok(())
    }

    /// A stall needs the machine on the agreed frames only to do what was asked of it.
    fn idle_needs_machine(&mut self, next: u64) -> bool {
        self.has_work(next, false)
    }

    /// Checksums, states and loads need the machine; the history and the recording's
    /// events do not.
    fn needs_machine(&mut self, frame: u64) -> bool {
        self.has_work(frame + 1, true)
    }

    fn takes_checksum(&mut self, _frame: u64) -> bool {
        feed::lock(&self.shared)
            .requests
            .iter()
            .any(|r| matches!(r, CoreRequest::Checksum { .. }))
    }

    fn after_frame_ahead(&mut self, frame: u64, inputs: &Inputs) -> Result<(), ObserverError> {
        self.push_history(frame + self.base, inputs);
        let mut shared = feed::lock(&self.shared);
        self.record_events(&mut shared);
        Ok(())
    }

    fn after_frame(
        &mut self,
        frame: u64,
        inputs: &Inputs,
        core: &mut M,
    ) -> Result<(), ObserverError> {
        self.push_history(frame + self.base, inputs);
        self.work(core, frame + 1, true);
        Ok(())
    }
}
