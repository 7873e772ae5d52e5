//! `Recorder`: appends an input log to its final path while the session runs.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::format::{self, Event, Header, MAX_BLOCK_FRAMES};
use super::ReplayError;
use crate::input::{Inputs, Pad, MAX_PLAYERS};
use crate::lockstep::Frame;

/// Where a `Recorder` writes: a `Write` that can also be made durable.
/// `File` is the real one; tests inject sinks that fail like a full disk.
pub trait Sink: Write {
    /// Makes everything written so far durable (fsync).
    fn sync(&mut self) -> io::Result<()>;
}

impl Sink for File {
    fn sync(&mut self) -> io::Result<()> {
        self.sync_data()
    }
}

impl Sink for Vec<u8> {
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn sync(&mut self) -> io::Result<()> {
        (**self).sync()
    }
}

/// How a `Recorder` creates and flushes its file.
#[derive(Clone, Debug, Default)]
pub struct RecorderOptions {
    /// Replace an existing file instead of refusing with `ReplayError::Exists`.
    pub overwrite: bool,
    /// Write buffered records at least every this many frames.
    /// `None`: one second of frames at the header's frame rate (60 at 60 fps).
    pub flush_frames: Option<u32>,
    /// Also fsync every this many flushes. `None`: only after the header and in `finish`/`sync`.
    pub sync_every: Option<u32>,
}

/// What `Recorder::finish` wrote.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Summary {
    /// Frames in the file.
    pub frames: u32,
    /// The file's size.
    pub bytes: u64,
}

/// Records a session's inputs, checksums and events to an `.flr` file as they happen.
///
/// Call order: `create`, then per emulated frame `record_frame` (consecutive frame numbers
/// starting at `header.start_frame`), with `record_checksum`/`record_event` whenever they occur,
/// and `finish` at the end. Records land in the file in call order.
///
/// Crash safety: the header is written and fsynced by `create`; frames are buffered into blocks
/// and written (write + flush, so a killed process loses nothing already flushed) at least every
/// `flush_frames` frames and on every event. Each record is self-checking, so after a crash,
/// `kill -9` or a full disk the file replays up to its last complete record. After a write error
/// the recorder writes nothing more: the file may end in a partial record, which readers report
/// as `Status::Truncated` and never misread. Dropping without `finish` flushes (without `End`).
pub struct Recorder<S: Sink = File> {
    path: PathBuf,
    sink: S,
    /// Next frame `record_frame` accepts.
    next_frame: u32,
    frames: u32,
    /// Frames buffered for the open block, and the first one's index.
    block: Vec<Inputs>,
    block_first: u32,
    /// Inputs of the frame before the open block (delta base, carried across blocks).
    prev: Inputs,
    /// Encoded records not yet handed to the sink.
    pending: Vec<u8>,
    /// Check of the last encoded record (seed of the next one).
    chain: u32,
    since_flush: u32,
    flush_frames: u32,
    sync_every: Option<u32>,
    flushes: u32,
    bytes: u64,
    failed: bool,
    finished: bool,
}

impl Recorder<File> {
    /// Creates `path` (refusing to replace an existing file) and writes the header.
    pub fn create(path: impl AsRef<Path>, header: &Header) -> Result<Recorder, ReplayError> {
        Recorder::create_with(path, header, &RecorderOptions::default())
    }

    /// `create` with options (how often the file is synced).
    pub fn create_with(
        path: impl AsRef<Path>,
        header: &Header,
        opts: &RecorderOptions,
    ) -> Result<Recorder, ReplayError> {
        let path = path.as_ref();
        let file = open_log_file(path, opts.overwrite)?;
        Recorder::create_in(file, path, header, opts)
    }

