//! Damaged and foreign logs through `framelock replay`: a truncated log replays up to its
//! last complete record and `--verify` reports the truncation; a flipped bit is caught by the
//! record checks; a real divergence (a validly re-written log) is named by frame; wrong
//! core or content, and files that are not logs, are refused with a clear message.

mod replay_common;

use std::path::Path;

use framelock::input::{Inputs, Pad};
use framelock::lockstep::Frame;
use framelock::replay::{Item, Recorder, Replay, Status};
use replay_common::{
    assert_fails_with, assert_ok, checksum, genesis, layout, run, stats, stderr, text,
    GENESIS_OPTION,
};

/// Records 1200 frames of the built-in game with bot 5 into `home/a.flr`.
fn record_builtin(home: &Path) -> Vec<u8> {
    replay_common::record_builtin(home, 1200, Some(5), "a.flr");
    std::fs::read(home.join("a.flr")).unwrap()
}

/// The final checksum of `play` with bot 5 after `frames` frames.
fn played_checksum(home: &Path, frames: u32) -> String {
    let json = format!("play{frames}.json");
    let f = frames.to_string();
    assert_ok(&run(
        home,
        &[
            "play",
            "--headless",
            "--fast",
            "--frames",
            &f,
            "--bot",
            "5",
            "--stats-json",
            &json,
        ],
    ));
    checksum(&stats(&home.join(json)))
}

#[test]
fn truncated_logs_replay_to_their_last_complete_record() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let file = record_builtin(h);
    let (header_len, records) = layout(&file);
    assert!(records.len() > 20, "{} records", records.len());
    // Inside records, on a record boundary (a clean cut), and inside the End record.
    let cuts = [
        header_len + 3,
        records[4].start + 9,
        records[11].end,
        (records[17].start + records[17].end) / 2,
        file.len() - 1,
    ];
    for cut in cuts {
        let path = h.join(format!("cut{cut}.flr"));
        std::fs::write(&path, &file[..cut]).unwrap();
        let status = Replay::open(&path).unwrap().skim().unwrap();
        let (frames, at_byte) = match status {
            Status::Truncated { frames, at_byte } => (frames, at_byte),
            Status::Incomplete { frames } => (frames, cut as u64),
            Status::Complete { .. } => panic!("cut at {cut} reads as complete"),
        };
        let name = path.file_name().unwrap().to_str().unwrap();
        let json = format!("{name}.json");
        let out = run(
            h,
            &[
                "replay",
                name,
                "--headless",
                "--fast",
                "--verify",
                "--stats-json",
                &json,
            ],
        );
        let what = if frames == 1 { "frame" } else { "frames" };
        assert_fails_with(
            &out,
            &format!("error: {name}: log is truncated at byte {at_byte} after {frames} {what}"),
        );
        // Every complete frame ran, and the machine is where a play of that length ends.
        let s = stats(&h.join(&json));
        assert_eq!(s["frames"], frames, "cut at {cut}");
        assert_eq!(s["replay"]["first_desync"], serde_json::Value::Null);
        if frames > 0 {
            assert_eq!(checksum(&s), played_checksum(h, frames), "cut at {cut}");
        }
        // Without --verify a truncated log is still worth watching: exit 0.
        assert_ok(&run(h, &["replay", name, "--headless", "--fast"]));
    }
}

#[test]
fn a_flipped_input_bit_is_caught_by_the_record_checks() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let mut file = record_builtin(h);
    let (_, records) = layout(&file);
    let r = records
        .iter()
        .skip(6)
        .find(|r| r.tag == 0x01 && r.len > 4)
        .copied()
        .expect("an input block in the middle");
    file[r.payload + r.len - 1] ^= 0x01;
    std::fs::write(h.join("flip.flr"), &file).unwrap();
    let out = run(
        h,
        &["replay", "flip.flr", "--headless", "--fast", "--verify"],
    );
    assert_fails_with(&out, &format!("corrupt record at byte {}", r.start));
    // Without --verify too: a corrupt log is an error once its intact part has played.
    let out = run(h, &["replay", "flip.flr", "--headless", "--fast"]);
    assert_fails_with(&out, "corrupt record");
}

/// Re-writes `a.flr` through the library (so every record check is valid) with `edit`
/// applied to each item, into `name`.
fn rewrite(h: &Path, name: &str, edit: impl Fn(Item) -> Item) {
    let mut log = Replay::open(h.join("a.flr")).unwrap();
    let header = log.header().clone();
    let mut rec = Recorder::create(h.join(name), &header).unwrap();
    while let Some(item) = log.next_item().unwrap() {
        match edit(item) {
            Item::Frame(f, inputs) => rec.record_frame(f, &inputs).unwrap(),
            Item::Checksum { frame, value } => rec.record_checksum(frame, value).unwrap(),
            Item::Event { frame, event } => rec.record_event(frame, &event).unwrap(),
        }
    }
    rec.finish().unwrap();
}

