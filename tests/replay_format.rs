//! Proves `.flr` input logs round-trip, survive being cut or damaged anywhere without ever
//! yielding wrong inputs, stay readable after a full disk or kill -9, and stay small.

use std::fs::{self, File};
use std::io::{self, Cursor, Write};
use std::path::Path;

use framelock::input::{Button, Inputs, Pad, MAX_PLAYERS};
use framelock::lockstep::Frame;
use framelock::replay::{
    Event, Header, Item, Recorder, RecorderOptions, Replay, ReplayError, Sink, Start, Status,
    FORMAT_VERSION,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A bot that holds directions for a while and taps buttons, like a player in an arcade game.
fn bot_stream(players: usize, frames: u32, seed: u64) -> Vec<Inputs> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let dirs = [Button::Up, Button::Down, Button::Left, Button::Right];
    let taps = [Button::A, Button::B, Button::Y];
    let mut hold = vec![(Pad::NEUTRAL, 0u32); players];
    let mut tap = vec![(Pad::NEUTRAL, 0u32); players];
    (0..frames)
        .map(|_| {
            let mut inputs = [Pad::NEUTRAL; MAX_PLAYERS];
            for p in 0..players {
                if hold[p].1 == 0 {
                    let pad = match rng.gen_range(0..5) {
                        0 => Pad::NEUTRAL,
                        _ => Pad::NEUTRAL.with(dirs[rng.gen_range(0..4)]),
                    };
                    hold[p] = (pad, rng.gen_range(15..120));
                }
                if tap[p].1 == 0 {
                    tap[p] = if tap[p].0 == Pad::NEUTRAL {
                        (
                            Pad::NEUTRAL.with(taps[rng.gen_range(0..3)]),
                            rng.gen_range(2..8),
                        )
                    } else {
                        (Pad::NEUTRAL, rng.gen_range(8..45))
                    };
                }
                hold[p].1 -= 1;
                tap[p].1 -= 1;
                inputs[p] = Pad(hold[p].0 .0 | tap[p].0 .0);
            }
            inputs
        })
        .collect()
}

fn header(players: usize, start: Start) -> Header {
    let mut h = Header {
        core_name: "Genesis Plus GX".into(),
        core_version: "v1.7.4 abcdef".into(),
        content_name: "airstriker.md".into(),
        content_hash: Some(0xfeed_beef_dead_f00d),
        core_options: vec![("genesis_plus_gx_region".into(), "auto".into())],
        start,
        created_unix: 1_795_000_000,
        ..Header::default()
    };
    for (i, slot) in h.players.iter_mut().take(players).enumerate() {
        *slot = Some(format!("player {i}"));
    }
    h
}

/// Records `frames` bot frames with a checksum every 60 frames and a few events. Returns the
/// items a reader must yield, in order, and the errors the recorder returned.
fn drive<S: Sink>(
    rec: &mut Recorder<S>,
    players: usize,
    frames: u32,
) -> (Vec<Item>, Vec<ReplayError>) {
    let mut want = Vec::new();
    let mut errors = Vec::new();
    for (f, inputs) in (0..frames).zip(bot_stream(players, frames, u64::from(frames))) {
        errors.extend(rec.record_frame(Frame(f), &inputs).err());
        want.push(Item::Frame(Frame(f), inputs));
        if (f + 1) % 60 == 0 {
            let value = u64::from(f).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            errors.extend(rec.record_checksum(Frame(f + 1), value).err());
            want.push(Item::Checksum {
                frame: Frame(f + 1),
                value,
            });
        }
        let event = match f {
            100 => Some(Event::Left { slot: 1 }),
            130 => Some(Event::Joined {
                slot: 1,
                name: "late ñame".into(),
            }),
            250 => Some(Event::Desync {
                local: 1,
                remote: 2,
            }),
            251 => Some(Event::Resync {
                state: Some((0..3000u32).map(|i| (i * 7 / 5) as u8).collect()),
            }),
            _ => None,
        };
        if let Some(event) = event {
            errors.extend(rec.record_event(Frame(f), &event).err());
            want.push(Item::Event {
                frame: Frame(f),
                event,
            });
        }
    }
    (want, errors)
}

