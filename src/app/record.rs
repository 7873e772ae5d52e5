//! Recording a session to an input log (`.flr`, see [`crate::replay`]): a frame observer that
//! writes every frame's inputs and a state checksum every N frames, for `play --record` and
//! for netplay (which records on every peer by default).
//!
//! Checksum convention (the same as netplay's desync checks): the checksum recorded for frame
//! `f` is the machine's checksum after frame `f` ran, taken when `(f + 1) % N == 0`; frame `f`
//! runs from its own state saved and loaded just before it (`FrameObserver::takes_checksum`),
//! so a replay, a peer that rolled back and one that never loaded all checksum one picture.
//!
//! A recording never stops the game: after a write error (full disk) it logs one error naming
//! the file, stops writing and the session goes on. The file then replays up to its last
//! complete record.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::host::{hash_file, Core, CoreSource, HostError, MemoryRegion};
use crate::input::{Inputs, MAX_PLAYERS};
use crate::lockstep::{Frame, PeerId, Roster};
use crate::replay::{
    self, Event, Header, Recorder, RecorderOptions, Replay, ReplayError, Sink, Start, Status,
};
use serde_json::{json, Value};

use super::options::PlayOptions;
pub use super::options::RecordMode;
use super::runner::{FrameObserver, ObserverError};

/// Frames between checksum records unless the caller says otherwise (netplay's default too).
pub const DEFAULT_CHECKSUM_INTERVAL: u32 = 60;

/// Written data older than this is flushed even if the recorder's frame count says not yet
/// (frames arriving slowly, e.g. a stalling netplay session).
const FLUSH_AFTER: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Log(#[from] ReplayError),
    #[error("cannot create recordings directory {}: {}", .path.display(), crate::wording::io_reason(.io))]
    Dir { path: PathBuf, io: std::io::Error },
    #[error("cannot record: reading content {}: {}", .path.display(), crate::wording::io_reason(.io))]
    Content { path: PathBuf, io: std::io::Error },
    #[error("cannot record: the core's start state: {0}")]
    StartState(HostError),
}

/// What a recorder needs from the machine besides its inputs.
pub trait StateChecksum {
    fn state_checksum(&mut self) -> u64;
}

impl StateChecksum for Core {
    fn state_checksum(&mut self) -> u64 {
        self.checksum()
    }
}

/// When a recording begins, in Unix seconds: `SOURCE_DATE_EPOCH` if set (reproducible
/// output, as reproducible builds use it: two runs of the same inputs make identical
/// files), else now.
fn created_unix() -> i64 {
    source_date_epoch().unwrap_or_else(|| chrono::Utc::now().timestamp())
}