#[test]
fn a_real_divergence_is_named_by_its_frame() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    record_builtin(h);

    // The recorded checksum of frame 599 says something else than the machine will.
    let mut real = None;
    rewrite(h, "sum.flr", |item| match item {
        Item::Checksum {
            frame: Frame(599),
            value,
        } => Item::Checksum {
            frame: Frame(599),
            value: value ^ 0xdead,
        },
        other => other,
    });
    let mut log = Replay::open(h.join("a.flr")).unwrap();
    while let Some(item) = log.next_item().unwrap() {
        if let Item::Checksum {
            frame: Frame(599),
            value,
        } = item
        {
            real = Some(value);
        }
    }
    let real = real.expect("a checksum at frame 599");
    let out = run(
        h,
        &["replay", "sum.flr", "--headless", "--fast", "--verify"],
    );
    assert_fails_with(
        &out,
        &format!(
            "error: sum.flr: desync at frame 599: log has {:016x}, replay has {real:016x}",
            real ^ 0xdead
        ),
    );

    // Player 1 steers differently from frame 700 on: the game itself diverges.
    rewrite(h, "steer.flr", |item| match item {
        Item::Frame(f, mut inputs) if (700..760).contains(&f.0) => {
            inputs[0] = Pad(inputs[0].0 ^ 0x00F0);
            Item::Frame(f, inputs as Inputs)
        }
        other => other,
    });
    let out = run(
        h,
        &[
            "replay",
            "steer.flr",
            "--headless",
            "--fast",
            "--verify",
            "--stats-json",
            "steer.json",
        ],
    );
    assert_fails_with(&out, "desync at frame ");
    let first = stats(&h.join("steer.json"))["replay"]["first_desync"]["frame"]
        .as_u64()
        .unwrap_or_else(|| panic!("no first desync\n{}", text(&out)));
    assert!((700..1200).contains(&first), "diverged at {first}");
    assert!(stderr(&out).contains(&format!("desync at frame {first}:")));
    // The untouched prefix verifies: every checksum before frame 700 matched.
    let s = stats(&h.join("steer.json"));
    assert!(s["replay"]["checksums_matched"].as_u64().unwrap() >= 11);
}

#[test]
fn files_that_are_not_logs_are_refused() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let file = record_builtin(h);
    std::fs::write(h.join("notes.txt"), b"hello, this is not a log\n").unwrap();
    assert_fails_with(
        &run(h, &["replay", "notes.txt", "--headless"]),
        "notes.txt is not a framelock input log",
    );
    std::fs::write(h.join("empty.flr"), b"").unwrap();
    assert_fails_with(
        &run(h, &["replay", "empty.flr", "--headless"]),
        "corrupt header",
    );
    // A newer version with a header check that matches: a newer framelock wrote it.
    let header_len = layout(&file).0;
    let mut newer = file.clone();
    newer[8] = 9;
    let check = xxhash_rust::xxh3::xxh3_64(&newer[..header_len - 8]);
    newer[header_len - 8..header_len].copy_from_slice(&check.to_le_bytes());
    std::fs::write(h.join("newer.flr"), &newer).unwrap();
    assert_fails_with(
        &run(h, &["replay", "newer.flr", "--headless"]),
        "newer.flr was made by a newer framelock (format v9, this build reads up to v1)",
    );
    // One flipped bit in the version (v257) is damage, not a newer framelock.
    let mut flipped = file.clone();
    flipped[9] ^= 0x01;
    std::fs::write(h.join("v257.flr"), &flipped).unwrap();
    let out = run(h, &["replay", "v257.flr", "--headless"]);
    assert_fails_with(
        &out,
        "v257.flr has a corrupt header (its format version field is damaged); nothing in it \
         can be replayed",
    );
    assert!(!stderr(&out).contains("newer"), "{}", text(&out));
    let mut bad_header = file.clone();
    bad_header[20] ^= 0x40;
    std::fs::write(h.join("hdr.flr"), &bad_header).unwrap();
    assert_fails_with(
        &run(h, &["replay", "hdr.flr", "--headless"]),
        "hdr.flr has a corrupt header (bad checksum); nothing in it can be replayed",
    );
    let mut bad_len = file.clone();
    bad_len[12] ^= 0x01;
    std::fs::write(h.join("hlen.flr"), &bad_len).unwrap();
    assert_fails_with(
        &run(h, &["replay", "hlen.flr", "--headless"]),
        "hlen.flr has a corrupt header (cut short, or its length field is damaged)",
    );
    assert_fails_with(
        &run(h, &["replay", "missing.flr", "--headless"]),
        "cannot open missing.flr",
    );
}