fn record_session<S: Sink>(rec: &mut Recorder<S>, players: usize, frames: u32) -> Vec<Item> {
    let (want, errors) = drive(rec, players, frames);
    assert!(errors.is_empty(), "{errors:?}");
    want
}

fn recording(players: usize, frames: u32) -> (Vec<u8>, Vec<Item>) {
    let mut buf = Vec::new();
    let h = header(players, Start::PowerOn);
    let mut rec =
        Recorder::with_sink(&mut buf, "mem.flr", &h, &RecorderOptions::default()).unwrap();
    let want = record_session(&mut rec, players, frames);
    rec.finish().unwrap();
    (buf, want)
}

/// Reads every item; the error, if any, is returned with the items read before it.
fn read_bytes(bytes: &[u8]) -> (Vec<Item>, Result<Status, ReplayError>) {
    let mut r = match Replay::from_reader(Cursor::new(bytes), "mem.flr") {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Err(e)),
    };
    let mut items = Vec::new();
    loop {
        match r.next_item() {
            Ok(Some(it)) => items.push(it),
            Ok(None) => return (items, Ok(r.status().unwrap())),
            Err(e) => return (items, Err(e)),
        }
    }
}

fn frame_count(items: &[Item]) -> u32 {
    items
        .iter()
        .filter(|i| matches!(i, Item::Frame(..)))
        .count() as u32
}

fn varint(b: &[u8], pos: &mut usize) -> usize {
    let mut v = 0;
    for i in 0.. {
        let byte = b[*pos];
        *pos += 1;
        v |= usize::from(byte & 0x7F) << (7 * i);
        if byte & 0x80 == 0 {
            break;
        }
    }
    v
}

/// Walks the file's framing independently of the reader: header length, then for each record
/// its end offset and the frames it holds.
fn layout(file: &[u8]) -> (usize, Vec<(usize, u32)>) {
    let body_len = u32::from_le_bytes(file[10..14].try_into().unwrap()) as usize;
    let header_len = 14 + body_len + 8;
    let mut pos = header_len;
    let mut records = Vec::new();
    while pos < file.len() {
        let tag = file[pos];
        pos += 1;
        let len = varint(file, &mut pos);
        let mut p = pos;
        let frames = if tag == 0x01 {
            varint(file, &mut p);
            varint(file, &mut p) as u32
        } else {
            0
        };
        pos += len + 4;
        records.push((pos, frames));
    }
    (header_len, records)
}

#[test]
fn round_trip_10000_frames_for_2_and_8_players() {
    let dir = tempfile::tempdir().unwrap();
    for players in [2, 8] {
        let path = dir.path().join(format!("{players}p.flr"));
        let state: Vec<u8> = (0..200_000u32)
            .map(|i| (i % 251) as u8 ^ (i >> 9) as u8)
            .collect();
        let h = header(players, Start::State(state));
        let mut rec = Recorder::create(&path, &h).unwrap();
        let want = record_session(&mut rec, players, 10_000);
        let summary = rec.finish().unwrap();
        assert_eq!(summary.frames, 10_000);
        assert_eq!(summary.bytes, fs::metadata(&path).unwrap().len());

        let mut replay = Replay::open(&path).unwrap();
        assert_eq!(replay.header(), &h);
        let got: Vec<Item> = replay.by_ref().map(Result::unwrap).collect();
        assert_eq!(got.len(), want.len());
        assert_eq!(got, want);
        assert_eq!(replay.status(), Some(Status::Complete { frames: 10_000 }));
        // Every port's inputs really vary, so the round trip exercises all of them.
        for p in 0..players {
            assert!(want
                .iter()
                .any(|i| matches!(i, Item::Frame(_, x) if x[p].0 != 0)));
        }
    }
}

