//! Recorded input logs (`.flr`): everything needed to replay a session exactly, written while
//! it runs and readable after a crash. It imports only `input`, `wording` and `lockstep`'s
//! frame numbers; in `framelock-proto`, no frontend, core or netplay type can reach a file.
//!
//! A session is fully determined by its core, content, core options, start state and the inputs
//! of every frame, so that is what a log holds, plus periodic state checksums (to verify a
//! replay or find where peers diverged) and events (joins, leaves, desyncs, resyncs). No
//! frontend types are stored: inputs are RetroPad bitmasks (`Pad`, bit i = libretro
//! `RETRO_DEVICE_ID_JOYPAD` id i).
//!
//! API: [`Recorder`] writes (`create`, `record_frame`, `record_checksum`, `record_event`,
//! `finish`); [`Replay`] reads (`open`, `header`, `next_item` until `Ok(None)`, `status`);
//! [`default_recording_path`] names new files.
//!
//! # File format, version 1
//!
//! All integers are little endian. *varint* is unsigned LEB128 (at most 5 bytes for a u32).
//! *str* is a varint byte length followed by UTF-8. xxh3 is XXH3-64 with seed 0.
//!
//! ## Header
//!
//! ```text
//! offset size  field
//!      0    8  magic        "FLR" 00 0D 0A 1A 0A
//!      8    2  version      u16, format version (1); readers refuse newer versions
//!     10    4  B            u32, header body length (at most 2^30)
//!     14    B  body         fields below
//!   14+B    8  check        u64, xxh3 of bytes 0 .. 14+B
//! ```
//! Magic and version never change place; the rest is read according to the version. Readers
//! check a newer version against the check as laid out here before blaming the version: if the
//! check matches, the file is from a newer framelock; if it matches with the version field set to
//! one this build reads, the version field is damaged (`ReplayError::CorruptHeader`); if neither,
//! the header is damaged or laid out differently by a newer framelock, which cannot be told apart
//! (`ReplayError::NewerOrCorrupt`). A damaged header makes the whole file unusable.
//! Body fields, in order:
//! ```text
//!   str     core name
//!   str     core version
//!   str     content file name (no directories; empty if the core needs no content)
//!   u8      1 if a content hash follows, 0 if not (built-in games)
//!   [u64]   xxh3 of the content bytes
//!   varint  number of core options, then that many (str key, str value)
//!   u8      port mask: bit i set = RetroPad port i has a player
//!   str...  one player name per set bit, lowest port first
//!   f64     frame rate (finite, > 0)
//!   varint  checksum interval N in frames (0 = no checksums)
//!   i64     creation time, unix seconds (informational)
//!   varint  start frame: index of the first recorded frame
//!   u8      0 = started from power-on; 1 = started from a savestate, then:
//!             varint uncompressed length (at most 2^30),
//!             varint compressed length, compressed bytes (LZ4 block format,
//!             as `lz4_flex::block` writes it)
//!   then optional fields up to the end of the body, each present at most once:
//!   u8      field tag
//!   varint  field length L, then L bytes:
//!     0x01  core path as loaded when recording (UTF-8; empty = framelock's built-in core)
//!     0x02  content path as loaded when recording (UTF-8)
//!     0x03  save RAM at the start: varint uncompressed length, varint length, LZ4 block
//!           (for cores whose savestates leave save RAM out; load it before the start state)
//!     0x04  (empty) the core ran with the netplay savestate context
//!     0x05  the netplay session's lockstep mode (UTF-8: "strict" or "optimistic")
//!     0x06  u8 N (1 to 64): checksum records hold only the low N bits of the machine's
//!           checksum (a server records the 32-bit checksums players report); a replay
//!           compares those bits
//!     other tags are skipped
//! ```
//! Readers ignore body bytes after the fields they know, so new header fields are added as
//! new optional field tags without a new version; files from before optional fields existed
//! end the body right after the start state.
//!
//! ## Body: records
//!
//! ```text
//!   u8      tag
//!   varint  payload length L (at most 4 bytes, so L < 2^28)
//!   L       payload
//!   u32     check: low 32 bits of xxh3 over tag, length bytes and payload, seeded with the
//!           previous record's check (for the first record: the header check's low 32 bits)
//! ```
//! Every record checks itself, so a file cut anywhere (crash, kill -9, full disk) is read up to
//! its last complete record and never misread; the chained seed also catches records that were
//! dropped, repeated or moved. A damaged record is a torn tail (`Status::Truncated`) if it is
//! the last one in the file, if only zero bytes follow the end its length gives it (a crashed
//! filesystem may keep the start of the last write and zeros where the rest should be), or if
//! its length runs past the end of the file; unless an intact record (known tag, matching check
//! chained to the four bytes before it) starts inside or after it, within 16 MiB: then its
//! length is damaged. Other damaged records are corruption (`ReplayError::CorruptRecord`, with
//! the byte offset and the number of intact frames before it).
//!
//! Tags (0x00 is never used, so zero-filled space never parses; a record with tag 0x00 and a
//! valid check is corrupt):
//! ```text
//!  0x01 Inputs    varint first frame, varint frame count C (1 ..= 65536), u8 port mask M,
//!                 then a bit stream (LSB first in each byte, zero-padded to a whole byte):
//!                 for each of the C frames, for each port in M (lowest first):
//!                   0            = same pad value as in the previous frame
//!                   1 + 16 bits  = new pad value (bit i = RetroPad id i)
//!                 Ports not in M are neutral (0) in every frame of the block. "Previous frame"
//!                 carries across blocks; before the first frame all ports are neutral. Blocks
//!                 are consecutive: each starts where the last ended (the first at start frame).
//!  0x02 Checksum  varint frame, u64 state checksum
//!  0x03 Event     varint frame, u8 kind, then by kind:
//!                   0x01 joined   u8 port, str name
//!                   0x02 left     u8 port
//!                   0x03 desync   u64 local checksum, u64 remote checksum
//!                   0x04 resync   u8 0 = no state; 1 = state loaded at this frame, stored as
//!                                 varint uncompressed length, varint length, LZ4 block
//!                   0x05 chat     u8 sender's slot (16 and up: a spectator), str name,
//!                                 str text; at the frame the sender was at, recorded when
//!                                 it arrived (so after that frame's block); readers that
//!                                 predate it pass it on as `Event::Other`
//!                   0x06 paused   u8 port: that player paused the game before this frame
//!                   0x07 resumed  u8 port: the game went on from this frame (a replay
//!                                 does not wait: the frames are consecutive either way)
//!                   other kinds are passed to the caller undecoded (`Event::Other`)
//!  0x0F End       varint total frame count; written by a clean finish, last in the file
//! ```
//! Unknown tags below 0x80 are skipped (their length is known), so new optional record types do
//! not need a new version. Unknown tags 0x80 and up must be understood: readers stop with
//! `ReplayError::UnsupportedRecord`. Records appear in the order they happened: a checksum or
//! event recorded after frame F's inputs follows the block holding frame F.
//!
//! ## Writing
//!
//! The writer appends to the final path. The header is fsynced at creation. Inputs are grouped
//! into blocks that are written (write + flush) at least once per second of frames (60 at
//! 60 fps, counted in frames so it is deterministic) and whenever an event is recorded; `finish`
//! writes `End` and fsyncs. Periodic fsync is optional (`RecorderOptions::sync_every`).
//! After a write error (e.g. a full disk) the writer stops; the file may end in a partial record,
//! which readers report as truncated.
//!
//! Size: a 2-player minute (3600 frames, tapping and holding buttons, a checksum every 60
//! frames) takes about 4 KB; see `tests/replay_format.rs`.