#[test]
fn wrong_core_or_content_is_refused_saying_what_differs() {
    let g = genesis();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let (core, rom) = (g.core.to_str().unwrap(), g.rom.to_str().unwrap());
    // Recorded from a copy of the ROM that is then moved away.
    std::fs::copy(&g.rom, h.join("airstriker.md")).unwrap();
    assert_ok(&run(
        h,
        &[
            "play",
            "--headless",
            "--fast",
            "--frames",
            "120",
            "--bot",
            "1",
            "--core",
            core,
            "airstriker.md",
            "--option",
            GENESIS_OPTION,
            "--record",
            "g.flr",
        ],
    ));
    std::fs::rename(h.join("airstriker.md"), h.join("moved.md")).unwrap();
    let mut other = std::fs::read(&g.rom).unwrap();
    other[0x200] ^= 1;
    std::fs::write(h.join("other.md"), &other).unwrap();
    let want = format!(
        "{:016x}",
        xxhash_rust::xxh3::xxh3_64(&std::fs::read(&g.rom).unwrap())
    );
    let got = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&other));

    assert_fails_with(
        &run(h, &["replay", "g.flr", "--headless", "--fast"]),
        &format!("the log needs content airstriker.md (xxh3 {want})"),
    );
    assert_fails_with(
        &run(h, &["replay", "g.flr", "nothere.md", "--headless"]),
        "error: cannot read content nothere.md: no such file or directory (os error 2)\n",
    );
    assert_fails_with(
        &run(h, &["replay", "g.flr", "other.md", "--headless"]),
        &format!(
            "content differs: log has airstriker.md (xxh3 {want}), given other.md (xxh3 {got})"
        ),
    );
    // The same bytes under another name are the same content.
    assert_ok(&run(
        h,
        &[
            "replay",
            "g.flr",
            "moved.md",
            "--headless",
            "--fast",
            "--verify",
        ],
    ));
    assert_ok(&run(
        h,
        &["replay", "g.flr", rom, "--headless", "--fast", "--verify"],
    ));

    // A log of the built-in game on Genesis Plus GX, and the other way round.
    record_builtin(h);
    assert_fails_with(
        &run(h, &["replay", "a.flr", "--core", core, "--headless"]),
        "core differs: log has lightcycles 0.1.0, given Genesis Plus GX",
    );
    assert_fails_with(
        &run(h, &["replay", "a.flr", "moved.md", "--headless"]),
        "content differs: log has no content",
    );
    let fbneo = g.core.with_file_name("fbneo_libretro.so");
    assert!(fbneo.exists(), "missing fixture {}", fbneo.display());
    assert_fails_with(
        &run(
            h,
            &[
                "replay",
                "g.flr",
                "moved.md",
                "--core",
                fbneo.to_str().unwrap(),
                "--headless",
            ],
        ),
        "core differs: log has Genesis Plus GX",
    );
}

/// A crash that left the last record half written and zeros after it (a filesystem that had
/// allocated the space): a torn tail, replayed up to the record before it, and not an error
/// without --verify.
#[test]
fn a_torn_record_followed_by_zeros_is_a_truncated_log() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let file = record_builtin(h);
    let (_, records) = layout(&file);
    let last_inputs = records
        .iter()
        .rev()
        .find(|r| r.tag == 0x01)
        .copied()
        .expect("an input block");
    let cut = last_inputs.payload + last_inputs.len / 2;
    let mut torn = file[..cut].to_vec();
    torn.resize(cut + 5000, 0);
    std::fs::write(h.join("torn.flr"), &torn).unwrap();
    let status = Replay::open(h.join("torn.flr")).unwrap().skim().unwrap();
    let Status::Truncated { frames, at_byte } = status else {
        panic!("{status:?}")
    };
    assert_eq!(at_byte, last_inputs.start as u64);
    assert_fails_with(
        &run(
            h,
            &["replay", "torn.flr", "--headless", "--fast", "--verify"],
        ),
        &format!("torn.flr: log is truncated at byte {at_byte} after {frames} frames"),
    );
    let out = run(h, &["replay", "torn.flr", "--headless", "--fast"]);
    assert_ok(&out);
    assert!(!stderr(&out).contains("corrupt"), "{}", text(&out));
}