#[test]
fn cut_at_every_byte_replays_exactly_the_complete_records() {
    let (file, want) = recording(2, 600);
    let (header_len, records) = layout(&file);
    assert_eq!(records.last().unwrap().0, file.len());
    let mut seen_truncated = 0;
    for cut in 0..=file.len() {
        let (items, status) = read_bytes(&file[..cut]);
        if cut < header_len {
            assert!(
                matches!(status, Err(ReplayError::CorruptHeader { .. })),
                "cut {cut}: {status:?}"
            );
            continue;
        }
        let status = status.unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        // The last record boundary at or before the cut, and the frames in records before it.
        let (boundary, frames) = records
            .iter()
            .take_while(|(end, _)| *end <= cut)
            .fold((header_len, 0), |(_, n), &(end, f)| (end, n + f));
        assert_eq!(items[..], want[..items.len()], "cut {cut}");
        assert_eq!(frame_count(&items), frames, "cut {cut}");
        let expected = if cut == file.len() {
            Status::Complete { frames }
        } else if cut == boundary {
            Status::Incomplete { frames }
        } else {
            seen_truncated += 1;
            Status::Truncated {
                frames,
                at_byte: boundary as u64,
            }
        };
        assert_eq!(status, expected, "cut {cut}");
    }
    assert_eq!(read_bytes(&file).0, want);
    assert!(seen_truncated > file.len() / 2);
}

/// A damaged file may fail or end early, but what it yields is always the original's prefix.
fn assert_never_misread(file: &[u8], want: &[Item], what: &str) {
    let (items, status) = read_bytes(file);
    assert!(items.len() <= want.len(), "{what}: extra items");
    assert_eq!(items[..], want[..items.len()], "{what}: wrong items");
    if let Ok(Status::Complete { .. }) = status {
        assert_eq!(items.len(), want.len(), "{what}: complete but short");
    }
}

#[test]
fn every_single_bit_flip_is_detected() {
    let (file, want) = recording(2, 600);
    let mut rng = SmallRng::seed_from_u64(1);
    for pos in 0..file.len() {
        for _ in 0..2 {
            let mut bad = file.clone();
            bad[pos] ^= 1 << rng.gen_range(0..8);
            let (items, status) = read_bytes(&bad);
            // A flip anywhere either fails or stops before the end: it never reads as complete.
            assert!(
                !matches!(status, Ok(Status::Complete { .. })),
                "flip at {pos} went unnoticed"
            );
            assert_eq!(items[..], want[..items.len()], "flip at {pos}");
        }
    }
}

#[test]
fn mid_file_damage_names_the_byte_and_intact_frames() {
    let (mut file, want) = recording(2, 600);
    let (header_len, records) = layout(&file);
    // Damage the payload of the 5th record; the 4 before it stay readable.
    let at = records[3].0;
    file[at + 3] ^= 0x40;
    let (items, status) = read_bytes(&file);
    let frames: u32 = records[..4].iter().map(|r| r.1).sum();
    match status {
        Err(ReplayError::CorruptRecord {
            at_byte, frames: f, ..
        }) => assert_eq!((at_byte, f), (at as u64, frames)),
        other => panic!("expected a corrupt record error, got {other:?}"),
    }
    assert_eq!(items[..], want[..items.len()]);
    assert!(header_len < at);
    let msg = format!("{}", read_bytes(&file).1.unwrap_err());
    assert!(
        msg.contains(&format!("corrupt record at byte {at}")),
        "{msg}"
    );
}

