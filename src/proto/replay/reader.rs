//! `Replay`: reads an `.flr` file record by record, trusting nothing in it.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::format::{self, Event, Header, Reason, CHECK_LEN, FORMAT_VERSION, MAGIC, PREFIX_LEN};
use super::ReplayError;
use crate::input::{Inputs, Pad, MAX_PLAYERS};
use crate::lockstep::Frame;

/// One thing recorded in the body, in file order.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Item {
    /// Inputs of every port for this frame.
    Frame(Frame, Inputs),
    /// A state checksum taken at `frame`.
    Checksum {
        /// The frame after which it was taken.
        frame: Frame,
        /// The checksum.
        value: u64,
    },
    /// Something that happened at `frame` (a player left, a desync, a resync).
    Event {
        /// The frame it happened at.
        frame: Frame,
        /// What happened.
        event: Event,
    },
}

/// How the body ended, known once `next_item` has returned `Ok(None)`.
/// `frames` counts the frames read (from `header.start_frame`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Status {
    /// The writer finished cleanly (`End` record).
    Complete {
        /// Frames read.
        frames: u32,
    },
    /// The file ends between two records without `End`: the writer is still going, or stopped
    /// (crash, kill) right after a complete record.
    Incomplete {
        /// Frames read.
        frames: u32,
    },
    /// The file ends inside a record starting at `at_byte` (torn write: crash, kill, full disk);
    /// everything before it was read.
    Truncated {
        /// Frames read.
        frames: u32,
        /// Where the torn record starts.
        at_byte: u64,
    },
}

impl Status {
    /// Frames read, however the body ended.
    pub fn frames(&self) -> u32 {
        match *self {
            Status::Complete { frames }
            | Status::Incomplete { frames }
            | Status::Truncated { frames, .. } => frames,
        }
    }
}

/// A corrupt record that `next_item` keeps reporting once found.
#[derive(Copy, Clone)]
struct Broken {
    at_byte: u64,
    reason: Reason,
    tag: Option<u8>,
}

/// An open input log. Read it with `next_item` (or as an iterator) until `Ok(None)`, then look
/// at `status`. Reading the tail of a file that is still being recorded is fine: after
/// `Incomplete`/`Truncated`, calling `next_item` again picks up records written since.
pub struct Replay<R = BufReader<File>> {
    path: PathBuf,
    header: Header,
    inner: R,
    /// Offset of the next unread record.
    pos: u64,
    /// Where `inner` is positioned, when known (saves a seek, which empties a `BufReader`).
    inner_at: Option<u64>,
    /// Check of the last record read (seed of the next one's check).
    chain: u32,
    next_frame: u32,
    frames: u32,
    prev: Inputs,
    queue: VecDeque<Item>,
    status: Option<Status>,
    broken: Option<Broken>,
    /// Offset and length of bytes found after the `End` record (ignored).
    after_end: Option<(u64, u64)>,
    /// After an `Err`, the iterator stops.
    fused: bool,
}

impl Replay {
    /// Opens `path` and reads its header.
    pub fn open(path: impl AsRef<Path>) -> Result<Replay, ReplayError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|io| ReplayError::Open {
            path: path.to_path_buf(),
            io,
        })?;
        Replay::from_reader(BufReader::new(file), path)
    }
}

impl<R: Read + Seek> Replay<R> {
    /// Reads the header from `inner` (positioned at the file's start). `path` names it in errors.
    pub fn from_reader(mut inner: R, path: impl Into<PathBuf>) -> Result<Replay<R>, ReplayError> {
        let path = path.into();
        let (header, chain) = read_header(&mut inner, &path)?;
        let pos = inner.stream_position().map_err(|io| ReplayError::Read {
            path: path.clone(),
            io,
        })?;
        Ok(Replay {
            path,
            next_frame: header.start_frame,
            header,
            inner,
            pos,
            inner_at: Some(pos),
            chain,
            frames: 0,
            prev: [Pad::NEUTRAL; MAX_PLAYERS],
            queue: VecDeque::new(),
            status: None,
            broken: None,
            after_end: None,
            fused: false,
        })
    }

    /// The log's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Frames decoded so far (some may still be queued for `next_item`).
    pub fn frames_read(&self) -> u32 {
        self.frames
    }

    /// How the body ended; `None` until `next_item` has returned `Ok(None)`.
    pub fn status(&self) -> Option<Status> {
        self.status
    }

    /// Bytes after the `End` record, which reading ignores: (their offset, how many). `None`
    /// if there are none or the `End` record has not been read. Left to the caller to report,
    /// since one file is often read more than once.
    pub fn bytes_after_end(&self) -> Option<(u64, u64)> {
        self.after_end
    }