    /// Writes the header into `file`, just made at `path` by [`open_log_file`] (possibly a
    /// while ago: netplay makes it before its lobby, so a path it cannot write is known
    /// before anyone waits). On failure the file is removed unless `opts.overwrite`.
    pub fn create_in(
        file: File,
        path: &Path,
        header: &Header,
        opts: &RecorderOptions,
    ) -> Result<Recorder, ReplayError> {
        let rec = Recorder::with_sink(file, path, header, opts);
        if rec.is_err() && !opts.overwrite {
            // Nothing usable reached the file we just made: don't leave a stub behind.
            let _ = std::fs::remove_file(path);
        }
        let rec = rec?;
        // Make the new directory entry durable too (best effort; not every platform can).
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(rec)
    }
}

/// Creates `path` for a new log, refusing to replace an existing file unless `overwrite`.
pub fn open_log_file(path: &Path, overwrite: bool) -> Result<File, ReplayError> {
    let mut oo = OpenOptions::new();
    oo.write(true);
    if overwrite {
        oo.create(true).truncate(true);
    } else {
        oo.create_new(true);
    }
    oo.open(path).map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => ReplayError::Exists {
            path: path.to_path_buf(),
        },
        _ => ReplayError::Create {
            path: path.to_path_buf(),
            io: e,
        },
    })
}