#[test]
fn random_mutations_never_misread_or_panic() {
    let (file, want) = recording(2, 600);
    let mut rng = SmallRng::seed_from_u64(7);
    for round in 0..3000 {
        let mut bad = file.clone();
        match rng.gen_range(0..4) {
            0 => {
                for _ in 0..rng.gen_range(1..8) {
                    let i = rng.gen_range(0..bad.len());
                    bad[i] = rng.gen();
                }
            }
            1 => {
                let start = rng.gen_range(0..bad.len());
                let end = rng.gen_range(start..=bad.len().min(start + 64));
                bad.drain(start..end);
            }
            2 => {
                let at = rng.gen_range(0..=bad.len());
                let junk: Vec<u8> = (0..rng.gen_range(1..32)).map(|_| rng.gen()).collect();
                bad.splice(at..at, junk);
            }
            _ => {
                // Move a chunk elsewhere (a whole record, sometimes).
                let start = rng.gen_range(0..bad.len());
                let end = rng.gen_range(start..=bad.len().min(start + 80));
                let chunk: Vec<u8> = bad.drain(start..end).collect();
                let at = rng.gen_range(0..=bad.len());
                bad.splice(at..at, chunk);
            }
        }
        if bad != file {
            assert_never_misread(&bad, &want, &format!("mutation round {round}"));
        }
    }
}

#[test]
fn random_bytes_never_panic_and_never_yield_items() {
    let (file, _) = recording(2, 60);
    let (header_len, _) = layout(&file);
    let mut rng = SmallRng::seed_from_u64(3);
    for _ in 0..3000 {
        let n = rng.gen_range(0..2048);
        let noise: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        let (items, status) = read_bytes(&noise);
        assert!(items.is_empty() && status.is_err());
        // A valid header followed by noise: no record can pass its check.
        let mut after_header = file[..header_len].to_vec();
        after_header.extend_from_slice(&noise);
        let (items, status) = read_bytes(&after_header);
        assert!(items.is_empty(), "{status:?}");
        assert!(!matches!(status, Ok(Status::Complete { .. })));
        // The magic and version followed by noise.
        let mut after_magic = file[..10].to_vec();
        after_magic.extend_from_slice(&noise);
        let (items, status) = read_bytes(&after_magic);
        assert!(items.is_empty() && status.is_err());
    }
}

#[test]
fn not_a_log_and_newer_version_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    fs::write(&text, "just some text, certainly not inputs\n").unwrap();
    let err = Replay::open(&text).unwrap_err().to_string();
    assert!(
        err.contains("notes.txt") && err.contains("not a framelock input log"),
        "{err}"
    );

    // A newer framelock's file (its header check matches the version it says).
    let (mut file, _) = recording(2, 60);
    let (header_len, _) = layout(&file);
    file[8..10].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let check = xxhash_rust::xxh3::xxh3_64(&file[..header_len - 8]);
    file[header_len - 8..header_len].copy_from_slice(&check.to_le_bytes());
    let newer = dir.path().join("newer.flr");
    fs::write(&newer, &file).unwrap();
    let err = Replay::open(&newer).unwrap_err().to_string();
    let want = format!(
        "made by a newer framelock (format v{}, this build reads up to v{FORMAT_VERSION})",
        FORMAT_VERSION + 1
    );
    assert!(err.contains("newer.flr") && err.contains(&want), "{err}");

    let missing = dir.path().join("missing.flr");
    let err = Replay::open(&missing).unwrap_err().to_string();
    assert!(
        err.starts_with("cannot open") && err.contains("missing.flr"),
        "{err}"
    );
}

/// A file that runs out of space after `left` more bytes, like a full disk.
struct FullAfter {
    file: File,
    left: usize,
}