mod format;
mod reader;
mod writer;

use std::io;
use std::path::{Path, PathBuf};

use crate::wording::io_reason;
use thiserror::Error;

pub use format::{Event, Header, Start, FORMAT_VERSION, MAGIC};
pub use reader::{Item, Replay, Status};
pub use writer::{open_log_file, Recorder, RecorderOptions, Sink, Summary};

/// File name extension of input logs.
pub const EXTENSION: &str = "flr";

/// Why a recording could not be written or a log not read; the messages name the file.
#[derive(Debug, Error)]
pub enum ReplayError {
    /// `--record FILE` names a file that is there already.
    #[error("{} already exists (not overwriting it)", .path.display())]
    Exists {
        /// The log file.
        path: PathBuf,
    },
    /// The file could not be made.
    #[error("cannot create {}: {}", .path.display(), io_reason(.io))]
    Create {
        /// The log file.
        path: PathBuf,
        /// What the system said.
        io: io::Error,
    },
    /// A write failed (a full disk, a lost device).
    #[error("cannot write {}: {}", .path.display(), io_reason(.io))]
    Write {
        /// The log file.
        path: PathBuf,
        /// What the system said.
        io: io::Error,
    },
    /// An earlier error stopped the recording; nothing more goes in.
    #[error("recording to {} stopped after an earlier error", .path.display())]
    Stopped {
        /// The log file.
        path: PathBuf,
    },
    /// Frames must be recorded one after the other.
    #[error("frame {got} recorded out of order (expected frame {expected})")]
    FrameOrder {
        /// The frame due next.
        expected: u32,
        /// The frame handed in.
        got: u32,
    },
    /// The header cannot be written as given (the reason).
    #[error("cannot record: {0}")]
    Invalid(&'static str),
    /// The log could not be opened.
    #[error("cannot open {}: {}", .path.display(), io_reason(.io))]
    Open {
        /// The log file.
        path: PathBuf,
        /// What the system said.
        io: io::Error,
    },
    /// A read failed.
    #[error("cannot read {}: {}", .path.display(), io_reason(.io))]
    Read {
        /// The log file.
        path: PathBuf,
        /// What the system said.
        io: io::Error,
    },
    /// The file does not start with the `.flr` magic.
    #[error("{} is not a framelock input log", .path.display())]
    NotALog {
        /// The log file.
        path: PathBuf,
    },
    /// A newer framelock wrote it (its header check matches as that version lays it out).
    #[error(
        "{} was made by a newer framelock (format v{found}, this build reads up to v{})",
        .path.display(), FORMAT_VERSION
    )]
    NewerVersion {
        /// The log file.
        path: PathBuf,
        /// The format version in the file.
        found: u16,
    },
    /// A version this build does not read, and a header check that does not match as this
    /// build lays headers out: damage and a newer layout look alike.
    #[error(
        "{} has a corrupt header, or was made by a newer framelock (format v{found}, this build \
         reads up to v{}); nothing in it can be replayed",
        .path.display(), FORMAT_VERSION
    )]
    NewerOrCorrupt {
        /// The log file.
        path: PathBuf,
        /// The format version in the file.
        found: u16,
    },
    /// The header does not check out; nothing can be replayed.
    #[error("{} has a corrupt header ({reason}); nothing in it can be replayed", .path.display())]
    CorruptHeader {
        /// The log file.
        path: PathBuf,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A record in the body does not check out; the frames before it are good.
    #[error(
        "{}: corrupt record at byte {at_byte} ({reason}); {}",
        .path.display(), intact_before(*.frames)
    )]
    CorruptRecord {
        /// The log file.
        path: PathBuf,
        /// Where the record starts.
        at_byte: u64,
        /// What is wrong with it.
        reason: &'static str,
        /// Frames read intact before the corrupt record.
        frames: u32,
    },
    /// A record kind only a newer framelock reads.
    #[error(
        "{}: record type {tag:#04x} at byte {at_byte} needs a newer framelock",
        .path.display()
    )]
    UnsupportedRecord {
        /// The log file.
        path: PathBuf,
        /// The record's tag.
        tag: u8,
        /// Where the record starts.
        at_byte: u64,
    },
}