    /// The next frame, checksum or event. `Ok(None)` at the end of what can be read (see
    /// `status`). A corrupt record is an error naming its byte offset and the intact frames.
    pub fn next_item(&mut self) -> Result<Option<Item>, ReplayError> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Ok(Some(item));
            }
            if let Some(b) = self.broken {
                return Err(self.broken_error(b));
            }
            if matches!(self.status, Some(Status::Complete { .. })) {
                return Ok(None);
            }
            self.status = None;
            match self.read_record() {
                Ok(Some(status)) => {
                    self.status = Some(status);
                    return Ok(None);
                }
                Ok(None) => {}
                Err(Fault::Io(io)) => {
                    return Err(ReplayError::Read {
                        path: self.path.clone(),
                        io,
                    })
                }
                Err(Fault::Bad(b)) => self.broken = Some(b),
            }
        }
    }

    /// Reads every remaining item, keeping none; returns how the body ended.
    pub fn skim(&mut self) -> Result<Status, ReplayError> {
        while self.next_item()?.is_some() {}
        Ok(self.status.expect("set when next_item returns None"))
    }

    fn broken_error(&self, b: Broken) -> ReplayError {
        let path = self.path.clone();
        match b.tag {
            Some(tag) => ReplayError::UnsupportedRecord {
                path,
                tag,
                at_byte: b.at_byte,
            },
            None => ReplayError::CorruptRecord {
                path,
                at_byte: b.at_byte,
                reason: b.reason,
                frames: self.frames,
            },
        }
    }

    /// Reads one record at `pos` into the queue. `Ok(Some)`: the body ends here.
    fn read_record(&mut self) -> Result<Option<Status>, Fault> {
        let at = self.pos;
        if self.inner_at != Some(at) {
            self.inner.seek(SeekFrom::Start(at))?;
        }
        // Until this record is fully read, where `inner` stands is not worth tracking.
        self.inner_at = None;
        let mut head = Vec::with_capacity(format::MAX_RECORD_HEAD);
        (&mut self.inner)
            .take(format::MAX_RECORD_HEAD as u64)
            .read_to_end(&mut head)?;
        if head.is_empty() {
            return Ok(Some(Status::Incomplete {
                frames: self.frames,
            }));
        }
        let truncated = Status::Truncated {
            frames: self.frames,
            at_byte: at,
        };
        let (tag, len, head_len) = match format::parse_record_head(&head) {
            Ok(Some(h)) => h,
            Ok(None) => return Ok(Some(truncated)),
            Err(reason) => return self.damaged(at, None, reason).map(|()| Some(truncated)),
        };
        // Read the record through a `take`, so a huge bogus length never allocates up front.
        let total = head_len + len + CHECK_LEN;
        let mut rec = head;
        (&mut self.inner)
            .take((total - rec.len()) as u64)
            .read_to_end(&mut rec)?;
        if rec.len() < total {
            // `rec` holds the rest of the file. A torn write leaves part of one record there;
            // an intact record after it means that the length, not the file, is wrong.
            if intact_record_follows(&rec) {
                return Err(Fault::Bad(Broken {
                    at_byte: at,
                    reason: "its length runs past the end of the file, but intact records follow",
                    tag: None,
                }));
            }
            return Ok(Some(truncated));
        }
        let (body, check) = rec.split_at(total - CHECK_LEN);
        let check = u32::from_le_bytes(check.try_into().expect("4 bytes"));
        if format::record_check(self.chain, body) != check {
            let end = at + total as u64;
            return self
                .damaged(at, Some((end, &rec)), "bad checksum")
                .map(|()| Some(truncated));
        }
        let payload = &body[head_len..];
        let bad = |reason| {
            Fault::Bad(Broken {
                at_byte: at,
                reason,
                tag: None,
            })
        };
        match tag {
            format::TAG_INPUTS => {
                let mut prev = self.prev;
                let (first, frames) = format::decode_inputs(payload, &mut prev).map_err(bad)?;
                if first != self.next_frame {
                    return Err(bad("input block out of sequence"));
                }
                let n = frames.len() as u32;
                let next = first.checked_add(n).ok_or(bad("frame number overflow"))?;
                let count = self.frames.checked_add(n).ok_or(bad("too many frames"))?;
                self.queue.extend(
                    (first..next)
                        .zip(frames)
                        .map(|(f, inputs)| Item::Frame(Frame(f), inputs)),
                );
                self.prev = prev;
                self.next_frame = next;
                self.frames = count;
            }
            format::TAG_CHECKSUM => {
                let (frame, value) = format::decode_checksum(payload).map_err(bad)?;
                self.queue.push_back(Item::Checksum {
                    frame: Frame(frame),
                    value,
                });
            }
            format::TAG_EVENT => {
                let (frame, event) = format::decode_event(payload).map_err(bad)?;
                self.queue.push_back(Item::Event {
                    frame: Frame(frame),
                    event,
                });
            }
            format::TAG_END => {
                let frames = format::decode_end(payload).map_err(bad)?;
                if frames != self.frames {
                    return Err(bad("end record disagrees with frame count"));
                }
                self.pos = at + total as u64;
                self.chain = check;
                let file_len = self.inner.seek(SeekFrom::End(0))?;
                self.after_end = file_len
                    .checked_sub(self.pos)
                    .filter(|&n| n > 0)
                    .map(|n| (self.pos, n));
                return Ok(Some(Status::Complete { frames }));
            }
            format::TAG_UNUSED => return Err(bad("record type 0x00 is never used")),
            t if t >= format::TAG_CRITICAL => {
                return Err(Fault::Bad(Broken {
                    at_byte: at,
                    reason: "unknown required record",
                    tag: Some(t),
                }))
            }
            t => tracing::debug!(
                "{}: skipping record type {t:#04x} at byte {at} (unknown, optional)",
                self.path.display()
            ),
        }
        self.pos = at + total as u64;
        self.inner_at = Some(self.pos);
        self.chain = check;
        Ok(None)
    }

    /// Decides whether a damaged record at `at` is a torn tail (`Ok`: report truncation) or
    /// corruption in the middle (`Err`). `read` is its end and bytes, if its length could be
    /// read. A torn tail is the last record in the file, or is followed only by zero bytes
    /// (space a crashed filesystem allocated but never wrote). The record's own bytes hold what
    /// was written of it, so they only count if intact records are found among them: then its
    /// length is damaged and it swallowed them.
    fn damaged(
        &mut self,
        at: u64,
        read: Option<(u64, &[u8])>,
        reason: Reason,
    ) -> Result<(), Fault> {
        let corrupt = Fault::Bad(Broken {
            at_byte: at,
            reason,
            tag: None,
        });
        let from = match read {
            Some((_, rec)) if intact_record_follows(rec) => return Err(corrupt),
            Some((end, _)) => end,
            None => at,
        };
        self.inner.seek(SeekFrom::Start(from))?;
        let mut buf = [0u8; 8192];
        loop {
            let n = self.inner.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            if buf[..n].iter().any(|&b| b != 0) {
                return Err(corrupt);
            }
        }
    }
}