fn source_date_epoch() -> Option<i64> {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Reproducible output was asked for (`SOURCE_DATE_EPOCH`): the log's blocks are cut by
/// frame count alone, not also by the wall clock.
fn reproducible() -> bool {
    static SET: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SET.get_or_init(|| source_date_epoch().is_some())
}

/// The path `mode` records to, for a session played as `role` ("play", "host", "join");
/// `None` when off. Creates the recordings directory.
pub fn resolve_path(mode: &RecordMode, role: &str) -> Result<Option<PathBuf>, RecordError> {
    match mode {
        RecordMode::Off => Ok(None),
        RecordMode::File(p) => Ok(Some(p.clone())),
        RecordMode::Dir(dir) => {
            std::fs::create_dir_all(dir).map_err(|io| RecordError::Dir {
                path: dir.clone(),
                io,
            })?;
            Ok(Some(replay::default_recording_path(
                dir,
                chrono::Local::now(),
                role,
            )))
        }
    }
}

/// The header for a session about to start on `core` (content loaded, no frame run yet):
/// core and content identity, every option value, the players, and the start state. The
/// state is loaded straight back, so the recorded run starts exactly as its replays will.
pub fn session_header(
    core: &mut Core,
    opts: &PlayOptions,
    players: &Roster,
    checksum_interval: u32,
) -> Result<Header, RecordError> {
    let info = core.info().clone();
    let (content_name, content_hash, content_path) = match &opts.content {
        Some(path) => {
            let hash = match core.content_hash() {
                Some(h) => h,
                None => hash_file(path).map_err(|io| RecordError::Content {
                    path: path.clone(),
                    io,
                })?,
            };
            let name = path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            (name, Some(hash), path_hint(path))
        }
        None => (String::new(), None, None),
    };
    let core_path = match &opts.core {
        CoreSource::Builtin => Some(String::new()),
        CoreSource::Path(p) => path_hint(p),
    };
    let start = match core.serialize() {
        Ok(state) => {
            core.unserialize(&state).map_err(RecordError::StartState)?;
            Start::State(state)
        }
        Err(HostError::SerializeUnsupported) => {
            tracing::warn!(
                "{} cannot save states: the recording starts from power-on",
                info.library_name
            );
            Start::PowerOn
        }
        Err(e) => return Err(RecordError::StartState(e)),
    };
    let mut names: [Option<String>; MAX_PLAYERS] = Default::default();
    for (seat, name) in players.iter() {
        if let Some(n) = names.get_mut(seat.index()) {
            *n = Some(name.to_string());
        }
    }
    Ok(Header {
        core_name: info.library_name,
        core_version: info.library_version,
        content_name,
        content_hash,
        core_options: core.options(),
        players: names,
        start,
        start_frame: 0,
        frame_rate: core.av_info().fps,
        checksum_interval,
        created_unix: created_unix(),
        core_path,
        content_path,
        start_sram: core.memory(MemoryRegion::SaveRam).map(<[u8]>::to_vec),
        netplay_context: opts.host.netplay,
        netplay_mode: None,
        checksum_bits: None,
    })
}

/// An absolute UTF-8 spelling of `path`, if it has one (the format stores text).
fn path_hint(path: &Path) -> Option<String> {
    let abs = std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .ok()?;
    abs.to_str().map(str::to_owned)
}

/// A recording file made before the session starts (see [`reserve`]); removed again if the
/// session never starts.
#[derive(Debug)]
pub struct Reserved {
    path: PathBuf,
    /// `None` once [`begin`] took it.
    file: Option<std::fs::File>,
}

impl Drop for Reserved {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            // Made by us a moment ago (never an existing file) and still empty.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Creates the file `mode` records to for a session played as `role` ("play", "host",
/// "join") before the session starts, so that a path that cannot be written (it exists, its
/// folder is missing or read-only) fails at once rather than after a netplay lobby. `None`
/// when off. Creates the recordings directory.
pub fn reserve(mode: &RecordMode, role: &str) -> Result<Option<Reserved>, RecordError> {
    let Some(mut path) = resolve_path(mode, role)? else {
        return Ok(None);
    };
    let mut tries = 0;
    loop {
        match replay::open_log_file(&path, false) {
            Ok(file) => {
                return Ok(Some(Reserved {
                    path,
                    file: Some(file),
                }))
            }
            // Another process took the dated name since we looked (peers sharing a directory).
            Err(ReplayError::Exists { .. })
                if matches!(mode, RecordMode::Dir(_)) && tries < 100 =>
            {
                tries += 1;
                path = resolve_path(mode, role)?.unwrap_or(path);
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Starts recording into `reserved` a session about to start on `core` (see
/// [`session_header`]). `players` names the ports in use.
pub fn begin(
    reserved: Reserved,
    opts: &PlayOptions,
    core: &mut Core,
    players: &Roster,
    checksum_interval: u32,
) -> Result<Recording, RecordError> {
    begin_at(reserved, opts, core, players, checksum_interval, 0, None)
}

/// [`begin`] for a session the recording joins at `start_frame` (a late joiner's or a
/// spectator's start state): the log numbers its frames from there.
fn begin_at(
    mut reserved: Reserved,
    opts: &PlayOptions,
    core: &mut Core,
    players: &Roster,
    checksum_interval: u32,
    start_frame: u32,
    mode: Option<&str>,
) -> Result<Recording, RecordError> {
    // On an error the reservation's drop removes the empty file.
    let mut header = session_header(core, opts, players, checksum_interval)?;
    header.start_frame = start_frame;
    header.netplay_mode = mode.map(str::to_string);
    let Some(file) = reserved.file.take() else {
        return Err(ReplayError::Invalid("recording file already used").into());
    };
    let rec = Recorder::create_in(file, &reserved.path, &header, &RecorderOptions::default())?;
    tracing::info!("recording to {}", reserved.path.display());
    Ok(Recording::from_recorder(rec, &header))
}

/// Starts recording `opts.record` for a session played as `role`, if it asks for one.
/// `players` names the ports in use.
pub fn start(
    opts: &PlayOptions,
    core: &mut Core,
    role: &str,
    players: &Roster,
    checksum_interval: u32,
) -> Result<Option<Recording>, RecordError> {
    match reserve(&opts.record, role)? {
        Some(reserved) => begin(reserved, opts, core, players, checksum_interval).map(Some),
        None => Ok(None),
    }
}

/// The netplay hook: like [`begin`], but a recording that cannot start is logged, not fatal
/// (the session is already established). Call it before the first frame runs, register
/// [`Recording::observer`] on the runner and [`Recording::finish`] it after the session.
pub fn begin_netplay(
    reserved: Option<Reserved>,
    opts: &PlayOptions,
    core: &mut Core,
    players: &Roster,
    checksum_interval: u32,
    start_frame: u32,
    mode: &str,
) -> Option<Recording> {
    begin_at(
        reserved?,
        opts,
        core,
        players,
        checksum_interval,
        start_frame,
        Some(mode),
    )
    .map_err(|e| tracing::error!("not recording this session: {e}"))
    .ok()
}

/// The local players of `play`: the keyboard players (at least one).
pub fn local_players(opts: &PlayOptions) -> Roster {
    (0..opts.keymaps.len().clamp(1, MAX_PLAYERS) as u8)
        .map(|p| (PeerId(p), PeerId(p).to_string()))
        .collect()
}

/// What the [`Recording`] handle and the runner's observer both reach: the recorder and its
/// bookkeeping.
struct RecordingState<S: Sink> {
    /// `None` once finished or stopped after an error.
    recorder: Option<Recorder<S>>,
    path: PathBuf,
    start_frame: u32,
    checksum_interval: u64,
    /// When data last reached the file (or the recording began).
    flushed_at: Instant,
    flushed_bytes: u64,
    /// Frames the session ran, recorded or not.
    frames_run: u64,
    /// Why recording stopped early (a write error), if it did.
    failure: Option<String>,
}

impl<S: Sink> RecordingState<S> {
    /// Logs `e` once and stops recording; the session goes on.
    fn stop(&mut self, e: &ReplayError) {
        if self.recorder.take().is_some() {
            tracing::error!(
                "recording stopped, the game goes on ({e}); {} keeps what was written before",
                self.path.display()
            );
            self.failure = Some(e.to_string());
        }
    }

    /// Whether the frame after which a checksum is recorded is `frame`.
    fn checksum_due(&self, frame: u64) -> bool {
        self.recorder.is_some() && (frame + 1).is_multiple_of(self.checksum_interval)
    }

    /// Records `frame`; `machine` is on the state after it, or `None` when it ran ahead and
    /// no checksum is due (see [`checksum_due`](Self::checksum_due)).
    fn after_frame(
        &mut self,
        frame: u64,
        inputs: &Inputs,
        machine: Option<&mut dyn StateChecksum>,
    ) {
        self.frames_run = self.frames_run.max(frame + 1);
        let Some(rec) = self.recorder.as_mut() else {
            return;
        };
        let Some(log_frame) = u32::try_from(frame)
            .ok()
            .and_then(|f| f.checked_add(self.start_frame))
            .map(Frame)
        else {
            self.stop(&ReplayError::Invalid("frame number overflow"));
            return;
        };
        let mut result = rec.record_frame(log_frame, inputs);
        if result.is_ok() && (frame + 1).is_multiple_of(self.checksum_interval) {
            match machine {
                Some(machine) => result = rec.record_checksum(log_frame, machine.state_checksum()),
                None => tracing::error!("recording: no machine for the checksum of frame {frame}"),
            }
        }
        if result.is_ok() {
            if rec.bytes_written() != self.flushed_bytes {
                self.flushed_bytes = rec.bytes_written();
                self.flushed_at = Instant::now();
            } else if self.flushed_at.elapsed() >= FLUSH_AFTER && !reproducible() {
                result = rec.flush();
                self.flushed_bytes = rec.bytes_written();
                self.flushed_at = Instant::now();
            }
        }
        if let Err(e) = result {
            self.stop(&e);
        }
    }
}

/// A session being recorded. The runner holds its [`Recording::observer`]; the session code
/// keeps this handle to add events and to [`Recording::finish`] at the end.
pub struct Recording<S: Sink + 'static = std::fs::File> {
    shared: Rc<RefCell<RecordingState<S>>>,
}

impl<S: Sink + 'static> Recording<S> {
    /// Wraps a recorder just created with `header`.
    pub fn from_recorder(recorder: Recorder<S>, header: &Header) -> Recording<S> {
        let shared = RecordingState {
            path: recorder.path().to_path_buf(),
            flushed_bytes: recorder.bytes_written(),
            recorder: Some(recorder),
            start_frame: header.start_frame,
            checksum_interval: u64::from(header.checksum_interval).max(1),
            flushed_at: Instant::now(),
            frames_run: 0,
            failure: None,
        };
        Recording {
            shared: Rc::new(RefCell::new(shared)),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.shared.borrow().path.clone()
    }

    /// False once a write error stopped the recording.
    pub fn is_recording(&self) -> bool {
        self.shared.borrow().recorder.is_some()
    }

    /// The frame observer to register on the runner (`runner.observe(rec.observer())`).
    pub fn observer<M: StateChecksum + 'static>(&self) -> Box<dyn FrameObserver<M>> {
        Box::new(Observer {
            shared: self.shared.clone(),
        })
    }

    /// Records an event (desync, resync, ...) at runner frame `frame`.
    pub fn event(&self, frame: u64, event: &Event) {
        let mut s = self.shared.borrow_mut();
        let at = u32::try_from(frame)
            .ok()
            .and_then(|f| f.checked_add(s.start_frame))
            .map(Frame);
        let result = match (s.recorder.as_mut(), at) {
            (None, _) => return,
            (Some(rec), Some(at)) => rec.record_event(at, event),
            (Some(_), None) => Err(ReplayError::Invalid("frame number overflow")),
        };
        if let Err(e) = result {
            s.stop(&e);
        }
    }

    /// Records that the machine's state was replaced after runner frame `next - 1` (a netplay
    /// resync): stores the state `core` has now, which replays load at the same point. Call it
    /// right after the load, before this recording's observer sees frame `next - 1`.
    pub fn resync(&self, next: u64, core: &mut Core) {
        self.resync_state(next, core.serialize().map_err(|e| e.to_string()));
    }

    /// [`resync`](Self::resync) with the state already taken (or why it could not be).
    pub fn resync_state(&self, next: u64, state: Result<Vec<u8>, String>) {
        match state {
            Ok(state) => self.event(next, &Event::Resync { state: Some(state) }),
            Err(e) => {
                // Replays could not follow past this point: keep what is valid and stop.
                tracing::error!("cannot record the resynced state: {e}");
                let e = ReplayError::Invalid("the resynced state could not be saved");
                self.shared.borrow_mut().stop(&e);
            }
        }
    }

    /// Ends the log cleanly and says where it went, or, if a write error stopped it, how
    /// much of the session the file keeps (read back from the file).
    pub fn finish(self) -> Outcome {
        let mut s = self.shared.borrow_mut();
        let path = s.path.clone();
        let played = s.frames_run;
        let failure = match s.recorder.take().map(Recorder::finish) {
            Some(Ok(summary)) => {
                tracing::info!(
                    "recording saved to {} ({})",
                    path.display(),
                    crate::wording::n_frames(summary.frames)
                );
                return Outcome {
                    path,
                    frames: Some(u64::from(summary.frames)),
                    played,
                    failure: None,
                };
            }
            Some(Err(e)) => e.to_string(),
            None => s.failure.clone().unwrap_or_else(|| "stopped".into()),
        };
        // What a replay of it will find: the frames up to its last complete record.
        let frames = Replay::open(&path)
            .and_then(|mut log| log.skim())
            .map(|status: Status| u64::from(status.frames()))
            .ok();
        let kept = frames.map_or("an unknown number".into(), |n| n.to_string());
        tracing::error!(
            "recording incomplete: {} keeps {kept} of the session's {played} frames and \
             replays up to there ({failure})",
            path.display()
        );
        Outcome {
            path,
            frames,
            played,
            failure: Some(failure),
        }
    }
}

/// How a recording ended: for the last log line and `--stats-json`'s `recording`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub path: PathBuf,
    /// Frames the file holds (`None`: it could not be read back).
    pub frames: Option<u64>,
    /// Frames the session ran.
    pub played: u64,
    /// Why it stopped early: `None` if the log is complete.
    pub failure: Option<String>,
}

impl Outcome {
    pub fn is_complete(&self) -> bool {
        self.failure.is_none()
    }

    /// `{"path", "frames", "complete", "error"}` for `--stats-json`.
    pub fn to_json(&self) -> Value {
        json!({
            "path": self.path.display().to_string(),
            "frames": self.frames,
            "complete": self.is_complete(),
            "error": self.failure,
        })
    }
}

impl<S: Sink + 'static> Clone for Recording<S> {
    /// Another handle to the same recording (e.g. for the code that records resyncs).
    fn clone(&self) -> Recording<S> {
        Recording {
            shared: self.shared.clone(),
        }
    }
}

struct Observer<S: Sink> {
    shared: Rc<RefCell<RecordingState<S>>>,
}

impl<M: StateChecksum, S: Sink> FrameObserver<M> for Observer<S> {
    fn after_frame(
        &mut self,
        frame: u64,
        inputs: &Inputs,
        machine: &mut M,
    ) -> Result<(), ObserverError> {
        self.shared
            .borrow_mut()
            .after_frame(frame, inputs, Some(machine));
        Ok(())
    }

    fn needs_machine(&mut self, frame: u64) -> bool {
        self.shared.borrow().checksum_due(frame)
    }

    fn takes_checksum(&mut self, frame: u64) -> bool {
        self.shared.borrow().checksum_due(frame)
    }

    fn after_frame_ahead(&mut self, frame: u64, inputs: &Inputs) -> Result<(), ObserverError> {
        self.shared.borrow_mut().after_frame(frame, inputs, None);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Pad;
    use crate::replay::{Item, RecorderOptions, Replay, Status};
    use std::io::{self, Cursor, Write};

    /// A machine whose checksum is the number of frames it ran.
    struct Counter(u64);

    impl StateChecksum for Counter {
        fn state_checksum(&mut self) -> u64 {
            self.0 * 1000
        }
    }

    /// A sink that accepts `room` bytes, then fails like a full disk; what it accepted is
    /// also in `file`, if given (a real file to read back).
    struct Disk {
        data: Rc<RefCell<Vec<u8>>>,
        room: usize,
        file: Option<std::fs::File>,
    }

    impl Write for Disk {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let mut d = self.data.borrow_mut();
            let n = buf.len().min(self.room.saturating_sub(d.len()));
            if n == 0 && !buf.is_empty() {
                return Err(io::Error::from_raw_os_error(28));
            }
            d.extend_from_slice(&buf[..n]);
            if let Some(f) = &mut self.file {
                f.write_all(&buf[..n])?;
            }
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Sink for Disk {
        fn sync(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn run(rec: &Recording<Disk>, frames: std::ops::Range<u64>) {
        let mut obs = rec.observer::<Counter>();
        for f in frames {
            let mut inputs = [Pad::NEUTRAL; MAX_PLAYERS];
            inputs[1] = Pad((f / 10) as u16);
            let mut m = Counter(f + 1);
            obs.after_frame(f, &inputs, &mut m).unwrap();
        }
    }

    fn recording(room: usize) -> (Recording<Disk>, Rc<RefCell<Vec<u8>>>) {
        recording_at(room, None)
    }

    /// A recording onto a disk with `room` bytes, mirrored into the file at `path` if given.
    fn recording_at(room: usize, path: Option<&Path>) -> (Recording<Disk>, Rc<RefCell<Vec<u8>>>) {
        let data = Rc::new(RefCell::new(Vec::new()));
        let disk = Disk {
            data: data.clone(),
            room,
            file: path.map(|p| std::fs::File::create_new(p).unwrap()),
        };
        let header = Header::default();
        let path = path.unwrap_or(Path::new("disk.flr"));
        let rec = Recorder::with_sink(disk, path, &header, &RecorderOptions::default()).unwrap();
        (Recording::from_recorder(rec, &header), data)
    }

    #[test]
    fn records_inputs_and_checksums_after_every_nth_frame() {
        let (rec, data) = recording(usize::MAX);
        run(&rec, 0..200);
        rec.event(130, &Event::Left { slot: 1 });
        let outcome = rec.finish();
        assert_eq!((outcome.frames, outcome.played), (Some(200), 200));
        assert!(outcome.is_complete());
        assert_eq!(outcome.to_json()["complete"], true);
        let bytes = data.borrow().clone();
        let mut log = Replay::from_reader(Cursor::new(bytes), "disk.flr").unwrap();
        let mut sums = Vec::new();
        let mut frames = 0;
        while let Some(item) = log.next_item().unwrap() {
            match item {
                Item::Frame(f, inputs) => {
                    assert_eq!(inputs[1], Pad((f.0 / 10) as u16));
                    frames += 1;
                }
                Item::Checksum { frame, value } => sums.push((frame.0, value)),
                Item::Event { frame, event } => {
                    assert_eq!((frame, event), (Frame(130), Event::Left { slot: 1 }))
                }
            }
        }
        assert_eq!(frames, 200);
        // State after frame 59 is the 60th frame's: (f + 1) % 60 == 0.
        assert_eq!(sums, vec![(59, 60_000), (119, 120_000), (179, 180_000)]);
        assert_eq!(log.status(), Some(Status::Complete { frames: 200 }));
    }

    #[test]
    fn a_full_disk_stops_the_recording_not_the_game() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("full.flr");
        let (rec, data) = recording_at(400, Some(&path));
        run(&rec, 0..3000); // the observer never returns an error
        assert!(!rec.is_recording());
        let outcome = rec.finish();
        // The outcome says what the file keeps, read back from it, and why it stopped.
        assert!(!outcome.is_complete());
        assert_eq!(outcome.played, 3000);
        let error = outcome.failure.clone().unwrap();
        assert!(error.contains("os error 28"), "{error}");
        let bytes = data.borrow().clone();
        assert_eq!(bytes.len(), 400);
        let mut log = Replay::from_reader(Cursor::new(bytes), "disk.flr").unwrap();
        let status = log.skim().unwrap();
        assert!(
            matches!(status, Status::Truncated { .. } | Status::Incomplete { .. }),
            "{status:?}"
        );
        assert!(status.frames() > 0);
        assert_eq!(outcome.frames, Some(u64::from(status.frames())));
        let json = outcome.to_json();
        assert_eq!(json["complete"], false);
        assert_eq!(json["frames"], u64::from(status.frames()));
        assert_eq!(json["path"], path.display().to_string());
    }

    #[test]
    fn stalled_frames_are_flushed_after_a_second() {
        let (rec, data) = recording(usize::MAX);
        run(&rec, 0..10);
        let header_only = data.borrow().len();
        rec.shared.borrow_mut().flushed_at = Instant::now() - FLUSH_AFTER;
        run(&rec, 10..11);
        assert!(data.borrow().len() > header_only, "buffered frames written");
    }

    #[test]
    fn dir_mode_makes_a_dated_file_name() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("rec");
        let p = resolve_path(&RecordMode::Dir(sub.clone()), "host")
            .unwrap()
            .unwrap();
        assert!(sub.is_dir());
        assert_eq!(p.parent(), Some(sub.as_path()));
        assert!(
            p.to_str().unwrap().ends_with("_host.flr"),
            "{}",
            p.display()
        );
        assert_eq!(resolve_path(&RecordMode::Off, "host").unwrap(), None);
    }
}