/// The first record's length damaged to point past the end of the file, with the whole log
/// after it: corruption at that record, not a log truncated after 0 frames.
#[test]
fn a_length_running_past_the_end_before_intact_records_is_corruption() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let file = record_builtin(h);
    let (header_len, records) = layout(&file);
    let first = records[0];
    assert_eq!(first.start, header_len);
    // The length varint's last byte gets its continuation bit and two more bytes follow.
    let mut bad = file[..first.payload - 1].to_vec();
    bad.extend_from_slice(&[file[first.payload - 1] | 0x80, 0x80, 0x40]);
    bad.extend_from_slice(&file[first.payload..]);
    std::fs::write(h.join("len.flr"), &bad).unwrap();
    for verify in [true, false] {
        let mut args = vec!["replay", "len.flr", "--headless", "--fast"];
        if verify {
            args.push("--verify");
        }
        let out = run(h, &args);
        assert_fails_with(
            &out,
            &format!(
                "len.flr: corrupt record at byte {header_len} (its length runs past the end of \
                 the file, but intact records follow); there are no frames before it"
            ),
        );
        assert!(!stderr(&out).contains("truncated"), "{}", text(&out));
    }
}

/// A log with bytes after its end record replays in full, saying once, in prose, that they
/// are ignored.
#[test]
fn bytes_after_the_end_record_are_reported_once() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let mut file = record_builtin(h);
    let end = file.len();
    file.extend_from_slice(b"appended by something else");
    std::fs::write(h.join("extra.flr"), &file).unwrap();
    let out = run(
        h,
        &["replay", "extra.flr", "--headless", "--fast", "--verify"],
    );
    assert_ok(&out);
    let err = stderr(&out);
    let warning = format!("extra.flr: ignoring 26 bytes after the end record (from byte {end} on)");
    assert_eq!(err.matches(&warning).count(), 1, "{}", text(&out));
    assert_eq!(
        err.matches("after the end record").count(),
        1,
        "{}",
        text(&out)
    );
}

/// A record with tag 0x00, which the format never uses, is corruption even with a valid check.
#[test]
fn a_record_of_type_zero_is_corruption() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let file = record_builtin(h);
    let (_, records) = layout(&file);
    let end = *records.last().unwrap();
    assert_eq!(end.tag, 0x0F);
    let before = records[records.len() - 2];
    // An empty tag-0 record chained after the record before End, then End chained after it.
    let check = |seed: u32, bytes: &[u8]| {
        (xxhash_rust::xxh3::xxh3_64_with_seed(bytes, u64::from(seed)) as u32).to_le_bytes()
    };
    let chain = u32::from_le_bytes(file[before.end - 4..before.end].try_into().unwrap());
    let mut bad = file[..end.start].to_vec();
    let zero = check(chain, &[0x00, 0x00]);
    bad.extend_from_slice(&[0x00, 0x00]);
    bad.extend_from_slice(&zero);
    let end_body = &file[end.start..end.end - 4];
    bad.extend_from_slice(end_body);
    bad.extend_from_slice(&check(u32::from_le_bytes(zero), end_body));
    std::fs::write(h.join("tag0.flr"), &bad).unwrap();
    assert_fails_with(
        &run(h, &["replay", "tag0.flr", "--headless", "--fast"]),
        &format!(
            "tag0.flr: corrupt record at byte {} (record type 0x00 is never used); the 1200 \
             frames before it are intact",
            end.start
        ),
    );
}

/// A one-frame log replays as "1 frame"; I/O errors read in lowercase like every other
/// message, once.
#[test]
fn messages_count_and_quote_errors_in_plain_words() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    replay_common::record_builtin(h, 1, None, "one.flr");
    let out = run(
        h,
        &["replay", "one.flr", "--headless", "--fast", "--verify"],
    );
    assert_ok(&out);
    assert!(
        stderr(&out).contains("replaying one.flr (1 frame, "),
        "{}",
        text(&out)
    );
    assert!(
        stderr(&out).contains("replayed 1 frame; "),
        "{}",
        text(&out)
    );

    // Every frame count in the output agrees with its noun.
    assert!(!stderr(&out).contains("1 frames"), "{}", text(&out));

    // --stats-json under a file: the directory cannot be made.
    let out = run(
        h,
        &[
            "replay",
            "one.flr",
            "--headless",
            "--fast",
            "--stats-json",
            "one.flr/s.json",
        ],
    );
    assert_fails_with(
        &out,
        "error: cannot write stats one.flr/s.json: file exists (os error 17)\n",
    );
}