impl Write for FullAfter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        let n = self.file.write(&buf[..buf.len().min(self.left)])?;
        self.left -= n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Sink for FullAfter {
    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

#[test]
fn full_disk_stops_the_recorder_and_keeps_the_prefix_readable() {
    let (full, want) = recording(2, 600);
    let (header_len, records) = layout(&full);
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SmallRng::seed_from_u64(5);
    let mut limits: Vec<usize> = (0..40).map(|_| rng.gen_range(0..full.len())).collect();
    limits.extend([0, header_len - 1, header_len, records[2].0, full.len() - 1]);
    for limit in limits {
        let path = dir.path().join(format!("full-{limit}.flr"));
        let sink = FullAfter {
            file: File::create(&path).unwrap(),
            left: limit,
        };
        let h = header(2, Start::PowerOn);
        let result = Recorder::with_sink(sink, &path, &h, &RecorderOptions::default());
        let first_err = match result {
            Err(e) => {
                assert!(limit < header_len);
                e
            }
            Ok(mut rec) => {
                let (_, mut errors) = drive(&mut rec, 2, 600);
                errors.extend(rec.finish().err());
                assert!(!errors.is_empty(), "limit {limit}: no error on a full disk");
                for later in &errors[1..] {
                    assert!(matches!(later, ReplayError::Stopped { .. }), "{later}");
                }
                errors.remove(0)
            }
        };
        let msg = first_err.to_string();
        assert!(
            matches!(first_err, ReplayError::Write { .. })
                && msg.contains(&path.display().to_string())
                && msg.contains("no space left on device"),
            "{msg}"
        );
        // Exactly the bytes that fit reached the disk, and they read as the original prefix.
        let on_disk = fs::read(&path).unwrap();
        assert_eq!(on_disk[..], full[..limit]);
        if limit >= header_len {
            let mut replay = Replay::open(&path).unwrap();
            let items: Vec<Item> = replay.by_ref().map(Result::unwrap).collect();
            assert_eq!(items[..], want[..items.len()]);
            let status = replay.status().unwrap();
            assert!(!matches!(status, Status::Complete { .. }), "{status:?}");
            assert_eq!(status.frames(), frame_count(&items));
        }
    }
}

#[test]
fn dev_full_error_names_the_path_and_the_reason() {
    let path = Path::new("/dev/full");
    if !path.exists() {
        eprintln!("no /dev/full on this system; skipped");
        return;
    }
    let h = header(2, Start::PowerOn);
    let err = Recorder::create(path, &h).expect_err("must refuse");
    assert!(matches!(err, ReplayError::Exists { .. }), "{err}");
    let opts = RecorderOptions {
        overwrite: true,
        ..RecorderOptions::default()
    };
    let err = Recorder::create_with(path, &h, &opts).expect_err("disk is full");
    let msg = err.to_string();
    println!("/dev/full: {msg}");
    assert!(
        msg.contains("/dev/full") && msg.contains("no space left on device"),
        "{msg}"
    );
}

#[test]
fn existing_files_are_not_overwritten_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("taken.flr");
    fs::write(&path, b"precious").unwrap();
    let h = header(2, Start::PowerOn);
    let err = Recorder::create(&path, &h).expect_err("must refuse");
    assert!(
        err.to_string().contains("taken.flr already exists"),
        "{err}"
    );
    assert_eq!(fs::read(&path).unwrap(), b"precious");
    let opts = RecorderOptions {
        overwrite: true,
        ..RecorderOptions::default()
    };
    Recorder::create_with(&path, &h, &opts)
        .unwrap()
        .finish()
        .unwrap();
    let mut replay = Replay::open(&path).unwrap();
    assert_eq!(replay.skim().unwrap(), Status::Complete { frames: 0 });
}

#[test]
fn a_log_can_be_read_while_it_is_being_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.flr");
    let h = header(2, Start::PowerOn);
    let stream = bot_stream(2, 300, 9);
    let mut rec = Recorder::create(&path, &h).unwrap();
    for (f, inputs) in (0..150).zip(&stream) {
        rec.record_frame(Frame(f), inputs).unwrap();
    }
    // Flushed every 60 frames at 60 fps: 120 frames are on disk, 30 still buffered.
    let mut replay = Replay::open(&path).unwrap();
    assert_eq!(replay.skim().unwrap(), Status::Incomplete { frames: 120 });
    for (f, inputs) in (150..300).zip(&stream[150..]) {
        rec.record_frame(Frame(f), inputs).unwrap();
    }
    rec.record_event(Frame(299), &Event::Left { slot: 0 })
        .unwrap();
    let mut more = Vec::new();
    while let Some(item) = replay.next_item().unwrap() {
        more.push(item);
    }
    assert_eq!(frame_count(&more), 180);
    assert_eq!(more[0], Item::Frame(Frame(120), stream[120]));
    assert_eq!(replay.status(), Some(Status::Incomplete { frames: 300 }));
    rec.finish().unwrap();
    assert_eq!(replay.skim().unwrap(), Status::Complete { frames: 300 });
}