impl<R> std::fmt::Debug for Replay<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("path", &self.path)
            .field("core", &self.header.core_name)
            .field("pos", &self.pos)
            .field("frames", &self.frames)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl<R: Read + Seek> Iterator for Replay<R> {
    type Item = Result<Item, ReplayError>;

    /// Yields items, then `None`; an error is yielded once and ends the iteration.
    fn next(&mut self) -> Option<Self::Item> {
        if self.fused {
            return None;
        }
        match self.next_item() {
            Ok(item) => item.map(Ok),
            Err(e) => {
                self.fused = true;
                Some(Err(e))
            }
        }
    }
}

/// Whether an intact record starts in `tail` after the damaged record it starts with (6 bytes
/// in or later: a record has at least a tag, a length and a check): one with a known tag, a
/// plausible length and a check that matches, chained to the four bytes before it (the check
/// of the record before). A torn write leaves part of one record and nothing after it, so an
/// intact record there shows that the damaged record's length is wrong. Looks for records
/// starting in the first 16 MiB (a log holds small records throughout, and only a resync
/// state makes one large).
///
/// A payload may be up to 64 KiB, the most any record but a resync state needs; a resync
/// event carrying a state may be as long as what is left of `tail`, since a log that ends on
/// a large resync has nothing else after its damage to find. Hashing is what costs here, so
/// a long candidate is hashed only if its payload starts like a resync state.
fn intact_record_follows(tail: &[u8]) -> bool {
    const SCAN: usize = 16 << 20;
    const MAX_PAYLOAD: usize = 64 << 10;
    // The smallest record: tag, length 0, check.
    const MIN_RECORD: usize = 2 + CHECK_LEN;
    let last = tail.len().saturating_sub(MIN_RECORD).min(SCAN);
    (MIN_RECORD..=last).any(|p| {
        let rest = &tail[p..];
        let Ok(Some((tag, len, head_len))) = format::parse_record_head(rest) else {
            return false;
        };
        let known = matches!(
            tag,
            format::TAG_INPUTS | format::TAG_CHECKSUM | format::TAG_EVENT | format::TAG_END
        );
        let body = head_len + len;
        if !known || rest.len() < body + CHECK_LEN {
            return false;
        }
        let payload = &rest[head_len..body];
        if len > MAX_PAYLOAD && !(tag == format::TAG_EVENT && format::starts_resync_state(payload))
        {
            return false;
        }
        let check = u32::from_le_bytes(rest[body..body + CHECK_LEN].try_into().expect("4 bytes"));
        let chain = u32::from_le_bytes(tail[p - CHECK_LEN..p].try_into().expect("4 bytes"));
        format::record_check(chain, &rest[..body]) == check
    })
}