/// What a corrupt record leaves usable: "the 2 frames before it are intact".
fn intact_before(frames: u32) -> String {
    match frames {
        0 => "there are no frames before it".to_string(),
        1 => "the 1 frame before it is intact".to_string(),
        n => format!("the {n} frames before it are intact"),
    }
}

/// A fresh path in `dir` for a recording started at `now` by `role` (e.g. "host", "join"),
/// like `2026-11-21_14-03-05_host.flr`, then `..._host-2.flr`, `-3`, ... if taken. Characters
/// other than ASCII letters, digits, `-` and `_` in `role` become `_`.
pub fn default_recording_path(
    dir: &Path,
    now: chrono::DateTime<chrono::Local>,
    role: &str,
) -> PathBuf {
    let role: String = role
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = format!("{}_{role}", now.format("%Y-%m-%d_%H-%M-%S"));
    let mut path = dir.join(format!("{stem}.{EXTENSION}"));
    let mut n = 2;
    // `Recorder::create` refuses to overwrite, so a race here fails loudly instead of clobbering.
    while path.exists() {
        path = dir.join(format!("{stem}-{n}.{EXTENSION}"));
        n += 1;
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Inputs, Pad, MAX_PLAYERS};
    use crate::lockstep::Frame;
    use std::io::Cursor;

    fn record(
        header: &Header,
        frames: u32,
        extra: impl Fn(&mut Recorder<&mut Vec<u8>>, u32),
    ) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut rec =
            Recorder::with_sink(&mut buf, "mem.flr", header, &RecorderOptions::default()).unwrap();
        for f in 0..frames {
            let mut inp: Inputs = [Pad::NEUTRAL; MAX_PLAYERS];
            inp[0] = Pad((f / 7 % 3) as u16);
            rec.record_frame(Frame(f), &inp).unwrap();
            extra(&mut rec, f);
        }
        rec.finish().unwrap();
        buf
    }

    fn read_all(bytes: &[u8]) -> Result<(Vec<Item>, Status), ReplayError> {
        let mut r = Replay::from_reader(Cursor::new(bytes), "mem.flr")?;
        let mut items = Vec::new();
        while let Some(it) = r.next_item()? {
            items.push(it);
        }
        Ok((items, r.status().unwrap()))
    }

    /// The check of the last record in `file` (the chain for a record appended to it).
    fn last_check(file: &[u8]) -> u32 {
        u32::from_le_bytes(file[file.len() - 4..].try_into().unwrap())
    }

    /// Splices a raw record in just before the `End` record (7 bytes for < 128 frames).
    fn with_record_before_end(mut file: Vec<u8>, tag: u8, payload: &[u8]) -> Vec<u8> {
        let end = file.split_off(file.len() - 7);
        assert_eq!(end[0], format::TAG_END);
        let prev = last_check(&file);
        let chain = format::put_record(&mut file, prev, tag, payload).unwrap();
        format::put_record(&mut file, chain, format::TAG_END, &end[2..3]).unwrap();
        file
    }

    #[test]
    fn unknown_optional_record_is_skipped() {
        let base = record(&Header::default(), 100, |_, _| {});
        let (want, _) = read_all(&base).unwrap();
        let file = with_record_before_end(base, 0x42, b"from the future");
        let (got, status) = read_all(&file).unwrap();
        assert_eq!(got, want);
        assert_eq!(status, Status::Complete { frames: 100 });
    }

    #[test]
    fn unknown_required_record_is_refused() {
        let file = with_record_before_end(record(&Header::default(), 100, |_, _| {}), 0x90, b"x");
        let err = read_all(&file).unwrap_err();
        assert!(
            matches!(err, ReplayError::UnsupportedRecord { tag: 0x90, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("needs a newer framelock"));
    }

    #[test]
    fn zero_filled_tail_reads_as_truncated_not_corrupt() {
        let mut file = record(&Header::default(), 100, |_, _| {});
        file.truncate(file.len() - 7); // drop End
        let good = file.len() as u64;
        file.extend_from_slice(&[0u8; 4096]);
        let (items, status) = read_all(&file).unwrap();
        assert_eq!(items.len(), 100);
        assert_eq!(
            status,
            Status::Truncated {
                frames: 100,
                at_byte: good
            }
        );
    }

    /// Record starts and ends in `file`, walked by framing alone.
    fn records(file: &[u8]) -> Vec<(usize, usize)> {
        let mut pos = format::encode_header(&Header::default()).unwrap().len();
        let mut out = Vec::new();
        while pos < file.len() {
            let (_, len, head) = format::parse_record_head(&file[pos..]).unwrap().unwrap();
            out.push((pos, pos + head + len + 4));
            pos += head + len + 4;
        }
        out
    }

    #[test]
    fn torn_record_followed_by_zeros_reads_as_truncated() {
        let file = record(&Header::default(), 300, |r, f| {
            if f % 60 == 59 {
                r.record_checksum(Frame(f), u64::from(f) * 0x0101_0101)
                    .unwrap();
            }
        });
        let recs = records(&file);
        // The last input block before End: frames 240..300, 60 frames after 240 intact.
        let (start, end) = recs[recs.len() - 3];
        assert_eq!(file[start], format::TAG_INPUTS);
        // Cut inside its payload, after only its tag, and inside its check; a crashed filesystem
        // filled the rest of the space with zeros.
        for cut in [start + 5, start + 1, end - 2] {
            let mut torn = file[..cut].to_vec();
            assert!(torn[start..].iter().any(|&b| b != 0), "cut {cut}");
            torn.resize(cut + 5000, 0);
            let (items, status) = read_all(&torn).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            assert_eq!(
                status,
                Status::Truncated {
                    frames: 240,
                    at_byte: start as u64
                },
                "cut at {cut}"
            );
            assert_eq!(
                items
                    .iter()
                    .filter(|i| matches!(i, Item::Frame(..)))
                    .count(),
                240
            );
        }
        // A record in the middle whose length runs over the records after it into zeros is
        // damaged, not torn: those records are intact.
        let mut bad = file[..end].to_vec();
        bad.resize(end + 5000, 0);
        let (first, _) = recs[0];
        let (_, _, head) = format::parse_record_head(&bad[first..]).unwrap().unwrap();
        assert_eq!(head, 2);
        let swallow = end - first + 50; // all the records, and into the zeros
        assert!(swallow < 1 << 14);
        bad[first + 1] = 0x80 | (swallow & 0x7F) as u8;
        bad.insert(first + 2, (swallow >> 7) as u8);
        assert!(matches!(
            read_all(&bad),
            Err(ReplayError::CorruptRecord { at_byte, frames: 0, .. }) if at_byte == first as u64
        ));
        // Zeros and then data again after a damaged record: corruption, not a tear.
        let mut bad = file[..start + 5].to_vec();
        bad.resize(start + 5000, 0);
        bad.push(1);
        assert!(matches!(
            read_all(&bad),
            Err(ReplayError::CorruptRecord { at_byte, frames: 240, .. }) if at_byte == start as u64
        ));
    }

    #[test]
    fn damaged_length_past_the_end_with_records_after_is_corrupt() {
        let file = record(&Header::default(), 300, |_, _| {});
        let recs = records(&file);
        let (first, _) = recs[0];
        let (_, len, head) = format::parse_record_head(&file[first..]).unwrap().unwrap();
        // The first record's length, rewritten as 4 bytes saying 200 MB (as a flipped high bit
        // does): it runs past the end, yet every later record is intact.
        let huge = len + (100 << 21);
        let mut bad = file[..first + 1].to_vec();
        bad.extend_from_slice(&[
            0x80 | (huge & 0x7F) as u8,
            0x80 | (huge >> 7 & 0x7F) as u8,
            0x80 | (huge >> 14 & 0x7F) as u8,
            (huge >> 21) as u8,
        ]);
        bad.extend_from_slice(&file[first + head..]);
        let err = read_all(&bad).unwrap_err();
        assert!(
            matches!(err, ReplayError::CorruptRecord { at_byte, frames: 0, .. } if at_byte == first as u64),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("runs past the end of the file, but intact records follow")
                && msg.contains("there are no frames before it"),
            "{msg}"
        );
        // The same record torn (the file ends inside it) is a torn tail, as before.
        let (_, status) = read_all(&bad[..first + 20]).unwrap();
        assert!(
            matches!(status, Status::Truncated { frames: 0, .. }),
            "{status:?}"
        );
        let (second, second_end) = recs[1];
        let (_, status) = read_all(&file[..(second + second_end) / 2]).unwrap();
        assert!(matches!(status, Status::Truncated { .. }), "{status:?}");
    }

    /// A log that stopped (crash, kill) right after a resync too big for an ordinary record
    /// (a state that compresses to more than 64 KiB): the record before the resync has a
    /// damaged length running past the end of the file. The resync record after it is intact,
    /// so that is damage, not a torn tail.
    #[test]
    fn damaged_length_before_only_a_large_resync_is_corrupt() {
        let mut buf = Vec::new();
        let mut rec =
            Recorder::with_sink(&mut buf, "mem.flr", &Header::default(), &Default::default())
                .unwrap();
        for f in 0..100 {
            let mut inp: Inputs = [Pad::NEUTRAL; MAX_PLAYERS];
            inp[0] = Pad((f / 7 % 3) as u16);
            rec.record_frame(Frame(f), &inp).unwrap();
        }
        // Incompressible bytes: the compressed state stays about as large.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let state: Vec<u8> = (0..200_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let resync = Event::Resync { state: Some(state) };
        rec.record_event(Frame(100), &resync).unwrap();
        drop(rec); // no End record
        let file = buf;
        let recs = records(&file);
        let (resync_at, _) = *recs.last().unwrap();
        assert_eq!(file[resync_at], format::TAG_EVENT);
        assert!(file.len() - resync_at > 100_000);
        let (_, status) = read_all(&file).unwrap();
        assert_eq!(status, Status::Incomplete { frames: 100 });
        // The input block right before the resync, its length rewritten as 4 bytes saying
        // 200 MB (as a flipped high bit does): only the resync record follows it.
        let (block, block_end) = recs[recs.len() - 2];
        assert_eq!(block_end, resync_at);
        assert_eq!(file[block], format::TAG_INPUTS);
        let (_, len, head) = format::parse_record_head(&file[block..]).unwrap().unwrap();
        let huge = len + (100 << 21);
        let mut bad = file[..block + 1].to_vec();
        bad.extend_from_slice(&[
            0x80 | (huge & 0x7F) as u8,
            0x80 | (huge >> 7 & 0x7F) as u8,
            0x80 | (huge >> 14 & 0x7F) as u8,
            (huge >> 21) as u8,
        ]);
        bad.extend_from_slice(&file[block + head..]);
        let err = read_all(&bad).unwrap_err();
        assert!(
            matches!(err, ReplayError::CorruptRecord { at_byte, .. } if at_byte == block as u64),
            "{err:?}"
        );
        // Torn inside the resync record (the writer died while writing it): truncated.
        let (_, status) = read_all(&file[..resync_at + 150_000]).unwrap();
        assert_eq!(
            status,
            Status::Truncated {
                frames: 100,
                at_byte: resync_at as u64
            }
        );
    }

    #[test]
    fn record_type_zero_is_corrupt() {
        let file = with_record_before_end(record(&Header::default(), 100, |_, _| {}), 0x00, b"");
        let err = read_all(&file).unwrap_err();
        assert!(
            matches!(err, ReplayError::CorruptRecord { frames: 100, .. }),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("record type 0x00 is never used"),
            "{err}"
        );
    }

    #[test]
    fn bytes_after_the_end_record_are_reported_not_read() {
        let mut file = record(&Header::default(), 10, |_, _| {});
        let end = file.len() as u64;
        file.extend_from_slice(b"trailing junk");
        let mut r = Replay::from_reader(Cursor::new(&file), "mem.flr").unwrap();
        assert_eq!(r.skim().unwrap(), Status::Complete { frames: 10 });
        assert_eq!(r.bytes_after_end(), Some((end, 13)));
    }

    #[test]
    fn header_damage_is_not_blamed_on_the_version() {
        let file = record(&Header::default(), 10, |_, _| {});
        let header_len = format::encode_header(&Header::default()).unwrap().len();
        let open = |bytes: &[u8]| Replay::from_reader(Cursor::new(bytes.to_vec()), "h.flr");
        // One flipped bit in the version: v257.
        let mut bad = file.clone();
        bad[9] ^= 0x01;
        let msg = open(&bad).unwrap_err().to_string();
        assert_eq!(
            msg,
            "h.flr has a corrupt header (its format version field is damaged); \
             nothing in it can be replayed"
        );
        // A real newer file: its header check is right.
        let mut newer = file.clone();
        newer[8..10].copy_from_slice(&2u16.to_le_bytes());
        let check = xxhash_rust::xxh3::xxh3_64(&newer[..header_len - 8]);
        newer[header_len - 8..header_len].copy_from_slice(&check.to_le_bytes());
        let err = open(&newer).unwrap_err();
        assert!(
            matches!(err, ReplayError::NewerVersion { found: 2, .. }),
            "{err}"
        );
        // Newer, and the check does not match: damage and a new layout look alike.
        newer[20] ^= 0x10;
        let msg = open(&newer).unwrap_err().to_string();
        assert!(
            msg.contains("h.flr has a corrupt header, or was made by a newer framelock (format v2")
                && msg.ends_with("nothing in it can be replayed"),
            "{msg}"
        );
        // A flipped bit in the header length points past the end of the file.
        for byte in [12, 13] {
            let mut bad = file.clone();
            bad[byte] ^= 0x01;
            let msg = open(&bad).unwrap_err().to_string();
            assert_eq!(
                msg,
                "h.flr has a corrupt header (cut short, or its length field is damaged); \
                 nothing in it can be replayed",
                "byte {byte}"
            );
        }
    }

    #[test]
    fn counts_of_frames_read_as_english() {
        let err = |frames| {
            ReplayError::CorruptRecord {
                path: "x.flr".into(),
                at_byte: 9,
                reason: "bad checksum",
                frames,
            }
            .to_string()
        };
        assert!(
            err(1).ends_with("; the 1 frame before it is intact"),
            "{}",
            err(1)
        );
        assert!(
            err(7).ends_with("; the 7 frames before it are intact"),
            "{}",
            err(7)
        );
        assert!(
            err(0).ends_with("; there are no frames before it"),
            "{}",
            err(0)
        );
    }

    #[test]
    fn damaged_record_in_the_middle_is_an_error_with_offset() {
        let mut file = record(&Header::default(), 300, |r, f| {
            if f % 60 == 59 {
                r.record_checksum(Frame(f + 1), u64::from(f)).unwrap();
            }
        });
        let header_len = format::encode_header(&Header::default()).unwrap().len();
        // The first record is the first input block (frames 0..60); damage its payload.
        file[header_len + 5] ^= 0x01;
        match read_all(&file) {
            Err(ReplayError::CorruptRecord {
                at_byte, frames, ..
            }) => {
                assert_eq!((at_byte, frames), (header_len as u64, 0));
            }
            other => panic!("expected corrupt record, got {other:?}"),
        }
    }

    #[test]
    fn end_must_match_frame_count() {
        let mut file = record(&Header::default(), 10, |_, _| {});
        file.truncate(file.len() - 7);
        let end = format::encode_end(11);
        let prev = last_check(&file);
        format::put_record(&mut file, prev, format::TAG_END, &end).unwrap();
        assert!(matches!(
            read_all(&file),
            Err(ReplayError::CorruptRecord { .. })
        ));
    }

    #[test]
    fn recording_path_is_dated_and_never_clobbers() {
        use chrono::TimeZone;
        let dir = tempfile::tempdir().unwrap();
        let now = chrono::Local
            .with_ymd_and_hms(2026, 11, 21, 14, 3, 5)
            .unwrap();
        let p1 = default_recording_path(dir.path(), now, "host");
        assert_eq!(p1.file_name().unwrap(), "2026-11-21_14-03-05_host.flr");
        std::fs::write(&p1, b"x").unwrap();
        let p2 = default_recording_path(dir.path(), now, "host");
        assert_eq!(p2.file_name().unwrap(), "2026-11-21_14-03-05_host-2.flr");
        std::fs::write(&p2, b"x").unwrap();
        let p3 = default_recording_path(dir.path(), now, "host");
        assert_eq!(p3.file_name().unwrap(), "2026-11-21_14-03-05_host-3.flr");
        let odd = default_recording_path(dir.path(), now, "a/b c");
        assert_eq!(odd.file_name().unwrap(), "2026-11-21_14-03-05_a_b_c.flr");
    }
}