#[test]
fn dropping_the_recorder_keeps_every_frame() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dropped.flr");
    let stream = bot_stream(2, 77, 4);
    {
        let mut rec = Recorder::create(&path, &header(2, Start::PowerOn)).unwrap();
        for (f, inputs) in (0..77).zip(&stream) {
            rec.record_frame(Frame(f), inputs).unwrap();
        }
        let err = rec.record_frame(Frame(5), &stream[0]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "frame 5 recorded out of order (expected frame 77)"
        );
    }
    let mut replay = Replay::open(&path).unwrap();
    let frames: Vec<Inputs> = replay
        .by_ref()
        .filter_map(|i| match i.unwrap() {
            Item::Frame(_, x) => Some(x),
            _ => None,
        })
        .collect();
    assert_eq!(frames, stream);
    assert_eq!(replay.status(), Some(Status::Incomplete { frames: 77 }));
}

const CHILD_ENV: &str = "FLR_TEST_CHILD_PATH";

#[test]
#[ignore = "helper process for killed_writer_leaves_a_readable_file"]
fn child_writer_until_killed() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let opts = RecorderOptions {
        flush_frames: Some(7),
        ..RecorderOptions::default()
    };
    let mut rec = Recorder::create_with(&path, &header(2, Start::PowerOn), &opts).unwrap();
    let stream = bot_stream(2, 1_000_000, 11);
    for (f, inputs) in (0..).zip(&stream) {
        rec.record_frame(Frame(f), inputs).unwrap();
        if f % 50 == 49 {
            rec.record_checksum(Frame(f + 1), u64::from(f)).unwrap();
        }
        if f % 7 == 0 {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
}

#[test]
fn killed_writer_leaves_a_readable_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.flr");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_writer_until_killed",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_ENV, &path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while fs::metadata(&path).map_or(0, |m| m.len()) < 20_000 {
        assert!(
            std::time::Instant::now() < deadline,
            "child wrote too little"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL: no destructors, no final flush
    child.wait().unwrap();
    let stream = bot_stream(2, 1_000_000, 11);
    let mut replay = Replay::open(&path).unwrap();
    let mut n = 0u32;
    while let Some(item) = replay.next_item().unwrap() {
        if let Item::Frame(f, inputs) = item {
            assert_eq!((f, inputs), (Frame(n), stream[n as usize]));
            n += 1;
        }
    }
    let status = replay.status().unwrap();
    assert!(!matches!(status, Status::Complete { .. }));
    assert!(n > 1000, "only {n} frames");
    println!("killed writer: {n} frames readable, {status:?}");
}

#[test]
fn size_of_a_minute_of_play() {
    for players in [2, 8] {
        let mut file = Vec::new();
        let h = header(players, Start::PowerOn);
        let mut rec =
            Recorder::with_sink(&mut file, "mem.flr", &h, &RecorderOptions::default()).unwrap();
        for (f, inputs) in (0..3600).zip(bot_stream(players, 3600, 42)) {
            rec.record_frame(Frame(f), &inputs).unwrap();
            if (f + 1) % 60 == 0 {
                rec.record_checksum(Frame(f + 1), u64::from(f) * 31)
                    .unwrap();
            }
        }
        rec.finish().unwrap();
        let (header_len, _) = layout(&file);
        println!(
            "{players} players, 3600 frames (1 min at 60 fps) with 60 checksums: {} bytes \
             ({} header + {} body)",
            file.len(),
            header_len,
            file.len() - header_len
        );
        if players == 2 {
            assert!(file.len() <= 20_000, "{} bytes per minute", file.len());
        }
    }
}