enum Fault {
    Io(io::Error),
    Bad(Broken),
}

impl From<io::Error> for Fault {
    fn from(e: io::Error) -> Fault {
        Fault::Io(e)
    }
}

/// Reads and verifies the header; also returns the first record's chain value.
fn read_header<R: Read>(r: &mut R, path: &Path) -> Result<(Header, u32), ReplayError> {
    let corrupt = |reason: &'static str| ReplayError::CorruptHeader {
        path: path.to_path_buf(),
        reason,
    };
    let read_err = |io| ReplayError::Read {
        path: path.to_path_buf(),
        io,
    };
    let mut prefix = Vec::with_capacity(PREFIX_LEN);
    r.take(PREFIX_LEN as u64)
        .read_to_end(&mut prefix)
        .map_err(read_err)?;
    if prefix.is_empty() {
        return Err(corrupt("file is empty"));
    }
    let magic_len = prefix.len().min(MAGIC.len());
    if prefix[..magic_len] != MAGIC[..magic_len] {
        return Err(ReplayError::NotALog {
            path: path.to_path_buf(),
        });
    }
    if prefix.len() < MAGIC.len() + 2 {
        return Err(corrupt("cut short"));
    }
    // Magic and version are fixed for all versions; everything after depends on the version.
    let version = u16::from_le_bytes([prefix[8], prefix[9]]);
    if version == 0 {
        return Err(corrupt("format version 0"));
    }
    let layout = read_layout(r, &prefix).map_err(read_err)?;
    if version > FORMAT_VERSION {
        // Blame the version only if the header is intact as far as this build can tell.
        let Ok((body, check)) = &layout else {
            return Err(ReplayError::NewerOrCorrupt {
                path: path.to_path_buf(),
                found: version,
            });
        };
        if header_check(&prefix, body) == *check {
            return Err(ReplayError::NewerVersion {
                path: path.to_path_buf(),
                found: version,
            });
        }
        let readable = (1..=FORMAT_VERSION).any(|v| {
            let mut p = prefix.clone();
            p[8..10].copy_from_slice(&v.to_le_bytes());
            header_check(&p, body) == *check
        });
        if readable {
            return Err(corrupt("its format version field is damaged"));
        }
        return Err(ReplayError::NewerOrCorrupt {
            path: path.to_path_buf(),
            found: version,
        });
    }
    let (body, check) = layout.map_err(corrupt)?;
    if header_check(&prefix, &body) != check {
        return Err(corrupt("bad checksum"));
    }
    let header = format::decode_header_body(&body).map_err(corrupt)?;
    Ok((header, format::header_chain(check)))
}

/// Reads the header body and check after `prefix` as this format version lays them out:
/// `Ok(Err)` if they are not there.
fn read_layout<R: Read>(r: &mut R, prefix: &[u8]) -> io::Result<Result<(Vec<u8>, u64), Reason>> {
    if prefix.len() < PREFIX_LEN {
        return Ok(Err("cut short"));
    }
    let body_len = u32::from_le_bytes(prefix[10..14].try_into().expect("4 bytes"));
    if body_len > format::MAX_HEADER_LEN {
        return Ok(Err("header length is implausible"));
    }
    let mut rest = Vec::new();
    r.take(u64::from(body_len) + 8).read_to_end(&mut rest)?;
    if rest.len() < body_len as usize + 8 {
        // A file cut while its header was written looks the same.
        return Ok(Err("cut short, or its length field is damaged"));
    }
    let check = rest.split_off(body_len as usize);
    let check = u64::from_le_bytes(check[..].try_into().expect("8 bytes"));
    Ok(Ok((rest, check)))
}

/// The header check of `prefix` and `body`.
fn header_check(prefix: &[u8], body: &[u8]) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(prefix);
    hasher.update(body);
    hasher.digest()
}