impl<S: Sink> Recorder<S> {
    /// Writes the header to `sink` and syncs it. `path` is only used in error messages.
    pub fn with_sink(
        mut sink: S,
        path: impl Into<PathBuf>,
        header: &Header,
        opts: &RecorderOptions,
    ) -> Result<Recorder<S>, ReplayError> {
        let path = path.into();
        let bytes = format::encode_header(header).map_err(ReplayError::Invalid)?;
        let io_err = |io| ReplayError::Write {
            path: path.clone(),
            io,
        };
        sink.write_all(&bytes).map_err(io_err)?;
        sink.flush().map_err(io_err)?;
        sink.sync().map_err(io_err)?;
        let per_second = header
            .frame_rate
            .round()
            .clamp(1.0, f64::from(MAX_BLOCK_FRAMES)) as u32;
        let flush_frames = opts
            .flush_frames
            .unwrap_or(per_second)
            .clamp(1, MAX_BLOCK_FRAMES);
        tracing::debug!(path = %path.display(), flush_frames, "recording started");
        Ok(Recorder {
            path,
            sink,
            next_frame: header.start_frame,
            frames: 0,
            block: Vec::with_capacity(flush_frames as usize),
            block_first: header.start_frame,
            prev: [Pad::NEUTRAL; MAX_PLAYERS],
            pending: Vec::new(),
            chain: header_chain(&bytes),
            since_flush: 0,
            flush_frames,
            sync_every: opts.sync_every.filter(|&n| n > 0),
            flushes: 0,
            bytes: bytes.len() as u64,
            failed: false,
            finished: false,
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Frames recorded so far.
    pub fn frames(&self) -> u32 {
        self.frames
    }

    /// Bytes handed to the sink so far (header included).
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// The frame number `record_frame` expects next.
    pub fn next_frame(&self) -> Frame {
        Frame(self.next_frame)
    }

    /// Records the inputs every port had for `frame`, which must be `next_frame()`.
    pub fn record_frame(&mut self, frame: Frame, inputs: &Inputs) -> Result<(), ReplayError> {
        self.check_live()?;
        let Frame(frame) = frame;
        if frame != self.next_frame {
            return Err(ReplayError::FrameOrder {
                expected: self.next_frame,
                got: frame,
            });
        }
        let next = frame
            .checked_add(1)
            .ok_or(ReplayError::Invalid("frame number overflow"))?;
        if self.block.is_empty() {
            self.block_first = frame;
        }
        self.block.push(*inputs);
        self.next_frame = next;
        self.frames += 1;
        self.since_flush += 1;
        if self.since_flush >= self.flush_frames {
            self.flush()?;
        }
        Ok(())
    }

    /// Records a state checksum taken at `frame` (written with the next flush).
    pub fn record_checksum(&mut self, frame: Frame, value: u64) -> Result<(), ReplayError> {
        self.check_live()?;
        self.seal_block()?;
        let payload = format::encode_checksum(frame.0, value);
        self.push_record(format::TAG_CHECKSUM, &payload)
    }

    /// Records an event at `frame` and writes it out at once (events are rare and precious).
    pub fn record_event(&mut self, frame: Frame, event: &Event) -> Result<(), ReplayError> {
        self.check_live()?;
        let payload = format::encode_event(frame.0, event).map_err(ReplayError::Invalid)?;
        self.seal_block()?;
        self.push_record(format::TAG_EVENT, &payload)?;
        self.flush()
    }

    /// Writes everything buffered (closing the open input block) and flushes the sink.
    /// The frame loop may also call this on a timer.
    pub fn flush(&mut self) -> Result<(), ReplayError> {
        self.check_live()?;
        self.seal_block()?;
        self.since_flush = 0;
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        self.write(&pending)?;
        self.flushes += 1;
        if self
            .sync_every
            .is_some_and(|n| self.flushes.is_multiple_of(n))
        {
            self.sync_sink()?;
        }
        Ok(())
    }

    /// `flush`, then fsync.
    pub fn sync(&mut self) -> Result<(), ReplayError> {
        self.flush()?;
        self.sync_sink()
    }

    /// Writes the `End` record and fsyncs. The file then reads as `Status::Complete`.
    pub fn finish(mut self) -> Result<Summary, ReplayError> {
        self.check_live()?;
        self.seal_block()?;
        self.push_record(format::TAG_END, &format::encode_end(self.frames))?;
        let pending = std::mem::take(&mut self.pending);
        self.write(&pending)?;
        self.sync_sink()?;
        self.finished = true;
        let (path, frames, bytes) = (self.path.display(), self.frames, self.bytes);
        tracing::debug!(%path, frames, bytes, "recording finished");
        Ok(Summary {
            frames: self.frames,
            bytes: self.bytes,
        })
    }

    fn check_live(&self) -> Result<(), ReplayError> {
        if self.failed {
            return Err(ReplayError::Stopped {
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    fn seal_block(&mut self) -> Result<(), ReplayError> {
        if self.block.is_empty() {
            return Ok(());
        }
        let payload = format::encode_inputs(self.block_first, &self.block, &self.prev);
        self.prev = *self.block.last().expect("block is not empty");
        self.block.clear();
        self.push_record(format::TAG_INPUTS, &payload)
    }

    fn push_record(&mut self, tag: u8, payload: &[u8]) -> Result<(), ReplayError> {
        self.chain = format::put_record(&mut self.pending, self.chain, tag, payload)
            .map_err(ReplayError::Invalid)?;
        Ok(())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), ReplayError> {
        // One write_all per batch: on failure a prefix may have reached the file, which the
        // reader detects as a torn record; nothing after it is ever written.
        let res = self.sink.write_all(bytes).and_then(|()| self.sink.flush());
        match res {
            Ok(()) => {
                self.bytes += bytes.len() as u64;
                Ok(())
            }
            Err(io) => Err(self.fail(io)),
        }
    }

    fn sync_sink(&mut self) -> Result<(), ReplayError> {
        self.sink.sync().map_err(|io| self.fail(io))
    }

    fn fail(&mut self, io: io::Error) -> ReplayError {
        self.failed = true;
        // Not logged here: the caller reports the error (once, naming the file).
        ReplayError::Write {
            path: self.path.clone(),
            io,
        }
    }
}

impl<S: Sink> std::fmt::Debug for Recorder<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("path", &self.path)
            .field("frames", &self.frames)
            .field("bytes", &self.bytes)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

fn header_chain(header: &[u8]) -> u32 {
    let check = &header[header.len() - 8..];
    format::header_chain(u64::from_le_bytes(check.try_into().expect("8 bytes")))
}

impl<S: Sink> Drop for Recorder<S> {
    fn drop(&mut self) {
        if !self.finished && !self.failed {
            // Keep what was recorded; without `End` the file reads as incomplete, which is true.
            if let Err(e) = self.flush() {
                tracing::warn!("{e}");
            }
        }
    }
}
